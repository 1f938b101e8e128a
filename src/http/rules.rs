//! A module's rules over the API (API.md section 14): the set in force or
//! at a version, proposals, and the decisions on them at the gate.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::Caller;
use super::extract::{Params, comment};
use super::problem::{ApiResult, Problem};
use crate::ledger::job::People;
use crate::rules::{Diff, Proposal};
use crate::service::views::{RuleProposalList, RuleProposalView, RuleSetView, TrialView};
use crate::service::{App, rules};

pub fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(show, propose))
        .routes(routes!(list))
        .routes(routes!(get))
        .routes(routes!(approve))
        .routes(routes!(reject))
        .routes(routes!(try_on))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct VersionQuery {
    /// An older version (the one in force if absent).
    #[param(minimum = 1)]
    version: Option<u32>,
}

/// The module's rule set in force, or at `version` (any key covering the
/// module).
#[utoipa::path(get, path = "/api/modules/{module}/rules", operation_id = "get_rules", tag = "rules",
    params(("module" = String, Path, description = "The module's key"), VersionQuery),
    responses(
        (status = 200, description = "The rule set", body = RuleSetView),
        (status = 403, description = "`forbidden`: the module is outside the key's scope"),
        (status = 404, description = "`unknown_module`, or `not_found`: no such version"),
        (status = 422, description = "`invalid_parameter`: a version that is not a positive number"),
    ))]
async fn show(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(module): Path<String>,
    Params(q): Params<VersionQuery>,
) -> ApiResult<Json<RuleSetView>> {
    let set = rules::show(&app, &caller.0, &module, q.version).await?;
    let names = app.names().await?;
    Ok(Json(RuleSetView::new(&set, &People(&names))))
}

/// What an admin proposes.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewRules {
    /// The whole new rule set: normalizers, checks and unique rules.
    #[schema(value_type = Vec<Object>)]
    rules: serde_json::Value,
    /// Why (at most 2000 characters).
    #[serde(default)]
    #[schema(nullable = false)]
    comment: Option<String>,
}

/// Proposes a new rule set for the module (an admin within its scope); it
/// waits at the gate for another person.
#[utoipa::path(post, path = "/api/modules/{module}/rules", operation_id = "propose_rules", tag = "rules",
    params(("module" = String, Path, description = "The module's key")),
    request_body(content = NewRules, description = "The rule set proposed and why"),
    responses(
        (status = 201, description = "The proposal, awaiting approval", body = RuleProposalView),
        (status = 400, description = "`bad_request`: the body is not such an object"),
        (status = 403, description = "`forbidden`: not an admin, or the module is outside the key's scope"),
        (status = 404, description = "`unknown_module`"),
        (status = 422, description = "`invalid_parameter`: a malformed rule, named (`rules[i]`) with what is wrong with it"),
    ))]
async fn propose(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(module): Path<String>,
    body: Bytes,
) -> ApiResult<Response> {
    let req: NewRules = serde_json::from_slice(&body).map_err(|e| {
        Problem::bad_request(format!(
            "the body must be {{\"rules\": [...], \"comment\"?}}: {e}"
        ))
    })?;
    let (p, diff) =
        rules::propose(&app, &caller.0, &module, &req.rules, req.comment.as_deref()).await?;
    let view = proposal_view(&app, &p, &diff).await?;
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// One module's proposals.
    module: Option<String>,
    /// `awaiting_approval`, `approved` or `rejected`.
    state: Option<String>,
}

/// Rule proposals of the modules the key covers, newest first (at most
/// 200).
#[utoipa::path(get, path = "/api/rule-proposals", operation_id = "list_rule_proposals", tag = "rules",
    params(ListQuery),
    responses(
        (status = 200, description = "The proposals", body = RuleProposalList),
        (status = 403, description = "`forbidden`: the module is outside the key's scope"),
        (status = 404, description = "`unknown_module`"),
        (status = 422, description = "`invalid_parameter`: an unknown state"),
    ))]
async fn list(
    State(app): State<Arc<App>>,
    caller: Caller,
    Params(q): Params<ListQuery>,
) -> ApiResult<Json<RuleProposalList>> {
    let found = rules::list(&app, &caller.0, q.module.as_deref(), q.state.as_deref()).await?;
    let names = app.names().await?;
    let people = People(&names);
    let proposals = found
        .iter()
        .map(|(p, d)| RuleProposalView::new(p, Some(d), &people))
        .collect();
    Ok(Json(RuleProposalList { proposals }))
}

/// One rule proposal, with what it changes.
#[utoipa::path(get, path = "/api/rule-proposals/{id}", operation_id = "get_rule_proposal", tag = "rules",
    params(("id" = String, Path, description = "The proposal's id (`rpr_…`)")),
    responses(
        (status = 200, description = "The proposal", body = RuleProposalView),
        (status = 404, description = "`not_found`: no such proposal within the key's scope"),
    ))]
async fn get(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<RuleProposalView>> {
    let (p, diff) = rules::get(&app, &caller.0, &id).await?;
    Ok(Json(proposal_view(&app, &p, &diff).await?))
}

/// Approves a rule proposal (an approver or admin within the module's
/// scope, not its proposer): it becomes the version in force.
#[utoipa::path(post, path = "/api/rule-proposals/{id}/approve", operation_id = "approve_rule_proposal", tag = "rules",
    params(("id" = String, Path, description = "The proposal's id (`rpr_…`)")),
    request_body(content = Option<crate::http::views::CommentBody>, description = "An optional comment"),
    responses(
        (status = 200, description = "The proposal, approved", body = RuleProposalView),
        (status = 400, description = "`bad_request`: the body is not a JSON object"),
        (status = 403, description = "`forbidden` (role) or `self_approval` (four-eyes)"),
        (status = 404, description = "`not_found`: no such proposal within the key's scope"),
        (status = 409, description = "`invalid_state`: decided already, or proposed against a version no longer in force"),
        (status = 422, description = "`invalid_parameter`: a comment that is not a string of at most 2000 characters"),
    ))]
async fn approve(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<RuleProposalView>> {
    decide(&app, &caller, &id, true, &body).await
}

/// Rejects a rule proposal (an approver or admin within the module's
/// scope, not its proposer): the rules in force stay.
#[utoipa::path(post, path = "/api/rule-proposals/{id}/reject", operation_id = "reject_rule_proposal", tag = "rules",
    params(("id" = String, Path, description = "The proposal's id (`rpr_…`)")),
    request_body(content = Option<crate::http::views::CommentBody>, description = "An optional comment"),
    responses(
        (status = 200, description = "The proposal, rejected", body = RuleProposalView),
        (status = 400, description = "`bad_request`: the body is not a JSON object"),
        (status = 403, description = "`forbidden` (role) or `self_approval` (four-eyes)"),
        (status = 404, description = "`not_found`: no such proposal within the key's scope"),
        (status = 409, description = "`invalid_state`: decided already"),
        (status = 422, description = "`invalid_parameter`: a comment that is not a string of at most 2000 characters"),
    ))]
async fn reject(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<RuleProposalView>> {
    decide(&app, &caller, &id, false, &body).await
}

/// Which job to try a proposal on.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TryOn {
    /// A job of the proposal's module whose stored file is still kept.
    #[schema(example = "job_01JD8Z3K6W0Q2T5N8XJ4R7M9C1")]
    job: String,
}

/// Validates a job's stored file under the proposed rules without changing
/// the job (an approver or admin within the module's scope): its counts
/// under the version it was validated with and under the proposal, and the
/// rows whose outcome changes.
#[utoipa::path(post, path = "/api/rule-proposals/{id}/try", operation_id = "try_rule_proposal", tag = "rules",
    params(("id" = String, Path, description = "The proposal's id (`rpr_…`)")),
    request_body(content = TryOn, description = "The job to try it on"),
    responses(
        (status = 200, description = "What the proposal would do to the job's rows", body = TrialView),
        (status = 400, description = "`bad_request`: the body is not such an object"),
        (status = 403, description = "`forbidden`: not an approver or admin, or outside the key's scope"),
        (status = 404, description = "`not_found`: no such proposal or job within the key's scope"),
        (status = 410, description = "`purged`: the job's stored file is gone"),
        (status = 422, description = "`invalid_parameter`: a job of another module, or whose file cannot be read"),
    ))]
async fn try_on(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<TrialView>> {
    let req: TryOn = serde_json::from_slice(&body).map_err(|e| {
        Problem::bad_request(format!("the body must be {{\"job\": \"job_…\"}}: {e}"))
    })?;
    let tried = rules::try_on(&app, &caller.0, &id, &req.job).await?;
    Ok(Json(TrialView::new(tried)))
}

async fn decide(
    app: &App,
    caller: &Caller,
    id: &str,
    approve: bool,
    body: &Bytes,
) -> ApiResult<Json<RuleProposalView>> {
    let comment = comment(body)?;
    let (p, diff) = rules::decide(app, &caller.0, id, approve, comment.as_deref()).await?;
    Ok(Json(proposal_view(app, &p, &diff).await?))
}

async fn proposal_view(app: &App, p: &Proposal, diff: &Diff) -> ApiResult<RuleProposalView> {
    let names = app.names().await?;
    Ok(RuleProposalView::new(p, Some(diff), &People(&names)))
}
