//! The console's languages: Bahasa Indonesia and English.
//!
//! The words live in Fluent files (`locales/{en,id}/*.ftl`), built into the
//! binary by [`fluent_templates`]; numbers and dates follow the language
//! through [`num_format`] and chrono's locale tables. The API never passes
//! through here: it keeps English messages and stable codes.
//!
//! A request's language is decided once, by [`middleware`]: the `ig_lang`
//! cookie the switch in the top bar sets, else the browser's
//! `Accept-Language`, else English. It is kept in a task-local for the
//! request, so every piece of a page — and an error page rendered far from
//! the handler — speaks it without each function being handed a language.

use std::borrow::Cow;
use std::collections::HashMap;

use axum::extract::{Form, Request};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use chrono::{DateTime, NaiveDate};
use chrono_tz::Tz;
use fluent_templates::fluent_bundle::FluentValue;
use fluent_templates::{LanguageIdentifier, Loader, langid};
use num_format::ToFormattedString;

fluent_templates::static_loader! {
    static LOCALES = {
        locales: "./locales",
        fallback_language: "en",
        // No Unicode isolation marks around arguments: the words go into
        // HTML that has its own structure, and tests read the text.
        customise: |bundle| bundle.set_use_isolating(false),
    };
}

/// The cookie that remembers a person's choice of language.
pub const LANG_COOKIE: &str = "ig_lang";

/// A language the console speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lang {
    #[default]
    En,
    Id,
}

static EN: LanguageIdentifier = langid!("en");
static ID: LanguageIdentifier = langid!("id");

impl Lang {
    pub const ALL: [Lang; 2] = [Lang::Id, Lang::En];

    /// The BCP 47 tag (`lang` attribute, cookie value).
    pub fn tag(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Id => "id",
        }
    }

    /// The language's own name, as the switch shows it.
    pub fn name(self) -> &'static str {
        match self {
            Lang::En => "English",
            Lang::Id => "Bahasa Indonesia",
        }
    }

    pub fn parse(tag: &str) -> Option<Lang> {
        Lang::ALL.into_iter().find(|l| l.tag() == tag)
    }

    fn id(self) -> &'static LanguageIdentifier {
        match self {
            Lang::En => &EN,
            Lang::Id => &ID,
        }
    }

    fn number_locale(self) -> num_format::Locale {
        match self {
            Lang::En => num_format::Locale::en,
            Lang::Id => num_format::Locale::id,
        }
    }

    fn time_locale(self) -> chrono::Locale {
        match self {
            Lang::En => chrono::Locale::en_GB,
            Lang::Id => chrono::Locale::id_ID,
        }
    }

    /// The language a request asks for: the cookie, else `Accept-Language`
    /// (the first tag whose language the console speaks), else English.
    pub fn of(headers: &HeaderMap) -> Lang {
        let jar = CookieJar::from_headers(headers);
        if let Some(lang) = jar.get(LANG_COOKIE).and_then(|c| Lang::parse(c.value())) {
            return lang;
        }
        let accepted = headers
            .get(header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        // Browsers list languages in the order of preference; the parser
        // keeps that order. `in` is the old code of Indonesian.
        fluent_langneg::accepted_languages::parse(accepted)
            .iter()
            .find_map(|l| match l.language.as_str() {
                "id" | "in" => Some(Lang::Id),
                "en" => Some(Lang::En),
                _ => None,
            })
            .unwrap_or_default()
    }
}

/// What the request being answered tells every piece of its page.
#[derive(Debug, Clone)]
struct Here {
    lang: Lang,
    /// The path and query, for the language switch to come back to.
    path: String,
}

tokio::task_local! {
    static CURRENT: Here;
}

/// The language of the request being answered (English outside one).
pub fn current() -> Lang {
    CURRENT.try_with(|h| h.lang).unwrap_or_default()
}

/// The path and query of the page being answered (`/` outside a request).
pub fn current_path() -> String {
    CURRENT
        .try_with(|h| h.path.clone())
        .unwrap_or_else(|_| "/".to_string())
}

/// Answers a request outside the console's router (the fallback) in its
/// language.
pub fn answer_in<R>(headers: &HeaderMap, path: &str, f: impl FnOnce() -> R) -> R {
    let here = Here {
        lang: Lang::of(headers),
        path: path.to_string(),
    };
    CURRENT.sync_scope(here, f)
}

/// Decides each console request's language and answers in it.
pub async fn middleware(req: Request, next: Next) -> Response {
    let lang = Lang::of(req.headers());
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".to_string());
    let mut resp = CURRENT.scope(Here { lang, path }, next.run(req)).await;
    resp.headers_mut().insert(
        header::CONTENT_LANGUAGE,
        header::HeaderValue::from_static(lang.tag()),
    );
    // The same URL answers in different languages.
    resp.headers_mut().append(
        header::VARY,
        header::HeaderValue::from_static("Accept-Language, Cookie"),
    );
    resp
}

#[derive(serde::Deserialize)]
pub struct Choice {
    lang: String,
    next: Option<String>,
}

/// `POST /language`: remembers the chosen language in a cookie (a year,
/// this browser; it works before sign-in too) and goes back to the page.
/// Only the console's own pages may ask ([`super::request::check_origin`]);
/// it changes nothing but how pages read, so it needs no CSRF token.
pub async fn choose(headers: HeaderMap, Form(choice): Form<Choice>) -> Response {
    if let Err(refused) = super::request::check_origin(&headers) {
        return super::Fail(refused).into_response();
    }
    let next = super::request::safe_next(choice.next.as_deref());
    let Some(lang) = Lang::parse(&choice.lang) else {
        return Redirect::to(&next).into_response();
    };
    let cookie = Cookie::build((LANG_COOKIE, lang.tag()))
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(super::request::is_https(&headers))
        .max_age(time::Duration::days(365))
        .build();
    (CookieJar::new().add(cookie), Redirect::to(&next)).into_response()
}

/// An argument of a message.
pub enum Arg<'a> {
    Text(Cow<'a, str>),
    Number(i64),
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(s: &'a str) -> Arg<'a> {
        Arg::Text(Cow::Borrowed(s))
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(s: &'a String) -> Arg<'a> {
        Arg::Text(Cow::Borrowed(s))
    }
}

impl From<String> for Arg<'static> {
    fn from(s: String) -> Arg<'static> {
        Arg::Text(Cow::Owned(s))
    }
}

impl From<i64> for Arg<'static> {
    fn from(n: i64) -> Arg<'static> {
        Arg::Number(n)
    }
}

impl From<u32> for Arg<'static> {
    fn from(n: u32) -> Arg<'static> {
        Arg::Number(i64::from(n))
    }
}

impl From<u64> for Arg<'static> {
    fn from(n: u64) -> Arg<'static> {
        Arg::Number(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

impl From<usize> for Arg<'static> {
    fn from(n: usize) -> Arg<'static> {
        Arg::Number(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

/// The message `id` in `lang`, with its arguments. A number argument `n`
/// selects plural forms; it is also given as `n_text`, grouped the
/// language's way, for the message to show.
pub fn text_in(lang: Lang, id: &str, args: &[(&str, Arg<'_>)]) -> String {
    if args.is_empty() {
        return LOCALES.lookup(lang.id(), id);
    }
    let mut map: HashMap<Cow<'static, str>, FluentValue<'_>> = HashMap::new();
    for (name, arg) in args {
        match arg {
            Arg::Text(s) => {
                map.insert(
                    Cow::Owned((*name).to_string()),
                    FluentValue::from(s.as_ref()),
                );
            }
            Arg::Number(n) => {
                map.insert(Cow::Owned((*name).to_string()), FluentValue::from(*n));
                map.insert(
                    Cow::Owned(format!("{name}_text")),
                    FluentValue::from(count_in(lang, *n)),
                );
            }
        }
    }
    LOCALES.lookup_with_args(lang.id(), id, &map)
}

/// The message `id` in the current request's language.
pub fn text(id: &str, args: &[(&str, Arg<'_>)]) -> String {
    text_in(current(), id, args)
}

/// A message in the current language: `t!("id")` or
/// `t!("id", name = value, …)`.
#[macro_export]
macro_rules! t {
    ($id:literal) => {
        $crate::console::i18n::text($id, &[])
    };
    ($id:literal, $($name:ident = $value:expr),+ $(,)?) => {
        $crate::console::i18n::text(
            $id,
            &[$((stringify!($name), $crate::console::i18n::Arg::from($value))),+],
        )
    };
}

/// The messages the console's script shows, in the current language, as
/// one JSON object the page carries (`<body data-text>`). Their arguments
/// stay `{name}` for the script to fill in.
pub fn script_text() -> String {
    let slot = |name: &'static str| (name, Arg::Text(Cow::Owned(format!("{{{name}}}"))));
    let messages = [
        ("copied", text("js-copied", &[])),
        ("now", text("js-job-now", &[slot("job"), slot("state")])),
        ("changed", text("js-job-changed", &[slot("state")])),
        ("checking", text("js-checking", &[])),
        (
            "checked",
            text("js-checked", &[slot("state"), slot("rows")]),
        ),
        ("choose", text("js-choose-file", &[])),
        (
            "failedStatus",
            text("js-upload-failed-status", &[slot("status")]),
        ),
        ("unreachable", text("js-upload-unreachable", &[])),
        ("uploading", text("js-uploading", &[])),
        (
            "uploadingPercent",
            text("js-uploading-percent", &[slot("percent")]),
        ),
    ];
    let map: serde_json::Map<String, serde_json::Value> = messages
        .into_iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v)))
        .collect();
    serde_json::Value::Object(map).to_string()
}

/// A count, grouped the language's way (12,345 or 12.345).
pub fn count_in(lang: Lang, n: i64) -> String {
    n.to_formatted_string(&lang.number_locale())
}

/// A count in the current language.
pub fn count(n: i64) -> String {
    count_in(current(), n)
}

/// An exact decimal (as the API writes it: `-1234.50`) with the language's
/// grouping and decimal mark, every digit kept: an approver must see the
/// amount that will be written, not a rounded one. `None` if it is no
/// decimal.
pub fn decimal_in(lang: Lang, text: &str) -> Option<String> {
    let (sign, body) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text),
    };
    let (whole, fraction) = match body.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (body, None),
    };
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(whole) || fraction.is_some_and(|f| !all_digits(f)) {
        return None;
    }
    let grouped = whole
        .parse::<u128>()
        .ok()?
        .to_formatted_string(&lang.number_locale());
    let mark = lang.number_locale().decimal();
    Some(match fraction {
        Some(f) => format!("{sign}{grouped}{mark}{f}"),
        None => format!("{sign}{grouped}"),
    })
}

/// A date the language's way: `31 Jan 2024`, `31 Jan 2024` (`Mei`, `Agu`…).
pub fn date_in(lang: Lang, d: &NaiveDate) -> String {
    d.format_localized("%-d %b %Y", lang.time_locale())
        .to_string()
}

/// A moment in `zone`, the language's way, with the zone's abbreviation
/// (`24 Nov 2026 13:05 WIB`; Indonesian writes `13.05`).
pub fn moment_in<T: chrono::TimeZone>(lang: Lang, t: &DateTime<T>, zone: Tz) -> String {
    moment(lang, t, zone, false)
}

/// A moment with its seconds (a value of a row, where the second may
/// matter): `17 Agu 2026 10.05.07 WIB`.
pub fn moment_exact_in<T: chrono::TimeZone>(lang: Lang, t: &DateTime<T>, zone: Tz) -> String {
    moment(lang, t, zone, true)
}

fn moment<T: chrono::TimeZone>(lang: Lang, t: &DateTime<T>, zone: Tz, seconds: bool) -> String {
    let pattern = match (lang, seconds) {
        (Lang::En, false) => "%-d %b %Y %H:%M %Z",
        (Lang::En, true) => "%-d %b %Y %H:%M:%S %Z",
        (Lang::Id, false) => "%-d %b %Y %H.%M %Z",
        (Lang::Id, true) => "%-d %b %Y %H.%M.%S %Z",
    };
    t.with_timezone(&zone)
        .format_localized(pattern, lang.time_locale())
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every message of each file, by id.
    fn ids(lang: &str) -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("locales")
            .join(lang);
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).expect("locales dir") {
            let path = entry.expect("entry").path();
            let text = std::fs::read_to_string(&path).expect("ftl");
            let res = fluent_templates::fluent_bundle::FluentResource::try_new(text)
                .unwrap_or_else(|(_, errs)| panic!("{}: {errs:?}", path.display()));
            for e in res.entries() {
                if let fluent_syntax::ast::Entry::Message(m) = e {
                    out.push(m.id.name.to_string());
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn both_languages_have_the_same_messages() {
        let en = ids("en");
        let id = ids("id");
        let only_en: Vec<_> = en.iter().filter(|k| !id.contains(k)).collect();
        let only_id: Vec<_> = id.iter().filter(|k| !en.contains(k)).collect();
        assert!(only_en.is_empty(), "missing in Indonesian: {only_en:?}");
        assert!(only_id.is_empty(), "missing in English: {only_id:?}");
        assert!(en.len() > 10);
    }

    /// Every `t!("…")` of the console names a message that exists.
    #[test]
    fn every_message_the_console_asks_for_exists() {
        let en = ids("en");
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/console");
        let mut missing = Vec::new();
        for entry in std::fs::read_dir(src).expect("src/console") {
            let path = entry.expect("entry").path();
            if path.extension().is_none_or(|e| e != "rs") || path.ends_with("i18n.rs") {
                continue;
            }
            let code = std::fs::read_to_string(&path).expect("source");
            for (at, _) in code.match_indices("t!(\"") {
                // `format!("…` ends the same way: only the macro itself.
                let before = code[..at].chars().next_back().unwrap_or(' ');
                if before.is_alphanumeric() || before == '_' {
                    continue;
                }
                let id = code[at + 4..].split('"').next().unwrap_or("");
                if !en.iter().any(|k| k == id) {
                    missing.push(format!("{}: {id}", path.display()));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "messages not in locales/en: {missing:?}"
        );
    }

    #[test]
    fn numbers_and_dates_follow_the_language() {
        assert_eq!(count_in(Lang::En, 1234567), "1,234,567");
        assert_eq!(count_in(Lang::Id, 1234567), "1.234.567");
        assert_eq!(count_in(Lang::Id, -999), "-999");
        assert_eq!(
            decimal_in(Lang::Id, "-1234567.50").as_deref(),
            Some("-1.234.567,50")
        );
        assert_eq!(decimal_in(Lang::En, "1234.5").as_deref(), Some("1,234.5"));
        assert_eq!(decimal_in(Lang::En, "12"), Some("12".to_string()));
        assert_eq!(decimal_in(Lang::En, "1e5"), None);
        assert_eq!(decimal_in(Lang::En, "."), None);
        let d = NaiveDate::from_ymd_opt(2024, 5, 3).unwrap();
        assert_eq!(date_in(Lang::Id, &d), "3 Mei 2024");
        assert_eq!(date_in(Lang::En, &d), "3 May 2024");
        let t = DateTime::parse_from_rfc3339("2026-08-17T03:05:00Z").unwrap();
        let wib: Tz = "Asia/Jakarta".parse().unwrap();
        assert_eq!(moment_in(Lang::Id, &t, wib), "17 Agu 2026 10.05 WIB");
        assert_eq!(moment_in(Lang::En, &t, wib), "17 Aug 2026 10:05 WIB");
    }

    #[test]
    fn the_language_comes_from_the_cookie_then_the_browser() {
        let mut h = HeaderMap::new();
        assert_eq!(Lang::of(&h), Lang::En);
        h.insert(
            header::ACCEPT_LANGUAGE,
            "id-ID,id;q=0.9,en;q=0.8".parse().unwrap(),
        );
        assert_eq!(Lang::of(&h), Lang::Id);
        h.insert(
            header::ACCEPT_LANGUAGE,
            "fr-FR, en-US;q=0.5, id;q=0.1".parse().unwrap(),
        );
        assert_eq!(Lang::of(&h), Lang::En);
        h.insert(header::COOKIE, "ig_lang=id".parse().unwrap());
        assert_eq!(Lang::of(&h), Lang::Id);
        h.insert(header::COOKIE, "ig_lang=xx".parse().unwrap());
        assert_eq!(Lang::of(&h), Lang::En);
    }

    #[test]
    fn plural_and_arguments() {
        assert_eq!(
            text_in(Lang::En, "rows-count", &[("n", Arg::from(1_i64))]),
            "1 row"
        );
        assert_eq!(
            text_in(Lang::En, "rows-count", &[("n", Arg::from(12345_i64))]),
            "12,345 rows"
        );
        assert_eq!(
            text_in(Lang::Id, "rows-count", &[("n", Arg::from(12345_i64))]),
            "12.345 baris"
        );
    }
}
