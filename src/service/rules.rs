//! A module's rules as people read and change them (API.md section 14):
//! the rule set in force or at a version, proposals, and decisions on them
//! through the gate with four-eyes by person. A proposal and its decision
//! are links of the ledger (`rules_proposed`, `rules_approved`,
//! `rules_rejected`), so clients see them as events and webhooks.
//!
//! Version 1 of a module is its catalog's rules (none unless the catalog
//! ships some); every approved proposal is the next version.

use std::sync::Arc;

use serde_json::json;

use super::{App, Error, Result};
use crate::catalog::Module;
use crate::ids::{JobId, ModuleKey, ProposalId};
use crate::keys::{KeyRecord, Role};
use crate::ledger::{gate, rule_replay};
use crate::pipeline::trial::{self, Trial};
use crate::rules::{self, Compiled, Diff, Proposal, ProposalState, Rule};
use crate::store::{self, Conn, ledger::Entry};

/// Proposals a list holds at most.
pub const LIST_LIMIT: i64 = 200;

/// A module's rule set at one version, with the proposal that made it
/// (none for version 1, the catalog's).
#[derive(Debug, Clone)]
pub struct RuleSetShown {
    pub module: ModuleKey,
    pub version: u32,
    pub rules: Vec<Rule>,
    pub proposal: Option<Proposal>,
}

/// Version 1 of a module: the rules its catalog entry ships.
pub fn first_version(app: &App, module: &Module) -> Vec<Rule> {
    app.catalog_rules.rules_of(module.key.as_str())
}

/// The version of `module`'s rules in force.
pub async fn version_in_force(conn: &mut Conn<'_>, module: &ModuleKey) -> Result<u32> {
    Ok(store::rule_proposals::rule_set(conn, module, None)
        .await?
        .map_or(1, |p| p.version))
}

/// `module`'s rule set at `version` (the one in force when `None`).
async fn at_version(
    app: &App,
    conn: &mut Conn<'_>,
    module: &Module,
    version: Option<u32>,
) -> Result<Option<RuleSetShown>> {
    if version == Some(1) {
        return Ok(Some(first(app, module)));
    }
    let found = store::rule_proposals::rule_set(conn, &module.key, version).await?;
    Ok(match (found, version) {
        (Some(p), _) => Some(RuleSetShown {
            module: module.key.clone(),
            version: p.version,
            rules: p.rules.clone(),
            proposal: Some(p),
        }),
        (None, None) => Some(first(app, module)),
        (None, Some(_)) => None,
    })
}

fn first(app: &App, module: &Module) -> RuleSetShown {
    RuleSetShown {
        module: module.key.clone(),
        version: 1,
        rules: first_version(app, module),
        proposal: None,
    }
}

/// The rule set of a module the key covers, in force or at `version`.
pub async fn show(
    app: &App,
    actor: &KeyRecord,
    module: &str,
    version: Option<u32>,
) -> Result<RuleSetShown> {
    let module = app.module(module)?.clone();
    super::in_scope(actor, &module.key)?;
    let mut c = app.db.acquire().await?;
    at_version(app, &mut c.conn(), &module, version)
        .await?
        .ok_or_else(|| {
            let v = version.unwrap_or_default();
            Error::not_found("rule set version", &format!("{v} of {}", module.key))
        })
}

/// The compiled rules a validation of `module` applies now, and their
/// version. A stored set that no longer compiles (the catalog dropped a
/// column it names), or whose row disagrees with its ledger events (it
/// was changed behind the gate), is an error of the job's validation.
pub async fn for_validation(app: &App, module: &Module) -> anyhow::Result<(u32, Arc<Compiled>)> {
    let mut c = app.db.acquire().await?;
    let mut conn = c.conn();
    let Some(set) = store::rule_proposals::rule_set(&mut conn, &module.key, None).await? else {
        return Ok((1, app.catalog_rules.of(module.key.as_str())));
    };
    let events = store::ledger::events_of(&mut conn, set.id.as_str()).await?;
    if let Some(why) = rule_replay::mismatch(&set, &events) {
        anyhow::bail!("the rules of {} cannot be trusted: {why}", module.key);
    }
    let compiled = rules::compile(module, &set.rules).map_err(|problems| {
        let list: Vec<String> = problems.iter().map(ToString::to_string).collect();
        anyhow::anyhow!(
            "version {} of the rules of {} no longer fits the module: {}",
            set.version,
            module.key,
            list.join("; ")
        )
    })?;
    Ok((set.version, Arc::new(compiled)))
}

/// Proposes a new rule set for a module (an admin within its scope): the
/// rules are parsed and compiled against the module now, so a malformed
/// rule is refused here, naming it, and never at validation time.
pub async fn propose(
    app: &App,
    actor: &KeyRecord,
    module: &str,
    rules: &serde_json::Value,
    comment: Option<&str>,
) -> Result<(Proposal, Diff)> {
    super::admin_only(actor)?;
    let module = app.module(module)?.clone();
    super::in_scope(actor, &module.key)?;
    let comment = super::comment(comment)?;
    let rules = rules::parse(rules).map_err(refused)?;
    rules::compile(&module, &rules).map_err(refused)?;
    let mut tx = app.db.begin().await?;
    let mut c = tx.conn();
    // Proposals of one module take turns for their version number.
    store::lock(&mut c, store::Lock::Ledger).await?;
    let base = at_version(app, &mut c, &module, None)
        .await?
        .unwrap_or_else(|| first(app, &module));
    let proposal = Proposal {
        id: ProposalId::generate(),
        module: module.key.clone(),
        version: base.version + 1,
        rules,
        comment,
        state: ProposalState::AwaitingApproval,
        proposed_by: actor.id.clone(),
        proposed_at: store::now(),
        decided_by: None,
        decided_at: None,
        decision_comment: None,
    };
    store::rule_proposals::insert(&mut c, &proposal).await?;
    let diff = rules::diff(&base.rules, &proposal.rules);
    let detail = json!({
        "module": module.key,
        "version": proposal.version,
        "rules": proposal.rules,
        "comment": proposal.comment,
    });
    let states = (None, ProposalState::AwaitingApproval);
    log(
        app,
        &mut c,
        &proposal,
        "rules_proposed",
        states,
        actor,
        detail,
    )
    .await?;
    tx.commit().await?;
    app.moves.other();
    super::seal::checkpoint_now(app).await;
    tracing::info!(proposal = %proposal.id, module = %module.key, by = %actor.id, "rules proposed");
    Ok((proposal, diff))
}

/// A proposal's refusal: every problem, the first rule's place named as
/// the parameter at fault.
fn refused(problems: Vec<rules::RuleProblem>) -> Error {
    let parameter = problems
        .first()
        .map_or("rules".to_string(), |p| format!("rules[{}]", p.index));
    let list: Vec<String> = problems.iter().map(ToString::to_string).collect();
    Error::invalid(&parameter, list.join("; "))
}

/// One proposal of a module the key covers, with what it changes from the
/// version before it.
pub async fn get(app: &App, actor: &KeyRecord, id: &str) -> Result<(Proposal, Diff)> {
    let p = find(app, actor, id).await?;
    let mut c = app.db.acquire().await?;
    let diff = diff_of(app, &mut c.conn(), &p).await?;
    Ok((p, diff))
}

/// One proposal of a module the key covers.
async fn find(app: &App, actor: &KeyRecord, id: &str) -> Result<Proposal> {
    let id = ProposalId::parse(id).ok_or_else(|| Error::not_found("rule proposal", id))?;
    let mut c = app.db.acquire().await?;
    store::rule_proposals::get(&mut c.conn(), &id)
        .await?
        .filter(|p| actor.covers(&p.module))
        .ok_or_else(|| Error::not_found("rule proposal", id.as_str()))
}

/// What `p` changes from the version it was proposed against.
async fn diff_of(app: &App, conn: &mut Conn<'_>, p: &Proposal) -> Result<Diff> {
    let module = app.module(p.module.as_str())?.clone();
    let base = at_version(app, conn, &module, Some(p.base_version())).await?;
    Ok(rules::diff(
        base.as_ref().map_or(&[][..], |b| &b.rules),
        &p.rules,
    ))
}

/// Proposals of the modules the key covers, newest first, of one module
/// or state when asked, each with what it changes.
pub async fn list(
    app: &App,
    actor: &KeyRecord,
    module: Option<&str>,
    state: Option<&str>,
) -> Result<Vec<(Proposal, Diff)>> {
    let found = proposals(app, actor, module, state).await?;
    let mut c = app.db.acquire().await?;
    let mut out = Vec::with_capacity(found.len());
    for p in found {
        let diff = diff_of(app, &mut c.conn(), &p).await?;
        out.push((p, diff));
    }
    Ok(out)
}

/// [`list`] without what each proposal changes: for lists and counts that
/// do not show it.
pub async fn proposals(
    app: &App,
    actor: &KeyRecord,
    module: Option<&str>,
    state: Option<&str>,
) -> Result<Vec<Proposal>> {
    let state = state
        .map(|s| {
            ProposalState::parse(s).ok_or_else(|| {
                Error::invalid(
                    "state",
                    format!("state must be awaiting_approval, approved or rejected, not {s:?}"),
                )
            })
        })
        .transpose()?;
    let modules: Option<Vec<ModuleKey>> = match module {
        Some(m) => {
            let m = app.module(m)?.key.clone();
            super::in_scope(actor, &m)?;
            Some(vec![m])
        }
        None => actor
            .scope()
            .map(|s| s.into_iter().map(ModuleKey::from_stored).collect()),
    };
    let mut c = app.db.acquire().await?;
    let modules = modules.as_deref();
    Ok(store::rule_proposals::list(&mut c.conn(), modules, state, LIST_LIMIT).await?)
}

/// [`Error::Forbidden`] unless the key is an approver's or an admin's, the
/// keys that decide and try proposals.
fn deciders_only(actor: &KeyRecord, what: &str) -> Result<()> {
    match actor.role {
        Role::Approver | Role::Admin => Ok(()),
        _ => Err(Error::Forbidden(format!(
            "only an approver or an admin key may {what} a rule proposal"
        ))),
    }
}

/// Approves or rejects a proposal awaiting a decision: an approver or an
/// admin within the module's scope, and not the person who proposed it
/// (four-eyes, API.md section 1). Approving makes it the version in force;
/// one proposed against a version no longer in force cannot be approved.
pub async fn decide(
    app: &App,
    actor: &KeyRecord,
    id: &str,
    approve: bool,
    comment: Option<&str>,
) -> Result<(Proposal, Diff)> {
    deciders_only(actor, "decide")?;
    let comment = super::comment(comment)?;
    let p = find(app, actor, id).await?;
    check_four_eyes(app, actor, &p).await?;
    let mut tx = app.db.begin().await?;
    let mut c = tx.conn();
    store::lock(&mut c, store::Lock::Ledger).await?;
    let module = app.module(p.module.as_str())?.clone();
    if approve {
        let in_force = version_in_force(&mut c, &module.key).await?;
        if in_force != p.base_version() {
            return Err(Error::InvalidState {
                title: "The rules changed since the proposal",
                detail: format!(
                    "{} was proposed against version {} of the rules of {}, and version \
                     {in_force} is in force now; propose the change again against it",
                    p.id,
                    p.base_version(),
                    p.module
                ),
                state: p.state.as_str().to_string(),
            });
        }
    }
    let to = match approve {
        true => ProposalState::Approved,
        false => ProposalState::Rejected,
    };
    let at = store::now();
    if !store::rule_proposals::decide(&mut c, &p.id, to, &actor.id, at, comment.as_deref()).await? {
        let now = store::rule_proposals::get(&mut c, &p.id)
            .await?
            .unwrap_or(p);
        return Err(not_awaiting(&now));
    }
    let event = match approve {
        true => "rules_approved",
        false => "rules_rejected",
    };
    let detail = json!({"module": p.module, "version": p.version, "comment": comment});
    let states = (Some(ProposalState::AwaitingApproval), to);
    log(app, &mut c, &p, event, states, actor, detail).await?;
    let decided = store::rule_proposals::get(&mut c, &p.id)
        .await?
        .ok_or_else(|| Error::not_found("rule proposal", p.id.as_str()))?;
    let diff = diff_of(app, &mut c, &decided).await?;
    tx.commit().await?;
    app.moves.other();
    super::seal::checkpoint_now(app).await;
    tracing::info!(proposal = %decided.id, by = %actor.id, decision = to.as_str(), "rule proposal decided");
    Ok((decided, diff))
}

fn not_awaiting(p: &Proposal) -> Error {
    Error::InvalidState {
        title: "The proposal is not awaiting a decision",
        detail: format!("{} is {}", p.id, p.state.as_str()),
        state: p.state.as_str().to_string(),
    }
}

/// Whether four-eyes bars the key from deciding `p`, which awaits a
/// decision (its person proposed it): what a page says instead of offering
/// the decision.
pub async fn self_barred(app: &App, actor: &KeyRecord, p: &Proposal) -> Result<bool> {
    match check_four_eyes(app, actor, p).await {
        Ok(()) => Ok(false),
        Err(Error::SelfApproval) => Ok(true),
        Err(e) => Err(e),
    }
}

/// Four-eyes by person: the proposer's person, and keys that person
/// issued after proposing, may not decide.
async fn check_four_eyes(app: &App, actor: &KeyRecord, p: &Proposal) -> Result<()> {
    if p.state != ProposalState::AwaitingApproval {
        return Err(not_awaiting(p));
    }
    let mut c = app.db.acquire().await?;
    let parties = vec![p.proposed_by.clone()];
    let rule = gate::FourEyes {
        barred: store::keys::persons_of(&mut c.conn(), &parties).await?,
        parties,
        uploaded_at: p.proposed_at,
        issuers: store::keys::issuers(&mut c.conn(), actor).await?,
        relaxed: app.settings.allow_self_approval,
    };
    if gate::barred(actor, &rule) {
        return Err(Error::SelfApproval);
    }
    Ok(())
}

/// Appends a proposal's link to the ledger, in the caller's transaction.
async fn log(
    app: &App,
    conn: &mut Conn<'_>,
    p: &Proposal,
    event: &str,
    states: (Option<ProposalState>, ProposalState),
    actor: &KeyRecord,
    detail: serde_json::Value,
) -> Result<()> {
    let entry = Entry {
        subject: p.id.as_str(),
        at: store::now(),
        event,
        from: states.0.map(ProposalState::as_str),
        to: states.1.as_str(),
        actor: Some(actor.id.as_str()),
        comment: None,
        detail: Some(detail),
        modules: vec![p.module.as_str()],
    };
    Ok(store::ledger::append(conn, &app.seal.key, entry).await?)
}

/// What trying a proposal on a job found (API.md section 14, `try`): the
/// rows' outcome under the version the job was validated with and under
/// the proposal.
#[derive(Debug, Clone)]
pub struct Tried {
    pub proposal: Proposal,
    pub job: JobId,
    /// The version the job was validated with.
    pub version: u32,
    pub trial: Trial,
}

/// Validates a job's stored file under a proposal's rules without changing
/// the job (an approver or admin within the module's scope, before
/// deciding): its counts under both sets and the rows whose outcome
/// changes.
pub async fn try_on(app: &App, actor: &KeyRecord, id: &str, job: &str) -> Result<Tried> {
    deciders_only(actor, "try")?;
    let proposal = find(app, actor, id).await?;
    let job_id = JobId::parse(job).ok_or_else(|| {
        Error::invalid("job", format!("job must be a job id (job_…), not {job:?}"))
    })?;
    let job = super::jobs::get(app, actor, &job_id).await?;
    if job.module.as_ref() != Some(&proposal.module) {
        return Err(Error::invalid(
            "job",
            format!(
                "{} is a job of {}, and the proposal is for {}",
                job.id,
                job.module.as_ref().map_or("a workbook", |m| m.as_str()),
                proposal.module
            ),
        ));
    }
    if let Some(at) = job.purged_at {
        return Err(Error::purged(&job, at, app.settings.limits.retention_secs));
    }
    let module = app.module(proposal.module.as_str())?.clone();
    let version = job.rules_version.unwrap_or(1);
    let now = {
        let mut c = app.db.acquire().await?;
        let set = at_version(app, &mut c.conn(), &module, Some(version)).await?;
        compiled(&module, set.map(|s| s.rules).unwrap_or_default())?
    };
    let proposed = compiled(&module, proposal.rules.clone())?;
    let limits = &app.settings.limits;
    let options = job.read_options(limits.cell_bytes, limits.columns, false);
    let zone = app.settings.zone;
    let trial = trial::try_rules(&app.db, &module, &job, options, zone, (now, proposed))
        .await
        .map_err(Error::internal)?
        .map_err(|e| {
            Error::invalid(
                "job",
                format!("the file of {} cannot be read: {}", job.id, e.message),
            )
        })?;
    Ok(Tried {
        proposal,
        job: job.id,
        version,
        trial,
    })
}

/// A set compiled for a trial; one the module no longer fits is an error
/// naming why.
fn compiled(module: &Module, set: Vec<Rule>) -> Result<Arc<Compiled>> {
    rules::compile(module, &set).map(Arc::new).map_err(refused)
}
