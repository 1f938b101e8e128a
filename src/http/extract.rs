//! Typed query strings and small bodies: a handler takes `Params<T>` for a
//! `T` that deserializes from the query, and a query that does not fit is
//! a `422` problem naming the parameter at fault (axum's own `Query`
//! answers a plain `400` that names nothing); [`comment`] reads the
//! optional `{"comment": "…"}` body the gate and key requests take.

use axum::body::Bytes;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::problem::{ApiResult, Problem};
use super::views::CommentBody;

/// A request's query string as `T`.
#[derive(Debug, Clone, Default)]
pub struct Params<T>(pub T);

impl<T, S> FromRequestParts<S> for Params<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Problem> {
        parse(parts.uri.query().unwrap_or("")).map(Params)
    }
}

/// Parses a query string as `T`, or the `422` that names the parameter.
pub fn parse<T: DeserializeOwned>(query: &str) -> Result<T, Problem> {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
    serde_path_to_error::deserialize(de).map_err(|e| {
        let parameter = e.path().to_string();
        let parameter = if parameter == "." {
            "query".to_string()
        } else {
            parameter
        };
        let why = e.into_inner();
        Problem::invalid_parameter(&parameter, format!("{parameter}: {why}"))
    })
}

/// The optional `{"comment": "..."}` body of a gate move (and of a
/// decision on a key request): the comment's text, checked by the service.
/// A body that is no such object is `400`; a comment that is not a string
/// is `422` naming it.
pub fn comment(body: &Bytes) -> ApiResult<Option<String>> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let parsed: Result<CommentBody, _> = serde_path_to_error::deserialize(&mut de);
    match parsed {
        Ok(b) if de.end().is_ok() => Ok(b.comment),
        Ok(_) => Err(Problem::bad_request(
            "the body must be one JSON object like {\"comment\": \"…\"}",
        )),
        Err(e) if e.path().to_string() == "comment" => Err(Problem::invalid_parameter(
            "comment",
            "comment must be a string",
        )),
        Err(e) => Err(Problem::bad_request(format!(
            "the body must be a JSON object like {{\"comment\": \"…\"}}: {}",
            e.into_inner()
        ))),
    }
}
