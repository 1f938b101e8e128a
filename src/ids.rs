//! The identifiers the service passes around as types: a job's id, an API
//! key's id, a module's key. Each is text in the database, in JSON and in
//! the OpenAPI document; as a type it cannot be handed where other text is
//! wanted. Values read back from the database or from stored JSON are
//! trusted as written; text from a request becomes an id through `parse`,
//! and a module key through the catalog's lookup (only a module the
//! catalog holds has one).

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

id_type!(
    /// An API key's id: `key_` and eight letters or digits. Jobs, gate
    /// decisions and revisions name people by it.
    KeyId
);

impl KeyId {
    const PREFIX: &str = "key_";
    /// Letters and digits after the prefix.
    const LEN: usize = 8;

    /// A new, random id.
    pub fn generate() -> KeyId {
        use rand::RngExt;
        let tail: String = rand::rng()
            .sample_iter(rand::distr::Alphanumeric)
            .take(Self::LEN)
            .map(char::from)
            .collect();
        KeyId(format!("{}{tail}", Self::PREFIX))
    }

    /// A key id as a request gives it; `None` for text no key can have.
    pub fn parse(text: &str) -> Option<KeyId> {
        let tail = text.strip_prefix(Self::PREFIX)?;
        let shaped = tail.len() == Self::LEN && tail.bytes().all(|b| b.is_ascii_alphanumeric());
        shaped.then(|| KeyId(text.to_string()))
    }
}

id_type!(
    /// A rule proposal's id (API.md section 14): `rpr_` and a ULID.
    ProposalId
);

impl ProposalId {
    const PREFIX: &str = "rpr_";

    /// A new id, later in order than every id made before it.
    pub fn generate() -> ProposalId {
        ProposalId(format!("{}{}", Self::PREFIX, ulid::Ulid::generate()))
    }

    /// A proposal id as a request gives it; `None` for text no proposal
    /// can have.
    pub fn parse(text: &str) -> Option<ProposalId> {
        let ulid = text.strip_prefix(Self::PREFIX)?;
        ulid::Ulid::from_string(ulid).ok()?;
        Some(ProposalId(text.to_string()))
    }
}

id_type!(
    /// An export's id (API.md section 15): `exp_` and a ULID. The ledger
    /// names an export by it.
    ExportId
);

impl ExportId {
    const PREFIX: &str = "exp_";

    /// A new id, later in order than every id made before it.
    pub fn generate() -> ExportId {
        ExportId(format!("{}{}", Self::PREFIX, ulid::Ulid::generate()))
    }
}

id_type!(
    /// A module's key (`customers`), as the catalog names the module.
    ModuleKey
);

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
    fn a_generated_key_id_parses_and_nothing_else_does() {
        let id = KeyId::generate();
        assert_eq!(KeyId::parse(id.as_str()), Some(id.clone()));
        assert!(id.as_str().starts_with("key_"));
        for bad in [
            "",
            "key_",
            "key_short",
            "key_Ab3dEf7h9",
            "key_Ab3d-f7h",
            "job_Ab3dEf7h",
            "Ab3dEf7h",
        ] {
            assert_eq!(KeyId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_id_serialises_as_its_text() {
        let id = JobId::from_stored("job_1");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"job_1\"");
        assert_eq!(id.to_string(), "job_1");
    }
}
