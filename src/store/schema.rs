//! Tables: the ledger's own (`ig_*`) and one per catalog module.
//!
//! The ledger's tables are sqlx migrations, one directory per backend
//! (`migrations/sqlite/`, `migrations/postgres/`), embedded by
//! `sqlx::migrate!` (`sqlite::schema::migrations`,
//! `postgres::schema::migrations`) and recorded in `_sqlx_migrations`.
//! Each backend's DDL is written out as it runs, where one list with
//! `{ts}` and `{blob}` filled in per dialect read as neither. A step one
//! backend needs and the other does not still takes its number in both,
//! so that a version means the same step. A released migration is never
//! edited: the migrator keeps each one's checksum, and a start refuses a
//! database whose applied steps differ from the files (`VersionMismatch`).
//!
//! Why sqlx's migrator and not the runner the service had (numbered steps
//! in a Rust array, recorded in `ig_schema`): the same bookkeeping (each
//! step once, in order, in a transaction), plus the checksums, in the
//! layout sqlx's own tools read, and one runner less to keep. It runs
//! inside the start's one transaction, after [`Lock::Migrate`], with its
//! own lock off: replicas starting together still take turns, and a start
//! that fails leaves nothing half-done. Steps a newer release applied are
//! left alone (`ignore_missing`), as the runner left them.
//!
//! A database of that runner is adopted at its first start
//! ([`adopt_ig_schema`]): the steps `ig_schema` records are recorded in
//! `_sqlx_migrations` with the migrator's checksums of the same
//! statements, and the migrator applies the rest. `ig_schema` stays where
//! it is, no longer written: a replica of an earlier release, still running
//! in a rolling upgrade, reads it for its readiness probe.
//!
//! Module tables follow the catalog: created when missing, and a column
//! added to the catalog later is added to the table (never dropped).

use sqlx::migrate::{Migrate, MigrateError, Migrator};

use crate::catalog::{Catalog, ColumnType, Module};
use crate::on_conn;

use super::db::{Conn, Db};
use super::dialect::Dialect;
use super::error::{Result, StoreError};
use super::sql::ident;
use super::txn::{self, Lock};
use super::{mysql, postgres, sqlite};

impl Db {
    /// Creates or migrates the ledger tables and the module tables.
    pub async fn migrate(&self, catalog: &Catalog) -> Result<()> {
        migrate(self, catalog).await
    }
}

/// `CREATE TABLE` for a module: an `id` key plus the catalog's columns.
pub fn create_table_sql(module: &Module, dialect: Dialect) -> String {
    let mut cols = vec![dialect.id_column().to_string()];
    for c in &module.columns {
        let not_null = if c.required { " NOT NULL" } else { "" };
        let ty = dialect.module_column_type(c, module.natural_key.contains(&c.name));
        cols.push(format!("{} {ty}{not_null}", ident(&c.name)));
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

fn natural_key_index_sql(module: &Module, dialect: Dialect) -> String {
    let cols: Vec<String> = module.natural_key.iter().map(|c| ident(c)).collect();
    dialect.create_index(
        &ident(&natural_key_index(module)),
        &ident(&module.table),
        &cols.join(", "),
        true,
        None,
    )
}

/// Whether a table or an index of this name exists (in the current schema).
async fn exists(conn: &mut Conn<'_>, name: &str) -> Result<bool> {
    match conn {
        Conn::Sqlite(c) => sqlite::schema::exists(c, name).await,
        Conn::Postgres(c) => postgres::schema::exists(c, name).await,
        Conn::Mysql(c) => mysql::schema::exists(c, name).await,
    }
}

/// In one transaction where the database keeps DDL in transactions; on
/// MySQL, whose DDL commits the transaction it runs in, statement by
/// statement on one connection, whose lock is held until it goes back to
/// the pool.
async fn migrate(db: &Db, catalog: &Catalog) -> Result<()> {
    if db.dialect().ddl_commits() {
        let mut c = db.acquire().await?;
        return migrate_on(&mut c.conn(), catalog).await;
    }
    let mut tx = db.begin().await?;
    migrate_on(&mut tx.conn(), catalog).await?;
    tx.commit().await
}

async fn migrate_on(conn: &mut Conn<'_>, catalog: &Catalog) -> Result<()> {
    let dialect = conn.dialect();
    // Replicas starting together take turns.
    txn::lock(conn, Lock::Migrate).await?;
    ledger_tables(conn).await?;
    for module in catalog.modules() {
        let mut ddl = vec![
            (module.table.clone(), create_table_sql(module, dialect)),
            (
                natural_key_index(module),
                natural_key_index_sql(module, dialect),
            ),
        ];
        ddl.extend(super::stage::create_sql(module, dialect));
        check_module_table(conn, module).await?;
        for (name, sql) in ddl {
            // Asked first: PostgreSQL takes a lock on the table even
            // for `CREATE INDEX IF NOT EXISTS` of an index it has, so a
            // replica starting while another commits an import waited
            // for that commit. Looking the name up takes no lock.
            if !exists(conn, &name).await? {
                on_conn!(conn, c => sqlx::query(&sql).execute(c).await.map(|r| r.rows_affected()))?;
            }
        }
        // Columns a newer catalog added, to the table and its stage.
        let named = |prefix: &str| -> Vec<_> {
            let columns = module.columns.iter();
            columns
                .map(|c| (format!("{prefix}{}", c.name), c.ty))
                .collect()
        };
        add_missing_columns(conn, &module.table, &named("")).await?;
        let stage_name = super::stage::table_name(module);
        for prefix in [super::stage::VALUE, super::stage::BEFORE] {
            add_missing_columns(conn, &stage_name, &named(prefix)).await?;
        }
        let own = [
            ("warns".to_string(), ColumnType::Text),
            ("norm".to_string(), ColumnType::Text),
            (super::stage::SAME.to_string(), ColumnType::Bigint),
        ];
        add_missing_columns(conn, &stage_name, &own).await?;
        for index in super::stage::retired_indexes(module) {
            if exists(conn, &index).await? {
                let sql = dialect.drop_index(&ident(&index), &super::stage::table(module));
                on_conn!(conn, c => sqlx::query(&sql).execute(c).await.map(|r| r.rows_affected()))?;
            }
        }
    }
    if exists(conn, "ig_job_rows").await? {
        super::stage::writes::adopt_job_rows(conn, catalog).await?;
    }
    adopt_warnings(conn, catalog).await?;
    adopt_breaks(conn, catalog).await?;
    Ok(())
}

/// The ledger's tables: the backend's migrations, what the backend sets
/// after them, and first the steps of the earlier runner adopted.
async fn ledger_tables(conn: &mut Conn<'_>) -> Result<()> {
    let mut migrator = match conn {
        Conn::Sqlite(_) => sqlite::schema::migrations(),
        Conn::Postgres(_) => postgres::schema::migrations(),
        Conn::Mysql(_) => mysql::schema::migrations(),
    };
    // The caller holds `Lock::Migrate`; a newer release's steps stay.
    migrator.set_locking(false);
    migrator.set_ignore_missing(true);
    adopt_ig_schema(conn, &migrator).await?;
    match conn {
        Conn::Sqlite(c) => {
            migrator.run_direct(&mut **c).await.map_err(migrate_error)?;
            sqlite::schema::after_migrations(c).await
        }
        Conn::Postgres(c) => {
            migrator.run_direct(&mut **c).await.map_err(migrate_error)?;
            postgres::schema::after_migrations(c).await
        }
        Conn::Mysql(c) => migrator.run_direct(&mut **c).await.map_err(migrate_error),
    }
}

/// `Ok` unless the module's table exists with a column of a type its
/// values do not fit (checked on MySQL, where the table is often the
/// business system's own).
async fn check_module_table(conn: &mut Conn<'_>, module: &Module) -> Result<()> {
    match conn {
        Conn::Mysql(c) => mysql::schema::check_module_table(c, module).await,
        Conn::Sqlite(_) | Conn::Postgres(_) => Ok(()),
    }
}

/// Records in `_sqlx_migrations` the steps the service's earlier runner
/// applied (the highest it applied is in `ig_schema`), with `migrator`'s
/// checksums: the migration files hold the same statements, in the same
/// order, the runner ran. Once: only while the database has `ig_schema`
/// and not yet `_sqlx_migrations`.
async fn adopt_ig_schema(conn: &mut Conn<'_>, migrator: &Migrator) -> Result<()> {
    if !exists(conn, "ig_schema").await? || exists(conn, "_sqlx_migrations").await? {
        return Ok(());
    }
    let (Conn::Sqlite(_) | Conn::Postgres(_)) = conn else {
        return Ok(());
    };
    let done: Option<i64> = on_conn!(conn, c => sqlx::query_scalar("SELECT MAX(version) FROM ig_schema").fetch_one(c).await)?;
    let done = done.unwrap_or(0);
    match conn {
        Conn::Sqlite(c) => c.ensure_migrations_table().await,
        Conn::Postgres(c) => c.ensure_migrations_table().await,
        Conn::Mysql(c) => c.ensure_migrations_table().await,
    }
    .map_err(migrate_error)?;
    for step in migrator.iter().filter(|m| m.version <= done) {
        // Not timed here (-1, as sqlx leaves a step whose time was lost).
        on_conn!(conn, c => sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES ($1, $2, TRUE, $3, -1)")
            .bind(step.version).bind(step.description.as_ref()).bind(step.checksum.as_ref())
            .execute(c).await.map(|r| r.rows_affected()))?;
    }
    Ok(())
}

fn migrate_error(e: MigrateError) -> StoreError {
    StoreError::from(sqlx::Error::from(e))
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
    let existing = match conn {
        Conn::Sqlite(c) => sqlite::schema::columns(c, table).await?,
        Conn::Postgres(c) => postgres::schema::columns(c, table).await?,
        Conn::Mysql(c) => mysql::schema::columns(c, table).await?,
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
