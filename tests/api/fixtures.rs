//! One data set for all 26 modules, written in every format by a real
//! producer: the `csv` crate, rust_xlsxwriter (XLSX with typed cells),
//! LibreOffice (XLS and XLSX, converted from that XLSX), and JSON/NDJSON
//! text. Every file holds the same values, each in the way that format's
//! users write it (CSV booleans as `ya`/`tidak` and one date as
//! `DD/MM/YYYY`; JSON with keys left out for nulls; NDJSON timestamps in
//! RFC 3339 UTC), so identical previews mean the readers agree.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use rust_xlsxwriter::{ExcelDateTime, Format, Workbook};
use serde_json::Value;

/// Rows per module.
pub const ROWS: usize = 3;

/// One value of the data set.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Null,
    Text(String),
    Int(i64),
    /// A decimal that an f64 holds exactly in its shortest form, so that a
    /// spreadsheet keeps it too, written at its column's scale.
    Dec(String),
    Bool(bool),
    /// Year, month, day.
    Date(i32, u32, u32),
    /// A local time in Asia/Jakarta: year, month, day, hour, minute.
    Local(i32, u32, u32, u32, u32),
}

/// A module's columns as the API lists them: (name, type, required).
pub struct Sheet {
    pub module: String,
    pub table: String,
    pub columns: Vec<(String, String, bool)>,
    pub key: Vec<String>,
    pub rows: Vec<Vec<Val>>,
}

/// The data set for a module as `GET /api/modules/{key}` describes it.
pub fn sheet(module: &Value) -> Sheet {
    let scales: Vec<Option<u64>> = (module["columns"].as_array().unwrap().iter())
        .map(|c| c["scale"].as_u64())
        .collect();
    let columns: Vec<(String, String, bool)> = module["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["type"].as_str().unwrap().to_string(),
                c["required"].as_bool().unwrap(),
            )
        })
        .collect();
    let key: Vec<String> = module["natural_key"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    let rows = (0..ROWS)
        .map(|r| {
            (columns.iter().zip(&scales))
                .map(|((name, ty, required), scale)| {
                    value(name, ty, *required || key.contains(name), r, *scale)
                })
                .collect()
        })
        .collect();
    Sheet {
        module: module["key"].as_str().unwrap().to_string(),
        table: module["table"].as_str().unwrap().to_string(),
        columns,
        key,
        rows,
    }
}

fn value(name: &str, ty: &str, required: bool, r: usize, scale: Option<u64>) -> Val {
    if r == 2 && !required {
        return Val::Null;
    }
    match ty {
        "text" => match r {
            0 => Val::Text(format!("{}-{r} Café", name.to_uppercase())),
            // Quotes, a delimiter and a line break inside one cell.
            _ => Val::Text(format!("{name} {r}: \"quoted\", two\nlines")),
        },
        "integer" => Val::Int(30 + r as i64),
        "bigint" => Val::Int([150_000, 4_000_000_000, -7][r]),
        "numeric" => {
            let d = ["4.5", "1234.75", "0.1"][r];
            Val::Dec(match scale {
                Some(s) => format!("{:.*}", s as usize, d.parse::<f64>().unwrap()),
                None => d.to_string(),
            })
        }
        "boolean" => Val::Bool(r != 1),
        "date" => Val::Date(2024, 3, 29 + r as u32),
        "timestamptz" => Val::Local(2024, 3, 31, 7 + r as u32, 30),
        other => panic!("type {other}"),
    }
}

impl Sheet {
    pub fn names(&self) -> Vec<&str> {
        self.columns.iter().map(|c| c.0.as_str()).collect()
    }

    pub fn csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(self.names()).unwrap();
        for (r, row) in self.rows.iter().enumerate() {
            w.write_record(row.iter().map(|v| match v {
                Val::Null => String::new(),
                Val::Text(s) => s.clone(),
                Val::Int(i) => i.to_string(),
                Val::Dec(d) => d.to_string(),
                Val::Bool(b) => if *b { "ya" } else { "tidak" }.to_string(),
                Val::Date(y, m, d) if r == 1 => format!("{d:02}/{m:02}/{y}"),
                Val::Date(y, m, d) => format!("{y}-{m:02}-{d:02}"),
                Val::Local(y, mo, d, h, mi) => format!("{y}-{mo:02}-{d:02} {h:02}:{mi:02}"),
            }))
            .unwrap();
        }
        String::from_utf8(w.into_inner().unwrap()).unwrap()
    }

    /// XLSX with typed cells: numbers, booleans, date and date-time cells.
    pub fn xlsx(&self) -> Vec<u8> {
        let mut book = Workbook::new();
        let ws = book.add_worksheet();
        ws.set_name(&self.module).unwrap();
        let date = Format::new().set_num_format("yyyy-mm-dd");
        let datetime = Format::new().set_num_format("yyyy-mm-dd hh:mm");
        for (c, name) in self.names().iter().enumerate() {
            ws.write_string(0, c as u16, *name).unwrap();
        }
        for (r, row) in self.rows.iter().enumerate() {
            let r = r as u32 + 1;
            for (c, v) in row.iter().enumerate() {
                let c = c as u16;
                match v {
                    Val::Null => {}
                    Val::Text(s) => {
                        ws.write_string(r, c, s).unwrap();
                    }
                    Val::Int(i) => {
                        ws.write_number(r, c, *i as f64).unwrap();
                    }
                    Val::Dec(d) => {
                        ws.write_number(r, c, d.parse::<f64>().unwrap()).unwrap();
                    }
                    Val::Bool(b) => {
                        ws.write_boolean(r, c, *b).unwrap();
                    }
                    Val::Date(y, m, d) => {
                        let at = ExcelDateTime::from_ymd(*y as u16, *m as u8, *d as u8).unwrap();
                        ws.write_datetime_with_format(r, c, at, &date).unwrap();
                    }
                    Val::Local(y, mo, d, h, mi) => {
                        let at = ExcelDateTime::from_ymd(*y as u16, *mo as u8, *d as u8)
                            .unwrap()
                            .and_hms(*h as u16, *mi as u8, 0)
                            .unwrap();
                        ws.write_datetime_with_format(r, c, at, &datetime).unwrap();
                    }
                }
            }
        }
        book.save_to_buffer().unwrap()
    }

    /// One object per row; nulls are left out (as serializers that skip
    /// them do) or, with `nulls`, sent as `null`.
    fn objects(&self, nulls: bool, utc: bool) -> Vec<String> {
        self.rows
            .iter()
            .map(|row| {
                let fields: Vec<String> = self
                    .names()
                    .iter()
                    .zip(row)
                    .filter(|(_, v)| nulls || **v != Val::Null)
                    .map(|(name, v)| {
                        let json = match v {
                            Val::Null => "null".to_string(),
                            Val::Text(s) => serde_json::to_string(s).unwrap(),
                            Val::Int(i) => i.to_string(),
                            // The digits as a JSON number.
                            Val::Dec(d) => d.to_string(),
                            Val::Bool(b) => b.to_string(),
                            Val::Date(y, m, d) => format!("\"{y}-{m:02}-{d:02}\""),
                            // Jakarta is UTC+7 all year.
                            Val::Local(y, mo, d, h, mi) if utc => {
                                format!("\"{y}-{mo:02}-{d:02}T{:02}:{mi:02}:00Z\"", h - 7)
                            }
                            Val::Local(y, mo, d, h, mi) => {
                                format!("\"{y}-{mo:02}-{d:02} {h:02}:{mi:02}\"")
                            }
                        };
                        format!("{}: {json}", serde_json::to_string(name).unwrap())
                    })
                    .collect();
                format!("{{{}}}", fields.join(", "))
            })
            .collect()
    }

    pub fn json(&self) -> String {
        format!("[\n{}\n]\n", self.objects(false, false).join(",\n"))
    }

    pub fn ndjson(&self) -> String {
        self.objects(true, true).join("\n") + "\n"
    }
}

/// Converts files with LibreOffice (Debian's `libreoffice-calc-nogui`,
/// installed by `.ci/run`): `filter` is `xls` or `xlsx`. One LibreOffice
/// run converts them all; each run has its own profile so that tests
/// running at once do not share one.
pub fn libreoffice(files: &[PathBuf], filter: &str, out: &Path) -> Vec<PathBuf> {
    let profile = tempfile::tempdir().unwrap();
    let status = Command::new("soffice")
        .arg(format!(
            "-env:UserInstallation=file://{}",
            profile.path().display()
        ))
        .args([
            "--headless",
            "--norestore",
            "--convert-to",
            filter,
            "--outdir",
        ])
        .arg(out)
        .args(files)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect(
            "LibreOffice (soffice) runs: apt-get install libreoffice-calc-nogui, as .ci/run does",
        );
    assert!(status.success(), "soffice failed");
    files
        .iter()
        .map(|f| {
            let stem = f.file_stem().unwrap().to_str().unwrap();
            let ext = filter.split(':').next().unwrap();
            let path = out.join(format!("{stem}.{ext}"));
            assert!(path.exists(), "LibreOffice wrote {}", path.display());
            path
        })
        .collect()
}
