//! The console over plain HTTP: sessions, CSRF, security headers, masking,
//! and the gate rules as the console applies them. (The browser tests in
//! `browser.rs` click through the same pages in Chromium.)

use std::collections::HashMap;
use std::time::Instant;

use reqwest::{Client, Response, StatusCode};

use crate::common::*;

const TABLE: &str = "uc_scrm_customers";

/// A browser-like client: keeps cookies, does not follow redirects.
pub struct Console<'a> {
    app: &'a TestApp,
    client: Client,
    cookies: HashMap<String, String>,
}

/// The value of the first hidden `_csrf` field of a page.
pub fn csrf_of(html: &str) -> String {
    let at = html
        .find("name=\"_csrf\" value=\"")
        .expect("a form with _csrf");
    let rest = &html[at + "name=\"_csrf\" value=\"".len()..];
    rest[..rest.find('"').expect("end of value")].to_string()
}

impl<'a> Console<'a> {
    pub fn new(app: &'a TestApp) -> Console<'a> {
        Console {
            app,
            client: Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
            cookies: HashMap::new(),
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn keep_cookies(&mut self, resp: &Response) {
        for v in resp.headers().get_all("set-cookie") {
            let text = v.to_str().unwrap_or("");
            let pair = text.split(';').next().unwrap_or("");
            if let Some((k, v)) = pair.split_once('=') {
                if v.is_empty() {
                    self.cookies.remove(k);
                } else {
                    self.cookies.insert(k.to_string(), v.to_string());
                }
            }
        }
    }

    pub async fn get(&mut self, path: &str) -> Response {
        self.get_url(&self.app.url(path)).await
    }

    /// A GET of a whole URL (another server on loopback shares the jar:
    /// cookies do not tell ports apart).
    pub async fn get_url(&mut self, url: &str) -> Response {
        let resp = self
            .client
            .get(url)
            .header("Cookie", self.cookie_header())
            .send()
            .await
            .expect("request");
        self.keep_cookies(&resp);
        resp
    }

    /// Whether the jar holds a cookie of this name.
    pub fn has_cookie(&self, name: &str) -> bool {
        self.cookies.contains_key(name)
    }

    /// The value of a cookie in the jar.
    pub fn cookie(&self, name: &str) -> Option<String> {
        self.cookies.get(name).cloned()
    }

    pub async fn page(&mut self, path: &str) -> String {
        let resp = self.get(path).await;
        assert_eq!(resp.status(), StatusCode::OK, "GET {path}");
        resp.text().await.expect("text")
    }

    pub async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Response {
        self.post_with(path, form, &[]).await
    }

    pub async fn post_with(
        &mut self,
        path: &str,
        form: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> Response {
        let mut req = self
            .client
            .post(self.app.url(path))
            .header("Cookie", self.cookie_header())
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(serde_urlencoded::to_string(form).expect("form"));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.send().await.expect("request");
        self.keep_cookies(&resp);
        resp
    }

    /// Uploads CSV text as the upload page's script does: the file as the
    /// body, the session's CSRF token in a header.
    pub async fn upload(&mut self, module: &str, csv: &str) -> Response {
        let csrf = csrf_of(&self.page("/upload").await);
        let resp = self
            .client
            .post(self.app.url(&format!("/console/import/{module}")))
            .header("Cookie", self.cookie_header())
            .header("Content-Type", "text/csv")
            .header("X-CSRF-Token", csrf)
            .body(csv.to_string())
            .send()
            .await
            .expect("request");
        self.keep_cookies(&resp);
        resp
    }

    /// Reads the console in `lang` from now on, as the top bar's language
    /// switch makes a browser do (its cookie).
    pub fn speak(&mut self, lang: &str) {
        self.cookies.insert("ig_lang".to_string(), lang.to_string());
    }

    pub async fn sign_in(&mut self, key: &str) -> Response {
        let html = self.page("/signin").await;
        let token = csrf_of(&html);
        self.post(
            "/signin",
            &[("_csrf", &token), ("key", key), ("next", "/jobs")],
        )
        .await
    }
}

pub fn location(resp: &Response) -> String {
    resp.headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_need_a_session_and_carry_a_strict_policy() {
    let app = spawn_app().await;
    let mut c = Console::new(&app);
    let resp = c.get("/jobs/job_x?action=error").await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        location(&resp),
        "/signin?next=%2Fjobs%2Fjob_x%3Faction%3Derror"
    );
    let resp = c.get("/console/jobs/states?ids=a").await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "scripts get a 401");

    let resp = c.get("/signin").await;
    let h = resp.headers().clone();
    let csp = h["content-security-policy"].to_str().unwrap();
    for part in [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "frame-ancestors 'none'",
        "form-action 'self'",
    ] {
        assert!(csp.contains(part), "{csp} lacks {part}");
    }
    assert!(!csp.contains("unsafe-inline"));
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["referrer-policy"], "no-referrer");
    let html = resp.text().await.unwrap();
    // Nothing a strict policy would block: no inline handlers, no inline scripts.
    for needle in [
        " onclick=",
        " onload=",
        " onsubmit=",
        " onchange=",
        "javascript:",
    ] {
        assert!(!html.contains(needle), "{needle}");
    }
    for script in html.split("<script").skip(1) {
        assert!(
            script.trim_start().starts_with("src="),
            "inline script: {script}"
        );
    }
    // A page nobody serves is a page, an API path nobody serves a problem.
    let resp = c.get("/nowhere").await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert!(resp.text().await.unwrap().contains("Page not found"));
    problem(
        app.get(&app.admin, "/api/nowhere").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    // Assets are embedded and served by the binary itself.
    for asset in [
        "/assets/console.css",
        "/assets/console.js",
        "/assets/icon.svg",
    ] {
        let resp = c.get(asset).await;
        assert_eq!(resp.status(), StatusCode::OK, "{asset}");
        assert!(html.contains(asset), "{asset} is linked");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_makes_a_strict_http_only_session_and_sign_out_ends_it() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let mut c = Console::new(&app);
    let resp = c.sign_in(&sub).await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&resp), "/jobs");
    let cookie = resp
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .find(|v| v.starts_with("ig_session="))
        .expect("session cookie");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(!cookie.contains("Secure"), "plain HTTP: {cookie}");
    assert!(!cookie.contains(&sub), "the key is not the cookie");
    // The database keeps a hash of the session id, never the id or the key.
    let id = c.cookies["ig_session"].clone();
    let rows = app.sql("SELECT id_hash, csrf FROM ig_sessions").await;
    assert_eq!(rows.len(), 1);
    assert_ne!(rows[0][0].as_deref(), Some(id.as_str()));

    let html = c.page("/jobs").await;
    assert!(html.contains("Bu***o") && !html.contains("Budi Santoso"));
    let csrf = csrf_of(&html);
    let resp = c.post("/signout", &[("_csrf", &csrf)]).await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    assert_eq!(app.count("ig_sessions").await, 0);
    assert_eq!(c.get("/jobs").await.status(), StatusCode::SEE_OTHER);

    // Behind a TLS proxy the cookie is Secure.
    let html = c.page("/signin").await;
    let token = csrf_of(&html);
    let resp = c
        .post_with(
            "/signin",
            &[("_csrf", &token), ("key", &sub)],
            &[("X-Forwarded-Proto", "https")],
        )
        .await;
    let cookie = resp.headers()["set-cookie"].to_str().unwrap().to_string();
    let all: Vec<String> = resp
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    assert!(
        all.iter()
            .any(|c| c.starts_with("ig_session=") && c.contains("Secure")),
        "{cookie} {all:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_key_or_a_forged_sign_in_form_does_not_sign_in() {
    let app = spawn_app().await;
    let mut c = Console::new(&app);
    let html = c.page("/signin").await;
    let token = csrf_of(&html);
    let resp = c
        .post("/signin", &[("_csrf", &token), ("key", "igk_nope")])
        .await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert!(
        resp.text()
            .await
            .unwrap()
            .contains("unknown, revoked or expired")
    );
    // A sign-in form from elsewhere lacks the form cookie's token.
    let sub = app.submitter().await;
    let mut other = Console::new(&app);
    let resp = other
        .post("/signin", &[("_csrf", &token), ("key", &sub)])
        .await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let resp = c
        .post_with(
            "/signin",
            &[("_csrf", &token), ("key", &sub)],
            &[("Sec-Fetch-Site", "cross-site")],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    assert_eq!(app.count("ig_sessions").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gate_moves_need_the_token_the_version_and_the_gate_rules() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let apr = app.approver().await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    let path = format!("/jobs/{id}");

    // The submitter is offered cancel, never approve or reject.
    let mut s = Console::new(&app);
    s.sign_in(&sub).await;
    let html = s.page(&path).await;
    assert!(html.contains(&format!("action=\"/jobs/{id}/cancel\"")));
    assert!(!html.contains(&format!("action=\"/jobs/{id}/approve\"")));
    assert!(!html.contains(&format!("action=\"/jobs/{id}/reject\"")));
    assert!(html.contains("four-eyes") || html.contains("An approver decides"));
    // Posting it anyway is refused by the same rule as the API.
    let csrf = csrf_of(&html);
    let etag = format!("\"{id}-{}\"", 2);
    let resp = s
        .post(
            &format!("{path}/approve"),
            &[("_csrf", &csrf), ("etag", &etag)],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);

    let mut a = Console::new(&app);
    a.sign_in(&apr).await;
    let html = a.page(&path).await;
    assert!(html.contains(&format!("action=\"/jobs/{id}/approve\"")));
    let csrf = csrf_of(&html);
    // Without the session's token, or from another site: refused.
    let resp = a
        .post(
            &format!("{path}/approve"),
            &[("_csrf", "forged"), ("etag", &etag)],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let resp = a
        .post_with(
            &format!("{path}/approve"),
            &[("_csrf", &csrf), ("etag", &etag)],
            &[("Origin", "http://evil.example")],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    // A version nobody looked at: 412, nothing moves.
    let resp = a
        .post(
            &format!("{path}/approve"),
            &[("_csrf", &csrf), ("etag", &format!("\"{id}-1\""))],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::PRECONDITION_FAILED);
    assert!(
        resp.text()
            .await
            .unwrap()
            .contains("changed since you looked")
    );
    // Reject needs a reason.
    let resp = a
        .post(
            &format!("{path}/reject"),
            &[("_csrf", &csrf), ("etag", &etag), ("comment", " ")],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.job(&apr, id).await["state"], "awaiting_approval");
    assert_eq!(app.count(TABLE).await, 0);

    // The version the approver saw, with the token: committed.
    let resp = a
        .post(
            &format!("{path}/approve"),
            &[("_csrf", &csrf), ("etag", &etag), ("comment", "ok")],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&resp), format!("{path}?done=approve"));
    let job = app.wait_done(&apr, id).await;
    assert_eq!(job["state"], "committed");
    assert_eq!(job["decisions"][0]["comment"], "ok");
    assert_eq!(app.count(TABLE).await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_key_or_an_expired_session_ends_the_session() {
    let app = spawn_app().await;
    let (sub, sub_id) = app.key("Budi Santoso", "submitter", &["*"]).await;
    let mut c = Console::new(&app);
    c.sign_in(&sub).await;
    assert_eq!(c.get("/jobs").await.status(), StatusCode::OK);
    app.sql("UPDATE ig_sessions SET expires_at = '2000-01-01T00:00:00Z'")
        .await;
    let resp = c.get("/jobs").await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER, "expired");

    c.sign_in(&sub).await;
    assert_eq!(c.get("/jobs").await.status(), StatusCode::OK);
    let resp = app
        .client
        .delete(app.url(&format!("/api/keys/{sub_id}")))
        .header("X-API-Key", &app.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        c.get("/jobs").await.status(),
        StatusCode::SEE_OTHER,
        "revoked"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_are_masked_on_every_page() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let apr = app.approver().await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap().to_string();
    app.act_ok(&apr, &id, "approve").await;
    let mut c = Console::new(&app);
    c.sign_in(&app.admin).await;
    for path in [
        "/jobs".to_string(),
        format!("/jobs/{id}"),
        "/developers".to_string(),
        "/upload".to_string(),
    ] {
        let html = c.page(&path).await;
        for full in ["Budi Santoso", "Siti Rahayu"] {
            assert!(!html.contains(full), "{full} on {path}");
        }
    }
    // Key management is the one exception (API.md section 1): the admin
    // issuing or revoking a key sees whose it is.
    let html = c.page("/keys").await;
    assert!(html.contains("Budi Santoso") && html.contains("Bu***o"));
    let html = c.page(&format!("/jobs/{id}")).await;
    assert!(html.contains("Bu***o") && html.contains("Si***u"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_manage_keys_and_requests_in_the_console() {
    let app = spawn_app().await;
    // Anyone asks for a key in the developer center.
    let mut visitor = Console::new(&app);
    let html = visitor.page("/developers").await;
    let token = csrf_of(&html);
    let resp = visitor
        .post(
            "/developers/request",
            &[
                ("_csrf", &token),
                ("name", "Rina Kusuma"),
                ("email", "rina@contoh.co.id"),
                ("role", "approver"),
                ("modules", "customers, orders"),
                ("reason", "Menyetujui impor pelanggan"),
            ],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let html = resp.text().await.unwrap();
    let value_of = |id: &str| {
        let at = html.find(&format!("id=\"{id}\"")).expect(id);
        let rest = &html[at..];
        let v = &rest[rest.find("value=\"").unwrap() + 7..];
        v[..v.find('"').unwrap()].to_string()
    };
    let request_id = value_of("req-id");
    let claim_token = value_of("req-token");

    // The admin sees whom the key would go to, in full (key management
    // is the one exception to masking), and approves it; creates and
    // revokes a key.
    let mut admin = Console::new(&app);
    admin.sign_in(&app.admin).await;
    let html = admin.page("/keys").await;
    assert!(html.contains("Ri***a") && html.contains("Rina Kusuma"));
    assert!(html.contains("rina@contoh.co.id"));
    let csrf = csrf_of(&html);
    let resp = admin
        .post(
            &format!("/keys/requests/{request_id}/approve"),
            &[("_csrf", &csrf)],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let resp = admin
        .post(
            "/keys",
            &[
                ("_csrf", &csrf),
                ("name", "Joko Widodo"),
                ("role", "submitter"),
                ("modules", "*"),
                ("expires", ""),
            ],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let html = resp.text().await.unwrap();
    let at = html
        .find("id=\"new-key\"")
        .expect("the new key, shown once");
    let shown = &html[at..];
    let shown = &shown[shown.find("value=\"").unwrap() + 7..];
    let new_key = shown[..shown.find('"').unwrap()].to_string();
    assert!(new_key.starts_with("igk_"));
    assert_eq!(
        app.get(&new_key, "/api/jobs").await.status(),
        StatusCode::OK
    );
    assert!(!admin.page("/keys").await.contains(&new_key), "shown once");
    let made = app
        .sql("SELECT id, person_id FROM ig_keys WHERE name = 'Joko Widodo'")
        .await;
    let (key_id, person_id) = (made[0][0].clone().unwrap(), made[0][1].clone().unwrap());
    // A second key for the same person, chosen from the list of persons.
    let html = admin.page("/keys").await;
    assert!(
        html.contains(&format!("option value=\"{person_id}\"")),
        "the person is offered"
    );
    let resp = admin
        .post(
            "/keys",
            &[
                ("_csrf", &csrf),
                ("name", "Joko Widodo"),
                ("email", "joko@contoh.co.id"),
                ("person_id", &person_id),
                ("role", "approver"),
                ("modules", "*"),
                ("expires", ""),
            ],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let persons = app
        .sql("SELECT DISTINCT person_id FROM ig_keys WHERE name = 'Joko Widodo'")
        .await;
    assert_eq!(
        persons,
        vec![vec![Some(person_id.clone())]],
        "one person, two keys"
    );
    assert!(admin.page("/keys").await.contains("joko@contoh.co.id"));
    let resp = admin
        .post(&format!("/keys/{key_id}/revoke"), &[("_csrf", &csrf)])
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        app.get(&new_key, "/api/jobs").await.status(),
        StatusCode::UNAUTHORIZED
    );

    // The requester collects the key once, with the token in a form body.
    let resp = visitor
        .post(
            "/developers/claim",
            &[
                ("_csrf", &token),
                ("id", &request_id),
                ("claim_token", &claim_token),
            ],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let html = resp.text().await.unwrap();
    let at = html.find("id=\"new-key\"").expect("the key");
    let shown = &html[at..];
    let shown = &shown[shown.find("value=\"").unwrap() + 7..];
    let collected = shown[..shown.find('"').unwrap()].to_string();
    assert_eq!(
        app.get(&collected, "/api/jobs").await.status(),
        StatusCode::OK
    );
    let resp = visitor
        .post(
            "/developers/claim",
            &[
                ("_csrf", &token),
                ("id", &request_id),
                ("claim_token", &claim_token),
            ],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::GONE);

    // Key pages are for admins only.
    let sub = app.submitter().await;
    let mut s = Console::new(&app);
    s.sign_in(&sub).await;
    assert_eq!(s.get("/keys").await.status(), StatusCode::FORBIDDEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preview_pages_in_the_database_on_a_large_job() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap().to_string();
    // Stage a million rows for the job behind the service's back (what a
    // million-row upload leaves), then page to the end.
    let rows: i64 = 1_000_000;
    let columns = "(job, seq, row_no, action, nkey, vals, v_customer_name, v_wa_number)";
    let job = format!("(SELECT stage FROM ig_jobs WHERE id = '{id}')");
    let fill = if std::env::var("IMPORTGATE_TEST_POSTGRES").is_ok_and(|v| !v.is_empty()) {
        format!(
            "INSERT INTO ig_stage_customers {columns} \
             SELECT {job}, s, s + 2, 'insert', NULL, NULL, 'Pelanggan ' || s, '08' || s \
             FROM generate_series(3, {rows}) AS s"
        )
    } else if app.database.starts_with("mysql") {
        // MariaDB stops a recursion at 1,000 rounds: the numbers are six
        // digits crossed.
        let digits = "(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 \
                      UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 \
                      UNION ALL SELECT 8 UNION ALL SELECT 9)";
        let crossed: Vec<String> = (0..6).map(|i| format!("{digits} d{i}")).collect();
        format!(
            "INSERT INTO ig_stage_customers {columns} \
             SELECT {job}, n, n + 2, 'insert', NULL, NULL, 'Pelanggan ' || n, '08' || n FROM \
             (SELECT 3 + d0.d + 10 * d1.d + 100 * d2.d + 1000 * d3.d + 10000 * d4.d \
                     + 100000 * d5.d AS n FROM {}) s WHERE n <= {rows}",
            crossed.join(" CROSS JOIN ")
        )
    } else {
        format!(
            "WITH RECURSIVE s(n) AS (SELECT 3 UNION ALL SELECT n + 1 FROM s WHERE n < {rows}) \
             INSERT INTO ig_stage_customers {columns} \
             SELECT {job}, n, n + 2, 'insert', NULL, NULL, 'Pelanggan ' || n, '08' || n FROM s"
        )
    };
    app.sql(&fill).await;
    // What the database's own statistics job (autovacuum) does after a
    // large insert; without it PostgreSQL plans as if the table were empty.
    if app.database.starts_with("mysql") {
        app.sql("ANALYZE TABLE ig_stage_customers").await;
    } else {
        app.sql("ANALYZE ig_stage_customers").await;
    }
    let counts = format!(
        "{{\"rows\":{},\"valid\":{},\"errors\":0,\"insert\":{},\"update\":0,\"unchanged\":0}}",
        rows + 1,
        rows + 1,
        rows + 1
    );
    app.sql(&format!(
        "UPDATE ig_jobs SET counts = '{counts}' WHERE id = '{id}'"
    ))
    .await;
    let mut c = Console::new(&app);
    c.sign_in(&sub).await;
    let last = (rows / 50) * 50;
    for path in [
        format!("/jobs/{id}"),
        format!("/jobs/{id}?offset={last}"),
        format!("/jobs/{id}?action=insert&offset={last}"),
    ] {
        // How fast a deep page is, is the benchmark's to say (`preview p50`
        // in BENCHMARKS.md, the page at the middle of a 1M-row job): a
        // time limit here fails on a loaded 2-core machine, not on code.
        let started = Instant::now();
        let html = c.page(&path).await;
        eprintln!("{path}: {:?}", started.elapsed());
        assert!(html.contains("of 1,000,001"), "{path}");
    }
    let html = c.page(&format!("/jobs/{id}?offset={last}")).await;
    assert!(
        html.contains(&format!("Pelanggan {rows}")),
        "the last row is shown"
    );
    assert_eq!(html.matches("<tr class=\"row-insert\"").count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_simulate_shows_the_banner_on_every_page() {
    let plain = spawn_app().await;
    let html = Console::new(&plain).page("/signin").await;
    assert!(!html.contains("Simulation — nothing is written"));

    let app = spawn_app_with(|s| s.simulate = true).await;
    let sub = app.submitter().await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let mut c = Console::new(&app);
    for path in ["/signin", "/developers"] {
        assert!(
            c.page(path)
                .await
                .contains("Simulation — nothing is written")
        );
    }
    c.sign_in(&sub).await;
    for path in [
        "/jobs".to_string(),
        "/upload".to_string(),
        format!("/jobs/{}", job["id"].as_str().unwrap()),
    ] {
        let html = c.page(&path).await;
        assert!(html.contains("Simulation — nothing is written"), "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upload_and_developer_pages_speak_indonesian() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let mut c = Console::new(&app);
    // The browser asks for Indonesian; the session's cookies go along.
    let get_id = |c: &Console, path: &str| {
        c.client
            .get(c.app.url(path))
            .header("Cookie", c.cookie_header())
            .header("Accept-Language", "id-ID,id;q=0.9,en;q=0.8")
            .send()
    };

    let resp = get_id(&c, "/developers").await.expect("request");
    assert_eq!(resp.status(), StatusCode::OK);
    let html = resp.text().await.unwrap();
    for id in [
        "Pusat pengembang",
        "Minta kunci",
        "Ambil kunci Anda",
        "Memanggil API",
        "di header <code>X-API-Key</code>. Unggah berkas",
        "buku besar pekerjaan",
    ] {
        assert!(html.contains(id), "{id}");
    }
    for en in [
        "Developer center",
        "Request a key",
        "Collect your key",
        "Calling the API",
        "the job's ledger",
    ] {
        assert!(!html.contains(en), "{en}");
    }

    c.sign_in(&sub).await;
    let resp = get_id(&c, "/upload").await.expect("request");
    assert_eq!(resp.status(), StatusCode::OK);
    let html = resp.text().await.unwrap();
    for id in [
        "Unggah berkas",
        "Kunci alami: ",
        "Templat: ",
        "Kolom customers",
        "<strong>wajib</strong>",
        "setiap baris harus baru",
        "Jika ada kesalahan",
        "Unggah dan periksa",
    ] {
        assert!(html.contains(id), "{id}");
    }
    for en in [
        "Upload a file",
        "Natural key",
        "Columns of customers",
        "every row must be new",
        "Rows with errors",
        "Upload and validate",
    ] {
        assert!(!html.contains(en), "{en}");
    }
    // Without the header the same page stays English.
    let html = c.page("/upload").await;
    assert!(html.contains("Upload a file") && html.contains("Natural key: "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_pages_speak_indonesian() {
    let app = spawn_app().await;
    let mut c = Console::new(&app);
    c.speak("id");
    let html = c.page("/signin").await;
    assert!(html.contains("Masuk dengan Kunci API Anda"), "{html}");
    assert!(html.contains("Minta kunci di pusat pengembang"));
    assert!(!html.contains("Sign in with your API key"));
    assert!(!html.contains("No key yet?"));

    c.sign_in(&app.admin).await;
    let html = c.page("/keys").await;
    for id in [
        "Buat kunci baru",
        "Permintaan kunci",
        "0 menunggu",
        "Staf dapat meminta kunci di <a href=\"/developers\">pusat pengembang</a>.",
        "Semua kunci",
        "kunci Anda",
    ] {
        assert!(html.contains(id), "{id}");
    }
    for en in [
        "Create a key",
        "Key requests",
        "All keys",
        "your key",
        "No requests yet",
    ] {
        assert!(!html.contains(en), "{en}");
    }
}

/// The text of the `<select>` (or other element) whose id is `id`, up to
/// its end tag.
fn element<'h>(html: &'h str, id: &str, end: &str) -> &'h str {
    let at = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id}"));
    let rest = &html[at..];
    &rest[..rest.find(end).unwrap_or(rest.len())]
}

const CRM_EXPORT: &str = "Nama Pelanggan,No. WA,Kota,Catatan\n\
Budi Santoso,081234567801,Bandung,pelanggan lama\n\
Siti Rahayu,081234567802,Surabaya,\n";

const ONE_WRONG: &str = "customer_name,wa_number,city,consumable_cycle_days\n\
Budi Santoso,081234567801,Bandung,30\n\
Siti Rahayu,081234567802,Surabaya,tiga puluh\n";

/// The Fix page sends what a person entered to the service's revision;
/// when the service refuses it (`422`), the page comes back with the
/// message beside what it names and everything entered still there, and
/// no job is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fix_page_keeps_what_was_entered_when_the_service_refuses_it() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let invalid = app.upload(&sub, "customers", "", CRM_EXPORT).await;
    assert_eq!(invalid["problem"]["code"], "missing_columns");
    let failed = app.upload(&sub, "customers", "", ONE_WRONG).await;
    assert_eq!(failed["state"], "failed");
    let jobs = app.count("ig_jobs").await;
    let mut s = Console::new(&app);
    s.sign_in(&sub).await;

    // Two headers mapped to one column.
    let id = invalid["id"].as_str().unwrap();
    let html = s.page(&format!("/jobs/{id}")).await;
    assert!(
        html.contains(&format!("href=\"/jobs/{id}/fix\"")),
        "Fix offered"
    );
    let html = s.page(&format!("/jobs/{id}/fix")).await;
    assert!(element(&html, "map-2", "</select>").contains("value=\"wa_number\" selected"));
    let csrf = csrf_of(&html);
    let form = [
        ("_csrf", csrf.as_str()),
        ("map-1", "customer_name"),
        ("map-2", "customer_name"),
        ("map-3", "city"),
        ("map-4", ""),
        ("comment", "dari ekspor CRM"),
    ];
    let resp = s.post(&format!("/jobs/{id}/fix"), &form).await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = resp.text().await.unwrap();
    let mapping = element(&html, "fix-mapping", "</section>");
    assert!(mapping.contains("class=\"field-error\""), "{mapping}");
    assert!(mapping.contains("customer_name"), "{mapping}");
    assert!(element(&html, "map-2", "</select>").contains("value=\"customer_name\" selected"));
    assert!(element(&html, "fix-comment", "</textarea>").contains("dari ekspor CRM"));

    // A fixed cell too long for a cell, on a failed job.
    let id = failed["id"].as_str().unwrap();
    let html = s.page(&format!("/jobs/{id}/fix")).await;
    let cell = element(&html, "cell-3-consumable_cycle_days", ">");
    assert!(cell.contains("value=\"tiga puluh\""), "{cell}");
    let long = "3".repeat(70_000);
    let form = [
        ("_csrf", csrf.as_str()),
        ("cell-3-consumable_cycle_days", long.as_str()),
        ("orig-3-consumable_cycle_days", "tiga puluh"),
        ("exclude", "3"),
    ];
    let resp = s.post(&format!("/jobs/{id}/fix"), &form).await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = resp.text().await.unwrap();
    let row = element(&html, "fix-row-3", "</tr>");
    assert!(row.contains(&long), "the value is kept");
    assert!(
        row.contains("class=\"field-error\""),
        "{}",
        &row[row.len() - 400..]
    );
    assert!(row.contains("at most 65536 bytes"));
    assert!(element(&html, "exclude-3", ">").contains("checked"));

    // The page in Indonesian.
    s.speak("id");
    let html = s.page(&format!("/jobs/{id}/fix")).await;
    assert!(html.contains("Baris dengan kesalahan") && html.contains("Validasi ulang"));

    // Nothing was made, nothing was revised.
    assert_eq!(app.count("ig_jobs").await, jobs);
    for job in [&invalid, &failed] {
        let now = app.job(&sub, job["id"].as_str().unwrap()).await;
        assert_eq!(now["revised_as"], serde_json::Value::Null, "{now}");
        assert_eq!(now["state"], job["state"]);
    }
}

/// A multipart form as a browser sends one: fields, then one file.
fn multipart(fields: &[(&str, &str)], file: (&str, &str, &[u8])) -> (String, Vec<u8>) {
    let boundary = "----importgate-test-boundary";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    let (name, content_type, bytes) = file;
    body.extend(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n\
             Content-Type: {content_type}\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend(bytes);
    body.extend(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// The Fix page's spreadsheet section: the failing rows download as the
/// API gives them, and the corrected file sent back from the page is a
/// revision fixing only the edited cell; a file that changes nothing
/// comes back to the page with the service's message, nothing created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fix_page_downloads_the_failing_rows_and_takes_the_corrected_file() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let failed = app.upload(&sub, "customers", "", ONE_WRONG).await;
    let id = failed["id"].as_str().unwrap();
    let mut s = Console::new(&app);
    s.sign_in(&sub).await;
    let html = s.page(&format!("/jobs/{id}/fix")).await;
    let section = element(&html, "fix-file", "</section>");
    assert!(
        section.contains(&format!("/jobs/{id}/fix/rows?format=xlsx")),
        "{section}"
    );
    let csrf = csrf_of(&html);

    let resp = s.get(&format!("/jobs/{id}/fix/rows?format=xlsx")).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(
        resp.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains("errored-rows.xlsx")
    );
    assert!(resp.bytes().await.unwrap().starts_with(b"PK"));
    let resp = s.get(&format!("/jobs/{id}/fix/rows?format=csv")).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let csv = resp.text().await.unwrap();
    let api = app.errored_rows_csv(&sub, id).await;
    assert_eq!(csv, api, "the page gives the API's file");
    assert!(csv.starts_with("row,customer_name"), "{csv}");
    assert!(csv.contains("tiga puluh"), "{csv}");

    let jobs = app.count("ig_jobs").await;
    let send = |file: Vec<u8>| {
        let (content_type, body) = multipart(
            &[("_csrf", csrf.as_str()), ("comment", "diperbaiki di Excel")],
            ("errored-rows.csv", "text/csv", &file),
        );
        let req = s
            .client
            .post(app.url(&format!("/jobs/{id}/fix/file")))
            .header("Cookie", s.cookie_header())
            .header("Content-Type", content_type)
            .body(body);
        async move { req.send().await.unwrap() }
    };
    let resp = send(csv.clone().into_bytes()).await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = resp.text().await.unwrap();
    assert!(
        element(&html, "fix-file", "</section>").contains("class=\"field-error\""),
        "the message is at the file"
    );
    assert_eq!(app.count("ig_jobs").await, jobs, "nothing was created");

    let resp = send(csv.replace("tiga puluh", "30").into_bytes()).await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let new_id = location(&resp).trim_start_matches("/jobs/").to_string();
    let new = app.wait_done(&sub, &new_id).await;
    assert_eq!(new["state"], "awaiting_approval", "{new}");
    assert_eq!(new["revision_of"], id);
    assert_eq!(new["revision"]["fixes"], 1, "only the edited cell");
    assert_eq!(new["revision"]["comment"], "diperbaiki di Excel");
}

/// The developer center is where an integrator starts: revisions, export,
/// events, webhooks, the OpenAPI document and the command line, each with
/// an example in the signed-in key's module; every read it shows answers
/// that key when pasted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_developer_center_shows_working_examples_in_the_keys_scope() {
    let app = spawn_app().await;
    let (key, _) = app.key("Budi Santoso", "submitter", &["orders"]).await;
    let mut c = Console::new(&app);
    c.sign_in(&key).await;
    let html = c.page("/developers").await;
    for said in [
        "/api/jobs/job_…/revisions",
        "/api/modules/orders/export?format=csv",
        "?mode=upsert",
        "/api/events/stream",
        "/api/webhooks",
        "href=\"/api/openapi.json\"",
        "importgate import orders orders.csv --wait",
        "importgate jobs approve",
        "importgate events tail",
    ] {
        assert!(html.contains(said), "{said} is not on the page");
    }
    assert!(!html.contains("/api/modules/customers/export"));
    // Every example that reads, pasted with the key.
    let text = html.replace("&amp;", "&").replace("&#39;", "'");
    let reads: Vec<&str> = text
        .lines()
        .map(|l| l.rsplit_once("<code>").map_or(l, |(_, code)| code))
        .filter(|l| l.starts_with("curl '") || l.starts_with("curl -N"))
        .filter_map(|l| l.split(['\'', ' ']).find(|w| w.starts_with("http")))
        .filter(|u| !u.contains("/stream"))
        .collect();
    assert!(reads.len() >= 2, "{reads:?}");
    for url in reads {
        let resp = app
            .client
            .get(url)
            .header("X-API-Key", &key)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{url}");
    }
    let resp = app
        .client
        .get(app.url("/api/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

/// The job list says which jobs are revisions, and of which job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_job_list_names_the_job_a_revision_revises() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let bad = "customer_name,wa_number,consumable_cycle_days\nAndi,0811000001,lots\n";
    let failed = app.upload(&sub, "customers", "", bad).await;
    let id = failed["id"].as_str().unwrap();
    let resp = app
        .client
        .post(app.url(&format!("/api/jobs/{id}/revisions")))
        .header("X-API-Key", &sub)
        .json(&serde_json::json!({"fixes": [{"row": 2, "column": "consumable_cycle_days", "value": "30"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let mut c = Console::new(&app);
    c.sign_in(&sub).await;
    let html = c.page("/jobs").await;
    let at = html
        .find("revision 1 of")
        .expect("the list names the revision");
    let marker = &html[at..(at + 200).min(html.len())];
    assert!(marker.contains(&format!("href=\"/jobs/{id}\"")), "{marker}");
}
