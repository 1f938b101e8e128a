//! Every HTTP error of API.md section 8 is a problem with its code.

use reqwest::StatusCode;
use serde_json::json;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_a_live_key_are_unauthorized() {
    let app = spawn_app().await;
    let none = app.client.get(app.url("/api/jobs")).send().await.unwrap();
    problem(none, StatusCode::UNAUTHORIZED, "unauthorized").await;
    problem(
        app.get("igk_nonsense", "/api/jobs").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    let forged = format!("igk_{}", "A".repeat(44));
    problem(
        app.get(&forged, "/api/jobs").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    // Right lookup part, wrong secret.
    let (key, id) = app.key("Budi Santoso", "submitter", &["*"]).await;
    let wrong = format!(
        "{}{}",
        &key[..key.len() - 1],
        if key.ends_with('A') { 'B' } else { 'A' }
    );
    problem(
        app.get(&wrong, "/api/jobs").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    // Revoked.
    assert_eq!(app.get(&key, "/api/jobs").await.status(), StatusCode::OK);
    app.revoke(&id).await;
    problem(
        app.get(&key, "/api/jobs").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    // A key cannot be made expired (section 7: `422`); one that expires
    // stops working.
    let create = |expires_at: String| {
        app.client
            .post(app.url("/api/keys"))
            .header("X-API-Key", &app.admin)
            .json(&json!({"name": "Temp Worker", "role": "submitter", "expires_at": expires_at}))
            .send()
    };
    let past = create("2020-01-01T00:00:00Z".into()).await.unwrap();
    let refused = problem(past, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter").await;
    assert_eq!(refused["parameter"], "expires_at", "{refused}");
    // An expiry past 2038 is kept as given (MySQL's `TIMESTAMP` ends
    // there; the keys' `DATETIME` does not).
    let far = create("2040-06-01T00:00:00Z".into()).await.unwrap();
    assert_eq!(far.status(), StatusCode::CREATED);
    let far_id = far.json::<serde_json::Value>().await.unwrap()["id"].clone();
    let keys = app.get_json(&app.admin, "/api/keys").await;
    let listed = (keys["keys"].as_array().unwrap().iter())
        .find(|k| k["id"] == far_id)
        .expect("the new key is listed");
    assert_eq!(listed["expires_at"], "2040-06-01T00:00:00.000Z", "{listed}");
    let soon = chrono::Utc::now() + chrono::Duration::milliseconds(1500);
    let resp = create(soon.to_rfc3339()).await.unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let expired = resp.json::<serde_json::Value>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        app.get(&expired, "/api/jobs").await.status(),
        StatusCode::OK
    );
    tokio::time::sleep((soon - chrono::Utc::now()).to_std().unwrap_or_default()).await;
    problem(
        app.get(&expired, "/api/jobs").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_outside_their_scope_or_role_are_forbidden() {
    let app = spawn_app().await;
    let (orders_only, _) = app.key("Rina Marlina", "submitter", &["orders"]).await;
    let resp = app
        .upload_raw(&orders_only, "customers", "", "text/csv", CUSTOMERS)
        .await;
    problem(resp, StatusCode::FORBIDDEN, "forbidden").await;
    assert_eq!(app.count("uc_scrm_customers").await, 0);
    // A job of another module is not visible to the scoped key.
    let sub = app.submitter().await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    problem(
        app.get(&orders_only, &format!("/api/jobs/{id}")).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    let list = app.get_json(&orders_only, "/api/jobs").await;
    assert_eq!(list["jobs"].as_array().unwrap().len(), 0);
    // Key management is for admins.
    let resp = app
        .client
        .post(app.url("/api/keys"))
        .header("X-API-Key", &sub)
        .json(&json!({"name": "Me Again", "role": "admin"}))
        .send()
        .await
        .unwrap();
    problem(resp, StatusCode::FORBIDDEN, "forbidden").await;
    problem(
        app.get(&sub, "/api/keys").await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_modules_and_jobs_are_not_found() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let body = problem(
        app.upload_raw(&sub, "clients", "", "text/csv", CUSTOMERS)
            .await,
        StatusCode::NOT_FOUND,
        "unknown_module",
    )
    .await;
    assert_eq!(body["valid_modules"].as_array().unwrap().len(), 26);
    assert!(body["detail"].as_str().unwrap().contains("customers"));
    problem(
        app.get(&sub, "/api/modules/clients").await,
        StatusCode::NOT_FOUND,
        "unknown_module",
    )
    .await;
    problem(
        app.get(&sub, "/api/jobs/job_nope").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    problem(
        app.act(&sub, "job_nope", "cancel", None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_the_limit_are_refused_before_any_job() {
    let app = spawn_app_with(|s| s.limits.body_bytes = 1000).await;
    let sub = app.submitter().await;
    let big = format!("customer_name,wa_number\n{}", "Andi,0811\n".repeat(200));
    let body = problem(
        app.upload_raw(&sub, "customers", "", "text/csv", big.clone())
            .await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_large",
    )
    .await;
    assert_eq!(body["limit"], 1000);
    // Without Content-Length (a streamed body), the limit holds while reading.
    let resp = app
        .upload_raw(
            &sub,
            "customers",
            "",
            "text/csv",
            streamed(big.into_bytes(), 100),
        )
        .await;
    problem(resp, StatusCode::PAYLOAD_TOO_LARGE, "too_large").await;
    let list = app.get_json(&sub, "/api/jobs").await;
    assert_eq!(list["jobs"].as_array().unwrap().len(), 0);
    assert_eq!(
        app.count("ig_blob_chunks").await,
        0,
        "partial uploads are discarded"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_types_empty_bodies_and_bad_parameters_are_refused() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let body = problem(
        app.upload_raw(&sub, "customers", "", "image/png", CUSTOMERS)
            .await,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    )
    .await;
    assert!(body["detail"].as_str().unwrap().contains("image/png"));
    problem(
        app.upload_raw(&sub, "customers", "", "text/csv", "").await,
        StatusCode::BAD_REQUEST,
        "empty_body",
    )
    .await;
    let body = problem(
        app.upload_raw(&sub, "customers", "?mode=merge", "text/csv", CUSTOMERS)
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
    assert_eq!(body["parameter"], "mode");
    problem(
        app.upload_raw(&sub, "customers", "?on_error=ignore", "text/csv", CUSTOMERS)
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
    problem(
        app.upload_raw(&sub, "customers", "?delimiter=ab", "text/csv", CUSTOMERS)
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
    problem(
        app.get(&sub, "/api/jobs?state=done").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
    problem(
        app.get(&sub, "/api/jobs?limit=-1").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
    let list = app.get_json(&sub, "/api/jobs").await;
    assert_eq!(
        list["jobs"].as_array().unwrap().len(),
        0,
        "no job was created"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn framework_errors_are_problems_too() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let resp = app
        .client
        .put(app.url("/api/jobs"))
        .header("X-API-Key", &sub)
        .send()
        .await
        .unwrap();
    problem(resp, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed").await;
    let resp = app.get(&sub, "/api/nothing-here").await;
    problem(resp, StatusCode::NOT_FOUND, "not_found").await;
    let resp = app
        .client
        .post(app.url("/api/keys"))
        .header("X-API-Key", &app.admin)
        .body("{\"name\": 1}")
        .send()
        .await
        .unwrap();
    problem(resp, StatusCode::BAD_REQUEST, "bad_request").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_readiness_answer() {
    let app = spawn_app().await;
    let h = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(h.status(), StatusCode::OK);
    let r = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_of_uploads_that_died_half_way_are_purged() {
    let app = spawn_app_with(|s| s.expiry_sweep_ms = 100).await;
    let sub = app.submitter().await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let blob = if !app.database.starts_with("postgres") {
        "X'00'"
    } else {
        "'\\x00'::bytea"
    };
    app.sql(&format!(
        "INSERT INTO ig_blob_chunks (upload_id, seq, data, created_at) \
         VALUES ('dead-upload', 0, {blob}, '2020-01-01T00:00:00+00:00')"
    ))
    .await;
    let mut left = 1;
    for _ in 0..50 {
        left = app
            .count("ig_blob_chunks WHERE upload_id = 'dead-upload'")
            .await;
        if left == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(left, 0, "the orphan is gone");
    assert_eq!(
        app.count("ig_blob_chunks").await,
        1,
        "the finished upload's chunk stays"
    );
    let id = job["id"].as_str().unwrap();
    let apr = app.approver().await;
    assert_eq!(app.act_ok(&apr, id, "approve").await["state"], "committed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_jobs_rows_and_latencies() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    app.act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    app.upload(&sub, "customers", "", "city\nJakarta\n").await;
    let resp = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = resp.text().await.unwrap();
    for line in [
        "importgate_jobs{state=\"committed\"} 1",
        "importgate_jobs{state=\"invalid\"} 1",
        "importgate_jobs{state=\"awaiting_approval\"} 0",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
    assert!(text.contains("importgate_http_request_duration_seconds_bucket{method=\"POST\",route=\"/api/import/{module}\",status=\"202\""), "{text}");
    assert!(
        text.contains("importgate_stage_duration_seconds_bucket{stage=\"commit\""),
        "{text}"
    );
    assert!(
        text.contains("importgate_rows_total{stage=\"validate\"}"),
        "{text}"
    );
    assert!(!text.contains("job_"), "no job ids as labels");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_over_their_rate_are_told_when_to_come_back() {
    let app = spawn_app_with(|s| {
        s.limits.uploads_per_minute = 2;
        s.limits.requests_per_minute = 5;
    })
    .await;
    let sub = app.submitter().await;
    let first = app
        .upload_raw(&sub, "customers", "", "text/csv", CUSTOMERS)
        .await;
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    let fields = first.headers()["ratelimit"].to_str().unwrap().to_string();
    assert!(fields.starts_with("\"uploads\";r=1;t="), "{fields}");
    assert_eq!(first.headers()["ratelimit-policy"], "\"uploads\";q=2;w=60");
    assert_eq!(
        app.upload_raw(&sub, "customers", "", "text/csv", CUSTOMERS)
            .await
            .status(),
        StatusCode::ACCEPTED
    );
    let third = app
        .upload_raw(&sub, "customers", "", "text/csv", CUSTOMERS)
        .await;
    let retry: u64 = third.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry));
    assert!(
        third.headers()["ratelimit"]
            .to_str()
            .unwrap()
            .starts_with("\"uploads\";r=0;")
    );
    problem(third, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
    let list = app.get_json(&sub, "/api/jobs").await;
    assert_eq!(
        list["jobs"].as_array().unwrap().len(),
        2,
        "the refused upload made no job"
    );
    // Other requests have their own budget (one used above).
    for _ in 0..4 {
        assert_eq!(app.get(&sub, "/api/modules").await.status(), StatusCode::OK);
    }
    problem(
        app.get(&sub, "/api/modules").await,
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
    )
    .await;
    // Another key is not affected.
    let other = app.approver().await;
    assert_eq!(
        app.get(&other, "/api/modules").await.status(),
        StatusCode::OK
    );
}

/// A NUL character (which PostgreSQL text cannot hold, and no id or
/// parameter contains) and a time past the database's range are the
/// client's error, never a `500`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nul_characters_and_absurd_times_are_client_errors() {
    let app = spawn_app().await;
    for (method, path) in [
        (reqwest::Method::GET, "/api/jobs/job_%00"),
        (reqwest::Method::GET, "/api/jobs?cursor=%00"),
        (reqwest::Method::GET, "/api/jobs/job_%00/preview"),
        (reqwest::Method::DELETE, "/api/keys/%00"),
        (
            reqwest::Method::GET,
            "/api/key-requests/kr_%00?claim_token=x",
        ),
    ] {
        let resp = app
            .client
            .request(method, app.url(path))
            .header("X-API-Key", &app.admin)
            .send()
            .await
            .unwrap();
        let body = problem(resp, StatusCode::BAD_REQUEST, "bad_request").await;
        assert!(body["detail"].as_str().unwrap().contains("%00"), "{body}");
    }
    let post = |path: &str, body: serde_json::Value| {
        app.client
            .post(app.url(path))
            .header("X-API-Key", &app.admin)
            .json(&body)
            .send()
    };
    for (path, body, parameter) in [
        (
            "/api/keys",
            json!({"name": "Bu\u{0}di", "role": "submitter"}),
            "name",
        ),
        (
            "/api/keys",
            json!({"name": "Budi", "role": "submitter", "expires_at": "+200000-01-01T00:00:00Z"}),
            "expires_at",
        ),
        (
            "/api/key-requests",
            json!({"name": "Rina", "email": "rina@contoh.co.id\u{0}", "role": "submitter", "reason": "reports"}),
            "email",
        ),
        (
            "/api/key-requests",
            json!({"name": "Rina", "email": "rina@contoh.co.id", "role": "submitter", "reason": "re\u{0}ports"}),
            "reason",
        ),
    ] {
        let body = problem(
            post(path, body).await.unwrap(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_parameter",
        )
        .await;
        assert_eq!(body["parameter"], parameter, "{body}");
    }
    let sub = app.submitter().await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let apr = app.approver().await;
    let resp = app
        .act(
            &apr,
            job["id"].as_str().unwrap(),
            "reject",
            Some("no\u{0}pe"),
        )
        .await;
    let body = problem(resp, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter").await;
    assert_eq!(body["parameter"], "comment");
}
