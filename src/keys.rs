//! API keys, roles and the masking of people.
//!
//! A key is `igk_` + a 12-character lookup part + a 32-character secret
//! (base62, about 190 bits of randomness in the secret alone). The service
//! stores the lookup part and a SHA-256 of the whole key: the lookup part
//! finds the row, and the hash is compared in constant time. A fast hash is
//! enough because the key is random, not a password a person chose.

use chrono::{DateTime, Utc};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::ids::{KeyId, ModuleKey};

/// The recognisable prefix of every key, for secret scanners.
pub const PREFIX: &str = "igk_";
const LOOKUP_LEN: usize = 12;
const SECRET_LEN: usize = 32;

/// What a key may do.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Submitter,
    Approver,
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Submitter => "submitter",
            Role::Approver => "approver",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "submitter" => Some(Role::Submitter),
            "approver" => Some(Role::Approver),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }

    /// Whether this role may decide at the Human-Gate.
    pub fn can_decide(self) -> bool {
        self >= Role::Approver
    }
}

/// A key as the service knows it (never the secret).
#[derive(Debug, Clone)]
pub struct KeyRecord {
    pub id: KeyId,
    pub name: String,
    pub role: Role,
    /// `["*"]` or module keys.
    pub modules: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// The person the key belongs to (API.md section 1): four-eyes is
    /// counted by person, not by key.
    pub person_id: String,
    pub email: Option<String>,
    /// The key that issued this one; `None` for keys made at first start
    /// or on the command line.
    pub issued_by: Option<KeyId>,
    /// The person behind `issued_by`.
    pub issuer_person: Option<String>,
}

impl KeyRecord {
    /// Whether the key's scope covers a module.
    pub fn covers(&self, module: &ModuleKey) -> bool {
        self.modules
            .iter()
            .any(|m| m == "*" || m == module.as_str())
    }

    /// The modules this key may see, or `None` for all.
    pub fn scope(&self) -> Option<Vec<String>> {
        if self.modules.iter().any(|m| m == "*") {
            None
        } else {
            Some(self.modules.clone())
        }
    }

    /// Whether the key may be used now.
    pub fn is_live(&self, now: DateTime<Utc>) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|e| e > now)
    }

    pub fn person(&self) -> Person {
        Person::new(self.id.as_str(), &self.name)
    }
}

/// A person as shown anywhere outside the key table: key id and masked name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Person {
    pub key_id: String,
    pub display: String,
}

impl Person {
    pub fn new(key_id: &str, name: &str) -> Person {
        Person {
            key_id: key_id.to_string(),
            display: mask(name),
        }
    }
}

/// `andrea` → `an***a`; names of three characters or fewer → `***`.
pub fn mask(name: &str) -> String {
    let chars: Vec<char> = name.trim().chars().collect();
    if chars.len() <= 3 {
        return "***".to_string();
    }
    let first: String = chars[..2].iter().collect();
    format!("{first}***{}", chars[chars.len() - 1])
}

/// An email address as a person gave it, trimmed, checked once at the edge:
/// at most 254 bytes, no spaces or control characters, a local part and a
/// domain with a dot (`name@example.co.id`). Whether it reaches anyone is
/// not this type's business: it only refuses what cannot be an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email(String);

/// Text that [`Email::parse`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("email must be an address like name@example.co.id")]
pub struct NotAnEmail;

impl Email {
    pub fn parse(text: &str) -> Result<Email, NotAnEmail> {
        let email = text.trim();
        let ok = email.len() <= 254
            && !email.chars().any(|c| c.is_whitespace() || c.is_control())
            && email
                .split_once('@')
                .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.'));
        if ok {
            Ok(Email(email.to_string()))
        } else {
            Err(NotAnEmail)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// An email address, masked like a name (`budi@contoh.id` → `bu***d`):
/// an address names a person as surely as a name does.
pub fn mask_email(email: &str) -> String {
    mask(email)
}

/// Where a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = KeyRequestState)]
pub enum RequestState {
    Pending,
    Approved,
    Denied,
    /// Approved, and the key was handed out (once).
    Collected,
    /// Not decided within its time, or approved and not collected within
    /// its time.
    Expired,
    /// Approved, then withdrawn by an admin before it was collected.
    Withdrawn,
}

impl RequestState {
    pub const ALL: [RequestState; 6] = [
        RequestState::Pending,
        RequestState::Approved,
        RequestState::Denied,
        RequestState::Collected,
        RequestState::Expired,
        RequestState::Withdrawn,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RequestState::Pending => "pending",
            RequestState::Approved => "approved",
            RequestState::Denied => "denied",
            RequestState::Collected => "collected",
            RequestState::Expired => "expired",
            RequestState::Withdrawn => "withdrawn",
        }
    }

    pub fn parse(s: &str) -> Option<RequestState> {
        RequestState::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// A request for a key from the developer center (API.md section 7).
/// The claim token itself is never kept, only its hash.
#[derive(Debug, Clone)]
pub struct KeyRequest {
    pub id: String,
    pub name: String,
    pub email: String,
    pub role: Role,
    pub modules: Vec<String>,
    pub reason: String,
    pub claim_hash: String,
    pub state: RequestState,
    pub created_at: DateTime<Utc>,
    pub decided_at: Option<DateTime<Utc>>,
    /// The admin key that decided.
    pub decided_by: Option<KeyId>,
    pub comment: Option<String>,
    /// The key made at collection.
    pub key_id: Option<KeyId>,
    pub collected_at: Option<DateTime<Utc>>,
    /// The client address the request came from (admins see it, to deny
    /// a flood from one address at once).
    pub client: Option<String>,
}

/// A newly made key: the secret to show once, and what is stored.
pub struct NewKey {
    pub id: KeyId,
    pub secret: String,
    pub lookup: String,
    pub hash: String,
}

fn base62(n: usize) -> String {
    rand::rng()
        .sample_iter(rand::distr::Alphanumeric)
        .take(n)
        .map(char::from)
        .collect()
}

/// A new person's id (`per_…`).
pub fn person_id() -> String {
    format!("per_{}", base62(8))
}

/// Makes a fresh key.
pub fn generate() -> NewKey {
    let lookup = base62(LOOKUP_LEN);
    let secret = format!("{PREFIX}{lookup}{}", base62(SECRET_LEN));
    NewKey {
        id: KeyId::generate(),
        hash: hash(&secret),
        lookup,
        secret,
    }
}

/// A fresh random token (claim tokens, session ids).
pub fn token(n: usize) -> String {
    base62(n)
}

/// SHA-256 of a key, hex.
pub fn hash(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// The lookup part of a presented key, if it has the key's shape.
pub fn lookup_part(presented: &str) -> Option<&str> {
    let rest = presented.strip_prefix(PREFIX)?;
    if rest.len() != LOOKUP_LEN + SECRET_LEN || !rest.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    Some(&rest[..LOOKUP_LEN])
}

/// Compares a presented key with a stored hash in constant time.
pub fn matches(presented: &str, stored_hash: &str) -> bool {
    hash(presented)
        .as_bytes()
        .ct_eq(stored_hash.as_bytes())
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_as_the_contract_says() {
        assert_eq!(mask("andrea"), "an***a");
        assert_eq!(mask("Budi Santoso"), "Bu***o");
        assert_eq!(mask("Ani"), "***");
        assert_eq!(mask("Ñandú Ç"), "Ña***Ç");
    }

    #[test]
    fn keys_are_found_and_matched() {
        let k = generate();
        assert!(k.secret.starts_with("igk_"));
        assert_eq!(lookup_part(&k.secret), Some(k.lookup.as_str()));
        assert!(matches(&k.secret, &k.hash));
        // One character changed (to one it is not: the secret may end in x).
        let last = if k.secret.ends_with('x') { "y" } else { "x" };
        assert!(!matches(
            &format!("{}{last}", &k.secret[..k.secret.len() - 1]),
            &k.hash
        ));
        assert_eq!(lookup_part("igk_short"), None);
    }
}
