//! A module's rules in the console: the page with the set in force, its
//! versions and proposals; the propose form for admins (a refusal keeps
//! the text); a proposal's page with its diff and the decision, four-eyes
//! by person as for jobs; and both languages.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;
use crate::console::{Console, csrf_of, location};

const RULES: &str = "/modules/customers/rules";

fn phone_rules() -> Value {
    json!([
        {"id": "wa", "column": "wa_number", "normalize": "phone_id"},
        {"id": "short_cycle", "check": "!has(row.consumable_cycle_days) || row.consumable_cycle_days <= 365",
         "message": "a cycle is at most a year", "columns": ["consumable_cycle_days"], "severity": "warning"},
    ])
}

/// Proposes `rules` for customers over the API as `key`; the proposal's id.
async fn proposed_by_api(app: &TestApp, key: &str, rules: Value) -> String {
    let resp = app
        .client
        .post(app.url("/api/modules/customers/rules"))
        .header("X-API-Key", key)
        .json(&json!({"rules": rules, "comment": "WA numbers"}))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), StatusCode::CREATED);
    let body: Value = resp.json().await.expect("json");
    body["id"].as_str().expect("id").to_string()
}

/// Posts the propose form of the customers' rules page.
async fn propose(c: &mut Console<'_>, rules: &str, comment: &str) -> reqwest::Response {
    let csrf = csrf_of(&c.page(RULES).await);
    c.post(
        RULES,
        &[("_csrf", &csrf), ("rules", rules), ("comment", comment)],
    )
    .await
}

/// Posts a decision from a proposal's page.
async fn decide(c: &mut Console<'_>, id: &str, action: &str) -> reqwest::Response {
    let path = format!("/rule-proposals/{id}");
    let csrf = csrf_of(&c.page(&path).await);
    c.post(
        &format!("{path}/{action}"),
        &[("_csrf", &csrf), ("comment", "checked")],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rules_page_shows_the_set_in_force_its_versions_and_proposals() {
    let app = spawn_app().await;
    let apr = app.approver().await;
    let id = proposed_by_api(&app, &app.admin, phone_rules()).await;
    let mut a = Console::new(&app);
    a.sign_in(&apr).await;
    // Waiting: version 1 in force, the proposal listed with its state.
    let html = a.page(RULES).await;
    assert!(html.contains("Version 1, in force"), "{html}");
    assert!(html.contains(&format!("href=\"/rule-proposals/{id}\"")));
    assert!(html.contains("Awaiting approval"));
    // Where an approver starts: the job list says what waits.
    let jobs = a.page("/jobs").await;
    assert!(jobs.contains("1 rule proposal awaits a decision"), "{jobs}");
    assert!(a.page("/rules").await.contains(&id));

    let resp = decide(&mut a, &id, "approve").await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let html = a.page(RULES).await;
    assert!(html.contains("Version 2, in force"), "{html}");
    for shown in [
        "data-rule=\"wa\"",
        "<code>wa_number</code>",
        "<code>phone_id</code>",
        "Normalizer",
        "Check",
        "a cycle is at most a year",
        "warning",
        "row.consumable_cycle_days &lt;= 365",
        "Approved by",
        "Si***u",
        "href=\"/modules/customers/rules?version=1\"",
    ] {
        assert!(html.contains(shown), "{shown} not on the page");
    }
    assert!(!html.contains("Siti Rahayu"));
    assert!(!a.page("/jobs").await.contains("rules-waiting"));
    // An older version, said not to be in force.
    let old = a.page(&format!("{RULES}?version=1")).await;
    assert!(old.contains("Not in force: version 2 is."), "{old}");
    assert!(!old.contains("data-rule=\"wa\""));
    let resp = a.get(&format!("{RULES}?version=9")).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);

    // Not an admin: no propose form, and posting one anyway is refused.
    assert!(!html.contains("name=\"rules\""));
    let csrf = csrf_of(&html);
    let resp = a
        .post(RULES, &[("_csrf", &csrf), ("rules", "[]"), ("comment", "")])
        .await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let sub = app.submitter().await;
    let mut s = Console::new(&app);
    s.sign_in(&sub).await;
    let html = s.page(RULES).await;
    assert!(!html.contains("name=\"rules\""));
    assert!(!s.page("/jobs").await.contains("rules-waiting"));
    let list = app
        .get_json(&app.admin, "/api/rule-proposals?module=customers")
        .await;
    assert_eq!(list["proposals"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_proposes_in_the_console_and_another_person_decides() {
    let app = spawn_app().await;
    let apr = app.approver().await;
    let mut admin = Console::new(&app);
    admin.sign_in(&app.admin).await;
    let html = admin.page(RULES).await;
    assert!(html.contains("name=\"rules\""), "{html}");
    assert!(
        html.contains(">[]</textarea>"),
        "prefilled with the set in force"
    );

    // Not JSON, or a rule naming a column the module lacks: refused on
    // the same page, the text kept (escaped).
    let resp = propose(&mut admin, "[{\"id\": \"<b>x\",", "").await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = resp.text().await.unwrap();
    assert!(html.contains("not JSON"), "{html}");
    assert!(html.contains("[{&quot;id&quot;: &quot;&lt;b&gt;x&quot;,</textarea>"));
    let bad = r#"[{"id": "zip", "column": "nope", "normalize": "trim"}]"#;
    let resp = propose(&mut admin, bad, "a <script>comment</script>").await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = resp.text().await.unwrap();
    assert!(html.contains("rule zip"), "{html}");
    assert!(html.contains("&quot;nope&quot;"));
    assert!(html.contains("a &lt;script&gt;comment&lt;/script&gt;</textarea>"));
    assert!(!html.contains("<script>comment"));
    assert_eq!(
        app.get_json(&app.admin, "/api/rule-proposals").await["proposals"],
        json!([])
    );

    // A good set: to the proposal's page, which shows what it adds.
    let good = serde_json::to_string_pretty(&phone_rules()).unwrap();
    let resp = propose(&mut admin, &good, "WA <numbers>").await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let to = location(&resp);
    let id = to.strip_prefix("/rule-proposals/").expect("proposal page");
    let html = admin.page(&to).await;
    assert!(html.contains("Changes from version 1"));
    assert!(html.contains("id=\"diff-added\""));
    assert!(html.contains("WA &lt;numbers&gt;"));
    // The proposer is not offered the decision, and posting it is refused
    // as for a job.
    assert!(html.contains("another approver decides it"), "{html}");
    assert!(!html.contains(&format!("action=\"{to}/approve\"")));
    let resp = decide(&mut admin, id, "approve").await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let html = resp.text().await.unwrap();
    assert!(html.contains("Four-eyes rule"), "{html}");
    let set = app
        .get_json(&app.admin, "/api/modules/customers/rules")
        .await;
    assert_eq!(set["version"], 1);

    // Another person approves it: version 2 in force.
    let mut a = Console::new(&app);
    a.sign_in(&apr).await;
    let html = a.page(&to).await;
    assert!(html.contains(&format!("action=\"{to}/approve\"")));
    assert!(html.contains(&format!("action=\"{to}/reject\"")));
    let resp = decide(&mut a, id, "approve").await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&resp), format!("{to}?done=approve"));
    let html = a.page(&location(&resp)).await;
    assert!(html.contains("these rules are in force now"));
    assert!(!html.contains(&format!("action=\"{to}/approve\"")));
    let set = app
        .get_json(&app.admin, "/api/modules/customers/rules")
        .await;
    assert_eq!(set["version"], 2);
    assert_eq!(set["rules"], phone_rules());
    // The form starts from the set in force, even beside an older one.
    let old = admin.page(&format!("{RULES}?version=1")).await;
    assert!(
        old.contains("&quot;normalize&quot;: &quot;phone_id&quot;"),
        "{old}"
    );

    // A change of one rule and the removal of another, rejected: shown as
    // was → now, and the set in force stays.
    let next = json!([{"id": "wa", "column": "wa_number", "normalize": "trim"}]).to_string();
    let resp = propose(&mut admin, &next, "").await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let to = location(&resp);
    let id = to.strip_prefix("/rule-proposals/").unwrap().to_string();
    let html = a.page(&to).await;
    assert!(html.contains("id=\"diff-changed\"") && html.contains("id=\"diff-removed\""));
    assert!(html.contains("<code>phone_id</code>") && html.contains("<code>trim</code>"));
    let resp = decide(&mut a, &id, "reject").await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let html = a.page(RULES).await;
    assert!(html.contains("Version 2, in force"));
    assert!(html.contains("Rejected"));
    // Deciding it again: refused on the page.
    let resp = decide(&mut a, &id, "approve").await;
    assert_eq!(resp.status(), StatusCode::CONFLICT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rules_pages_speak_indonesian() {
    let app = spawn_app().await;
    let apr = app.approver().await;
    let id = proposed_by_api(&app, &app.admin, phone_rules()).await;
    let mut a = Console::new(&app);
    a.speak("id");
    a.sign_in(&apr).await;
    let html = a.page(RULES).await;
    for word in [
        "Aturan customers",
        "Versi 1, berlaku",
        "Usulan aturan",
        "Menunggu persetujuan",
    ] {
        assert!(html.contains(word), "{word} not on the rules page");
    }
    assert!(
        a.page("/jobs")
            .await
            .contains("1 usulan aturan menunggu keputusan")
    );
    let html = a.page(&format!("/rule-proposals/{id}")).await;
    for word in [
        "Setujui",
        "Tolak",
        "Ditambahkan",
        "Normalisasi",
        "Pemeriksaan",
    ] {
        assert!(html.contains(word), "{word} not on the proposal page");
    }
    let mut admin = Console::new(&app);
    admin.speak("id");
    admin.sign_in(&app.admin).await;
    let html = admin.page(RULES).await;
    assert!(html.contains("Usulkan perubahan"));
    let resp = decide(&mut admin, &id, "approve").await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    assert!(resp.text().await.unwrap().contains("Aturan empat mata"));
    let resp = propose(&mut admin, "nope", "").await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

/// A customers file with WA numbers written three ways, one no number at
/// all and one with markup.
const WA_FILE: &str = "customer_name,wa_number,city,consumable_cycle_days\n\
    Andi Wijaya,0812-3456-7890,Jakarta,30\n\
    Budi Hartono,+62 812 3456 7890,Bandung,30\n\
    Citra Lestari,bukan nomor,Surabaya,30\n\
    Dewi <i>Anggraini</i>,<i>tidak</i>,Medan,14\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_tries_a_proposal_on_a_recent_job_beside_its_diff() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", WA_FILE).await;
    assert_eq!(job["counts"]["valid"], 4, "{job}");
    let job_id = job["id"].as_str().unwrap().to_string();
    let id = proposed_by_api(&app, &app.admin, phone_rules()).await;
    let path = format!("/rule-proposals/{id}");

    let mut a = Console::new(&app);
    a.sign_in(&apr).await;
    // The form offers the module's recent jobs.
    let html = a.page(&path).await;
    assert!(html.contains("id=\"try\""), "{html}");
    assert!(
        html.contains(&format!("<option value=\"{job_id}\"")),
        "{html}"
    );
    assert!(!html.contains("id=\"try-result\""));

    let html = a.page(&format!("{path}?try={job_id}")).await;
    assert!(html.contains("id=\"try-result\""), "{html}");
    assert!(html.contains("Version 1 (the job&#39;s)") || html.contains("Version 1 (the job's)"));
    assert!(html.contains("Proposed version 2"));
    // Counts: 4 valid now; under the proposal the second WA number is the
    // first's, and two are no numbers; two rows are normalized.
    let counts = between(&html, "id=\"try-counts\"", "</table>");
    for shown in [
        "<th scope=\"row\">Valid</th><td>4</td><td>1</td>",
        "<th scope=\"row\">Errors</th><td>0</td><td>3</td>",
        "<th scope=\"row\">Normalized</th><td>0</td><td>2</td>",
    ] {
        assert!(counts.contains(shown), "{shown}: {counts}");
    }
    let failing = between(&html, "id=\"try-failing\"", "</table>");
    for shown in [
        "data-row=\"3\"",
        "data-row=\"4\"",
        "data-row=\"5\"",
        "<code>phone</code>",
        "<code>wa_number</code>",
    ] {
        assert!(failing.contains(shown), "{shown}: {failing}");
    }
    assert!(!failing.contains("data-row=\"2\""));
    let normalized = between(&html, "id=\"try-normalized\"", "</ul>");
    assert!(
        normalized.contains("<del>0812-3456-7890</del>")
            && normalized.contains("<ins>+6281234567890</ins>"),
        "{normalized}"
    );
    // Escaped throughout.
    assert!(!html.contains("<i>tidak"), "{html}");

    // Errors as the console shows them: no such job, another module's.
    let html = a.page(&format!("{path}?try=job_nope")).await;
    assert!(html.contains("id=\"try-error\""), "{html}");
    let other = app
        .upload(&sub, "orders", "", "order_no,customer_name\nA-1,Andi\n")
        .await;
    let other_id = other["id"].as_str().unwrap();
    let html = a.page(&format!("{path}?try={other_id}")).await;
    let error = between(&html, "id=\"try-error\"", "</div>");
    assert!(error.contains("the proposal is for customers"), "{error}");
    // Indonesian.
    a.speak("id");
    let html = a.page(&format!("{path}?try={job_id}")).await;
    for shown in ["Coba pada job terbaru", "Baru gagal", "Baru dinormalkan"] {
        assert!(html.contains(shown), "{shown}");
    }
    // A submitter is offered no try, and one asked for anyway is refused.
    let mut s = Console::new(&app);
    s.sign_in(&sub).await;
    let html = s.page(&path).await;
    assert!(!html.contains("id=\"try\""));
    let resp = s.get(&format!("{path}?try={job_id}")).await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    assert!(resp.text().await.unwrap().contains("approver or an admin"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_job_page_shows_normalized_cells_as_was_and_now() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let id = proposed_by_api(&app, &app.admin, phone_rules()).await;
    let mut a = Console::new(&app);
    a.sign_in(&apr).await;
    assert_eq!(
        decide(&mut a, &id, "approve").await.status(),
        StatusCode::SEE_OTHER
    );
    // A cycle over a year breaks the warning rule, which the page names.
    let csv = format!("{WA_FILE}Eka Putri,0815-0000-1111,Denpasar,400\n");
    let job = app.upload(&sub, "customers", "?on_error=skip", &csv).await;
    assert_eq!(job["counts"]["normalized"], 3, "{job}");
    assert_eq!(job["counts"]["warnings"], 1, "{job}");
    assert_eq!(job["rules_version"], 2, "{job}");
    let job_id = job["id"].as_str().unwrap();
    let path = format!("/jobs/{job_id}");

    let html = a.page(&path).await;
    for shown in [
        "<del>0812-3456-7890</del>",
        "<ins>+6281234567890</ins>",
        "normalized from",
        "<dt>Normalized</dt><dd>3</dd>",
        "a cycle is at most a year (rule short_cycle)",
        "Only normalized rows",
        "normalized=only",
        "href=\"/modules/customers/rules?version=2\"",
        "Rules version 2",
    ] {
        assert!(html.contains(shown), "{shown} not on the page: {html}");
    }
    assert!(!html.contains("<i>tidak"));
    // Only the normalized rows.
    let only = a.page(&format!("{path}?normalized=only")).await;
    let preview = between(&only, "id=\"preview\"", "</section>");
    assert!(preview.contains("0812-3456-7890"), "{preview}");
    assert!(!preview.contains("Citra Lestari"), "{preview}");
    a.speak("id");
    let html = a.page(&path).await;
    for shown in [
        "dinormalkan dari",
        "Hanya baris yang dinormalkan",
        "Versi aturan 2",
        "(aturan short_cycle)",
        "<dt>Dinormalkan</dt>",
    ] {
        assert!(html.contains(shown), "{shown} not on the page");
    }
}

/// The text of `html` from `start` to the first `end` after it.
fn between<'a>(html: &'a str, start: &str, end: &str) -> &'a str {
    let from = html
        .find(start)
        .unwrap_or_else(|| panic!("{start} not in {html}"));
    let rest = &html[from..];
    &rest[..rest.find(end).map_or(rest.len(), |e| e + end.len())]
}
