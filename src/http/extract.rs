//! Typed query strings: a handler takes `Params<T>` for a `T` that
//! deserializes from the query, and a query that does not fit is a `422`
//! problem naming the parameter at fault (axum's own `Query` answers a
//! plain `400` that names nothing).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::problem::Problem;

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
