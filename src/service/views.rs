//! The views of domain values that more than one front door shows: the
//! job as clients see it (API.md section 4), in answers of the API and in
//! the events of the feed, the stream and webhooks (section 13). People
//! are masked. The OpenAPI document describes them from these types.

use serde::Serialize;
use utoipa::ToSchema;

use super::rules::{RuleSetShown, Tried};
use crate::ids::{ExportId, JobId, KeyId, ModuleKey, ProposalId};
use crate::ingest::Format;
use crate::keys::{KeyRecord, KeyRequest, Person, RequestState, Role};
use crate::ledger::export::{Export, ExportFormat};
use crate::ledger::job::{People, time};
use crate::ledger::{
    Counts, DecisionKind, GateAction, Job, JobProblem, JobState, Mode, OnError, Warning,
};
pub use crate::pipeline::trial::{TrialCounts, TrialRow};
use crate::rules::{Diff, Proposal, ProposalState, Rule};

/// A job (API.md section 4).
#[derive(Debug, Serialize, ToSchema, Clone)]
#[schema(as = Job)]
pub struct JobView {
    #[schema(value_type = String, example = "job_01JD8Z3K6W0Q2T5N8XJ4R7M9C1")]
    pub id: JobId,
    /// The module's key; null for a workbook job (API.md section 16),
    /// whose modules are its `parts`'.
    #[schema(value_type = Option<String>)]
    pub module: Option<ModuleKey>,
    /// The module's table; null for a workbook job.
    pub table: Option<String>,
    /// A workbook job's parts, in reference order (a referenced module
    /// before the modules that refer to it); absent on other jobs. The
    /// job's `counts` are their sum.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PartView>,
    pub state: JobState,
    pub mode: Mode,
    pub on_error: OnError,
    /// Made in simulation: commit and rollback touch no module table.
    pub simulated: bool,
    pub file: FileView,
    pub submitter: Person,
    pub counts: Counts,
    /// File-level remarks that do not stop the job (columns not in the
    /// module, …).
    pub warnings: Vec<Warning>,
    /// Why the job is `invalid` or `failed`, or why a rollback was refused.
    pub problem: Option<JobProblem>,
    /// The latest request at the Human-Gate.
    pub gate: Option<GateView>,
    /// Decisions taken at the gate, oldest first.
    pub decisions: Vec<DecisionView>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// When the job's staged rows and stored file were purged (API.md
    /// section 10): its preview is gone (`410`); null until then.
    #[schema(format = DateTime)]
    pub purged_at: Option<String>,
    /// The job this one revises (API.md section 11); absent on uploads.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, nullable = false)]
    pub revision_of: Option<JobId>,
    /// What this revision changes, inherited changes included.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub revision: Option<RevisionView>,
    /// The revision that took this job's place.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, nullable = false)]
    pub revised_as: Option<JobId>,
    /// The saved mapping this upload was read with (`?mapping=map_…`, or
    /// the one saved for its set of headers), as it was applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub mapping_applied: Option<AppliedMappingView>,
    /// The version of its module's rules the job was validated with
    /// (API.md section 14); absent before its validation began.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub rules_version: Option<u32>,
    pub links: JobLinks,
}

/// One module's rows in a workbook job (API.md section 16).
#[derive(Debug, Serialize, ToSchema, Clone)]
pub struct PartView {
    /// The part's module.
    #[schema(value_type = String)]
    pub module: ModuleKey,
    /// The module's table.
    pub table: String,
    /// The sheet (or JSON member) its rows were read from.
    pub sheet: String,
    pub mode: Mode,
    pub counts: Counts,
    /// The version of its module's rules the part was validated with
    /// (API.md section 14); absent before its validation began.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub rules_version: Option<u32>,
}

/// A saved mapping as an upload applied it.
#[derive(Debug, Serialize, ToSchema, Clone)]
pub struct AppliedMappingView {
    /// The saved mapping (`map_…`; it may have been replaced or deleted since).
    pub id: String,
    /// File header → module column (null: the column is left out).
    #[schema(value_type = Object)]
    pub mapping: std::collections::BTreeMap<String, Option<String>>,
}

/// A revision as clients see it: the whole mapping in force, how many
/// cells it fixes and rows it leaves out, and who made it.
#[derive(Debug, Serialize, ToSchema, Clone)]
pub struct RevisionView {
    /// 1 for the first revision of an upload.
    pub number: u32,
    /// File header → module column (null: the column is left out).
    #[schema(value_type = Object)]
    pub mapping: std::collections::BTreeMap<String, Option<String>>,
    pub fixes: usize,
    pub excluded: usize,
    pub by: Person,
    pub comment: Option<String>,
}

impl JobView {
    /// The job as the API shows it: people masked.
    pub fn new(job: &Job, people: &People) -> JobView {
        let base = format!("/api/jobs/{}", job.id);
        JobView {
            id: job.id.clone(),
            module: job.module.clone(),
            table: job.module.as_ref().map(|_| job.table.clone()),
            parts: job
                .parts
                .iter()
                .map(|p| PartView {
                    module: p.module.clone(),
                    table: p.table.clone(),
                    sheet: p.sheet.clone(),
                    mode: p.mode,
                    counts: p.counts.clone(),
                    rules_version: p.rules_version,
                })
                .collect(),
            state: job.state,
            mode: job.mode,
            on_error: job.on_error,
            simulated: job.simulated,
            file: FileView {
                name: job.file.name.clone(),
                format: job.file.format,
                bytes: job.file.bytes,
                sha256: job.file.sha256.clone(),
            },
            submitter: people.person(&job.submitter),
            counts: job.counts.clone(),
            warnings: job.warnings.clone(),
            problem: job.problem.clone(),
            gate: job.gate.as_ref().map(|g| GateView {
                action: g.action,
                requested_at: time(&g.requested_at),
                requested_by: people.person(&g.requested_by),
            }),
            decisions: job
                .decisions
                .iter()
                .map(|d| DecisionView {
                    action: d.action,
                    decision: d.decision,
                    by: d.by.as_ref().map(|b| people.person(b)),
                    at: time(&d.at),
                    comment: d.comment.clone(),
                    issued_by: d.issued_by.as_ref().map(|b| people.person(b)),
                })
                .collect(),
            created_at: time(&job.created_at),
            updated_at: time(&job.updated_at),
            purged_at: job.purged_at.as_ref().map(time),
            revision_of: job.revision_of.clone(),
            revision: job.revision.as_ref().map(|r| RevisionView {
                number: r.number,
                mapping: r.mapping.clone(),
                fixes: r.fixes.len(),
                excluded: r.exclude.len(),
                by: people.person(&r.by),
                comment: r.comment.clone(),
            }),
            revised_as: job.revised_as.clone(),
            mapping_applied: job.mapping_applied.as_ref().map(|m| AppliedMappingView {
                id: m.id.clone(),
                mapping: m.mapping.clone(),
            }),
            rules_version: job.rules_version,
            links: JobLinks {
                preview: format!("{base}/preview"),
                errors: format!("{base}/errors"),
                events: format!("{base}/events"),
                this: base,
            },
        }
    }
}

/// The uploaded file.
#[derive(Debug, Serialize, ToSchema, Clone)]
pub struct FileView {
    /// The client's file name (last path segment), if it sent one.
    pub name: Option<String>,
    /// The format that was read.
    pub format: Format,
    pub bytes: i64,
    /// SHA-256 of the bytes, hex.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub sha256: String,
}

/// A request at the Human-Gate.
#[derive(Debug, Serialize, ToSchema, Clone)]
pub struct GateView {
    pub action: GateAction,
    #[schema(format = DateTime)]
    pub requested_at: String,
    pub requested_by: Person,
}

/// A decision taken at the gate.
#[derive(Debug, Serialize, ToSchema, Clone)]
pub struct DecisionView {
    pub action: GateAction,
    pub decision: DecisionKind,
    /// Null when the service decided (`expired`).
    pub by: Option<Person>,
    #[schema(format = DateTime)]
    pub at: String,
    pub comment: Option<String>,
    /// Who issued the deciding key (API.md section 1); null for keys made
    /// at first start or on the command line, and for the service.
    pub issued_by: Option<Person>,
}

/// Where the job's parts are.
#[derive(Debug, Serialize, ToSchema, Clone)]
pub struct JobLinks {
    #[serde(rename = "self")]
    #[schema(rename = "self")]
    pub this: String,
    pub preview: String,
    pub errors: String,
    pub events: String,
}

/// The person who asked for a key: masked, with the key made for them.
#[derive(Debug, Serialize, ToSchema, Clone)]
pub struct RequestPerson {
    /// The key made at collection; null before.
    #[schema(value_type = Option<String>)]
    pub key_id: Option<KeyId>,
    pub display: String,
}

/// An event for clients (API.md section 13): a link of the ledger, named.
#[derive(Debug, Serialize, ToSchema, Clone)]
pub struct FeedEvent {
    /// `evt_` and the link's place in the ledger's one chain: ids grow
    /// in the order events happened.
    #[schema(example = "evt_42", pattern = "^evt_[0-9]+$")]
    pub id: String,
    /// What happened (`job.committed`, `key.created`, …).
    #[serde(rename = "type")]
    #[schema(rename = "type", example = "job.committed")]
    pub ty: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    pub data: EventData,
}

/// What an event is about, as it is when the event is read: a job, a key
/// or a key request (one of the three).
#[derive(Debug, Serialize, ToSchema, Clone, Default)]
pub struct EventData {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub job: Option<JobView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub key: Option<KeyBrief>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub key_request: Option<KeyRequestBrief>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub rule_proposal: Option<RuleProposalView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub export: Option<ExportView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub sign_in: Option<SignInRefusal>,
}

/// A refused sign-in with the identity provider (API.md section 17), in
/// its `person.sign_in_refused` event: why, and no one's name.
#[derive(Debug, Serialize, ToSchema, Clone)]
pub struct SignInRefusal {
    /// `state`, `token`, `provider`, `no_person`, `no_group` or `revoked`.
    pub reason: String,
}

/// An export of a module's rows (API.md section 15), in its
/// `module.exported` event: who, which module, which filters, how many
/// rows; the person masked.
#[derive(Debug, Serialize, ToSchema, Clone)]
#[schema(as = Export)]
pub struct ExportView {
    #[schema(value_type = String, example = "exp_01JD8Z3K6W0Q2T5N8XJ4R7M9C1")]
    pub id: ExportId,
    #[schema(value_type = String)]
    pub module: ModuleKey,
    pub format: ExportFormat,
    /// The filters as asked, each only when given: `{"where": {column:
    /// value}, "job": "job_…", "limit": n}`.
    #[schema(value_type = Object)]
    pub filters: serde_json::Value,
    /// Rows written to the body.
    pub rows: u64,
    /// Whether the body was sent to its end; false when the client left or
    /// reading the table failed after `rows` rows.
    pub complete: bool,
    pub by: Person,
    #[schema(format = DateTime)]
    pub started_at: String,
    #[schema(format = DateTime)]
    pub finished_at: String,
}

impl ExportView {
    pub fn new(e: &Export, people: &People) -> ExportView {
        ExportView {
            id: e.id.clone(),
            module: e.module.clone(),
            format: e.format,
            filters: e.filters.clone(),
            rows: e.rows,
            complete: e.complete,
            by: people.person(&e.by),
            started_at: time(&e.started_at),
            finished_at: time(&e.finished_at),
        }
    }
}

/// A key in an event: never the secret; the holder masked.
#[derive(Debug, Serialize, ToSchema, Clone)]
pub struct KeyBrief {
    #[schema(value_type = String, example = "key_7Qf2")]
    pub id: KeyId,
    pub role: Role,
    /// Module keys, or `["*"]` for all.
    pub modules: Vec<String>,
    pub person: Person,
}

/// A key request in an event: the requester masked.
#[derive(Debug, Serialize, ToSchema, Clone)]
pub struct KeyRequestBrief {
    #[schema(example = "kr_01JD8Z3K6W0Q2T5N8XJ4R7M9C1")]
    pub id: String,
    pub role: Role,
    pub modules: Vec<String>,
    pub state: RequestState,
    pub person: RequestPerson,
}

impl KeyBrief {
    pub fn new(k: &KeyRecord) -> KeyBrief {
        KeyBrief {
            id: k.id.clone(),
            role: k.role,
            modules: k.modules.clone(),
            person: k.person(),
        }
    }
}

impl KeyRequestBrief {
    pub fn new(r: &KeyRequest) -> KeyRequestBrief {
        KeyRequestBrief {
            id: r.id.clone(),
            role: r.role,
            modules: r.modules.clone(),
            state: r.state,
            person: RequestPerson {
                key_id: r.key_id.clone(),
                display: crate::keys::mask(&r.name),
            },
        }
    }
}

/// A module's rule set at one version (API.md section 14), people masked.
#[derive(Debug, Serialize, ToSchema, Clone)]
#[schema(as = RuleSet)]
pub struct RuleSetView {
    #[schema(value_type = String)]
    pub module: ModuleKey,
    #[schema(minimum = 1, example = 3)]
    pub version: u32,
    /// Normalizers, checks and unique rules, each with its `id`.
    #[schema(value_type = Vec<Object>)]
    pub rules: Vec<Rule>,
    /// Who proposed and who approved it; null for version 1, the catalog's.
    pub proposed_by: Option<Person>,
    pub approved_by: Option<Person>,
    #[schema(format = DateTime)]
    pub approved_at: Option<String>,
    /// The proposal that made it (`rpr_…`); null for version 1.
    pub proposal: Option<String>,
}

impl RuleSetView {
    pub fn new(set: &RuleSetShown, people: &People) -> RuleSetView {
        let p = set.proposal.as_ref();
        RuleSetView {
            module: set.module.clone(),
            version: set.version,
            rules: set.rules.clone(),
            proposed_by: p.map(|p| people.person(&p.proposed_by)),
            approved_by: p
                .and_then(|p| p.decided_by.as_ref())
                .map(|k| people.person(k)),
            approved_at: p.and_then(|p| p.decided_at.as_ref()).map(time),
            proposal: p.map(|p| p.id.to_string()),
        }
    }
}

/// A proposed change of a module's rules and what became of it (API.md
/// section 14), people masked.
#[derive(Debug, Serialize, ToSchema, Clone)]
#[schema(as = RuleProposal)]
pub struct RuleProposalView {
    #[schema(value_type = String, example = "rpr_01JD8Z3K6W0Q2T5N8XJ4R7M9C1")]
    pub id: ProposalId,
    #[schema(value_type = String)]
    pub module: ModuleKey,
    /// The version the set becomes once approved.
    #[schema(minimum = 2, example = 4)]
    pub version: u32,
    pub state: ProposalState,
    #[schema(value_type = Vec<Object>)]
    pub rules: Vec<Rule>,
    /// What it changes from the version it was proposed against, rules
    /// matched by id: `{"added": [...], "removed": [...], "changed":
    /// [{"id", "was", "now"}]}`. Not in events: the proposal's own answer
    /// has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Object, nullable = false)]
    pub diff: Option<Diff>,
    pub comment: Option<String>,
    pub proposed_by: Person,
    #[schema(format = DateTime)]
    pub proposed_at: String,
    pub decided_by: Option<Person>,
    #[schema(format = DateTime)]
    pub decided_at: Option<String>,
    pub decision_comment: Option<String>,
}

impl RuleProposalView {
    pub fn new(p: &Proposal, diff: Option<&Diff>, people: &People) -> RuleProposalView {
        RuleProposalView {
            id: p.id.clone(),
            module: p.module.clone(),
            version: p.version,
            state: p.state,
            rules: p.rules.clone(),
            diff: diff.cloned(),
            comment: p.comment.clone(),
            proposed_by: people.person(&p.proposed_by),
            proposed_at: time(&p.proposed_at),
            decided_by: p.decided_by.as_ref().map(|k| people.person(k)),
            decided_at: p.decided_at.as_ref().map(time),
            decision_comment: p.decision_comment.clone(),
        }
    }
}

/// Rule proposals, newest first.
#[derive(Debug, Serialize, ToSchema, Clone)]
#[schema(as = RuleProposalList)]
pub struct RuleProposalList {
    pub proposals: Vec<RuleProposalView>,
}

/// The counts of a file under one version of the rules.
#[derive(Debug, Serialize, ToSchema, Clone)]
pub struct TrialSide {
    #[schema(minimum = 1)]
    pub version: u32,
    pub counts: TrialCounts,
}

/// What a rule proposal would do to a job's file (API.md section 14,
/// `try`): its rows under the version the job was validated with (`now`)
/// and under the proposal, and the rows whose outcome changes (the first
/// 100 of each kind). The table's own checks (a key already there or
/// missing, references) are the job's validation's, not compared here.
#[derive(Debug, Serialize, ToSchema, Clone)]
#[schema(as = RuleTrial)]
pub struct TrialView {
    #[schema(value_type = String)]
    pub proposal: ProposalId,
    #[schema(value_type = String)]
    pub job: JobId,
    pub now: TrialSide,
    pub proposed: TrialSide,
    pub newly_failing: Vec<TrialRow>,
    pub newly_passing: Vec<TrialRow>,
    pub newly_normalized: Vec<TrialRow>,
}

impl TrialView {
    pub fn new(t: Tried) -> TrialView {
        TrialView {
            now: TrialSide {
                version: t.version,
                counts: t.trial.now,
            },
            proposed: TrialSide {
                version: t.proposal.version,
                counts: t.trial.proposed,
            },
            proposal: t.proposal.id,
            job: t.job,
            newly_failing: t.trial.newly_failing,
            newly_passing: t.trial.newly_passing,
            newly_normalized: t.trial.newly_normalized,
        }
    }
}
