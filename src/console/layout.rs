//! The page shell and the small pieces every page shares: the simulation
//! banner, the navigation, state badges, masked people and times.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use maud::{DOCTYPE, Markup, html};

use super::Shown;
use super::assets;
use super::session::Signed;
use crate::keys::{Person, Role};
use crate::ledger::JobState;
use crate::service::App;

/// Which part of the console a page belongs to (for the navigation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Jobs,
    Upload,
    Keys,
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
    pub fn new(app: &App, nav: Nav, signed: Option<&Signed>) -> Ctx {
        Ctx {
            simulate: app.settings.simulate,
            zone: app.settings.zone,
            nav,
            user: signed.map(|s| (s.key.person(), s.key.role)),
            csrf: signed.map(|s| s.csrf.clone()),
        }
    }

    pub fn is_admin(&self) -> bool {
        matches!(self.user, Some((_, Role::Admin)))
    }

    /// A time in the service's zone, with the exact instant for machines.
    pub fn when(&self, t: &DateTime<Utc>) -> Markup {
        let local = t.with_timezone(&self.zone);
        html! {
            time datetime=(crate::ledger::job::time(t)) title=(crate::ledger::job::time(t)) {
                (local.format("%Y-%m-%d %H:%M %Z"))
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
            strong { "Simulation — nothing is written." }
            " Imports pass the gate and are recorded in the ledger, but no module table is changed."
        }
    }
}

/// A whole page: head, banner, navigation, the content, footer.
pub fn page(ctx: &Ctx, title: &str, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
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
            body {
                a.skip href="#main" { "Skip to content" }
                @if ctx.simulate {
                    (simulation_banner())
                }
                header.topbar {
                    a.brand href="/" {
                        img src=(assets::url("icon.svg")) alt="" width="24" height="24";
                        span { "importgate" }
                    }
                    nav aria-label="Main" {
                        @if ctx.user.is_some() {
                            (nav_link(ctx, Nav::Jobs, "/jobs", "Jobs"))
                            (nav_link(ctx, Nav::Upload, "/upload", "Upload"))
                            @if ctx.is_admin() {
                                (nav_link(ctx, Nav::Keys, "/keys", "Keys"))
                            }
                        }
                        (nav_link(ctx, Nav::Developers, "/developers", "Developers"))
                    }
                    div.who {
                        @if let (Some((person, role)), Some(csrf)) = (&ctx.user, &ctx.csrf) {
                            span.person title=(person.key_id) {
                                (person.display) " · " span.role { (role.as_str()) }
                            }
                            form.inline method="post" action="/signout" {
                                input type="hidden" name="_csrf" value=(csrf);
                                button.btn.btn-small type="submit" { "Sign out" }
                            }
                        } @else if ctx.nav != Nav::SignIn {
                            a.btn.btn-small href="/signin" { "Sign in" }
                        }
                    }
                }
                main #main tabindex="-1" {
                    (content)
                }
                footer.footer {
                    "importgate — every import waits for a second person at the Human-Gate."
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
                    p.muted { "Status " (p.status.as_u16()) ", code " code { (p.code) } }
                }
                p { a href="/jobs" { "Back to the jobs" } }
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
            label for=(role) { "Role" }
            select id=(role) name="role" aria-describedby=(role_help) {
                option value="submitter" { "submitter" }
                option value="approver" { "approver" }
                option value="admin" { "admin" }
            }
            p.help id=(role_help) { "A submitter uploads and follows jobs; an approver also decides at the gate; an admin also manages keys." }
        }
        div.field {
            label for=(modules) { "Modules" }
            input id=(modules) type="text" name="modules" value="*" aria-describedby=(help);
            p.help id=(help) { "* for all, or module keys separated by commas (customers, orders)." }
        }
    }
}

/// Words a person reads for a state.
pub fn state_label(s: JobState) -> &'static str {
    match s {
        JobState::Validating => "Validating",
        JobState::Invalid => "Invalid file",
        JobState::Failed => "Failed",
        JobState::AwaitingApproval => "Awaiting approval",
        JobState::Committing => "Committing",
        JobState::Committed => "Committed",
        JobState::Rejected => "Rejected",
        JobState::Cancelled => "Cancelled",
        JobState::Expired => "Expired",
        JobState::RollbackPending => "Rollback pending",
        JobState::RollingBack => "Rolling back",
        JobState::RolledBack => "Rolled back",
    }
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

/// A number with thin grouping (12 345) for counts.
pub fn count(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{202f}');
        }
        out.push(ch);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// A byte size a person reads.
pub fn bytes(n: i64) -> String {
    const UNITS: [&str; 4] = ["bytes", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_grouped() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1\u{202f}000");
        assert_eq!(count(1234567), "1\u{202f}234\u{202f}567");
        assert_eq!(bytes(512), "512 bytes");
        assert_eq!(bytes(2048), "2.0 KiB");
    }
}
