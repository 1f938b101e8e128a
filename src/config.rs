//! Settings: defaults that run on a laptop, overridden by an optional TOML
//! file, then `IMPORTGATE_*` environment variables, then flags (clap reads
//! the last two; this module merges the file under them).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono_tz::Tz;
use serde::Deserialize;

/// Limits of API.md section 10.
#[derive(Debug, Clone)]
pub struct Limits {
    pub body_bytes: u64,
    pub rows: u64,
    pub columns: usize,
    pub cell_bytes: usize,
    pub approval_secs: i64,
    /// How long after its commit a job may be rolled back; after it the
    /// job's staged rows and stored file are purged (`rollback_days`).
    pub rollback_secs: i64,
    /// How long the stored file and staged rows of a job that ended
    /// without a commit are kept after its last move (`retention_days`).
    pub retention_secs: i64,
    /// Uploads per key per minute (0: no limit).
    pub uploads_per_minute: u64,
    /// Other API requests per key per minute (0: no limit).
    pub requests_per_minute: u64,
    /// An upload's body must average this many bytes a second once
    /// `body_grace` has passed …
    pub body_min_rate: u64,
    pub body_grace: Duration,
    /// … and end within this (API.md section 10: `408`, nothing kept).
    pub body_total: Duration,
    /// Live event streams one key may hold open in this process.
    pub streams_per_key: usize,
    /// Live event streams this process serves in all.
    pub streams_total: usize,
}

/// How connections are served (API.md section 10).
#[derive(Debug, Clone, Copy)]
pub struct Connections {
    /// A request head must arrive within this, or the connection closes.
    pub header_read: Duration,
    /// A kept-alive connection with nothing to do closes after this.
    pub idle: Duration,
    /// Connections open at once; further ones wait to be accepted.
    pub max_open: usize,
    /// Connections open at once from one address; further ones are refused.
    pub max_per_address: usize,
}

impl Default for Connections {
    fn default() -> Connections {
        Connections {
            header_read: Duration::from_secs(10),
            idle: Duration::from_secs(60),
            max_open: 4096,
            max_per_address: 64,
        }
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            body_bytes: 256 * 1024 * 1024,
            rows: 5_000_000,
            columns: 512,
            cell_bytes: 64 * 1024,
            approval_secs: 7 * 24 * 3600,
            rollback_secs: 90 * 24 * 3600,
            retention_secs: 30 * 24 * 3600,
            uploads_per_minute: 60,
            requests_per_minute: 1200,
            body_min_rate: 16 * 1024,
            body_grace: Duration::from_secs(30),
            body_total: Duration::from_secs(15 * 60),
            streams_per_key: 8,
            streams_total: 512,
        }
    }
}

/// Everything the service needs to run.
#[derive(Debug, Clone)]
pub struct Settings {
    pub listen: SocketAddr,
    pub database: String,
    pub simulate: bool,
    pub allow_self_approval: bool,
    /// A catalog file replacing the built-in one.
    pub catalog: Option<PathBuf>,
    /// Zone for timestamps written without an offset.
    pub zone: Tz,
    /// Jobs validated, committed or rolled back at once by this process.
    pub workers: usize,
    /// How long a worker's claim on a job lasts without a heartbeat.
    pub lease_ms: i64,
    /// How often jobs waiting at the gate are checked for expiry.
    pub expiry_sweep_ms: u64,
    /// At shutdown, how long running work may go on before it is handed back.
    pub shutdown_grace_ms: u64,
    /// Attempts at a job's work that fail with the same error before the
    /// service gives up on it.
    pub work_attempts: i64,
    /// The wait after the first failed attempt; it doubles each time, up
    /// to five minutes.
    pub work_retry_ms: i64,
    /// Space kept free on a SQLite database's disk: below it uploads are
    /// refused (`503`) and a validation stops before its next batch, so
    /// that the stop itself, its record and the cleanup can still be
    /// written (API.md section 6). PostgreSQL's disk is the server's.
    pub disk_reserve_bytes: u64,
    /// A key request not decided within this many seconds expires.
    pub key_request_pending_secs: i64,
    /// An approved key request not collected within this many seconds
    /// expires.
    pub key_request_collect_secs: i64,
    pub limits: Limits,
    pub connections: Connections,
    /// How long a SQLite writer waits for another's lock before the
    /// request is answered `503`.
    pub sqlite_busy: Duration,
    /// This replica's name among the processes sharing the database (by
    /// default, for `serve`, `{hostname}:{port}`): a restarted process of
    /// the same instance takes its predecessor's work back at once.
    pub instance: Option<String>,
    /// The ledger's key, outside the database (API.md section 9); by
    /// default beside the SQLite file, or in the working directory.
    pub ledger_key_file: Option<PathBuf>,
    /// Where the chain's head is appended (same default place).
    pub ledger_checkpoint_file: Option<PathBuf>,
    pub webhooks: Webhooks,
    /// How often an event stream with nothing to send sends a comment, so
    /// that proxies keep it open (API.md section 13: 15 s).
    pub events_heartbeat_ms: u64,
    /// How often an event stream reads the ledger again for events other
    /// replicas appended (this process's own wake it at once).
    pub events_poll_ms: u64,
    /// A listener of its own for `/metrics` (API.md section 6); when set,
    /// the main listener does not serve it.
    pub metrics_listen: Option<SocketAddr>,
    /// A file holding the bearer token a scraper that is not on loopback
    /// shows to `/metrics` on the main listener.
    pub metrics_token_file: Option<PathBuf>,
    /// Console sign-in with the company's identity provider (API.md
    /// section 17).
    pub oidc: Oidc,
    /// Whether the console's sign-in page takes an API key.
    pub console_key_sign_in: bool,
    /// How long a console session lasts at most after sign-in.
    pub console_session_hours: u32,
}

/// The identity provider the console signs people in with (API.md
/// section 17): on when the issuer, client id, client secret file and
/// redirect URL are all set.
#[derive(Debug, Clone, Default)]
pub struct Oidc {
    pub issuer: Option<String>,
    pub client_id: Option<String>,
    pub client_secret_file: Option<PathBuf>,
    pub redirect_url: Option<String>,
    /// The provider's name on the sign-in button.
    pub display_name: Option<String>,
    /// The ID token's claim holding the groups (a string or an array of
    /// them): `groups` unless set (Google's `hd`, the Workspace domain).
    pub groups_claim: Option<String>,
    /// Group → role (`admin`, `approver`, `submitter`).
    pub roles: std::collections::BTreeMap<String, String>,
    /// Group → the modules it gives (all, for a group not named).
    pub modules: std::collections::BTreeMap<String, Vec<String>>,
    /// Whether a person the provider vouches for but importgate does not
    /// know is created at sign-in.
    pub create_persons: bool,
    /// Whether an issuer on plain `http` is accepted (tests).
    pub allow_http: bool,
}

impl Oidc {
    /// Whether the console offers sign-in with the provider.
    pub fn enabled(&self) -> bool {
        self.issuer.is_some()
            && self.client_id.is_some()
            && self.client_secret_file.is_some()
            && self.redirect_url.is_some()
    }

    /// Refuses a provider set in part, naming what is missing, and a
    /// mapping to a role that is none.
    pub fn check(&self) -> anyhow::Result<()> {
        let missing: Vec<&str> = [
            ("oidc_issuer", self.issuer.is_none()),
            ("oidc_client_id", self.client_id.is_none()),
            ("oidc_client_secret_file", self.client_secret_file.is_none()),
            ("oidc_redirect_url", self.redirect_url.is_none()),
        ]
        .into_iter()
        .filter_map(|(name, unset)| unset.then_some(name))
        .collect();
        if !missing.is_empty() && missing.len() < 4 {
            anyhow::bail!(
                "sign-in with an identity provider needs {} too",
                missing.join(", ")
            );
        }
        for (group, role) in &self.roles {
            if !["admin", "approver", "submitter"].contains(&role.as_str()) {
                anyhow::bail!(
                    "oidc_roles: group {group:?} maps to {role:?}, not admin, approver or submitter"
                );
            }
        }
        Ok(())
    }
}

/// How webhooks are delivered (API.md section 13).
#[derive(Debug, Clone, Copy)]
pub struct Webhooks {
    /// Let endpoints resolve to addresses that are not public
    /// (internal receivers, tests).
    pub allow_private: bool,
    /// The wait after the first failed attempt; it doubles each time, at
    /// most an hour.
    pub retry_base: Duration,
    /// How long a delivery is retried, and how long an endpoint may fail
    /// before it is disabled.
    pub retry_window: Duration,
    /// How long a receiver has to answer.
    pub timeout: Duration,
}

impl Default for Webhooks {
    fn default() -> Webhooks {
        Webhooks {
            allow_private: false,
            retry_base: Duration::from_secs(10),
            retry_window: Duration::from_secs(24 * 3600),
            timeout: Duration::from_secs(10),
        }
    }
}

impl Settings {
    /// The ledger key file and the checkpoint file, as set or by default
    /// (`importgate.ledger-key`, `importgate.ledger-checkpoint` beside a
    /// SQLite file, or in the working directory for PostgreSQL).
    pub fn ledger_files(&self) -> (PathBuf, PathBuf) {
        let dir = self
            .database
            .strip_prefix("sqlite://")
            .map(|p| p.split('?').next().unwrap_or(p))
            .and_then(|p| Path::new(p).parent())
            .map(Path::to_path_buf)
            .unwrap_or_default();
        (
            self.ledger_key_file
                .clone()
                .unwrap_or_else(|| dir.join("importgate.ledger-key")),
            self.ledger_checkpoint_file
                .clone()
                .unwrap_or_else(|| dir.join("importgate.ledger-checkpoint")),
        )
    }
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            database: "sqlite://importgate.db".into(),
            simulate: false,
            allow_self_approval: false,
            catalog: None,
            zone: chrono_tz::Asia::Jakarta,
            workers: 2,
            lease_ms: 30_000,
            expiry_sweep_ms: 30_000,
            shutdown_grace_ms: 10_000,
            work_attempts: 5,
            work_retry_ms: 5_000,
            disk_reserve_bytes: 64 << 20,
            key_request_pending_secs: 7 * 24 * 3600,
            key_request_collect_secs: 72 * 3600,
            limits: Limits::default(),
            connections: Connections::default(),
            sqlite_busy: Duration::from_secs(60),
            instance: None,
            ledger_key_file: None,
            ledger_checkpoint_file: None,
            webhooks: Webhooks::default(),
            events_heartbeat_ms: 15_000,
            events_poll_ms: 1_000,
            metrics_listen: None,
            metrics_token_file: None,
            oidc: Oidc::default(),
            console_key_sign_in: true,
            console_session_hours: 12,
        }
    }
}

/// The optional TOML file: every key may be left out.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSettings {
    pub listen: Option<SocketAddr>,
    pub database: Option<String>,
    pub simulate: Option<bool>,
    pub allow_self_approval: Option<bool>,
    pub catalog: Option<PathBuf>,
    pub timezone: Option<String>,
    pub workers: Option<usize>,
    pub lease_seconds: Option<i64>,
    pub shutdown_grace_seconds: Option<u64>,
    pub work_attempts: Option<i64>,
    pub work_retry_seconds: Option<f64>,
    pub disk_reserve_mb: Option<f64>,
    pub key_request_pending_days: Option<f64>,
    pub key_request_collect_hours: Option<f64>,
    pub max_body_bytes: Option<u64>,
    pub max_rows: Option<u64>,
    pub max_columns: Option<usize>,
    pub max_cell_bytes: Option<usize>,
    pub approval_days: Option<f64>,
    pub rollback_days: Option<f64>,
    pub retention_days: Option<f64>,
    pub uploads_per_minute: Option<u64>,
    pub requests_per_minute: Option<u64>,
    pub body_min_bytes_per_second: Option<u64>,
    pub body_grace_seconds: Option<f64>,
    pub body_total_seconds: Option<f64>,
    pub header_read_seconds: Option<f64>,
    pub idle_seconds: Option<f64>,
    pub max_connections: Option<usize>,
    pub max_connections_per_address: Option<usize>,
    pub sqlite_busy_seconds: Option<f64>,
    pub instance: Option<String>,
    pub ledger_key_file: Option<PathBuf>,
    pub ledger_checkpoint_file: Option<PathBuf>,
    pub webhook_allow_private: Option<bool>,
    pub webhook_retry_base_seconds: Option<f64>,
    pub webhook_retry_hours: Option<f64>,
    pub webhook_timeout_seconds: Option<f64>,
    pub metrics_listen: Option<SocketAddr>,
    pub metrics_token_file: Option<PathBuf>,
    pub oidc_issuer: Option<String>,
    pub oidc_client_id: Option<String>,
    pub oidc_client_secret_file: Option<PathBuf>,
    pub oidc_redirect_url: Option<String>,
    pub oidc_display_name: Option<String>,
    pub oidc_groups_claim: Option<String>,
    pub oidc_roles: Option<std::collections::BTreeMap<String, String>>,
    pub oidc_modules: Option<std::collections::BTreeMap<String, Vec<String>>>,
    pub oidc_create_persons: Option<bool>,
    pub oidc_allow_http: Option<bool>,
    pub console_key_sign_in: Option<bool>,
    pub console_session_hours: Option<u32>,
}

impl FileSettings {
    pub fn load(path: &Path) -> anyhow::Result<FileSettings> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    /// Applies the file over the defaults.
    pub fn apply(mut self, s: &mut Settings) -> anyhow::Result<()> {
        self.apply_sign_in(s);
        if let Some(v) = self.listen {
            s.listen = v;
        }
        if let Some(v) = self.metrics_listen {
            s.metrics_listen = Some(v);
        }
        if let Some(v) = self.metrics_token_file {
            s.metrics_token_file = Some(v);
        }
        if let Some(v) = self.database {
            s.database = v;
        }
        if let Some(v) = self.simulate {
            s.simulate = v;
        }
        if let Some(v) = self.allow_self_approval {
            s.allow_self_approval = v;
        }
        if let Some(v) = self.catalog {
            s.catalog = Some(v);
        }
        if let Some(v) = self.timezone {
            s.zone = parse_zone(&v)?;
        }
        if let Some(v) = self.workers {
            s.workers = v.max(1);
        }
        if let Some(v) = self.lease_seconds {
            s.lease_ms = v.max(1) * 1000;
        }
        if let Some(v) = self.shutdown_grace_seconds {
            s.shutdown_grace_ms = v * 1000;
        }
        if let Some(v) = self.work_attempts {
            s.work_attempts = v.max(1);
        }
        if let Some(v) = self.work_retry_seconds {
            s.work_retry_ms = (v * 1000.0).max(1.0) as i64;
        }
        if let Some(v) = self.disk_reserve_mb {
            s.disk_reserve_bytes = (v.max(0.0) * 1_048_576.0) as u64;
        }
        if let Some(v) = self.key_request_pending_days {
            s.key_request_pending_secs = (v * 86_400.0).max(1.0) as i64;
        }
        if let Some(v) = self.key_request_collect_hours {
            s.key_request_collect_secs = (v * 3600.0).max(1.0) as i64;
        }
        if let Some(v) = self.max_body_bytes {
            s.limits.body_bytes = v;
        }
        if let Some(v) = self.max_rows {
            s.limits.rows = v;
        }
        if let Some(v) = self.max_columns {
            s.limits.columns = v;
        }
        if let Some(v) = self.max_cell_bytes {
            s.limits.cell_bytes = v;
        }
        if let Some(v) = self.uploads_per_minute {
            s.limits.uploads_per_minute = v;
        }
        if let Some(v) = self.requests_per_minute {
            s.limits.requests_per_minute = v;
        }
        if let Some(v) = self.body_min_bytes_per_second {
            s.limits.body_min_rate = v.max(1);
        }
        if let Some(v) = self.body_grace_seconds {
            s.limits.body_grace = seconds(v)?;
        }
        if let Some(v) = self.body_total_seconds {
            s.limits.body_total = seconds(v)?;
        }
        if let Some(v) = self.header_read_seconds {
            s.connections.header_read = seconds(v)?;
        }
        if let Some(v) = self.idle_seconds {
            s.connections.idle = seconds(v)?;
        }
        if let Some(v) = self.max_connections {
            s.connections.max_open = v.max(1);
        }
        if let Some(v) = self.max_connections_per_address {
            s.connections.max_per_address = v.max(1);
        }
        if let Some(v) = self.sqlite_busy_seconds {
            s.sqlite_busy = seconds(v)?;
        }
        if let Some(v) = self.instance {
            s.instance = Some(v);
        }
        if let Some(v) = self.ledger_key_file {
            s.ledger_key_file = Some(v);
        }
        if let Some(v) = self.ledger_checkpoint_file {
            s.ledger_checkpoint_file = Some(v);
        }
        if let Some(v) = self.webhook_allow_private {
            s.webhooks.allow_private = v;
        }
        if let Some(v) = self.webhook_retry_base_seconds {
            s.webhooks.retry_base = seconds(v)?;
        }
        if let Some(v) = self.webhook_retry_hours {
            s.webhooks.retry_window = seconds(v * 3600.0)?;
        }
        if let Some(v) = self.webhook_timeout_seconds {
            s.webhooks.timeout = seconds(v)?;
        }
        if let Some(v) = self.approval_days {
            s.limits.approval_secs = (v * 86400.0) as i64;
        }
        if let Some(v) = self.rollback_days {
            s.limits.rollback_secs = day_secs(v)?;
        }
        if let Some(v) = self.retention_days {
            s.limits.retention_secs = day_secs(v)?;
        }
        Ok(())
    }

    /// The console's sign-in settings (API.md section 17).
    fn apply_sign_in(&mut self, s: &mut Settings) {
        let o = &mut s.oidc;
        o.issuer = self.oidc_issuer.take().or(o.issuer.take());
        o.client_id = self.oidc_client_id.take().or(o.client_id.take());
        o.client_secret_file =
            (self.oidc_client_secret_file.take()).or(o.client_secret_file.take());
        o.redirect_url = self.oidc_redirect_url.take().or(o.redirect_url.take());
        o.display_name = self.oidc_display_name.take().or(o.display_name.take());
        o.groups_claim = self.oidc_groups_claim.take().or(o.groups_claim.take());
        if let Some(v) = self.oidc_roles.take() {
            o.roles = v;
        }
        if let Some(v) = self.oidc_modules.take() {
            o.modules = v;
        }
        if let Some(v) = self.oidc_create_persons {
            o.create_persons = v;
        }
        if let Some(v) = self.oidc_allow_http {
            o.allow_http = v;
        }
        if let Some(v) = self.console_key_sign_in {
            s.console_key_sign_in = v;
        }
        if let Some(v) = self.console_session_hours {
            s.console_session_hours = v.max(1);
        }
    }
}

/// A setting in days (fractions allowed: tests use seconds' worth), as
/// whole seconds, at least one; negative or not a number is refused.
pub fn day_secs(v: f64) -> anyhow::Result<i64> {
    Ok((seconds(v * 86_400.0)?.as_secs_f64().round() as i64).max(1))
}

/// A zone name of the tz database (`Asia/Jakarta`, `UTC`, …).
pub fn parse_zone(name: &str) -> anyhow::Result<Tz> {
    name.parse::<Tz>().map_err(|_| {
        anyhow::anyhow!("unknown time zone {name:?} (use a tz database name such as Asia/Jakarta)")
    })
}

/// A setting in seconds (fractions allowed, so tests can use very short
/// times); negative or not a number is refused.
fn seconds(v: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(v).map_err(|_| anyhow::anyhow!("{v} is not a number of seconds"))
}
