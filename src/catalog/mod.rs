//! The catalog: the 26 import modules, each one target table with a typed
//! column schema and a natural key.
//!
//! The catalog is data, not code: `modules.toml` is compiled into the binary
//! and a catalog file named in the configuration replaces it as a whole. It is
//! checked once when loaded (identifiers, types, keys), so the rest of the
//! service can trust every [`Module`] it is handed: SQL identifiers come only
//! from here, never from a request or a file header.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// The catalog shipped with the binary.
const BUILTIN: &str = include_str!("modules.toml");

/// Date formats accepted besides ISO `YYYY-MM-DD` when a module sets none.
const DEFAULT_DATE_FORMATS: &[&str] = &["%d/%m/%Y"];

/// The SQL type of a column, as the specification names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnType {
    Text,
    Integer,
    Bigint,
    Numeric,
    Date,
    Timestamptz,
    Boolean,
}

impl ColumnType {
    /// The name used in the API and in the catalog file.
    pub fn as_str(self) -> &'static str {
        match self {
            ColumnType::Text => "text",
            ColumnType::Integer => "integer",
            ColumnType::Bigint => "bigint",
            ColumnType::Numeric => "numeric",
            ColumnType::Date => "date",
            ColumnType::Timestamptz => "timestamptz",
            ColumnType::Boolean => "boolean",
        }
    }
}

/// One column of a module's table.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Column {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: ColumnType,
    #[serde(default)]
    pub required: bool,
    /// Text values accepted (compared without regard to case, stored in the
    /// catalog's spelling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<String>>,
    /// Other header spellings that name this column.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// Longest text accepted, in characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<usize>,
}

/// One importable module: a target table and its schema.
#[derive(Debug, Clone, Serialize)]
pub struct Module {
    pub key: String,
    pub table: String,
    pub columns: Vec<Column>,
    pub natural_key: Vec<String>,
    /// Extra accepted date formats (chrono syntax), tried after ISO.
    pub date_formats: Vec<String>,
    /// Positions in `columns` of the natural key's columns.
    #[serde(skip)]
    pub key_columns: Vec<usize>,
}

impl Module {
    /// The position of a column by its catalog name.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

/// The whole catalog, in the specification's order.
#[derive(Debug, Clone)]
pub struct Catalog {
    modules: Vec<Arc<Module>>,
    by_key: HashMap<String, Arc<Module>>,
}

/// Why a catalog file was refused.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("catalog is not valid TOML: {0}")]
    Toml(#[from] toml::de::Error),
    #[error("cannot read catalog file {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("catalog: {0}")]
    Invalid(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    module: Vec<ModuleFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModuleFile {
    key: String,
    table: String,
    natural_key: Vec<String>,
    #[serde(default)]
    date_formats: Option<Vec<String>>,
    column: Vec<Column>,
}

impl Catalog {
    /// The catalog compiled into the binary.
    pub fn builtin() -> Catalog {
        // The built-in catalog is checked by a unit test, so failing here is a
        // build defect, not a runtime condition.
        Catalog::from_toml(BUILTIN).expect("built-in catalog is valid")
    }

    /// Loads a catalog file that replaces the built-in one.
    pub fn from_file(path: &std::path::Path) -> Result<Catalog, CatalogError> {
        let text = std::fs::read_to_string(path).map_err(|source| CatalogError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Catalog::from_toml(&text)
    }

    /// Parses and checks a catalog.
    pub fn from_toml(text: &str) -> Result<Catalog, CatalogError> {
        let file: CatalogFile = toml::from_str(text)?;
        let mut modules = Vec::with_capacity(file.module.len());
        let mut by_key = HashMap::new();
        let mut tables = std::collections::HashSet::new();
        for m in file.module {
            let module = Arc::new(check_module(m)?);
            if !tables.insert(module.table.clone()) {
                return Err(invalid(format!("table {} is used twice", module.table)));
            }
            if by_key.insert(module.key.clone(), module.clone()).is_some() {
                return Err(invalid(format!("module {} is defined twice", module.key)));
            }
            modules.push(module);
        }
        if modules.is_empty() {
            return Err(invalid("no modules".into()));
        }
        Ok(Catalog { modules, by_key })
    }

    /// The module with this key, if any.
    pub fn get(&self, key: &str) -> Option<&Arc<Module>> {
        self.by_key.get(key)
    }

    /// Every module, in catalog order.
    pub fn modules(&self) -> &[Arc<Module>] {
        &self.modules
    }

    /// Every module key, in catalog order (for "unknown module" answers).
    pub fn keys(&self) -> Vec<&str> {
        self.modules.iter().map(|m| m.key.as_str()).collect()
    }
}

fn invalid(msg: String) -> CatalogError {
    CatalogError::Invalid(msg)
}

/// Identifiers become SQL table and column names; allowing only this shape
/// (and quoting them anyway) keeps any catalog file from injecting SQL.
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && s.len() <= 63
}

/// The longest module key: its stage table and that table's index are
/// named `ig_stage_<key>` and `ig_stage_<key>_action`, within PostgreSQL's
/// 63 bytes (see `store::stage`).
const MAX_KEY: usize = 40;
/// The longest column name: its stage columns are `v_<name>` and `b_<name>`.
const MAX_COLUMN: usize = 61;

fn check_module(m: ModuleFile) -> Result<Module, CatalogError> {
    if !is_identifier(&m.key) || m.key.len() > MAX_KEY {
        return Err(invalid(format!(
            "module key {:?} is not an identifier of at most {MAX_KEY} characters",
            m.key
        )));
    }
    if !is_identifier(&m.table) || m.table.starts_with("ig_") {
        return Err(invalid(format!(
            "module {}: table {:?} must be an identifier not starting with ig_",
            m.key, m.table
        )));
    }
    if m.column.is_empty() {
        return Err(invalid(format!("module {} has no columns", m.key)));
    }
    let mut seen = std::collections::HashSet::new();
    for c in &m.column {
        if !is_identifier(&c.name) || c.name == "id" || c.name.len() > MAX_COLUMN {
            return Err(invalid(format!(
                "module {}: column {:?} must be an identifier other than id, \
                 of at most {MAX_COLUMN} characters",
                m.key, c.name
            )));
        }
        if !seen.insert(c.name.clone()) {
            return Err(invalid(format!(
                "module {}: column {} twice",
                m.key, c.name
            )));
        }
        if c.allowed.is_some() && c.ty != ColumnType::Text {
            return Err(invalid(format!(
                "module {}: allowed values are for text columns ({})",
                m.key, c.name
            )));
        }
    }
    let mut key_columns = Vec::new();
    for k in &m.natural_key {
        let Some(i) = m.column.iter().position(|c| &c.name == k) else {
            return Err(invalid(format!(
                "module {}: natural key column {k} is not a column",
                m.key
            )));
        };
        if !m.column[i].required {
            return Err(invalid(format!(
                "module {}: natural key column {k} must be required",
                m.key
            )));
        }
        key_columns.push(i);
    }
    if key_columns.is_empty() {
        return Err(invalid(format!("module {} has no natural key", m.key)));
    }
    let date_formats = m
        .date_formats
        .unwrap_or_else(|| DEFAULT_DATE_FORMATS.iter().map(|s| s.to_string()).collect());
    Ok(Module {
        key: m.key,
        table: m.table,
        columns: m.column,
        natural_key: m.natural_key,
        date_formats,
        key_columns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every module and column of the original specification, read from the
    /// specification itself, must be in the built-in catalog with the same
    /// table, type and required flag, in the same order.
    #[test]
    fn builtin_catalog_matches_the_specification() {
        let spec = include_str!("../../tests/data/specification.txt");
        let catalog = Catalog::builtin();
        let index = markdown_rows(section(spec, "### Module index"));
        assert_eq!(index.len(), 26);
        assert_eq!(catalog.modules().len(), 26);
        for (i, row) in index.iter().enumerate() {
            let (key, table) = (&row[0], &row[1]);
            let module = catalog.get(key).unwrap_or_else(|| panic!("{key} missing"));
            assert_eq!(catalog.modules()[i].key, *key, "order of modules");
            assert_eq!(&module.table, table);
            let columns = markdown_rows(section(spec, &format!("### {key}\n")));
            let got: Vec<(String, String, bool)> = module
                .columns
                .iter()
                .map(|c| (c.name.clone(), c.ty.as_str().to_string(), c.required))
                .collect();
            let want: Vec<(String, String, bool)> = columns
                .iter()
                .map(|r| (r[0].clone(), r[1].clone(), r[2] == "yes"))
                .collect();
            assert_eq!(got, want, "columns of {key}");
        }
    }

    /// The natural keys of API.md section 2.
    #[test]
    fn builtin_natural_keys_match_the_contract() {
        let catalog = Catalog::builtin();
        let want = [
            ("customers", "wa_number"),
            ("products", "sku"),
            ("orders", "order_no,sku"),
            ("payments", "payment_no"),
            ("inventory", "sku,warehouse"),
            ("suppliers", "supplier_name"),
            ("purchase", "po_no,sku"),
            ("aftersales", "ticket_no"),
            ("knowledge", "doc_no"),
            ("parts", "part_no"),
            ("recycle", "recycle_no"),
            ("pod_design", "design_no"),
            ("cloud_files", "file_id"),
            ("map_customers", "batch_id,place_name"),
            ("technicians", "phone"),
            ("merchants", "merchant_name"),
            ("logistics", "tracking_no"),
            ("tax", "tax_no"),
            ("audit", "log_id"),
            ("rbac", "role_key"),
            ("marketing", "campaign_no"),
            ("reports", "report_no"),
            ("dashboard", "widget_no"),
            ("eco_chat", "thread_no"),
            ("msg_contacts", "channel,channel_id"),
            ("finance_report", "report_no"),
        ];
        for (key, nk) in want {
            assert_eq!(catalog.get(key).unwrap().natural_key.join(","), nk, "{key}");
        }
    }

    #[test]
    fn keys_too_long_for_a_stage_table_are_refused() {
        let text = format!(
            "[[module]]\nkey = \"{}\"\ntable = \"t\"\nnatural_key = [\"a\"]\n\
             [[module.column]]\nname = \"a\"\ntype = \"text\"\nrequired = true\n",
            "k".repeat(MAX_KEY + 1)
        );
        assert!(matches!(
            Catalog::from_toml(&text),
            Err(CatalogError::Invalid(_))
        ));
        assert!(Catalog::from_toml(&text.replace(&"k".repeat(MAX_KEY + 1), "k")).is_ok());
    }

    #[test]
    fn hostile_identifiers_are_refused() {
        let text = r#"
[[module]]
key = "x"
table = "t\"; DROP TABLE ig_jobs; --"
natural_key = ["a"]
[[module.column]]
name = "a"
type = "text"
required = true
"#;
        assert!(matches!(
            Catalog::from_toml(text),
            Err(CatalogError::Invalid(_))
        ));
    }

    #[test]
    fn natural_key_must_be_required() {
        let text = r#"
[[module]]
key = "x"
table = "t"
natural_key = ["a"]
[[module.column]]
name = "a"
type = "text"
"#;
        let err = Catalog::from_toml(text).unwrap_err().to_string();
        assert!(err.contains("must be required"), "{err}");
    }

    /// The text from a heading to the next heading.
    fn section<'a>(spec: &'a str, heading: &str) -> &'a str {
        let start = spec.find(heading).unwrap_or_else(|| panic!("{heading}"));
        let rest = &spec[start + heading.len()..];
        let end = rest.find("\n#").unwrap_or(rest.len());
        &rest[..end]
    }

    /// The body rows of the first markdown table in a section.
    fn markdown_rows(text: &str) -> Vec<Vec<String>> {
        text.lines()
            .filter(|l| l.starts_with('|'))
            .skip(2)
            .map(|l| {
                l.trim_matches('|')
                    .split('|')
                    .map(|c| c.trim().to_string())
                    .collect()
            })
            .collect()
    }
}
