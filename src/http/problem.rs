//! Errors as RFC 9457 problems: one type for every failure the API
//! answers, each with a code a client can switch on, turned into a response
//! in one place. A middleware fills in `instance` (the request path) and
//! turns the framework's own plain-text rejections into problems too.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value as Json, json};
use utoipa::ToSchema;

use crate::service::Error as ServiceError;

pub const CONTENT_TYPE: &str = "application/problem+json";

/// The code of a problem answer (its `code` member and the last segment of
/// its `type`): a client switches on it. One enum, so the OpenAPI document
/// lists exactly the codes the service can answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = ProblemCode)]
pub enum Code {
    /// 400: a malformed body, form or query.
    BadRequest,
    /// 400: an upload without a file.
    EmptyBody,
    /// 401: no key, or an unknown, revoked or expired one.
    Unauthorized,
    /// 403: outside the key's role or module scope.
    Forbidden,
    /// 403: the four-eyes rule (the requester of a gate action decides it).
    SelfApproval,
    /// 404: no such job, key, key request or path.
    NotFound,
    /// 404: no such module (`valid_modules` lists them).
    UnknownModule,
    /// 405: the path does not take this method.
    MethodNotAllowed,
    /// 409: the job or key request is not in a state for this move (`state`).
    InvalidState,
    /// 409: the rollback window of the job closed (section 10).
    RollbackExpired,
    /// 410: the key of a key request was handed out already.
    AlreadyCollected,
    /// 410: an approved key request was not collected in time.
    Expired,
    /// 410: an admin withdrew the approved key request.
    Withdrawn,
    /// 410: the job's staged rows and stored file were purged (section
    /// 10); its preview is gone.
    Purged,
    /// 410: the job's staged rows went to its revision (section 11); see
    /// its `revised_as`.
    Revised,
    /// 412: `If-Match` names another version of the job (`etag`).
    PreconditionFailed,
    /// 408: an upload's body arrived too slowly (section 10); nothing kept.
    RequestTimeout,
    /// 413: the body is over the size limit (`limit`).
    TooLarge,
    /// 415: the upload's `Content-Type` is not a format the service reads.
    UnsupportedMediaType,
    /// 422: a parameter, header or body member is wrong (`parameter`).
    InvalidParameter,
    /// 422: an `Idempotency-Key` used for a different upload.
    IdempotencyKeyReused,
    /// 429: over the key's rate limit (see `Retry-After`).
    RateLimited,
    /// 500: a defect; the error is logged.
    Internal,
    /// 503: the database does not answer.
    NotReady,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::BadRequest => "bad_request",
            Code::EmptyBody => "empty_body",
            Code::Unauthorized => "unauthorized",
            Code::Forbidden => "forbidden",
            Code::SelfApproval => "self_approval",
            Code::NotFound => "not_found",
            Code::UnknownModule => "unknown_module",
            Code::MethodNotAllowed => "method_not_allowed",
            Code::InvalidState => "invalid_state",
            Code::RollbackExpired => "rollback_expired",
            Code::AlreadyCollected => "already_collected",
            Code::Expired => "expired",
            Code::Withdrawn => "withdrawn",
            Code::Purged => "purged",
            Code::Revised => "revised",
            Code::PreconditionFailed => "precondition_failed",
            Code::RequestTimeout => "request_timeout",
            Code::TooLarge => "too_large",
            Code::UnsupportedMediaType => "unsupported_media_type",
            Code::InvalidParameter => "invalid_parameter",
            Code::IdempotencyKeyReused => "idempotency_key_reused",
            Code::RateLimited => "rate_limited",
            Code::Internal => "internal",
            Code::NotReady => "not_ready",
        }
    }
}

/// A problem as the OpenAPI document describes it (RFC 9457). Answers
/// are rendered by [`Problem`]; this type only describes them.
#[derive(ToSchema)]
#[schema(as = Problem)]
#[allow(dead_code)]
pub struct ProblemSchema {
    /// `/problems/{code}`.
    #[schema(example = "/problems/invalid_state")]
    r#type: String,
    title: String,
    /// The HTTP status.
    #[schema(minimum = 400, maximum = 599)]
    status: u16,
    code: Code,
    detail: String,
    /// The request's path.
    instance: String,
    /// `invalid_parameter`: the parameter, header or body member at fault.
    #[schema(nullable = false)]
    parameter: Option<String>,
    /// `unknown_module`: the module keys there are.
    #[schema(nullable = false)]
    valid_modules: Option<Vec<String>>,
    /// `too_large`: the size limit in bytes.
    #[schema(nullable = false)]
    limit: Option<u64>,
    /// `precondition_failed`: the job's current `ETag`.
    #[schema(nullable = false)]
    etag: Option<String>,
    /// `invalid_state`: the state the job or key request is in.
    #[schema(nullable = false)]
    state: Option<String>,
}

/// A problem answer (boxed: it travels in every `Err` of the HTTP layer).
#[derive(Debug, Clone)]
pub struct Problem(Box<ProblemBody>);

#[derive(Debug, Clone)]
pub struct ProblemBody {
    pub status: StatusCode,
    pub code: Code,
    pub title: String,
    pub detail: String,
    /// More members (e.g. `valid_modules`, `limit`).
    pub extra: Map<String, Json>,
    /// Extra response headers (e.g. `Retry-After`).
    pub headers: Vec<(header::HeaderName, String)>,
}

pub type ApiResult<T> = Result<T, Problem>;

impl Problem {
    pub fn new(status: StatusCode, code: Code, title: &str, detail: impl Into<String>) -> Problem {
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
            Code::BadRequest,
            "Bad request",
            detail,
        )
    }

    pub fn invalid_parameter(name: &str, detail: impl Into<String>) -> Problem {
        Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            Code::InvalidParameter,
            "Invalid parameter",
            detail,
        )
        .with("parameter", Json::String(name.to_string()))
    }

    pub fn unauthorized(detail: impl Into<String>) -> Problem {
        Problem::new(
            StatusCode::UNAUTHORIZED,
            Code::Unauthorized,
            "A valid X-API-Key is required",
            detail,
        )
    }

    pub fn forbidden(detail: impl Into<String>) -> Problem {
        Problem::new(
            StatusCode::FORBIDDEN,
            Code::Forbidden,
            "Not allowed for this key",
            detail,
        )
    }

    pub fn not_found(what: &str, id: &str) -> Problem {
        Problem::new(
            StatusCode::NOT_FOUND,
            Code::NotFound,
            "Not found",
            format!("no {what} {id}"),
        )
    }

    pub fn internal(detail: impl std::fmt::Display) -> Problem {
        // The detail goes to the log, not to the client.
        tracing::error!(error = %detail, "internal error");
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            Code::Internal,
            "Internal error",
            "the service failed; the error is logged",
        )
    }

    /// The problem's code (`invalid_state`, …).
    pub fn code(&self) -> &'static str {
        self.0.code.as_str()
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
            "type": format!("/problems/{}", p.code.as_str()),
            "title": p.title,
            "status": p.status.as_u16(),
            "code": p.code.as_str(),
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
        // A body refused for its size or its pace was not read to its end,
        // whether the service or the framework refused it: the connection
        // cannot carry another request, and a client must be told so, or it
        // reuses the connection and its next request fails.
        if matches!(
            self.0.status,
            StatusCode::PAYLOAD_TOO_LARGE | StatusCode::REQUEST_TIMEOUT
        ) {
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
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

/// The one conversion from the service's error to a problem: its status,
/// code, title, and the members a client switches on.
impl From<ServiceError> for Problem {
    fn from(e: ServiceError) -> Problem {
        let detail = e.to_string();
        match e {
            ServiceError::UnknownModule { valid, .. } => Problem::new(
                StatusCode::NOT_FOUND,
                Code::UnknownModule,
                "Unknown module",
                detail,
            )
            .with("valid_modules", json!(valid)),
            ServiceError::NotFound { .. } => {
                Problem::new(StatusCode::NOT_FOUND, Code::NotFound, "Not found", detail)
            }
            ServiceError::Unauthorized => Problem::unauthorized(detail),
            ServiceError::Forbidden(_) => Problem::forbidden(detail),
            ServiceError::SelfApproval => Problem::new(
                StatusCode::FORBIDDEN,
                Code::SelfApproval,
                "Four-eyes rule",
                detail,
            ),
            ServiceError::InvalidState { title, state, .. } => {
                Problem::new(StatusCode::CONFLICT, Code::InvalidState, title, detail)
                    .with("state", json!(state))
            }
            ServiceError::StaleEtag { current, .. } => Problem::new(
                StatusCode::PRECONDITION_FAILED,
                Code::PreconditionFailed,
                "The job changed since you looked at it",
                detail,
            )
            .with("etag", json!(current)),
            ServiceError::Invalid { parameter, .. } => {
                Problem::invalid_parameter(&parameter, detail)
            }
            ServiceError::BadRequest(_) => Problem::bad_request(detail),
            ServiceError::UnsupportedType(_) => Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Code::UnsupportedMediaType,
                "Unsupported media type",
                detail,
            ),
            ServiceError::EmptyBody => Problem::new(
                StatusCode::BAD_REQUEST,
                Code::EmptyBody,
                "Empty body",
                detail,
            ),
            ServiceError::IdempotencyReused => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                Code::IdempotencyKeyReused,
                "Idempotency key reused",
                detail,
            ),
            ServiceError::TooLarge { limit } => Problem::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                Code::TooLarge,
                "File too large",
                detail,
            )
            .with("limit", json!(limit)),
            ServiceError::SlowBody { .. } => Problem::new(
                StatusCode::REQUEST_TIMEOUT,
                Code::RequestTimeout,
                "The body arrived too slowly",
                detail,
            ),
            ServiceError::AlreadyCollected { .. } => Problem::new(
                StatusCode::GONE,
                Code::AlreadyCollected,
                "The key was already collected",
                detail,
            ),
            ServiceError::Closed { state, .. } => {
                let (code, title) = match state {
                    crate::keys::RequestState::Withdrawn => {
                        (Code::Withdrawn, "The request was withdrawn")
                    }
                    _ => (Code::Expired, "The request expired"),
                };
                Problem::new(StatusCode::GONE, code, title, detail)
            }
            ServiceError::RollbackExpired { .. } => Problem::new(
                StatusCode::CONFLICT,
                Code::RollbackExpired,
                "The rollback window closed",
                detail,
            ),
            ServiceError::Purged { .. } => Problem::new(
                StatusCode::GONE,
                Code::Purged,
                "The job's rows and file were purged",
                detail,
            ),
            ServiceError::Revised { .. } => Problem::new(
                StatusCode::GONE,
                Code::Revised,
                "The job's rows went to its revision",
                detail,
            ),
            ServiceError::TooMany { retry_after, .. } => Problem::new(
                StatusCode::TOO_MANY_REQUESTS,
                Code::RateLimited,
                "Too many requests",
                detail,
            )
            .header(header::RETRY_AFTER, retry_after.max(1).to_string()),
            ServiceError::Store(e) if e.is_unavailable() => {
                tracing::warn!(error = %e, "the database cannot take requests now");
                Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    Code::NotReady,
                    "The database cannot take this now",
                    "the database is busy, read-only or out of reach; nothing was changed, try again",
                )
                .header(header::RETRY_AFTER, "5".to_string())
            }
            ServiceError::Store(_) | ServiceError::Internal(_) => Problem::internal(detail),
        }
    }
}

/// The code for an error status the framework produced on its own.
fn code_for(status: StatusCode) -> Code {
    match status {
        StatusCode::BAD_REQUEST => Code::BadRequest,
        StatusCode::UNAUTHORIZED => Code::Unauthorized,
        StatusCode::FORBIDDEN => Code::Forbidden,
        StatusCode::NOT_FOUND => Code::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => Code::MethodNotAllowed,
        StatusCode::PAYLOAD_TOO_LARGE => Code::TooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => Code::UnsupportedMediaType,
        StatusCode::UNPROCESSABLE_ENTITY => Code::InvalidParameter,
        _ if status.is_server_error() => Code::Internal,
        _ => Code::BadRequest,
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

/// The detail of the `400` for a URL holding `%00`.
pub const NUL_IN_URL: &str =
    "the URL holds a NUL character (%00), which no identifier or parameter may contain";

/// Refuses a URL that holds a NUL character (`%00`) before any handler
/// runs: no id or parameter the service issues or takes contains one, and
/// PostgreSQL text cannot hold it, so such a request would otherwise fail
/// in the database instead of being answered.
pub async fn no_nul_in_url(req: Request, next: Next) -> Response {
    let has_nul = |s: &str| {
        s.as_bytes()
            .windows(3)
            .any(|w| w.eq_ignore_ascii_case(b"%00"))
    };
    let uri = req.uri();
    if has_nul(uri.path()) || uri.query().is_some_and(has_nul) {
        return Problem::bad_request(NUL_IN_URL).into_response();
    }
    next.run(req).await
}

/// An empty response body (for answers such as `204`).
pub fn empty(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}
