//! Keys: an admin creates (the secret shown once), lists and revokes them;
//! every request's key is verified here, for the API and the console alike.

use chrono::{DateTime, Datelike, Utc};

use super::{App, Error, Result, admin_only};
use crate::keys::{self, KeyRecord, Role};
use crate::store;

/// What a new key is for: checked, so it cannot be wrong.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub name: String,
    pub role: Role,
    pub modules: Vec<String>,
    pub expires_at: Option<DateTime<Utc>>,
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
        Ok(NewKey {
            name: name.to_string(),
            role,
            modules,
            expires_at,
        })
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
    Ok(record)
}

/// The key with this id, live or not, if there is one.
pub async fn find(app: &App, id: &str) -> Result<Option<KeyRecord>> {
    let mut c = app.db.acquire().await?;
    Ok(store::keys::get(&mut c.conn(), id).await?)
}

/// Makes and stores a new key (an admin's act, or the first start's);
/// gives its record and the secret to show once.
pub async fn issue(app: &App, new: &NewKey) -> Result<(KeyRecord, String)> {
    let key = keys::generate();
    let mut c = app.db.acquire().await?;
    let record = store::keys::insert(
        &mut c.conn(),
        &key,
        &new.name,
        new.role,
        &new.modules,
        new.expires_at,
    )
    .await?;
    Ok((record, key.secret))
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
    let (record, secret) = issue(app, new).await?;
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
pub async fn revoke(app: &App, actor: &KeyRecord, id: &str) -> Result<KeyRecord> {
    admin_only(actor)?;
    let mut c = app.db.acquire().await?;
    let target = store::keys::get(&mut c.conn(), id)
        .await?
        .ok_or_else(|| Error::not_found("key", id))?;
    within_scope(actor, &target.modules)?;
    if !store::keys::revoke(&mut c.conn(), id).await? {
        return Err(Error::not_found("key", id));
    }
    let record = store::keys::get(&mut c.conn(), id)
        .await?
        .ok_or_else(|| Error::not_found("key", id))?;
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
    let key = keys::generate();
    store::keys::insert(
        &mut tx.conn(),
        &key,
        "admin",
        Role::Admin,
        &["*".to_string()],
        None,
    )
    .await?;
    tx.commit().await?;
    Ok(Some(key.secret))
}
