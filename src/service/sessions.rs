//! Console sessions: signing in with a key makes a server-side session
//! that stands for the key until it ends. Only a hash of the session id is
//! kept, with the key id, a CSRF token and an expiry; the key itself is
//! not kept anywhere. Every use re-reads the key, so a revoked or expired
//! key ends its sessions at once.

use chrono::Duration;

use super::{App, Result};
use crate::keys::{self, KeyRecord};
use crate::store::{self, sessions};

/// A session ends this long after its last use.
pub const IDLE: Duration = Duration::hours(1);
/// A session's expiry is written again at most this often.
const EXTEND_STEP: Duration = Duration::minutes(5);

/// A current session and its live key.
#[derive(Debug, Clone)]
pub struct Session {
    pub key: KeyRecord,
    pub csrf: String,
    /// The hash of the session id (what is stored).
    pub id_hash: String,
}

/// Signs in with a presented key: a new session's id (for the cookie,
/// shown nowhere else) and the key. Unknown, revoked or expired keys are
/// [`super::Error::Unauthorized`].
pub async fn open(app: &App, presented: &str) -> Result<(String, KeyRecord)> {
    let key = super::keys::verify(app, presented).await?;
    let id = open_for(app, &key).await?;
    tracing::info!(key_id = %key.id, "console sign-in");
    Ok((id, key))
}

/// A new session for `key` (a key presented, or the key standing for a
/// person the identity provider signed in): its id, for the cookie.
pub async fn open_for(app: &App, key: &KeyRecord) -> Result<String> {
    let id = keys::token(43);
    let csrf = keys::token(32);
    let now = store::now();
    let mut c = app.db.acquire().await?;
    sessions::sweep(&mut c.conn(), now).await?;
    sessions::insert(&mut c.conn(), &keys::hash(&id), &key.id, &csrf, now + IDLE).await?;
    Ok(id)
}

/// The session with this id, if it is current and its key live; its
/// expiry slides by [`IDLE`] up to `console_session_hours` after sign-in.
pub async fn find(app: &App, id: &str) -> Result<Option<Session>> {
    let id_hash = keys::hash(id);
    let now = store::now();
    let mut c = app.db.acquire().await?;
    let Some(s) = sessions::get(&mut c.conn(), &id_hash, now).await? else {
        return Ok(None);
    };
    let Some(key) = store::keys::get(&mut c.conn(), &s.key_id).await? else {
        return Ok(None);
    };
    let absolute = Duration::hours(i64::from(app.settings.console_session_hours));
    if !key.is_live(chrono::Utc::now()) || now >= s.created_at + absolute {
        sessions::delete(&mut c.conn(), &id_hash).await?;
        return Ok(None);
    }
    let wanted = (now + IDLE).min(s.created_at + absolute);
    if wanted - s.expires_at > EXTEND_STEP {
        sessions::extend(&mut c.conn(), &id_hash, wanted).await?;
    }
    Ok(Some(Session {
        key,
        csrf: s.csrf,
        id_hash,
    }))
}

/// Signs out: the session ends.
pub async fn close(app: &App, session: &Session) -> Result<()> {
    let mut c = app.db.acquire().await?;
    sessions::delete(&mut c.conn(), &session.id_hash).await?;
    tracing::info!(key_id = %session.key.id, "console sign-out");
    Ok(())
}
