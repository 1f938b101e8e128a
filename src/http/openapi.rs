//! The OpenAPI 3.1 document's own part and the rules that complete it.
//! Every operation is described by its handler's `#[utoipa::path]` and
//! gathered by [`super::api`]; what operations share is added here once,
//! by rule: the `401` and `429` answers and the rate-limit fields of every
//! keyed operation, the `400` for a URL with `%00`, the problem body of
//! every 4xx, `ETag` and `Location` on every job, and the links from an
//! answer's id to the operations that take it.

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi as Document, Ref, RefOr};
use utoipa::{Modify, OpenApi};

use super::problem::{CONTENT_TYPE as PROBLEM, ProblemDoc};
use crate::catalog::Catalog;

/// The name of the security scheme: the `X-API-Key` header.
const SCHEME: &str = "api_key";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "importgate",
        description = "Bulk data import with a Human-Gate: an uploaded file becomes a \
            validation job whose preview a second person approves before anything is \
            written. Every error is an RFC 9457 problem (`application/problem+json`) \
            with a `code` to switch on. The contract is docs/API.md.",
    ),
    security(("api_key" = [])),
    components(schemas(
        ProblemDoc,
        crate::ledger::ProblemCode,
        crate::validate::RowAction,
        crate::keys::RequestState,
        crate::rules::ProposalState,
        crate::service::modules::TemplateFormat,
        crate::ledger::export::ExportFormat,
        crate::ingest::decode::Label,
    )),
    tags(
        (name = "uploads", description = "Files become validation jobs"),
        (name = "jobs", description = "Jobs, their preview, errors and ledger"),
        (name = "gate", description = "The Human-Gate: approve, reject, cancel, roll back"),
        (name = "modules", description = "The catalog and its templates"),
        (name = "export", description = "A module's rows as a file to edit and import again"),
        (name = "rules", description = "A module's rules, changed through the gate"),
        (name = "keys", description = "API keys (admins)"),
        (name = "key requests", description = "Asking for a key without one"),
        (name = "webhooks", description = "Signed deliveries of events to other systems (admins)"),
        (name = "events", description = "What happened, as a feed and a live stream"),
        (name = "meta", description = "This document"),
    ),
    modifiers(&KeyScheme),
)]
struct ApiDoc;

/// The `X-API-Key` header as the security scheme.
struct KeyScheme;

impl Modify for KeyScheme {
    fn modify(&self, doc: &mut Document) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            SCHEME,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-API-Key",
                "An API key (`igk_…`); its role and module scope decide what it may do",
            ))),
        );
    }
}

/// The document's own part: its description, security scheme, tags and
/// the schemas no operation names.
pub fn base() -> Document {
    ApiDoc::openapi()
}

/// The document of every route, completed with what every keyed
/// operation shares.
pub fn complete(mut doc: Document) -> Document {
    for item in doc.paths.paths.values_mut() {
        for op in [
            &mut item.get,
            &mut item.post,
            &mut item.delete,
            &mut item.put,
            &mut item.patch,
        ]
        .into_iter()
        .flatten()
        {
            if keyed(op) {
                add_key_answers(op);
            }
            add_nul_answer(op);
            problems_for_errors(op);
            job_headers(op);
            add_links(op);
            headers_not_null(op);
            sort_answers(op);
        }
    }
    doc
}

/// Whether an operation needs a key: all do, unless they say `security(())`.
fn keyed(op: &Operation) -> bool {
    !op.security
        .as_ref()
        .is_some_and(|s| s.iter().any(|r| r == &Default::default()))
}

fn text_header(description: &str) -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(ObjectBuilder::new().schema_type(Type::String))
        .description(Some(description))
        .build()
}

/// A problem answer (its body is added by [`problems_for_errors`]).
fn problem(description: &str) -> utoipa::openapi::response::Response {
    ResponseBuilder::new().description(description).build()
}

/// An optional header is absent, never null: its schema is a string.
fn headers_not_null(op: &mut Operation) {
    for p in op.parameters.iter_mut().flatten() {
        if p.parameter_in == ParameterIn::Header {
            p.schema = Some(ObjectBuilder::new().schema_type(Type::String).into());
        }
    }
}

/// Answers to a key: `RateLimit` and `RateLimit-Policy` on every one (while
/// the limit is on), `401` without a live key, `429` over the limit.
fn add_key_answers(op: &mut Operation) {
    for response in op.responses.responses.values_mut() {
        if let RefOr::T(r) = response {
            add_rate_headers(r);
        }
    }
    op.responses.responses.insert(
        "401".into(),
        RefOr::T(problem(
            "`unauthorized`: no `X-API-Key`, or an unknown, revoked or expired one",
        )),
    );
    let mut limited = problem("`rate_limited`: over the key's limit for this minute");
    add_rate_headers(&mut limited);
    limited.headers.insert(
        "Retry-After".into(),
        text_header("Seconds until the window ends"),
    );
    op.responses
        .responses
        .insert("429".into(), RefOr::T(limited));
}

/// Every `/api` URL holding `%00` is `400` ([`super::problem::no_nul_in_url`]).
fn add_nul_answer(op: &mut Operation) {
    const NUL: &str = "`bad_request`: the URL holds a NUL character (`%00`)";
    match op.responses.responses.get_mut("400") {
        Some(RefOr::T(r)) => r.description = format!("{}; or {NUL}", r.description),
        _ => {
            op.responses
                .responses
                .insert("400".into(), RefOr::T(problem(NUL)));
        }
    }
}

/// Every 4xx answer is a problem: the handlers' annotations give the
/// status and which codes it carries; the body is added here.
fn problems_for_errors(op: &mut Operation) {
    for (status, response) in op.responses.responses.iter_mut() {
        if let RefOr::T(r) = response
            && status.starts_with('4')
            && r.content.is_empty()
        {
            r.content.insert(
                PROBLEM.to_string(),
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("Problem")))
                    .build(),
            );
        }
    }
}

/// Every answer that carries a job carries its `ETag` and `Location`
/// ([`super::answer::job_response`]).
fn job_headers(op: &mut Operation) {
    let job = RefOr::Ref(Ref::from_schema_name("Job"));
    for response in op.responses.responses.values_mut() {
        if let RefOr::T(r) = response
            && r.content
                .get("application/json")
                .is_some_and(|c| c.schema.as_ref() == Some(&job))
        {
            r.headers.insert(
                "ETag".into(),
                text_header("The job's version, `\"{id}-{version}\"`, for `If-Match`"),
            );
            r.headers
                .insert("Location".into(), text_header("`/api/jobs/{id}`"));
        }
    }
}

/// Where the ids an answer carries lead: OpenAPI links, which clients
/// (and schemathesis's stateful phase) follow.
struct Links {
    /// The answer's schema.
    from: &'static str,
    /// The operations it leads to.
    to: &'static [&'static str],
    /// Their parameters, taken from the answer.
    parameters: &'static [(&'static str, &'static str)],
}

const ID: (&str, &str) = ("id", "$response.body#/id");

const LINKS: &[Links] = &[
    Links {
        from: "Job",
        to: &[
            "get_job",
            "get_preview",
            "get_errors",
            "get_events",
            "approve_job",
            "reject_job",
            "cancel_job",
            "rollback_job",
        ],
        parameters: &[ID],
    },
    Links {
        from: "NewKeyView",
        to: &["revoke_key"],
        parameters: &[ID],
    },
    Links {
        from: "KeyRequestCreated",
        to: &["get_key_request"],
        parameters: &[ID, ("claim_token", "$response.body#/claim_token")],
    },
    Links {
        from: "KeyRequestCreated",
        to: &["approve_key_request", "deny_key_request"],
        parameters: &[ID],
    },
];

fn add_links(op: &mut Operation) {
    for response in op.responses.responses.values_mut() {
        let RefOr::T(r) = response else { continue };
        let Some(RefOr::Ref(schema)) = r
            .content
            .get("application/json")
            .and_then(|c| c.schema.clone())
        else {
            continue;
        };
        for links in LINKS {
            if schema.ref_location != format!("#/components/schemas/{}", links.from) {
                continue;
            }
            for target in links.to {
                let mut link = LinkBuilder::new().operation_id(*target);
                for (parameter, value) in links.parameters {
                    link = link.parameter(*parameter, *value);
                }
                r.links.insert(target.to_string(), RefOr::T(link.build()));
            }
        }
    }
}

/// Answers in the order of their status.
fn sort_answers(op: &mut Operation) {
    let mut codes: Vec<_> = std::mem::take(&mut op.responses.responses)
        .into_iter()
        .collect();
    codes.sort_by(|a, b| a.0.cmp(&b.0));
    op.responses.responses.extend(codes);
}

fn add_rate_headers(r: &mut utoipa::openapi::response::Response) {
    r.headers.insert(
        "RateLimit-Policy".into(),
        text_header("The key's budget for this class of request: `\"uploads\";q=60;w=60`"),
    );
    r.headers.insert(
        "RateLimit".into(),
        text_header("What is left of it in this window: `\"uploads\";r=59;t=42`"),
    );
}

/// The document of a running service: the `module` parameters list the
/// modules of its catalog (built in, or the catalog file it was given).
pub fn for_catalog(doc: &Document, catalog: &Catalog) -> Document {
    let mut doc = doc.clone();
    let keys: Vec<String> = catalog.keys().into_iter().map(String::from).collect();
    for item in doc.paths.paths.values_mut() {
        for op in [&mut item.get, &mut item.post, &mut item.delete]
            .into_iter()
            .flatten()
        {
            for p in op.parameters.iter_mut().flatten() {
                if p.name == "module" {
                    p.schema = Some(
                        ObjectBuilder::new()
                            .schema_type(Type::String)
                            .enum_values(Some(keys.clone()))
                            .into(),
                    );
                }
            }
        }
    }
    doc
}

/// The document as JSON, spelled as OpenAPI spells it.
pub fn to_json(doc: &Document) -> serde_json::Result<serde_json::Value> {
    let mut doc = serde_json::to_value(doc)?;
    spell_links(&mut doc);
    Ok(doc)
}

/// utoipa 5 writes a link's members in snake case (`operation_id`);
/// OpenAPI spells them in camel case (`operationId`).
fn spell_links(doc: &mut serde_json::Value) {
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else {
        return;
    };
    let links = paths
        .values_mut()
        .filter_map(|item| item.as_object_mut())
        .flat_map(|item| item.values_mut())
        .filter_map(|op| op.get_mut("responses").and_then(|r| r.as_object_mut()))
        .flat_map(|responses| responses.values_mut())
        .filter_map(|r| r.get_mut("links").and_then(|l| l.as_object_mut()))
        .flat_map(|links| links.values_mut())
        .filter_map(|link| link.as_object_mut());
    for link in links {
        for (snake, camel) in [
            ("operation_id", "operationId"),
            ("operation_ref", "operationRef"),
            ("request_body", "requestBody"),
        ] {
            if let Some(v) = link.remove(snake) {
                link.insert(camel.to_string(), v);
            }
        }
    }
}
