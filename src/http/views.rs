//! The bodies the API answers with, as types. Each serialises exactly as
//! API.md shows it, and the OpenAPI document describes it from the same
//! definition, so the document cannot drift from the answers.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::{PartialSchema, ToSchema};

use crate::catalog::{Module, OnMissing};
use crate::ids::{KeyId, ModuleKey};
use crate::keys::{self, KeyRecord, KeyRequest, Person, RequestState, Role};
use crate::ledger::JobState;
use crate::ledger::chain::Event;
use crate::ledger::job::{People, time};
use crate::validate::{RowAction, RowError};

// The job as clients see it is the service's (the event feed shows it too).
pub use crate::service::views::{
    DecisionView, FileView, GateView, JobLinks, JobView, RequestPerson,
};

/// The bytes of a file (a spreadsheet, a report), as the document shows
/// them: `{"type": "string", "format": "binary"}`.
pub struct Binary;

impl PartialSchema for Binary {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .into()
    }
}

impl ToSchema for Binary {}

/// A page of jobs, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobList {
    pub jobs: Vec<JobView>,
    /// The `cursor` of the next page; null on the last.
    pub next_cursor: Option<String>,
}

/// One row of the preview.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreviewRow {
    /// A workbook job's part (its module) the row is in (API.md section
    /// 16); absent on other jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub part: Option<String>,
    /// The row as a person sees it in the file.
    pub row: i64,
    pub action: RowAction,
    /// The row's values by column, typed (numbers as JSON numbers,
    /// `numeric` as a decimal string, dates `YYYY-MM-DD`, timestamps
    /// RFC 3339 UTC); error rows show the cells' raw text.
    #[schema(value_type = Object)]
    pub values: Map<String, Value>,
    /// Updates only: the current values of the columns the file changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>, nullable = false)]
    pub before: Option<Map<String, Value>>,
    pub errors: Vec<RowError>,
    /// Remarks that leave the row valid: `reference` for a value the
    /// referenced module's table does not hold (`on_missing = "warn"`).
    pub warnings: Vec<RowError>,
    /// Cells a revision set (API.md section 11), by column, with what the
    /// file said: `{"qty": {"was": "tiga"}}`.
    #[serde(skip_serializing_if = "Map::is_empty")]
    #[schema(value_type = Object)]
    pub fixed: Map<String, Value>,
    /// Cells a normalizer of the module's rules rewrote (API.md section
    /// 14), by column, with what the file said: `{"wa_number": {"was":
    /// "0812-3456-7890"}}`; the values show the normalized value.
    #[serde(skip_serializing_if = "Map::is_empty")]
    #[schema(value_type = Object)]
    pub normalized: Map<String, Value>,
}

/// A page of a job's preview.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreviewPage {
    /// Rows with this action (or all rows) in the job.
    pub total: i64,
    pub offset: i64,
    pub limit: i64,
    pub rows: Vec<PreviewRow>,
}

/// A page of a job's row errors.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorsPage {
    pub total: i64,
    pub offset: i64,
    pub limit: i64,
    pub errors: Vec<ErrorView>,
}

/// One row error, and on a workbook job the part it is in.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorView {
    /// A workbook job's part (its module) the row is in (API.md section
    /// 16); absent on other jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub part: Option<String>,
    #[serde(flatten)]
    pub error: RowError,
}

/// One move in a job's ledger.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventView {
    /// The event's place in the job's ledger, from 1.
    pub n: i64,
    pub event: String,
    #[schema(value_type = Option<JobState>)]
    pub from: Option<String>,
    #[schema(value_type = JobState)]
    pub to: String,
    /// Null for the service's own moves.
    pub actor: Option<Person>,
    #[schema(format = DateTime)]
    pub at: String,
    pub comment: Option<String>,
    /// What the move recorded (counts, rows written, …).
    #[schema(value_type = Option<Object>)]
    pub detail: Option<Value>,
}

impl EventView {
    pub fn new(e: &Event, people: &People) -> EventView {
        EventView {
            n: e.n,
            event: e.event.clone(),
            from: e.from_state.clone(),
            to: e.to_state.clone(),
            actor: e.actor.as_deref().map(|a| people.person(a)),
            at: time(&e.at),
            comment: e.comment.clone(),
            detail: e.detail_json(),
        }
    }
}

/// A job's ledger.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventList {
    pub events: Vec<EventView>,
}

/// A column of a module.
#[derive(Debug, Serialize, ToSchema)]
pub struct ColumnView {
    pub name: String,
    /// `text`, `integer`, `bigint`, `numeric`, `boolean`, `date` or
    /// `timestamptz`.
    #[serde(rename = "type")]
    #[schema(rename = "type")]
    pub ty: String,
    pub required: bool,
    /// The values the column takes, if the catalog restricts them.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub allowed: Option<Vec<String>>,
    /// Other header names that mean this column.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub aliases: Option<Vec<String>>,
    /// Numeric columns: the decimal places every value is stored with.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, maximum = 20)]
    pub scale: Option<u32>,
}

/// A module of the catalog.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Module)]
pub struct ModuleView {
    #[schema(value_type = String)]
    pub key: ModuleKey,
    /// The module's name as people read it, by language (`en`, `id`); an
    /// addition to API.md. Empty when the catalog names none.
    #[schema(value_type = Object)]
    pub display: std::collections::BTreeMap<String, String>,
    pub table: String,
    pub columns: Vec<ColumnView>,
    pub natural_key: Vec<String>,
    /// Columns whose values name rows of other modules (API.md section 12).
    pub references: Vec<ReferenceView>,
}

/// A reference: `column` names rows of `module` by their `key`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReferenceView {
    pub column: String,
    pub module: String,
    pub key: String,
    pub on_missing: OnMissing,
}

impl ModuleView {
    pub fn new(m: &Module) -> ModuleView {
        ModuleView {
            key: m.key.clone(),
            display: m.display.clone(),
            table: m.table.clone(),
            columns: m
                .columns
                .iter()
                .map(|c| ColumnView {
                    name: c.name.clone(),
                    ty: c.ty.as_str().to_string(),
                    required: c.required,
                    allowed: c.allowed.clone(),
                    aliases: (!c.aliases.is_empty()).then(|| c.aliases.clone()),
                    scale: c.scale,
                })
                .collect(),
            natural_key: m.natural_key.clone(),
            references: m
                .references
                .iter()
                .map(|r| ReferenceView {
                    column: r.column.clone(),
                    module: r.module.clone(),
                    key: r.key.clone(),
                    on_missing: r.on_missing,
                })
                .collect(),
        }
    }
}

/// The catalog's modules.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModuleList {
    pub modules: Vec<ModuleView>,
}

/// A key: the person masked, never the secret or its hash.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Key)]
pub struct KeyView {
    #[schema(value_type = String, example = "key_7Qf2")]
    pub id: KeyId,
    pub person: Person,
    /// The holder's full name: every key answer is an admin's, and key
    /// management is the one exception to masking (API.md section 1).
    pub name: String,
    pub role: Role,
    /// Module keys, or `["*"]` for all.
    pub modules: Vec<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub expires_at: Option<String>,
    #[schema(format = DateTime)]
    pub revoked_at: Option<String>,
    /// The person the key belongs to: four-eyes is counted by person, and
    /// a person may hold several keys (API.md section 1).
    #[schema(example = "per_Xk29aQ7c")]
    pub person_id: String,
    /// The holder's email, when it was given.
    pub email: Option<String>,
    /// The key that issued this one; `null` for keys made at first start
    /// or on the command line.
    #[schema(value_type = Option<String>, example = "key_7Qf2")]
    pub issued_by: Option<KeyId>,
}

impl KeyView {
    pub fn new(k: &KeyRecord) -> KeyView {
        KeyView {
            id: k.id.clone(),
            person: k.person(),
            name: k.name.clone(),
            role: k.role,
            modules: k.modules.clone(),
            created_at: time(&k.created_at),
            expires_at: k.expires_at.as_ref().map(time),
            revoked_at: k.revoked_at.as_ref().map(time),
            person_id: k.person_id.clone(),
            email: k.email.clone(),
            issued_by: k.issued_by.clone(),
        }
    }
}

/// A new key, with its secret: shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct NewKeyView {
    #[serde(flatten)]
    pub key_view: KeyView,
    /// The secret, for the `X-API-Key` header.
    #[schema(pattern = "^igk_[0-9A-Za-z]{44}$")]
    pub key: String,
}

/// Every key.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyList {
    pub keys: Vec<KeyView>,
}

/// A key request as every answer shows it: people masked, never the token.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = KeyRequest)]
pub struct KeyRequestView {
    #[schema(example = "kr_01JD8Z3K6W0Q2T5N8XJ4R7M9C1")]
    pub id: String,
    pub person: RequestPerson,
    /// The address, masked like a name.
    pub email: String,
    pub role: Role,
    pub modules: Vec<String>,
    pub reason: String,
    pub state: RequestState,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub decided_at: Option<String>,
    pub decided_by: Option<Person>,
    pub comment: Option<String>,
    #[schema(format = DateTime)]
    pub collected_at: Option<String>,
    /// The key, on the first look after approval only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, pattern = "^igk_[0-9A-Za-z]{44}$")]
    pub key: Option<String>,
    /// Admins only: who asked, in full, so that they know whom a key goes
    /// to (API.md section 1: key management is the one exception to
    /// masking). Never in the requester's own look.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub requester: Option<Requester>,
}

/// A requester as admins see them in key management.
#[derive(Debug, Serialize, ToSchema)]
pub struct Requester {
    pub name: String,
    pub email: String,
}

impl KeyRequestView {
    pub fn new(r: &KeyRequest, names: &HashMap<String, String>) -> KeyRequestView {
        KeyRequestView {
            id: r.id.clone(),
            person: RequestPerson {
                key_id: r.key_id.clone(),
                display: keys::mask(&r.name),
            },
            email: keys::mask_email(&r.email),
            role: r.role,
            modules: r.modules.clone(),
            reason: r.reason.clone(),
            state: r.state,
            created_at: time(&r.created_at),
            decided_at: r.decided_at.as_ref().map(time),
            decided_by: r.decided_by.as_ref().map(|id| People(names).person(id)),
            comment: r.comment.clone(),
            collected_at: r.collected_at.as_ref().map(time),
            key: None,
            requester: None,
        }
    }

    /// The request as an admin acting on it sees it: the requester in full.
    pub fn for_admin(r: &KeyRequest, names: &HashMap<String, String>) -> KeyRequestView {
        KeyRequestView {
            requester: Some(Requester {
                name: r.name.clone(),
                email: r.email.clone(),
            }),
            ..KeyRequestView::new(r, names)
        }
    }
}

/// A recorded key request and its claim token (shown this once).
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyRequestCreated {
    pub id: String,
    /// Collects the key once approved:
    /// `GET /api/key-requests/{id}?claim_token=…`.
    pub claim_token: String,
    pub state: RequestState,
}

/// Key requests, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyRequestList {
    pub requests: Vec<KeyRequestView>,
    /// The `cursor` of the next page; null on the last.
    pub next_cursor: Option<String>,
}

/// The optional body of a gate move or a decision on a key request.
#[derive(Debug, Default, serde::Deserialize, ToSchema)]
pub struct CommentBody {
    /// Why (`reject` and `rollback` should say).
    #[schema(max_length = 2000)]
    pub comment: Option<String>,
}
