//! Column mapping suggestions (API.md section 11): for each header of a file,
//! the module columns it could be, ranked, each saying why.
//!
//! Pure: no database, no I/O; the only data is the catalog module handed in
//! and the compiled-in [`Vocabulary`]. A suggestion is only ever offered;
//! applying one is for a person or a saved mapping.
//!
//! Five signals, strongest first:
//!
//! | signal | score |
//! |---|---|
//! | the header is the column's name or an alias, by [`match_header`]'s rules | 1.0 |
//! | people confirmed this header → column before for this module | 0.96–0.99 |
//! | the name or an alias, ignoring case, accents, spacing and punctuation | 0.90 |
//! | the header's words, translated, are the column name's parts | ≤ 0.85 |
//! | the spelling is a few edits from the name or an alias | ≤ 0.85 |
//!
//! What the values look like (phone numbers, dates, amounts, e-mail
//! addresses, yes/no) then raises a candidate whose type fits a little and
//! lowers one it contradicts a lot; on its own it gives at most a weak 0.5.
//! Every score below the people-confirmed band is capped at [`CAP`], so
//! only an exact name reaches 1.0 and a confirmed mapping outranks any guess.
//!
//! ```
//! use importgate::catalog::Catalog;
//! use importgate::validate::suggest::suggest;
//!
//! let catalog = Catalog::builtin();
//! let customers = catalog.get("customers").unwrap();
//! let headers = vec!["Kota".to_string()];
//! let ranked = suggest(customers, &headers, &[], &[]);
//! assert_eq!(ranked[0][0].column, "city");
//! assert_eq!(ranked[0][0].why, "\"Kota\" is Indonesian for city");
//! ```
//!
//! [`match_header`]: super::match_header

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use super::normalize_header;
use crate::catalog::vocabulary::{Language, Vocabulary};
use crate::catalog::{Column, ColumnType, Module};

/// The lowest score offered: below it a guess is noise.
pub const THRESHOLD: f64 = 0.5;
/// The most suggestions offered for one header.
pub const MAX_SUGGESTIONS: usize = 3;
/// The highest score a guess (anything but an exact name or a confirmed
/// mapping) can reach.
pub const CAP: f64 = 0.94;

/// Work per header and per value is bounded whatever the file holds.
const MAX_CHARS: usize = 64;
const MAX_SAMPLES: usize = 20;

const EXACT: f64 = 1.0;
const CONFIRMED: f64 = 0.95;
const CONFIRMED_STEP: f64 = 0.01;
const FOLDED: f64 = 0.9;
const WORDS: f64 = 0.85;
const SPELLING: f64 = 0.85;
const VALUES_ONLY: f64 = 0.5;
const FITS: f64 = 0.05;
const CONTRADICTS: f64 = 0.3;
/// A second signal is named in the why only when it is this sure itself.
const SECOND_REASON: f64 = 0.7;
/// A weak part (a unit, "no", "at") weighs this much against a strong one.
const WEAK: f64 = 0.3;
/// A share of values that makes a shape the column's.
const SHAPE_SHARE: f64 = 0.8;
/// Name parts that make a text column a phone or an e-mail column.
const PHONE_PARTS: &[&str] = &["phone", "wa", "whatsapp", "hp", "mobile", "telp", "telepon"];
const EMAIL_PARTS: &[&str] = &["email", "mail", "surel"];

/// One column a header could be.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct Suggestion {
    /// The module column.
    pub column: String,
    /// How sure, from 0 to 1, rounded to 2 decimals; 1 only for an exact name.
    pub score: f64,
    /// The strongest reasons, in plain English.
    pub why: String,
}

/// A mapping a person confirmed before for this module: the file header as
/// written → a column, and how many times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmed {
    pub header: String,
    pub column: String,
    pub times: u32,
}

/// For each header (same order), the columns it could be: best first, at
/// most [`MAX_SUGGESTIONS`], each scoring at least [`THRESHOLD`]; ties go
/// to the column first in the catalog.
///
/// `samples[i]` are values of header `i`'s column (the first 20 are read;
/// missing or empty: judged by name only). Every header is scored on its
/// own: the caller leaves out columns other headers already took.
pub fn suggest(
    module: &Module,
    headers: &[String],
    samples: &[Vec<String>],
    confirmed: &[Confirmed],
) -> Vec<Vec<Suggestion>> {
    let ctx = Context::new(module, confirmed);
    headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let mut found = ctx.candidates(h, sample(samples, i));
            rank(&mut found);
            found.truncate(MAX_SUGGESTIONS);
            found.into_iter().map(|c| ctx.suggestion(c)).collect()
        })
        .collect()
}

/// For each column named in `missing` (in that order), the best header not
/// in `taken_headers` (positions in `headers`), if one reaches
/// [`THRESHOLD`]: `(column, header as written, suggestion)`. Greedy by
/// score, so a header is offered for one column only; names that are not
/// columns of the module are skipped.
pub fn best_for(
    module: &Module,
    headers: &[String],
    samples: &[Vec<String>],
    confirmed: &[Confirmed],
    missing: &[&str],
    taken_headers: &[usize],
) -> Vec<(String, String, Suggestion)> {
    let ctx = Context::new(module, confirmed);
    let wanted: Vec<usize> = missing
        .iter()
        .filter_map(|m| module.column_index(m))
        .collect();
    // (score, position in `wanted`, header, candidate)
    let mut pairs = Vec::new();
    for (h, header) in headers.iter().enumerate() {
        if taken_headers.contains(&h) {
            continue;
        }
        for c in ctx.candidates(header, sample(samples, h)) {
            if let Some(w) = wanted.iter().position(|&col| col == c.column) {
                pairs.push((round(c.score), w, h, c));
            }
        }
    }
    pairs.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut chosen: Vec<Option<(usize, Candidate)>> = vec![None; wanted.len()];
    let mut used = vec![false; headers.len()];
    for (_, w, h, c) in pairs {
        if chosen[w].is_none() && !used[h] {
            used[h] = true;
            chosen[w] = Some((h, c));
        }
    }
    chosen
        .into_iter()
        .flatten()
        .map(|(h, c)| {
            let s = ctx.suggestion(c);
            (s.column.clone(), headers[h].clone(), s)
        })
        .collect()
}

fn sample(samples: &[Vec<String>], i: usize) -> &[String] {
    samples.get(i).map(Vec::as_slice).unwrap_or(&[])
}

/// Best first; equal rounded scores in catalog order.
fn rank(found: &mut [Candidate]) {
    found.sort_by(|a, b| {
        round(b.score)
            .total_cmp(&round(a.score))
            .then(a.column.cmp(&b.column))
    });
}

fn round(score: f64) -> f64 {
    (score.clamp(0.0, 1.0) * 100.0).round() / 100.0
}

/// A column a header could be, before ranking.
#[derive(Debug, Clone)]
struct Candidate {
    column: usize,
    score: f64,
    why: String,
}

/// One reason for a candidate.
#[derive(Debug)]
struct Signal {
    score: f64,
    why: String,
    /// Confirmed mappings are people's word: values do not move them.
    confirmed: bool,
}

/// What a column's values should look like, from its type and name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Date,
    Number,
    Boolean,
    Phone,
    Email,
    /// Any text: values neither support nor contradict it.
    Text,
}

impl Kind {
    fn of(column: &Column) -> Kind {
        match column.ty {
            ColumnType::Date | ColumnType::Timestamptz => Kind::Date,
            ColumnType::Integer | ColumnType::Bigint | ColumnType::Numeric => Kind::Number,
            ColumnType::Boolean => Kind::Boolean,
            ColumnType::Text => {
                let has =
                    |list: &[&str]| names(column).any(|n| n.split('_').any(|p| list.contains(&p)));
                if has(PHONE_PARTS) {
                    Kind::Phone
                } else if has(EMAIL_PARTS) {
                    Kind::Email
                } else {
                    Kind::Text
                }
            }
        }
    }

    /// The shape of value this kind wants, if any.
    fn wants(self) -> Option<Shape> {
        match self {
            Kind::Date => Some(Shape::Date),
            Kind::Number => Some(Shape::Amount),
            Kind::Boolean => Some(Shape::YesNo),
            Kind::Phone => Some(Shape::Phone),
            Kind::Email => Some(Shape::Email),
            Kind::Text => None,
        }
    }
}

fn names(column: &Column) -> impl Iterator<Item = &str> {
    std::iter::once(column.name.as_str()).chain(column.aliases.iter().map(String::as_str))
}

/// A column's name or one alias, prepared for comparison.
#[derive(Debug)]
struct Target {
    /// As written in the catalog.
    name: String,
    alias: bool,
    /// By `match_header`'s rules.
    exact: String,
    folded: String,
    /// Canonical parts with their weights.
    parts: Vec<(String, f64)>,
}

#[derive(Debug)]
struct ColumnInfo {
    name: String,
    kind: Kind,
    targets: Vec<Target>,
}

/// Everything about the module prepared once per call, not per header.
struct Context {
    vocabulary: &'static Vocabulary,
    columns: Vec<ColumnInfo>,
    /// Folded header, column position, times (merged per header and column).
    confirmed: Vec<(String, usize, u32)>,
}

impl Context {
    fn new(module: &Module, confirmed: &[Confirmed]) -> Context {
        let vocabulary = Vocabulary::builtin();
        let columns = module
            .columns
            .iter()
            .map(|c| ColumnInfo {
                name: c.name.clone(),
                kind: Kind::of(c),
                targets: targets(c, vocabulary),
            })
            .collect();
        Context {
            vocabulary,
            columns,
            confirmed: merge_confirmed(module, confirmed),
        }
    }

    fn suggestion(&self, c: Candidate) -> Suggestion {
        Suggestion {
            column: self.columns[c.column].name.clone(),
            score: round(c.score),
            why: c.why,
        }
    }

    /// Every column this header could be, at or above the threshold.
    fn candidates(&self, header: &str, samples: &[String]) -> Vec<Candidate> {
        let Some(h) = Header::read(header, self.vocabulary) else {
            return vec![];
        };
        let shapes = Shapes::of(samples);
        let values_only = self.values_only_column(shapes);
        (0..self.columns.len())
            .filter_map(|i| self.score(&h, i, shapes, values_only == Some(i)))
            .filter(|c| round(c.score) >= THRESHOLD)
            .collect()
    }

    /// The one column whose kind the values fit, when exactly one does and
    /// the shape says something (amounts fit too many columns).
    fn values_only_column(&self, shapes: Option<Shapes>) -> Option<usize> {
        let shapes = shapes?;
        let mut fitting = self.columns.iter().enumerate().filter(|(_, c)| {
            c.kind != Kind::Number && c.kind.wants().is_some_and(|s| shapes.has(s))
        });
        let first = fitting.next()?;
        fitting.next().is_none().then_some(first.0)
    }

    fn score(
        &self,
        h: &Header,
        col: usize,
        shapes: Option<Shapes>,
        alone: bool,
    ) -> Option<Candidate> {
        let info = &self.columns[col];
        if let Some(why) = exact(h, info) {
            return Some(Candidate {
                column: col,
                score: EXACT,
                why,
            });
        }
        let mut signals: Vec<Signal> = [
            self.confirmed_signal(h, col),
            folded(h, info),
            words(h, info),
            spelling(h, info),
        ]
        .into_iter()
        .flatten()
        .collect();
        // Stable: equal scores keep the order of strength above.
        signals.sort_by(|a, b| b.score.total_cmp(&a.score));
        let fit = Fit::of(info.kind, shapes);
        match signals.first() {
            Some(best) => Some(combine(col, info.kind, best, signals.get(1), fit)),
            None if alone && fit == Fit::Fits => Some(Candidate {
                column: col,
                score: VALUES_ONLY,
                why: fit.note(info.kind).unwrap_or_default(),
            }),
            None => None,
        }
    }

    fn confirmed_signal(&self, h: &Header, col: usize) -> Option<Signal> {
        let times = self
            .confirmed
            .iter()
            .find(|(header, c, _)| *c == col && *header == h.folded)?
            .2;
        let why = match times {
            1 => "confirmed once before for this module".to_string(),
            n => format!("confirmed {n} times before for this module"),
        };
        let steps = f64::from(times.min(4));
        Some(Signal {
            score: CONFIRMED + CONFIRMED_STEP * steps,
            why,
            confirmed: true,
        })
    }
}

/// The best signal sets the score; values move it unless people confirmed
/// it; the why names the best signal, a second different one, and the values.
fn combine(col: usize, kind: Kind, best: &Signal, second: Option<&Signal>, fit: Fit) -> Candidate {
    let mut why = vec![best.why.clone()];
    if let Some(s) = second.filter(|s| s.score >= SECOND_REASON) {
        why.push(s.why.clone());
    }
    let score = if best.confirmed {
        best.score
    } else {
        let moved = match fit {
            Fit::Fits => best.score + FITS,
            Fit::Contradicts(_) => best.score - CONTRADICTS,
            Fit::Neutral => best.score,
        };
        moved.min(CAP)
    };
    if !best.confirmed {
        why.extend(fit.note(kind));
    }
    Candidate {
        column: col,
        score,
        why: why.join("; "),
    }
}

fn targets(column: &Column, vocabulary: &Vocabulary) -> Vec<Target> {
    names(column)
        .enumerate()
        .map(|(i, name)| {
            let folded = fold(name);
            let parts = folded
                .split('_')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let weight = if vocabulary.is_weak(p) { WEAK } else { 1.0 };
                    (canon(p).to_string(), weight)
                })
                .collect();
            Target {
                name: name.to_string(),
                alias: i > 0,
                exact: normalize_header(name),
                folded,
                parts,
            }
        })
        .collect()
}

fn merge_confirmed(module: &Module, confirmed: &[Confirmed]) -> Vec<(String, usize, u32)> {
    let mut out: Vec<(String, usize, u32)> = Vec::new();
    for c in confirmed.iter().filter(|c| c.times > 0) {
        let Some(col) = module.column_index(&c.column) else {
            continue;
        };
        let header = fold(&c.header);
        match out.iter_mut().find(|(h, i, _)| *h == header && *i == col) {
            Some(entry) => entry.2 = entry.2.saturating_add(c.times),
            None => out.push((header, col, c.times)),
        }
    }
    out
}

/// A header read once: as shown, by `match_header`'s rules, folded, and as
/// translated words.
struct Header {
    /// Trimmed and cut to [`MAX_CHARS`], for explanations.
    shown: String,
    /// `None` when the header was too long to be any name.
    exact: Option<String>,
    folded: String,
    /// Folded with camelCase split (`customerName`), when that differs:
    /// tried besides `folded`, as `WhatsApp` must stay one word.
    camel: Option<String>,
    /// The translated words of each folded form.
    terms: Vec<Vec<Term>>,
}

/// A word or phrase of a header with what it may mean.
struct Term {
    /// Canonical parts it may mean, itself included.
    means: Vec<String>,
    /// Set when the vocabulary translated it.
    language: Option<Language>,
}

impl Header {
    fn read(header: &str, vocabulary: &Vocabulary) -> Option<Header> {
        let trimmed = header.trim();
        let mut chars = trimmed.chars();
        let shown: String = chars.by_ref().take(MAX_CHARS).collect();
        let cut = chars.next().is_some();
        let exact = normalize_header(&shown);
        if exact.is_empty() {
            return None;
        }
        let folded = fold(&shown);
        let camel = Some(fold_camel(&shown)).filter(|c| *c != folded);
        let terms = std::iter::once(&folded)
            .chain(&camel)
            .map(|f| terms(f, vocabulary))
            .collect();
        Some(Header {
            shown,
            exact: (!cut).then_some(exact),
            folded,
            camel,
            terms,
        })
    }
}

/// Splits a folded header into words, joining the longest phrases the
/// vocabulary knows, and looks each up.
fn terms(folded: &str, vocabulary: &Vocabulary) -> Vec<Term> {
    let words: Vec<&str> = folded.split('_').filter(|w| !w.is_empty()).collect();
    let mut out = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let longest = vocabulary.longest_phrase().min(words.len() - i);
        let (n, found) = (2..=longest)
            .rev()
            .find_map(|n| {
                vocabulary
                    .lookup(&words[i..i + n].join("_"))
                    .map(|f| (n, Some(f)))
            })
            .unwrap_or((1, vocabulary.lookup(words[i])));
        let mut means = vec![canon(&words[i..i + n].join("_")).to_string()];
        let language = found.map(|(language, meanings)| {
            means.extend(meanings.iter().map(|m| canon(m).to_string()));
            language
        });
        out.push(Term { means, language });
        i += n;
    }
    out
}

/// Lowercase, accents removed, every run of anything but letters and
/// digits one `_`: `No. WA` → `no_wa`, `Café` → `cafe`.
fn fold(s: &str) -> String {
    fold_with(s, false)
}

/// [`fold`], and camelCase split: `NamaPelanggan` → `nama_pelanggan`.
fn fold_camel(s: &str) -> String {
    fold_with(s, true)
}

fn fold_with(s: &str, camel: bool) -> String {
    let mut out = String::with_capacity(s.len().min(4 * MAX_CHARS));
    let (mut gap, mut lower) = (false, false);
    for c in s
        .chars()
        .take(MAX_CHARS)
        .nfkd()
        .filter(|&c| !is_combining_mark(c))
    {
        if !c.is_alphanumeric() {
            (gap, lower) = (true, false);
            continue;
        }
        if (gap || (camel && lower && c.is_uppercase())) && !out.is_empty() {
            out.push('_');
        }
        out.extend(c.to_lowercase());
        (gap, lower) = (false, c.is_lowercase());
    }
    out
}

/// English plurals compare equal to their singular: notes ≈ note.
fn canon(part: &str) -> &str {
    match part.strip_suffix('s') {
        Some(stem) if stem.len() >= 3 && !stem.ends_with('s') => stem,
        _ => part,
    }
}

/// The name or an alias, by `match_header`'s rules.
fn exact(h: &Header, info: &ColumnInfo) -> Option<String> {
    let e = h.exact.as_ref()?;
    let t = info.targets.iter().find(|t| t.exact == *e)?;
    Some(if t.alias {
        format!("an alias of {}", info.name)
    } else {
        "the name of the column".to_string()
    })
}

/// The name or an alias once case, accents, spacing and punctuation are
/// set aside.
fn folded(h: &Header, info: &ColumnInfo) -> Option<Signal> {
    let (t, read) = info.targets.iter().find_map(|t| {
        let read = std::iter::once(&h.folded)
            .chain(&h.camel)
            .find(|f| **f == t.folded)?;
        Some((t, read))
    })?;
    let of = if t.alias {
        format!("an alias of {}", info.name)
    } else {
        format!("the name of {}", info.name)
    };
    Some(Signal {
        score: FOLDED,
        why: format!(
            "{:?} reads as \"{}\", {of}",
            h.shown,
            read.replace('_', " ")
        ),
        confirmed: false,
    })
}

/// How much of a name the header's translated words cover.
#[derive(Debug)]
struct Cover {
    score: f64,
    full: bool,
    parts: Vec<String>,
    language: Option<Language>,
}

/// The header's words, translated, against the parts of the name and of
/// each alias: mostly how much of the name they cover, partly how many of
/// the header's words found a place.
fn words(h: &Header, info: &ColumnInfo) -> Option<Signal> {
    let (best, t) = info
        .targets
        .iter()
        .flat_map(|t| {
            h.terms
                .iter()
                .filter_map(move |terms| Some((cover(terms, t)?, t)))
        })
        .max_by(|a, b| {
            a.0.score
                .total_cmp(&b.0.score)
                .then(std::cmp::Ordering::Greater)
        })?;
    let what = match best.language {
        Some(Language::Indonesian) => "is Indonesian for",
        Some(Language::English) => "means",
        None => "has the words of",
    };
    let target = label(t, info);
    let why = if best.full {
        format!("{:?} {what} {target}", h.shown)
    } else {
        format!(
            "{:?} {what} \"{}\", as in {target}",
            h.shown,
            best.parts.join(" ")
        )
    };
    Some(Signal {
        score: best.score,
        why,
        confirmed: false,
    })
}

fn cover(terms: &[Term], t: &Target) -> Option<Cover> {
    if terms.is_empty() || t.parts.is_empty() {
        return None;
    }
    let (mut covered, mut total, mut parts, mut language) = (0.0, 0.0, Vec::new(), None);
    let mut full = true;
    let mut used = vec![false; terms.len()];
    for (part, weight) in &t.parts {
        total += weight;
        let found = terms.iter().position(|term| term.means.contains(part));
        // Missing only a unit or "no" still names the column.
        full &= found.is_some() || *weight < 1.0;
        if let Some(i) = found {
            covered += weight;
            parts.push(part.clone());
            used[i] = true;
            // Named Indonesian when any Indonesian word helped.
            language = match (language, terms[i].language) {
                (Some(Language::Indonesian), _) | (_, None) => language,
                (_, found) => found,
            };
        }
    }
    if parts.is_empty() {
        return None;
    }
    let of_name = covered / total;
    let of_header = used.iter().filter(|&&u| u).count() as f64 / terms.len() as f64;
    Some(Cover {
        score: WORDS * (0.6 * of_name + 0.4 * of_header),
        full,
        parts,
        language,
    })
}

/// A few edits from the name or an alias: a typo, not a different word.
fn spelling(h: &Header, info: &ColumnInfo) -> Option<Signal> {
    let header_len = h.folded.chars().count();
    let (edits, similarity, t) = info
        .targets
        .iter()
        .filter_map(|t| {
            let len = header_len.max(t.folded.chars().count());
            // Short words are too easily one edit from another word.
            if len < 5 || header_len.abs_diff(t.folded.chars().count()) > max_edits(len) {
                return None;
            }
            let d = strsim::osa_distance(&h.folded, &t.folded);
            (d > 0 && d <= max_edits(len)).then(|| (d, 1.0 - d as f64 / len as f64, t))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1).then(std::cmp::Ordering::Greater))?;
    let plural = if edits == 1 { "edit" } else { "edits" };
    let like = label(t, info);
    Some(Signal {
        score: SPELLING * similarity,
        why: format!("spelled like {like} ({edits} {plural})"),
        confirmed: false,
    })
}

/// The column, or the alias and its column.
fn label(t: &Target, info: &ColumnInfo) -> String {
    if t.alias {
        format!("\"{}\", an alias of {}", t.name, info.name)
    } else {
        info.name.clone()
    }
}

fn max_edits(len: usize) -> usize {
    match len {
        0..=7 => 1,
        8..=12 => 2,
        _ => 3,
    }
}

/// Whether a column's values support its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fit {
    Fits,
    /// The shape the kind wanted.
    Contradicts(Shape),
    Neutral,
}

impl Fit {
    fn of(kind: Kind, shapes: Option<Shapes>) -> Fit {
        match (kind.wants(), shapes) {
            (Some(want), Some(shapes)) if shapes.has(want) => Fit::Fits,
            (Some(want), Some(_)) => Fit::Contradicts(want),
            _ => Fit::Neutral,
        }
    }

    fn note(self, kind: Kind) -> Option<String> {
        match self {
            Fit::Fits => kind
                .wants()
                .map(|s| format!("values look like {}", s.plural())),
            Fit::Contradicts(want) => {
                Some(format!("but the values do not look like {}", want.plural()))
            }
            Fit::Neutral => None,
        }
    }
}

/// The recognised shapes of a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Email,
    Phone,
    Date,
    YesNo,
    Amount,
}

impl Shape {
    const ALL: [Shape; 5] = [
        Shape::Email,
        Shape::Phone,
        Shape::Date,
        Shape::YesNo,
        Shape::Amount,
    ];

    fn bit(self) -> u8 {
        1 << (self as u8)
    }

    fn plural(self) -> &'static str {
        match self {
            Shape::Email => "e-mail addresses",
            Shape::Phone => "phone numbers",
            Shape::Date => "dates",
            Shape::YesNo => "yes/no",
            Shape::Amount => "amounts",
        }
    }

    fn fits(self, v: &str) -> bool {
        match self {
            Shape::Email => is_email(v),
            Shape::Phone => is_phone(v),
            Shape::Date => is_date(v),
            Shape::YesNo => is_yes_no(v),
            Shape::Amount => is_amount(v),
        }
    }
}

/// The shapes most of a column's values share (a set: `1` is yes/no and
/// an amount).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shapes(u8);

impl Shapes {
    /// `None` when there is nothing to judge by.
    fn of(samples: &[String]) -> Option<Shapes> {
        let values: Vec<String> = samples
            .iter()
            .take(MAX_SAMPLES)
            .map(|v| v.trim().chars().take(MAX_CHARS).collect::<String>())
            .filter(|v| !v.is_empty() && v != "-")
            .collect();
        if values.is_empty() {
            return None;
        }
        let need = (values.len() as f64 * SHAPE_SHARE).ceil() as usize;
        let bits = Shape::ALL
            .into_iter()
            .filter(|s| values.iter().filter(|v| s.fits(v)).count() >= need)
            .fold(0, |bits, s| bits | s.bit());
        Some(Shapes(bits))
    }

    fn has(self, shape: Shape) -> bool {
        self.0 & shape.bit() != 0
    }
}

fn is_email(v: &str) -> bool {
    let Some((local, domain)) = v.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !v.chars().any(char::is_whitespace)
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
}

/// Indonesian numbers as people write them: 08…, +62…, 62…, with spaces,
/// dashes or brackets; 9 to 15 digits.
fn is_phone(v: &str) -> bool {
    let (plus, rest) = match v.strip_prefix('+') {
        Some(rest) => (true, rest),
        None => (false, v),
    };
    if !rest
        .chars()
        .all(|c| c.is_ascii_digit() || " -()".contains(c))
    {
        return false;
    }
    let digits: String = rest.chars().filter(char::is_ascii_digit).collect();
    // A plain 62… number of 9 digits is more likely 625 million rupiah.
    (9..=15).contains(&digits.len())
        && (plus || digits.starts_with('0') || (digits.starts_with("62") && digits.len() >= 10))
}

/// ISO (`2024-03-05`, a time may follow) or day/month/year with `/`, `-`
/// or `.` and a 2- or 4-digit year.
fn is_date(v: &str) -> bool {
    let day = v.split([' ', 'T']).next().unwrap_or("");
    let parts: Vec<&str> = day.split(['/', '-', '.']).collect();
    let [a, b, c] = parts.as_slice() else {
        return false;
    };
    let num = |s: &str, len: std::ops::RangeInclusive<usize>| {
        (len.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    let day_month = |d: u32, m: u32| (1..=31).contains(&d) && (1..=12).contains(&m);
    if let (Some(_), Some(m), Some(d)) = (num(a, 4..=4), num(b, 1..=2), num(c, 1..=2)) {
        return day_month(d, m);
    }
    match (num(a, 1..=2), num(b, 1..=2), num(c, 2..=4)) {
        (Some(x), Some(y), Some(_)) if c.len() != 3 => day_month(x, y) || day_month(y, x),
        _ => false,
    }
}

/// Money and counts: `150000`, `1.500.000`, `1,500,000.50`, `Rp 25.000,-`.
fn is_amount(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    let s = lower
        .strip_prefix("rp")
        .or_else(|| lower.strip_prefix("idr"))
        .unwrap_or(&lower)
        .trim_start_matches(['.', ' '])
        .trim_end_matches(",-")
        .trim_start_matches('-');
    let s = strip_decimals(s);
    if s.is_empty() || !s.starts_with(|c: char| c.is_ascii_digit()) {
        return false;
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        // A leading zero is an identifier or a phone number, not an amount.
        return s.len() == 1 || !s.starts_with('0');
    }
    grouped(s)
}

/// Drops a decimal part of one or two digits after the last `.` or `,`.
fn strip_decimals(s: &str) -> &str {
    match s.rfind(['.', ',']) {
        Some(i)
            if (2..=3).contains(&(s.len() - i))
                && s[i + 1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            &s[..i]
        }
        _ => s,
    }
}

/// Thousands groups with one separator: `1.500.000`, `12,000`.
fn grouped(s: &str) -> bool {
    let Some(sep) = s.chars().find(|c| *c == '.' || *c == ',') else {
        return false;
    };
    let mut groups = s.split(sep);
    let first = groups.next().unwrap_or("");
    (1..=3).contains(&first.len())
        && !first.starts_with('0')
        && first.bytes().all(|b| b.is_ascii_digit())
        && groups.all(|g| g.len() == 3 && g.bytes().all(|b| b.is_ascii_digit()))
}

fn is_yes_no(v: &str) -> bool {
    const WORDS: &[&str] = &[
        "ya", "iya", "tidak", "yes", "no", "true", "false", "y", "n", "1", "0",
    ];
    WORDS.iter().any(|w| v.eq_ignore_ascii_case(w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn columns(ranked: &[Suggestion]) -> Vec<&str> {
        ranked.iter().map(|s| s.column.as_str()).collect()
    }

    /// The best column of each header, "-" where none.
    fn best(module: &str, headers: &[&str], samples: &[Vec<String>]) -> Vec<String> {
        let catalog = Catalog::builtin();
        let ranked = suggest(
            catalog.get(module).unwrap(),
            &strings(headers),
            samples,
            &[],
        );
        ranked
            .iter()
            .map(|r| r.first().map_or("-".into(), |s| s.column.clone()))
            .collect()
    }

    #[test]
    fn customers_from_an_indonesian_crm_export() {
        let catalog = Catalog::builtin();
        let headers = strings(&["Nama Pelanggan", "No. WA", "Kota", "Catatan"]);
        let samples = vec![
            strings(&["Budi Santoso", "Siti Aminah"]),
            strings(&["0812-3456-7890", "+62 813 1111 2222", "6285712345678"]),
            strings(&["Surabaya", "Bandung"]),
            strings(&["pelanggan lama", ""]),
        ];
        let ranked = suggest(catalog.get("customers").unwrap(), &headers, &samples, &[]);
        let got: Vec<(&str, f64, &str)> = ranked
            .iter()
            .map(|r| (r[0].column.as_str(), r[0].score, r[0].why.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("customer_name", 1.0, "an alias of customer_name"),
                (
                    "wa_number",
                    0.94,
                    "\"No. WA\" reads as \"no wa\", an alias of wa_number; \
                     \"No. WA\" is Indonesian for wa_number; values look like phone numbers"
                ),
                ("city", 0.85, "\"Kota\" is Indonesian for city"),
                ("notes", 0.85, "\"Catatan\" is Indonesian for notes"),
            ]
        );
    }

    #[test]
    fn orders_from_a_marketplace_export() {
        let samples = vec![
            strings(&["SO-2024-0001", "SO-2024-0002"]),
            strings(&["BRG-001", "BRG-017"]),
            strings(&["2", "10", "1"]),
            strings(&["Rp 150.000", "1.250.000", "75000"]),
            strings(&["05/03/2024", "2024-03-06", "7/3/24"]),
        ];
        let headers = [
            "No Pesanan",
            "Kode Barang",
            "Jumlah",
            "Total (Rp)",
            "Tgl Pesan",
        ];
        assert_eq!(
            best("orders", &headers, &samples),
            ["order_no", "sku", "qty", "amount_idr", "order_date"]
        );
        let catalog = Catalog::builtin();
        let ranked = suggest(
            catalog.get("orders").unwrap(),
            &strings(&headers),
            &samples,
            &[],
        );
        assert_eq!(ranked[2][0].why, "an alias of qty");
        assert_eq!(
            ranked[4][0].why,
            "\"Tgl Pesan\" is Indonesian for order_date; values look like dates"
        );
        assert!(
            ranked[3][0].why.ends_with("values look like amounts"),
            "{:?}",
            ranked[3]
        );
    }

    #[test]
    fn a_misspelt_name_is_suggested_with_its_edits() {
        let catalog = Catalog::builtin();
        let customers = catalog.get("customers").unwrap();
        let ranked = suggest(customers, &strings(&["cusotmer_name"]), &[], &[]);
        assert_eq!(ranked[0][0].column, "customer_name");
        assert!(ranked[0][0].score >= 0.7, "{:?}", ranked[0]);
        assert_eq!(ranked[0][0].why, "spelled like customer_name (1 edit)");
        let alias = suggest(customers, &strings(&["Nama Pelangan"]), &[], &[]);
        assert_eq!(
            alias[0][0].why,
            "spelled like \"nama_pelanggan\", an alias of customer_name (1 edit)"
        );
    }

    #[test]
    fn a_confirmed_mapping_outranks_a_vocabulary_match() {
        let catalog = Catalog::builtin();
        let customers = catalog.get("customers").unwrap();
        let headers = strings(&["Keterangan"]);
        let before = suggest(customers, &headers, &[], &[]);
        assert_eq!(columns(&before[0]), ["notes"]);
        // This team writes the follow-up state under "Keterangan".
        let confirmed = [Confirmed {
            header: "keterangan".into(),
            column: "follow_state".into(),
            times: 3,
        }];
        let after = suggest(customers, &headers, &[], &confirmed);
        assert_eq!(columns(&after[0]), ["follow_state", "notes"]);
        assert_eq!(after[0][0].why, "confirmed 3 times before for this module");
        assert!(after[0][0].score > after[0][1].score);
        // Another module's columns, or no times at all, confirm nothing.
        let stray = [
            Confirmed {
                header: "Keterangan".into(),
                column: "remark".into(),
                times: 5,
            },
            Confirmed {
                header: "Keterangan".into(),
                column: "grade".into(),
                times: 0,
            },
        ];
        assert_eq!(suggest(customers, &headers, &[], &stray), before);
    }

    #[test]
    fn value_shapes_are_recognised_on_their_own() {
        let shape = |values: &[&str]| Shapes::of(&strings(values)).unwrap();
        let phones = shape(&["0812-3456-7890", "+62 813 1111 2222", "(021) 555 1234"]);
        assert!(phones.has(Shape::Phone) && !phones.has(Shape::Amount));
        let dates = shape(&["2024-03-05", "05/03/2024", "5-3-24", "2024-03-05T10:00:00"]);
        assert!(dates.has(Shape::Date) && !dates.has(Shape::Amount));
        let amounts = shape(&[
            "Rp 25.000,-",
            "1.500.000",
            "1,250,000.50",
            "75000",
            "IDR 10.000",
        ]);
        assert!(amounts.has(Shape::Amount) && !amounts.has(Shape::Phone));
        let mails = shape(&["budi@example.co.id", "SITI@mail.com"]);
        assert!(mails.has(Shape::Email));
        let yes_no = shape(&["Ya", "tidak", "Y", "0", "TRUE"]);
        assert!(yes_no.has(Shape::YesNo));
        let text = shape(&["Surabaya", "Bandung", "1.5.2024.7"]);
        assert_eq!(text, Shapes(0));
        assert_eq!(Shapes::of(&strings(&["", " ", "-"])), None);
        // One odd value in five does not change the shape.
        assert!(
            shape(&["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04", "?"]).has(Shape::Date)
        );
    }

    #[test]
    fn values_alone_give_only_a_weak_suggestion() {
        let catalog = Catalog::builtin();
        let customers = catalog.get("customers").unwrap();
        let phones = vec![strings(&["081234567890", "085700001111"])];
        let ranked = suggest(customers, &strings(&["Kolom 3"]), &phones, &[]);
        assert_eq!(ranked[0].len(), 1);
        assert_eq!(ranked[0][0].column, "wa_number");
        assert_eq!(ranked[0][0].score, VALUES_ONLY);
        assert_eq!(ranked[0][0].why, "values look like phone numbers");
        // Amounts fit too many columns to say which.
        let amounts = vec![strings(&["150000", "25000"])];
        let orders = catalog.get("orders").unwrap();
        assert!(suggest(orders, &strings(&["Kolom 3"]), &amounts, &[])[0].is_empty());
    }

    #[test]
    fn values_that_contradict_the_type_lower_a_candidate() {
        let catalog = Catalog::builtin();
        let orders = catalog.get("orders").unwrap();
        let headers = strings(&["Tanggal"]);
        let dates = suggest(orders, &headers, &[strings(&["2024-03-05"])], &[]);
        assert_eq!(dates[0][0].column, "order_date");
        let mails = suggest(orders, &headers, &[strings(&["budi@example.com"])], &[]);
        assert!(
            mails[0].iter().all(|s| s.column != "order_date"),
            "{:?}",
            mails[0]
        );
        let none = suggest(orders, &headers, &[], &[]);
        assert!(none[0][0].score < dates[0][0].score);
    }

    #[test]
    fn an_exact_name_scores_one() {
        let catalog = Catalog::builtin();
        let ranked = suggest(
            catalog.get("products").unwrap(),
            &strings(&[" Price-IDR "]),
            &[],
            &[],
        );
        assert_eq!(ranked[0][0].column, "price_idr");
        assert_eq!(ranked[0][0].score, 1.0);
        assert_eq!(ranked[0][0].why, "the name of the column");
        for r in &ranked[0][1..] {
            assert!(r.score <= CAP, "{r:?}");
        }
    }

    #[test]
    fn headers_fold_case_accents_spacing_and_punctuation() {
        for (header, folded) in [
            ("No. WA", "no_wa"),
            ("Nama-Pelanggan", "nama_pelanggan"),
            ("NamaPelanggan", "namapelanggan"),
            ("  Total (Rp) ", "total_rp"),
            ("Café Tujuan", "cafe_tujuan"),
            ("ＮＡＭＡ", "nama"),
            ("!!!", ""),
        ] {
            assert_eq!(fold(header), folded, "{header}");
        }
        assert_eq!(fold_camel("NamaPelanggan"), "nama_pelanggan");
        assert_eq!(fold_camel("No. WA"), "no_wa");
    }

    #[test]
    fn the_same_input_gives_the_same_output() {
        let catalog = Catalog::builtin();
        let headers = strings(&[
            "Nama",
            "No HP",
            "Kota",
            "Tanggal",
            "Harga",
            "Status",
            "Kode",
            "Jumlah",
            "Catatan",
            "Berat (kg)",
            "Gudang",
            "Pemasok",
            "Email",
            "Aktif",
        ]);
        let samples: Vec<Vec<String>> = headers.iter().map(|_| strings(&["1", "0"])).collect();
        for m in catalog.modules() {
            let once = suggest(m, &headers, &samples, &[]);
            let again = suggest(m, &headers, &samples, &[]);
            assert_eq!(once, again, "{}", m.key);
            for ranked in &once {
                assert!(ranked.len() <= MAX_SUGGESTIONS);
                assert!(ranked.windows(2).all(|w| w[0].score >= w[1].score));
                assert!(ranked.iter().all(|s| (THRESHOLD..=1.0).contains(&s.score)));
            }
        }
    }

    #[test]
    fn best_for_offers_a_header_for_one_column_only() {
        let catalog = Catalog::builtin();
        let orders = catalog.get("orders").unwrap();
        let headers = strings(&["No Pesanan", "Jumlah", "Nilai"]);
        let missing = ["qty", "amount_idr", "order_date", "nonsense"];
        let got = best_for(orders, &headers, &[], &[], &missing, &[]);
        let pairs: Vec<(&str, &str)> = got
            .iter()
            .map(|(c, h, _)| (c.as_str(), h.as_str()))
            .collect();
        // "Jumlah" could be qty or amount_idr: it goes to qty, its best.
        assert_eq!(pairs, [("qty", "Jumlah"), ("amount_idr", "Nilai")]);
        assert_eq!(got[0].2.column, "qty");
        // A header already taken is not offered.
        let got = best_for(orders, &headers, &[], &[], &missing, &[1]);
        let pairs: Vec<(&str, &str)> = got
            .iter()
            .map(|(c, h, _)| (c.as_str(), h.as_str()))
            .collect();
        assert_eq!(pairs, [("amount_idr", "Nilai")]);
    }

    #[test]
    fn odd_input_neither_panics_nor_takes_long() {
        let catalog = Catalog::builtin();
        let customers = catalog.get("customers").unwrap();
        assert!(suggest(customers, &[], &[], &[]).is_empty());
        let odd = vec![
            String::new(),
            "   ".into(),
            "\u{0}\u{301}".into(),
            "🙂🙂".into(),
            "nama".repeat(250_000),
            "0".repeat(100),
        ];
        let samples = vec![vec!["x".repeat(100_000); 50]];
        let ranked = suggest(customers, &odd, &samples, &[]);
        assert_eq!(ranked.len(), odd.len());
        assert!(ranked[0].is_empty() && ranked[1].is_empty());
        assert!(best_for(customers, &odd, &samples, &[], &["wa_number"], &[99]).len() <= 1);

        let headers: Vec<String> = (0..200)
            .map(|i| format!("Kolom Nama Pelanggan {i}"))
            .collect();
        let samples: Vec<Vec<String>> =
            (0..200).map(|_| strings(&["0812-3456-7890"; 20])).collect();
        let started = std::time::Instant::now();
        for m in catalog.modules() {
            suggest(m, &headers, &samples, &[]);
        }
        // 26 modules × 200 headers; milliseconds each in a release build.
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
}
