//! A small OpenDocument spreadsheet writer, for templates: sheets of a
//! header row and example rows, each cell a string, a number or a date.
//! Written by hand because no maintained Rust crate writes ODS (the
//! readers, calamine included, only read it); the format needed here is
//! three short XML parts in a zip (ODF 1.2, part 1, section 3).

use std::io::Write;

use zip::write::SimpleFileOptions;

/// One cell of a template sheet.
pub enum Cell {
    Text(String),
    Number(String),
    /// `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM:SS`.
    Date(String),
    Bool(bool),
}

/// A sheet: its name and rows.
pub struct Sheet {
    pub name: String,
    pub rows: Vec<Vec<Cell>>,
}

fn escape(text: &str) -> String {
    quick_xml::escape::escape(text).into_owned()
}

fn cell(c: &Cell) -> String {
    match c {
        Cell::Text(t) => format!(
            r#"<table:table-cell office:value-type="string"><text:p>{}</text:p></table:table-cell>"#,
            escape(t)
        ),
        Cell::Number(n) => format!(
            r#"<table:table-cell office:value-type="float" office:value="{n}"><text:p>{n}</text:p></table:table-cell>"#
        ),
        Cell::Date(d) => format!(
            r#"<table:table-cell office:value-type="date" office:date-value="{d}"><text:p>{d}</text:p></table:table-cell>"#
        ),
        Cell::Bool(b) => format!(
            r#"<table:table-cell office:value-type="boolean" office:boolean-value="{b}"><text:p>{b}</text:p></table:table-cell>"#
        ),
    }
}

fn content(sheets: &[Sheet]) -> String {
    let mut xml = String::from(concat!(
        r#"<?xml version="1.0" encoding="UTF-8"?>"#,
        r#"<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" "#,
        r#"xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" "#,
        r#"xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">"#,
        r#"<office:body><office:spreadsheet>"#
    ));
    for sheet in sheets {
        xml.push_str(&format!(
            r#"<table:table table:name="{}">"#,
            escape(&sheet.name)
        ));
        for row in &sheet.rows {
            xml.push_str("<table:table-row>");
            row.iter().for_each(|c| xml.push_str(&cell(c)));
            xml.push_str("</table:table-row>");
        }
        xml.push_str("</table:table>");
    }
    xml.push_str("</office:spreadsheet></office:body></office:document-content>");
    xml
}

const MANIFEST: &str = concat!(
    r#"<?xml version="1.0" encoding="UTF-8"?>"#,
    r#"<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">"#,
    r#"<manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/>"#,
    r#"<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>"#,
    r#"</manifest:manifest>"#
);

/// The ODS holding `sheets`: `mimetype` first and stored, as the format
/// requires, then the manifest and the content.
pub fn book(sheets: &[Sheet]) -> std::io::Result<Vec<u8>> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let deflated = SimpleFileOptions::default();
    zip.start_file("mimetype", stored)?;
    zip.write_all(crate::ingest::ods::MIMETYPE)?;
    zip.start_file("META-INF/manifest.xml", deflated)?;
    zip.write_all(MANIFEST.as_bytes())?;
    zip.start_file("content.xml", deflated)?;
    zip.write_all(content(sheets).as_bytes())?;
    Ok(zip.finish()?.into_inner())
}
