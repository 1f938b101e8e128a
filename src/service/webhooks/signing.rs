//! Signing, the Standard Webhooks way: every delivery carries an id, a
//! timestamp and an HMAC-SHA256 signature over both and the body, so a
//! receiver can tell the service's requests from anyone else's and refuse
//! a replayed one.
//!
//! An endpoint's secret is not stored: it is derived from the ledger's key
//! (kept outside the database, [`crate::service::seal`]) and the
//! endpoint's salt, so reading the database does not give it away. It is
//! shown once, when the endpoint is registered.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::Utc;
use hmac::{KeyInit, Mac};

use crate::service::App;
use crate::webhooks::Webhook;

/// The prefix of a signing secret, as Standard Webhooks writes it.
pub const SECRET_PREFIX: &str = "whsec_";

/// An endpoint's signing secret as its receiver configures it (`whsec_` +
/// base64 of 32 bytes).
pub fn secret(app: &App, w: &Webhook) -> String {
    format!("{SECRET_PREFIX}{}", BASE64.encode(secret_bytes(app, w)))
}

/// The headers that sign a message to `w` now: `webhook-id`,
/// `webhook-timestamp` and `webhook-signature`.
pub fn headers(app: &App, w: &Webhook, id: &str, body: &str) -> [(&'static str, String); 3] {
    let timestamp = Utc::now().timestamp();
    let signature = sign(&secret_bytes(app, w), id, timestamp, body);
    [
        ("webhook-id", id.to_string()),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-signature", signature),
    ]
}

/// The Standard Webhooks signature of a message: `v1,` + base64 of
/// HMAC-SHA256 over `{id}.{timestamp}.{body}` under the secret's bytes.
pub fn sign(secret: &[u8], id: &str, timestamp: i64, body: &str) -> String {
    let mut mac =
        <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(secret).expect("any key length");
    mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
    format!("v1,{}", BASE64.encode(mac.finalize().into_bytes()))
}

/// The secret's bytes: the same for an endpoint as long as the ledger's
/// key and its salt are.
fn secret_bytes(app: &App, w: &Webhook) -> [u8; 32] {
    app.seal.key.derive(
        "importgate webhook secret",
        &[w.id.as_bytes(), b"\n", w.salt.as_bytes()],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification.
    #[test]
    fn the_signature_is_the_standard_webhooks_one() {
        let secret = BASE64.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            sign(&secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }
}
