//! The command line: parse arguments, then call into the library.

/// jemalloc for the service's own allocations (Cargo.toml says why).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use importgate::app::App;
use importgate::config::{FileSettings, Settings, day_secs, parse_zone};
use importgate::ledger::chain::Verdict;
use importgate::service::keys::NewKey;
use importgate::store::Db;

#[derive(Parser)]
#[command(
    name = "importgate",
    version,
    about = "Bulk data import with a Human-Gate",
    after_help = "Examples:\n  \
        importgate serve                                  # http://127.0.0.1:8080, SQLite file importgate.db\n  \
        importgate demo                                   # try it: demo jobs in every state, three keys printed\n  \
        importgate keys create --name \"Siti Rahayu\" --role approver\n  \
        importgate import customers pelanggan.csv --key igk_… --wait\n  \
        importgate events tail --key igk_…                # follow jobs and keys as they move"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the service.
    #[command(after_help = "Examples:\n  \
        importgate serve\n  \
        importgate serve --listen 0.0.0.0:8080 --database postgres://importgate@db/importgate\n  \
        IMPORTGATE_DATABASE=sqlite:///var/lib/importgate/importgate.db importgate serve --workers 4")]
    Serve(Box<ServeArgs>),
    /// The service in simulation over a fresh database with demo jobs in
    /// every state; prints a submitter, an approver and an admin key.
    #[command(after_help = "Example:\n  \
        importgate demo --listen 127.0.0.1:8080   # then open the printed URL and sign in with a printed key")]
    Demo {
        /// Address to listen on [default: 127.0.0.1:8080]
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
    },
    /// Manage API keys.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Upload a file to a running service (a client of the API).
    #[command(after_help = "Examples:\n  \
        IMPORTGATE_KEY=igk_… importgate import customers pelanggan.csv --wait\n  \
        importgate import orders pesanan.xlsx --mode upsert --on-error skip --url https://import.example.co.id --wait\n  \
        importgate import --workbook toko.xlsx --sheet Produk=products --sheet Pesanan=orders --wait")]
    Import {
        /// Module key (customers, orders, …).
        #[arg(required_unless_present = "workbook")]
        module: Option<String>,
        /// The file: CSV, XLSX, XLS, ODS, JSON or NDJSON.
        #[arg(required_unless_present = "workbook")]
        file: Option<PathBuf>,
        /// A workbook instead (XLSX, ODS, or a JSON object of arrays):
        /// each sheet named after a module is a part of one job, approved,
        /// committed and rolled back as one.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["module", "file", "mapping"])]
        workbook: Option<PathBuf>,
        /// A workbook's sheet not named after a module, and the module it
        /// holds (repeatable).
        #[arg(long = "sheet", value_name = "SHEET=MODULE", requires = "workbook")]
        sheets: Vec<String>,
        #[command(flatten)]
        service: ServiceArgs,
        /// insert: only new keys; update: only keys the table holds;
        /// upsert: either [default: insert]
        #[arg(long, value_parser = ["insert", "update", "upsert"])]
        mode: Option<String>,
        /// fail: a row in error fails the job; skip: the valid rows go on
        /// to the gate without it [default: fail]
        #[arg(long, value_parser = ["fail", "skip"])]
        on_error: Option<String>,
        /// `none` to read the headers as they are, or the saved mapping
        /// (map_…) to read them with [default: the one saved for the file's headers]
        #[arg(long)]
        mapping: Option<String>,
        /// Wait for validation to end and print the result.
        #[arg(long)]
        wait: bool,
        /// Print the job as the API's JSON instead of a summary.
        #[arg(long)]
        json: bool,
    },
    /// Follow jobs to the gate and through it: list, show, approve,
    /// reject, cancel, roll back, wait (a client of the API).
    Jobs {
        #[command(subcommand)]
        command: JobsCommand,
    },
    /// Revise a job: map its columns, fix cells, leave rows out, or send
    /// back its corrected errored-rows file (a client of the API). The
    /// revision is a new job; the approver sees what it changed.
    #[command(after_help = "Examples:\n  \
        importgate revise job_01J… --map 'No. WA=wa_number' --map 'Catatan=' --remember-mapping --wait\n  \
        importgate revise job_01J… --fix 4:consumable_cycle_days=30 --exclude 7,12 --comment 'typos from the CRM' --wait\n  \
        importgate revise job_01J… --file errors-corrected.xlsx --wait   # from GET /api/jobs/{id}/errors?layout=rows")]
    Revise {
        /// The job to revise (job_…).
        job: String,
        #[command(flatten)]
        service: ServiceArgs,
        /// A JSON file mapping the file's headers to columns (null: leave out).
        #[arg(long, value_name = "FILE")]
        mapping: Option<PathBuf>,
        /// HEADER=COLUMN, repeatable (HEADER= leaves the column out).
        #[arg(long, value_name = "HEADER=COLUMN")]
        map: Vec<String>,
        /// ROW:COLUMN=VALUE, repeatable (an empty VALUE empties the cell).
        #[arg(long, value_name = "ROW:COLUMN=VALUE")]
        fix: Vec<String>,
        /// Row numbers to leave out, comma-separated.
        #[arg(long, value_delimiter = ',')]
        exclude: Vec<u64>,
        /// Why, for the approver.
        #[arg(long)]
        comment: Option<String>,
        /// Save the mapping for the module's next files with these headers.
        #[arg(long)]
        remember_mapping: bool,
        /// The corrected errored-rows file (CSV or XLSX), sent as it is.
        #[arg(long, conflicts_with_all = ["mapping", "map", "fix", "exclude", "comment", "remember_mapping"])]
        file: Option<PathBuf>,
        /// Wait for validation to end and print the result.
        #[arg(long)]
        wait: bool,
        /// Print the job as the API's JSON instead of a summary.
        #[arg(long)]
        json: bool,
    },
    /// Export a module's rows as a file to edit and import again (a
    /// client of the API): in natural-key order, each row's `_version`
    /// last, so that an import of the edited file refuses rows changed
    /// meanwhile.
    #[command(after_help = "Examples:\n  \
        IMPORTGATE_KEY=igk_… importgate export customers > pelanggan.csv\n  \
        importgate export orders --format xlsx --where status=pending --where city=Bandung -o pesanan.xlsx\n  \
        importgate export orders --job job_01J… --format ndjson   # the rows one import wrote")]
    Export {
        /// Module key (customers, orders, …).
        module: String,
        #[arg(long, value_parser = ["csv", "xlsx", "json", "ndjson"])]
        format: Option<String>,
        /// COLUMN=VALUE: only rows whose column holds the value (read as a
        /// file's cell is; empty asks for null), repeatable, combined with AND.
        #[arg(long = "where", value_name = "COLUMN=VALUE")]
        wheres: Vec<String>,
        /// Only the rows this committed job (job_…) inserted or updated.
        #[arg(long)]
        job: Option<String>,
        /// At most this many rows.
        #[arg(long)]
        limit: Option<u64>,
        /// Write to this file, put in place once whole [default: standard output].
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        service: ServiceArgs,
    },
    /// Show a module's rules, or propose new ones for another person to
    /// approve (a client of the API).
    Rules {
        #[command(subcommand)]
        command: RulesCommand,
    },
    /// Follow what happens in a running service (a client of the API).
    Events {
        #[command(subcommand)]
        command: EventsCommand,
    },
    /// Check the ledger.
    Ledger {
        #[command(subcommand)]
        command: LedgerCommand,
    },
}

#[derive(Subcommand)]
enum RulesCommand {
    /// Print the rule set in force (or at --version), one rule a line.
    #[command(after_help = "Example:\n  \
        IMPORTGATE_KEY=igk_… importgate rules show customers")]
    Show {
        /// Module key (customers, orders, …).
        module: String,
        /// An older version.
        #[arg(long)]
        version: Option<u32>,
        #[command(flatten)]
        service: ServiceArgs,
    },
    /// Propose a new rule set (an admin): FILE is the whole set, a JSON
    /// array of rules. It waits at the gate for another person.
    #[command(after_help = "Example:\n  \
        importgate rules propose customers rules.json --comment 'WA numbers to +62'")]
    Propose {
        /// Module key.
        module: String,
        /// The JSON file of rules.
        file: PathBuf,
        /// Why, for the approver.
        #[arg(long)]
        comment: Option<String>,
        #[command(flatten)]
        service: ServiceArgs,
    },
    /// Show what a proposal would do to a job's rows (an approver or
    /// admin): counts under both versions, rows newly failing, passing or
    /// normalized. The job does not change.
    #[command(after_help = "Example:\n  \
        importgate rules try rpr_01J… job_01J…")]
    Try {
        /// The proposal (rpr_…).
        proposal: String,
        /// A job of the proposal's module (job_…).
        job: String,
        #[command(flatten)]
        service: ServiceArgs,
    },
}

#[derive(Subcommand)]
enum JobsCommand {
    /// The jobs the key may see, newest first, a line each.
    #[command(after_help = "Examples:\n  \
        IMPORTGATE_KEY=igk_… importgate jobs list --state awaiting_approval\n  \
        importgate jobs list --module orders --mine --limit 50")]
    List {
        /// Only this module's jobs.
        #[arg(long)]
        module: Option<String>,
        /// Only jobs in this state (awaiting_approval, committed, …).
        #[arg(long)]
        state: Option<String>,
        /// Only the key's own uploads.
        #[arg(long)]
        mine: bool,
        /// At most this many.
        #[arg(long, default_value_t = 20)]
        limit: u32,
        #[command(flatten)]
        out: JobsOut,
    },
    /// One job: state, counts, who, the gate, its first errors.
    #[command(after_help = "Example:\n  importgate jobs show job_01J…")]
    Show {
        /// The job (job_…).
        job: String,
        #[command(flatten)]
        out: JobsOut,
    },
    /// Approve the commit (or the rollback) waiting at the gate; another
    /// person than the one who asked for it.
    #[command(
        after_help = "Example:\n  importgate jobs approve job_01J… --comment 'checked against the CRM' --wait"
    )]
    Approve(MoveArgs),
    /// Refuse the commit (or the rollback) waiting at the gate.
    #[command(
        after_help = "Example:\n  importgate jobs reject job_01J… --comment 'wrong price list'"
    )]
    Reject(MoveArgs),
    /// Withdraw a job waiting at the gate (its submitter or an admin).
    #[command(after_help = "Example:\n  importgate jobs cancel job_01J…")]
    Cancel(MoveArgs),
    /// Ask for a committed job to be undone; another person approves.
    #[command(
        after_help = "Example:\n  importgate jobs rollback job_01J… --comment 'prices of the wrong month'"
    )]
    Rollback(MoveArgs),
    /// Wait until the service's work on a job has ended, then print it.
    #[command(after_help = "Examples:\n  \
        importgate jobs wait job_01J…              # validated, committed or rolled back\n  \
        importgate jobs wait job_01J… --decided    # and a person decided at the gate")]
    Wait {
        /// The job (job_…).
        job: String,
        /// Wait also while the job waits for a person at the gate.
        #[arg(long)]
        decided: bool,
        #[command(flatten)]
        out: JobsOut,
    },
}

/// A move at the gate.
#[derive(Args)]
struct MoveArgs {
    /// The job (job_…).
    job: String,
    /// Why, for the record (a rejection and a rollback should say).
    #[arg(long)]
    comment: Option<String>,
    /// Wait for the work the move starts (the commit, the rollback) to end.
    #[arg(long)]
    wait: bool,
    #[command(flatten)]
    out: JobsOut,
}

/// Where a jobs command goes and how it prints.
#[derive(Args)]
struct JobsOut {
    /// Print the API's JSON instead of a summary.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    service: ServiceArgs,
}

/// A running service and the key to call it with.
#[derive(Args)]
struct ServiceArgs {
    /// The service's base URL.
    #[arg(long, env = "IMPORTGATE_URL", default_value = "http://127.0.0.1:8080")]
    url: String,
    /// The API key (better given as IMPORTGATE_KEY than on a command line).
    #[arg(long, env = "IMPORTGATE_KEY", hide_env_values = true)]
    key: String,
}

impl ServiceArgs {
    fn client(&self) -> importgate::client::Service<'_> {
        importgate::client::Service {
            url: &self.url,
            key: &self.key,
        }
    }
}

#[derive(Subcommand)]
enum EventsCommand {
    /// Print one line per event as it happens (time, type, subject, state,
    /// person), connecting again after a drop without losing any; the
    /// events are those the key may see.
    #[command(after_help = "Examples:\n  \
        IMPORTGATE_KEY=igk_… importgate events tail\n  \
        importgate events tail --url https://import.example.co.id --types job.awaiting_approval,job.failed\n  \
        importgate events tail --after evt_1200   # replay from event 1201 on, then follow")]
    Tail {
        #[command(flatten)]
        service: ServiceArgs,
        /// Start after this event (evt_…) [default: the events from now on]
        #[arg(long)]
        after: Option<String>,
        /// Comma-separated event types to print (job.committed, key.created, …) [default: all]
        #[arg(long, value_delimiter = ',')]
        types: Vec<String>,
    },
}

#[derive(Subcommand)]
enum LedgerCommand {
    /// Recompute the hash chain of every job event; exit 1 at the first
    /// broken link.
    #[command(after_help = "Example:\n  \
        importgate ledger verify --database postgres://importgate@db/importgate")]
    Verify {
        #[command(flatten)]
        common: Common,
        /// The checkpoint file the service appends the chain's head to;
        /// deleting the newest events is found against it [default: the
        /// service's own, when it exists]
        #[arg(long)]
        checkpoint: Option<PathBuf>,
    },
}

#[derive(Args)]
struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:8080]
    #[arg(long, env = "IMPORTGATE_LISTEN")]
    listen: Option<std::net::SocketAddr>,
    #[command(flatten)]
    common: Common,
    /// Run commits and rollbacks through the gate without touching module tables.
    #[arg(long, env = "IMPORTGATE_SIMULATE")]
    simulate: bool,
    /// Let the submitter approve their own job (single-person demos only).
    #[arg(long, env = "IMPORTGATE_ALLOW_SELF_APPROVAL")]
    allow_self_approval: bool,
    /// A catalog file replacing the built-in 26 modules.
    #[arg(long, env = "IMPORTGATE_CATALOG")]
    catalog: Option<PathBuf>,
    /// Zone for timestamps written without an offset [default: Asia/Jakarta]
    #[arg(long, env = "IMPORTGATE_TIMEZONE")]
    timezone: Option<String>,
    /// Jobs worked on at once by this process [default: 2]
    #[arg(long, env = "IMPORTGATE_WORKERS")]
    workers: Option<usize>,
    /// Seconds a worker's claim on a job lasts without a heartbeat; another
    /// process takes the job over after that [default: 30]
    #[arg(long, env = "IMPORTGATE_LEASE_SECONDS")]
    lease_seconds: Option<i64>,
    /// At SIGTERM, seconds running work may go on before it is handed back
    /// to the other replicas [default: 10]
    #[arg(long, env = "IMPORTGATE_SHUTDOWN_GRACE_SECONDS")]
    shutdown_grace_seconds: Option<u64>,
    /// Days after its commit a job may be rolled back; then its staged
    /// rows and stored file are purged (fractions allowed) [default: 90]
    #[arg(long, env = "IMPORTGATE_ROLLBACK_DAYS")]
    rollback_days: Option<f64>,
    /// Days the stored file and staged rows of a job that ended without a
    /// commit are kept (fractions allowed) [default: 30]
    #[arg(long, env = "IMPORTGATE_RETENTION_DAYS")]
    retention_days: Option<f64>,
    /// Log lines as JSON (for log collectors) instead of text.
    #[arg(long, env = "IMPORTGATE_LOG_JSON")]
    log_json: bool,
    /// This replica's name among the processes sharing the database; a
    /// restart with the same name takes back at once the work its
    /// predecessor was doing when it stopped [default: hostname:port]
    #[arg(long, env = "IMPORTGATE_INSTANCE")]
    instance: Option<String>,
    /// Let webhook endpoints resolve to addresses that are not public
    /// (internal receivers)
    #[arg(long, env = "IMPORTGATE_WEBHOOK_ALLOW_PRIVATE")]
    webhook_allow_private: bool,
    /// Seconds before a failed webhook delivery's first retry; it doubles
    /// each time, at most an hour apart [default: 10]
    #[arg(long, env = "IMPORTGATE_WEBHOOK_RETRY_BASE_SECONDS")]
    webhook_retry_base_seconds: Option<f64>,
    /// Hours a webhook delivery is retried, and an endpoint may fail before
    /// it is disabled [default: 24]
    #[arg(long, env = "IMPORTGATE_WEBHOOK_RETRY_HOURS")]
    webhook_retry_hours: Option<f64>,
    /// Serve /metrics on this address only (a listener of its own) instead
    /// of on the main listener
    #[arg(long, env = "IMPORTGATE_METRICS_LISTEN")]
    metrics_listen: Option<std::net::SocketAddr>,
    /// A file holding the bearer token that scrapers not on loopback show
    /// to /metrics on the main listener (loopback needs none)
    #[arg(long, env = "IMPORTGATE_METRICS_TOKEN_FILE")]
    metrics_token_file: Option<PathBuf>,
    /// The identity provider's issuer URL, for console sign-in (with the
    /// three below; the groups mapping is in the settings file)
    #[arg(long, env = "IMPORTGATE_OIDC_ISSUER")]
    oidc_issuer: Option<String>,
    /// The client id importgate has at the identity provider
    #[arg(long, env = "IMPORTGATE_OIDC_CLIENT_ID")]
    oidc_client_id: Option<String>,
    /// A file holding the client's secret
    #[arg(long, env = "IMPORTGATE_OIDC_CLIENT_SECRET_FILE")]
    oidc_client_secret_file: Option<PathBuf>,
    /// Where the provider sends people back: this service's
    /// /auth/oidc/callback, as the provider knows it
    #[arg(long, env = "IMPORTGATE_OIDC_REDIRECT_URL")]
    oidc_redirect_url: Option<String>,
}

#[derive(Args)]
struct Common {
    /// sqlite://path (created if absent) or postgres://… [default: sqlite://importgate.db]
    #[arg(long, env = "IMPORTGATE_DATABASE")]
    database: Option<String>,
    /// A TOML settings file (flags and IMPORTGATE_* variables win over it).
    #[arg(long, env = "IMPORTGATE_CONFIG")]
    config: Option<PathBuf>,
    /// The ledger's secret key, kept outside the database; created on first
    /// start [default: importgate.ledger-key beside the SQLite file, or in
    /// the working directory]
    #[arg(long, env = "IMPORTGATE_LEDGER_KEY_FILE")]
    ledger_key_file: Option<PathBuf>,
    /// Where the service appends the ledger's head [default:
    /// importgate.ledger-checkpoint, beside the key file's default]
    #[arg(long, env = "IMPORTGATE_LEDGER_CHECKPOINT_FILE")]
    ledger_checkpoint_file: Option<PathBuf>,
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Create a key; prints it alone on the last line of stdout.
    #[command(after_help = "Examples:\n  \
        importgate keys create --name \"Budi Santoso\" --role submitter --modules customers,orders\n  \
        KEY=$(importgate keys create --name \"Ops bot\" --role admin | tail -n1)")]
    Create {
        #[arg(long)]
        name: String,
        #[arg(long, value_parser = ["admin", "approver", "submitter"])]
        role: String,
        /// Comma-separated module keys, or * for all.
        #[arg(long, default_value = "*")]
        modules: String,
        #[command(flatten)]
        common: Common,
    },
}

fn settings(common: &Common) -> anyhow::Result<Settings> {
    let mut s = Settings::default();
    if let Some(path) = &common.config {
        FileSettings::load(path)?.apply(&mut s)?;
    }
    if let Some(db) = &common.database {
        s.database = db.clone();
    }
    if let Some(f) = &common.ledger_key_file {
        s.ledger_key_file = Some(f.clone());
    }
    if let Some(f) = &common.ledger_checkpoint_file {
        s.ledger_checkpoint_file = Some(f.clone());
    }
    Ok(s)
}

fn init_logs(json: bool) {
    init_logs_at(json, "info,sqlx=warn");
}

/// Logs to stderr at `default` unless `IMPORTGATE_LOG` says otherwise.
fn init_logs_at(json: bool, default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("IMPORTGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve(*args).await,
        Command::Demo { listen } => demo(listen).await,
        Command::Keys {
            command:
                KeysCommand::Create {
                    name,
                    role,
                    modules,
                    common,
                },
        } => create_key(&common, &name, &role, &modules).await,
        Command::Events {
            command:
                EventsCommand::Tail {
                    service,
                    after,
                    types,
                },
        } => {
            let code = importgate::client::events::tail(importgate::client::events::Tail {
                service: service.client(),
                after: after.as_deref(),
                types: types.into_iter().filter(|t| !t.trim().is_empty()).collect(),
            })
            .await?;
            std::process::exit(code)
        }
        Command::Ledger {
            command: LedgerCommand::Verify { common, checkpoint },
        } => verify_ledger(&common, checkpoint).await,
        Command::Import {
            module,
            file,
            workbook,
            sheets,
            service,
            mode,
            on_error,
            mapping,
            wait,
            json,
        } => {
            let (module, file) = match &workbook {
                Some(w) => (None, w.clone()),
                None => (module, file.unwrap_or_default()),
            };
            let code = importgate::client::run(importgate::client::Upload {
                service: service.client(),
                module: module.as_deref(),
                sheets: &sheets,
                file: &file,
                mode: mode.as_deref(),
                on_error: on_error.as_deref(),
                mapping: mapping.as_deref(),
                wait,
                json,
            })
            .await?;
            std::process::exit(code)
        }
        Command::Export {
            module,
            format,
            wheres,
            job,
            limit,
            output,
            service,
        } => {
            use importgate::client::export;
            let code = export::run(export::Export {
                service: service.client(),
                module: &module,
                format: format.as_deref(),
                wheres: &wheres,
                job: job.as_deref(),
                limit,
                output: output.as_deref(),
            })
            .await?;
            std::process::exit(code)
        }
        Command::Rules { command } => {
            use importgate::client::rules;
            let code = match command {
                RulesCommand::Show {
                    module,
                    version,
                    service,
                } => {
                    let s = service.client();
                    rules::show(s, &module, version).await?
                }
                RulesCommand::Propose {
                    module,
                    file,
                    comment,
                    service,
                } => {
                    let s = service.client();
                    rules::propose(s, &module, &file, comment.as_deref()).await?
                }
                RulesCommand::Try {
                    proposal,
                    job,
                    service,
                } => {
                    let s = service.client();
                    rules::try_on(s, &proposal, &job).await?
                }
            };
            std::process::exit(code);
        }
        Command::Jobs { command } => std::process::exit(jobs(command).await?),
        Command::Revise {
            job,
            service,
            mapping,
            map,
            fix,
            exclude,
            comment,
            remember_mapping,
            file,
            wait,
            json,
        } => {
            use importgate::client::revise;
            let code = revise::run(revise::Revise {
                service: service.client(),
                job: &job,
                mapping_file: mapping.as_deref(),
                map: &map,
                fix: &fix,
                exclude: &exclude,
                comment: comment.as_deref(),
                remember_mapping,
                file: file.as_deref(),
                wait,
                json,
            })
            .await?;
            std::process::exit(code)
        }
    }
}

async fn jobs(command: JobsCommand) -> anyhow::Result<i32> {
    use importgate::client::jobs::{self, Filter, Move};
    async fn decide(what: Move, a: &MoveArgs) -> anyhow::Result<i32> {
        let s = a.out.service.client();
        jobs::decide(s, &a.job, what, a.comment.as_deref(), a.wait, a.out.json).await
    }
    match &command {
        JobsCommand::List {
            module,
            state,
            mine,
            limit,
            out,
        } => {
            let filter = Filter {
                module: module.as_deref(),
                state: state.as_deref(),
                mine: *mine,
                limit: *limit,
            };
            jobs::list(out.service.client(), filter, out.json).await
        }
        JobsCommand::Show { job, out } => jobs::show(out.service.client(), job, out.json).await,
        JobsCommand::Approve(a) => decide(Move::Approve, a).await,
        JobsCommand::Reject(a) => decide(Move::Reject, a).await,
        JobsCommand::Cancel(a) => decide(Move::Cancel, a).await,
        JobsCommand::Rollback(a) => decide(Move::Rollback, a).await,
        JobsCommand::Wait { job, decided, out } => {
            jobs::wait(out.service.client(), job, *decided, out.json).await
        }
    }
}

async fn verify_ledger(common: &Common, checkpoint: Option<PathBuf>) -> anyhow::Result<()> {
    let s = settings(common)?;
    let (key_file, default_checkpoint) = s.ledger_files();
    let key = importgate::service::seal::read_key(&key_file)?.ok_or_else(|| {
        anyhow::anyhow!(
            "the ledger key file {} does not exist (give --ledger-key-file)",
            key_file.display()
        )
    })?;
    let checkpoint =
        checkpoint.or_else(|| default_checkpoint.exists().then_some(default_checkpoint));
    let db = Db::connect(&s.database).await?;
    match importgate::service::audit::verify(&db, &key, checkpoint.as_deref()).await? {
        Verdict::Holds { links, jobs } => {
            println!(
                "ledger holds: {links} events chained, {jobs} jobs where their events left them"
            );
            if let Some(c) = &checkpoint {
                println!(
                    "the chain still holds the head last written to {}",
                    c.display()
                );
            }
            Ok(())
        }
        Verdict::Broken {
            seq, job_id, why, ..
        } if job_id.is_empty() => {
            println!("ledger BROKEN at event {seq}: {why}");
            std::process::exit(1);
        }
        Verdict::Broken {
            seq,
            job_id,
            n,
            why,
        } => {
            println!("ledger BROKEN at event {seq} (job {job_id}, event {n}): {why}");
            std::process::exit(1);
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    init_logs(args.log_json);
    let mut s = settings(&args.common)?;
    if let Some(l) = args.listen {
        s.listen = l;
    }
    if let Some(l) = args.metrics_listen {
        s.metrics_listen = Some(l);
    }
    if let Some(f) = args.metrics_token_file {
        s.metrics_token_file = Some(f);
    }
    let o = &mut s.oidc;
    o.issuer = args.oidc_issuer.or(o.issuer.take());
    o.client_id = args.oidc_client_id.or(o.client_id.take());
    o.client_secret_file = args.oidc_client_secret_file.or(o.client_secret_file.take());
    o.redirect_url = args.oidc_redirect_url.or(o.redirect_url.take());
    o.check()?;
    s.simulate |= args.simulate;
    s.allow_self_approval |= args.allow_self_approval;
    if let Some(c) = args.catalog {
        s.catalog = Some(c);
    }
    if let Some(z) = &args.timezone {
        s.zone = parse_zone(z)?;
    }
    if let Some(w) = args.workers {
        s.workers = w.max(1);
    }
    if let Some(g) = args.shutdown_grace_seconds {
        s.shutdown_grace_ms = g * 1000;
    }
    if let Some(l) = args.lease_seconds {
        s.lease_ms = l.max(1) * 1000;
    }
    if let Some(i) = args.instance {
        s.instance = Some(i);
    }
    s.webhooks.allow_private |= args.webhook_allow_private;
    if let Some(v) = args.webhook_retry_base_seconds {
        s.webhooks.retry_base = std::time::Duration::try_from_secs_f64(v)?;
    }
    if let Some(v) = args.webhook_retry_hours {
        s.webhooks.retry_window = std::time::Duration::try_from_secs_f64(v * 3600.0)?;
    }
    if let Some(d) = args.rollback_days {
        s.limits.rollback_secs = day_secs(d)?;
    }
    if let Some(d) = args.retention_days {
        s.limits.retention_secs = day_secs(d)?;
    }
    let listener = listen_on(s.listen).await?;
    if s.instance.is_none() {
        s.instance = Some(format!("{}:{}", hostname(), listener.local_addr()?.port()));
    }
    let app = App::open(s).await?;
    if let Some(secret) = app.first_admin_key().await? {
        println!("No keys existed, so an admin key was created. It is shown only this once:");
        println!("{secret}");
    }
    tracing::info!(address = %listener.local_addr()?, simulate = app.settings.simulate, "importgate listening");
    app.serve(listener).await
}

/// A listener on `address`; a failure names the address and what to do.
async fn listen_on(address: std::net::SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(address).await.map_err(|e| {
        let hint = match e.kind() {
            std::io::ErrorKind::AddrInUse => {
                " (another program listens there: stop it, or give --listen another address)"
            }
            std::io::ErrorKind::PermissionDenied => " (ports below 1024 need privileges)",
            _ => "",
        };
        anyhow::anyhow!("cannot listen on {address}: {e}{hint}")
    })
}

/// The machine's name (a replica's default instance is `hostname:port`).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

async fn demo(listen: Option<std::net::SocketAddr>) -> anyhow::Result<()> {
    // Quiet by default: the keys and the URL are what a newcomer needs.
    init_logs_at(false, "warn");
    // The database lives as long as the demo: deleted with the directory.
    let dir = tempfile::tempdir()?;
    let mut s = Settings {
        database: format!("sqlite://{}", dir.path().join("demo.db").display()),
        simulate: true,
        ..Settings::default()
    };
    if let Some(l) = listen {
        s.listen = l;
    }
    let listener = listen_on(s.listen).await?;
    let url = format!("http://{}", listener.local_addr()?);
    let app = App::open(s).await?;
    let serving = tokio::spawn(app.clone().serve(listener));
    eprintln!("preparing the demo ledger…");
    let keys = importgate::demo::seed(&app).await?;
    print!("{}", importgate::demo::banner(&url, &keys));
    use std::io::Write as _;
    std::io::stdout().flush()?;
    serving.await??;
    drop(dir);
    Ok(())
}

async fn create_key(common: &Common, name: &str, role: &str, modules: &str) -> anyhow::Result<()> {
    let s = settings(common)?;
    let modules: Vec<String> = modules
        .split(',')
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .collect();
    let app = App::open(s).await?;
    let new = NewKey::parse(&app, name, role, modules, None)?;
    let (record, secret) = importgate::service::keys::issue(&app, &new, None).await?;
    eprintln!(
        "created {} ({}, {}, modules {})",
        record.id,
        record.person().display,
        new.role.as_str(),
        new.modules.join(",")
    );
    println!("{secret}");
    Ok(())
}
