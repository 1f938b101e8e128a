//! `X-Request-Id`: a client may name its request, within a bounded, known
//! alphabet; anything else is replaced by a fresh id before it reaches a
//! log line or the reply. An id is written into every log line of the
//! request, so one with spaces or quotes could forge a line ("… approved").

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

pub const HEADER: &str = "x-request-id";

/// Whether a client's request id may be kept: 1 to 64 characters of
/// `[A-Za-z0-9._-]`.
pub fn acceptable(id: &[u8]) -> bool {
    (1..=64).contains(&id.len())
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Drops a request id that is not [`acceptable`] (or given twice), so that
/// the next layer makes a fresh one.
pub async fn sanitize(mut req: Request, next: Next) -> Response {
    let headers = req.headers();
    let ids: Vec<&[u8]> = headers
        .get_all(HEADER)
        .iter()
        .map(|v| v.as_bytes())
        .collect();
    if !(ids.is_empty() || (ids.len() == 1 && acceptable(ids[0]))) {
        req.headers_mut().remove(HEADER);
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::acceptable;

    #[test]
    fn only_short_plain_ids_are_kept() {
        assert!(acceptable(b"req-42_a.b"));
        assert!(acceptable(&[b'a'; 64]));
        assert!(!acceptable(&[b'a'; 65]));
        assert!(!acceptable(b""));
        assert!(!acceptable(b"x job=job_1 event=approve"));
        assert!(!acceptable("r\u{e9}q".as_bytes()));
    }
}
