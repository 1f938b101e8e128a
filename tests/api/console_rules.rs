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
