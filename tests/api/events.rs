//! Events (API.md section 13): the feed, the live stream over HTTP and in
//! the console, resuming with `Last-Event-ID`, heartbeats, scoping, and
//! `importgate events tail`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use futures::StreamExt;
use importgate::client::events::{Message, Parser};
use reqwest::{Response, StatusCode};
use serde_json::Value;

use crate::common::*;
use crate::console::Console;

/// A server-sent event stream read as it arrives.
struct Stream {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    parser: Parser,
    ready: std::collections::VecDeque<Message>,
    /// Every byte received, to look for comments.
    raw: String,
}

impl Stream {
    fn new(resp: Response) -> Stream {
        assert_eq!(resp.status(), StatusCode::OK);
        let ct = resp.headers()["content-type"].to_str().unwrap().to_string();
        assert!(ct.starts_with("text/event-stream"), "{ct}");
        Stream {
            body: resp.bytes_stream().boxed(),
            parser: Parser::default(),
            ready: Default::default(),
            raw: String::new(),
        }
    }

    /// The next event, within 15 s; its id, type and payload.
    async fn next(&mut self) -> (String, String, Value) {
        let m = tokio::time::timeout(Duration::from_secs(15), self.message())
            .await
            .expect("an event within 15 s")
            .expect("the stream is open");
        let body: Value = serde_json::from_str(&m.data).expect("json data");
        let id = m.id.expect("id");
        let ty = m.event.expect("event");
        assert_eq!(body["id"], id.as_str());
        assert_eq!(body["type"], ty.as_str());
        (id, ty, body)
    }

    /// The next event about this subject (skipping the others).
    async fn next_about(&mut self, subject: &str) -> (String, String, Value) {
        loop {
            let e = self.next().await;
            if subject_of(&e.2) == subject {
                return e;
            }
        }
    }

    async fn message(&mut self) -> Option<Message> {
        loop {
            if let Some(m) = self.ready.pop_front() {
                return Some(m);
            }
            let chunk = self.body.next().await?.ok()?;
            self.raw.push_str(&String::from_utf8_lossy(&chunk));
            self.ready.extend(self.parser.push(&chunk));
        }
    }

    /// Reads for `d`; whether the stream was still open at the end.
    async fn read_for(&mut self, d: Duration) -> bool {
        let until = tokio::time::Instant::now() + d;
        loop {
            match tokio::time::timeout_at(until, self.message()).await {
                Err(_) => return true,
                Ok(None) => return false,
                Ok(Some(m)) => self.ready.push_back(m),
            }
        }
    }
}

fn subject_of(event: &Value) -> String {
    let d = &event["data"];
    for k in ["job", "key", "key_request"] {
        if let Some(id) = d[k]["id"].as_str() {
            return id.to_string();
        }
    }
    String::new()
}

async fn stream(app: &TestApp, key: &str, last_event_id: Option<&str>, query: &str) -> Stream {
    let mut req = app
        .client
        .get(app.url(&format!("/api/events/stream{query}")))
        .header("X-API-Key", key);
    if let Some(id) = last_event_id {
        req = req.header("Last-Event-ID", id);
    }
    Stream::new(req.send().await.expect("request"))
}

/// Every event the key sees, page by page with `limit`; checks that the
/// pages chain.
async fn whole_feed(app: &TestApp, key: &str, limit: usize) -> Vec<Value> {
    let mut all = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let q = match &after {
            Some(a) => format!("/api/events?limit={limit}&after={a}"),
            None => format!("/api/events?limit={limit}"),
        };
        let page = app.get_json(key, &q).await;
        let events = page["events"].as_array().unwrap().clone();
        assert!(events.len() <= limit);
        let next = page["next_after"].as_str().map(str::to_string);
        if events.is_empty() {
            return all;
        }
        let last = events.last().unwrap()["id"].as_str().unwrap();
        assert!(seq(next.as_deref().unwrap()) >= seq(last), "{page}");
        all.extend(events);
        after = next;
    }
}

fn seq(id: &str) -> i64 {
    id.strip_prefix("evt_").unwrap().parse().unwrap()
}

fn of_subject<'a>(events: &'a [Value], subject: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| subject_of(e) == subject).collect()
}

fn types(events: &[&Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_feed_shows_a_jobs_events_in_order_with_the_job_and_pages() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let appr = app.approver().await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    let job = app.act_ok(&appr, id, "approve").await;
    assert_eq!(job["state"], "committed");

    let all = whole_feed(&app, &app.admin, 1000).await;
    let ids: Vec<i64> = all.iter().map(|e| seq(e["id"].as_str().unwrap())).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "oldest first: {ids:?}");
    let mine = of_subject(&all, id);
    assert_eq!(
        types(&mine),
        [
            "job.created",
            "job.awaiting_approval",
            "job.approved",
            "job.committed"
        ]
    );
    for e in &mine {
        // The job as it is now, as GET /api/jobs/{id} shows it.
        assert_eq!(e["data"]["job"], job, "{e}");
        assert!(e["created_at"].as_str().unwrap().ends_with('Z'));
        assert_eq!(e["data"]["job"]["submitter"]["display"], "Bu***o");
    }
    // The admin's own key, and the two made for the test, as key events.
    let keys: Vec<&Value> = all.iter().filter(|e| e["type"] == "key.created").collect();
    assert_eq!(keys.len(), 3);
    let approver = keys
        .iter()
        .find(|e| e["data"]["key"]["role"] == "approver")
        .unwrap();
    assert_eq!(approver["data"]["key"]["person"]["display"], "Si***u");
    assert_eq!(approver["data"]["key"]["modules"], serde_json::json!(["*"]));
    assert!(approver["data"]["key"].get("name").is_none(), "masked");

    // Pages of 2 hold the same events.
    let paged = whole_feed(&app, &app.admin, 2).await;
    assert_eq!(paged, all);
    // After an event: exactly what follows it.
    let second = all[1]["id"].as_str().unwrap();
    let page = app
        .get_json(&app.admin, &format!("/api/events?after={second}&limit=3"))
        .await;
    assert_eq!(page["events"].as_array().unwrap()[..], all[2..5]);
    assert_eq!(page["next_after"], all[4]["id"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_feed_is_scoped_by_module_and_key_events_are_for_admins() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    let (orders, _) = app.key("Oki Order", "approver", &["orders"]).await;
    let (scoped_admin, _) = app.key("Ani Admin", "admin", &["customers"]).await;
    let (_, orders_key) = app.key("Rudi Orders", "submitter", &["orders"]).await;
    let (_, customers_key) = app.key("Dewi Cust", "submitter", &["customers"]).await;

    let seen = whole_feed(&app, &orders, 100).await;
    assert!(
        seen.is_empty(),
        "an orders key sees no customers job: {seen:?}"
    );

    let seen = whole_feed(&app, &sub, 100).await;
    assert_eq!(
        types(&of_subject(&seen, id)),
        ["job.created", "job.awaiting_approval"]
    );
    assert!(
        seen.iter().all(|e| e["data"]["job"].is_object()),
        "no key events for a submitter"
    );

    let seen = whole_feed(&app, &app.admin, 100).await;
    assert_eq!(of_subject(&seen, &orders_key).len(), 1);
    assert_eq!(of_subject(&seen, &customers_key).len(), 1);
    assert_eq!(of_subject(&seen, id).len(), 2);

    // An admin of customers: its jobs, and keys within its scope only.
    let seen = whole_feed(&app, &scoped_admin, 100).await;
    assert_eq!(of_subject(&seen, id).len(), 2);
    assert_eq!(of_subject(&seen, &customers_key).len(), 1);
    assert!(of_subject(&seen, &orders_key).is_empty());
    assert!(
        seen.iter()
            .filter(|e| e["data"]["key"].is_object())
            .all(|e| e["data"]["key"]["modules"] == serde_json::json!(["customers"])),
        "{seen:?}"
    );
    // A short page after scanning past what it may not see moves on.
    let page = app.get_json(&orders, "/api/events?limit=5").await;
    assert_eq!(page["events"], serde_json::json!([]));
    let head = app
        .sql("SELECT CAST(MAX(seq) AS TEXT) FROM ig_job_events")
        .await;
    assert_eq!(
        page["next_after"].as_str().unwrap(),
        format!("evt_{}", head[0][0].as_deref().unwrap())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_feed_parameters_are_problems_naming_the_parameter() {
    let app = spawn_app().await;
    for (query, parameter) in [
        ("?after=garbage", "after"),
        ("?after=evt_", "after"),
        ("?after=42", "after"),
        ("?limit=0", "limit"),
        ("?limit=100000", "limit"),
        ("?limit=ten", "limit"),
    ] {
        let resp = app.get(&app.admin, &format!("/api/events{query}")).await;
        let body = problem(resp, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter").await;
        assert_eq!(body["parameter"], parameter, "{query}: {body}");
    }
    let resp = app.get(&app.admin, "/api/events/stream?after=evt_x").await;
    let body = problem(resp, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter").await;
    assert_eq!(body["parameter"], "after");
    let resp = app
        .client
        .get(app.url("/api/events/stream"))
        .header("X-API-Key", &app.admin)
        .header("Last-Event-ID", "yesterday")
        .send()
        .await
        .unwrap();
    let body = problem(resp, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter").await;
    assert_eq!(body["parameter"], "Last-Event-ID");
    let resp = app
        .client
        .get(app.url("/api/events/stream"))
        .send()
        .await
        .unwrap();
    problem(resp, StatusCode::UNAUTHORIZED, "unauthorized").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_is_live_and_last_event_id_resumes_with_nothing_lost_or_twice() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let appr = app.approver().await;
    let mut live = stream(&app, &app.admin, None, "").await;

    // Live: an upload shows up as it happens.
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap().to_string();
    let (first, ty, body) = live.next().await;
    assert_eq!(
        ty, "job.created",
        "the stream starts with what happens after it opens"
    );
    assert_eq!(subject_of(&body), id);
    let (checked, ty, body) = live.next().await;
    assert_eq!(ty, "job.awaiting_approval");
    assert_eq!(body["data"]["job"]["state"], "awaiting_approval");
    assert_eq!(seq(&checked), seq(&first) + 1);
    drop(live);

    // While nobody listens: the commit, and a key.
    app.act_ok(&appr, &id, "approve").await;
    let (_, new_key) = app.key("Lina Late", "submitter", &["*"]).await;

    // Resuming after the last event received: exactly what followed.
    let mut resumed = stream(&app, &app.admin, Some(&checked), "?after=evt_1").await;
    let expected = app
        .get_json(&app.admin, &format!("/api/events?after={checked}"))
        .await["events"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(
        expected
            .iter()
            .map(|e| e["type"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["job.approved", "job.committed", "key.created"]
    );
    for want in &expected {
        let (eid, _, body) = resumed.next().await;
        assert_eq!(
            &body, want,
            "Last-Event-ID wins over after, nothing lost or twice"
        );
        assert_eq!(eid, want["id"].as_str().unwrap());
    }
    assert_eq!(subject_of(&expected[2]), new_key);
    // And then live again, a key revoked.
    let resp = app
        .client
        .delete(app.url(&format!("/api/keys/{new_key}")))
        .header("X-API-Key", &app.admin)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    let (eid, ty, body) = resumed.next_about(&new_key).await;
    assert_eq!(ty, "key.revoked");
    assert_eq!(seq(&eid), seq(expected[2]["id"].as_str().unwrap()) + 1);
    assert_eq!(body["data"]["key"]["person"]["display"], "Li***e");

    // `after` resumes the same way.
    let mut again = stream(&app, &app.admin, None, &format!("?after={checked}")).await;
    assert_eq!(again.next().await.2, expected[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_stream_gets_heartbeats_stays_open_and_ends_at_shutdown() {
    let app = spawn_app_with(|s| {
        s.events_heartbeat_ms = 200;
        // Idle connections close after a second: an open stream is not idle.
        s.connections.idle = Duration::from_secs(1);
    })
    .await;
    let sub = app.submitter().await;
    let mut quiet = stream(&app, &sub, None, "").await;
    assert!(
        quiet.read_for(Duration::from_millis(2500)).await,
        "still open"
    );
    let beats = quiet.raw.matches(":\n\n").count() + quiet.raw.matches(":\r\n").count();
    assert!(beats >= 5, "heartbeat comments: {:?}", quiet.raw);
    assert!(quiet.ready.is_empty(), "comments are not events");
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let (_, ty, _) = quiet.next_about(job["id"].as_str().unwrap()).await;
    assert_eq!(ty, "job.created");

    // At shutdown the stream ends (it does not hold the service up).
    let _ = app.app.shutdown.send(true);
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while quiet.message().await.is_some() {}
    })
    .await;
    assert!(ended.is_ok(), "the stream ended at shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_stream_needs_a_session_and_follows_the_signed_in_key() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let (orders, _) = app.key("Oki Order", "submitter", &["orders"]).await;

    let mut c = Console::new(&app);
    let resp = c.get("/console/events/stream").await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);

    let mut mine = Console::new(&app);
    mine.sign_in(&sub).await;
    let resp = mine.get("/console/events/stream").await;
    let csp = resp.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("connect-src 'self'"), "{csp}");
    let mut live = Stream::new(resp);
    let mut other = Console::new(&app);
    other.sign_in(&orders).await;
    let mut elsewhere = Stream::new(other.get("/console/events/stream").await);

    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    let (first, ty, body) = live.next().await;
    assert_eq!(
        (ty.as_str(), subject_of(&body).as_str()),
        ("job.created", id)
    );
    assert_eq!(live.next().await.1, "job.awaiting_approval");
    assert!(elsewhere.read_for(Duration::from_millis(1500)).await);
    assert!(
        elsewhere.ready.is_empty(),
        "an orders key sees no customers job"
    );

    let mut resumed = Stream::new(
        mine.get(&format!("/console/events/stream?after={first}"))
            .await,
    );
    assert_eq!(resumed.next().await.1, "job.awaiting_approval");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_tail_prints_a_line_per_event() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_importgate"))
        .args([
            "events",
            "tail",
            "--url",
            &app.base,
            "--after",
            "evt_0",
            "--types",
            "job.created,job.awaiting_approval,key.revoked",
        ])
        .env("IMPORTGATE_KEY", &app.admin)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(15), rx.recv())
            .await
            .expect("a line within 15 s")
            .expect("tail runs")
    };
    let created = next().await;
    assert!(
        created.contains("job.created") && created.contains(&id),
        "{created}"
    );
    assert!(created.contains("validating") || created.contains("awaiting_approval"));
    assert!(created.contains("Bu***o"), "{created}");
    let checked = next().await;
    assert!(checked.contains("job.awaiting_approval"), "{checked}");
    // Live, and filtered: key.created is not asked for, key.revoked is.
    let (_, key_id) = app.key("Tono Tail", "submitter", &["*"]).await;
    app.client
        .delete(app.url(&format!("/api/keys/{key_id}")))
        .header("X-API-Key", &app.admin)
        .send()
        .await
        .unwrap();
    let revoked = next().await;
    assert!(
        revoked.contains("key.revoked") && revoked.contains(&key_id) && revoked.contains("To***l"),
        "{revoked}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// Live streams are bounded (API.md section 10): 8 per key, and a total
/// (here 10) for the process; the ninth of one key, or one past the total,
/// is `429`, and a stream given back makes room at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_streams_are_capped_per_key_and_in_all() {
    let app = spawn_app_with(|s| s.limits.streams_total = 10).await;
    let open = |key: String| {
        app.client
            .get(app.url("/api/events/stream"))
            .header("X-API-Key", key)
            .send()
    };
    let mut held = Vec::new();
    for _ in 0..8 {
        let resp = open(app.admin.clone()).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        held.push(resp);
    }
    let ninth = open(app.admin.clone()).await.unwrap();
    assert!(ninth.headers().contains_key("retry-after"));
    problem(ninth, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;

    let other = app.approver().await;
    for _ in 0..2 {
        let resp = open(other.clone()).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        held.push(resp);
    }
    let past_total = open(other.clone()).await.unwrap();
    problem(past_total, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;

    drop(held.pop());
    let mut again = None;
    for _ in 0..100 {
        let resp = open(other.clone()).await.unwrap();
        if resp.status() == StatusCode::OK {
            again = Some(resp);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(again.is_some(), "a stream given back makes room");
}

/// Every live stream is woken by every move, and reads nothing of its own:
/// one read of the ledger serves them all, each shown only what its key
/// may see (a stream per key reads as the feed does).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_streams_share_one_read_of_the_ledger_and_keep_their_scope() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let (orders, _) = app.key("Oki Order", "approver", &["orders"]).await;
    let mut everyone = Vec::new();
    let mut of_orders = Vec::new();
    for _ in 0..8 {
        everyone.push(stream(&app, &app.admin, None, "").await);
        of_orders.push(stream(&app, &orders, None, "").await);
    }
    let before = app.app.tail.reads();
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    for s in &mut everyone {
        assert_eq!(s.next_about(id).await.1, "job.created");
        assert_eq!(s.next_about(id).await.1, "job.awaiting_approval");
    }
    let reads = app.app.tail.reads() - before;
    // Sixteen streams and the upload's moves: a read per move and per
    // half poll interval while they waited, not one per stream and move
    // (32 and more).
    eprintln!("{reads} reads of the ledger served 16 streams");
    assert!(reads < 16, "{reads} reads of the ledger for 16 streams");
    for s in &mut of_orders {
        assert!(s.read_for(Duration::from_millis(300)).await);
        assert!(
            !s.raw.contains(id),
            "an orders key is shown no customers job"
        );
    }
}
