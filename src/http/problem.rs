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
    /// 503: the database's disk is full, or under the space kept free.
    NoSpace,
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
            Code::NoSpace => "no_space",
        }
    }
}

/// A problem answer (RFC 9457): every problem the API answers is rendered
/// from this type, which the OpenAPI document describes.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Problem)]
pub struct ProblemDoc<'a> {
    /// `/problems/{code}`.
    #[schema(example = "/problems/invalid_state")]
    r#type: String,
    title: &'a str,
    /// The HTTP status.
    #[schema(minimum = 400, maximum = 599)]
    status: u16,
    code: Code,
    detail: &'a str,
    /// The request's path.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = true, value_type = String)]
    instance: Option<&'a str>,
    /// `invalid_parameter`: the parameter, header or body member at fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    parameter: Option<&'a str>,
    /// `unknown_module`: the module keys there are.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    valid_modules: Option<&'a [String]>,
    /// `too_large`: the size limit in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    limit: Option<u64>,
    /// `precondition_failed`: the job's current `ETag`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    etag: Option<&'a str>,
    /// `invalid_state`: the state the job or key request is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    state: Option<&'a str>,
}

/// The members a problem adds for its code ([`ProblemDoc`] says which).
#[derive(Debug, Clone, Default)]
pub struct Members {
    parameter: Option<String>,
    valid_modules: Option<Vec<String>>,
    limit: Option<u64>,
    etag: Option<String>,
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
    /// The members its code adds (`valid_modules`, `limit`, …).
    pub members: Members,
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
            members: Members::default(),
            headers: Vec::new(),
        }))
    }

    /// Names the parameter, header or body member at fault.
    pub fn parameter(mut self, name: &str) -> Problem {
        self.0.members.parameter = Some(name.to_string());
        self
    }

    /// Lists the module keys there are.
    pub fn valid_modules(mut self, keys: Vec<String>) -> Problem {
        self.0.members.valid_modules = Some(keys);
        self
    }

    /// Gives the size limit in bytes.
    pub fn limit(mut self, bytes: u64) -> Problem {
        self.0.members.limit = Some(bytes);
        self
    }

    /// Gives the job's current `ETag`.
    pub fn etag(mut self, etag: String) -> Problem {
        self.0.members.etag = Some(etag);
        self
    }

    /// Names the state the job or key request is in.
    pub fn state(mut self, state: String) -> Problem {
        self.0.members.state = Some(state);
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
        .parameter(name)
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

    fn body(&self, instance: Option<&str>) -> String {
        let p = &self.0;
        let doc = ProblemDoc {
            r#type: format!("/problems/{}", p.code.as_str()),
            title: &p.title,
            status: p.status.as_u16(),
            code: p.code,
            detail: &p.detail,
            instance,
            parameter: p.members.parameter.as_deref(),
            valid_modules: p.members.valid_modules.as_deref(),
            limit: p.members.limit,
            etag: p.members.etag.as_deref(),
            state: p.members.state.as_deref(),
        };
        serde_json::to_string(&doc).unwrap_or_default()
    }

    fn render(&self, instance: Option<&str>) -> Response {
        let mut resp = (self.0.status, self.body(instance)).into_response();
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
            .valid_modules(valid),
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
                    .state(state.to_string())
            }
            ServiceError::StaleEtag { current, .. } => Problem::new(
                StatusCode::PRECONDITION_FAILED,
                Code::PreconditionFailed,
                "The job changed since you looked at it",
                detail,
            )
            .etag(current),
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
            .limit(limit),
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
            ServiceError::Store(e) if e.is_out_of_space() => {
                tracing::warn!(error = %e, "the database's disk is full");
                Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    Code::NoSpace,
                    "The database's disk is full",
                    "the database has no room for this now; nothing was changed, try again once an administrator has freed space",
                )
                .header(header::RETRY_AFTER, "60".to_string())
            }
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
