//! What a request says about where it comes from: over TLS behind a
//! proxy, from the console's own pages, and a safe place to go next. The
//! sign-in, the language switch and every form ask the same questions.

use axum::http::{HeaderMap, StatusCode, header};

use super::Shown;
use crate::t;

/// Whether the request reached the service over TLS. The service itself
/// speaks plain HTTP; TLS ends at a proxy, which says so in
/// `X-Forwarded-Proto` or `Forwarded`. A client that claims TLS falsely only
/// makes its own cookie stricter.
pub fn is_https(headers: &HeaderMap) -> bool {
    let forwarded_proto = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"));
    let forwarded = headers
        .get(header::FORWARDED)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("proto=https"));
    forwarded_proto || forwarded
}

/// `403` for a state-changing request from another site. Browsers send
/// `Sec-Fetch-Site` and `Origin` with such requests; a request with neither
/// (curl, tests) is judged by its CSRF token alone. `Origin: null` is what
/// browsers send for the console's own forms under `Referrer-Policy:
/// no-referrer`, so it says nothing; `Sec-Fetch-Site` still does.
pub fn check_origin(headers: &HeaderMap) -> Result<(), Shown> {
    let forbidden = || {
        Shown::new(
            StatusCode::FORBIDDEN,
            "cross_site",
            &t!("problem-cross-site"),
            t!("problem-cross-site-detail"),
        )
    };
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
        && !matches!(site, "same-origin" | "none")
    {
        return Err(forbidden());
    }
    if let Some(origin) = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .filter(|o| *o != "null")
    {
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let origin_host = origin.split_once("://").map(|(_, h)| h).unwrap_or("");
        if host.is_empty() || !origin_host.eq_ignore_ascii_case(host) {
            return Err(forbidden());
        }
    }
    Ok(())
}

/// Where to go after signing in: a path of this site only.
pub fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n.starts_with("//")
                && !n.contains('\\')
                && !n.chars().any(char::is_control) =>
        {
            n.to_string()
        }
        _ => "/jobs".to_string(),
    }
}
