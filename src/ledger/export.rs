//! An export of a module's rows (API.md section 15) as the ledger records
//! it: who, which module, in which format, with which filters, and how
//! many rows left. One `module_exported` link a download, appended when
//! its body ends (sent whole, or cut short by the client or a failure); the
//! row the store keeps beside it must say what the link says, which
//! `ledger verify` checks ([`mismatch`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::chain::Event;
use crate::ids::{ExportId, KeyId, ModuleKey};

/// The ledger's name of an export's link.
pub const EXPORTED: &str = "module_exported";

/// The state an export's link moves its subject to: there is one link an
/// export, so one state.
pub const DONE: &str = "exported";

/// The formats a module's rows are exported in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    #[default]
    Csv,
    Xlsx,
    Json,
    Ndjson,
}

impl ExportFormat {
    pub const ALL: [ExportFormat; 4] = [
        ExportFormat::Csv,
        ExportFormat::Xlsx,
        ExportFormat::Json,
        ExportFormat::Ndjson,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ExportFormat::Csv => "csv",
            ExportFormat::Xlsx => "xlsx",
            ExportFormat::Json => "json",
            ExportFormat::Ndjson => "ndjson",
        }
    }

    pub fn parse(text: &str) -> Option<ExportFormat> {
        Self::ALL.into_iter().find(|f| f.as_str() == text)
    }
}

/// One export, as recorded once its body ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Export {
    pub id: ExportId,
    pub module: ModuleKey,
    /// The key that asked for it.
    pub by: KeyId,
    pub format: ExportFormat,
    /// The filters as asked: `{"where": {column: text}, "job", "limit"}`,
    /// each only when given.
    pub filters: Json,
    /// Rows written to the body.
    pub rows: u64,
    /// Whether the body was sent to its end (else the client left, or
    /// reading the table failed, after `rows` rows).
    pub complete: bool,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
}

impl Export {
    /// What the export's link records beside its actor and time.
    pub fn detail(&self) -> Json {
        serde_json::json!({
            "module": self.module,
            "format": self.format.as_str(),
            "filters": self.filters,
            "rows": self.rows,
            "complete": self.complete,
        })
    }
}

/// How an export's row differs from what its link says, if it does: an
/// export row written or changed behind the service (more rows, other
/// filters, another person) is found by `ledger verify`.
pub fn mismatch(e: &Export, events: &[Event]) -> Option<String> {
    let Some(link) = events.iter().find(|l| l.event == EXPORTED) else {
        return Some(format!(
            "export {} has no {EXPORTED} event: it was not recorded by the service",
            e.id
        ));
    };
    if link.actor.as_deref() != Some(e.by.as_str()) {
        return Some(format!("export {} names another key than its event", e.id));
    }
    if link.detail_json().as_ref() != Some(&e.detail()) {
        return Some(format!(
            "export {} says another module, format, filters or count than its event",
            e.id
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn export() -> Export {
        let at = chrono::TimeZone::with_ymd_and_hms(&Utc, 2024, 1, 2, 3, 4, 5).unwrap();
        Export {
            id: ExportId::from_stored("exp_1"),
            module: ModuleKey::from_stored("orders"),
            by: KeyId::from_stored("key_aaaaaaaa"),
            format: ExportFormat::Csv,
            filters: serde_json::json!({"where": {"status": "paid"}}),
            rows: 3,
            complete: true,
            started_at: at,
            finished_at: at,
        }
    }

    fn link(e: &Export) -> Event {
        Event {
            seq: 1,
            job_id: e.id.to_string(),
            n: 1,
            at: e.finished_at,
            event: EXPORTED.into(),
            from_state: None,
            to_state: DONE.into(),
            actor: Some(e.by.to_string()),
            comment: None,
            detail: Some(e.detail().to_string()),
        }
    }

    #[test]
    fn an_export_agrees_with_its_link_until_either_changes() {
        let e = export();
        assert_eq!(mismatch(&e, &[link(&e)]), None);
        assert!(mismatch(&e, &[]).is_some());
        let mut more = e.clone();
        more.rows = 4;
        assert!(mismatch(&more, &[link(&e)]).is_some());
        let mut other = e.clone();
        other.by = KeyId::from_stored("key_bbbbbbbb");
        assert!(mismatch(&other, &[link(&e)]).is_some());
    }

    #[test]
    fn formats_are_spelled_as_the_query_spells_them() {
        for f in ExportFormat::ALL {
            assert_eq!(ExportFormat::parse(f.as_str()), Some(f));
        }
        assert_eq!(ExportFormat::parse("xls"), None);
    }
}
