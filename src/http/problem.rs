//! Errors as RFC 9457 problems: one type for every failure the API
//! answers, each with a code a client can switch on, turned into a response
//! in one place. A middleware fills in `instance` (the request path) and
//! turns the framework's own plain-text rejections into problems too.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value as Json, json};

use crate::store::StoreError;

pub const CONTENT_TYPE: &str = "application/problem+json";

/// A problem answer (boxed: it travels in every `Err` of the HTTP layer).
#[derive(Debug, Clone)]
pub struct Problem(Box<ProblemBody>);

#[derive(Debug, Clone)]
pub struct ProblemBody {
    pub status: StatusCode,
    pub code: &'static str,
    pub title: String,
    pub detail: String,
    /// More members (e.g. `valid_modules`, `limit`).
    pub extra: Map<String, Json>,
    /// Extra response headers (e.g. `Retry-After`).
    pub headers: Vec<(header::HeaderName, String)>,
}

pub type ApiResult<T> = Result<T, Problem>;

impl Problem {
    pub fn new(
        status: StatusCode,
        code: &'static str,
        title: &str,
        detail: impl Into<String>,
    ) -> Problem {
        Problem(Box::new(ProblemBody {
            status,
            code,
            title: title.to_string(),
            detail: detail.into(),
            extra: Map::new(),
            headers: Vec::new(),
        }))
    }

    pub fn with(mut self, key: &str, value: Json) -> Problem {
        self.0.extra.insert(key.to_string(), value);
        self
    }

    pub fn bad_request(detail: impl Into<String>) -> Problem {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "Bad request",
            detail,
        )
    }

    pub fn invalid_parameter(name: &str, detail: impl Into<String>) -> Problem {
        Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_parameter",
            "Invalid parameter",
            detail,
        )
        .with("parameter", Json::String(name.to_string()))
    }

    pub fn unauthorized(detail: impl Into<String>) -> Problem {
        Problem::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "A valid X-API-Key is required",
            detail,
        )
    }

    pub fn forbidden(detail: impl Into<String>) -> Problem {
        Problem::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "Not allowed for this key",
            detail,
        )
    }

    pub fn not_found(what: &str, id: &str) -> Problem {
        Problem::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "Not found",
            format!("no {what} {id}"),
        )
    }

    pub fn internal(detail: impl std::fmt::Display) -> Problem {
        // The detail goes to the log, not to the client.
        tracing::error!(error = %detail, "internal error");
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Internal error",
            "the service failed; the error is logged",
        )
    }

    /// The problem's code (`invalid_state`, …).
    pub fn code(&self) -> &'static str {
        self.0.code
    }

    pub fn status(&self) -> StatusCode {
        self.0.status
    }

    pub fn title(&self) -> &str {
        &self.0.title
    }

    pub fn detail(&self) -> &str {
        &self.0.detail
    }

    /// Adds a response header (e.g. `Retry-After`).
    pub fn header(mut self, name: header::HeaderName, value: String) -> Problem {
        self.0.headers.push((name, value));
        self
    }

    fn body(&self, instance: Option<&str>) -> Json {
        let p = &self.0;
        let mut body = json!({
            "type": format!("/problems/{}", p.code),
            "title": p.title,
            "status": p.status.as_u16(),
            "code": p.code,
            "detail": p.detail,
        });
        if let (Some(obj), Some(i)) = (body.as_object_mut(), instance) {
            obj.insert("instance".into(), Json::String(i.to_string()));
        }
        if let Some(obj) = body.as_object_mut() {
            for (k, v) in &p.extra {
                obj.insert(k.clone(), v.clone());
            }
        }
        body
    }

    fn render(&self, instance: Option<&str>) -> Response {
        let mut resp = (self.0.status, self.body(instance).to_string()).into_response();
        let headers = resp.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
        for (name, value) in &self.0.headers {
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.insert(name.clone(), v);
            }
        }
        resp
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let mut resp = self.render(None);
        resp.extensions_mut().insert(self);
        resp
    }
}

impl From<StoreError> for Problem {
    fn from(e: StoreError) -> Problem {
        Problem::internal(e)
    }
}

impl From<anyhow::Error> for Problem {
    fn from(e: anyhow::Error) -> Problem {
        Problem::internal(e)
    }
}

/// The code for an error status the framework produced on its own.
fn code_for(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "bad_request",
        StatusCode::UNAUTHORIZED => "unauthorized",
        StatusCode::FORBIDDEN => "forbidden",
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::PAYLOAD_TOO_LARGE => "too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        StatusCode::UNPROCESSABLE_ENTITY => "invalid_parameter",
        _ if status.is_server_error() => "internal",
        _ => "bad_request",
    }
}

/// Adds `instance` to problems, and makes every other error answer under
/// `/api` a problem as well (a wrong method, an unparsable JSON body, …).
pub async fn problems(req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    let resp = next.run(req).await;
    if let Some(p) = resp.extensions().get::<Problem>() {
        return p.render(Some(&path));
    }
    let status = resp.status();
    let is_problem = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(CONTENT_TYPE.as_bytes()));
    if !(status.is_client_error() || status.is_server_error())
        || is_problem
        || !path.starts_with("/api")
    {
        return resp;
    }
    let bytes = axum::body::to_bytes(resp.into_body(), 64 * 1024)
        .await
        .unwrap_or_default();
    let detail = String::from_utf8_lossy(&bytes).trim().to_string();
    let title = status.canonical_reason().unwrap_or("Error");
    let detail = if detail.is_empty() {
        title.to_string()
    } else {
        detail
    };
    Problem::new(status, code_for(status), title, detail).render(Some(&path))
}

/// An empty response body (for answers such as `204`).
pub fn empty(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}
