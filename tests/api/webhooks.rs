//! Webhooks (API.md section 13) with real parts: a receiver on a free port
//! records what arrives and answers as each test scripts it; signatures are
//! checked with the `standardwebhooks` crate, an implementation of the
//! specification independent of the service's.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;

/// What a receiver answers: a status, after a delay, with a body.
#[derive(Clone)]
pub struct Answer {
    pub status: u16,
    pub delay: Duration,
    pub body: String,
    pub location: Option<String>,
}

impl Answer {
    pub fn status(status: u16) -> Answer {
        Answer {
            status,
            delay: Duration::ZERO,
            body: String::new(),
            location: None,
        }
    }
}

#[derive(Default)]
pub struct Log {
    pub got: Mutex<Vec<(String, HeaderMap, String)>>,
    pub script: Mutex<VecDeque<Answer>>,
    pub usual: Mutex<Option<Answer>>,
    /// Deliveries being answered now, and the most there were at once.
    pub in_flight: AtomicUsize,
    pub most: AtomicUsize,
}

/// A receiver on a free port; its base URL and what it logs.
pub async fn receiver() -> (String, Arc<Log>) {
    let log = Arc::new(Log::default());
    async fn take(
        State(log): State<Arc<Log>>,
        uri: axum::http::Uri,
        headers: HeaderMap,
        body: String,
    ) -> axum::response::Response {
        log.got
            .lock()
            .unwrap()
            .push((uri.path().to_string(), headers, body));
        let now = log.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        log.most.fetch_max(now, Ordering::SeqCst);
        let scripted = log.script.lock().unwrap().pop_front();
        let a = scripted
            .or_else(|| log.usual.lock().unwrap().clone())
            .unwrap_or_else(|| Answer::status(200));
        tokio::time::sleep(a.delay).await;
        log.in_flight.fetch_sub(1, Ordering::SeqCst);
        let mut headers = HeaderMap::new();
        if let Some(l) = a.location {
            headers.insert("location", l.parse().unwrap());
        }
        (StatusCode::from_u16(a.status).unwrap(), headers, a.body).into_response()
    }
    let app = axum::Router::new()
        .fallback(axum::routing::any(take))
        .with_state(log.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, log)
}

impl Log {
    pub fn count(&self, path: &str) -> usize {
        self.got
            .lock()
            .unwrap()
            .iter()
            .filter(|g| g.0 == path)
            .count()
    }

    /// The bodies that arrived at `path`, as JSON, once there are `n`.
    pub async fn wait(&self, path: &str, n: usize) -> Vec<(HeaderMap, Value)> {
        for _ in 0..200 {
            if self.count(path) >= n {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let got = self.got.lock().unwrap();
        let at: Vec<_> = got
            .iter()
            .filter(|g| g.0 == path)
            .map(|g| (g.1.clone(), serde_json::from_str(&g.2).unwrap()))
            .collect();
        assert!(at.len() >= n, "{} of {n} deliveries arrived", at.len());
        at
    }
}

/// The service with webhooks to internal receivers allowed, and quick
/// retries.
async fn service() -> TestApp {
    spawn_app_with(|s| {
        s.webhooks.allow_private = true;
        s.webhooks.retry_base = Duration::from_millis(100);
        s.webhooks.timeout = Duration::from_secs(1);
    })
    .await
}

async fn hook(app: &TestApp, body: Value) -> (StatusCode, Value) {
    let resp = app
        .client
        .post(app.url("/api/webhooks"))
        .header("X-API-Key", &app.admin)
        .json(&body)
        .send()
        .await
        .unwrap();
    (resp.status(), resp.json().await.unwrap())
}

async fn made(app: &TestApp, body: Value) -> Value {
    let (status, w) = hook(app, body).await;
    assert_eq!(status, StatusCode::CREATED, "{w}");
    w
}

/// The deliveries of a webhook once `done(list)` holds.
async fn deliveries_when(app: &TestApp, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let path = format!("/api/webhooks/{id}/deliveries");
    for _ in 0..200 {
        let list = app.get_json(&app.admin, &path).await;
        if done(&list) {
            return list;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{}", app.get_json(&app.admin, &path).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_reach_a_receiver_signed_in_order_and_as_filtered() {
    let app = service().await;
    let (base, log) = receiver().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let all = made(&app, json!({"url": format!("{base}/all"), "events": ["*"]})).await;
    let secret = all["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("whsec_"), "{all}");
    made(
        &app,
        json!({"url": format!("{base}/orders"), "events": ["job.committed"], "modules": ["orders"]}),
    )
    .await;
    made(
        &app,
        json!({"url": format!("{base}/committed"), "events": ["job.committed"]}),
    )
    .await;

    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap().to_string();
    app.act_ok(&apr, &id, "approve").await;

    let got = log.wait("/all", 4).await;
    let types: Vec<&str> = got.iter().map(|g| g.1["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "job.created",
            "job.awaiting_approval",
            "job.approved",
            "job.committed"
        ]
    );
    // The payload is the feed's: the job as in API.md section 4, masked.
    let committed_job = &got[3].1["data"]["job"];
    assert_eq!(committed_job["id"], id.as_str(), "{}", got[3].1);
    assert_eq!(committed_job["module"], "customers");
    let shown = committed_job["submitter"]["display"].as_str().unwrap();
    assert!(shown.contains("***"), "{shown}");
    let verifier = standardwebhooks::Webhook::new(&secret).unwrap();
    let raw = log.got.lock().unwrap().clone();
    let mut ids = std::collections::HashSet::new();
    for (path, headers, body) in raw.iter().filter(|g| g.0 == "/all") {
        let mut h = HeaderMap::new();
        for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
            let v = headers
                .get(name)
                .unwrap_or_else(|| panic!("{name} on {path}"));
            h.insert(name, v.to_str().unwrap().parse().unwrap());
        }
        verifier
            .verify(body.as_bytes(), &h)
            .unwrap_or_else(|e| panic!("signature of {body}: {e:?}"));
        assert!(ids.insert(h["webhook-id"].to_str().unwrap().to_string()));
        let v: Value = serde_json::from_str(body).unwrap();
        assert!(v["id"].as_str().unwrap().starts_with("evt_"), "{v}");
    }
    // A tampered body does not verify.
    let (_, headers, body) = raw[0].clone();
    let mut h = HeaderMap::new();
    for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
        h.insert(name, headers[name].to_str().unwrap().parse().unwrap());
    }
    assert!(
        verifier
            .verify(body.replace("job", "jab").as_bytes(), &h)
            .is_err()
    );

    let committed = log.wait("/committed", 1).await;
    assert_eq!(committed[0].1["type"], "job.committed");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(log.count("/orders"), 0, "a customers job is not for orders");
    assert_eq!(log.count("/committed"), 1);

    // The delivery log, and a test ping.
    let list = deliveries_when(&app, all["id"].as_str().unwrap(), |l| {
        l["deliveries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["state"] == "delivered")
    })
    .await;
    let first = &list["deliveries"][0];
    assert_eq!(first["attempts"][0]["status"], 200, "{first}");
    assert!(first["attempts"][0]["latency_ms"].as_i64().is_some());
    let resp = app
        .client
        .post(app.url(&format!(
            "/api/webhooks/{}/test",
            all["id"].as_str().unwrap()
        )))
        .header("X-API-Key", &app.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let got = log.wait("/all", 5).await;
    assert_eq!(got[4].1["type"], "webhook.test");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_receiver_gets_the_same_message_again_until_it_answers() {
    let app = service().await;
    let (base, log) = receiver().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let w = made(
        &app,
        json!({"url": format!("{base}/flaky"), "events": ["job.committed"]}),
    )
    .await;
    log.script
        .lock()
        .unwrap()
        .extend([Answer::status(500), Answer::status(503)]);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    app.act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    let got = log.wait("/flaky", 3).await;
    let ids: Vec<&str> = got
        .iter()
        .map(|g| g.0["webhook-id"].to_str().unwrap())
        .collect();
    assert!(
        ids.iter().all(|i| *i == ids[0]),
        "one message, tried three times: {ids:?}"
    );
    assert!(
        got.iter().all(|g| g.1 == got[0].1),
        "the same body each time"
    );
    let list = deliveries_when(&app, w["id"].as_str().unwrap(), |l| {
        l["deliveries"][0]["state"] == "delivered"
    })
    .await;
    let statuses: Vec<i64> = list["deliveries"][0]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].as_i64().unwrap())
        .collect();
    assert_eq!(statuses, [500, 503, 200]);
    assert!(
        list["deliveries"][0]["attempts"][0]["error"]
            .as_str()
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_failing_for_the_whole_window_is_disabled_and_a_person_retries() {
    let app = spawn_app_with(|s| {
        s.webhooks.allow_private = true;
        s.webhooks.retry_base = Duration::from_millis(100);
        s.webhooks.retry_window = Duration::from_secs(2);
    })
    .await;
    let (base, log) = receiver().await;
    *log.usual.lock().unwrap() = Some(Answer::status(500));
    let w = made(
        &app,
        json!({"url": format!("{base}/down"), "events": ["job.created"]}),
    )
    .await;
    let id = w["id"].as_str().unwrap().to_string();
    let sub = app.submitter().await;
    app.upload(&sub, "customers", "", CUSTOMERS).await;
    let list = deliveries_when(&app, &id, |l| l["deliveries"][0]["state"] == "failed").await;
    assert!(list["deliveries"][0]["attempts"].as_array().unwrap().len() >= 2);
    let now = app
        .get_json(&app.admin, &format!("/api/webhooks/{id}"))
        .await;
    assert_eq!(now["enabled"], false, "{now}");
    assert!(
        now["disabled_reason"].as_str().unwrap().contains("500"),
        "{now}"
    );
    let delivery = list["deliveries"][0]["id"].as_str().unwrap().to_string();
    let retry = format!("/api/webhooks/{id}/deliveries/{delivery}/retry");
    let resp = app
        .client
        .post(app.url(&retry))
        .header("X-API-Key", &app.admin)
        .send()
        .await
        .unwrap();
    problem(resp, StatusCode::CONFLICT, "invalid_state").await;

    *log.usual.lock().unwrap() = Some(Answer::status(204));
    let resp = app
        .client
        .patch(app.url(&format!("/api/webhooks/{id}")))
        .header("X-API-Key", &app.admin)
        .json(&json!({"enabled": true}))
        .send()
        .await
        .unwrap();
    let enabled: Value = resp.json().await.unwrap();
    assert_eq!(enabled["enabled"], true);
    assert_eq!(enabled["disabled_reason"], Value::Null);
    let resp = app
        .client
        .post(app.url(&retry))
        .header("X-API-Key", &app.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    deliveries_when(&app, &id, |l| l["deliveries"][0]["state"] == "delivered").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_webhooks_are_refused_naming_the_member() {
    let app = spawn_app().await;
    let (base, _log) = receiver().await;
    for (body, member) in [
        (json!({"url": format!("{base}/x"), "events": ["*"]}), "url"),
        (
            json!({"url": "http://169.254.169.254/latest/meta-data", "events": ["*"]}),
            "url",
        ),
        (
            json!({"url": "ftp://example.com/x", "events": ["*"]}),
            "url",
        ),
        // IANA special-purpose addresses, IPv4 inside IPv6 among them.
        (
            json!({"url": "http://[::7f00:1]/x", "events": ["*"]}),
            "url",
        ),
        (
            json!({"url": "http://[64:ff9b::7f00:1]/x", "events": ["*"]}),
            "url",
        ),
        (
            json!({"url": "http://[2002:7f00:1::]/x", "events": ["*"]}),
            "url",
        ),
        (json!({"url": "http://[fec0::1]/x", "events": ["*"]}), "url"),
        (
            json!({"url": "http://198.18.0.1/x", "events": ["*"]}),
            "url",
        ),
        (json!({"url": "http://240.0.0.1/x", "events": ["*"]}), "url"),
        (json!({"url": "http://192.0.0.8/x", "events": ["*"]}), "url"),
        (json!({"url": "not a url", "events": ["*"]}), "url"),
        (
            json!({"url": "http://93.184.216.34/x", "events": ["job.nope"]}),
            "events",
        ),
        (
            json!({"url": "http://93.184.216.34/x", "events": []}),
            "events",
        ),
        (
            json!({"url": "http://93.184.216.34/x", "events": ["*"], "modules": ["nope"]}),
            "modules",
        ),
    ] {
        let (status, p) = hook(&app, body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {p}");
        assert_eq!(p["parameter"], member, "{body}: {p}");
    }
    let (status, p) = hook(&app, json!({"url": 1})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{p}");
    let sub = app.submitter().await;
    let resp = app
        .client
        .get(app.url("/api/webhooks"))
        .header("X-API-Key", &sub)
        .send()
        .await
        .unwrap();
    problem(resp, StatusCode::FORBIDDEN, "forbidden").await;
    let list = app.get_json(&app.admin, "/api/webhooks").await;
    assert_eq!(list["webhooks"], json!([]), "nothing made");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_not_followed_and_at_most_a_kib_of_an_answer_is_kept() {
    let app = service().await;
    let (base, log) = receiver().await;
    *log.usual.lock().unwrap() = Some(Answer {
        status: 302,
        delay: Duration::ZERO,
        body: String::new(),
        location: Some(format!("{base}/elsewhere")),
    });
    let w = made(
        &app,
        json!({"url": format!("{base}/moved"), "events": ["job.created"]}),
    )
    .await;
    let id = w["id"].as_str().unwrap().to_string();
    let sub = app.submitter().await;
    app.upload(&sub, "customers", "", CUSTOMERS).await;
    let list = deliveries_when(&app, &id, |l| {
        l["deliveries"][0]["attempts"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
    })
    .await;
    assert_eq!(list["deliveries"][0]["attempts"][0]["status"], 302);
    assert_eq!(log.count("/elsewhere"), 0, "the redirect was not followed");

    *log.usual.lock().unwrap() = Some(Answer {
        status: 200,
        delay: Duration::ZERO,
        body: "x".repeat(50_000),
        location: None,
    });
    let list = deliveries_when(&app, &id, |l| l["deliveries"][0]["state"] == "delivered").await;
    let attempts = list["deliveries"][0]["attempts"].as_array().unwrap();
    let answer = attempts.last().unwrap()["answer"].as_str().unwrap();
    assert_eq!(answer.len(), 1024);
}

/// A receiver that never answers costs its own deliveries a timeout each;
/// uploads and decisions go on at their pace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_receiver_does_not_slow_uploads_or_decisions() {
    let app = service().await;
    let (base, log) = receiver().await;
    *log.usual.lock().unwrap() = Some(Answer {
        status: 200,
        delay: Duration::from_secs(3600),
        body: String::new(),
        location: None,
    });
    made(
        &app,
        json!({"url": format!("{base}/dead"), "events": ["*"]}),
    )
    .await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let started = Instant::now();
    for _ in 0..5 {
        let job = app
            .upload(&sub, "customers", "?mode=upsert", CUSTOMERS)
            .await;
        let done = app
            .act_ok(&apr, job["id"].as_str().unwrap(), "approve")
            .await;
        assert_eq!(done["state"], "committed");
    }
    // Five uploads and approvals, each with deliveries timing out after
    // 1 s at the receiver: the gate did not wait for them.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(log.count("/dead") >= 1, "deliveries were being tried");
}

/// While the service answers many requests a second, deliveries yield to
/// them: a few in flight, however many are due (a saturated machine's CPU
/// goes to the clients waiting for an answer). Once the traffic falls, the
/// backlog goes out, every event once and each job's in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_yield_to_a_busy_service_and_catch_up_after() {
    let app = spawn_app_with(|s| {
        s.webhooks.allow_private = true;
        s.limits.requests_per_minute = 0;
        s.limits.uploads_per_minute = 0;
    })
    .await;
    let (base, log) = receiver().await;
    *log.usual.lock().unwrap() = Some(Answer {
        status: 200,
        delay: Duration::from_secs(2),
        body: String::new(),
        location: None,
    });
    made(
        &app,
        json!({"url": format!("{base}/slow"), "events": ["job.created", "job.awaiting_approval"]}),
    )
    .await;
    // Eight clients asking for the job list as fast as it answers.
    let stop = Arc::new(AtomicBool::new(false));
    let traffic: Vec<_> = (0..8)
        .map(|_| {
            let (client, url) = (app.client.clone(), app.url("/api/jobs?limit=1"));
            let (key, stop) = (app.admin.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    let _ = client.get(&url).header("X-API-Key", &key).send().await;
                }
            })
        })
        .collect();
    let started = Instant::now();
    while !app.app.traffic.busy() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the traffic never counted as busy"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Sixteen jobs at once: without yielding, sixteen deliveries would be
    // at the receiver together (one event at a time per job).
    let sub = app.submitter().await;
    let jobs =
        futures::future::join_all((0..16).map(|_| app.upload(&sub, "customers", "", CUSTOMERS)))
            .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(app.app.traffic.busy(), "busy all along");
    let most = log.most.load(Ordering::SeqCst);
    let busy_most = importgate::service::webhooks::BUSY_AT_ONCE as usize;
    assert!(
        (1..=busy_most).contains(&most),
        "{most} deliveries at once while the service was busy"
    );
    stop.store(true, Ordering::SeqCst);
    for t in traffic {
        t.await.unwrap();
    }
    let got = log.wait("/slow", 32).await;
    let mut seen: std::collections::HashMap<String, Vec<String>> = Default::default();
    for (_, body) in &got {
        seen.entry(body["data"]["job"]["id"].as_str().unwrap().to_string())
            .or_default()
            .push(body["type"].as_str().unwrap().to_string());
    }
    assert_eq!(seen.len(), 16);
    for job in &jobs {
        assert_eq!(
            seen[job["id"].as_str().unwrap()],
            ["job.created", "job.awaiting_approval"],
            "each event once, in order"
        );
    }
}

/// The console's Webhooks page: an admin registers an endpoint (the secret
/// shown once), sends a test, reads the delivery with its status and
/// latency, disables it; other roles do not get the page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_manage_webhooks_in_the_console() {
    use crate::console::{Console, csrf_of};
    let app = service().await;
    let (base, log) = receiver().await;
    let mut admin = Console::new(&app);
    admin.sign_in(&app.admin).await;
    let html = admin.page("/webhooks").await;
    let csrf = csrf_of(&html);
    let url = format!("{base}/console");
    let resp = admin
        .post(
            "/webhooks",
            &[
                ("_csrf", &csrf),
                ("url", &url),
                ("events", "job.committed, job.awaiting_approval"),
                ("modules", "*"),
                ("description", "ERP"),
            ],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let html = resp.text().await.unwrap();
    assert!(html.contains("whsec_"), "the secret, shown once");
    let list = app.get_json(&app.admin, "/api/webhooks").await;
    let id = list["webhooks"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(
        list["webhooks"][0]["events"],
        json!(["job.committed", "job.awaiting_approval"])
    );
    let html = admin.page("/webhooks").await;
    assert!(!html.contains("whsec_"), "shown once");
    assert!(html.contains(&url) && html.contains("ERP"));

    let resp = admin
        .post(&format!("/webhooks/{id}/test"), &[("_csrf", &csrf)])
        .await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    log.wait("/console", 1).await;
    deliveries_when(&app, &id, |l| l["deliveries"][0]["state"] == "delivered").await;
    let html = admin.page(&format!("/webhooks/{id}")).await;
    assert!(
        html.contains("webhook.test") && html.contains("delivered"),
        "{html}"
    );
    assert!(html.contains(" ms"), "latency shown");

    let resp = admin
        .post(&format!("/webhooks/{id}/disable"), &[("_csrf", &csrf)])
        .await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let now = app
        .get_json(&app.admin, &format!("/api/webhooks/{id}"))
        .await;
    assert_eq!(now["enabled"], false);

    let sub = app.submitter().await;
    let mut submitter = Console::new(&app);
    submitter.sign_in(&sub).await;
    assert_eq!(
        submitter.get("/webhooks").await.status(),
        StatusCode::FORBIDDEN
    );
}

/// Rule proposals and decisions reach a receiver subscribed to them, for
/// the module it names (API.md section 14).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_changes_reach_a_receiver_for_their_module() {
    let app = service().await;
    let (base, log) = receiver().await;
    let apr = app.approver().await;
    made(
        &app,
        json!({"url": format!("{base}/rules"), "events": ["rules.proposed", "rules.approved", "rules.rejected"],
               "modules": ["customers"]}),
    )
    .await;
    made(
        &app,
        json!({"url": format!("{base}/orders"), "events": ["rules.proposed"], "modules": ["orders"]}),
    )
    .await;
    let rules = json!([{"id": "wa", "column": "wa_number", "normalize": "phone_id"}]);
    let p = app.rules_in_force(&apr, "customers", rules).await;
    let id = p["id"].as_str().unwrap();
    let got = log.wait("/rules", 2).await;
    let types: Vec<&str> = got.iter().map(|g| g.1["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["rules.proposed", "rules.approved"]);
    let shown = &got[1].1["data"]["rule_proposal"];
    assert_eq!(shown["id"], id);
    assert_eq!(shown["state"], "approved");
    assert!(
        shown["proposed_by"]["display"]
            .as_str()
            .unwrap()
            .contains("***"),
        "{shown}"
    );
    // An orders proposal reaches the orders endpoint, and it is the only
    // one that did: the customers events before it were not for it.
    let resp = app
        .client
        .post(app.url("/api/modules/orders/rules"))
        .header("X-API-Key", &app.admin)
        .json(&json!({"rules": [{"id": "qty", "check": "row.qty > 0", "message": "qty", "columns": ["qty"]}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let orders = log.wait("/orders", 1).await;
    assert_eq!(orders.len(), 1);
    assert_eq!(orders[0].1["data"]["rule_proposal"]["module"], "orders");
}
