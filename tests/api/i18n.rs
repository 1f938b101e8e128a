//! The console in Bahasa Indonesia and English: the language from
//! `Accept-Language` or the top bar's switch, the words of the job pages,
//! row errors, numbers and dates the language's way; the API stays English.

use reqwest::StatusCode;

use crate::common::*;
use crate::console::Console;

/// Orders with one good row worth 1,250,000 and one row whose quantity is
/// no number and whose date is missing a day.
fn orders_csv() -> String {
    "order_no,customer_id,sku,qty,amount_idr,order_date,status\n\
     SO-1,6281234567890,SKU-1,2,1250000,2026-08-17,paid\n\
     SO-2,6281234567891,SKU-1,dua,50000,2026-02-30,paid\n"
        .to_string()
}

async fn orders_job(app: &TestApp) -> (String, String) {
    let sub = app.submitter().await;
    let done = app
        .upload(&sub, "orders", "?on_error=skip", &orders_csv())
        .await;
    assert_eq!(done["state"], "awaiting_approval", "{done}");
    let id = done["id"].as_str().expect("id").to_string();
    (sub, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_job_page_speaks_the_language_the_switch_chose() {
    let app = spawn_app().await;
    let (_, id) = orders_job(&app).await;
    let approver = app.approver().await;
    let mut c = Console::new(&app);
    c.sign_in(&approver).await;

    // No preference: English, as it always was.
    let html = c.page(&format!("/jobs/{id}")).await;
    assert!(html.contains("<html lang=\"en\">"));
    assert!(html.contains("Awaiting approval") && html.contains("Preview"));
    assert!(
        html.contains("1,250,000"),
        "amounts grouped the English way"
    );
    assert!(html.contains("17 Aug 2026"), "dates in words");
    assert!(
        html.contains("Sales orders import"),
        "the module by its name"
    );
    assert!(
        html.contains("is not a whole number (integer)"),
        "the service's own message"
    );
    assert!(
        !html.contains("row 3, column qty"),
        "without the row and column the cell already shows"
    );

    // The switch: a form of the top bar, back to the same page.
    assert!(html.contains("action=\"/language\""));
    let resp = c
        .post(
            "/language",
            &[("lang", "id"), ("next", &format!("/jobs/{id}"))],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    assert_eq!(resp.headers()["location"], format!("/jobs/{id}"));
    let set = resp.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        set.starts_with("ig_lang=id") && set.contains("HttpOnly"),
        "{set}"
    );

    let resp = c.get(&format!("/jobs/{id}")).await;
    assert_eq!(resp.headers()["content-language"], "id");
    let html = resp.text().await.unwrap();
    assert!(html.contains("<html lang=\"id\">"));
    for words in [
        "Menunggu persetujuan",
        "Pratinjau",
        "Linimasa",
        "Keputusan Anda",
        "Setujui…",
        "Pekerjaan",
        "1.250.000",
        "17 Agu 2026",
        // Row errors in words, from their codes and the catalog.
        "dua bukan bilangan bulat",
        // The module by its Indonesian name.
        "Impor Pesanan penjualan",
        "2026-02-30 bukan tanggal",
    ] {
        assert!(html.contains(words), "{words} is on the Indonesian page");
    }
    for english in [
        "Awaiting approval",
        "Preview",
        "Your decision",
        "row 3, column qty",
    ] {
        assert!(!html.contains(english), "{english} is not");
    }
    // The job list, its filters and state names.
    let html = c.page("/jobs").await;
    assert!(html.contains("Semua modul") && html.contains("Hanya unggahan saya"));

    // Back to English by the same switch.
    c.post("/language", &[("lang", "en"), ("next", "/jobs")])
        .await;
    assert!(c.page("/jobs").await.contains("All modules"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browser_language_is_followed_and_the_api_stays_english() {
    let app = spawn_app().await;
    let (sub, id) = orders_job(&app).await;
    let client = reqwest::Client::new();
    let get = |path: &str, lang: &str| {
        client
            .get(app.url(path))
            .header("Accept-Language", lang)
            .send()
    };

    // Pages shown before sign-in and error pages follow Accept-Language.
    let html = get("/signin", "id-ID,id;q=0.9,en;q=0.8")
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("<html lang=\"id\">") && html.contains("Masuk dengan Kunci API Anda"));
    let resp = get("/nowhere", "id").await.unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert!(
        resp.text()
            .await
            .unwrap()
            .contains("Halaman tidak ditemukan")
    );
    let html = get("/signin", "fr-FR,en;q=0.5")
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("<html lang=\"en\">"),
        "no Indonesian asked for"
    );

    // The API keeps English messages and stable codes, whatever is asked.
    let resp = client
        .get(app.url(&format!("/api/jobs/{id}/errors")))
        .header("X-API-Key", &sub)
        .header("Accept-Language", "id")
        .send()
        .await
        .unwrap();
    let body: serde_json::Value = resp.json().await.unwrap();
    let text = body.to_string();
    assert!(text.contains("is not a whole number"), "{text}");
    assert!(!text.contains("bukan"), "{text}");
    let resp = client
        .get(app.url("/api/jobs/job_none"))
        .header("X-API-Key", &sub)
        .header("Accept-Language", "id")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let problem: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(problem["code"], "not_found");
    assert!(problem["detail"].as_str().unwrap().starts_with("no job"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_move_is_explained_in_the_readers_language() {
    let app = spawn_app().await;
    let (sub, id) = orders_job(&app).await;
    let mut c = Console::new(&app);
    c.sign_in(&sub).await;
    c.post("/language", &[("lang", "id"), ("next", "/jobs")])
        .await;
    // A page for a job that is not there: the service's 404, in words.
    let resp = c.get("/jobs/job_none").await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let html = resp.text().await.unwrap();
    assert!(html.contains("Tidak ditemukan"), "{html}");
    // The submitter cancels; a second cancel is refused: the state, in words.
    let html = c.page(&format!("/jobs/{id}")).await;
    let csrf = crate::console::csrf_of(&html);
    let etag = html
        .split("name=\"etag\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("etag")
        .replace("&quot;", "\"");
    let form = [
        ("_csrf", csrf.as_str()),
        ("etag", etag.as_str()),
        ("comment", ""),
    ];
    let resp = c.post(&format!("/jobs/{id}/cancel"), &form).await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let html = c.page(&format!("/jobs/{id}?done=cancel")).await;
    assert!(html.contains("Dibatalkan. Tidak ada yang akan ditulis."));
    let resp = c.post(&format!("/jobs/{id}/cancel"), &form).await;
    assert_eq!(resp.status(), StatusCode::PRECONDITION_FAILED);
    let html = resp.text().await.unwrap();
    assert!(
        html.contains("Pekerjaan berubah sejak Anda melihatnya"),
        "{html}"
    );
}
