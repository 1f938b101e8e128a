//! The console in a real browser: headless Chromium driven over WebDriver
//! (Debian's `chromium` and `chromium-driver`, installed by `.ci/run`).
//! Each test starts its own chromedriver and a fresh profile, clicks
//! through the pages as a person would, checks the database, and saves
//! screenshots under `tests/output/` to look at.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::common::*;

const TABLE: &str = "uc_scrm_customers";

/// A chromedriver with one Chromium session. Dropping it ends both (the
/// driver runs in its own process group, so Chromium goes with it).
pub struct Browser {
    pub client: Client,
    base: String,
    driver: Child,
    profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// Where screenshots go (gitignored).
pub fn output_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/output");
    std::fs::create_dir_all(&dir).expect("tests/output");
    dir
}

impl Browser {
    /// Starts chromedriver and a headless Chromium window of this size.
    pub async fn start(base: &str, width: u32, height: u32) -> Browser {
        Browser::start_in(base, width, height, "en-US,en").await
    }

    /// The same, with the browser's languages (`Accept-Language`).
    pub async fn start_in(base: &str, width: u32, height: u32, languages: &str) -> Browser {
        use std::os::unix::process::CommandExt;
        let driver_bin = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .expect("chromedriver is installed (apt-get install chromium chromium-driver; .ci/run does it)");
        let port = free_port();
        let driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("chromedriver starts");
        let profile = tempfile::tempdir().expect("profile dir");
        let caps = json!({
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage",
                    format!("--window-size={width},{height}"),
                    format!("--user-data-dir={}", profile.path().display()),
                ],
                "prefs": {
                    "intl.accept_languages": languages,
                    "download.default_directory": profile.path().join("downloads"),
                    "download.prompt_for_download": false
                }
            }
        });
        let caps = caps.as_object().expect("object").clone();
        let url = format!("http://127.0.0.1:{port}");
        let mut last_error = None;
        for _ in 0..100 {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(client) => {
                    let b = Browser {
                        client,
                        base: base.to_string(),
                        driver,
                        profile,
                    };
                    b.client
                        .set_window_size(width, height)
                        .await
                        .expect("window size");
                    return b;
                }
                Err(e) => last_error = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no WebDriver session: {last_error:?}");
    }

    pub async fn goto(&self, path: &str) {
        self.client
            .goto(&format!("{}{path}", self.base))
            .await
            .expect("goto");
    }

    pub async fn path(&self) -> String {
        self.client
            .current_url()
            .await
            .expect("url")
            .path()
            .to_string()
    }

    pub async fn find(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css}: {e}"))
    }

    pub async fn count(&self, css: &str) -> usize {
        self.client
            .find_all(Locator::Css(css))
            .await
            .expect("find_all")
            .len()
    }

    pub async fn text(&self, css: &str) -> String {
        self.find(css).await.text().await.expect("text")
    }

    /// The current value of a form field.
    pub async fn value(&self, css: &str) -> String {
        self.find(css)
            .await
            .prop("value")
            .await
            .expect("value")
            .unwrap_or_default()
    }

    pub async fn click(&self, css: &str) {
        self.find(css).await.click().await.expect("click");
    }

    pub async fn type_into(&self, css: &str, text: &str) {
        let e = self.find(css).await;
        e.clear().await.expect("clear");
        e.send_keys(text).await.expect("keys");
    }

    /// Waits until the element's text contains `wanted` (pages reload by
    /// themselves while the service works, so the element is found anew).
    pub async fn wait_text(&self, css: &str, wanted: &str) {
        let mut seen = String::new();
        for _ in 0..150 {
            if let Ok(e) = self.client.find(Locator::Css(css)).await
                && let Ok(t) = e.text().await
            {
                if t.contains(wanted) {
                    return;
                }
                seen = t;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let shot = self.shot("failure").await;
        panic!(
            "{css} never showed {wanted:?}; last {seen:?}; screenshot {}",
            shot.display()
        );
    }

    /// The whole page as a PNG under `tests/output/{name}.png`.
    pub async fn shot(&self, name: &str) -> PathBuf {
        let (w, h) = self.client.get_window_size().await.expect("size");
        self.client
            .execute("window.scrollTo(0, 0);", vec![])
            .await
            .expect("scroll");
        let full: Value = self
            .client
            .execute(
                "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight);",
                vec![],
            )
            .await
            .expect("height");
        let full = full.as_u64().unwrap_or(h).clamp(h, 6000) as u32;
        self.client
            .set_window_size(w as u32, full)
            .await
            .expect("resize");
        let png = self.client.screenshot().await.expect("screenshot");
        self.client
            .set_window_size(w as u32, h as u32)
            .await
            .expect("resize back");
        let path = output_dir().join(format!("{name}.png"));
        std::fs::write(&path, png).expect("write screenshot");
        path
    }

    pub async fn sign_in(&self, key: &str) {
        self.goto("/signin").await;
        self.type_into("#key", key).await;
        self.click("form.card button[type=submit]").await;
        self.wait_path("/jobs").await;
    }

    /// Waits until the browser is at a path starting with `prefix`.
    pub async fn wait_path(&self, prefix: &str) {
        let mut at = String::new();
        for _ in 0..100 {
            at = self.path().await;
            if at.starts_with(prefix) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let shot = self.shot("failure").await;
        panic!(
            "stayed at {at}, not {prefix}; screenshot {}",
            shot.display()
        );
    }

    pub async fn sign_out(&self) {
        self.click(".who button[type=submit]").await;
        self.wait_path("/signin").await;
    }

    /// Opens a gate action on the job page, writes a comment, confirms.
    pub async fn decide(&self, action: &str, comment: &str) {
        self.click(&format!("details.action-{action} > summary"))
            .await;
        if !comment.is_empty() {
            self.type_into(&format!("#comment-{action}"), comment).await;
        }
        self.click(&format!(
            "details.action-{action} button[data-confirm-button]"
        ))
        .await;
    }

    /// Waits for a download named `name` to be whole in the browser's
    /// download directory; its text.
    pub async fn downloaded(&self, name: &str) -> String {
        let path = self.profile.path().join("downloads").join(name);
        for _ in 0..100 {
            if let Ok(text) = std::fs::read_to_string(&path) {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no download {name} in 10 s");
    }

    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

fn file(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write file");
    path.display().to_string()
}

const BAD_CUSTOMERS: &str = "customer_name,wa_number,city,grade,consumable_cycle_days\n\
Andi Wijaya,0811000001,Jakarta,A,30\n\
Budi Hartono,,Bandung,B,\n\
Citra Lestari,0811000003,Surabaya,,tiga puluh\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_upload_fix_approve_and_roll_back_through_the_gate() {
    let app = spawn_app().await;
    let sub = app.key("Budi Santoso", "submitter", &["*"]).await.0;
    let apr = app.key("Siti Rahayu", "approver", &["*"]).await.0;
    let apr2 = app.key("Eko Prasetyo", "approver", &["*"]).await.0;
    let files = tempfile::tempdir().unwrap();
    let b = Browser::start(&app.base, 1280, 900).await;

    // A submitter signs in and uploads a file with two wrong cells.
    b.sign_in(&sub).await;
    b.goto("/upload").await;
    b.find("#module")
        .await
        .select_by_value("customers")
        .await
        .unwrap();
    assert!(
        b.text("section.module-info:not([hidden])")
            .await
            .contains("wa_number")
    );
    b.shot("upload-1280").await;
    let bad = file(files.path(), "pelanggan.csv", BAD_CUSTOMERS);
    b.find("#file").await.send_keys(&bad).await.unwrap();
    b.click("#upload-button").await;
    b.wait_text("h1 .badge", "Failed").await;
    let failed_job = b.path().await;
    assert!(failed_job.starts_with("/jobs/job_"), "{failed_job}");
    // The preview shows the wrong cells highlighted with their message.
    assert_eq!(b.count("td.cell-error").await, 2);
    let cells = b.text("table.preview").await;
    assert!(cells.contains("tiga puluh"), "{cells}");
    b.click("nav.tabs a[href*='action=error']").await;
    b.wait_text("nav.tabs a[aria-current]", "Errors").await;
    assert_eq!(b.count("table.preview tbody tr").await, 2);
    b.shot("job-failed-errors-1280").await;

    // Fixed and uploaded again: waits at the gate, and the submitter may
    // not approve it (four-eyes).
    b.goto("/upload").await;
    let good = file(files.path(), "pelanggan-fixed.csv", CUSTOMERS);
    b.find("#file").await.send_keys(&good).await.unwrap();
    b.click("#upload-button").await;
    b.wait_text("h1 .badge", "Awaiting approval").await;
    let job = b.path().await;
    assert_ne!(job, failed_job);
    assert_eq!(
        b.count("details.action-approve").await,
        0,
        "no approve for the submitter"
    );
    assert!(
        b.text("section.actions").await.contains("four-eyes")
            || b.text("section.actions")
                .await
                .contains("An approver decides")
    );
    assert_eq!(b.count("details.action-cancel").await, 1);
    assert_eq!(app.count(TABLE).await, 0);
    b.shot("job-awaiting-submitter-1280").await;
    b.sign_out().await;

    // An approver approves: committed, and the rows are in the table.
    b.sign_in(&apr).await;
    b.shot("jobs-list-1280").await;
    b.goto(&job).await;
    assert!(b.text("dl.stats").await.contains("Insert\n3"));
    b.click("details.action-approve > summary").await;
    b.shot("job-approve-confirm-1280").await;
    b.type_into("#comment-approve", "Cocok dengan data CRM.")
        .await;
    b.click("details.action-approve button[data-confirm-button]")
        .await;
    b.wait_text("h1 .badge", "Committed").await;
    assert_eq!(app.count(TABLE).await, 3);
    let names = app
        .sql(&format!(
            "SELECT customer_name FROM {TABLE} ORDER BY wa_number"
        ))
        .await;
    assert_eq!(names[0][0].as_deref(), Some("Andi Wijaya"));
    assert!(b.text("#timeline").await.contains("Cocok dengan data CRM."));
    b.shot("job-committed-1280").await;
    b.sign_out().await;

    // The submitter asks for a rollback (a reason is required).
    b.sign_in(&sub).await;
    b.goto(&job).await;
    b.decide("rollback", "Nomor WA salah format; batalkan.")
        .await;
    b.wait_text("h1 .badge", "Rollback pending").await;
    assert!(
        b.text("blockquote.reason")
            .await
            .contains("Nomor WA salah format")
    );
    b.shot("job-rollback-pending-1280").await;
    b.sign_out().await;

    // A second approver approves the rollback, with the keyboard only:
    // Enter opens the confirmation, then types the comment and confirms.
    b.sign_in(&apr2).await;
    b.goto(&job).await;
    const ENTER: &str = "\u{E007}";
    b.find("details.action-approve > summary")
        .await
        .send_keys(ENTER)
        .await
        .unwrap();
    b.find("#comment-approve")
        .await
        .send_keys("Setuju.")
        .await
        .unwrap();
    b.find("details.action-approve button[data-confirm-button]")
        .await
        .send_keys(ENTER)
        .await
        .unwrap();
    b.wait_text("h1 .badge", "Rolled back").await;
    assert_eq!(app.count(TABLE).await, 0);
    let api = app.job(&apr2, job.trim_start_matches("/jobs/")).await;
    assert_eq!(api["state"], "rolled_back");
    b.shot("job-rolled-back-1280").await;

    // The same pages at phone width.
    b.client.set_window_size(390, 844).await.unwrap();
    b.goto("/jobs").await;
    b.shot("jobs-list-390").await;
    b.goto(&failed_job).await;
    b.shot("job-failed-390").await;
    b.goto("/upload").await;
    b.shot("upload-390").await;
    b.close().await;
}

/// Marks the page, makes a move through the API (`moved`), and waits for
/// `css` to show `wanted`: on the same page (a reload would lose the mark)
/// and well inside the 30 s poll that stands in when the event stream fails.
async fn follows_live(b: &Browser, css: &str, wanted: &str, moved: impl Future<Output = ()>) {
    b.client
        .execute("window.__stayed = true;", vec![])
        .await
        .unwrap();
    let started = std::time::Instant::now();
    moved.await;
    b.wait_text(css, wanted).await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "{took:?}");
    let stayed = b
        .client
        .execute("return window.__stayed === true;", vec![])
        .await
        .unwrap();
    assert_eq!(stayed, Value::Bool(true), "updated in place, not reloaded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_the_job_list_and_page_follow_the_event_stream() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let apr = app.approver().await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap().to_string();
    let b = Browser::start(&app.base, 1280, 900).await;
    b.sign_in(&sub).await;
    let row = format!("tr[data-job-id='{id}'] .badge");
    b.wait_text(&row, "Awaiting approval").await;
    follows_live(&b, &row, "Committed", async {
        app.act_ok(&apr, &id, "approve").await;
    })
    .await;

    // The job page of a job at the gate: another person rejects it; the
    // page says so without a reload (and without losing what is typed).
    let other = app
        .upload(
            &sub,
            "customers",
            "",
            "customer_name,wa_number,city,grade,consumable_cycle_days\nEka Putri,0811000009,Medan,A,30\n",
        )
        .await;
    assert_eq!(other["state"], "awaiting_approval");
    let other_id = other["id"].as_str().unwrap().to_string();
    b.goto(&format!("/jobs/{other_id}")).await;
    b.find("#job-live[data-work='false']").await;
    assert!(!b.find("#job-changed").await.is_displayed().await.unwrap());
    follows_live(&b, "#job-changed", "Rejected", async {
        let resp = app.act(&apr, &other_id, "reject", Some("wrong file")).await;
        assert_eq!(resp.status(), reqwest::StatusCode::ACCEPTED);
    })
    .await;
    b.shot("job-changed").await;
    b.click("#job-changed a").await;
    b.wait_text("h1 .badge", "Rejected").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_a_newcomer_clicks_through_every_state_of_the_demo() {
    let demo = crate::demo::start_demo().await;
    let [_, apr, admin] = demo.keys.clone();
    let b = Browser::start(&demo.base, 1280, 900).await;
    b.sign_in(&apr).await;
    assert!(
        b.text(".sim-banner")
            .await
            .contains("Simulation — nothing is written")
    );
    b.shot("demo-jobs-1280").await;
    // Every job of the list opens, with its state, and every state is there.
    let links = b
        .client
        .find_all(Locator::Css("table.jobs th a"))
        .await
        .unwrap();
    let mut paths = Vec::new();
    for l in &links {
        paths.push(l.attr("href").await.unwrap().unwrap());
    }
    let mut seen = std::collections::BTreeSet::new();
    for path in &paths {
        b.goto(path).await;
        let state = b
            .find("h1 .badge")
            .await
            .attr("data-state")
            .await
            .unwrap()
            .unwrap();
        assert!(b.text(".sim-banner").await.contains("nothing is written"));
        let shot = match state.as_str() {
            "awaiting_approval" if seen.contains("awaiting_approval") => None,
            s => Some(format!("demo-job-{s}-1280")),
        };
        if seen.insert(state.clone())
            && let Some(name) = shot
        {
            b.shot(&name).await;
        }
    }
    for state in [
        "validating",
        "invalid",
        "failed",
        "awaiting_approval",
        "committed",
        "rejected",
        "cancelled",
        "expired",
        "rollback_pending",
        "rolled_back",
    ] {
        assert!(seen.contains(state), "no {state} page: {seen:?}");
    }
    // The update the approver decided shows before -> after.
    b.goto("/jobs?module=customers&state=committed").await;
    b.click("table.jobs th a").await;
    b.click("nav.tabs a[href*='action=update']").await;
    b.find("td.cell-changed del").await;
    b.shot("demo-job-update-1280").await;
    // The big job pages.
    b.goto("/jobs?module=products&state=awaiting_approval")
        .await;
    b.click("table.jobs th a").await;
    b.click("a[rel=next]").await;
    b.wait_text(".pager .range", "Rows 51–100").await;
    b.client.set_window_size(390, 844).await.unwrap();
    b.goto("/jobs").await;
    b.shot("demo-jobs-390").await;
    b.sign_out().await;
    b.client.set_window_size(1280, 900).await.unwrap();
    b.sign_in(&admin).await;
    b.goto("/keys").await;
    b.shot("demo-keys-1280").await;
    b.goto("/developers").await;
    b.shot("demo-developers-1280").await;
    b.client.set_window_size(390, 844).await.unwrap();
    b.shot("demo-developers-390").await;
    b.close().await;
}

/// Fills and sends the developer center's "collect your key" form.
async fn claim(b: &Browser, request_id: &str, token: &str) {
    b.type_into("#c-id", request_id).await;
    b.type_into("#c-token", token).await;
    b.click("#claim button[type=submit]").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_staff_request_a_key_an_admin_approves_and_they_collect_it() {
    let app = spawn_app().await;
    let b = Browser::start(&app.base, 1280, 900).await;

    // Staff without a key ask for one in the developer center.
    b.goto("/developers").await;
    b.type_into("#r-name", "Rina Kusuma").await;
    b.type_into("#r-email", "rina@contoh.co.id").await;
    b.find("#r-role")
        .await
        .select_by_value("approver")
        .await
        .unwrap();
    b.type_into("#r-modules", "customers, orders").await;
    b.type_into("#r-reason", "Menyetujui impor pelanggan cabang Bandung")
        .await;
    b.click("#request button[type=submit]").await;
    let request_id = b.value("#req-id").await;
    let token = b.value("#req-token").await;
    assert!(request_id.starts_with("kr_"));
    b.click("button[data-copy='#req-token']").await;
    b.wait_text("button[data-copy='#req-token']", "Copied")
        .await;
    b.shot("developers-requested-1280").await;
    // Collecting before a decision says to wait.
    claim(&b, &request_id, &token).await;
    b.wait_text(".alert-info", "waits for an admin").await;

    // The admin approves it in the console, and makes a key for a system.
    b.sign_in(&app.admin).await;
    b.goto("/keys").await;
    let requests = b.text("section[aria-labelledby=requests-title]").await;
    // Key management shows the admin whom the key goes to (API.md
    // section 1), beside the masked name shown everywhere else.
    assert!(
        requests.contains("Ri***a") && requests.contains("Rina Kusuma"),
        "{requests}"
    );
    b.click("details.action > summary.btn-primary").await;
    b.click(&format!(
        "form[action='/keys/requests/{request_id}/approve'] button"
    ))
    .await;
    b.wait_text("section[aria-labelledby=requests-title]", "0 pending")
        .await;
    b.type_into("#k-name", "Sistem Kasir Bandung").await;
    b.click("form.grid-form button[type=submit]").await;
    let made = b.value("#new-key").await;
    assert!(made.starts_with("igk_"));
    b.shot("keys-new-key-1280").await;
    assert_eq!(
        app.get(&made, "/api/jobs").await.status(),
        reqwest::StatusCode::OK
    );
    b.sign_out().await;

    // The requester collects the key once and signs in with it.
    b.goto("/developers").await;
    claim(&b, &request_id, &token).await;
    let key = b.value("#new-key").await;
    assert!(key.starts_with("igk_"));
    b.shot("developers-collected-1280").await;
    let rows = app
        .sql("SELECT role, modules FROM ig_keys WHERE name = 'Rina Kusuma'")
        .await;
    assert_eq!(rows[0][0].as_deref(), Some("approver"));
    assert_eq!(rows[0][1].as_deref(), Some("[\"customers\",\"orders\"]"));
    b.sign_in(&key).await;
    assert!(b.text(".who").await.contains("Ri***a · approver"));
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_the_approver_sees_orders_that_name_unknown_products() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let apr = app.approver().await;
    let orders = "order_no,customer_id,sku,qty,amount_idr,order_date\n\
SO-1,C-1,P-404,2,170000,2024-05-01\n";
    let job = app.upload(&sub, "orders", "", orders).await;
    let id = job["id"].as_str().unwrap().to_string();
    let b = Browser::start(&app.base, 1280, 900).await;
    b.sign_in(&apr).await;
    b.goto(&format!("/jobs/{id}")).await;
    b.wait_text(".stat-warn", "1").await;
    b.wait_text(
        ".alert-warn",
        "1 row names a sku value that is not in products",
    )
    .await;
    b.click("nav.tabs a[href*='warnings=only']").await;
    b.wait_text("td.cell-warn", "sku P-404 is not in products")
        .await;
    b.shot("references-warned-row").await;
    b.close().await;
}

/// Many customers, so that counts show their grouping.
fn many_customers(n: usize) -> String {
    let mut csv = String::from("customer_name,wa_number,city,grade,consumable_cycle_days\n");
    for i in 0..n {
        csv.push_str(&format!("Pelanggan {i},0812{i:07},Jakarta,A,30\n"));
    }
    csv
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_an_indonesian_team_uploads_and_approves_in_their_language() {
    let app = spawn_app().await;
    let sub = app.key("Budi Santoso", "submitter", &["*"]).await.0;
    let apr = app.key("Siti Rahayu", "approver", &["*"]).await.0;
    let files = tempfile::tempdir().unwrap();
    // A browser set to Indonesian: every page answers in it at once.
    let b = Browser::start_in(&app.base, 1280, 900, "id-ID,id,en-US;q=0.5").await;
    b.goto("/signin").await;
    let lang = b
        .client
        .execute("return document.documentElement.lang;", vec![])
        .await
        .unwrap();
    assert_eq!(lang, "id");
    b.sign_in(&sub).await;
    assert!(b.text("nav[aria-label]").await.contains("Unggah"));

    // A file with wrong cells: the errors in words, from their codes.
    b.goto("/upload").await;
    b.find("#module")
        .await
        .select_by_value("customers")
        .await
        .unwrap();
    let bad = file(files.path(), "pelanggan.csv", BAD_CUSTOMERS);
    b.find("#file").await.send_keys(&bad).await.unwrap();
    b.click("#upload-button").await;
    b.wait_text("h1 .badge", "Gagal").await;
    let cells = b.text("table.preview").await;
    assert!(cells.contains("wa_number wajib diisi"), "{cells}");
    assert!(cells.contains("tiga puluh bukan bilangan bulat"), "{cells}");
    assert!(
        b.text("#problem-title")
            .await
            .contains("Ada baris dengan kesalahan")
    );
    b.shot("id-job-failed-1280").await;

    // 1,200 good rows: counts grouped the Indonesian way.
    b.goto("/upload").await;
    let good = file(files.path(), "pelanggan-1200.csv", &many_customers(1200));
    b.find("#file").await.send_keys(&good).await.unwrap();
    b.click("#upload-button").await;
    b.wait_text("h1 .badge", "Menunggu persetujuan").await;
    let job = b.path().await;
    assert!(b.text("dl.stats").await.contains("1.200"));
    b.sign_out().await;

    // The approver reads the confirmation in Indonesian and approves.
    b.sign_in(&apr).await;
    b.goto(&job).await;
    b.click("details.action-approve > summary").await;
    let confirm = b.text("details.action-approve form p").await;
    assert!(
        confirm.contains("Setujui penulisan berkas ini ke uc_scrm_customers: 1.200 baris baru"),
        "{confirm}"
    );
    b.shot("id-job-approve-confirm-1280").await;
    b.type_into("#comment-approve", "Cocok dengan data CRM.")
        .await;
    b.click("details.action-approve button[data-confirm-button]")
        .await;
    b.wait_text("h1 .badge", "Tertulis").await;
    assert!(b.text("#timeline").await.contains("Disetujui"));
    assert_eq!(app.count(TABLE).await, 1200);
    b.shot("id-job-committed-1280").await;

    // The switch in the top bar: English on the same page, and remembered.
    b.click("button.lang-option[data-lang='en']").await;
    b.wait_text("h1 .badge", "Committed").await;
    assert_eq!(b.path().await, job);
    assert!(b.text("dl.stats").await.contains("1,200"));
    b.goto("/jobs").await;
    assert!(b.text("form.filters").await.contains("All modules"));
    b.click("button.lang-option[data-lang='id']").await;
    b.wait_text("form.filters", "Semua modul").await;
    b.close().await;
}

/// A CRM export: its headers are not the module's ("No. WA", "Kota"), one
/// row has no WhatsApp number, another repeats one.
const CRM_EXPORT: &str = "Nama Pelanggan,No. WA,Kota,Catatan\n\
Budi Santoso,081234567801,Bandung,pelanggan lama\n\
Siti Rahayu,,Surabaya,\n\
Dewi Lestari,081234567803,Medan,minta katalog\n\
Budi Kedua,081234567801,Bogor,\n";

/// Revisions in the console: a file that does not fit is fixed on its Fix
/// page (the columns mapped from the suggestions, a wrong cell corrected
/// inline, a row left out), and the approver sees what the revisions
/// changed before approving; the person who revised may not approve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_a_crm_export_is_mapped_fixed_and_approved_from_the_fix_page() {
    let app = spawn_app().await;
    let sub = app.key("Budi Santoso", "submitter", &["*"]).await.0;
    let reviser = app.key("Rina Kusuma", "approver", &["*"]).await.0;
    let apr = app.key("Siti Rahayu", "approver", &["*"]).await.0;
    let job = app.upload(&sub, "customers", "", CRM_EXPORT).await;
    assert_eq!(job["problem"]["code"], "missing_columns", "{job}");
    let id = job["id"].as_str().unwrap().to_string();
    let b = Browser::start(&app.base, 1280, 900).await;

    // The mapping screen: every header has its best column preselected,
    // with why and the file's values.
    b.sign_in(&reviser).await;
    b.goto(&format!("/jobs/{id}")).await;
    b.click("#fix-button").await;
    b.wait_path(&format!("/jobs/{id}/fix")).await;
    assert_eq!(b.value("#map-1").await, "customer_name");
    assert_eq!(b.value("#map-2").await, "wa_number");
    assert_eq!(b.value("#map-3").await, "city");
    assert!(b.text("#map-2-why").await.contains("wa_number"));
    assert!(b.text("#fix-mapping").await.contains("081234567801"));
    b.shot("fix-mapping-1280").await;
    b.click("#fix-revalidate").await;
    b.wait_text("h1 .badge", "Failed").await;
    let first = b.path().await;
    assert_ne!(first, format!("/jobs/{id}"));
    assert!(b.text("#revision").await.contains("No. WA"));

    // The wrong cells, inline: the missing number typed in, the repeated
    // one left out.
    b.click("#fix-button").await;
    b.wait_path(&format!("{first}/fix")).await;
    assert_eq!(b.value("#cell-3-wa_number").await, "");
    assert!(b.text("#fix-row-3").await.contains("wa_number"));
    b.type_into("#cell-3-wa_number", "081234567802").await;
    b.click("#exclude-5").await;
    b.type_into("#fix-comment", "Nomor Siti dari CRM; Budi Kedua dobel.")
        .await;
    b.shot("fix-rows-1280").await;
    b.client.set_window_size(390, 844).await.unwrap();
    b.shot("fix-rows-390").await;
    b.client.set_window_size(1280, 900).await.unwrap();
    b.click("#fix-revalidate").await;
    b.wait_text("h1 .badge", "Awaiting approval").await;
    let second = b.path().await;
    assert_ne!(second, first);
    // Four-eyes: whoever revised does not approve.
    assert_eq!(b.count("details.action-approve").await, 0);
    assert!(b.text("section.actions").await.contains("four-eyes"));
    b.sign_out().await;

    // The approver reads what the revisions changed, and approves.
    b.sign_in(&apr).await;
    b.goto(&second).await;
    let panel = b.text("#revision").await;
    assert!(panel.contains("Revision 2 of"), "{panel}");
    // (Read without the words only screen readers get.)
    let read = |text: String| {
        let words = ["\ngoes to\n", "was\n", "\n, becomes\n", "\n"];
        words.iter().fold(text, |t, w| t.replace(w, " "))
    };
    let mapping = read(b.text("#revision-mapping").await);
    assert!(
        mapping.contains("No. WA → wa_number") && mapping.contains("Kota → city"),
        "{mapping}"
    );
    let fixes = read(b.text("#revision-fixes").await);
    assert!(
        fixes.contains("Row 3 · wa_number:") && fixes.contains("empty → 081234567802"),
        "{fixes}"
    );
    assert!(b.text("#revision-excluded").await.contains('5'));
    // Both revisions are Rina's: the heading names her, and no line of
    // earlier revisers repeats it.
    assert!(b.text("#revision-title").await.contains("Ri***a"));
    assert_eq!(b.count("#revision-revisers").await, 0);
    assert!(
        b.text("#revision-comment")
            .await
            .contains("Budi Kedua dobel")
    );
    assert!(b.text("td.cell-fixed").await.contains("081234567802"));
    b.shot("revision-approver-1280").await;
    b.click("nav.tabs a[href*='action=excluded']").await;
    b.wait_text("table.preview", "Budi Kedua").await;
    b.goto(&second).await;
    b.decide("approve", "").await;
    b.wait_text("h1 .badge", "Committed").await;
    let rows = app
        .sql(&format!(
            "SELECT customer_name, wa_number, city FROM {TABLE} ORDER BY wa_number"
        ))
        .await;
    let names: Vec<_> = rows.iter().map(|r| r[0].clone().unwrap()).collect();
    assert_eq!(names, ["Budi Santoso", "Siti Rahayu", "Dewi Lestari"]);
    assert_eq!(rows[1][1].as_deref(), Some("081234567802"));
    assert_eq!(rows[1][2].as_deref(), Some("Surabaya"));
    b.close().await;
}

/// The Fix page's spreadsheet way: the failing rows are offered to
/// download, the corrected file is chosen in the browser's file input
/// and sent back, and the revision shows the fixed cell as was → now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_the_corrected_failing_rows_go_back_from_the_fix_page() {
    let app = spawn_app().await;
    let sub = app.key("Budi Santoso", "submitter", &["*"]).await.0;
    let csv = "customer_name,wa_number,city,consumable_cycle_days\n\
        Budi Santoso,081234567801,Bandung,30\n\
        Siti Rahayu,081234567802,Surabaya,tiga puluh\n\
        Dewi Lestari,081234567803,Medan,sebulan\n";
    let job = app.upload(&sub, "customers", "", csv).await;
    assert_eq!(job["state"], "failed", "{job}");
    let id = job["id"].as_str().unwrap().to_string();
    let rows = app.errored_rows_csv(&sub, &id).await;
    let dir = tempfile::tempdir().unwrap();
    let corrected = dir.path().join("errored-rows.csv");
    std::fs::write(
        &corrected,
        rows.replace("tiga puluh", "30").replace("sebulan", "31"),
    )
    .unwrap();

    let b = Browser::start(&app.base, 1280, 900).await;
    b.sign_in(&sub).await;
    b.goto(&format!("/jobs/{id}/fix")).await;
    let link = b.find("#fix-download-xlsx").await;
    let href = link.attr("href").await.unwrap().unwrap_or_default();
    assert_eq!(href, format!("/jobs/{id}/fix/rows?format=xlsx"));
    b.find("#fix-file-input")
        .await
        .send_keys(corrected.to_str().unwrap())
        .await
        .unwrap();
    b.type_into("#fix-file-comment", "diperbaiki di Excel")
        .await;
    b.shot("fix-file-1280").await;
    b.click("#fix-file-send").await;
    b.wait_text("h1 .badge", "Awaiting approval").await;
    assert_ne!(b.path().await, format!("/jobs/{id}"));
    let revision = b.text("#revision").await;
    assert!(revision.contains("tiga puluh"), "{revision}");
    assert!(revision.contains("sebulan"), "{revision}");
    assert!(revision.contains("diperbaiki di Excel"), "{revision}");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_an_admin_proposes_rules_and_an_approver_approves_them() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let csv = "customer_name,wa_number,city\n\
        Andi Wijaya,0812-3456-7890,Jakarta\n\
        Citra Lestari,bukan nomor,Surabaya\n";
    let job = app.upload(&sub, "customers", "", csv).await;
    let job_id = job["id"].as_str().unwrap().to_string();
    let b = Browser::start(&app.base, 1280, 900).await;

    // The admin finds the module's rules from the navigation and proposes
    // a normalizer for WhatsApp numbers.
    b.sign_in(&app.admin).await;
    b.click("nav a[href='/rules']").await;
    b.click("a[href='/modules/customers/rules']").await;
    b.wait_text("h1", "Rules of customers").await;
    assert_eq!(b.value("#rules-json").await, "[]");
    let rules = r#"[{"id": "wa", "column": "wa_number", "normalize": "phone_id"}]"#;
    b.type_into("#rules-json", rules).await;
    b.type_into("#rules-comment", "WA numbers as E.164").await;
    b.click("#propose button[type=submit]").await;
    b.wait_path("/rule-proposals/rpr_").await;
    let id = b
        .path()
        .await
        .trim_start_matches("/rule-proposals/")
        .to_string();
    b.wait_text("#diff-added", "phone_id").await;
    assert!(
        b.text(".actions")
            .await
            .contains("another approver decides it")
    );
    b.shot("rules-proposed-1280").await;
    b.sign_out().await;

    // The approver sees it waiting from the job list, reads it, approves.
    b.sign_in(&apr).await;
    b.wait_text("#rules-waiting", "1 rule proposal awaits a decision")
        .await;
    b.click("#rules-waiting a").await;
    b.click(&format!("a[href='/rule-proposals/{id}']")).await;
    // Before deciding, tries it on the submitter's recent upload.
    assert_eq!(b.value("#try-job").await, job_id);
    b.click("#try-button").await;
    b.wait_text("#try-result", "Newly failing").await;
    let tried = b.text("#try-result").await;
    assert!(
        tried.contains("0812-3456-7890") && tried.contains("+6281234567890"),
        "{tried}"
    );
    assert!(b.text("#try-failing").await.contains("phone"));
    b.shot("rules-tried-1280").await;
    b.type_into("#comment-approve", "checked with the CRM export")
        .await;
    b.click("form.action-approve button[type=submit]").await;
    b.wait_text(".alert-ok", "these rules are in force now")
        .await;
    b.click(".crumbs a[href='/modules/customers/rules']").await;
    b.wait_text("#set-title", "Version 2, in force").await;
    let set = b.text("table.rules").await;
    assert!(
        set.contains("wa_number") && set.contains("phone_id"),
        "{set}"
    );
    assert!(b.text(".rule-history").await.contains("version 1"));
    b.shot("rules-approved-1280").await;
    let api = app
        .get_json(&app.admin, "/api/modules/customers/rules")
        .await;
    assert_eq!(api["version"], 2);
    assert!(api["approved_by"]["display"].as_str().is_some(), "{api}");
    b.close().await;
}

/// The data page: the Data tab, a module's row count, the export form
/// filtered by a column, and the file the browser downloads holding the
/// rows the filter selects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_the_data_page_exports_the_rows_a_filter_selects() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap().to_string();
    assert_eq!(app.act_ok(&apr, &id, "approve").await["state"], "committed");

    let b = Browser::start(&app.base, 1280, 900).await;
    b.sign_in(&sub).await;
    b.click("nav a[href='/modules']").await;
    b.wait_path("/modules").await;
    b.click("a[href='/modules/customers']").await;
    b.wait_text("#row-count", "3 rows").await;
    assert!(b.text("table.imports").await.contains(&id[id.len() - 10..]));
    b.type_into("#x-city", "Bandung").await;
    b.shot("data-1280").await;
    b.click("form.export button[type=submit]").await;
    let csv = b.downloaded("customers-export.csv").await;
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(lines[1].starts_with("Budi Hartono,"), "{csv}");
    b.close().await;
}

/// A preview wider than the window scrolls inside its frame, the page
/// never sideways, with the row number and the action pinned at the
/// frame's left; the page keeps only the language in use marked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_a_wide_preview_scrolls_in_its_frame_with_row_and_action_pinned() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let apr = app.approver().await;
    let orders = "order_no,customer_id,sku,qty,amount_idr,order_date,status,payment_method\n\
SO-10001,CUST-JAKARTA-SELATAN-000123,SKU-KAOS-POLOS-HITAM-XL,2,170000,2024-05-01,pending,transfer bank BCA virtual account\n\
SO-10002,CUST-BANDUNG-000456,SKU-MUG-KERAMIK-11OZ,1,85000,2024-05-02,paid,QRIS\n";
    let job = app.upload(&sub, "orders", "?on_error=skip", orders).await;
    let id = job["id"].as_str().unwrap().to_string();
    for (width, height) in [(1366, 900), (390, 844)] {
        let b = Browser::start(&app.base, width, height).await;
        b.sign_in(&apr).await;
        b.goto(&format!("/jobs/{id}")).await;
        b.wait_text("#preview", "payment_method").await;
        let read = r#"
            const frame = document.querySelector('#preview .table-wrap');
            frame.scrollLeft = frame.scrollWidth;
            const left = frame.getBoundingClientRect().left;
            const row = document.querySelector('#preview tbody .pin-row').getBoundingClientRect();
            const action = document.querySelector('#preview tbody .pin-action').getBoundingClientRect();
            return [document.documentElement.scrollWidth, window.innerWidth,
                    frame.scrollLeft, row.left - left, action.left - row.right];
        "#;
        let got: Value = b.client.execute(read, vec![]).await.unwrap();
        let n = |i: usize| got[i].as_f64().unwrap();
        assert!(n(0) <= n(1), "{width} px: the page scrolls sideways: {got}");
        if width < 1000 {
            assert!(n(2) > 0.0, "{width} px: the frame did not scroll: {got}");
        }
        assert!(n(3).abs() < 3.0, "{width} px: the row number moved: {got}");
        assert!(
            n(4).abs() < 3.0,
            "{width} px: the action left the row number: {got}"
        );
        assert_eq!(b.count(".lang-switch .lang-current").await, 1);
        assert_eq!(b.text(".lang-switch .lang-current").await, "EN");
        b.shot(&format!("preview-wide-{width}")).await;
        b.close().await;
    }
}

/// Every console page at a laptop's 1366×900 and a phone's 390×844, in
/// English and in Bahasa Indonesia: none scrolls sideways, and each is
/// kept as a screenshot (`tests/output/page-…`) to look at.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_every_page_fits_a_laptop_and_a_phone_in_both_languages() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let bad = "customer_name,wa_number,consumable_cycle_days\nAndi,0811000001,lots\n";
    let failed = app.upload(&sub, "customers", "", bad).await;
    let waiting = app
        .upload(&sub, "customers", "", crate::common::CUSTOMERS)
        .await;
    let (failed, waiting) = (
        failed["id"].as_str().unwrap(),
        waiting["id"].as_str().unwrap(),
    );
    let pages = [
        ("jobs", "/jobs".to_string()),
        ("job", format!("/jobs/{waiting}")),
        ("fix", format!("/jobs/{failed}/fix")),
        ("upload", "/upload".to_string()),
        ("data", "/modules".to_string()),
        ("data-module", "/modules/customers".to_string()),
        ("rules", "/rules".to_string()),
        ("rules-module", "/modules/customers/rules".to_string()),
        ("developers", "/developers".to_string()),
        ("keys", "/keys".to_string()),
        ("webhooks", "/webhooks".to_string()),
    ];
    for (lang, languages) in [("en", "en-US,en"), ("id", "id-ID,id")] {
        let b = Browser::start_in(&app.base, 1366, 900, languages).await;
        for (width, height) in [(1366, 900), (390, 844)] {
            b.client.set_window_size(width, height).await.unwrap();
            b.goto("/signin").await;
            if width == 1366 {
                b.shot(&format!("page-signin-{lang}-{width}")).await;
                b.sign_in(&app.admin).await;
            }
            for (name, path) in &pages {
                b.goto(path).await;
                let wide: Value = b
                    .client
                    .execute(
                        "return [document.documentElement.scrollWidth, window.innerWidth];",
                        vec![],
                    )
                    .await
                    .unwrap();
                let shot = b.shot(&format!("page-{name}-{lang}-{width}")).await;
                assert!(
                    wide[0].as_f64() <= wide[1].as_f64(),
                    "{path} in {lang} at {width} px scrolls sideways ({wide}); see {}",
                    shot.display()
                );
            }
        }
        b.close().await;
    }
}

/// A workbook (API.md section 16) through the real browser: the upload
/// page takes it with no module chosen, its page shows a tab a part, and
/// one approval writes every part.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_a_workbook_is_uploaded_read_by_part_and_approved_once() {
    let app = spawn_app().await;
    let sub = app.key("Budi Santoso", "submitter", &["*"]).await.0;
    let apr = app.key("Siti Rahayu", "approver", &["*"]).await.0;
    let files = tempfile::tempdir().unwrap();
    let book = serde_json::json!({
        "products": [
            {"sku": "P-001", "product_name": "Kaos Polos Hitam", "price_idr": 85000},
            {"sku": "P-002", "product_name": "Mug Keramik", "price_idr": 45000}
        ],
        "Orders": [
            {"order_no": "SO-1", "customer_id": "C-1", "sku": "P-001", "qty": 2, "amount_idr": 170000, "order_date": "2024-05-01"}
        ],
        "catatan": []
    });
    let path = file(files.path(), "toko.json", &book.to_string());
    let b = Browser::start(&app.base, 1280, 900).await;
    b.sign_in(&sub).await;
    b.goto("/upload").await;
    b.find("#module").await.select_by_value("").await.unwrap();
    assert!(b.text("#workbook-info").await.contains("sheet"));
    b.find("#file").await.send_keys(&path).await.unwrap();
    b.click("#upload-button").await;
    b.wait_text("h1 .badge", "Awaiting approval").await;
    let job = b.path().await;
    assert_eq!(b.count("#parts a").await, 2);
    assert!(b.text("#parts a[aria-current]").await.contains("Products"));
    assert!(b.text("table.preview").await.contains("Mug Keramik"));
    assert!(
        b.text("#warnings, section.warnings, main")
            .await
            .contains("catatan")
    );
    b.click("#parts a[data-part=orders]").await;
    b.wait_text("#parts a[aria-current]", "Sales orders").await;
    assert!(b.text("table.preview").await.contains("SO-1"));
    b.shot("workbook-1280").await;
    b.sign_out().await;

    b.sign_in(&apr).await;
    b.goto(&job).await;
    assert_eq!(b.count("details.action-approve").await, 1, "one gate");
    b.decide("approve", "").await;
    b.wait_text("h1 .badge", "Committed").await;
    assert_eq!(app.count("uc_products").await, 2);
    assert_eq!(app.count("uc_sales_orders").await, 1);
    b.close().await;
}

/// Signs in from the sign-in page's button through the test provider's
/// login form, as `account`.
async fn sign_in_at_provider(b: &Browser, account: &str) {
    b.goto("/signin").await;
    assert_eq!(b.text("#oidc-sign-in").await, "Sign in with Test Workspace");
    b.click("#oidc-sign-in").await;
    b.type_into("#login", account).await;
    b.type_into("#password", "any").await;
    b.click("#submit").await;
    b.wait_path("/jobs").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_staff_sign_in_through_the_provider_and_a_second_person_approves() {
    let (app, _provider) = crate::oidc::with_provider(|_| {}).await;
    crate::oidc::key_with_email(&app, "Budi Santoso", "budi@example.co.id", "submitter").await;
    crate::oidc::key_with_email(&app, "Siti Rahayu", "siti@example.co.id", "submitter").await;
    let files = tempfile::tempdir().unwrap();
    let payments = "payment_no,order_no,amount_idr,paid_at,method,status\n\
                    PAY-1,SO-9,1000,2024-05-01 10:00,QRIS,verified\n";
    let path = file(files.path(), "pembayaran.csv", payments);

    let b = Browser::start(&app.base, 1280, 900).await;
    sign_in_at_provider(&b, "sub-budi").await;
    assert!(b.text(".who").await.contains("Bu***o"));
    b.goto("/upload").await;
    b.find("#module")
        .await
        .select_by_value("payments")
        .await
        .unwrap();
    b.find("#file").await.send_keys(&path).await.unwrap();
    b.click("#upload-button").await;
    b.wait_text("h1 .badge", "Awaiting approval").await;
    let job = b.path().await;
    assert_eq!(
        b.count("details.action-approve").await,
        0,
        "not his to approve"
    );
    b.sign_out().await;

    // Siti approves payments by her group at the provider.
    sign_in_at_provider(&b, "sub-siti").await;
    assert!(b.text(".who").await.contains("Si***u"));
    b.goto(&job).await;
    b.decide("approve", "sesuai mutasi rekening").await;
    b.wait_text("h1 .badge", "Committed").await;
    b.shot("oidc-approved-1280").await;
    assert_eq!(app.count("uc_payments").await, 1);
    b.close().await;
}
