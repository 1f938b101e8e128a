//! Console sign-in with the company's identity provider (API.md section
//! 17): the authorization code flow with PKCE over discovery, through the
//! `openidconnect` crate, which checks the ID token (its signature against
//! the provider's published keys, `iss`, `aud`, `exp` and `nonce`).
//!
//! - [`start`] discovers the provider, keeps the sign-in's nonce and PKCE
//!   verifier under the hash of its `state`, and gives the provider's URL.
//! - [`finish`] takes that sign-in once (a replayed `state` finds nothing),
//!   exchanges the code, checks the token, finds the person (by `sub` once
//!   linked, else by verified email) and their role and modules from the
//!   token's groups, and opens a console session for the key that stands
//!   for the person's sign-ins.
//!
//! The provider is discovered at each start and return, so that its keys
//! are always its current ones; sign-ins are rare. Every call to it follows
//! no redirect, ends within [`TIMEOUT`] and reads at most [`MAX_BODY`].

use std::time::Duration;

use base64::Engine;
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, HttpRequest, HttpResponse, IssuerUrl,
    Nonce, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, TokenResponse,
};
use serde_json::json;
use subtle::ConstantTimeEq;

use super::{App, Error, Result};
use crate::config::Oidc;
use crate::keys::{self, KeyRecord, Role};
use crate::store;

/// How long the provider has to answer each call: the sign-in page says
/// it is unreachable after this (API.md section 17: within 10 s).
pub const TIMEOUT: Duration = Duration::from_secs(8);
/// The most any answer of the provider may hold.
const MAX_BODY: usize = 1 << 20;
/// The longest ID token taken.
pub const MAX_ID_TOKEN: usize = 16 * 1024;
/// How long a started sign-in may take to come back.
const LOGIN_MINUTES: i64 = 15;

/// Why a sign-in was refused: a code for the ledger and the events, and
/// the message the sign-in page shows.
#[derive(Debug, Clone)]
pub struct Refused {
    pub reason: &'static str,
    pub message: String,
}

fn refused(reason: &'static str, message: impl Into<String>) -> Refused {
    Refused {
        reason,
        message: message.into(),
    }
}

/// A started sign-in: where to send the browser, and the `state` its
/// cookie keeps.
pub struct Started {
    pub url: String,
    pub state: String,
}

/// A finished sign-in: the new session's id (for its cookie), the key it
/// stands for, and the console page to go to.
pub struct SignedIn {
    pub session: String,
    pub key: KeyRecord,
    pub next: String,
}

/// The settings of a provider that is on.
struct Provider<'a> {
    issuer: &'a str,
    client_id: &'a str,
    secret_file: &'a std::path::Path,
    redirect: &'a str,
}

fn provider(o: &Oidc) -> Option<Provider<'_>> {
    Some(Provider {
        issuer: o.issuer.as_deref()?,
        client_id: o.client_id.as_deref()?,
        secret_file: o.client_secret_file.as_deref()?,
        redirect: o.redirect_url.as_deref()?,
    })
}

/// Whether sign-in with the provider is on.
pub fn enabled(app: &App) -> bool {
    app.settings.oidc.enabled()
}

/// The name on the sign-in button.
pub fn display_name(app: &App) -> String {
    (app.settings.oidc.display_name.clone()).unwrap_or_else(|| "your company account".into())
}

/// Starts a sign-in that returns to console page `next`.
pub async fn start(app: &App, next: &str) -> Result<std::result::Result<Started, Refused>> {
    let Some(p) = provider(&app.settings.oidc) else {
        return Err(Error::NotFound {
            what: "page",
            id: "/auth/oidc/start".into(),
        });
    };
    let client = match client(app, &p, &http_client()).await {
        Ok(c) => c,
        Err(r) => return Ok(Err(r)),
    };
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state, nonce) = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scope(Scope::new("email".into()))
        .add_scope(Scope::new("profile".into()))
        .set_pkce_challenge(challenge)
        .url();
    let now = store::now();
    let login = store::oidc::Login {
        nonce: nonce.secret().clone(),
        verifier: verifier.secret().clone(),
        next: next.to_string(),
        created_at: now,
    };
    let mut c = app.db.acquire().await?;
    let stale = now - chrono::Duration::minutes(LOGIN_MINUTES);
    store::oidc::sweep_logins(&mut c.conn(), stale).await?;
    store::oidc::insert_login(&mut c.conn(), &keys::hash(state.secret()), &login).await?;
    Ok(Ok(Started {
        url: url.to_string(),
        state: state.secret().clone(),
    }))
}

/// Finishes a sign-in the provider sent back with `code` and `state`;
/// `held` is the state the browser's cookie kept. A refusal is recorded in
/// the ledger (and as an event) before it is returned.
pub async fn finish(
    app: &App,
    code: &str,
    state: &str,
    held: &str,
) -> Result<std::result::Result<SignedIn, Refused>> {
    match signed_in(app, code, state, held).await? {
        Ok(done) => Ok(Ok(done)),
        Err(r) => {
            record_refusal(app, &r).await?;
            Ok(Err(r))
        }
    }
}

async fn signed_in(
    app: &App,
    code: &str,
    state: &str,
    held: &str,
) -> Result<std::result::Result<SignedIn, Refused>> {
    let Some(p) = provider(&app.settings.oidc) else {
        return Err(Error::NotFound {
            what: "page",
            id: "/auth/oidc/callback".into(),
        });
    };
    if state.is_empty() || !bool::from(state.as_bytes().ct_eq(held.as_bytes())) {
        return Ok(Err(refused(
            "state",
            "this sign-in did not start in this browser; sign in again",
        )));
    }
    let login = {
        let mut c = app.db.acquire().await?;
        store::oidc::take_login(&mut c.conn(), &keys::hash(state)).await?
    };
    let fresh = store::now() - chrono::Duration::minutes(LOGIN_MINUTES);
    let Some(login) = login.filter(|l| l.created_at > fresh) else {
        return Ok(Err(refused(
            "state",
            "this sign-in was used already or took too long; sign in again",
        )));
    };
    let claims = match checked_claims(app, &p, code, &login).await {
        Ok(c) => c,
        Err(r) => return Ok(Err(r)),
    };
    let grant = match grant(&app.settings.oidc, &claims.groups) {
        Ok(g) => g,
        Err(r) => return Ok(Err(r)),
    };
    let key = match person_key(app, p.issuer, &claims, &grant).await? {
        Ok(k) => k,
        Err(r) => return Ok(Err(r)),
    };
    let session = super::sessions::open_for(app, &key).await?;
    record_sign_in(app, &key).await?;
    Ok(Ok(SignedIn {
        session,
        key,
        next: login.next,
    }))
}

/// What the checked ID token says of its holder.
struct Claims {
    sub: String,
    email: Option<String>,
    email_verified: bool,
    name: Option<String>,
    groups: Vec<String>,
}

/// Exchanges the code and checks the ID token it brings.
async fn checked_claims(
    app: &App,
    p: &Provider<'_>,
    code: &str,
    login: &store::oidc::Login,
) -> std::result::Result<Claims, Refused> {
    let http = http_client();
    let client = client(app, p, &http).await?;
    let call = |r: HttpRequest| fetch(http.clone(), r);
    let exchange = client
        .exchange_code(AuthorizationCode::new(code.to_string()))
        .map_err(|e| {
            refused(
                "provider",
                format!("the provider has no token endpoint: {e}"),
            )
        })?
        .set_pkce_verifier(PkceCodeVerifier::new(login.verifier.clone()));
    let tokens = exchange.request_async(&call).await.map_err(|e| {
        refused(
            "token",
            format!("the provider did not give a token for this sign-in: {e}"),
        )
    })?;
    let id_token = tokens
        .id_token()
        .ok_or_else(|| refused("token", "the provider's answer has no ID token"))?;
    let raw = id_token.to_string();
    if raw.len() > MAX_ID_TOKEN {
        return Err(refused(
            "token",
            format!(
                "the provider's ID token is {} bytes, more than {MAX_ID_TOKEN}",
                raw.len()
            ),
        ));
    }
    let verifier = client.id_token_verifier();
    let nonce = Nonce::new(login.nonce.clone());
    let checked = id_token.claims(&verifier, &nonce).map_err(|e| {
        refused(
            "token",
            format!("the provider's ID token is not valid: {e}"),
        )
    })?;
    Ok(Claims {
        sub: checked.subject().as_str().to_string(),
        email: checked.email().map(|e| e.as_str().to_string()),
        email_verified: checked.email_verified().unwrap_or(false),
        name: (checked.name())
            .and_then(|n| n.get(None))
            .map(|n| n.as_str().to_string()),
        groups: groups_of(&raw, groups_claim(&app.settings.oidc)),
    })
}

/// The claim the groups are read from.
fn groups_claim(o: &Oidc) -> &str {
    o.groups_claim.as_deref().unwrap_or("groups")
}

/// The groups `claim` of an ID token already checked (an array of strings,
/// or one string): the crate's claims type has no place for it, so it is
/// read from the token's payload.
fn groups_of(raw: &str, claim: &str) -> Vec<String> {
    let payload = raw.split('.').nth(1).unwrap_or("");
    let Ok(bytes) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload) else {
        return vec![];
    };
    let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    match &value[claim] {
        serde_json::Value::String(one) => vec![one.clone()],
        many => (many.as_array().into_iter().flatten())
            .filter_map(|g| g.as_str().map(str::to_string))
            .collect(),
    }
}

/// The role and modules a person's groups give: the widest role of the
/// mapped groups and the union of their modules (all modules for a mapped
/// group `oidc_modules` does not name). No mapped group, no access.
fn grant(o: &Oidc, groups: &[String]) -> std::result::Result<(Role, Vec<String>), Refused> {
    let mapped: Vec<(&String, Role)> = (groups.iter())
        .filter_map(|g| Some((g, Role::parse(o.roles.get(g)?)?)))
        .collect();
    let Some(role) = mapped.iter().map(|(_, r)| *r).max() else {
        return Err(refused(
            "no_group",
            "none of your groups at the provider gives access to importgate; ask an admin",
        ));
    };
    let mut modules: Vec<String> = vec![];
    for (g, _) in &mapped {
        match o.modules.get(*g) {
            None => return Ok((role, vec!["*".into()])),
            Some(m) => modules.extend(m.iter().cloned()),
        }
    }
    modules.sort();
    modules.dedup();
    Ok((role, modules))
}

/// The key standing for the person's sign-ins, given `grant` now: the
/// linked one, else a new one for the person with the token's verified
/// email (or a new person, with `oidc_create_persons`).
async fn person_key(
    app: &App,
    issuer: &str,
    claims: &Claims,
    grant: &(Role, Vec<String>),
) -> Result<std::result::Result<KeyRecord, Refused>> {
    let (role, modules) = grant;
    let name = claims.name.clone().unwrap_or_else(|| claims.sub.clone());
    let email = claims.email.as_deref().filter(|_| claims.email_verified);
    let mut tx = app.db.begin().await?;
    if let Some((_, key_id)) = store::oidc::link(&mut tx.conn(), issuer, &claims.sub).await? {
        let Some(key) = store::keys::get(&mut tx.conn(), &key_id).await? else {
            return Err(Error::Internal(format!("linked key {key_id} is gone")));
        };
        if key.revoked_at.is_some() {
            return Ok(Err(refused(
                "revoked",
                "an admin ended your sign-ins to importgate",
            )));
        }
        store::keys::regrant(&mut tx.conn(), &key.id, *role, modules, &name, email).await?;
        let detail = json!({"role": role.as_str(), "modules": modules, "origin": "oidc"});
        super::keys::log(
            app,
            &mut tx.conn(),
            key.id.as_str(),
            "key_regranted",
            (Some("active"), "active"),
            None,
            detail,
        )
        .await?;
        tx.commit().await?;
        let key = super::keys::find(app, &key.id).await?;
        return key
            .map(Ok)
            .ok_or_else(|| Error::Internal("a regranted key is gone".into()));
    }
    let person = match person_of(app, &mut tx.conn(), claims, email).await? {
        Ok(p) => p,
        Err(r) => return Ok(Err(r)),
    };
    let new = keys::generate();
    let holder = store::keys::Holder {
        name: &name,
        email,
        person_id: &person,
        role: *role,
        modules,
        expires_at: None,
        issued_by: None,
    };
    let key = store::keys::insert(&mut tx.conn(), &new, &holder).await?;
    let detail = json!({
        "role": key.role.as_str(),
        "modules": key.modules,
        "person_id": key.person_id,
        "issued_by": null,
        "expires_at": null,
        "origin": "oidc",
    });
    super::keys::log(
        app,
        &mut tx.conn(),
        key.id.as_str(),
        "key_created",
        (None, "active"),
        None,
        detail,
    )
    .await?;
    store::oidc::insert_link(&mut tx.conn(), issuer, &claims.sub, &person, &key.id).await?;
    tx.commit().await?;
    app.moves.other();
    Ok(Ok(key))
}

/// The person a first sign-in is: the one whose live keys have the
/// token's verified email, or a new one with `oidc_create_persons`.
async fn person_of(
    app: &App,
    conn: &mut store::Conn<'_>,
    claims: &Claims,
    email: Option<&str>,
) -> Result<std::result::Result<String, Refused>> {
    let create = app.settings.oidc.create_persons;
    let Some(email) = email else {
        if create {
            return Ok(Ok(keys::person_id()));
        }
        let why = match claims.email {
            Some(_) => "the provider has not verified your email address",
            None => "the provider gave no email address",
        };
        return Ok(Err(refused(
            "no_person",
            format!("{why}, so importgate cannot tell who you are; ask an admin"),
        )));
    };
    let found = store::keys::persons_with_email(conn, email, store::now()).await?;
    Ok(match found.as_slice() {
        [one] => Ok(one.clone()),
        [] if create => Ok(keys::person_id()),
        [] => Err(refused(
            "no_person",
            "importgate knows no one with your email address; ask an admin for a key first",
        )),
        _ => Err(refused(
            "no_person",
            "several people in importgate have your email address; ask an admin",
        )),
    })
}

/// Records a sign-in in the ledger (`person.signed_in`).
async fn record_sign_in(app: &App, key: &KeyRecord) -> Result<()> {
    let mut tx = app.db.begin().await?;
    let detail =
        json!({"person_id": key.person_id, "role": key.role.as_str(), "modules": key.modules});
    super::keys::log(
        app,
        &mut tx.conn(),
        key.id.as_str(),
        "signed_in",
        (None, "signed_in"),
        Some(key),
        detail,
    )
    .await?;
    tx.commit().await?;
    app.moves.other();
    tracing::info!(key_id = %key.id, "console sign-in with the identity provider");
    Ok(())
}

/// Records a refused sign-in in the ledger (`person.sign_in_refused`),
/// with its reason and no one's name.
async fn record_refusal(app: &App, r: &Refused) -> Result<()> {
    let mut tx = app.db.begin().await?;
    let detail = json!({"reason": r.reason});
    super::keys::log(
        app,
        &mut tx.conn(),
        "oidc",
        "sign_in_refused",
        (None, "refused"),
        None,
        detail,
    )
    .await?;
    tx.commit().await?;
    app.moves.other();
    tracing::info!(
        reason = r.reason,
        "console sign-in with the identity provider refused"
    );
    Ok(())
}

/// A discovered provider's client: its authorization and token endpoints
/// set, its user info endpoint perhaps.
type ProviderClient = CoreClient<
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointMaybeSet,
    openidconnect::EndpointMaybeSet,
>;

/// The provider's client, discovered now through `http`. An `http` issuer
/// is refused unless `oidc_allow_http`.
async fn client(
    app: &App,
    p: &Provider<'_>,
    http: &reqwest::Client,
) -> std::result::Result<ProviderClient, Refused> {
    if p.issuer.starts_with("http://") && !app.settings.oidc.allow_http {
        return Err(refused(
            "provider",
            "the identity provider's issuer is not https; sign-in with it is off",
        ));
    }
    let issuer = IssuerUrl::new(p.issuer.to_string())
        .map_err(|e| refused("provider", format!("oidc_issuer is not a URL: {e}")))?;
    let call = |r: HttpRequest| fetch(http.clone(), r);
    let meta = CoreProviderMetadata::discover_async(issuer, &call)
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "identity provider discovery failed");
            refused(
                "provider",
                "the identity provider cannot be reached right now; try again, or sign in with a key",
            )
        })?;
    if meta.issuer().as_str().starts_with("http://") && !app.settings.oidc.allow_http {
        return Err(refused(
            "provider",
            "the identity provider's issuer is not https; sign-in with it is off",
        ));
    }
    let secret = std::fs::read_to_string(p.secret_file).map_err(|e| {
        tracing::warn!(error = %e, "cannot read oidc_client_secret_file");
        refused(
            "provider",
            "importgate cannot read its client secret; tell an admin",
        )
    })?;
    let redirect = RedirectUrl::new(p.redirect.to_string())
        .map_err(|e| refused("provider", format!("oidc_redirect_url is not a URL: {e}")))?;
    Ok(CoreClient::from_provider_metadata(
        meta,
        ClientId::new(p.client_id.to_string()),
        Some(ClientSecret::new(secret.trim().to_string())),
    )
    .set_redirect_uri(redirect))
}

/// The HTTP client that calls the provider: no redirect followed (a
/// redirect could point it anywhere), [`TIMEOUT`] for each call.
fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .build()
        .unwrap_or_default()
}

/// One call to the provider, its answer read up to [`MAX_BODY`].
async fn fetch(
    http: reqwest::Client,
    request: HttpRequest,
) -> std::result::Result<HttpResponse, std::io::Error> {
    let (parts, body) = request.into_parts();
    let mut resp = http
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await
        .map_err(std::io::Error::other)?;
    let mut answer = openidconnect::http::Response::builder().status(resp.status());
    for (name, value) in resp.headers() {
        answer = answer.header(name, value);
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(std::io::Error::other)? {
        if bytes.len() + chunk.len() > MAX_BODY {
            return Err(std::io::Error::other(format!(
                "the provider's answer is longer than {MAX_BODY} bytes"
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    answer.body(bytes).map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(payload: serde_json::Value) -> String {
        let b64 = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        format!("{}.{}.sig", b64(b"{}"), b64(payload.to_string().as_bytes()))
    }

    #[test]
    fn groups_come_from_an_array_or_one_string_claim() {
        let t = token(json!({"groups": ["staff", 7, "ops"], "hd": "example.co.id"}));
        assert_eq!(groups_of(&t, "groups"), ["staff", "ops"]);
        assert_eq!(groups_of(&t, "hd"), ["example.co.id"]);
        assert!(groups_of(&t, "roles").is_empty());
        assert!(groups_of("not a token", "groups").is_empty());
    }

    #[test]
    fn the_widest_role_and_the_union_of_scopes_are_given() {
        let mut o = Oidc::default();
        for (g, r) in [
            ("staff", "submitter"),
            ("fin", "approver"),
            ("ops", "admin"),
        ] {
            o.roles.insert(g.into(), r.into());
        }
        o.modules.insert("staff".into(), vec!["orders".into()]);
        o.modules
            .insert("fin".into(), vec!["payments".into(), "orders".into()]);
        let g = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let (role, modules) = grant(&o, &g(&["staff", "fin", "other"])).unwrap();
        assert_eq!(role, Role::Approver);
        assert_eq!(modules, ["orders", "payments"]);
        // A mapped group without a scope gives every module.
        let (role, modules) = grant(&o, &g(&["staff", "ops"])).unwrap();
        assert_eq!((role, modules), (Role::Admin, vec!["*".to_string()]));
        assert_eq!(grant(&o, &g(&["other"])).unwrap_err().reason, "no_group");
    }
}
