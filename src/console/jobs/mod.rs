//! The job list and the job page: counts, warnings, the problem, the preview
//! (paged in the database), the timeline, and the gate moves the signed-in
//! key may make right now — decided by [`gate::authorize`], the same rule
//! the API applies, and carried out by [`service::gate::make_move`].
//!
//! - [`list`]: the job list, filtered and paged;
//! - [`detail`]: one job's page, and a gate move made from it;
//! - [`panels`]: the page's parts (counts, problem, warnings, gate,
//!   revision, timeline);
//! - [`moves`]: the gate moves offered, with what each explains;
//! - [`preview`]: the preview table, paged;
//! - [`live`]: what the script reads to follow jobs as they move.

mod detail;
mod list;
mod live;
mod moves;
mod panels;
mod preview;

pub use preview::{PAGE, plain};

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};

use crate::console::layout::Ctx;
use crate::ids::JobId;
use crate::service::App;
use detail::{act, detail};
use list::list;
use live::{event_stream, states, status};

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/jobs", get(list))
        .route("/jobs/{id}", get(detail))
        .route("/jobs/{id}/{action}", post(act))
        .route("/console/jobs/states", get(states))
        .route("/console/jobs/{id}/status", get(status))
        .route("/console/events/stream", get(event_stream))
}

/// A form value, with the empty string meaning "not given".
pub(super) fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// The end of a job id, enough to tell jobs apart at a glance.
pub(super) fn short_id(id: &JobId) -> &str {
    let id = id.as_str();
    let start = id.len().saturating_sub(10);
    id.get(start..).unwrap_or(id)
}

/// A time in a sentence, the reader's way.
pub(super) fn moment(ctx: &Ctx, t: &chrono::DateTime<chrono::Utc>) -> String {
    crate::console::i18n::moment_in(crate::console::i18n::current(), t, ctx.zone)
}
