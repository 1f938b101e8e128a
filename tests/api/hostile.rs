//! Hostile files (API.md section 10): each is generated here at test time
//! (nothing large is committed), uploaded to the real binary with its
//! default limits, and must end as a clear `invalid` or `failed` job or a
//! 4xx: never a 5xx, a panic, a hang, or memory that grows with the file.
//! The server's peak resident memory (`VmHWM` of its process) is read after
//! each file and must stay under [`MEMORY_BOUND`].

use std::io::{BufRead, BufReader, Cursor, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{DropDatabase, fresh_postgres};

const BIN: &str = env!("CARGO_BIN_EXE_importgate");

/// Peak memory allowed to the server, whatever the file.
const MEMORY_BOUND: u64 = 200 * 1024 * 1024;

const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const XLS: &str = "application/vnd.ms-excel";
const ODS: &str = "application/vnd.oasis.opendocument.spreadsheet";

/// The real binary on a free port with a fresh database (SQLite, or
/// PostgreSQL when `IMPORTGATE_TEST_POSTGRES` is set), and a submitter key.
struct Server {
    child: Child,
    base: String,
    key: String,
    client: reqwest::Client,
    _database: DropDatabase,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    async fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let database = match std::env::var("IMPORTGATE_TEST_POSTGRES") {
            Ok(server) if !server.is_empty() => fresh_postgres(&server).await,
            _ => format!("sqlite://{}", dir.path().join("hostile.db").display()),
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new(BIN)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--database", &database])
            .env("IMPORTGATE_LEDGER_KEY_FILE", dir.path().join("ledger-key"))
            .env(
                "IMPORTGATE_LEDGER_CHECKPOINT_FILE",
                dir.path().join("ledger-checkpoint"),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let _intro = lines.next().unwrap().unwrap();
        let admin = lines.next().unwrap().unwrap();
        let client = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let mut server = Server {
            child,
            base,
            key: String::new(),
            client,
            _database: DropDatabase(database),
            _dir: dir,
        };
        for _ in 0..100 {
            if server
                .client
                .get(server.url("/healthz"))
                .send()
                .await
                .is_ok()
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let resp = server
            .client
            .post(server.url("/api/keys"))
            .header("X-API-Key", &admin)
            .json(&json!({"name": "Budi Santoso", "role": "submitter"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::CREATED);
        let body: Value = resp.json().await.unwrap();
        server.key = body["key"].as_str().unwrap().to_string();
        server
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Uploads a file; returns the status and, for a 202, the finished job.
    async fn upload(&self, module: &str, content_type: &str, body: Vec<u8>) -> (StatusCode, Value) {
        let resp = self
            .client
            .post(self.url(&format!("/api/import/{module}")))
            .header("X-API-Key", &self.key)
            .header("Content-Type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        assert!(!status.is_server_error(), "upload answered {status}");
        let body: Value = resp.json().await.unwrap();
        if status != StatusCode::ACCEPTED {
            return (status, body);
        }
        let id = body["id"].as_str().unwrap();
        let started = Instant::now();
        loop {
            let resp = self
                .client
                .get(self.url(&format!("/api/jobs/{id}")))
                .header("X-API-Key", &self.key)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), StatusCode::OK);
            let job: Value = resp.json().await.unwrap();
            if job["state"] != "validating" {
                return (status, job);
            }
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "job {id} hangs"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The server's first errors, to check they name row and column.
    async fn errors(&self, job: &Value) -> Value {
        let id = job["id"].as_str().unwrap();
        let resp = self
            .client
            .get(self.url(&format!("/api/jobs/{id}/errors?limit=5")))
            .header("X-API-Key", &self.key)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        resp.json().await.unwrap()
    }

    /// The peak resident memory of the server process so far.
    fn peak_memory(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc/<pid>/status");
        kb * 1024
    }

    /// Uploads a hostile file and checks the job ends as `state` with
    /// problem (or first row error) `code`, and memory stayed bounded.
    async fn refuses(
        &self,
        module: &str,
        ct: &str,
        body: Vec<u8>,
        state: &str,
        code: &str,
    ) -> Value {
        let (status, job) = self.upload(module, ct, body).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{job}");
        assert_eq!(job["state"], state, "{job}");
        if state == "invalid" {
            assert_eq!(job["problem"]["code"], code, "{job}");
        } else {
            let errors = self.errors(&job).await;
            assert_eq!(errors["errors"][0]["code"], code, "{errors}");
        }
        let peak = self.peak_memory();
        eprintln!(
            "{module} {ct}: {state}/{code}, server peak {} MiB",
            peak >> 20
        );
        assert!(
            peak < MEMORY_BOUND,
            "the server's peak memory was {} MiB",
            peak >> 20
        );
        job
    }
}

/// The job's problem says `text`.
fn says(job: &Value, text: &str) {
    let detail = job["problem"]["detail"].as_str().unwrap_or("");
    assert!(detail.contains(text), "{job}");
}

/// Bytes from a fixed-seed generator (xorshift), the same on every run.
fn garbage(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// A small real workbook of customers.
fn workbook(rows: usize) -> Vec<u8> {
    let mut book = rust_xlsxwriter::Workbook::new();
    let ws = book.add_worksheet();
    ws.write_string(0, 0, "customer_name").unwrap();
    ws.write_string(0, 1, "wa_number").unwrap();
    for r in 1..=rows as u32 {
        ws.write_string(r, 0, format!("Name {r}")).unwrap();
        ws.write_string(r, 1, format!("08{r:08}")).unwrap();
    }
    book.save_to_buffer().unwrap()
}

/// Rewrites a zip with one part replaced (deflated).
fn replace_part(xlsx: &[u8], name: &str, content: &[u8]) -> Vec<u8> {
    let mut source = zip::ZipArchive::new(Cursor::new(xlsx)).unwrap();
    let mut out = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(false);
    for i in 0..source.len() {
        let part = source.by_index_raw(i).unwrap();
        if part.name().unwrap() == name {
            continue;
        }
        out.raw_copy_file(part).unwrap();
    }
    out.start_file(name, options).unwrap();
    out.write_all(content).unwrap();
    out.finish().unwrap().into_inner()
}

/// A worksheet whose XML is `len` bytes, nearly all of it blanks: it
/// deflates about a thousand to one.
fn blank_sheet(len: usize) -> Vec<u8> {
    let head = br#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>"#;
    let tail = b"</sheetData></worksheet>";
    let mut xml = head.to_vec();
    xml.resize(len - tail.len(), b' ');
    xml.extend_from_slice(tail);
    xml
}

/// Sets the uncompressed size a zip declares for a part, in both the local
/// header and the central directory: a part that lies about its size.
fn lie_about_size(zip: &mut [u8], name: &str, size: u32) {
    let name = name.as_bytes();
    let mut i = 0;
    while i + 46 < zip.len() {
        let (sig, name_at, size_at, len_at) = match &zip[i..i + 4] {
            b"PK\x03\x04" => ("local", 30, 22, 26),
            b"PK\x01\x02" => ("central", 46, 24, 28),
            _ => {
                i += 1;
                continue;
            }
        };
        let len = u16::from_le_bytes([zip[i + len_at], zip[i + len_at + 1]]) as usize;
        if zip.get(i + name_at..i + name_at + len) == Some(name) {
            zip[i + size_at..i + size_at + 4].copy_from_slice(&size.to_le_bytes());
            let _ = sig;
        }
        i += 4;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_bytes_are_an_invalid_file() {
    let server = Server::start().await;
    let job = server
        .refuses(
            "customers",
            "application/octet-stream",
            garbage(5 << 20),
            "invalid",
            "encoding",
        )
        .await;
    says(&job, "row 1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_10_mb_cell_is_a_too_long_row_error() {
    let server = Server::start().await;
    let mut csv = b"customer_name,wa_number\nAndi,".to_vec();
    csv.resize(csv.len() + (10 << 20), b'9');
    csv.extend_from_slice(b"\nBudi,0812\n");
    let job = server
        .refuses("customers", "text/csv", csv, "failed", "too_long")
        .await;
    assert_eq!(job["counts"]["rows"], 2);
    let errors = server.errors(&job).await;
    assert_eq!(errors["errors"][0]["row"], 2);
    assert_eq!(errors["errors"][0]["column"], "wa_number");
    assert!(
        errors["errors"][0]["value"]
            .as_str()
            .unwrap()
            .chars()
            .count()
            <= 201
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_of_a_million_columns_is_too_many_columns() {
    let server = Server::start().await;
    let header: Vec<String> = (0..1_000_000).map(|i| format!("c{i}")).collect();
    let csv = format!("{}\n1\n", header.join(","));
    server
        .refuses(
            "customers",
            "text/csv",
            csv.into_bytes(),
            "invalid",
            "too_many_columns",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_csv_with_a_nul_byte_names_its_row_and_column() {
    let server = Server::start().await;
    let csv = b"customer_name,wa_number\nAn\x00di,0811\nBudi,0812\n".to_vec();
    let job = server
        .refuses("customers", "text/csv", csv, "failed", "format")
        .await;
    let errors = server.errors(&job).await;
    assert_eq!(errors["errors"][0]["row"], 2);
    assert_eq!(errors["errors"][0]["column"], "customer_name");
    assert_eq!(job["counts"]["valid"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_xlsx_zip_bomb_is_refused_before_inflating() {
    let server = Server::start().await;
    // 40 MB of sheet XML in a file of about 50 KB.
    let bomb = replace_part(
        &workbook(1),
        "xl/worksheets/sheet1.xml",
        &blank_sheet(40 << 20),
    );
    assert!(bomb.len() < 1 << 20, "the bomb is {} bytes", bomb.len());
    let job = server
        .refuses("customers", XLSX, bomb, "invalid", "unreadable")
        .await;
    says(&job, "would expand");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_xlsx_part_that_lies_about_its_size_stops_at_the_size_it_declared() {
    let server = Server::start().await;
    let mut bomb = replace_part(
        &workbook(1),
        "xl/worksheets/sheet1.xml",
        &blank_sheet(40 << 20),
    );
    lie_about_size(&mut bomb, "xl/worksheets/sheet1.xml", 4096);
    server
        .refuses("customers", XLSX, bomb, "invalid", "unreadable")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zip_of_twenty_thousand_parts_is_refused_from_its_directory() {
    let server = Server::start().await;
    let mut out = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for i in 0..20_000 {
        out.start_file(format!("p{i}"), options).unwrap();
    }
    let zip = out.finish().unwrap().into_inner();
    let job = server
        .refuses("customers", XLSX, zip, "invalid", "unreadable")
        .await;
    says(&job, "20000 parts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_xlsx_is_unreadable() {
    let server = Server::start().await;
    let book = workbook(2000);
    let cut = book[..book.len() / 2].to_vec();
    server
        .refuses(
            "customers",
            "application/octet-stream",
            cut,
            "invalid",
            "unreadable",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_xlsx_as_wide_as_excel_allows_is_too_many_columns() {
    let server = Server::start().await;
    let mut book = rust_xlsxwriter::Workbook::new();
    let ws = book.add_worksheet();
    for c in 0..16_384u16 {
        ws.write_string(0, c, format!("c{c}")).unwrap();
    }
    let bytes = book.save_to_buffer().unwrap();
    server
        .refuses("customers", XLSX, bytes, "invalid", "too_many_columns")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_in_an_ole2_container_is_unreadable() {
    let server = Server::start().await;
    let mut xls = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1".to_vec();
    xls.extend(garbage(1 << 20));
    server
        .refuses(
            "customers",
            "application/vnd.ms-excel",
            xls,
            "invalid",
            "unreadable",
        )
        .await;
}

/// One BIFF record: its type, its length, its data.
fn biff(typ: u16, data: &[u8]) -> Vec<u8> {
    let mut record = typ.to_le_bytes().to_vec();
    record.extend((data.len() as u16).to_le_bytes());
    record.extend(data);
    record
}

/// A LABEL cell (BIFF8: an 8-bit string).
fn xls_text(row: u16, column: u16, text: &str) -> Vec<u8> {
    let mut data = [row.to_le_bytes(), column.to_le_bytes(), [0, 0]].concat();
    data.extend((text.len() as u16).to_le_bytes());
    data.push(0);
    data.extend(text.as_bytes());
    biff(0x0204, &data)
}

/// A NUMBER cell.
fn xls_number(row: u16, column: u16, value: f64) -> Vec<u8> {
    let mut data = [row.to_le_bytes(), column.to_le_bytes(), [0, 0]].concat();
    data.extend(value.to_le_bytes());
    biff(0x0203, &data)
}

/// An XLS of one sheet, "Customers", holding `records` (cells, or a
/// DIMENSIONS record) between its BOF and EOF: the BIFF8 records calamine
/// needs, in an OLE2 container written by the `cfb` crate.
fn xls_workbook(records: &[Vec<u8>]) -> Vec<u8> {
    let name = "Customers";
    let bound_sheet = |at: u32| {
        let mut data = at.to_le_bytes().to_vec();
        data.extend([0, 0, name.len() as u8, 0]);
        data.extend(name.as_bytes());
        biff(0x0085, &data)
    };
    let bof = |kind: u8| biff(0x0809, &[0x00, 0x06, kind, 0x00]);
    let globals = bof(0x05).len() + bound_sheet(0).len() + 4;
    let mut stream = [bof(0x05), bound_sheet(globals as u32), biff(0x000A, &[])].concat();
    stream.extend(bof(0x10));
    for record in records {
        stream.extend(record);
    }
    stream.extend(biff(0x000A, &[]));
    let mut file =
        cfb::CompoundFile::create_with_version(cfb::Version::V3, Cursor::new(Vec::new())).unwrap();
    file.create_stream("/Workbook")
        .unwrap()
        .write_all(&stream)
        .unwrap();
    file.flush().unwrap();
    file.into_inner().into_inner()
}

/// XLS files of a few kilobytes that ask calamine for a grid of
/// billions of cells (a cell at A1 and one at row and column 65,536; a
/// DIMENSIONS record declaring 4 billion rows): calamine builds every
/// sheet's grid as it opens the workbook, and a failed allocation would
/// abort the whole server. Each is a clean `invalid` job, and the same
/// server then reads a good workbook.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_xls_spanning_billions_of_cells_is_refused_and_the_server_stays_up() {
    let server = Server::start().await;
    let good = vec![
        xls_text(0, 0, "customer_name"),
        xls_text(0, 1, "wa_number"),
        xls_text(1, 0, "Andi Wijaya"),
        xls_text(1, 1, "0811000001"),
    ];
    let far = [good.clone(), vec![xls_number(65535, 65535, 1.0)]].concat();
    let job = server
        .refuses(
            "customers",
            XLS,
            xls_workbook(&far),
            "invalid",
            "unreadable",
        )
        .await;
    says(
        &job,
        "the XLS sheet \"Customers\" spans rows 1–65,536 and columns A–CRXP \
         (4,294,967,296 cells); at most 4,194,304 cells are accepted",
    );
    let mut dimensions = 0u32.to_le_bytes().to_vec();
    dimensions.extend(u32::MAX.to_le_bytes());
    dimensions.extend([0, 0, 0, 1, 0, 0]);
    let declared = [vec![biff(0x0200, &dimensions)], good.clone()].concat();
    let job = server
        .refuses(
            "customers",
            XLS,
            xls_workbook(&declared),
            "invalid",
            "unreadable",
        )
        .await;
    says(&job, "declares 4,294,967,295 rows and 256 columns");
    let (status, job) = server.upload("customers", XLS, xls_workbook(&good)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["counts"]["insert"], 1, "{job}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_nested_ten_thousand_levels_is_unreadable() {
    let server = Server::start().await;
    let deep = format!(
        "{{\"rows\": [{{\"customer_name\": \"Andi\", \"wa_number\": {}{}}}]}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let job = server
        .refuses(
            "customers",
            "application/json",
            deep.into_bytes(),
            "invalid",
            "unreadable",
        )
        .await;
    says(&job, "nested");
    // Just past the limit of 32 levels is refused too, and says so.
    let over = format!(
        "[{{\"customer_name\": \"Andi\", \"wa_number\": {}1{}}}]",
        "[".repeat(31),
        "]".repeat(31)
    );
    let job = server
        .refuses(
            "customers",
            "application/json",
            over.into_bytes(),
            "invalid",
            "unreadable",
        )
        .await;
    says(&job, "33 levels");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_string_of_10_mb_is_a_too_long_row_error() {
    let server = Server::start().await;
    let json = format!(
        "[{{\"customer_name\": \"{}\", \"wa_number\": \"0811\"}}, {{\"customer_name\": \"Budi\", \"wa_number\": \"0812\"}}]",
        "é".repeat(5 << 20)
    );
    let job = server
        .refuses(
            "customers",
            "application/json",
            json.into_bytes(),
            "failed",
            "too_long",
        )
        .await;
    let errors = server.errors(&job).await;
    assert_eq!(errors["errors"][0]["row"], 1);
    assert_eq!(errors["errors"][0]["column"], "customer_name");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_with_a_million_keys_is_too_many_columns() {
    let server = Server::start().await;
    let keys: Vec<String> = (0..1_000_000).map(|i| format!("\"k{i}\": 1")).collect();
    let json = format!("[{{{}}}]", keys.join(","));
    server
        .refuses(
            "customers",
            "application/json",
            json.into_bytes(),
            "invalid",
            "too_many_columns",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ndjson_with_a_broken_line_names_the_line() {
    let server = Server::start().await;
    let mut ndjson = String::new();
    for i in 0..1000 {
        ndjson.push_str(&format!(
            "{{\"customer_name\": \"N{i}\", \"wa_number\": \"08{i:08}\"}}\n"
        ));
    }
    ndjson.push_str("{\"customer_name\": \"Broken\", \"wa_number\": \n");
    let job = server
        .refuses(
            "customers",
            "application/x-ndjson",
            ndjson.into_bytes(),
            "invalid",
            "unreadable",
        )
        .await;
    says(&job, "line 1001");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ndjson_line_without_end_is_refused_at_the_line_limit() {
    let server = Server::start().await;
    // One line of 64 MB: past every row the limits allow.
    let mut line = b"{\"customer_name\": \"".to_vec();
    line.resize(64 << 20, b'a');
    let job = server
        .refuses(
            "customers",
            "application/x-ndjson",
            line,
            "invalid",
            "unreadable",
        )
        .await;
    says(&job, "longer than");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cell_longer_than_any_valid_row_stops_the_csv_at_the_row_budget() {
    let server = Server::start().await;
    // 48 MB in one cell: more than 512 columns of 64 KiB could hold.
    let mut csv = b"customer_name,wa_number\nAndi,0811\nBudi,".to_vec();
    csv.resize(csv.len() + (48 << 20), b'9');
    csv.push(b'\n');
    let job = server
        .refuses("customers", "text/csv", csv, "invalid", "unreadable")
        .await;
    says(&job, "the row after row 2 is longer than");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_string_longer_than_any_valid_row_stops_at_the_object_budget() {
    let server = Server::start().await;
    let json = format!(
        "[{{\"customer_name\": \"Andi\", \"wa_number\": \"0811\"}}, {{\"customer_name\": \"{}\"}}]",
        "a".repeat(48 << 20)
    );
    let job = server
        .refuses(
            "customers",
            "application/json",
            json.into_bytes(),
            "invalid",
            "unreadable",
        )
        .await;
    says(&job, "object 2 is longer than");
}

/// Not hostile, just big: 25,000 rows of XLSX and of JSON stream through
/// validation with memory that does not follow the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_workbook_and_json_stream_with_flat_memory() {
    let server = Server::start().await;
    let (status, job) = server.upload("customers", XLSX, workbook(25_000)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["counts"]["insert"], 25_000);
    let rows: Vec<String> = (0..25_000)
        .map(|i| format!("{{\"customer_name\": \"Name {i}\", \"wa_number\": \"09{i:08}\", \"notes\": \"{}\"}}", "n".repeat(200)))
        .collect();
    let (_, job) = server
        .upload(
            "customers",
            "application/json",
            format!("[{}]", rows.join(",")).into_bytes(),
        )
        .await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["counts"]["insert"], 25_000);
    let peak = server.peak_memory();
    eprintln!(
        "25,000-row XLSX and 6 MB JSON: server peak {} MiB",
        peak >> 20
    );
    assert!(peak < MEMORY_BOUND, "peak {} MiB", peak >> 20);
}

/// An ODS package around `rows` (the XML of one sheet's rows, after a
/// header row of the two customer columns), with `padding` bytes of noise
/// in a stored part: hostile content that compresses well needs a file
/// large enough for the expansion limit to let it through to the reader.
fn ods_of(rows: &[u8], padding: usize) -> Vec<u8> {
    let head = br#"<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:spreadsheet><table:table table:name="Customers"><table:table-row><table:table-cell office:value-type="string"><text:p>customer_name</text:p></table:table-cell><table:table-cell office:value-type="string"><text:p>wa_number</text:p></table:table-cell></table:table-row>"#;
    let tail = b"</table:table></office:spreadsheet></office:body></office:document-content>";
    let mut out = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    out.start_file("mimetype", stored).unwrap();
    out.write_all(ODS.as_bytes()).unwrap();
    out.start_file("content.xml", zip::write::SimpleFileOptions::default())
        .unwrap();
    out.write_all(head).unwrap();
    out.write_all(rows).unwrap();
    out.write_all(tail).unwrap();
    if padding > 0 {
        out.start_file("Pictures/noise.bin", stored).unwrap();
        out.write_all(&garbage(padding)).unwrap();
    }
    out.finish().unwrap().into_inner()
}

/// A row of the customers sheet whose first cell holds `cell` (XML).
fn ods_row(cell: &str) -> String {
    format!(
        "<table:table-row><table:table-cell office:value-type=\"string\">{cell}</table:table-cell>\
         <table:table-cell office:value-type=\"string\"><text:p>0811</text:p></table:table-cell>\
         </table:table-row>"
    )
}

/// Uploads an ODS of `rows` (see [`ods_of`]); it must end `invalid`,
/// `unreadable`, saying `text`, with memory bounded.
async fn unreadable_ods(server: &Server, rows: &[u8], padding: usize, text: &str) {
    let job = server
        .refuses(
            "customers",
            ODS,
            ods_of(rows, padding),
            "invalid",
            "unreadable",
        )
        .await;
    says(&job, text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ods_zip_bomb_is_refused_before_inflating() {
    let server = Server::start().await;
    // 40 MB of sheet XML in a file of about 50 KB.
    let blanks = vec![b' '; 40 << 20];
    assert!(ods_of(&blanks, 0).len() < 1 << 20);
    unreadable_ods(&server, &blanks, 0, "the ODS would expand").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ods_nested_a_hundred_thousand_levels_is_unreadable() {
    let server = Server::start().await;
    let deep = ods_row(&format!(
        "<text:p>{}Andi{}</text:p>",
        "<text:span>".repeat(100_000),
        "</text:span>".repeat(100_000)
    ));
    unreadable_ods(
        &server,
        deep.as_bytes(),
        200_000,
        "nested deeper than 100 levels",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ods_cell_of_48_mb_stops_at_the_row_budget() {
    let server = Server::start().await;
    // More than 512 columns of 64 KiB could hold, as one text node.
    let huge = ods_row(&format!("<text:p>{}</text:p>", "a".repeat(48 << 20)));
    unreadable_ods(&server, huge.as_bytes(), 400_000, "row 2 is longer than").await;
    // A billion spaces in a dozen bytes (`text:s`) stop there too.
    let spaces = ods_row("<text:p><text:s text:c=\"1000000000\"/></text:p>");
    unreadable_ods(&server, spaces.as_bytes(), 0, "row 2 is longer than").await;
}

/// `number-columns-repeated` and `number-rows-repeated` ask for a billion
/// cells in a hundred bytes: columns are kept only as far as they can be
/// used, and a row may not repeat past the last row a sheet has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ods_repeats_of_billions_of_cells_are_refused_with_flat_memory() {
    let server = Server::start().await;
    let repeated = "<table:table-row table:number-rows-repeated=\"2000000000\">\
        <table:table-cell office:value-type=\"string\" table:number-columns-repeated=\"1000000000\">\
        <text:p>Andi</text:p></table:table-cell></table:table-row>";
    unreadable_ods(
        &server,
        repeated.as_bytes(),
        0,
        "row 2 repeats past row 1048576",
    )
    .await;
}

/// Not hostile, just big: 25,000 rows saved by LibreOffice stream through
/// validation with memory that does not follow the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_ods_streams_with_flat_memory() {
    let server = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("customers.xlsx");
    std::fs::write(&path, workbook(25_000)).unwrap();
    let ods = crate::fixtures::libreoffice(&[path], "ods", dir.path());
    let (status, job) = server
        .upload("customers", ODS, std::fs::read(&ods[0]).unwrap())
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["counts"]["insert"], 25_000);
    let peak = server.peak_memory();
    eprintln!("25,000-row ODS: server peak {} MiB", peak >> 20);
    assert!(peak < MEMORY_BOUND, "peak {} MiB", peak >> 20);
}
