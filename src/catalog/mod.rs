//! The catalog: the 26 import modules, each one target table with a typed
//! column schema and a natural key.
//!
//! The catalog is data, not code: `modules.toml` is compiled into the binary
//! and a catalog file named in the configuration replaces it as a whole. It is
//! checked once when loaded (identifiers, types, keys), so the rest of the
//! service can trust every [`Module`] it is handed: SQL identifiers come only
//! from here, never from a request or a file header.

pub mod order;
pub mod vocabulary;

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::ids::ModuleKey;

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
    /// Decimal places a numeric column keeps: every value is stored with
    /// exactly this many (`4.5` as `4.50` at 2), a value that needs more
    /// is refused, and MySQL's column is `DECIMAL` at this scale. Without
    /// it a value keeps the scale it was written with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<u32>,
}

/// What validation does with a referencing value the referenced table
/// does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnMissing {
    /// A row warning: the row stays valid, the approver sees it.
    Warn,
    /// A row error (`reference`).
    Error,
}

/// A column whose values name rows of another module (API.md section 12):
/// `orders.sku` → `products.sku`.
#[derive(Debug, Clone, Serialize)]
pub struct Reference {
    /// The referencing column, in this module.
    pub column: String,
    /// The referenced module's key.
    pub module: String,
    /// The referenced column, in that module.
    pub key: String,
    pub on_missing: OnMissing,
    /// Positions of `column` here and of `key` in the referenced module.
    #[serde(skip)]
    pub column_index: usize,
    #[serde(skip)]
    pub key_index: usize,
}

/// One importable module: a target table and its schema.
#[derive(Debug, Clone, Serialize)]
pub struct Module {
    pub key: ModuleKey,
    /// The module's name as people read it, by language tag (`en`, `id`);
    /// pages fall back to the key where a language has none.
    pub display: std::collections::BTreeMap<String, String>,
    pub table: String,
    pub columns: Vec<Column>,
    pub natural_key: Vec<String>,
    /// Extra accepted date formats (chrono syntax), tried after ISO.
    pub date_formats: Vec<String>,
    /// Positions in `columns` of the natural key's columns.
    #[serde(skip)]
    pub key_columns: Vec<usize>,
    /// Columns that name rows of other modules.
    pub references: Vec<Reference>,
    /// The rules the catalog ships as the module's version 1 (API.md
    /// section 14), as written: `crate::rules` reads and compiles them
    /// (the service, when it starts), a layer above the catalog.
    #[serde(skip)]
    pub rules: Vec<serde_json::Value>,
}

impl Module {
    /// The name people read in language `lang`, else in English, else the
    /// key.
    pub fn display_name(&self, lang: &str) -> &str {
        (self.display.get(lang))
            .or_else(|| self.display.get("en"))
            .map_or(self.key.as_str(), String::as_str)
    }

    /// The position of a column by its catalog name.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// Where each natural-key column is among `columns` (catalog
    /// positions, in a file's order): none when one of them is missing.
    pub fn key_places(&self, columns: impl Iterator<Item = usize> + Clone) -> Option<Vec<usize>> {
        (self.key_columns.iter())
            .map(|&kc| columns.clone().position(|c| c == kc))
            .collect()
    }
}

/// The whole catalog, in the specification's order.
#[derive(Debug, Clone)]
pub struct Catalog {
    modules: Vec<Arc<Module>>,
    by_key: HashMap<ModuleKey, Arc<Module>>,
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
    /// `display = { en = "Customers", id = "Pelanggan" }`.
    #[serde(default)]
    display: std::collections::BTreeMap<String, String>,
    table: String,
    natural_key: Vec<String>,
    #[serde(default)]
    date_formats: Option<Vec<String>>,
    column: Vec<Column>,
    #[serde(default)]
    reference: Vec<ReferenceFile>,
    /// `[[module.rules]]`: each a rule as API.md section 14 writes it.
    #[serde(default)]
    rules: Vec<serde_json::Value>,
}

/// A `[[module.reference]]` as written, with where it was written so that a
/// wrong one is named by its line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReferenceFile {
    column: toml::Spanned<String>,
    module: toml::Spanned<String>,
    key: toml::Spanned<String>,
    on_missing: OnMissing,
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
        let mut references = Vec::new();
        for mut m in file.module {
            references.push(std::mem::take(&mut m.reference));
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
        // References are checked once every module is known: the module
        // they name may come later in the file.
        let mut checked = Vec::with_capacity(modules.len());
        for (module, refs) in modules.iter().zip(references) {
            let refs = refs
                .into_iter()
                .map(|r| check_reference(text, module, &by_key, r))
                .collect::<Result<Vec<_>, _>>()?;
            let mut module = Module::clone(module);
            module.references = refs;
            checked.push(Arc::new(module));
        }
        let keys: Vec<&str> = checked.iter().map(|m| m.key.as_str()).collect();
        if let Err(circle) = order::reference_order(&checked, &keys) {
            return Err(invalid(format!(
                "the references of {} go round in a circle: a workbook could not order them",
                circle.join(", ")
            )));
        }
        let by_key = checked.iter().map(|m| (m.key.clone(), m.clone())).collect();
        Ok(Catalog {
            modules: checked,
            by_key,
        })
    }

    /// Every reference to `module` from any module (its referrers): the
    /// referring module and the reference.
    pub fn referrers<'a>(
        &'a self,
        module: &'a str,
    ) -> impl Iterator<Item = (&'a Arc<Module>, &'a Reference)> + 'a {
        self.modules.iter().flat_map(move |m| {
            m.references
                .iter()
                .filter(move |r| r.module == module)
                .map(move |r| (m, r))
        })
    }

    /// The module with this key, if any.
    pub fn get(&self, key: &str) -> Option<&Arc<Module>> {
        self.by_key.get(key)
    }

    /// Every module, in catalog order.
    pub fn modules(&self) -> &[Arc<Module>] {
        &self.modules
    }

    /// These modules in reference order ([`order::reference_order`]; the
    /// catalog has no circle).
    pub fn reference_order<'a>(&self, modules: &[&'a str]) -> Vec<&'a str> {
        order::reference_order(&self.modules, modules).unwrap_or_else(|left| left)
    }

    /// Every module key, in catalog order (for "unknown module" answers).
    pub fn keys(&self) -> Vec<&str> {
        self.modules.iter().map(|m| m.key.as_str()).collect()
    }
}

fn invalid(msg: String) -> CatalogError {
    CatalogError::Invalid(msg)
}

/// The 1-based line of a byte offset in the catalog's text.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Checks a reference against the catalog: its column is this module's,
/// the module it names exists and has the key column, of the same type.
fn check_reference(
    text: &str,
    module: &Module,
    by_key: &HashMap<ModuleKey, Arc<Module>>,
    r: ReferenceFile,
) -> Result<Reference, CatalogError> {
    let at = |s: &toml::Spanned<String>| line_of(text, s.span().start);
    let column_index = module.column_index(r.column.get_ref()).ok_or_else(|| {
        invalid(format!(
            "line {}: module {}: reference column {} is not a column of {}",
            at(&r.column),
            module.key,
            r.column.get_ref(),
            module.key
        ))
    })?;
    let target = by_key.get(r.module.get_ref().as_str()).ok_or_else(|| {
        invalid(format!(
            "line {}: module {}: reference to module {}, which the catalog does not have",
            at(&r.module),
            module.key,
            r.module.get_ref()
        ))
    })?;
    let key_index = target.column_index(r.key.get_ref()).ok_or_else(|| {
        invalid(format!(
            "line {}: module {}: reference key {} is not a column of {}",
            at(&r.key),
            module.key,
            r.key.get_ref(),
            target.key
        ))
    })?;
    let (from, to) = (&module.columns[column_index], &target.columns[key_index]);
    if from.ty != to.ty {
        return Err(invalid(format!(
            "line {}: module {}: reference {} ({}) → {}.{} ({}): the types differ",
            at(&r.column),
            module.key,
            from.name,
            from.ty.as_str(),
            target.key,
            to.name,
            to.ty.as_str()
        )));
    }
    Ok(Reference {
        column: r.column.into_inner(),
        module: r.module.into_inner(),
        key: r.key.into_inner(),
        on_missing: r.on_missing,
        column_index,
        key_index,
    })
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
/// named `ig_stage_<key>` and `ig_stage_<key>_changes`, within PostgreSQL's
/// 63 bytes (see `store::stage`).
const MAX_KEY: usize = 40;
/// The longest column name: its stage columns are `v_<name>` and `b_<name>`.
const MAX_COLUMN: usize = 61;

/// The most decimal places a numeric column may keep: a value keeps 28
/// digits in all, so at this scale it still has eight before the point.
pub const MAX_SCALE: u32 = 20;

/// A scale is for numeric columns, and at most [`MAX_SCALE`].
fn check_scale(module: &str, c: &Column) -> Result<(), CatalogError> {
    match c.scale {
        Some(_) if c.ty != ColumnType::Numeric => Err(invalid(format!(
            "module {module}: a scale is for numeric columns ({})",
            c.name
        ))),
        Some(s) if s > MAX_SCALE => Err(invalid(format!(
            "module {module}: column {} has scale {s}; at most {MAX_SCALE} decimal places",
            c.name
        ))),
        _ => Ok(()),
    }
}

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
        check_scale(&m.key, c)?;
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
        key: ModuleKey::from_stored(m.key),
        display: m.display,
        table: m.table,
        columns: m.column,
        natural_key: m.natural_key,
        date_formats,
        key_columns,
        references: vec![],
        rules: m.rules,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_module_has_a_name_in_both_languages() {
        for m in Catalog::builtin().modules() {
            for lang in ["en", "id"] {
                let name = m.display.get(lang);
                assert!(name.is_some_and(|n| !n.is_empty()), "{} in {lang}", m.key);
            }
        }
        let customers = Catalog::builtin().get("customers").cloned().unwrap();
        assert_eq!(customers.display_name("id"), "Pelanggan");
        assert_eq!(customers.display_name("fr"), "Customers");
    }

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
            assert_eq!(catalog.modules()[i].key, key.as_str(), "order of modules");
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

    #[test]
    fn a_scale_is_for_numeric_columns_and_at_most_twenty_places() {
        let with = |ty: &str, scale: u32| {
            format!(
                "[[module]]\nkey = \"x\"\ntable = \"t\"\nnatural_key = [\"a\"]\n\
                 [[module.column]]\nname = \"a\"\ntype = \"text\"\nrequired = true\n\
                 [[module.column]]\nname = \"b\"\ntype = \"{ty}\"\nscale = {scale}\n"
            )
        };
        let catalog = Catalog::from_toml(&with("numeric", 2)).unwrap();
        assert_eq!(catalog.get("x").unwrap().columns[1].scale, Some(2));
        assert!(Catalog::from_toml(&with("numeric", MAX_SCALE)).is_ok());
        for (ty, scale, says) in [
            ("numeric", MAX_SCALE + 1, "at most 20"),
            ("text", 2, "for numeric columns"),
        ] {
            let err = Catalog::from_toml(&with(ty, scale))
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{err}");
        }
        // Every numeric column of the built-in catalog has one.
        for m in Catalog::builtin().modules() {
            for c in m.columns.iter().filter(|c| c.ty == ColumnType::Numeric) {
                assert!(c.scale.is_some(), "{}.{}", m.key, c.name);
            }
        }
    }

    /// The references of API.md section 12, all `warn`.
    #[test]
    fn builtin_references_match_the_contract() {
        let catalog = Catalog::builtin();
        let mut got = Vec::new();
        for m in catalog.modules() {
            for r in &m.references {
                assert_eq!(r.on_missing, OnMissing::Warn);
                got.push(format!("{}.{} -> {}.{}", m.key, r.column, r.module, r.key));
            }
        }
        assert_eq!(
            got,
            [
                "orders.sku -> products.sku",
                "payments.order_no -> orders.order_no",
                "inventory.sku -> products.sku",
                "purchase.sku -> products.sku",
                "logistics.order_no -> orders.order_no",
            ]
        );
        let referrers: Vec<&str> = catalog
            .referrers("products")
            .map(|(m, _)| m.key.as_str())
            .collect();
        assert_eq!(referrers, ["orders", "inventory", "purchase"]);
    }

    #[test]
    fn a_wrong_reference_is_named_by_its_line() {
        let base = r#"
[[module]]
key = "products"
table = "p"
natural_key = ["sku"]
[[module.column]]
name = "sku"
type = "text"
required = true

[[module]]
key = "orders"
table = "o"
natural_key = ["no"]
[[module.column]]
name = "no"
type = "text"
required = true
[[module.column]]
name = "sku"
type = "text"
[[module.column]]
name = "qty"
type = "integer"
[[module.reference]]
column = "sku"
module = "products"
key = "sku"
on_missing = "error"
"#;
        let ok = Catalog::from_toml(base).unwrap();
        assert_eq!(
            ok.get("orders").unwrap().references[0].on_missing,
            OnMissing::Error
        );
        for (from, to, says) in [
            (
                "module = \"products\"",
                "module = \"prodcts\"",
                "line 27: module orders: reference to module prodcts",
            ),
            (
                "key = \"sku\"\non_missing",
                "key = \"code\"\non_missing",
                "line 28: module orders: reference key code",
            ),
            (
                "column = \"sku\"\nmodule",
                "column = \"qty\"\nmodule",
                "the types differ",
            ),
            (
                "column = \"sku\"\nmodule",
                "column = \"nope\"\nmodule",
                "line 26: module orders: reference column nope",
            ),
        ] {
            let err = Catalog::from_toml(&base.replace(from, to))
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{err}");
        }
        assert!(Catalog::from_toml(&base.replace("\"error\"", "\"ignore\"")).is_err());
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
