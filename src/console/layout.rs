//! The page shell and the small pieces every page shares: the simulation
//! banner, the navigation, state badges, masked people and times.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use maud::{DOCTYPE, Markup, html};

use crate::t;

use super::Shown;
use super::assets;
use super::i18n::{self, Lang};
use crate::keys::{KeyRecord, Person, Role};
use crate::ledger::JobState;
use crate::service::App;

/// Which part of the console a page belongs to (for the navigation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Jobs,
    Upload,
    Data,
    Rules,
    Keys,
    Webhooks,
    Developers,
    SignIn,
    None,
}

/// What the shell of a page needs to know.
pub struct Ctx {
    pub simulate: bool,
    pub zone: Tz,
    pub nav: Nav,
    /// The signed-in person, masked, and their role.
    pub user: Option<(Person, Role)>,
    /// The session's CSRF token (for the sign-out form and the script).
    pub csrf: Option<String>,
}

impl Ctx {
    /// A page for someone not signed in.
    pub fn new(app: &App, nav: Nav) -> Ctx {
        Ctx {
            simulate: app.settings.simulate,
            zone: app.settings.zone,
            nav,
            user: None,
            csrf: None,
        }
    }

    /// A page for the holder of `key`, whose session's CSRF token is `csrf`.
    pub fn signed_in(app: &App, nav: Nav, key: &KeyRecord, csrf: &str) -> Ctx {
        Ctx {
            user: Some((key.person(), key.role)),
            csrf: Some(csrf.to_string()),
            ..Ctx::new(app, nav)
        }
    }

    pub fn is_admin(&self) -> bool {
        matches!(self.user, Some((_, Role::Admin)))
    }

    /// A time in the service's zone, the reader's way, with the exact
    /// instant for machines.
    pub fn when(&self, t: &DateTime<Utc>) -> Markup {
        html! {
            time datetime=(crate::ledger::job::time(t)) title=(crate::ledger::job::time(t)) {
                (i18n::moment_in(i18n::current(), t, self.zone))
            }
        }
    }
}

fn nav_link(ctx: &Ctx, nav: Nav, href: &str, label: &str) -> Markup {
    html! {
        @if ctx.nav == nav {
            a href=(href) aria-current="page" { (label) }
        } @else {
            a href=(href) { (label) }
        }
    }
}

/// The simulation banner: on every page while the service simulates.
pub fn simulation_banner() -> Markup {
    html! {
        div.sim-banner role="status" {
            strong { (t!("sim-banner-title")) }
            " " (t!("sim-banner-text"))
        }
    }
}

/// A whole page: head, banner, navigation, the content, footer.
pub fn page(ctx: &Ctx, title: &str, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang=(i18n::current().tag()) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                @if let Some(t) = &ctx.csrf {
                    meta name="csrf-token" content=(t);
                }
                title { (title) " · importgate" }
                link rel="icon" href=(assets::url("icon.svg")) type="image/svg+xml";
                link rel="stylesheet" href=(assets::url("console.css"));
                script src=(assets::url("console.js")) defer {}
            }
            body data-text=(i18n::script_text()) {
                a.skip href="#main" { (t!("skip-to-content")) }
                @if ctx.simulate {
                    (simulation_banner())
                }
                header.topbar {
                    a.brand href="/" {
                        img src=(assets::url("icon.svg")) alt="" width="24" height="24";
                        span { "importgate" }
                    }
                    nav aria-label=(t!("nav-main")) {
                        @if ctx.user.is_some() {
                            (nav_link(ctx, Nav::Jobs, "/jobs", &t!("nav-jobs")))
                            (nav_link(ctx, Nav::Upload, "/upload", &t!("nav-upload")))
                            (nav_link(ctx, Nav::Data, "/modules", &t!("nav-data")))
                            (nav_link(ctx, Nav::Rules, "/rules", &t!("nav-rules")))
                            @if ctx.is_admin() {
                                (nav_link(ctx, Nav::Keys, "/keys", &t!("nav-keys")))
                                (nav_link(ctx, Nav::Webhooks, "/webhooks", &t!("nav-webhooks")))
                            }
                        }
                        (nav_link(ctx, Nav::Developers, "/developers", &t!("nav-developers")))
                    }
                    (language_switch())
                    div.who {
                        @if let (Some((person, role)), Some(csrf)) = (&ctx.user, &ctx.csrf) {
                            span.person title=(person.key_id) {
                                (person.display) " · " span.role { (role_name(*role)) }
                            }
                            form.inline method="post" action="/signout" {
                                input type="hidden" name="_csrf" value=(csrf);
                                button.btn.btn-small type="submit" { (t!("sign-out")) }
                            }
                        } @else if ctx.nav != Nav::SignIn {
                            a.btn.btn-small href="/signin" { (t!("sign-in")) }
                        }
                    }
                }
                main #main tabindex="-1" {
                    (content)
                }
                footer.footer {
                    (t!("footer"))
                }
            }
        }
    }
}

/// A problem as a page of its own.
pub fn error_page(p: &Shown) -> Markup {
    let ctx = Ctx {
        simulate: false,
        zone: chrono_tz::UTC,
        nav: Nav::None,
        user: None,
        csrf: None,
    };
    page(
        &ctx,
        &p.title,
        html! {
            div.narrow {
                h1 { (p.title) }
                div.alert.alert-error role="alert" {
                    p { (p.detail) }
                    p.muted { (t!("error-status", status = p.status.as_u16().to_string())) ", " (t!("error-code")) " " code { (p.code) } }
                }
                p { a href="/jobs" { (t!("back-to-jobs")) } }
            }
        },
    )
}

/// The head row of a table: one column header per name.
pub fn table_head(columns: &[&str]) -> Markup {
    html! {
        thead { tr { @for c in columns { th scope="col" { (c) } } } }
    }
}

/// The role and module-scope fields of a key (new keys and key requests).
pub fn role_and_modules(prefix: &str) -> Markup {
    let role = format!("{prefix}-role");
    let modules = format!("{prefix}-modules");
    let help = format!("{prefix}-modules-help");
    let role_help = format!("{prefix}-role-help");
    html! {
        div.field {
            label for=(role) { (t!("field-role")) }
            select id=(role) name="role" aria-describedby=(role_help) {
                @for r in [Role::Submitter, Role::Approver, Role::Admin] {
                    option value=(r.as_str()) { (role_name(r)) }
                }
            }
            p.help id=(role_help) { (t!("field-role-help")) }
        }
        div.field {
            label for=(modules) { (t!("field-modules")) }
            input id=(modules) type="text" name="modules" value="*" aria-describedby=(help);
            p.help id=(help) { (t!("field-modules-help")) }
        }
    }
}

/// Words a person reads for a state.
pub fn state_label(s: JobState) -> String {
    match s {
        JobState::Validating => t!("state-validating"),
        JobState::Invalid => t!("state-invalid"),
        JobState::Failed => t!("state-failed"),
        JobState::AwaitingApproval => t!("state-awaiting_approval"),
        JobState::Committing => t!("state-committing"),
        JobState::Committed => t!("state-committed"),
        JobState::Rejected => t!("state-rejected"),
        JobState::Cancelled => t!("state-cancelled"),
        JobState::Expired => t!("state-expired"),
        JobState::RollbackPending => t!("state-rollback_pending"),
        JobState::RollingBack => t!("state-rolling_back"),
        JobState::RolledBack => t!("state-rolled_back"),
    }
}

/// Words a person reads for a role.
pub fn role_name(r: Role) -> String {
    match r {
        Role::Submitter => t!("role-submitter"),
        Role::Approver => t!("role-approver"),
        Role::Admin => t!("role-admin"),
    }
}

/// The language switch of the top bar: one small form per other language,
/// which sets the remembered choice and comes back to this page.
fn language_switch() -> Markup {
    let now = i18n::current();
    html! {
        div.lang-switch role="group" aria-label=(t!("lang-switch")) {
            @for l in Lang::ALL {
                @if l == now {
                    span.lang-current lang=(l.tag()) aria-current="true" title=(l.name()) { (l.tag().to_uppercase()) }
                } @else {
                    form.inline method="post" action="/language" {
                        input type="hidden" name="lang" value=(l.tag());
                        input type="hidden" name="next" value=(i18n::current_path());
                        button.btn.btn-small.lang-option type="submit" lang=(l.tag()) title=(l.name()) data-lang=(l.tag()) {
                            (l.tag().to_uppercase())
                        }
                    }
                }
            }
        }
    }
}

/// A module's name in the reader's language (the catalog's `display`).
pub fn module_name(m: &crate::catalog::Module) -> String {
    m.display_name(i18n::current().tag()).to_string()
}

/// A module's name in the reader's language, by its key; the key itself
/// when the catalog has no such module.
pub fn module_name_of(app: &App, key: &str) -> String {
    app.catalog
        .get(key)
        .map_or(key.to_string(), |m| module_name(m))
}

/// A module as a link or list item shows it: its name, then its key.
pub fn module_label(m: &crate::catalog::Module) -> Markup {
    html! { (module_name(m)) " " span.muted { "(" code { (m.key) } ")" } }
}

/// A state as a coloured badge (colour is never the only signal: the words
/// are there too).
pub fn badge(s: JobState) -> Markup {
    html! {
        span class=(format!("badge state-{}", s.as_str())) data-state=(s.as_str()) {
            (state_label(s))
        }
    }
}

/// A masked person, with the key id on hover.
pub fn person(p: &Person) -> Markup {
    html! { span.person title=(p.key_id) { (p.display) } }
}

/// A count, grouped the reader's way (12,345 or 12.345).
pub fn count(n: i64) -> String {
    i18n::count(n)
}

/// A byte size a person reads.
pub fn bytes(n: i64) -> String {
    const UNITS: [&str; 4] = ["", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        t!("size-bytes", n = n)
    } else {
        let text = format!("{v:.1}");
        let shown = i18n::decimal_in(i18n::current(), &text).unwrap_or(text);
        format!("{shown} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_grouped() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(bytes(512), "512 bytes");
        assert_eq!(bytes(2048), "2.0 KiB");
    }
}
