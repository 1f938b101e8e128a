//! `importgate demo`: a ledger with jobs in every state, made through the
//! real pipeline, so a newcomer can click through the whole Human-Gate.
//!
//! The jobs are real uploads of generated CSV files (Indonesian names,
//! IDR amounts) validated by the workers, then moved by the same gate
//! operation the API and the console call ([`service::gate::make_move`]). The
//! service runs in simulation, so commits and rollbacks are recorded but
//! write nothing; a few rows of "existing business data" are put in the
//! customers and products tables first ([`service::seed`]), so that
//! updates have something to change. Every persistent state exists once the seeding ends; one job is
//! left `validating` for [`HOLD`] (the demo holds its work lease), and
//! `committing` / `rolling_back` pass in a moment.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value as Json, json};

use crate::ids::JobId;
use crate::ingest::Format;
use crate::keys::{KeyRecord, Role};
use crate::ledger::revision::Changes;
use crate::ledger::{Fix, Job, JobState as State, Mode, Move, OnError};
use crate::service::keys::NewKey;
use crate::service::uploads::{self, Params};
use crate::service::{self, App, gate, jobs, revisions, work, workbooks};

/// The keys the demo prints (secrets, shown once) and who they belong to.
pub struct DemoKeys {
    pub submitter: (KeyRecord, String),
    pub approver: (KeyRecord, String),
    pub admin: (KeyRecord, String),
}

/// Rows in the large file of the demo (enough to page through).
pub const LARGE_ROWS: usize = 20_000;

/// How many days before now the demo's ledger begins.
const STORY_DAYS: i64 = 3;

/// The demo's ledger as a few days of a team's work: its stories are told
/// from [`STORY_DAYS`] days ago to now, each some hours after the one
/// before, by setting the ledger's clock back (`service::seed::clock_back`),
/// so the jobs do not all show one time. Dropped, the clock is on time.
struct Days {
    /// Stories told so far, of [`STORIES`].
    told: i64,
}

impl Days {
    /// The next story's time.
    fn next(&mut self) {
        let span = STORY_DAYS * 24 * 3600 * 1000;
        service::seed::clock_back(span - span * self.told / STORIES);
        self.told += 1;
    }
}

impl Drop for Days {
    fn drop(&mut self) {
        service::seed::clock_back(0);
    }
}

/// The stories [`Days`] spreads over the days.
const STORIES: i64 = 15;

/// How long after a story's upload each of its decisions is taken.
const DECISION_AFTER_MS: i64 = 35 * 60 * 1000;

/// How long the demo keeps one job `validating`.
pub const HOLD: Duration = Duration::from_secs(15 * 60);

const FIRST: [&str; 20] = [
    "Andi", "Budi", "Citra", "Dewi", "Eka", "Fajar", "Gita", "Hendra", "Indah", "Joko", "Kartika",
    "Lestari", "Made", "Nur", "Putu", "Rina", "Sari", "Teguh", "Wahyu", "Yulia",
];
const LAST: [&str; 15] = [
    "Wijaya",
    "Santoso",
    "Rahayu",
    "Lestari",
    "Hartono",
    "Setiawan",
    "Kusuma",
    "Saputra",
    "Hidayat",
    "Nugroho",
    "Pratama",
    "Siregar",
    "Simanjuntak",
    "Gunawan",
    "Halim",
];
const CITIES: [&str; 10] = [
    "Jakarta",
    "Bandung",
    "Surabaya",
    "Medan",
    "Semarang",
    "Makassar",
    "Yogyakarta",
    "Denpasar",
    "Palembang",
    "Malang",
];
const PRODUCTS: [(&str, &str, &str); 10] = [
    ("Kaos Polos Hitam", "apparel", "DTF"),
    ("Kaos Polos Putih", "apparel", "DTF"),
    ("Hoodie Katun Abu", "apparel", "sablon"),
    ("Tote Bag Kanvas", "bag", "sablon"),
    ("Mug Keramik 11oz", "drinkware", "sublimasi"),
    ("Tumbler Stainless", "drinkware", "UV"),
    ("Stiker Vinyl A4", "sticker", "UV"),
    ("Topi Baseball", "apparel", "bordir"),
    ("Lanyard Custom", "accessory", "sublimasi"),
    ("Poster A3 Art Paper", "print", "digital"),
];

/// A small deterministic generator: the same demo every time.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() as usize) % from.len()]
    }

    fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

fn name(d: &mut Dice) -> String {
    format!("{} {}", d.pick(&FIRST), d.pick(&LAST))
}

fn wa(n: usize) -> String {
    format!("0812{:08}", 31_000_000 + n)
}

fn customers_csv(d: &mut Dice, from: usize, n: usize) -> String {
    let mut s =
        String::from("customer_name,wa_number,city,grade,source_channel,consumable_cycle_days\n");
    for i in from..from + n {
        let grade = d.pick(&["A", "B", "C"]);
        let channel = d.pick(&["WhatsApp", "Instagram", "Tokopedia", "Shopee", "Walk-in"]);
        let _ = writeln!(
            s,
            "{},{},{},{grade},{channel},{}",
            name(d),
            wa(i),
            d.pick(&CITIES),
            d.between(7, 60)
        );
    }
    s
}

fn product_row(d: &mut Dice, s: &mut String, i: usize) {
    let (pname, category, method) = PRODUCTS[i % PRODUCTS.len()];
    let cost = d.between(12, 300) * 1000;
    let price = cost + d.between(5, 250) * 1000;
    let _ = writeln!(
        s,
        "SKU-{i:06},{pname} #{i},{category},{method},pcs,{cost},{price},{}",
        d.between(0, 900)
    );
}

fn products_csv(d: &mut Dice, from: usize, n: usize) -> String {
    let mut s =
        String::from("sku,product_name,category,print_method,unit,cost_idr,price_idr,stock_qty\n");
    for i in from..from + n {
        product_row(d, &mut s, i);
    }
    s
}

fn orders_csv(d: &mut Dice, from: usize, n: usize) -> String {
    let mut s =
        String::from("order_no,customer_id,sku,qty,amount_idr,order_date,status,payment_method\n");
    for i in from..from + n {
        let qty = d.between(1, 24);
        let unit = d.between(35, 350) * 1000;
        let _ = writeln!(
            s,
            "SO-2024-{i:05},CUST-{:04},SKU-{:06},{qty},{},2024-05-{:02},{},{}",
            d.between(1, 400),
            d.between(1, 40),
            qty * unit,
            d.between(1, 28),
            d.pick(&["paid", "pending", "shipped"]),
            d.pick(&["transfer BCA", "QRIS", "COD", "Mandiri VA"]),
        );
    }
    s
}

fn payments_csv(d: &mut Dice, from: usize, n: usize) -> String {
    let mut s = String::from("payment_no,order_no,amount_idr,paid_at,method,bank_ref,status\n");
    for i in from..from + n {
        let _ = writeln!(
            s,
            "PAY-2024-{i:05},SO-2024-{i:05},{},2024-05-{:02} {:02}:{:02},{},REF{:09},verified",
            d.between(50, 4_500) * 1000,
            d.between(1, 28),
            d.between(8, 20),
            d.between(0, 59),
            d.pick(&["QRIS", "transfer BCA", "Mandiri VA", "BRI VA"]),
            d.next() % 1_000_000_000,
        );
    }
    s
}

async fn key(app: &App, name: &str, role: Role) -> anyhow::Result<(KeyRecord, String)> {
    let new = NewKey {
        name: name.to_string(),
        role,
        modules: vec!["*".to_string()],
        expires_at: None,
        email: None,
        person_id: None,
    };
    Ok(service::keys::issue(app, &new, None).await?)
}

/// Puts rows straight into a module table: the business data that existed
/// before anyone used importgate (so updates have something to change).
async fn existing_rows(app: &App, module: &str, csv_text: &str) -> anyhow::Result<()> {
    let module = app.module(module)?;
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let header = reader.headers()?.clone();
    let mut rows = Vec::new();
    for rec in reader.records() {
        let rec = rec?;
        let mut obj = Map::new();
        for (h, v) in header.iter().zip(rec.iter()) {
            let col = module.columns.iter().find(|c| c.name == h);
            let value = match col.map(|c| c.ty) {
                Some(crate::catalog::ColumnType::Integer | crate::catalog::ColumnType::Bigint) => {
                    v.parse::<i64>().map(Json::from).unwrap_or(Json::Null)
                }
                _ => Json::String(v.to_string()),
            };
            obj.insert(h.to_string(), value);
        }
        rows.push(obj);
    }
    service::seed::fill(app, module.key.as_str(), &rows).await?;
    Ok(())
}

/// Who uploads which file: uploader, module, parameters (as a query
/// string), file name.
struct Upload<'a>(&'a KeyRecord, &'a str, &'a str, &'a str);

/// Uploads a CSV file as its uploader would; the job starts validating.
async fn start(app: &App, up: Upload<'_>, csv_text: String) -> anyhow::Result<Job> {
    let Upload(who, module, query, file) = up;
    let params: Params = serde_urlencoded::from_str(query)?;
    let upload = uploads::Upload {
        module,
        mode: params.mode.unwrap_or(Mode::Insert),
        on_error: params.on_error.unwrap_or(OnError::Fail),
        options: params.options()?,
        format: Some(Format::Csv),
        charset: None,
        file_name: Some(file.to_string()),
        idempotency_key: None,
    };
    let body = futures::stream::once(async move {
        Ok::<_, std::convert::Infallible>(bytes::Bytes::from(csv_text))
    });
    let accepted = uploads::upload(app, who, upload, body)
        .await
        .map_err(|e| anyhow::anyhow!("demo upload {file}: {e}"))?;
    Ok(accepted.job)
}

/// One demo job: the upload, validation, then the gate moves made on it
/// (who, what, comment); it must end in `end`.
async fn story(
    app: &App,
    up: Upload<'_>,
    csv_text: String,
    moves: &[(&KeyRecord, Move, &str)],
    end: State,
) -> anyhow::Result<Job> {
    let job = start(app, up, csv_text).await?;
    let mut job = settle(app, &job.id).await?;
    for (who, m, comment) in moves {
        service::seed::clock_forward(DECISION_AFTER_MS);
        job = act(app, who, &job, *m, comment).await?;
    }
    expect(&job, end)?;
    Ok(job)
}

/// Waits until the service has finished working on a job.
async fn settle(app: &App, id: &JobId) -> anyhow::Result<Job> {
    jobs::wait(app, id, Duration::from_secs(120)).await?;
    Ok(jobs::find(app, id).await?)
}

async fn act(app: &App, who: &KeyRecord, job: &Job, m: Move, comment: &str) -> anyhow::Result<Job> {
    let request = gate::MoveRequest {
        job_id: &job.id,
        event: m,
        if_match: None,
        comment: Some(comment),
        reason_required: false,
    };
    gate::make_move(app, who, request)
        .await
        .map_err(|e| anyhow::anyhow!("demo {} on {}: {e}", m.as_str(), job.id))?;
    settle(app, &job.id).await
}

fn expect(job: &Job, state: State) -> anyhow::Result<()> {
    anyhow::ensure!(
        job.state == state,
        "demo job {} ({}) is {}, expected {}",
        job.id,
        job.modules()
            .iter()
            .map(|m| m.as_str())
            .collect::<Vec<_>>()
            .join("+"),
        job.state.as_str(),
        state.as_str()
    );
    Ok(())
}

/// A CRM export whose headers do not fit (`invalid`), mapped by a
/// revision that remembers the mapping (`failed`: a row lacks its WhatsApp
/// number), and that cell fixed by a second revision, now waiting for the
/// approver, who sees the mapping and the fix next to what the file said.
async fn crm_export(app: &App, who: &KeyRecord, d: &mut Dice) -> anyhow::Result<Job> {
    let mut text = String::from("Nama Pelanggan,No. WA,Kota,Catatan\n");
    for i in 300..306 {
        let note = d.pick(&["pelanggan lama", "", "minta katalog"]);
        let _ = writeln!(text, "{},{},{},{note}", name(d), wa(i), d.pick(&CITIES));
    }
    let _ = writeln!(text, "{},,{},dari pameran", name(d), d.pick(&CITIES));
    let file = Upload(who, "customers", "", "kontak-crm-juni.csv");
    let job = story(app, file, text, &[], State::Invalid).await?;
    let mapping = [
        ("No. WA", "wa_number"),
        ("Kota", "city"),
        ("Catatan", "notes"),
    ]
    .map(|(h, c)| (h.to_string(), Some(c.to_string())));
    let mapped = Changes {
        mapping: mapping.into_iter().collect(),
        remember_mapping: true,
        comment: Some("Header dari ekspor CRM.".into()),
        ..Changes::default()
    };
    let job = revise(app, who, &job, mapped, State::Failed).await?;
    let fixed = Changes {
        fixes: vec![Fix {
            row: 8,
            column: "wa_number".into(),
            value: Some(wa(306)),
            was: None,
        }],
        comment: Some("Nomor WA baris 8 dari kartu nama di pameran.".into()),
        ..Changes::default()
    };
    revise(app, who, &job, fixed, State::AwaitingApproval).await
}

/// A launch's workbook (API.md section 16): the sheets `Produk` (mapped to
/// products), `orders` and `payments`, the orders naming the new products
/// and the payments the new orders; it waits at the gate as one job.
async fn launch_workbook(app: &App, who: &KeyRecord, d: &mut Dice) -> anyhow::Result<Job> {
    let products = products_csv(d, 500, 6);
    let mut orders =
        String::from("order_no,customer_id,sku,qty,amount_idr,order_date,status,payment_method\n");
    let mut payments =
        String::from("payment_no,order_no,amount_idr,paid_at,method,bank_ref,status\n");
    for k in 0..8 {
        let qty = d.between(1, 12);
        let amount = qty * d.between(40, 200) * 1000;
        let _ = writeln!(
            orders,
            "SO-2024-009{k:02},CUST-{:04},SKU-{:06},{qty},{amount},2024-05-20,paid,QRIS",
            d.between(1, 40),
            500 + k % 6
        );
        let _ = writeln!(
            payments,
            "PAY-2024-009{k:02},SO-2024-009{k:02},{amount},2024-05-20 1{}:15,QRIS,REF{:09},verified",
            k % 10,
            d.next() % 1_000_000_000
        );
    }
    let sheets = [
        ("Produk", products),
        ("orders", orders),
        ("payments", payments),
    ];
    let body = workbook_xlsx(&sheets)?;
    let up = workbooks::WorkbookUpload {
        sheets: [("Produk".to_string(), "products".to_string())].into(),
        format: Some(Format::Xlsx),
        file_name: Some("peluncuran-koleksi-lebaran.xlsx".to_string()),
        ..workbooks::WorkbookUpload::from_query(&[])?
    };
    let body = futures::stream::once(async move {
        Ok::<_, std::convert::Infallible>(bytes::Bytes::from(body))
    });
    let job = workbooks::upload(app, who, up, body)
        .await
        .map_err(|e| anyhow::anyhow!("demo workbook: {e}"))?
        .job;
    let job = settle(app, &job.id).await?;
    expect(&job, State::AwaitingApproval)?;
    Ok(job)
}

/// An XLSX of CSV texts, a sheet each, every cell a string.
fn workbook_xlsx(sheets: &[(&str, String)]) -> anyhow::Result<Vec<u8>> {
    let mut book = rust_xlsxwriter::Workbook::new();
    for (name, csv) in sheets {
        let sheet = book.add_worksheet();
        sheet.set_name(*name)?;
        for (r, line) in csv.lines().enumerate() {
            for (c, cell) in line.split(',').enumerate() {
                sheet.write_string(r as u32, c as u16, cell)?;
            }
        }
    }
    Ok(book.save_to_buffer()?)
}

/// One revision of a demo job, validated; it must end in `end`.
async fn revise(
    app: &App,
    who: &KeyRecord,
    job: &Job,
    changes: Changes,
    end: State,
) -> anyhow::Result<Job> {
    let new = revisions::revise(app, who, &job.id, changes)
        .await
        .map_err(|e| anyhow::anyhow!("demo revision of {}: {e}", job.id))?;
    let new = settle(app, &new.id).await?;
    expect(&new, end)?;
    Ok(new)
}

/// The demo's rules (API.md section 14), each module's set proposed by the
/// admin and approved by an approver: customers' WhatsApp numbers to
/// `+62…` and a warning for one name twice in a city, products' rupiah
/// amounts as written, orders' Indonesian dates and a quantity check.
const DEMO_RULES: [(&str, &str, &str); 3] = [
    (
        "customers",
        r#"[{"id": "wa", "column": "wa_number", "normalize": "phone_id"},
            {"id": "one_name_per_city", "unique": ["customer_name", "city"], "severity": "warning"}]"#,
        "Nomor WA disamakan ke +62 agar pelanggan tidak dobel.",
    ),
    (
        "products",
        r#"[{"id": "price", "column": "price_idr", "normalize": "idr"},
            {"id": "cost", "column": "cost_idr", "normalize": "idr"}]"#,
        "Harga dari marketplace ditulis Rp1.250.000.",
    ),
    (
        "orders",
        r#"[{"id": "date", "column": "order_date", "normalize": "date_id"},
            {"id": "qty_positive", "check": "row.qty > 0", "message": "qty harus lebih dari 0",
             "columns": ["qty"], "severity": "error"}]"#,
        "Tanggal ditulis 17 Agustus 2025 oleh tim toko.",
    ),
];

/// A change left waiting for an approver.
const WAITING_RULES: &str = r#"[{"id": "date", "column": "order_date", "normalize": "date_id"},
    {"id": "qty_positive", "check": "row.qty > 0", "message": "qty harus lebih dari 0",
     "columns": ["qty"], "severity": "error"},
    {"id": "amount_per_item", "check": "row.amount_idr >= row.qty * 1000",
     "message": "nilai order terlalu kecil untuk jumlahnya", "columns": ["amount_idr"], "severity": "warning"}]"#;

async fn rules_in_force(app: &App, admin: &KeyRecord, approver: &KeyRecord) -> anyhow::Result<()> {
    let fail = |e: service::Error| anyhow::anyhow!("demo rules: {e}");
    for (module, rules, why) in DEMO_RULES {
        let rules: serde_json::Value = serde_json::from_str(rules)?;
        let (p, _) = service::rules::propose(app, admin, module, &rules, Some(why))
            .await
            .map_err(fail)?;
        service::rules::decide(
            app,
            approver,
            p.id.as_str(),
            true,
            Some("Sudah dicoba di file minggu lalu."),
        )
        .await
        .map_err(fail)?;
    }
    let rules: serde_json::Value = serde_json::from_str(WAITING_RULES)?;
    let why = Some("Tandai order yang nilainya tidak masuk akal.");
    service::rules::propose(app, admin, "orders", &rules, why)
        .await
        .map_err(fail)?;
    Ok(())
}

/// Customers CSV with some WhatsApp numbers written the ways people write
/// them (`0812-3100-0101`, `+62 812 3100 0102`), and one name repeated in
/// its city.
fn as_people_write(csv: &str) -> String {
    let mut lines: Vec<String> = csv.lines().map(str::to_string).collect();
    for (i, line) in lines.iter_mut().enumerate().skip(1) {
        let mut cells: Vec<String> = line.split(',').map(str::to_string).collect();
        let digits = cells[1].clone();
        cells[1] = match i % 3 {
            1 => format!("{}-{}-{}", &digits[..4], &digits[4..8], &digits[8..]),
            2 => format!("+62 {} {} {}", &digits[1..4], &digits[4..8], &digits[8..]),
            _ => digits,
        };
        *line = cells.join(",");
    }
    if lines.len() > 3 {
        let first: Vec<String> = lines[1].split(',').map(str::to_string).collect();
        let mut twin: Vec<String> = lines[3].split(',').map(str::to_string).collect();
        twin[0] = first[0].clone();
        twin[2] = first[2].clone();
        lines[3] = twin.join(",");
    }
    lines.join("\n") + "\n"
}

/// Makes the demo keys and the ledger's jobs. The app must be serving (its
/// workers validate and commit). Returns when every persistent state exists;
/// one job is left `validating` for [`HOLD`].
pub async fn seed(app: &Arc<App>) -> anyhow::Result<DemoKeys> {
    anyhow::ensure!(app.settings.simulate, "the demo runs only in simulation");
    let submitter = key(app, "Budi Santoso", Role::Submitter).await?;
    let approver = key(app, "Siti Rahayu", Role::Approver).await?;
    let admin = key(app, "Dewi Anggraini", Role::Admin).await?;
    let budi = submitter.0.clone();
    let siti = approver.0.clone();
    let eko = key(app, "Eko Prasetyo", Role::Approver).await?.0;
    let agus = key(app, "Agus Setiawan", Role::Submitter).await?.0;
    let mut d = Dice(20_240_517);
    let mut days = Days { told: 0 };

    existing_rows(app, "customers", &customers_csv(&mut d, 0, 40)).await?;
    existing_rows(app, "products", &products_csv(&mut d, 0, 30)).await?;

    days.next();
    // Rejected: a supplier list the approver sends back.
    let mut s = String::from(
        "supplier_name,contact_person,phone,city,country,materials,lead_time_days,rating\n",
    );
    for (i, city) in CITIES.iter().enumerate().take(6) {
        let _ = writeln!(
            s,
            "CV Sumber Kain {i},{},0813{:08},{city},Indonesia,katun;polyester,{},4.{}",
            name(&mut d),
            55_000_000 + i,
            d.between(3, 21),
            d.between(0, 9)
        );
    }
    let reject = "Rating belum diverifikasi tim pembelian; kirim ulang setelah dicek.";
    let file = Upload(&agus, "suppliers", "", "supplier-baru-mei.csv");
    story(
        app,
        file,
        s,
        &[(&siti, Move::Reject, reject)],
        State::Rejected,
    )
    .await?;

    days.next();
    // Invalid: a payments export without the paid_at column.
    let text = payments_csv(&mut d, 1, 8)
        .lines()
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            [cells[0], cells[1], cells[2], cells[4], cells[5]].join(",")
        })
        .collect::<Vec<_>>()
        .join("\n");
    let file = Upload(&budi, "payments", "", "mutasi-bca-mei.csv");
    story(app, file, text, &[], State::Invalid).await?;

    days.next();
    // Failed: products with prices typed the way people type them.
    let mut text = products_csv(&mut d, 100, 12);
    text.push_str("SKU-000112,Kaos Anak Kuning,apparel,DTF,pcs,25000,Rp 45.000,10\n");
    text.push_str("SKU-000113,,apparel,DTF,pcs,30000,55000,5\n");
    text.push_str("SKU-000114,Mug Hitam,drinkware,sublimasi,pcs,18000,42000,banyak\n");
    let file = Upload(&budi, "products", "", "produk-baru.csv");
    story(app, file, text, &[], State::Failed).await?;

    days.next();
    // Cancelled: withdrawn by its submitter before a decision.
    let file = Upload(&budi, "orders", "", "order-tokopedia-minggu-1.csv");
    let cancel = (&budi, Move::Cancel, "Salah file, ini data minggu lalu.");
    story(
        app,
        file,
        orders_csv(&mut d, 1, 15),
        &[cancel],
        State::Cancelled,
    )
    .await?;

    days.next();
    // Expired: nobody decided in time.
    let mut s = String::from("tech_name,phone,city,skills,level,jobs_done,rating,active\n");
    for i in 0..7 {
        let _ = writeln!(
            s,
            "{},0857{:08},{},DTF;sablon,{},{},4.{},ya",
            name(&mut d),
            12_000_000 + i,
            d.pick(&CITIES),
            d.pick(&["junior", "senior"]),
            d.between(3, 250),
            d.between(0, 9)
        );
    }
    let file = Upload(&agus, "technicians", "", "teknisi-jawa-timur.csv");
    let job = story(app, file, s, &[], State::AwaitingApproval).await?;
    anyhow::ensure!(
        work::expire(app, &job.id).await?,
        "demo job {} did not expire",
        job.id
    );

    days.next();
    // Committed, with updates shown before → after.
    let mut text = customers_csv(&mut Dice(20_240_517), 0, 40)
        .lines()
        .take(7)
        .map(|l| {
            let mut cells: Vec<String> = l.split(',').map(str::to_string).collect();
            if cells[0] != "customer_name" {
                cells[2] = "Surabaya".into();
                cells[3] = "A".into();
            }
            cells.join(",")
        })
        .collect::<Vec<_>>()
        .join("\n");
    text.push('\n');
    text.push_str(
        customers_csv(&mut d, 40, 5)
            .split_once('\n')
            .map(|x| x.1)
            .unwrap_or(""),
    );
    let file = Upload(
        &budi,
        "customers",
        "mode=upsert",
        "pelanggan-update-grade.csv",
    );
    let approve = (&siti, Move::Approve, "Sudah dicek dengan tim CS.");
    story(app, file, text, &[approve], State::Committed).await?;

    days.next();
    // Failed at commit: the table changed between the preview and the decision.
    // The same products as the table holds, only the unit changes.
    let mut again = Dice(20_240_517);
    customers_csv(&mut again, 0, 40);
    let text = products_csv(&mut again, 0, 30)
        .lines()
        .take(5)
        .map(|l| l.replace(",pcs,", ",lusin,"))
        .collect::<Vec<_>>()
        .join("\n");
    let file = Upload(&agus, "products", "mode=update", "satuan-lusin.csv");
    let job = story(app, file, text, &[], State::AwaitingApproval).await?;
    // Another system changes one of the previewed products meanwhile.
    let sku = [json!("SKU-000002")];
    service::seed::change(app, "products", &sku, "stock_qty", &json!(7)).await?;
    let job = act(app, &siti, &job, Move::Approve, "").await?;
    expect(&job, State::Failed)?;

    days.next();
    // Rolled back: committed, then undone through the gate (asked by one
    // approver, approved by another: four-eyes holds for rollbacks too).
    let file = Upload(&agus, "orders", "", "order-shopee-mei.csv");
    let moves = [
        (&siti, Move::Approve, ""),
        (
            &siti,
            Move::Rollback,
            "Nomor order bentrok dengan sistem kasir; batalkan dulu.",
        ),
        (&eko, Move::Approve, "Setuju, rollback."),
    ];
    story(
        app,
        file,
        orders_csv(&mut d, 100, 25),
        &moves,
        State::RolledBack,
    )
    .await?;

    days.next();
    // Committed again after a rollback request was turned down.
    let mut s =
        String::from("campaign_no,name,channel,audience,budget_idr,status,start_at,end_at\n");
    for i in 1..=6 {
        let _ = writeln!(
            s,
            "CMP-2024-{i:03},Promo Gajian {i},{},pelanggan grade A,{},planned,2024-06-{:02},2024-06-{:02}",
            d.pick(&["WhatsApp", "Instagram", "TikTok"]),
            d.between(5, 80) * 500_000,
            i,
            i + 10
        );
    }
    let file = Upload(&budi, "marketing", "", "kampanye-juni.csv");
    let moves = [
        (&siti, Move::Approve, ""),
        (&budi, Move::Rollback, "Budget belum final."),
        (
            &siti,
            Move::Reject,
            "Budget sudah disetujui manajer; kampanye tetap jalan.",
        ),
    ];
    story(app, file, s, &moves, State::Committed).await?;

    days.next();
    // Rollback pending: a committed payment import waits for its rollback decision.
    let file = Upload(&budi, "payments", "", "pembayaran-qris-mei.csv");
    let moves = [
        (&siti, Move::Approve, "Cocok dengan mutasi rekening."),
        (
            &budi,
            Move::Rollback,
            "Ada 3 pembayaran dobel dari export QRIS; mohon dibatalkan.",
        ),
    ];
    let text = payments_csv(&mut d, 1, 18);
    story(app, file, text, &moves, State::RollbackPending).await?;

    // Rules in force from here on, and one more waiting at the gate.
    rules_in_force(app, &admin.0, &siti).await?;

    days.next();
    // Awaiting approval: orders with bad rows left out (on_error=skip).
    let mut text = orders_csv(&mut d, 200, 20);
    text.push_str("SO-2024-00221,CUST-0007,SKU-000003,dua,70000,2024-05-12,paid,QRIS\n");
    text.push_str("SO-2024-00222,CUST-0008,SKU-000004,2,70000,31/02/2024,paid,QRIS\n");
    let file = Upload(
        &agus,
        "orders",
        "on_error=skip",
        "order-offline-bandung.csv",
    );
    story(app, file, text, &[], State::AwaitingApproval).await?;

    days.next();
    // Awaiting approval: new customers from Budi, for the approver to
    // decide; their WhatsApp numbers written as people write them, which
    // the customers' rules normalize.
    let file = Upload(&budi, "customers", "", "pelanggan-baru-pameran.csv");
    let text = as_people_write(&customers_csv(&mut d, 100, 24));
    story(app, file, text, &[], State::AwaitingApproval).await?;

    days.next();
    // Awaiting approval, revised twice: a CRM export fixed inside importgate.
    crm_export(app, &agus, &mut d).await?;

    days.next();
    // Awaiting approval: a workbook of new products, the orders that name
    // them and their payments, one approval for all three.
    launch_workbook(app, &budi, &mut d).await?;

    days.next();
    // Awaiting approval: a large catalogue export, to page through.
    let file = Upload(&agus, "products", "", "katalog-lengkap-2024.csv");
    let text = products_csv(&mut d, 10_000, LARGE_ROWS);
    story(app, file, text, &[], State::AwaitingApproval).await?;

    // Told now, on time.
    drop(days);
    // Validating: left mid-way. The demo holds the job's work lease for a
    // while, so no worker finishes it; when the hold lapses a worker takes
    // the job over like any abandoned one and it goes to the gate.
    let mut text = String::from("sku,warehouse,qty_on_hand,qty_reserved,safety_stock,unit\n");
    for i in 0..5_000 {
        let _ = writeln!(
            text,
            "SKU-{i:06},Surabaya,{},{},20,pcs",
            d.between(0, 900),
            d.between(0, 30)
        );
    }
    let held = start(
        app,
        Upload(&budi, "inventory", "", "stok-gudang-surabaya.csv"),
        text,
    )
    .await?;
    let until = chrono::Utc::now().timestamp_millis() + HOLD.as_millis() as i64;
    work::hold(app, &held.id, "demo-hold", until).await?;

    Ok(DemoKeys {
        submitter,
        approver,
        admin,
    })
}

/// The lines `importgate demo` prints: the URL (`http://host:port`, no
/// trailing slash, so that the API paths after it are single-slashed) and
/// the three keys, people masked as everywhere else, then API commands
/// that work when pasted, the sample file they upload made first.
pub fn banner(url: &str, keys: &DemoKeys) -> String {
    let line = |role: &str, (record, secret): &(KeyRecord, String)| {
        format!("  {role:<10} {:<8} {secret}\n", record.person().display)
    };
    let mut s = String::new();
    s.push_str("importgate demo: simulation mode, nothing is written to the module tables.\n");
    let _ = writeln!(s, "Console: {url}/");
    s.push_str("Sign in with one of these keys (shown only now):\n");
    s.push_str(&line("submitter", &keys.submitter));
    s.push_str(&line("approver", &keys.approver));
    s.push_str(&line("admin", &keys.admin));
    let _ = writeln!(
        s,
        "Try the API with a key (the console and the API see the same jobs):\n  \
         curl -H 'X-API-Key: {}' {url}/api/jobs\n  \
         printf 'customer_name,wa_number,city\\nAndi Wijaya,0812-3456-7890,Bandung\\n' > pelanggan.csv\n  \
         curl -X POST -H 'X-API-Key: {}' -H 'Content-Type: text/csv' -H 'Prefer: wait=10' \\\n       \
         --data-binary @pelanggan.csv {url}/api/import/customers",
        keys.submitter.1, keys.submitter.1
    );
    s.push_str("Press Ctrl-C to stop; the demo database is deleted then.\n");
    s
}
