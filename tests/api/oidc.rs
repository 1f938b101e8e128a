//! Console sign-in with the company's identity provider (API.md section
//! 17), against a real OpenID provider: the certified Node.js
//! `oidc-provider` (tests/oidc), started on loopback for each test. The
//! flow runs over plain HTTP here (a browser-like client that keeps
//! cookies and follows no redirect by itself).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{TestApp, spawn_app_on};
use crate::console::Console;

/// The test provider, stopped when dropped.
pub struct Provider {
    child: Child,
    issuer: String,
}

impl Provider {
    /// Starts the provider with `redirect` registered for its clients.
    fn start(redirect: &str) -> Provider {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc");
        assert!(
            dir.join("node_modules/oidc-provider").exists(),
            "the test provider is not installed: npm ci --prefix tests/oidc (cargo xtask test does it)"
        );
        let mut child = Command::new("node")
            .arg(dir.join("provider.mjs"))
            .env("OIDC_PORT", "0")
            .env("OIDC_REDIRECT_URIS", redirect)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node starts the test provider");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the provider says it is ready");
        let issuer = line
            .trim()
            .strip_prefix("ready ")
            .unwrap_or_else(|| panic!("not a ready line: {line:?}"))
            .to_string();
        Provider { child, issuer }
    }

    /// Sets what the next authorization (`user`, signed in without the
    /// login form) and the next ID token (`mode`) are.
    async fn next(&self, user: &str, mode: &str) {
        let resp = reqwest::Client::new()
            .post(format!("{}/_test/next", self.issuer))
            .json(&json!({"user": user, "mode": mode}))
            .send()
            .await
            .expect("the provider's control");
        assert_eq!(resp.status(), StatusCode::OK);
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The service signing in with a fresh test provider: staff are
/// submitters, finance approvers approve payments only, ops admins admin.
pub async fn with_provider(
    tweak: impl FnOnce(&mut importgate::config::Settings),
) -> (TestApp, Provider) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().unwrap());
    let redirect = format!("{base}/auth/oidc/callback");
    let provider = Provider::start(&redirect);
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.keep().join("client-secret");
    std::fs::write(&secret, "importgate-secret\n").unwrap();
    let issuer = provider.issuer.clone();
    let app = spawn_app_on(listener, move |s| {
        let o = &mut s.oidc;
        o.issuer = Some(issuer);
        o.client_id = Some("importgate".into());
        o.client_secret_file = Some(secret);
        o.redirect_url = Some(redirect);
        o.display_name = Some("Test Workspace".into());
        o.allow_http = true;
        o.roles = [
            ("staff", "submitter"),
            ("finance-approvers", "approver"),
            ("ops-admins", "admin"),
        ]
        .into_iter()
        .map(|(g, r)| (g.to_string(), r.to_string()))
        .collect();
        o.modules = [(
            "finance-approvers".to_string(),
            vec!["payments".to_string()],
        )]
        .into_iter()
        .collect();
        tweak(s);
    })
    .await;
    (app, provider)
}

/// A key for a person with an email, as an admin gives one: its id.
pub async fn key_with_email(
    app: &TestApp,
    name: &str,
    email: &str,
    role: &str,
) -> (String, String) {
    let resp = app
        .client
        .post(app.url("/api/keys"))
        .header("X-API-Key", &app.admin)
        .json(&json!({"name": name, "email": email, "role": role, "modules": ["*"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let body: Value = resp.json().await.unwrap();
    (
        body["key"].as_str().unwrap().to_string(),
        body["id"].as_str().unwrap().to_string(),
    )
}

fn location(resp: &reqwest::Response) -> String {
    resp.headers()
        .get("location")
        .unwrap_or_else(|| panic!("a redirect, got {}", resp.status()))
        .to_str()
        .unwrap()
        .to_string()
}

/// Walks a sign-in from the console's button through the provider and
/// back: the answer of the return.
async fn sign_in_through(c: &mut Console<'_>, app: &TestApp) -> reqwest::Response {
    let start = c.get("/auth/oidc/start?next=/jobs").await;
    assert_eq!(start.status(), StatusCode::SEE_OTHER, "to the provider");
    let at_provider = c.get_url(&location(&start)).await;
    let back = location(&at_provider);
    assert!(back.starts_with(&app.url("/auth/oidc/callback")), "{back}");
    c.get_url(&back).await
}

/// Every person the first admin's key list shows: (person, role, modules).
async fn keys_of(app: &TestApp) -> Vec<Value> {
    let list = app.get_json(&app.admin, "/api/keys").await;
    list["keys"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_signs_in_through_the_provider_as_the_person_of_their_keys() {
    let (app, provider) = with_provider(|_| {}).await;
    let (_, budi_key) =
        key_with_email(&app, "Budi Santoso", "budi@example.co.id", "submitter").await;
    let mut c = Console::new(&app);
    let page = c.page("/signin").await;
    assert!(page.contains("Sign in with Test Workspace"), "{page}");

    provider.next("sub-budi", "normal").await;
    let back = sign_in_through(&mut c, &app).await;
    assert_eq!(back.status(), StatusCode::OK);
    assert!(c.has_cookie("ig_session"), "signed in");
    let moving = back.text().await.unwrap();
    assert!(moving.contains("url=/jobs"), "{moving}");
    let jobs = c.page("/jobs").await;
    assert!(jobs.contains("Bu***o"), "masked in the top bar: {jobs}");

    // The sign-in key is Budi's person's, a submitter by the staff group.
    let keys = keys_of(&app).await;
    let budi = keys.iter().find(|k| k["id"] == budi_key.as_str()).unwrap();
    let signed: Vec<&Value> = keys
        .iter()
        .filter(|k| k["person_id"] == budi["person_id"] && k["id"] != budi_key.as_str())
        .collect();
    assert_eq!(signed.len(), 1, "{keys:?}");
    assert_eq!(signed[0]["role"], "submitter");

    // A second sign-in finds the same person by subject, no new key.
    let mut again = Console::new(&app);
    provider.next("sub-budi", "normal").await;
    assert_eq!(
        sign_in_through(&mut again, &app).await.status(),
        StatusCode::OK
    );
    assert_eq!(keys_of(&app).await.len(), keys.len());

    let events = app.get_json(&app.admin, "/api/events?limit=100").await;
    let types: Vec<&str> = (events["events"].as_array().unwrap().iter())
        .filter_map(|e| e["type"].as_str())
        .collect();
    assert_eq!(
        types.iter().filter(|t| **t == "person.signed_in").count(),
        2,
        "{types:?}"
    );
    assert!(!events.to_string().contains("Budi Santoso"), "masked");
    chain_holds(&app).await;
}

/// The ledger verifies: the sign-in keys' rows say what their events do.
async fn chain_holds(app: &TestApp) {
    let verdict = importgate::service::audit::verify(&app.app.db, &app.app.seal.key, None)
        .await
        .unwrap();
    assert!(
        matches!(verdict, importgate::ledger::chain::Verdict::Holds { .. }),
        "{verdict:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_give_the_widest_role_and_a_mapped_scope() {
    let (app, provider) = with_provider(|_| {}).await;
    key_with_email(&app, "Siti Rahayu", "siti@example.co.id", "submitter").await;
    let mut c = Console::new(&app);
    provider.next("sub-siti", "normal").await;
    assert_eq!(sign_in_through(&mut c, &app).await.status(), StatusCode::OK);
    let keys = keys_of(&app).await;
    let signed = keys
        .iter()
        .find(|k| k["role"] == "approver")
        .expect("an approver");
    assert_eq!(signed["modules"], json!(["payments"]));

    // Each sign-in regrants the key from the groups of the moment (here the
    // same): the key's row still says what its events say.
    let mut again = Console::new(&app);
    provider.next("sub-siti", "normal").await;
    assert_eq!(
        sign_in_through(&mut again, &app).await.status(),
        StatusCode::OK
    );
    chain_holds(&app).await;
}

/// What a refused return shows: the sign-in page, its message, and no
/// session cookie set.
async fn refused(resp: reqwest::Response, says: &str) {
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let sets_session = (resp.headers().get_all("set-cookie").iter())
        .any(|v| v.to_str().unwrap_or("").starts_with("ig_session="));
    assert!(!sets_session, "no session: {:?}", resp.headers());
    let page = resp.text().await.unwrap();
    assert!(page.contains("was refused"), "{page}");
    assert!(page.contains(says), "{says:?} in {page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_that_fails_any_check_signs_nobody_in() {
    let (app, provider) = with_provider(|_| {}).await;
    key_with_email(&app, "Budi Santoso", "budi@example.co.id", "submitter").await;
    key_with_email(&app, "Eko Prasetyo", "eko@example.co.id", "submitter").await;
    key_with_email(&app, "Rina Wati", "rina@example.co.id", "submitter").await;
    for (user, mode, says) in [
        ("sub-budi", "wrong_aud", "not valid"),
        ("sub-budi", "expired", "not valid"),
        ("sub-budi", "bad_signature", "not valid"),
        ("sub-budi", "wrong_nonce", "not valid"),
        ("sub-budi", "big_token", "more than 16384"),
        ("sub-eko", "normal", "has not verified your email"),
        ("sub-rina", "normal", "none of your groups"),
    ] {
        let mut c = Console::new(&app);
        provider.next(user, mode).await;
        let resp = sign_in_through(&mut c, &app).await;
        refused(resp, says).await;
        assert!(!c.has_cookie("ig_session"));
    }
    let events = app.get_json(&app.admin, "/api/events?limit=100").await;
    let refusals = (events["events"].as_array().unwrap().iter())
        .filter(|e| e["type"] == "person.sign_in_refused")
        .count();
    assert_eq!(refusals, 7, "{events}");
    chain_holds(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_or_foreign_state_signs_nobody_in() {
    let (app, provider) = with_provider(|_| {}).await;
    key_with_email(&app, "Budi Santoso", "budi@example.co.id", "submitter").await;
    let mut c = Console::new(&app);
    provider.next("sub-budi", "normal").await;
    let start = c.get("/auth/oidc/start?next=/jobs").await;
    let at_provider = c.get_url(&location(&start)).await;
    let back = location(&at_provider);
    assert_eq!(c.get_url(&back).await.status(), StatusCode::OK);

    // The same return again, from a browser that holds its state cookie.
    let state = back
        .split("state=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap();
    let held = format!("ig_oidc_state={state}");
    let resp = app
        .client
        .get(&back)
        .header("Cookie", held)
        .send()
        .await
        .unwrap();
    refused(resp, "used already").await;

    // A return to a browser that did not start the sign-in.
    let mut other = Console::new(&app);
    provider.next("sub-budi", "normal").await;
    let start = c.get("/auth/oidc/start?next=/jobs").await;
    let at_provider = c.get_url(&location(&start)).await;
    let resp = other.get_url(&location(&at_provider)).await;
    refused(resp, "did not start in this browser").await;
    assert!(!other.has_cookie("ig_session"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_is_down_is_said_within_ten_seconds_and_keys_still_work() {
    let (app, provider) = with_provider(|_| {}).await;
    drop(provider);
    let mut c = Console::new(&app);
    let started = Instant::now();
    let resp = c.get("/auth/oidc/start?next=/jobs").await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    let page = resp.text().await.unwrap();
    assert!(page.contains("cannot be reached"), "{page}");
    let key = app.submitter().await;
    let signed = c.sign_in(&key).await;
    assert_eq!(signed.status(), StatusCode::SEE_OTHER);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_provider_its_doors_are_not_found_and_keys_can_be_turned_off() {
    let app = crate::common::spawn_app_with(|s| s.console_key_sign_in = false).await;
    let mut c = Console::new(&app);
    assert_eq!(
        c.get("/auth/oidc/start").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        c.get("/auth/oidc/callback?code=x&state=y").await.status(),
        StatusCode::NOT_FOUND
    );
    let page = c.page("/signin").await;
    assert!(!page.contains("Sign in with"), "{page}");
    // The page's form token is its cookie's (there is no key form).
    let token = c.cookie("ig_form").expect("the form cookie");
    let key = app.submitter().await;
    let form = [
        ("_csrf", token.as_str()),
        ("key", key.as_str()),
        ("next", "/jobs"),
    ];
    let resp = c.post("/signin", &form).await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    assert!(
        resp.text()
            .await
            .unwrap()
            .contains("Sign-in with an API key is off")
    );
    assert!(!c.has_cookie("ig_session"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_eyes_holds_across_a_key_and_a_sign_in() {
    let (app, provider) = with_provider(|_| {}).await;
    // Siti uploads payments with her key, which has her work email…
    let (siti, _) = key_with_email(&app, "Siti Rahayu", "siti@example.co.id", "submitter").await;
    let payments = "payment_no,order_no,amount_idr,paid_at,method,status\n\
                    PAY-1,SO-9,1000,2024-05-01 10:00,QRIS,verified\n";
    let job = app.upload(&siti, "payments", "", payments).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    let id = job["id"].as_str().unwrap();
    let path = format!("/jobs/{id}");
    let etag = format!("\"{id}-2\"");

    // …then signs in through the provider as an approver of payments: she
    // is the same person, so the gate is not hers to pass.
    let mut s = Console::new(&app);
    provider.next("sub-siti", "normal").await;
    assert_eq!(sign_in_through(&mut s, &app).await.status(), StatusCode::OK);
    let html = s.page(&path).await;
    assert!(
        !html.contains(&format!("action=\"/jobs/{id}/approve\"")),
        "{html}"
    );
    let csrf = crate::console::csrf_of(&html);
    let resp = s
        .post(
            &format!("{path}/approve"),
            &[("_csrf", &csrf), ("etag", &etag)],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);

    // Dewi, an admin by her group, is another person: she approves.
    key_with_email(&app, "Dewi Anggraini", "dewi@example.co.id", "submitter").await;
    let mut d = Console::new(&app);
    provider.next("sub-dewi", "normal").await;
    assert_eq!(sign_in_through(&mut d, &app).await.status(), StatusCode::OK);
    let html = d.page(&path).await;
    assert!(html.contains(&format!("action=\"/jobs/{id}/approve\"")));
    let csrf = crate::console::csrf_of(&html);
    let resp = d
        .post(
            &format!("{path}/approve"),
            &[("_csrf", &csrf), ("etag", &etag)],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let done = app.wait_done(&app.admin, id).await;
    assert_eq!(done["state"], "committed", "{done}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_issuer_is_refused_unless_allowed() {
    let (app, _provider) = with_provider(|s| s.oidc.allow_http = false).await;
    let mut c = Console::new(&app);
    let resp = c.get("/auth/oidc/start?next=/jobs").await;
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(resp.text().await.unwrap().contains("not https"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_provider_is_said_within_ten_seconds() {
    let (app, provider) = with_provider(|_| {}).await;
    let resp = reqwest::Client::new()
        .post(format!("{}/_test/slow", provider.issuer))
        .json(&json!({"ms": 15000}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let mut c = Console::new(&app);
    let started = Instant::now();
    let resp = c.get("/auth/oidc/start?next=/jobs").await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(resp.text().await.unwrap().contains("cannot be reached"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ends_console_session_hours_after_sign_in() {
    let (app, provider) = with_provider(|s| s.console_session_hours = 3).await;
    key_with_email(&app, "Budi Santoso", "budi@example.co.id", "submitter").await;
    let mut c = Console::new(&app);
    provider.next("sub-budi", "normal").await;
    assert_eq!(sign_in_through(&mut c, &app).await.status(), StatusCode::OK);
    let signed_at = |hours: i64| {
        let at = chrono::Utc::now() - chrono::Duration::hours(hours);
        format!("UPDATE ig_sessions SET created_at = '{}'", at.to_rfc3339())
    };
    // Two hours in, the session holds; past three, it has ended.
    app.sql(&signed_at(2)).await;
    assert_eq!(c.get("/jobs").await.status(), StatusCode::OK);
    app.sql(&signed_at(4)).await;
    let resp = c.get("/jobs").await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    assert!(crate::console::location(&resp).starts_with("/signin"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_oidc_create_persons_an_unknown_person_is_made_at_sign_in() {
    let (app, provider) = with_provider(|s| s.oidc.create_persons = true).await;
    let before = keys_of(&app).await.len();
    let mut c = Console::new(&app);
    // Eko's email is not verified and no key has it: a new person.
    provider.next("sub-eko", "normal").await;
    assert_eq!(sign_in_through(&mut c, &app).await.status(), StatusCode::OK);
    let keys = keys_of(&app).await;
    assert_eq!(keys.len(), before + 1);
    let made = keys.last().unwrap();
    assert_eq!(made["role"], "submitter");
    assert_ne!(made["person_id"], keys[0]["person_id"]);
    // The unverified email is not kept as the person's.
    assert_eq!(made["email"], Value::Null, "{made}");
}
