//! Tables: the ledger's own (`ig_*`) and one per catalog module.
//!
//! Ledger migrations are numbered steps applied once each, recorded in
//! `ig_schema`. Module tables follow the catalog: created when missing, and a
//! column added to the catalog later is added to the table (never dropped).

use crate::catalog::{Catalog, ColumnType, Module};
use crate::on_conn;

use super::db::{Conn, Db};
use super::dialect::Dialect;
use super::error::Result;
use super::sql::ident;
use super::txn::{self, Lock};

impl Db {
    /// Creates or migrates the ledger tables and the module tables.
    pub async fn migrate(&self, catalog: &Catalog) -> Result<()> {
        migrate(self, catalog).await
    }
}

/// The ledger's migrations, in order. `{ts}` is a timestamp column type and
/// `{blob}` a byte column type, filled in per dialect.
const MIGRATIONS: &[&str] = &[
    // 1: keys, stored files, jobs, their rows, errors, change log and events.
    r#"
CREATE TABLE ig_keys (
    id          TEXT PRIMARY KEY,
    lookup      TEXT NOT NULL UNIQUE,
    hash        TEXT NOT NULL,
    name        TEXT NOT NULL,
    role        TEXT NOT NULL,
    modules     TEXT NOT NULL,
    created_at  {ts} NOT NULL,
    expires_at  {ts},
    revoked_at  {ts}
);
CREATE TABLE ig_blobs (
    sha256      TEXT PRIMARY KEY,
    upload_id   TEXT NOT NULL,
    bytes       BIGINT NOT NULL,
    created_at  {ts} NOT NULL
);
CREATE TABLE ig_blob_chunks (
    upload_id   TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    data        {blob} NOT NULL,
    created_at  {ts} NOT NULL,
    PRIMARY KEY (upload_id, seq)
);
CREATE TABLE ig_jobs (
    id              TEXT PRIMARY KEY,
    module          TEXT NOT NULL,
    target_table    TEXT NOT NULL,
    mode            TEXT NOT NULL,
    on_error        TEXT NOT NULL,
    options         TEXT NOT NULL,
    simulated       BOOLEAN NOT NULL,
    file_name       TEXT,
    file_format     TEXT NOT NULL,
    file_bytes      BIGINT NOT NULL,
    file_sha256     TEXT NOT NULL,
    submitter       TEXT NOT NULL,
    state           TEXT NOT NULL,
    version         BIGINT NOT NULL,
    counts          TEXT NOT NULL,
    warnings        TEXT NOT NULL,
    problem         TEXT,
    gate            TEXT,
    decisions       TEXT NOT NULL,
    created_at      {ts} NOT NULL,
    updated_at      {ts} NOT NULL,
    lease_owner     TEXT,
    lease_until     BIGINT
);
CREATE INDEX ig_jobs_state ON ig_jobs (state);
CREATE INDEX ig_jobs_module ON ig_jobs (module, id);
CREATE INDEX ig_jobs_submitter ON ig_jobs (submitter, id);
CREATE TABLE ig_job_rows (
    job_id      TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    row_no      BIGINT NOT NULL,
    action      TEXT NOT NULL,
    nkey        TEXT,
    vals        TEXT NOT NULL,
    before      TEXT,
    PRIMARY KEY (job_id, seq)
);
CREATE INDEX ig_job_rows_action ON ig_job_rows (job_id, action, seq);
CREATE INDEX ig_job_rows_nkey ON ig_job_rows (job_id, nkey);
CREATE TABLE ig_job_errors (
    job_id      TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    n           BIGINT NOT NULL,
    row_no      BIGINT NOT NULL,
    col         TEXT,
    value       TEXT,
    code        TEXT NOT NULL,
    message     TEXT NOT NULL,
    PRIMARY KEY (job_id, seq, n)
);
CREATE TABLE ig_job_changes (
    job_id      TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    row_no      BIGINT NOT NULL,
    op          TEXT NOT NULL,
    nkey        TEXT NOT NULL,
    before      TEXT,
    after       TEXT NOT NULL,
    PRIMARY KEY (job_id, seq)
);
CREATE TABLE ig_job_events (
    job_id      TEXT NOT NULL,
    n           BIGINT NOT NULL,
    at          {ts} NOT NULL,
    event       TEXT NOT NULL,
    from_state  TEXT,
    to_state    TEXT NOT NULL,
    actor       TEXT,
    comment     TEXT,
    detail      TEXT,
    seq         BIGINT NOT NULL UNIQUE,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL,
    PRIMARY KEY (job_id, n)
);
"#,
    // 2: console sessions and key requests.
    r#"
CREATE TABLE ig_sessions (
    id_hash     TEXT PRIMARY KEY,
    key_id      TEXT NOT NULL,
    csrf        TEXT NOT NULL,
    created_at  {ts} NOT NULL,
    expires_at  {ts} NOT NULL
);
CREATE INDEX ig_sessions_expires ON ig_sessions (expires_at);
CREATE TABLE ig_key_requests (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    email        TEXT NOT NULL,
    role         TEXT NOT NULL,
    modules      TEXT NOT NULL,
    reason       TEXT NOT NULL,
    claim_hash   TEXT NOT NULL,
    state        TEXT NOT NULL,
    created_at   {ts} NOT NULL,
    decided_at   {ts},
    decided_by   TEXT,
    comment      TEXT,
    key_id       TEXT,
    collected_at {ts}
);
CREATE INDEX ig_key_requests_state ON ig_key_requests (state, id);
"#,
    // 3: Idempotency-Key records of uploads.
    r#"
CREATE TABLE ig_idempotency (
    key_id      TEXT NOT NULL,
    idem_key    TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    job_id      TEXT NOT NULL,
    created_at  {ts} NOT NULL,
    PRIMARY KEY (key_id, idem_key)
);
"#,
    // 4: typed stage tables, one per module (created with the module
    // tables, see `stage`): jobs get a stage number and the list of the
    // columns their file gave. Existing jobs are numbered here; their rows
    // move out of ig_job_rows in `adopt_job_rows`. The change log goes: a
    // rollback restores the before-images staged with the rows.
    r#"
CREATE TABLE ig_counters (
    name        TEXT PRIMARY KEY,
    value       BIGINT NOT NULL
);
ALTER TABLE ig_jobs ADD COLUMN stage BIGINT;
ALTER TABLE ig_jobs ADD COLUMN columns TEXT;
UPDATE ig_jobs SET stage = numbered.n
    FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS n FROM ig_jobs) AS numbered
    WHERE ig_jobs.id = numbered.id;
INSERT INTO ig_counters (name, value) SELECT 'stage', COALESCE(MAX(stage), 0) FROM ig_jobs;
DROP TABLE ig_job_changes;
"#,
    // 5: row warnings (a reference the referenced table does not hold,
    // with on_missing = "warn"): like errors, but the row stays valid.
    r#"
CREATE TABLE ig_job_warnings (
    job_id      TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    n           BIGINT NOT NULL,
    row_no      BIGINT NOT NULL,
    col         TEXT,
    value       TEXT,
    code        TEXT NOT NULL,
    message     TEXT NOT NULL,
    PRIMARY KEY (job_id, seq, n)
);
"#,
    // 6: failed attempts at a job's work, so that work failing the same
    // way again and again ends (counted across restarts and replicas).
    r#"
ALTER TABLE ig_jobs ADD COLUMN attempts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ig_jobs ADD COLUMN last_error TEXT;
"#,
    // 7: key requests asked by each client address (refused ones too), for
    // the limit of API.md section 7; shared by every replica.
    r#"
CREATE TABLE ig_request_attempts (
    client      TEXT NOT NULL,
    at          {ts} NOT NULL
);
CREATE INDEX ig_request_attempts_client ON ig_request_attempts (client, at);
"#,
    // 8: persons (API.md section 1): a key belongs to a person, who may
    // hold several; each key records the key that issued it. Keys made
    // before this are each their own person. The fingerprint of the key
    // the ledger's chain is sealed with (section 9).
    r#"
ALTER TABLE ig_keys ADD COLUMN person_id TEXT;
ALTER TABLE ig_keys ADD COLUMN email TEXT;
ALTER TABLE ig_keys ADD COLUMN issued_by TEXT;
UPDATE ig_keys SET person_id = 'per_' || substr(id, 5);
CREATE INDEX ig_keys_person ON ig_keys (person_id);
CREATE TABLE ig_ledger_seal (
    fingerprint TEXT NOT NULL
);
"#,
    // 9: retention (API.md section 10).
    // `purged_at`: when the job's staged rows and stored file were purged
    // (once). The partial indexes keep the sweep's look-ups to the jobs
    // not purged yet, and to purged jobs whose stage rows are still being
    // removed (`stage` is set to NULL once they are all gone); the file
    // index finds the other jobs sharing a stored file.
    r#"
ALTER TABLE ig_jobs ADD COLUMN purged_at {ts};
CREATE INDEX ig_jobs_unpurged ON ig_jobs (state, updated_at) WHERE purged_at IS NULL;
CREATE INDEX ig_jobs_purging ON ig_jobs (id) WHERE purged_at IS NOT NULL AND stage IS NOT NULL;
CREATE INDEX ig_jobs_file ON ig_jobs (file_sha256);
"#,
    // 10: webhooks (API.md section 13): endpoints, the outbox of
    // deliveries written with the ledger's links, and their attempts.
    // An endpoint's signing secret is not stored: it is derived from the
    // ledger's key and `salt`.
    r#"
CREATE TABLE ig_webhooks (
    id              TEXT PRIMARY KEY,
    url             TEXT NOT NULL,
    events          TEXT NOT NULL,
    modules         TEXT NOT NULL,
    description     TEXT,
    salt            TEXT NOT NULL,
    enabled         BOOLEAN NOT NULL,
    disabled_reason TEXT,
    failing_since   {ts},
    created_by      TEXT NOT NULL,
    created_at      {ts} NOT NULL,
    updated_at      {ts} NOT NULL
);
CREATE TABLE ig_webhook_deliveries (
    id          TEXT PRIMARY KEY,
    webhook_id  TEXT NOT NULL,
    seq         BIGINT,
    subject     TEXT NOT NULL,
    event_type  TEXT NOT NULL,
    state       TEXT NOT NULL,
    attempts    BIGINT NOT NULL,
    next_at     BIGINT NOT NULL,
    lease_owner TEXT,
    lease_until BIGINT,
    body        TEXT,
    created_at  {ts} NOT NULL
);
CREATE INDEX ig_webhook_deliveries_due ON ig_webhook_deliveries (state, next_at);
CREATE INDEX ig_webhook_deliveries_order ON ig_webhook_deliveries (webhook_id, subject, seq);
CREATE INDEX ig_webhook_deliveries_log ON ig_webhook_deliveries (webhook_id, created_at);
CREATE TABLE ig_webhook_attempts (
    delivery_id TEXT NOT NULL,
    n           BIGINT NOT NULL,
    at          {ts} NOT NULL,
    status      BIGINT,
    latency_ms  BIGINT NOT NULL,
    error       TEXT,
    answer      TEXT,
    PRIMARY KEY (delivery_id, n)
);
"#,
    // 11: revisions (API.md section 11): the job a job revises, what the
    // revision changes (JSON: mapping, fixes, exclusions, who), and the
    // revision that took a job's place; the job whose id files the row
    // warnings of a stage handed to a revision; mappings saved for a
    // module under a file's exact set of headers (`header_set`: the sorted
    // headers as JSON, the lookup key).
    r#"
ALTER TABLE ig_jobs ADD COLUMN revision_of TEXT;
ALTER TABLE ig_jobs ADD COLUMN revision TEXT;
ALTER TABLE ig_jobs ADD COLUMN revised_as TEXT;
ALTER TABLE ig_jobs ADD COLUMN stage_owner TEXT;
CREATE TABLE ig_mappings (
    id          TEXT PRIMARY KEY,
    module      TEXT NOT NULL,
    header_set  TEXT NOT NULL,
    headers     TEXT NOT NULL,
    mapping     TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  {ts} NOT NULL
);
CREATE UNIQUE INDEX ig_mappings_headers ON ig_mappings (module, header_set);
"#,
    // 12: the saved mapping an upload was read with (JSON: its id and the
    // mapping as it was applied), so a retried validation, the mapping
    // view and a revision of the job see the same mapping after the
    // saved one changes or goes.
    r#"
ALTER TABLE ig_jobs ADD COLUMN mapping_applied TEXT;
"#,
    // 13: the delivery claim reads pending deliveries only: indexes over
    // them alone stay small however many were delivered, where the
    // claim's scan of the whole-table indexes grew with the log.
    r#"
DROP INDEX ig_webhook_deliveries_due;
DROP INDEX ig_webhook_deliveries_order;
CREATE INDEX ig_webhook_deliveries_due ON ig_webhook_deliveries (next_at) WHERE state = 'pending';
CREATE INDEX ig_webhook_deliveries_order ON ig_webhook_deliveries (webhook_id, subject, seq) WHERE state = 'pending';
"#,
    // 14: where the file's numbering jumps in each stage (`rows::breaks`):
    // a staged row is found by its number through these and the stage's
    // key, instead of through a `(job, row_no)` index of every stage table
    // (filled from the stages, and those indexes dropped, by
    // `adopt_breaks`).
    r#"
CREATE TABLE ig_stage_breaks (
    job         BIGINT NOT NULL,
    row_no      BIGINT NOT NULL,
    seq         BIGINT NOT NULL,
    PRIMARY KEY (job, row_no)
);
"#,
    // 15: how each stored chunk is encoded (`blobs::Packed`): 0 as it
    // came (every chunk stored before), 1 a zstd frame.
    r#"
ALTER TABLE ig_blob_chunks ADD COLUMN codec BIGINT NOT NULL DEFAULT 0;
"#,
];

fn fill(sql: &str, dialect: Dialect) -> String {
    let (ts, blob) = match dialect {
        // SQLite has no timestamp type; RFC 3339 text in UTC sorts correctly.
        Dialect::Sqlite => ("TEXT", "BLOB"),
        Dialect::Postgres => ("TIMESTAMPTZ", "BYTEA"),
    };
    sql.replace("{ts}", ts).replace("{blob}", blob)
}

/// `CREATE TABLE` for a module: an `id` key plus the catalog's columns.
pub fn create_table_sql(module: &Module, dialect: Dialect) -> String {
    let mut cols = vec![dialect.id_column().to_string()];
    for c in &module.columns {
        let not_null = if c.required { " NOT NULL" } else { "" };
        cols.push(format!(
            "{} {}{}",
            ident(&c.name),
            dialect.column_type(c.ty),
            not_null
        ));
    }
    format!(
        "CREATE TABLE IF NOT EXISTS {} (\n    {}\n){}",
        ident(&module.table),
        cols.join(",\n    "),
        dialect.module_table_options()
    )
}

/// The name of a module table's natural-key index.
fn natural_key_index(module: &Module) -> String {
    format!("{}_natural_key", module.table)
}

fn natural_key_index_sql(module: &Module) -> String {
    let cols: Vec<String> = module.natural_key.iter().map(|c| ident(c)).collect();
    format!(
        "CREATE UNIQUE INDEX IF NOT EXISTS {} ON {} ({})",
        ident(&natural_key_index(module)),
        ident(&module.table),
        cols.join(", ")
    )
}

/// Whether a table or an index of this name exists (in the current schema).
async fn exists(conn: &mut Conn<'_>, name: &str) -> Result<bool> {
    let found: i64 = match conn.dialect() {
        Dialect::Sqlite => on_conn!(conn, c => sqlx::query_scalar(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = $1").bind(name).fetch_one(c).await)?,
        Dialect::Postgres => on_conn!(conn, c => sqlx::query_scalar(
            "SELECT COUNT(*) FROM pg_class WHERE relname = $1 \
             AND relnamespace = to_regnamespace(current_schema())::oid")
            .bind(name).fetch_one(c).await)?,
    };
    Ok(found > 0)
}

async fn migrate(db: &Db, catalog: &Catalog) -> Result<()> {
    let dialect = db.dialect();
    let mut tx = db.begin().await?;
    {
        let mut conn = tx.conn();
        // Replicas starting together take turns.
        txn::lock(&mut conn, Lock::Migrate).await?;
        on_conn!(&mut conn, c => sqlx::query("CREATE TABLE IF NOT EXISTS ig_schema (version BIGINT NOT NULL)").execute(c).await.map(|r| r.rows_affected()))?;
        let done: Option<i64> = on_conn!(&mut conn, c => sqlx::query_scalar("SELECT MAX(version) FROM ig_schema").fetch_one(c).await)?;
        let done = done.unwrap_or(0) as usize;
        for (i, step) in MIGRATIONS.iter().enumerate().skip(done) {
            for statement in fill(step, dialect)
                .split(';')
                .map(str::trim)
                .filter(|s| !s.is_empty())
            {
                on_conn!(&mut conn, c => sqlx::query(statement).execute(c).await.map(|r| r.rows_affected()))?;
            }
            on_conn!(&mut conn, c => sqlx::query("INSERT INTO ig_schema (version) VALUES ($1)").bind(i as i64 + 1).execute(c).await.map(|r| r.rows_affected()))?;
        }
        if dialect == Dialect::Postgres {
            // Stored files as they came, not compressed: pglz took most of
            // a 65 MB upload's time (1.7 s against 0.5 s on SQLite, which
            // never compresses). Checked first: the ALTER would wait for
            // uploads in progress on other replicas.
            let storage: String = on_conn!(&mut conn, c => sqlx::query_scalar(
                "SELECT attstorage::text FROM pg_attribute \
                 WHERE attrelid = 'ig_blob_chunks'::regclass AND attname = 'data'")
                .fetch_one(c).await)?;
            if storage != "e" {
                on_conn!(&mut conn, c => sqlx::query(
                    "ALTER TABLE ig_blob_chunks ALTER COLUMN data SET STORAGE EXTERNAL")
                    .execute(c).await.map(|r| r.rows_affected()))?;
            }
        }
        for module in catalog.modules() {
            let mut ddl = vec![
                (module.table.clone(), create_table_sql(module, dialect)),
                (natural_key_index(module), natural_key_index_sql(module)),
            ];
            ddl.extend(super::stage::create_sql(module, dialect));
            for (name, sql) in ddl {
                // Asked first: PostgreSQL takes a lock on the table even
                // for `CREATE INDEX IF NOT EXISTS` of an index it has, so a
                // replica starting while another commits an import waited
                // for that commit. Looking the name up takes no lock.
                if !exists(&mut conn, &name).await? {
                    on_conn!(&mut conn, c => sqlx::query(&sql).execute(c).await.map(|r| r.rows_affected()))?;
                }
            }
            // Columns a newer catalog added, to the table and its stage.
            let named = |prefix: &str| -> Vec<_> {
                let columns = module.columns.iter();
                columns
                    .map(|c| (format!("{prefix}{}", c.name), c.ty))
                    .collect()
            };
            add_missing_columns(&mut conn, &module.table, &named("")).await?;
            let stage_name = super::stage::table_name(module);
            for prefix in [super::stage::VALUE, super::stage::BEFORE] {
                add_missing_columns(&mut conn, &stage_name, &named(prefix)).await?;
            }
            let own = [
                ("warns".to_string(), ColumnType::Text),
                (super::stage::SAME.to_string(), ColumnType::Bigint),
            ];
            add_missing_columns(&mut conn, &stage_name, &own).await?;
            for index in super::stage::retired_indexes(module) {
                let sql = format!("DROP INDEX IF EXISTS {}", ident(&index));
                on_conn!(&mut conn, c => sqlx::query(&sql).execute(c).await.map(|r| r.rows_affected()))?;
            }
        }
        if exists(&mut conn, "ig_job_rows").await? {
            super::stage::writes::adopt_job_rows(&mut conn, catalog).await?;
        }
        adopt_warnings(&mut conn, catalog).await?;
        adopt_breaks(&mut conn, catalog).await?;
    }
    tx.commit().await
}

/// Moves row warnings kept in their own table (`ig_job_warnings`, filed
/// under the id of the job that staged the rows) into the rows' `warns`
/// column, and drops the table. A stage handed to a revision is found
/// through the job holding it now, whose `stage_owner` names the job that
/// filed them.
async fn adopt_warnings(conn: &mut Conn<'_>, catalog: &Catalog) -> Result<()> {
    if !exists(conn, "ig_job_warnings").await? {
        return Ok(());
    }
    // Every row warning is a reference's; the rows keep the columns
    // (`rows::warns_text`) and make the rest again from their own values.
    let notes = "SELECT w.n, w.col FROM ig_job_warnings w \
                 JOIN ig_jobs j ON w.job_id = COALESCE(j.stage_owner, j.id) \
                 WHERE j.stage = s.job AND w.seq = s.seq AND w.col IS NOT NULL";
    let columns = conn.dialect().joined_in_order(notes, "col", "n");
    for module in catalog.modules() {
        let sql = format!(
            "UPDATE {} AS s SET warns = {columns} WHERE s.job IN (\
               SELECT j.stage FROM ig_jobs j WHERE j.module = $1 AND j.stage IS NOT NULL \
                 AND COALESCE(j.stage_owner, j.id) IN (SELECT job_id FROM ig_job_warnings))",
            super::stage::table(module)
        );
        on_conn!(conn, c => sqlx::query(&sql).bind(&module.key).execute(c).await.map(|r| r.rows_affected()))?;
    }
    on_conn!(conn, c => sqlx::query("DROP TABLE ig_job_warnings").execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// Fills `ig_stage_breaks` from the rows of each stage table that still has
/// a `(job, row_no)` index, and drops the index: the breaks replace it.
async fn adopt_breaks(conn: &mut Conn<'_>, catalog: &Catalog) -> Result<()> {
    for module in catalog.modules() {
        let index = format!("ig_stage_{}_row", module.key);
        if !exists(conn, &index).await? {
            continue;
        }
        let fill = format!(
            "INSERT INTO ig_stage_breaks (job, row_no, seq) \
             SELECT job, row_no, seq FROM (\
               SELECT job, seq, row_no, LAG(row_no) OVER (PARTITION BY job ORDER BY seq) AS prev \
               FROM {}) s \
             WHERE prev IS NULL OR row_no <> prev + 1",
            super::stage::table(module)
        );
        let drop = format!("DROP INDEX {}", ident(&index));
        for sql in [fill, drop] {
            on_conn!(conn, c => sqlx::query(&sql).execute(c).await.map(|r| r.rows_affected()))?;
        }
    }
    Ok(())
}

/// Columns a newer catalog added to an existing table, added nullable.
async fn add_missing_columns(
    conn: &mut Conn<'_>,
    table: &str,
    columns: &[(String, ColumnType)],
) -> Result<()> {
    let dialect = conn.dialect();
    let existing: Vec<String> = match dialect {
        Dialect::Sqlite => {
            on_conn!(conn, c => sqlx::query_scalar("SELECT name FROM pragma_table_info($1)").bind(table).fetch_all(c).await)?
        }
        Dialect::Postgres => on_conn!(conn, c => sqlx::query_scalar(
            "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1")
            .bind(table).fetch_all(c).await)?,
    };
    for (name, ty) in columns {
        if !existing.iter().any(|e| e == name) {
            let sql = format!(
                "ALTER TABLE {} ADD COLUMN {} {}",
                ident(table),
                ident(name),
                dialect.column_type(*ty)
            );
            on_conn!(conn, c => sqlx::query(&sql).execute(c).await.map(|r| r.rows_affected()))?;
        }
    }
    Ok(())
}
