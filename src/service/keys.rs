//! Keys: an admin creates (the secret shown once), lists and revokes them;
//! every request's key is verified here, for the API and the console alike.

use chrono::{DateTime, Datelike, Utc};
use serde_json::json;

use super::{App, Error, Result, admin_only};
use crate::ids::KeyId;
use crate::keys::{self, KeyRecord, Role};
use crate::ledger::key_replay;
use crate::store::{self, ledger::Entry};

/// What a new key is for: checked, so it cannot be wrong.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub name: String,
    pub role: Role,
    pub modules: Vec<String>,
    pub expires_at: Option<DateTime<Utc>>,
    pub email: Option<String>,
    /// The person the key is added to; `None` makes a new person.
    pub person_id: Option<String>,
}

impl NewKey {
    /// Checks a key's holder, role, scope and expiry as a person gave them
    /// (shared by key requests). `modules` empty means every module.
    pub fn parse(
        app: &App,
        name: &str,
        role: &str,
        modules: Vec<String>,
        expires_at: Option<DateTime<Utc>>,
    ) -> Result<NewKey> {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > 200 {
            return Err(Error::invalid("name", "name must have 1 to 200 characters"));
        }
        if name.contains('\0') {
            return Err(Error::invalid("name", "name may not hold NUL characters"));
        }
        let role = Role::parse(role).ok_or_else(|| {
            Error::invalid(
                "role",
                format!("{role:?} is not submitter, approver or admin"),
            )
        })?;
        if modules.is_empty() {
            return Err(Error::invalid(
                "modules",
                "modules must list module keys or \"*\"",
            ));
        }
        // A list longer than the catalog can only be repeats: refused
        // before anything is looked at (a request is open to anyone).
        let most = app.catalog.modules().len() + 1;
        if modules.len() > most {
            return Err(Error::invalid(
                "modules",
                format!(
                    "modules lists {} entries; there are {} modules",
                    modules.len(),
                    most - 1
                ),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        let modules: Vec<String> = modules
            .into_iter()
            .filter(|m| seen.insert(m.clone()))
            .collect();
        for m in &modules {
            if m != "*" && app.catalog.get(m).is_none() {
                return Err(Error::invalid("modules", format!("{m:?} is not a module")));
            }
        }
        if let Some(at) = expires_at
            && !(1..=9999).contains(&at.year())
        {
            return Err(Error::invalid(
                "expires_at",
                "expires_at must be a time in the years 1 to 9999",
            ));
        }
        if let Some(at) = expires_at
            && at <= store::now()
        {
            return Err(Error::invalid(
                "expires_at",
                format!(
                    "expires_at {} is in the past: give a time to come, or leave it out for a key that does not expire",
                    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                ),
            ));
        }
        Ok(NewKey {
            name: name.to_string(),
            role,
            modules,
            expires_at,
            email: None,
            person_id: None,
        })
    }

    /// The key with the holder's email and the person it is added to, as
    /// a person gave them (checked; an unknown person is refused when the
    /// key is issued).
    pub fn held_by(mut self, email: Option<&str>, person_id: Option<&str>) -> Result<NewKey> {
        if let Some(email) = email.map(str::trim).filter(|e| !e.is_empty()) {
            self.email = Some(keys::Email::parse(email)?.into_string());
        }
        if let Some(p) = person_id.map(str::trim).filter(|p| !p.is_empty()) {
            let shaped = p.len() <= 64
                && p.starts_with("per_")
                && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !shaped {
                return Err(Error::invalid(
                    "person_id",
                    format!("{p:?} is not a person id (per_…)"),
                ));
            }
            self.person_id = Some(p.to_string());
        }
        Ok(self)
    }
}

/// The live key a presented secret belongs to, or [`Error::Unauthorized`]
/// (unknown, revoked or expired alike).
pub async fn verify(app: &App, presented: &str) -> Result<KeyRecord> {
    let lookup = keys::lookup_part(presented).ok_or(Error::Unauthorized)?;
    let mut c = app.db.acquire().await?;
    let (record, hash) = store::keys::by_lookup(&mut c.conn(), lookup)
        .await?
        .ok_or(Error::Unauthorized)?;
    if !keys::matches(presented, &hash) || !record.is_live(Utc::now()) {
        return Err(Error::Unauthorized);
    }
    if !app.checked_keys.holds(&record) && !agrees_with_ledger(app, &mut c.conn(), &record).await? {
        return Err(Error::Unauthorized);
    }
    Ok(record)
}

/// A key id as a request gives it. Text no key can have is answered as
/// an id no key has: `not_found`, naming it.
pub fn parse_id(text: &str) -> Result<KeyId> {
    KeyId::parse(text).ok_or_else(|| Error::not_found("key", text))
}

/// Whether a key row is what its ledger events made it (API.md section 9):
/// each of its links hashes under the ledger's key, and the row's role,
/// scope, person, issuer, expiry and revocation agree with them. A key
/// that disagrees is refused as if unknown, and the log says why. Keys
/// that agree are remembered by their row's content, so a key is read
/// against its events once, and again whenever its row changes.
async fn agrees_with_ledger(
    app: &App,
    conn: &mut store::Conn<'_>,
    key: &KeyRecord,
) -> Result<bool> {
    let links = store::ledger::links_of(conn, key.id.as_str()).await?;
    let forged = links
        .iter()
        .find(|(e, prev, hash)| e.hash(&app.seal.key, prev) != *hash);
    let events: Vec<_> = links.iter().map(|(e, _, _)| e.clone()).collect();
    let why = match forged {
        Some((e, _, _)) => Some(format!(
            "its event {} does not hash under the ledger's key",
            e.n
        )),
        None => {
            // The ledger's first key event is looked for (a scan of the
            // events) only for a key that has none of its own.
            let first = if key_replay::has_created(&events) {
                None
            } else {
                store::ledger::first_key_event(conn).await?
            };
            key_replay::distrust(key, &events, first)
        }
    };
    if let Some(why) = why {
        tracing::error!(key_id = %key.id, why = %why, "a key row disagrees with the ledger; refused");
        return Ok(false);
    }
    app.checked_keys.remember(key);
    Ok(true)
}

/// Keys whose rows were found to agree with their events, by the content
/// of the row then: a changed row is checked again.
#[derive(Default)]
pub struct CheckedKeys(std::sync::Mutex<std::collections::HashMap<KeyId, String>>);

impl CheckedKeys {
    fn content(key: &KeyRecord) -> String {
        format!(
            "{}|{}|{}|{:?}|{:?}|{:?}",
            key.role.as_str(),
            key.modules.join(","),
            key.person_id,
            key.issued_by,
            key.expires_at,
            key.revoked_at
        )
    }

    fn holds(&self, key: &KeyRecord) -> bool {
        let seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
        seen.get(&key.id) == Some(&Self::content(key))
    }

    fn remember(&self, key: &KeyRecord) {
        let mut seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
        seen.insert(key.id.clone(), Self::content(key));
    }
}

/// The key with this id, live or not, if there is one.
pub async fn find(app: &App, id: &KeyId) -> Result<Option<KeyRecord>> {
    let mut c = app.db.acquire().await?;
    Ok(store::keys::get(&mut c.conn(), id).await?)
}

/// Makes and stores a new key (an admin's act, the command line's, or a
/// collected key request's), with its ledger event; gives its record and
/// the secret to show once. `issuer` is the key that issues it.
pub async fn issue(
    app: &App,
    new: &NewKey,
    issuer: Option<&KeyRecord>,
) -> Result<(KeyRecord, String)> {
    let mut tx = app.db.begin().await?;
    let (record, secret) = issue_in(app, &mut tx.conn(), new, issuer, None).await?;
    tx.commit().await?;
    app.moves.other();
    super::seal::checkpoint_now(app).await;
    Ok((record, secret))
}

/// [`issue`] in the caller's transaction; `request` names the key request
/// the key answers, for the ledger.
pub(super) async fn issue_in(
    app: &App,
    conn: &mut store::Conn<'_>,
    new: &NewKey,
    issuer: Option<&KeyRecord>,
    request: Option<&str>,
) -> Result<(KeyRecord, String)> {
    let person = match &new.person_id {
        Some(p) if store::keys::person_exists(conn, p).await? => p.clone(),
        Some(p) => {
            return Err(Error::invalid(
                "person_id",
                format!(
                    "no key belongs to the person {p}; leave person_id out to make a new person"
                ),
            ));
        }
        None => keys::person_id(),
    };
    let key = keys::generate();
    let holder = store::keys::Holder {
        name: &new.name,
        email: new.email.as_deref(),
        person_id: &person,
        role: new.role,
        modules: &new.modules,
        expires_at: new.expires_at,
        issued_by: issuer,
    };
    let record = store::keys::insert(conn, &key, &holder).await?;
    let detail = json!({
        "role": record.role.as_str(),
        "modules": record.modules,
        "person_id": record.person_id,
        "issued_by": record.issued_by,
        "expires_at": record.expires_at.map(|t| crate::ledger::job::time(&t)),
        "request": request,
    });
    log(
        app,
        conn,
        record.id.as_str(),
        "key_created",
        (None, "active"),
        issuer,
        detail,
    )
    .await?;
    Ok((record, key.secret))
}

/// Appends a key's or a key request's event to the ledger (API.md
/// section 7), in the caller's transaction. `states` is (from, to).
pub(super) async fn log(
    app: &App,
    conn: &mut store::Conn<'_>,
    subject: &str,
    event: &str,
    states: (Option<&str>, &str),
    actor: Option<&KeyRecord>,
    detail: serde_json::Value,
) -> Result<()> {
    let entry = Entry {
        subject,
        at: store::now(),
        event,
        from: states.0,
        to: states.1,
        actor: actor.map(|k| k.id.as_str()),
        comment: None,
        detail: Some(detail),
        modules: vec![],
    };
    Ok(store::ledger::append(conn, &app.seal.key, entry).await?)
}

/// An admin with a module scope manages keys only within it (API.md
/// section 1): it cannot make, approve or widen a key beyond its modules,
/// nor give `*`.
pub fn within_scope(actor: &KeyRecord, modules: &[String]) -> Result<()> {
    let Some(own) = actor.scope() else {
        return Ok(());
    };
    let outside: Vec<&str> = modules
        .iter()
        .filter(|m| *m == "*" || !own.contains(m))
        .map(String::as_str)
        .collect();
    if outside.is_empty() {
        Ok(())
    } else {
        Err(Error::Forbidden(format!(
            "this admin key covers only {}; it cannot give a key {}",
            own.join(", "),
            outside.join(", ")
        )))
    }
}

/// An admin creates a key: its record and the secret, shown once.
pub async fn create(app: &App, actor: &KeyRecord, new: &NewKey) -> Result<(KeyRecord, String)> {
    admin_only(actor)?;
    within_scope(actor, &new.modules)?;
    let (record, secret) = issue(app, new, Some(actor)).await?;
    tracing::info!(key_id = %record.id, by = %actor.id, role = new.role.as_str(), "key created");
    Ok((record, secret))
}

/// Every key an admin manages: all of them, or for an admin with a module
/// scope those within it.
pub async fn list(app: &App, actor: &KeyRecord) -> Result<Vec<KeyRecord>> {
    admin_only(actor)?;
    let mut c = app.db.acquire().await?;
    let keys = store::keys::list(&mut c.conn()).await?;
    Ok(keys
        .into_iter()
        .filter(|k| within_scope(actor, &k.modules).is_ok())
        .collect())
}

/// Revokes a key (admins); it stops working at once.
pub async fn revoke(app: &App, actor: &KeyRecord, id: &KeyId) -> Result<KeyRecord> {
    admin_only(actor)?;
    let mut tx = app.db.begin().await?;
    let target = store::keys::get(&mut tx.conn(), id)
        .await?
        .ok_or_else(|| Error::not_found("key", id.as_str()))?;
    within_scope(actor, &target.modules)?;
    if !store::keys::revoke(&mut tx.conn(), id).await? {
        return Err(Error::not_found("key", id.as_str()));
    }
    if target.revoked_at.is_none() {
        let detail = json!({"person_id": target.person_id});
        let states = (Some("active"), "revoked");
        log(
            app,
            &mut tx.conn(),
            id.as_str(),
            "key_revoked",
            states,
            Some(actor),
            detail,
        )
        .await?;
    }
    let record = store::keys::get(&mut tx.conn(), id)
        .await?
        .ok_or_else(|| Error::not_found("key", id.as_str()))?;
    tx.commit().await?;
    app.moves.other();
    super::seal::checkpoint_now(app).await;
    tracing::info!(key_id = %id, by = %actor.id, "key revoked");
    Ok(record)
}

/// On a database with no keys at all, makes one admin key and returns
/// its secret (to be shown once).
pub async fn first_admin_key(app: &App) -> Result<Option<String>> {
    let mut tx = app.db.begin().await?;
    store::lock(&mut tx.conn(), store::Lock::FirstKey).await?;
    if store::keys::count(&mut tx.conn()).await? > 0 {
        tx.rollback().await?;
        return Ok(None);
    }
    let new = NewKey {
        name: "admin".into(),
        role: Role::Admin,
        modules: vec!["*".into()],
        expires_at: None,
        email: None,
        person_id: None,
    };
    let (_, secret) = issue_in(app, &mut tx.conn(), &new, None, None).await?;
    tx.commit().await?;
    app.moves.other();
    super::seal::checkpoint_now(app).await;
    Ok(Some(secret))
}
