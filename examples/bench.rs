//! The benchmark harness (see BENCHMARKS.md): generates seeded data sets,
//! starts the real `importgate` binary on SQLite and PostgreSQL, times each
//! stage of the pipeline, and runs the references — PostgreSQL `\copy`,
//! `sqlite3 .import`, and a bare `csv` parse-and-convert loop — on the same
//! files in the same run. Prints medians of several runs and the ratios.
//!
//! `bash bench/run.sh` builds it and runs it; `--help` lists the options.

use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn usage() -> ! {
    eprintln!(
        "bench [--rows 100000,1000000] [--runs 3] [--backends sqlite,postgres] [--formats csv,xlsx,ods,json]\n\
         [--modules orders,customers] [--bad 0.0] [--pg postgres://postgres@127.0.0.1:5432]\n\
         [--mysql mysql://root@127.0.0.1:3306] (backend mysql: MariaDB or MySQL) [--dir DIR] [--bin PATH]\n\
         [--references 100000]: instead, validate orders with and without their sku reference\n\
         against a products table of that many rows (API.md section 12), side by side\n\
         [--revisions 10]: instead, fail orders on that many bad rows, then time a revision fixing them\n\
         [--rules]: instead, validate orders with and without two normalizers and three checks\n\
         [--workbook 100000]: instead, that many products and --rows orders naming them, as one workbook\n\
         and as two files uploaded one after the other, side by side"
    );
    std::process::exit(2)
}

struct Options {
    rows: Vec<usize>,
    runs: usize,
    backends: Vec<String>,
    formats: Vec<String>,
    modules: Vec<String>,
    bad: f64,
    pg: String,
    mysql: String,
    dir: PathBuf,
    bin: PathBuf,
    /// Products in the table the orders' references are checked against;
    /// set, the harness runs the references comparison only.
    references: Option<usize>,
    /// Bad rows in orders a revision then fixes; set, the harness runs
    /// the revision comparison only.
    revisions: Option<usize>,
    /// Set, the harness runs the rules comparison only.
    rules: bool,
    /// Products of the workbook comparison; set, the harness runs it only.
    workbook: Option<usize>,
}

fn options() -> Options {
    let exe = std::env::current_exe().expect("own path");
    // target/<profile>/examples/bench → target/<profile>/importgate
    let default_bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|p| p.join("importgate"))
        .unwrap_or_else(|| PathBuf::from("importgate"));
    let mut o = Options {
        rows: vec![100_000],
        runs: 3,
        backends: vec!["sqlite".into(), "postgres".into()],
        formats: vec!["csv".into()],
        modules: vec!["orders".into(), "customers".into()],
        bad: 0.0,
        pg: "postgres://postgres@127.0.0.1:5432".into(),
        mysql: "mysql://root@127.0.0.1:3306".into(),
        dir: std::env::temp_dir().join("importgate-bench"),
        bin: default_bin,
        references: None,
        revisions: None,
        rules: false,
        workbook: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let list = |s: &str| {
        s.split(',')
            .map(|x| x.trim().to_string())
            .collect::<Vec<_>>()
    };
    let mut i = 0;
    while i < args.len() {
        if args[i] == "--rules" {
            o.rules = true;
            i += 1;
            continue;
        }
        let value = args.get(i + 1).cloned().unwrap_or_else(|| usage());
        match args[i].as_str() {
            "--rows" => {
                o.rows = list(&value)
                    .iter()
                    .map(|r| r.replace('_', "").parse().unwrap_or_else(|_| usage()))
                    .collect()
            }
            "--runs" => o.runs = value.parse().unwrap_or_else(|_| usage()),
            "--backends" => o.backends = list(&value),
            "--formats" => o.formats = list(&value),
            "--modules" => o.modules = list(&value),
            "--bad" => o.bad = value.parse().unwrap_or_else(|_| usage()),
            "--pg" => o.pg = value,
            "--mysql" => o.mysql = value,
            "--dir" => o.dir = PathBuf::from(value),
            "--bin" => o.bin = PathBuf::from(value),
            "--references" => {
                o.references = Some(value.parse().unwrap_or_else(|_| usage()));
            }
            "--revisions" => {
                o.revisions = Some(value.parse().unwrap_or_else(|_| usage()));
            }
            "--workbook" => {
                o.workbook = Some(value.replace('_', "").parse().unwrap_or_else(|_| usage()));
            }
            _ => usage(),
        }
        i += 2;
    }
    o
}

// ---------------------------------------------------------------------------
// Data: deterministic, seeded generators.

/// xorshift64*: small, fast and the same on every machine, which is all a
/// benchmark's data needs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const FIRST: &[&str] = &[
    "Budi", "Siti", "Agus", "Dewi", "Eko", "Rina", "Andi", "Putri", "Joko", "Wati", "Hendra",
    "Lestari",
];
const LAST: &[&str] = &[
    "Santoso", "Rahayu", "Wijaya", "Lestari", "Prasetyo", "Hartono", "Saputra", "Kusuma", "Nugroho",
];
const CITIES: &[&str] = &[
    "Jakarta",
    "Bandung",
    "Surabaya",
    "Medan",
    "Semarang",
    "Makassar",
    "Denpasar",
    "Yogyakarta",
];

/// One module's data set: a header and a row generator. `variant` changes
/// the non-key values (for the upsert run); `bad` is the share of rows with
/// an error.
struct DataSet {
    module: &'static str,
    header: Vec<&'static str>,
    /// Which columns are typed (for the bare loop): (index, kind).
    typed: Vec<(usize, Kind)>,
    /// The module's natural key, unique in its table and in the
    /// references' tables.
    key: Vec<&'static str>,
}

#[derive(Clone, Copy)]
enum Kind {
    Int,
    Big,
    Date,
}

fn dataset(module: &str) -> DataSet {
    match module {
        "orders" => DataSet {
            module: "orders",
            header: vec![
                "order_no",
                "customer_id",
                "sku",
                "qty",
                "amount_idr",
                "order_date",
                "status",
                "payment_method",
            ],
            typed: vec![(3, Kind::Int), (4, Kind::Big), (5, Kind::Date)],
            key: vec!["order_no", "sku"],
        },
        "customers" => DataSet {
            module: "customers",
            header: vec![
                "customer_name",
                "wa_number",
                "city",
                "grade",
                "source_channel",
                "follow_state",
                "consumable_cycle_days",
                "notes",
            ],
            typed: vec![(6, Kind::Int)],
            key: vec!["wa_number"],
        },
        other => {
            eprintln!("no generator for module {other} (orders, customers)");
            std::process::exit(2)
        }
    }
}

impl DataSet {
    fn row(&self, i: usize, variant: u64, bad: f64, rng: &mut Rng) -> Vec<String> {
        let broken = bad > 0.0 && (rng.below(1_000_000) as f64) < bad * 1_000_000.0;
        match self.module {
            "orders" => {
                let qty = if broken {
                    "x".to_string()
                } else {
                    (1 + (rng.below(20) + variant) % 20).to_string()
                };
                vec![
                    format!("SO-{i:08}"),
                    format!("C-{:06}", rng.below(50_000)),
                    format!("SKU-{:04}", rng.below(2_000)),
                    qty,
                    (15_000 * (1 + rng.below(400) + variant)).to_string(),
                    format!("2024-{:02}-{:02}", 1 + rng.below(12), 1 + rng.below(28)),
                    rng.pick(&["paid", "pending", "shipped", "cancelled"])
                        .to_string(),
                    rng.pick(&["transfer", "qris", "cod", "card"]).to_string(),
                ]
            }
            _ => {
                let days = if broken {
                    "soon".to_string()
                } else {
                    (7 + (rng.below(60) + variant) % 60).to_string()
                };
                vec![
                    format!("{} {}", rng.pick(FIRST), rng.pick(LAST)),
                    format!("08{i:010}"),
                    rng.pick(CITIES).to_string(),
                    rng.pick(&["A", "B", "C"]).to_string(),
                    rng.pick(&["whatsapp", "shopee", "tokopedia", "walk-in"])
                        .to_string(),
                    rng.pick(&["new", "contacted", "won"]).to_string(),
                    days,
                    if variant == 0 {
                        String::new()
                    } else {
                        format!("rev {variant}")
                    },
                ]
            }
        }
    }

    /// Writes the data set in a format; returns the file's path.
    fn write(&self, dir: &Path, rows: usize, variant: u64, bad: f64, format: &str) -> PathBuf {
        // `-2` in workbook names: the second generator (shared strings and
        // date cells), so a directory from an earlier run is not reused.
        let generation = if format == "xlsx" { "-2" } else { "" };
        let path = dir.join(format!(
            "{}-{rows}-v{variant}-b{bad}{generation}.{format}",
            self.module
        ));
        if path.exists() {
            return path;
        }
        let mut rng = Rng(0x5EED_0000 + rows as u64);
        let tmp = path.with_extension("partial");
        match format {
            "csv" => {
                let mut w =
                    csv::Writer::from_writer(BufWriter::new(std::fs::File::create(&tmp).unwrap()));
                w.write_record(&self.header).unwrap();
                for i in 0..rows {
                    w.write_record(self.row(i, variant, bad, &mut rng)).unwrap();
                }
                w.flush().unwrap();
            }
            "json" => {
                let mut w = BufWriter::new(std::fs::File::create(&tmp).unwrap());
                w.write_all(b"[").unwrap();
                for i in 0..rows {
                    let obj: serde_json::Map<String, Value> = self
                        .header
                        .iter()
                        .zip(self.row(i, variant, bad, &mut rng))
                        .map(|(h, v)| (h.to_string(), json_cell(self, h, v)))
                        .collect();
                    if i > 0 {
                        w.write_all(b",\n").unwrap();
                    }
                    serde_json::to_writer(&mut w, &obj).unwrap();
                }
                w.write_all(b"]\n").unwrap();
            }
            "xlsx" => {
                // As Excel and LibreOffice write a workbook: text in the
                // shared string table, numbers and dates as typed cells
                // (the low-memory mode streams rows but keeps the table).
                let mut book = rust_xlsxwriter::Workbook::new();
                let sheet = book.add_worksheet_with_low_memory().unwrap();
                let date_format = rust_xlsxwriter::Format::new().set_num_format("yyyy-mm-dd");
                for (c, h) in self.header.iter().enumerate() {
                    sheet.write_string(0, c as u16, *h).unwrap();
                }
                for i in 0..rows {
                    for (c, v) in self.row(i, variant, bad, &mut rng).iter().enumerate() {
                        let (r, col) = (i as u32 + 1, c as u16);
                        let kind = self.typed.iter().find(|(t, _)| *t == c).map(|(_, k)| *k);
                        let date = rust_xlsxwriter::ExcelDateTime::parse_from_str(v).ok();
                        match (kind, v.parse::<f64>(), date) {
                            (Some(Kind::Date), _, Some(d)) => sheet
                                .write_date_with_format(r, col, &d, &date_format)
                                .map(|_| ()),
                            (Some(_), Ok(n), _) => sheet.write_number(r, col, n).map(|_| ()),
                            _ => sheet.write_string(r, col, v).map(|_| ()),
                        }
                        .unwrap();
                    }
                }
                book.save(&tmp).unwrap();
            }
            "ods" => {
                // As LibreOffice saves a workbook: the XLSX above, converted
                // by LibreOffice itself (`soffice` on the PATH).
                let xlsx = self.write(dir, rows, variant, bad, "xlsx");
                let out = dir.join("ods-out");
                std::fs::create_dir_all(&out).unwrap();
                let status = Command::new("soffice")
                    .arg(format!(
                        "-env:UserInstallation=file://{}",
                        dir.join("soffice-profile").display()
                    ))
                    .args([
                        "--headless",
                        "--norestore",
                        "--convert-to",
                        "ods",
                        "--outdir",
                    ])
                    .arg(&out)
                    .arg(&xlsx)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .expect("LibreOffice (soffice) converts the workbook to ODS");
                assert!(status.success(), "soffice failed");
                let stem = xlsx.file_stem().unwrap().to_string_lossy();
                std::fs::rename(out.join(format!("{stem}.ods")), &tmp).unwrap();
            }
            other => {
                eprintln!("unknown format {other}");
                std::process::exit(2)
            }
        }
        std::fs::rename(&tmp, &path).unwrap();
        path
    }
}

fn json_cell(set: &DataSet, header: &str, v: String) -> Value {
    let idx = set.header.iter().position(|h| *h == header).unwrap_or(0);
    match set.typed.iter().find(|(i, _)| *i == idx) {
        Some((_, Kind::Int | Kind::Big)) => v
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or(Value::String(v)),
        _ => Value::String(v),
    }
}

// ---------------------------------------------------------------------------
// The server under test.

struct Server {
    child: Child,
    base: String,
    db: String,
    bin: PathBuf,
    /// The settings file, which `keys create` reads too (the ledger's key).
    config: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(bin: &Path, db: &str, dir: &Path) -> (Server, String) {
        Server::start_with(bin, db, dir, None)
    }

    /// The server, with a catalog file of its own when given.
    fn start_with(bin: &Path, db: &str, dir: &Path, catalog: Option<&Path>) -> (Server, String) {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let out = dir.join("server.out");
        // The harness polls its jobs every 20 ms: no per-key rate limit.
        let config = dir.join("bench.toml");
        let mut settings = "uploads_per_minute = 0\nrequests_per_minute = 0\n".to_string();
        // The ledger's key beside the harness's files, not in the working directory.
        settings.push_str(&format!(
            "ledger_key_file = {:?}\nledger_checkpoint_file = {:?}\n",
            dir.join("ledger-key").display().to_string(),
            dir.join("ledger-checkpoint").display().to_string()
        ));
        if let Some(c) = catalog {
            settings.push_str(&format!("catalog = {:?}\n", c.display().to_string()));
        }
        std::fs::write(&config, settings).unwrap();
        let child = Command::new(bin)
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--database",
                db,
                "--config",
                config.to_str().unwrap_or_default(),
            ])
            .env("IMPORTGATE_LOG", "warn")
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(dir.join("server.err")).unwrap())
            .spawn()
            .expect("start importgate (build it first: cargo build --release)");
        let server = Server {
            child,
            base: format!("http://127.0.0.1:{port}"),
            db: db.to_string(),
            bin: bin.to_path_buf(),
            config: config.clone(),
        };
        for _ in 0..400 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                let admin = std::fs::read_to_string(&out)
                    .unwrap_or_default()
                    .lines()
                    .find(|l| l.starts_with("igk_"))
                    .unwrap_or("")
                    .to_string();
                return (server, admin);
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("server did not start");
    }

    fn key(&self, name: &str, role: &str) -> String {
        let out = Command::new(&self.bin)
            .args([
                "keys",
                "create",
                "--name",
                name,
                "--role",
                role,
                "--database",
                &self.db,
            ])
            .arg("--config")
            .arg(&self.config)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap_or("")
            .to_string()
    }

    /// Peak resident memory of the server so far (VmHWM), in MB.
    fn peak_mb(&self) -> f64 {
        self.status_mb("VmHWM:")
    }

    /// Resident memory of the server now (VmRSS), in MB.
    fn rss_mb(&self) -> f64 {
        self.status_mb("VmRSS:")
    }

    fn status_mb(&self, field: &str) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(0.0)
    }

    /// The peak since the last call (printed on stderr with `phase`), and
    /// the overall peak so far kept in `overall`: writing 5 to
    /// `clear_refs` resets the kernel's high-water mark, so each phase's
    /// own peak shows which one needs the memory.
    fn phase_peak(&self, phase: &str, overall: &mut f64) {
        let mb = self.peak_mb();
        eprintln!("peak RSS during {phase}: {mb:.0} MB");
        *overall = overall.max(mb);
        let _ = std::fs::write(format!("/proc/{}/clear_refs", self.child.id()), "5");
    }
}

fn content_type(format: &str) -> &'static str {
    match format {
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ods" => "application/vnd.oasis.opendocument.spreadsheet",
        "json" => "application/json",
        _ => "text/csv",
    }
}

struct Api {
    client: reqwest::Client,
    base: String,
}

impl Api {
    async fn job(&self, key: &str, id: &str) -> Value {
        self.client
            .get(format!("{}/api/jobs/{id}", self.base))
            .header("X-API-Key", key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Polls until the job leaves the service's work states.
    async fn settle(&self, key: &str, id: &str) -> Value {
        loop {
            let job = self.job(key, id).await;
            if !matches!(
                job["state"].as_str(),
                Some("validating" | "committing" | "rolling_back")
            ) {
                return job;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn upload(
        &self,
        key: &str,
        module: &str,
        query: &str,
        path: &Path,
        format: &str,
    ) -> (Duration, Value) {
        let body = tokio::fs::read(path).await.unwrap();
        let t = Instant::now();
        // No module: a workbook (API.md section 16).
        let target = match module {
            "" => String::new(),
            m => format!("/{m}"),
        };
        let resp = self
            .client
            .post(format!("{}/api/import{target}{query}", self.base))
            .header("X-API-Key", key)
            .header("Content-Type", content_type(format))
            .header("Prefer", "wait=60")
            .body(body)
            .send()
            .await
            .unwrap();
        let job: Value = resp.json().await.unwrap();
        let job = self
            .settle(key, job["id"].as_str().unwrap_or_default())
            .await;
        (t.elapsed(), job)
    }

    /// A JSON request (no body for `null`); the answer's JSON.
    async fn post(&self, key: &str, path: &str, body: &Value) -> Value {
        let mut request = self
            .client
            .post(format!("{}{path}", self.base))
            .header("X-API-Key", key);
        if !body.is_null() {
            request = request.json(body);
        }
        request.send().await.unwrap().json().await.unwrap()
    }

    async fn act(&self, key: &str, id: &str, action: &str) -> (Duration, Value) {
        let t = Instant::now();
        self.client
            .post(format!("{}/api/jobs/{id}/{action}", self.base))
            .header("X-API-Key", key)
            .header("Prefer", "wait=60")
            .send()
            .await
            .unwrap();
        let job = self.settle(key, id).await;
        (t.elapsed(), job)
    }

    async fn preview(&self, key: &str, id: &str, offset: usize) -> Duration {
        let t = Instant::now();
        let resp = self
            .client
            .get(format!(
                "{}/api/jobs/{id}/preview?offset={offset}&limit=100",
                self.base
            ))
            .header("X-API-Key", key)
            .send()
            .await
            .unwrap();
        let _ = resp.bytes().await.unwrap();
        t.elapsed()
    }
}

fn expect_state(job: &Value, want: &str, what: &str) {
    if job["state"] != want {
        eprintln!("{what}: expected {want}, got {}", job);
        std::process::exit(1);
    }
}

// ---------------------------------------------------------------------------
// References.

/// The bare loop: parse every record and convert its typed columns.
fn bare_parse(path: &Path, set: &DataSet) -> Duration {
    let t = Instant::now();
    let mut reader = csv::Reader::from_path(path).unwrap();
    let mut record = csv::ByteRecord::new();
    let (mut ints, mut dates) = (0i64, 0i64);
    while reader.read_byte_record(&mut record).unwrap() {
        for &(i, kind) in &set.typed {
            let text = std::str::from_utf8(&record[i]).unwrap_or("");
            match kind {
                Kind::Int => ints += text.parse::<i32>().map(i64::from).unwrap_or(0),
                Kind::Big => ints += text.parse::<i64>().unwrap_or(0),
                Kind::Date => {
                    dates += chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
                        .map(|_| 1)
                        .unwrap_or(0);
                }
            }
        }
        for field in record.iter() {
            ints += std::str::from_utf8(field)
                .map(|s| s.len() as i64)
                .unwrap_or(0)
                & 1;
        }
    }
    std::hint::black_box((ints, dates));
    t.elapsed()
}

/// A table of the data set's shape: its typed columns, its natural key
/// unique as in the service's table; `with_id` adds a surrogate key as the
/// service's tables have (`sqlite3 .import` fills columns by position, so
/// its table has exactly the file's columns). Key columns are
/// `varchar(255)`, as MariaDB indexes no `text` whole.
fn ddl(set: &DataSet, table: &str, id: &str) -> String {
    let cols: Vec<String> = set
        .header
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let ty = match set.typed.iter().find(|(t, _)| *t == i).map(|(_, k)| *k) {
                Some(Kind::Int) => "integer",
                Some(Kind::Big) => "bigint",
                Some(Kind::Date) => "date",
                None if set.key.contains(h) => "varchar(255)",
                None => "text",
            };
            format!("{h} {ty}")
        })
        .collect();
    format!(
        "CREATE TABLE {table} ({id}{}, UNIQUE ({}))",
        cols.join(", "),
        set.key.join(", ")
    )
}

/// PostgreSQL `\copy` of the same file into a table of the same shape.
fn pg_copy(pg: &str, path: &Path, set: &DataSet) -> Option<Duration> {
    let db = format!("{}/postgres", pg.trim_end_matches('/'));
    let table = format!("ref_{}", set.module);
    let psql = |sql: &str| {
        Command::new("psql")
            .args([db.as_str(), "-qc", sql])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .ok()
    };
    psql(&format!("DROP TABLE IF EXISTS {table}"))?;
    psql(&ddl(set, &table, "id bigserial PRIMARY KEY, "))?;
    let cols = set.header.join(", ");
    let t = Instant::now();
    let ok = psql(&format!(
        "\\copy {table} ({cols}) FROM '{}' WITH (FORMAT csv, HEADER true)",
        path.display()
    ))?
    .success();
    let d = t.elapsed();
    psql(&format!("DROP TABLE IF EXISTS {table}"));
    ok.then_some(d)
}

/// The `mariadb` client's arguments for the server of `url`
/// (`mysql://user@host:port`).
fn mariadb_args(url: &str) -> Vec<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.trim_end_matches('/');
    let (user, host) = rest.split_once('@').unwrap_or(("root", rest));
    let (host, port) = host.split_once(':').unwrap_or((host, "3306"));
    ["-h", host, "-P", port, "-u", user]
        .map(String::from)
        .to_vec()
}

/// Runs `sql` through the `mariadb` client; whether it succeeded.
fn mariadb(url: &str, sql: &str) -> bool {
    Command::new("mariadb")
        .args(mariadb_args(url))
        .args(["--local-infile=1", "-e", sql])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The server's own loader: `LOAD DATA LOCAL INFILE` of the same file, by
/// the `mariadb` client, into an InnoDB table of the same shape.
fn mysql_load(url: &str, path: &Path, set: &DataSet) -> Option<Duration> {
    let db = "igbench_ref";
    let table = format!("{db}.ref_{}", set.module);
    let setup = format!(
        "DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db} CHARACTER SET utf8mb4; {}",
        ddl(set, &table, "id BIGINT AUTO_INCREMENT PRIMARY KEY, ")
    );
    mariadb(url, &setup).then_some(())?;
    let cols = set.header.join(", ");
    let t = Instant::now();
    let ok = mariadb(
        url,
        &format!(
            "LOAD DATA LOCAL INFILE '{}' INTO TABLE {table} CHARACTER SET utf8mb4 \
             FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' \
             LINES TERMINATED BY '\\n' IGNORE 1 LINES ({cols})",
            path.display()
        ),
    );
    let d = t.elapsed();
    mariadb(url, &format!("DROP DATABASE IF EXISTS {db}"));
    ok.then_some(d)
}

/// `sqlite3 .import` of the same file into a table of the same shape.
fn sqlite_import(dir: &Path, path: &Path, set: &DataSet) -> Option<Duration> {
    let db = dir.join("ref.db");
    let _ = std::fs::remove_file(&db);
    let table = format!("ref_{}", set.module);
    let create = ddl(set, &table, "");
    let script = format!(
        "{create};\n.import --csv --skip 1 {} {table}\n",
        path.display()
    );
    let t = Instant::now();
    let mut child = Command::new("sqlite3")
        .arg(&db)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(script.as_bytes()).ok()?;
    let ok = child.wait().ok()?.success();
    let d = t.elapsed();
    let _ = std::fs::remove_file(&db);
    ok.then_some(d)
}

// ---------------------------------------------------------------------------
// The run.

#[derive(Default, Clone)]
struct Figures {
    validate: Vec<f64>,
    commit: Vec<f64>,
    upsert_validate: Vec<f64>,
    upsert_commit: Vec<f64>,
    rollback_upsert: Vec<f64>,
    rollback: Vec<f64>,
    preview_ms: Vec<f64>,
    peak_mb: Vec<f64>,
    reference: Vec<f64>,
    bare: Vec<f64>,
}

fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn fresh_db(o: &Options, backend: &str, run: usize) -> String {
    match backend {
        "mysql" => {
            let name = format!("igbench_{run}");
            let sql = format!(
                "DROP DATABASE IF EXISTS {name}; \
                 CREATE DATABASE {name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
            );
            if !mariadb(&o.mysql, &sql) {
                eprintln!(
                    "MariaDB is not reachable at {} (give --mysql or leave mysql out of --backends)",
                    o.mysql
                );
                std::process::exit(1);
            }
            format!("{}/{name}", o.mysql.trim_end_matches('/'))
        }
        "postgres" => {
            let name = format!("igbench_{run}");
            let admin = format!("{}/postgres", o.pg.trim_end_matches('/'));
            for sql in [
                format!("DROP DATABASE IF EXISTS {name}"),
                format!("CREATE DATABASE {name}"),
            ] {
                let ok = Command::new("psql")
                    .args([admin.as_str(), "-qc", &sql])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                if !ok.is_ok_and(|s| s.success()) {
                    eprintln!(
                        "PostgreSQL is not reachable at {} (give --pg or --backends sqlite)",
                        o.pg
                    );
                    std::process::exit(1);
                }
            }
            format!("{}/{name}", o.pg.trim_end_matches('/'))
        }
        _ => {
            let path = o.dir.join(format!("bench-{run}.db"));
            for ext in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
            }
            format!("sqlite://{}", path.display())
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn one_run(
    o: &Options,
    set: &DataSet,
    rows: usize,
    format: &str,
    backend: &str,
    run: usize,
    file: &Path,
    upsert_file: &Path,
    f: &mut Figures,
) {
    let db = fresh_db(o, backend, run);
    let (server, _admin) = Server::start(&o.bin, &db, &o.dir);
    let sub = server.key("Budi Santoso", "submitter");
    let apr = server.key("Siti Rahayu", "approver");
    let api = Api {
        client: reqwest::Client::new(),
        base: server.base.clone(),
    };

    let (d, job) = api
        .upload(&sub, set.module, "?on_error=skip", file, format)
        .await;
    expect_state(&job, "awaiting_approval", "validation");
    f.validate.push(d.as_secs_f64());
    let mut peak = 0.0;
    server.phase_peak("validation", &mut peak);
    let id = job["id"].as_str().unwrap().to_string();
    let mut previews: Vec<f64> = Vec::new();
    for _ in 0..10 {
        previews.push(api.preview(&sub, &id, rows / 2).await.as_secs_f64() * 1000.0);
    }
    f.preview_ms.push(median(&previews));
    let (d, job) = api.act(&apr, &id, "approve").await;
    expect_state(&job, "committed", "commit");
    f.commit.push(d.as_secs_f64());
    server.phase_peak("preview and commit", &mut peak);

    if format == "csv" {
        let (d, job) = api
            .upload(
                &sub,
                set.module,
                "?mode=upsert&on_error=skip",
                upsert_file,
                format,
            )
            .await;
        expect_state(&job, "awaiting_approval", "upsert validation");
        f.upsert_validate.push(d.as_secs_f64());
        server.phase_peak("upsert validation", &mut peak);
        let uid = job["id"].as_str().unwrap().to_string();
        let (d, job) = api.act(&apr, &uid, "approve").await;
        expect_state(&job, "committed", "upsert commit");
        f.upsert_commit.push(d.as_secs_f64());
        server.phase_peak("upsert commit", &mut peak);
        api.act(&sub, &uid, "rollback").await;
        let (d, job) = api.act(&apr, &uid, "approve").await;
        expect_state(&job, "rolled_back", "upsert rollback");
        f.rollback_upsert.push(d.as_secs_f64());
        server.phase_peak("upsert rollback", &mut peak);
    }
    api.act(&sub, &id, "rollback").await;
    let (d, job) = api.act(&apr, &id, "approve").await;
    expect_state(&job, "rolled_back", "rollback");
    f.rollback.push(d.as_secs_f64());
    server.phase_peak("rollback", &mut peak);
    f.peak_mb.push(peak);
    drop(server);

    if format == "csv" {
        f.bare.push(bare_parse(file, set).as_secs_f64());
        let reference = match backend {
            "postgres" => pg_copy(&o.pg, file, set),
            "mysql" => mysql_load(&o.mysql, file, set),
            _ => sqlite_import(&o.dir, file, set),
        };
        if let Some(r) = reference {
            f.reference.push(r.as_secs_f64());
        }
    }
}

fn ratio(a: f64, b: f64) -> String {
    if a.is_finite() && b.is_finite() && b > 0.0 {
        format!("{:.2}×", a / b)
    } else {
        "–".into()
    }
}

fn secs(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2} s")
    } else {
        "–".into()
    }
}

/// The built-in catalog without its references: the same modules, so the
/// same tables and plans, and no reference checks.
fn catalog_without_references(dir: &Path) -> PathBuf {
    let builtin = include_str!("../src/catalog/modules.toml");
    let mut out = String::new();
    let mut skipping = false;
    for line in builtin.lines() {
        if line.starts_with("[[") {
            skipping = line == "[[module.reference]]";
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    let path = dir.join("catalog-without-references.toml");
    std::fs::write(&path, out).unwrap();
    path
}

/// `products` CSV of `n` rows whose skus are those the orders generator
/// names (`SKU-0000` …), so every reference is found.
fn products_csv(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join(format!("products-{n}.csv"));
    if !path.exists() {
        let mut w = csv::Writer::from_writer(BufWriter::new(std::fs::File::create(&path).unwrap()));
        w.write_record(["sku", "product_name", "price_idr"])
            .unwrap();
        for i in 0..n {
            w.write_record([format!("SKU-{i:04}"), format!("Produk {i}"), "50000".into()])
                .unwrap();
        }
        w.flush().unwrap();
    }
    path
}

/// One side of the references comparison: a fresh database with `products`
/// committed, then the orders validated; the validation's time.
async fn validate_orders(
    o: &Options,
    backend: &str,
    run: usize,
    catalog: Option<&Path>,
    products: &Path,
    orders: &Path,
) -> f64 {
    let db = fresh_db(o, backend, run);
    let (server, _admin) = Server::start_with(&o.bin, &db, &o.dir, catalog);
    let sub = server.key("Budi Santoso", "submitter");
    let apr = server.key("Siti Rahayu", "approver");
    let api = Api {
        client: reqwest::Client::new(),
        base: server.base.clone(),
    };
    let (_, job) = api.upload(&sub, "products", "", products, "csv").await;
    expect_state(&job, "awaiting_approval", "products validation");
    let (_, job) = api.act(&apr, job["id"].as_str().unwrap(), "approve").await;
    expect_state(&job, "committed", "products commit");
    let (d, job) = api
        .upload(&sub, "orders", "?on_error=skip", orders, "csv")
        .await;
    expect_state(&job, "awaiting_approval", "orders validation");
    assert_eq!(job["counts"]["warnings"], 0, "every sku is a product");
    d.as_secs_f64()
}

/// Validating orders with their `sku` reference against a products table,
/// and without it, side by side in each run.
async fn references_comparison(o: &Options, products: usize) {
    let catalog = catalog_without_references(&o.dir);
    let products_file = products_csv(&o.dir, products);
    let set = dataset("orders");
    println!(
        "importgate benchmark — references: orders validated against {products} products, {} run(s), medians\n",
        o.runs
    );
    println!("| rows | backend | without references | with references | ×without |");
    println!("|---:|---|---:|---:|---:|");
    for &rows in &o.rows {
        let orders = set.write(&o.dir, rows, 0, o.bad, "csv");
        for backend in &o.backends {
            let (mut off, mut on) = (Vec::new(), Vec::new());
            for run in 0..o.runs {
                off.push(
                    validate_orders(o, backend, run, Some(&catalog), &products_file, &orders).await,
                );
                on.push(validate_orders(o, backend, run, None, &products_file, &orders).await);
            }
            let (off, on) = (median(&off), median(&on));
            println!(
                "| {rows} | {backend} | {} | {} | {} |",
                secs(off),
                secs(on),
                ratio(on, off)
            );
        }
    }
}

/// `products` as a JSON array of `n` rows (`SKU-0000` …, the skus the
/// orders generator names).
fn products_json(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join(format!("products-{n}.json"));
    if !path.exists() {
        let mut w = BufWriter::new(std::fs::File::create(&path).unwrap());
        w.write_all(b"[").unwrap();
        for i in 0..n {
            if i > 0 {
                w.write_all(b",\n").unwrap();
            }
            let row = serde_json::json!({"sku": format!("SKU-{i:04}"), "product_name": format!("Produk {i}"), "price_idr": 50000});
            serde_json::to_writer(&mut w, &row).unwrap();
        }
        w.write_all(b"]\n").unwrap();
        w.flush().unwrap();
    }
    path
}

/// The workbook of the two files: `{"products": [...], "orders": [...]}`.
fn workbook_json(dir: &Path, products: &Path, orders: &Path) -> PathBuf {
    let path = dir.join(format!(
        "workbook-{}-{}.json",
        products.file_stem().unwrap().to_string_lossy(),
        orders.file_stem().unwrap().to_string_lossy()
    ));
    if !path.exists() {
        let mut w = BufWriter::new(std::fs::File::create(&path).unwrap());
        w.write_all(b"{\"products\": ").unwrap();
        std::io::copy(&mut std::fs::File::open(products).unwrap(), &mut w).unwrap();
        w.write_all(b", \"orders\": ").unwrap();
        std::io::copy(&mut std::fs::File::open(orders).unwrap(), &mut w).unwrap();
        w.write_all(b"}\n").unwrap();
        w.flush().unwrap();
    }
    path
}

/// Validation and commit of one side of the workbook comparison on a
/// fresh database: each file uploaded, validated and committed in turn
/// (`files`: module, path), their times summed.
async fn upload_and_commit(
    o: &Options,
    backend: &str,
    run: usize,
    files: &[(&str, &Path)],
) -> (f64, f64) {
    let db = fresh_db(o, backend, run);
    let (server, _admin) = Server::start(&o.bin, &db, &o.dir);
    let sub = server.key("Budi Santoso", "submitter");
    let apr = server.key("Siti Rahayu", "approver");
    let api = Api {
        client: reqwest::Client::new(),
        base: server.base.clone(),
    };
    let (mut validate, mut commit) = (0.0, 0.0);
    for (module, path) in files {
        let (d, job) = api.upload(&sub, module, "", path, "json").await;
        expect_state(&job, "awaiting_approval", "validation");
        assert_eq!(
            job["counts"]["warnings"], 0,
            "every sku is a product: {job}"
        );
        validate += d.as_secs_f64();
        let (d, job) = api.act(&apr, job["id"].as_str().unwrap(), "approve").await;
        expect_state(&job, "committed", "commit");
        commit += d.as_secs_f64();
    }
    (validate, commit)
}

/// A workbook of products and the orders naming them against the two
/// files uploaded one after the other (API.md section 16), side by side
/// in each run: validation and commit, each the sum of the two files'.
async fn workbook_comparison(o: &Options, products: usize) {
    let products_file = products_json(&o.dir, products);
    let set = dataset("orders");
    println!(
        "importgate benchmark — workbook: {products} products and the orders naming them, {} run(s), medians\n",
        o.runs
    );
    println!(
        "| orders | backend | two files: validate | workbook: validate | × | two files: commit | workbook: commit | × |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    for &rows in &o.rows {
        let orders = set.write(&o.dir, rows, 0, 0.0, "json");
        let book = workbook_json(&o.dir, &products_file, &orders);
        for backend in &o.backends {
            let (mut sv, mut sc, mut wv, mut wc) = (vec![], vec![], vec![], vec![]);
            for run in 0..o.runs {
                let files = [
                    ("products", products_file.as_path()),
                    ("orders", orders.as_path()),
                ];
                let (v, c) = upload_and_commit(o, backend, 2 * run, &files).await;
                sv.push(v);
                sc.push(c);
                let (v, c) =
                    upload_and_commit(o, backend, 2 * run + 1, &[("", book.as_path())]).await;
                wv.push(v);
                wc.push(c);
            }
            let (sv, sc, wv, wc) = (median(&sv), median(&sc), median(&wv), median(&wc));
            println!(
                "| {rows} | {backend} | {} | {} | {} | {} | {} | {} |",
                secs(sv),
                secs(wv),
                ratio(wv, sv),
                secs(sc),
                secs(wc),
                ratio(wc, sc)
            );
        }
    }
}

/// The rule set of the rules comparison: two normalizers and three checks
/// over orders (API.md section 14), all of which every generated row
/// passes, so both sides stage the same rows.
fn orders_rules() -> Value {
    serde_json::json!([
        {"id": "status", "column": "status", "normalize": "lower"},
        {"id": "date", "column": "order_date", "normalize": "date_id"},
        {"id": "qty", "check": "row.qty > 0", "message": "qty must be positive", "columns": ["qty"]},
        {"id": "amount", "check": "row.amount_idr >= row.qty", "message": "amount below qty", "columns": ["amount_idr"]},
        {"id": "status_known", "check": "row.status in ['paid', 'pending', 'shipped', 'cancelled']",
         "message": "unknown status", "columns": ["status"]},
    ])
}

/// One side of the rules comparison: a fresh database, the rule set
/// proposed and approved when `rules`, then the orders validated; the
/// validation's time.
async fn validate_with_rules(
    o: &Options,
    backend: &str,
    run: usize,
    rules: bool,
    orders: &Path,
) -> f64 {
    let db = fresh_db(o, backend, run);
    let (server, _admin) = Server::start_with(&o.bin, &db, &o.dir, None);
    let admin = server.key("Dewi Anggraini", "admin");
    let sub = server.key("Budi Santoso", "submitter");
    let apr = server.key("Siti Rahayu", "approver");
    let api = Api {
        client: reqwest::Client::new(),
        base: server.base.clone(),
    };
    if rules {
        let body = serde_json::json!({"rules": orders_rules()});
        let proposal = api.post(&admin, "/api/modules/orders/rules", &body).await;
        let id = proposal["id"]
            .as_str()
            .unwrap_or_else(|| panic!("a proposal: {proposal}"));
        let approve = format!("/api/rule-proposals/{id}/approve");
        let decided = api.post(&apr, &approve, &Value::Null).await;
        assert_eq!(decided["state"], "approved", "{decided}");
    }
    let (d, job) = api.upload(&sub, "orders", "", orders, "csv").await;
    expect_state(&job, "awaiting_approval", "orders validation");
    assert_eq!(job["counts"]["errors"], 0, "every row passes the rules");
    d.as_secs_f64()
}

/// Validating orders with and without a rule set, side by side in each run.
async fn rules_comparison(o: &Options) {
    let set = dataset("orders");
    println!(
        "importgate benchmark — rules: orders validated with two normalizers and three checks, {} run(s), medians\n",
        o.runs
    );
    println!("| rows | backend | without rules | with rules | ×without |");
    println!("|---:|---|---:|---:|---:|");
    for &rows in &o.rows {
        let orders = set.write(&o.dir, rows, 0, 0.0, "csv");
        for backend in &o.backends {
            let (mut off, mut on) = (Vec::new(), Vec::new());
            for run in 0..o.runs {
                off.push(validate_with_rules(o, backend, run, false, &orders).await);
                on.push(validate_with_rules(o, backend, run, true, &orders).await);
            }
            let (off, on) = (median(&off), median(&on));
            println!(
                "| {rows} | {backend} | {} | {} | {} |",
                secs(off),
                secs(on),
                ratio(on, off)
            );
        }
    }
}

/// Orders CSV of `rows` rows whose `qty` is not a number in `bad` rows,
/// spread evenly; the file and the row numbers (header = row 1) to fix.
fn orders_with_bad_rows(dir: &Path, rows: usize, bad: usize) -> (PathBuf, Vec<usize>) {
    let set = dataset("orders");
    let step = (rows / bad.max(1)).max(1);
    let broken: Vec<usize> = (0..bad)
        .map(|k| k * step + step / 2)
        .filter(|&i| i < rows)
        .collect();
    let path = dir.join(format!("orders-{rows}-broken{bad}.csv"));
    if !path.exists() {
        let mut rng = Rng(0x5EED_0000 + rows as u64);
        let tmp = path.with_extension("partial");
        let mut w = csv::Writer::from_writer(BufWriter::new(std::fs::File::create(&tmp).unwrap()));
        w.write_record(&set.header).unwrap();
        let mut next = broken.iter().peekable();
        for i in 0..rows {
            let mut row = set.row(i, 0, 0.0, &mut rng);
            if next.peek() == Some(&&i) {
                row[3] = "tiga".into();
                next.next();
            }
            w.write_record(row).unwrap();
        }
        w.flush().unwrap();
        drop(w);
        std::fs::rename(&tmp, &path).unwrap();
    }
    (path, broken.into_iter().map(|i| i + 2).collect())
}

/// The errored-rows file of a job as XLSX (API.md section 11), read to
/// its end: its time and size.
async fn errored_rows_xlsx(api: &Api, key: &str, id: &str) -> (f64, usize) {
    let t = Instant::now();
    let resp = api
        .client
        .get(format!(
            "{}/api/jobs/{id}/errors?format=xlsx&layout=rows",
            api.base
        ))
        .header("X-API-Key", key)
        .send()
        .await
        .unwrap();
    assert!(
        resp.status().is_success(),
        "errored rows: {}",
        resp.status()
    );
    let bytes = resp.bytes().await.unwrap().len();
    (t.elapsed().as_secs_f64(), bytes)
}

/// What one run of the revision comparison measured.
struct Revised {
    first: f64,
    revision: f64,
    /// The errored-rows XLSX: seconds, bytes, and how far the server's
    /// memory rose over what it held before, while it was built and sent
    /// (MB).
    download: (f64, usize, f64),
}

/// One run of the revision comparison: the first validation (ending
/// `failed` on the bad rows), the errored-rows XLSX download, and the
/// revision fixing them, timed from its request to `awaiting_approval`.
async fn revise_run(o: &Options, backend: &str, run: usize, file: &Path, fix: &[usize]) -> Revised {
    let db = fresh_db(o, backend, run);
    let (server, _admin) = Server::start(&o.bin, &db, &o.dir);
    let sub = server.key("Budi Santoso", "submitter");
    let api = Api {
        client: reqwest::Client::new(),
        base: server.base.clone(),
    };
    let (first, job) = api.upload(&sub, "orders", "", file, "csv").await;
    expect_state(&job, "failed", "first validation");
    assert_eq!(job["counts"]["errors"], fix.len(), "{job}");
    let mut peak = 0.0;
    server.phase_peak("validation", &mut peak);
    let before = server.rss_mb();
    let (took, bytes) = errored_rows_xlsx(&api, &sub, job["id"].as_str().unwrap()).await;
    let mut download_peak = 0.0;
    server.phase_peak("errored-rows XLSX", &mut download_peak);
    let download_peak = download_peak - before;
    let fixes: Vec<Value> = (fix.iter())
        .map(|&row| serde_json::json!({"row": row, "column": "qty", "value": "3"}))
        .collect();
    let t = Instant::now();
    let resp = api
        .client
        .post(format!(
            "{}/api/jobs/{}/revisions",
            api.base,
            job["id"].as_str().unwrap()
        ))
        .header("X-API-Key", &sub)
        .json(&serde_json::json!({"fixes": fixes}))
        .send()
        .await
        .unwrap();
    let revised = if resp.status().is_success() {
        let revision: Value = resp.json().await.unwrap();
        let revision = api
            .settle(&sub, revision["id"].as_str().unwrap_or_default())
            .await;
        expect_state(&revision, "awaiting_approval", "revision");
        t.elapsed().as_secs_f64()
    } else {
        // More fixes than one revision takes: the download is still measured.
        eprintln!(
            "revision refused: {}",
            resp.text().await.unwrap_or_default()
        );
        f64::NAN
    };
    Revised {
        first: first.as_secs_f64(),
        revision: revised,
        download: (took, bytes, download_peak),
    }
}

/// The first validation of orders with `bad` bad rows, and a revision
/// fixing them, side by side in each run (API.md section 11: a revision of
/// fixes re-checks only the rows it touches).
async fn revision_comparison(o: &Options, bad: usize) {
    println!(
        "importgate benchmark — revisions: orders with {bad} bad rows, then a revision of {bad} fixes, {} run(s), medians\n",
        o.runs
    );
    println!(
        "| rows | backend | first validation | revision to the gate | first ÷ revision | errored-rows XLSX | its size | memory it took |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    for &rows in &o.rows {
        let (file, fix) = orders_with_bad_rows(&o.dir, rows, bad);
        for backend in &o.backends {
            let mut runs = Vec::new();
            for run in 0..o.runs {
                runs.push(revise_run(o, backend, run, &file, &fix).await);
            }
            let pick = |f: fn(&Revised) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
            let (a, b) = (pick(|r| r.first), pick(|r| r.revision));
            let (took, mb) = (pick(|r| r.download.0), pick(|r| r.download.2));
            println!(
                "| {rows} | {backend} | {} | {:.0} ms | {:.0}× | {} | {:.1} MB | {mb:.0} MB |",
                secs(a),
                b * 1000.0,
                a / b,
                secs(took),
                runs[0].download.1 as f64 / 1e6
            );
        }
    }
}

#[tokio::main]
async fn main() {
    let o = options();
    std::fs::create_dir_all(&o.dir).unwrap();
    if !o.bin.exists() {
        eprintln!(
            "{} not found: build it first (cargo build --release)",
            o.bin.display()
        );
        std::process::exit(1);
    }
    if let Some(products) = o.references {
        references_comparison(&o, products).await;
        return;
    }
    if o.rules {
        rules_comparison(&o).await;
        return;
    }
    if let Some(bad) = o.revisions {
        revision_comparison(&o, bad).await;
        return;
    }
    if let Some(products) = o.workbook {
        workbook_comparison(&o, products).await;
        return;
    }
    let mut report = String::new();
    let _ = writeln!(
        report,
        "importgate benchmark — {} run(s) each, medians; bad rows {:.1}%",
        o.runs,
        o.bad * 100.0
    );
    let _ = writeln!(
        report,
        "\n| module | rows | format | backend | validate | rows/s | MB/s | bare loop | ×bare | commit | reference | ×ref | upsert validate | upsert commit | ×insert | rollback | ×commit | preview p50 | peak RSS |"
    );
    let _ = writeln!(
        report,
        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    print!("{report}");
    for module in &o.modules {
        let set = dataset(module);
        for &rows in &o.rows {
            for format in &o.formats {
                let file = set.write(&o.dir, rows, 0, o.bad, format);
                let upsert = set.write(&o.dir, rows, 1, o.bad, "csv");
                let mb = std::fs::metadata(&file)
                    .map(|m| m.len() as f64 / 1e6)
                    .unwrap_or(0.0);
                for backend in &o.backends {
                    let mut f = Figures::default();
                    for run in 0..o.runs {
                        one_run(&o, &set, rows, format, backend, run, &file, &upsert, &mut f).await;
                    }
                    let (v, c) = (median(&f.validate), median(&f.commit));
                    let line = format!(
                        "| {} | {rows} | {format} | {backend} | {} | {:.0} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} ms | {:.0} MB |",
                        set.module,
                        secs(v),
                        rows as f64 / v,
                        mb / v,
                        secs(median(&f.bare)),
                        ratio(v, median(&f.bare)),
                        secs(c),
                        secs(median(&f.reference)),
                        ratio(c, median(&f.reference)),
                        secs(median(&f.upsert_validate)),
                        secs(median(&f.upsert_commit)),
                        ratio(median(&f.upsert_commit), c),
                        secs(median(&f.rollback)),
                        ratio(median(&f.rollback), c),
                        median(&f.preview_ms),
                        median(&f.peak_mb),
                    );
                    println!("{line}");
                    report.push_str(&line);
                    report.push('\n');
                }
            }
        }
    }
    let _ = std::fs::write(o.dir.join("report.md"), report);
    println!(
        "\nreference: PostgreSQL \\copy, MariaDB LOAD DATA LOCAL INFILE (mariadb client) or sqlite3 .import\n\
         of the same CSV into a table of the same shape (types, natural key unique);\n\
         bare loop: the csv crate parsing every record and converting its typed columns.\n\
         upsert: the same keys with changed values (every row an update), uploaded\n\
         into the table the insert filled (upsert validate: every key found there); rollback: of the insert job."
    );
}
