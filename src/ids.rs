//! The identifiers the service passes around as types: a job's id. Each
//! is text in the database, in JSON and in the OpenAPI document; as a
//! type it cannot be handed where other text is wanted. Values read back
//! from the database or from stored JSON are trusted as written; text
//! from a request becomes one through `parse`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Declares an identifier: text, serialised, stored and documented as the
/// plain string it wraps.
macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[derive(Serialize, Deserialize, sqlx::Type, utoipa::ToSchema)]
        #[serde(transparent)]
        #[sqlx(transparent)]
        pub struct $name(String);

        impl $name {
            /// A value the service wrote itself (a stored row, a test's
            /// fixture): taken as it is.
            pub fn from_stored(text: impl Into<String>) -> $name {
                $name(text.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

id_type!(
    /// A job's id: `job_` and a ULID, so that ids sort by time.
    JobId
);

impl JobId {
    const PREFIX: &str = "job_";

    /// A new id, later in order than every id made before it.
    pub fn generate() -> JobId {
        JobId(format!("{}{}", Self::PREFIX, ulid::Ulid::generate()))
    }

    /// A job id as a request gives it; `None` for text no job can have.
    pub fn parse(text: &str) -> Option<JobId> {
        let ulid = text.strip_prefix(Self::PREFIX)?;
        ulid::Ulid::from_string(ulid).ok()?;
        Some(JobId(text.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_job_id_parses_and_nothing_else_does() {
        let id = JobId::generate();
        assert_eq!(JobId::parse(id.as_str()), Some(id.clone()));
        assert!(id.as_str().starts_with("job_"));
        for bad in [
            "",
            "job_",
            "job_nope",
            "key_01JD8Z3K6W0Q2T5N8XJ4R7M9C1",
            "01JD8Z3K6W0Q2T5N8XJ4R7M9C1",
        ] {
            assert_eq!(JobId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_id_serialises_as_its_text() {
        let id = JobId::from_stored("job_1");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"job_1\"");
        assert_eq!(id.to_string(), "job_1");
    }
}
