//! How a job's file headers meet its module's columns (API.md section 11):
//! `GET /api/jobs/{id}/mapping`, and the best suggestion for each missing
//! column in a `missing_columns` problem. The ranking is the pure
//! [`crate::validate::suggest`]; this gathers what it ranks from: the
//! file's head, the mapping in force, and the mappings people confirmed in
//! earlier revisions of the module. A suggestion is never applied here.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use utoipa::ToSchema;

use super::{App, Error, Result, jobs};
use crate::catalog::Module;
use crate::ids::{JobId, ModuleKey};
use crate::keys::KeyRecord;
use crate::ledger::{Job, JobState};
use crate::pipeline::validation::{self, Head};
use crate::store;
use crate::validate::suggest::{self, Confirmed, Suggestion};
use crate::validate::{Mapping, Named, header_names, mapped, normalize_header};

/// Values of each file column shown beside it, and read for suggestions.
pub const SAMPLE_ROWS: usize = 20;
const SHOWN_SAMPLES: usize = 5;

/// How one header of the file was matched.
#[derive(Debug, Serialize, ToSchema)]
pub struct HeaderMatch {
    /// As written in the file.
    pub header: String,
    /// 1-based, as a spreadsheet counts columns.
    pub position: usize,
    /// The module column it fills, or null.
    pub column: Option<String>,
    /// `exact` (the column's name), `alias`, `saved`, `revision` (the
    /// revision's mapping, null included), or `none`.
    pub how: &'static str,
    /// For a header that fills no column: ranked, best first.
    pub suggestions: Vec<Suggestion>,
    /// The column's first values in the file.
    pub samples: Vec<String>,
}

/// The answer of `GET /api/jobs/{id}/mapping`.
#[derive(Debug, Serialize, ToSchema)]
pub struct MappingView {
    pub headers: Vec<HeaderMatch>,
    /// Required columns no header fills.
    pub missing: Vec<String>,
    /// Headers that fill no column (and were not left out on purpose).
    pub unmatched: Vec<String>,
}

/// The head of a job's file with `rows` sample rows.
pub async fn head(app: &App, job: &Job, rows: usize) -> Result<Head> {
    if let Some(at) = job.purged_at {
        return Err(Error::purged(job, at, app.settings.limits.retention_secs));
    }
    let limits = &app.settings.limits;
    validation::read_head(&app.db, job, limits.cell_bytes, limits.columns, rows)
        .await
        .map_err(Error::internal)?
        // A file that never had a readable header (`invalid` as unreadable,
        // in another encoding, too wide, …) has nothing to map.
        .map_err(|e| Error::InvalidState {
            title: "The file has no header to map",
            detail: format!(
                "{} cannot be mapped: its file could not be read ({}); upload a corrected file",
                job.id, e.message
            ),
            state: job.state.as_str().to_string(),
        })
}

/// How the job's headers meet its module's columns, with suggestions.
pub async fn mapping(app: &App, actor: &KeyRecord, job_id: &JobId) -> Result<MappingView> {
    let job = jobs::get(app, actor, job_id).await?;
    let module = super::module_of_job(app, &job, "a mapping")?;
    let head = head(app, &job, SAMPLE_ROWS).await?;
    let confirmed = confirmed(app, module).await?;
    let ranked = suggest::suggest(module, &head.header, &head.samples, &confirmed);
    let in_force = InForce::of(&job);
    let names = header_names(module);
    let mut filled = vec![false; module.columns.len()];
    let mut headers = Vec::with_capacity(head.header.len());
    for (i, (header, suggestions)) in head.header.iter().zip(ranked).enumerate() {
        let (column, how) = matched(module, &names, &in_force, header);
        let column = column.filter(|&c| !std::mem::replace(&mut filled[c], true));
        let left_out = how == in_force.how;
        headers.push(HeaderMatch {
            header: header.clone(),
            position: i + 1,
            column: column.map(|c| module.columns[c].name.clone()),
            how: if column.is_none() && !left_out {
                "none"
            } else {
                how
            },
            suggestions: if column.is_some() || left_out {
                vec![]
            } else {
                (suggestions.into_iter())
                    .filter(|s| module.column_index(&s.column).is_some_and(|c| !filled[c]))
                    .collect()
            },
            samples: head
                .samples
                .get(i)
                .map(|s| s.iter().take(SHOWN_SAMPLES).cloned().collect())
                .unwrap_or_default(),
        });
    }
    let missing = (module.columns.iter().zip(&filled))
        .filter(|(c, f)| c.required && !**f)
        .map(|(c, _)| c.name.clone())
        .collect();
    let unmatched = (headers.iter())
        .filter(|h| h.how == "none" && !h.header.trim().is_empty())
        .map(|h| h.header.clone())
        .collect();
    Ok(MappingView {
        headers,
        missing,
        unmatched,
    })
}

/// The mapping a job's file is read with, and how the mapping view names
/// a header it maps: `revision`, or `saved` for a saved mapping an upload
/// applied.
struct InForce {
    mapping: Mapping,
    how: &'static str,
}

impl InForce {
    fn of(job: &Job) -> InForce {
        InForce {
            mapping: job.mapping_in_force(),
            how: if job.revision.is_none() && job.mapping_applied.is_some() {
                "saved"
            } else {
                "revision"
            },
        }
    }
}

/// The column a header fills and how: the mapping in force first, then
/// the module's names and aliases (`names`, from [`header_names`]).
fn matched(
    module: &Module,
    names: &HashMap<String, (usize, Named)>,
    in_force: &InForce,
    header: &str,
) -> (Option<usize>, &'static str) {
    if let Some(target) = mapped(&in_force.mapping, header) {
        return (
            target.as_deref().and_then(|c| module.column_index(c)),
            in_force.how,
        );
    }
    match names.get(&normalize_header(header)) {
        Some(&(i, Named::Exact)) => (Some(i), "exact"),
        Some(&(i, Named::Alias)) => (Some(i), "alias"),
        None => (None, "none"),
    }
}

/// Mappings people confirmed in revisions of this module (the latest
/// thousand revisions): how often each header went to each column.
async fn confirmed(app: &App, module: &Module) -> Result<Vec<Confirmed>> {
    let mut c = app.db.acquire().await?;
    let mappings = store::jobs::revision_mappings(&mut c.conn(), &module.key, 1000).await?;
    let mut times: BTreeMap<(String, String), u32> = BTreeMap::new();
    for mapping in mappings {
        for (header, column) in mapping {
            if let Some(column) = column {
                *times.entry((header, column)).or_default() += 1;
            }
        }
    }
    Ok(times
        .into_iter()
        .map(|((header, column), times)| Confirmed {
            header,
            column,
            times,
        })
        .collect())
}

/// The best header for each missing required column of a job that ended
/// `invalid` with `missing_columns`, as its problem carries them; empty
/// when the file's head cannot be read or nothing fits.
pub async fn for_missing(
    app: &App,
    module: &Module,
    job: &Job,
) -> Vec<(String, String, Suggestion)> {
    if job.state != JobState::Validating && job.state != JobState::Invalid {
        return vec![];
    }
    let Ok(head) = head(app, job, SAMPLE_ROWS).await else {
        return vec![];
    };
    let in_force = InForce::of(job);
    let names = header_names(module);
    let mut taken = Vec::new();
    let mut filled = vec![false; module.columns.len()];
    for (i, h) in head.header.iter().enumerate() {
        let (column, how) = matched(module, &names, &in_force, h);
        if let Some(c) = column {
            filled[c] = true;
        }
        if column.is_some() || how == in_force.how {
            taken.push(i);
        }
    }
    let missing: Vec<&str> = (module.columns.iter().zip(&filled))
        .filter(|(c, f)| c.required && !**f)
        .map(|(c, _)| c.name.as_str())
        .collect();
    let confirmed = confirmed(app, module).await.unwrap_or_default();
    suggest::best_for(
        module,
        &head.header,
        &head.samples,
        &confirmed,
        &missing,
        &taken,
    )
}

/// A mapping saved for a module (API.md section 11), as clients see it.
#[derive(Debug, Serialize, ToSchema)]
pub struct SavedView {
    #[schema(example = "map_01JD8Z3K6W0Q2T5N8XJ4R7M9C1")]
    pub id: String,
    #[schema(value_type = String)]
    pub module: ModuleKey,
    /// The file's headers it is saved under, as written.
    pub headers: Vec<String>,
    /// File header → module column (null: left out).
    #[schema(value_type = Object)]
    pub mapping: Mapping,
    pub created_by: crate::keys::Person,
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// The mappings saved for a module, newest first.
pub async fn saved(app: &App, actor: &KeyRecord, module: &str) -> Result<Vec<SavedView>> {
    let module = super::uploads::target(app, actor, module)?;
    let mut c = app.db.acquire().await?;
    let list = store::mappings::list(&mut c.conn(), &module.key).await?;
    let names = app.names().await?;
    let people = crate::ledger::job::People(&names);
    Ok(list
        .into_iter()
        .map(|s| SavedView {
            created_by: people.person(&s.created_by),
            created_at: crate::ledger::job::time(&s.created_at),
            id: s.id,
            module: s.module,
            headers: s.headers,
            mapping: s.mapping,
        })
        .collect())
}

/// Forgets a saved mapping (admins, within their scope).
pub async fn forget(app: &App, actor: &KeyRecord, module: &str, id: &str) -> Result<()> {
    super::admin_only(actor)?;
    let module = super::uploads::target(app, actor, module)?;
    let mut c = app.db.acquire().await?;
    if store::mappings::delete(&mut c.conn(), &module.key, id).await? {
        tracing::info!(module = %module.key, mapping = %id, "saved mapping deleted");
        Ok(())
    } else {
        Err(Error::not_found("mapping", id))
    }
}
