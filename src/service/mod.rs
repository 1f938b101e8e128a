//! The service layer: what people and workers do with importgate, written
//! once for every front door. The API (`http`), the console (`console`),
//! the workers (`worker`), the demo and the command line call these
//! operations with typed inputs and the acting key; each returns domain
//! values or one [`Error`].
//!
//! Below it: the ledger's pure rules (the state table, the gate), ingest,
//! validate and commit, and the store. Above it: transport only.
//!
//! - [`uploads`]: a file becomes a validation job;
//! - [`jobs`]: reading jobs, their preview, errors and events;
//! - [`gate`]: a person's move at the Human-Gate;
//! - [`work`]: the service's own moves (validation, commit, rollback, expiry);
//! - [`retention`]: purging what jobs past retention or their rollback window left;
//! - [`keys`] and [`key_requests`]: credentials;
//! - [`modules`]: the catalog and its templates;
//! - [`export`]: a module's rows as a file to edit and import again;
//! - [`sessions`]: the console's sign-in;
//! - [`audit`]: checking the ledger's hash chain and the jobs against it;
//! - [`seal`]: the ledger's key and checkpoint, kept outside the database;
//! - [`limits`]: the per-key rate limits both front doors count against;
//! - [`events`]: the ledger as events for clients (the feed and the stream);
//! - [`moves`]: telling those who wait that a job moved;
//! - [`views`]: the job as clients see it, in answers and in events;
//! - [`webhooks`]: endpoints admins register and the worker that delivers
//!   events to them;
//! - [`rules`]: a module's rules, their proposals and the decisions on them;
//! - [`retry`]: how long work that failed waits before it is tried again;
//! - [`seed`]: rows written into module tables outside the gate, for the
//!   demo only.

pub mod audit;
mod dropdowns;
pub mod error;
pub mod events;
pub mod export;
pub mod gate;
pub mod jobs;
pub mod key_requests;
pub mod keys;
pub mod limits;
pub mod mapping;
pub mod modules;
pub mod moves;
pub mod ods;
pub mod oidc;
pub mod packing;
pub mod parts;
pub mod reports;
pub mod retention;
pub mod retry;
pub mod revisions;
pub mod rows_file;
pub mod rules;
pub mod rules_catalog;
pub mod seal;
pub mod seed;
pub mod sessions;
pub mod tail;
pub mod traffic;
pub mod uploads;
pub mod views;
pub mod webhooks;
pub mod work;
pub mod workbooks;

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::{Notify, watch};

pub use error::{Error, Result};

use crate::catalog::{Catalog, Module};
use crate::config::Settings;
use crate::ids::ModuleKey;
use crate::keys::{KeyRecord, Role};
use crate::store::{self, Db};
use limits::Limiter;

/// Shared state of one process: what every operation works on.
pub struct App {
    pub db: Db,
    pub catalog: Arc<Catalog>,
    /// The rule sets the catalog ships as its modules' version 1.
    pub catalog_rules: rules_catalog::CatalogRules,
    pub settings: Settings,
    /// Woken when a job needs a worker (an upload, an approval).
    pub work: Notify,
    /// Told whenever a transaction of this process that appended to the
    /// ledger commits: a job's move, a key's or a key request's event.
    /// [`jobs::wait`] listens to its job, the event streams
    /// ([`events::follow`]) and the webhook worker to every append; another
    /// replica's events are found by reading the database again.
    pub moves: moves::Moves,
    /// Flips to true when the process is shutting down.
    pub shutdown: watch::Sender<bool>,
    /// Requests per key counted by this process.
    pub limiter: Limiter,
    /// Requests a second this process answers; background work yields to
    /// them.
    pub traffic: traffic::Traffic,
    /// The ledger's key and checkpoint.
    pub seal: seal::Seal,
    /// Keys found to agree with their ledger events.
    pub checked_keys: keys::CheckedKeys,
    /// The live event streams open, per key.
    pub streams: events::Streams,
    /// The ledger's newest events, read once for every live stream.
    pub tail: tail::Tail,
}

impl App {
    /// Connects, migrates, and loads the catalog.
    pub async fn open(settings: Settings) -> anyhow::Result<Arc<App>> {
        let catalog = match &settings.catalog {
            Some(path) => Catalog::from_file(path)?,
            None => Catalog::builtin(),
        };
        let catalog_rules = rules_catalog::CatalogRules::compile(&catalog)?;
        let db = Db::connect_with(&settings.database, settings.sqlite_busy).await?;
        db.migrate(&catalog).await?;
        let seal = seal::Seal::open(&db, &settings).await?;
        let (shutdown, _) = watch::channel(false);
        let limiter = Limiter::new(
            settings.limits.uploads_per_minute,
            settings.limits.requests_per_minute,
        );
        Ok(Arc::new(App {
            limiter,
            db,
            catalog: Arc::new(catalog),
            catalog_rules,
            settings,
            work: Notify::new(),
            moves: moves::Moves::default(),
            traffic: traffic::Traffic::default(),
            shutdown,
            seal,
            checked_keys: keys::CheckedKeys::default(),
            streams: events::Streams::default(),
            tail: tail::Tail::default(),
        }))
    }

    /// The module with this key, or [`Error::UnknownModule`] listing them.
    pub fn module(&self, key: &str) -> Result<&Arc<Module>> {
        self.catalog.get(key).ok_or_else(|| Error::UnknownModule {
            key: key.to_string(),
            valid: self
                .catalog
                .keys()
                .into_iter()
                .map(str::to_string)
                .collect(),
        })
    }

    /// Whether the database takes writes, with room to grow beyond the
    /// space kept free (for readiness).
    pub async fn ready(&self) -> bool {
        if !self.db.ping(std::time::Duration::from_secs(2)).await {
            return false;
        }
        match self.db.room(self.settings.disk_reserve_bytes).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, "not ready: the database's disk is full");
                false
            }
        }
    }

    /// Names behind key ids, for masking people when they are shown.
    pub async fn names(&self) -> Result<HashMap<String, String>> {
        let mut c = self.db.acquire().await?;
        Ok(store::keys::names(&mut c.conn()).await?)
    }
}

/// [`Error::Forbidden`] unless the key's scope covers the module.
pub fn in_scope(actor: &KeyRecord, module: &ModuleKey) -> Result<()> {
    if actor.covers(module) {
        Ok(())
    } else {
        Err(Error::Forbidden(format!(
            "this key's scope does not include the module {module}"
        )))
    }
}

/// [`Error::Forbidden`], naming the first module out of scope, unless the
/// key's scope covers every module whose rows the job holds (a workbook
/// job's every part, API.md section 16).
pub fn job_in_scope(actor: &KeyRecord, job: &crate::ledger::Job) -> Result<()> {
    job.modules()
        .into_iter()
        .try_for_each(|m| in_scope(actor, m))
}

/// The module of a one-module job. A workbook job (API.md section 16) has
/// a module for each part, so what works on one module's job (`what`: a
/// revision, a mapping, …) is refused on it.
pub fn module_of_job<'a>(
    app: &'a App,
    job: &crate::ledger::Job,
    what: &str,
) -> Result<&'a std::sync::Arc<crate::catalog::Module>> {
    match &job.module {
        Some(m) => app.module(m.as_str()),
        None => Err(Error::InvalidState {
            title: "A workbook job",
            detail: format!(
                "{} is a workbook job, with a part for each module: {what} works on a one-module job",
                job.id
            ),
            state: job.state.as_str().to_string(),
        }),
    }
}

/// [`Error::Forbidden`] unless the key is an admin's.
pub fn admin_only(actor: &KeyRecord) -> Result<()> {
    if actor.role == Role::Admin {
        Ok(())
    } else {
        Err(Error::Forbidden("only an admin key may do this".into()))
    }
}

/// A comment on a gate move or a key decision: trimmed, at most 2000
/// characters, no NUL (PostgreSQL text cannot hold one); empty is none.
pub fn comment(text: Option<&str>) -> Result<Option<String>> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    if text.contains('\0') {
        return Err(Error::invalid(
            "comment",
            "a comment may not hold NUL characters",
        ));
    }
    if text.chars().count() > 2000 {
        return Err(Error::invalid(
            "comment",
            "a comment has at most 2000 characters",
        ));
    }
    Ok(Some(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_bounded_and_hold_no_nul() {
        assert_eq!(comment(None).unwrap(), None);
        assert_eq!(comment(Some("  ")).unwrap(), None);
        assert_eq!(comment(Some(" ok ")).unwrap().as_deref(), Some("ok"));
        assert!(
            matches!(comment(Some("a\0b")), Err(Error::Invalid { parameter, .. }) if parameter == "comment")
        );
        assert!(comment(Some(&"x".repeat(2000))).is_ok());
        assert!(comment(Some(&"x".repeat(2001))).is_err());
    }
}
