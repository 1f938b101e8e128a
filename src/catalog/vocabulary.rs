//! The words people write in file headers, Indonesian and English, and the
//! parts of catalog column names they mean: the data behind column mapping
//! suggestions (`validate::suggest`).
//!
//! Like the catalog, it is data compiled into the binary
//! (`vocabulary.toml`), read once and checked when read, so the matcher can
//! trust every word it looks up.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::Deserialize;

use super::CatalogError;

/// The vocabulary shipped with the binary.
const BUILTIN: &str = include_str!("vocabulary.toml");

static BUILTIN_VOCABULARY: LazyLock<Vocabulary> = LazyLock::new(|| {
    // Checked by a unit test: failing here is a build defect.
    Vocabulary::from_toml(BUILTIN).expect("built-in vocabulary is valid")
});

/// The language a word was listed under, named in explanations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    Indonesian,
    English,
}

/// Header words and phrases with the column-name parts they mean.
#[derive(Debug)]
pub struct Vocabulary {
    // BTreeMap: nothing here may depend on hash order.
    words: BTreeMap<String, (Language, Vec<String>)>,
    weak: Vec<String>,
    longest_phrase: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VocabularyFile {
    weak: Vec<String>,
    indonesian: BTreeMap<String, Vec<String>>,
    english: BTreeMap<String, Vec<String>>,
}

impl Vocabulary {
    /// The vocabulary compiled into the binary, read on first use.
    pub fn builtin() -> &'static Vocabulary {
        &BUILTIN_VOCABULARY
    }

    /// Parses and checks a vocabulary file.
    pub fn from_toml(text: &str) -> Result<Vocabulary, CatalogError> {
        let file: VocabularyFile = toml::from_str(text)?;
        let mut words = BTreeMap::new();
        for (language, list) in [
            (Language::Indonesian, file.indonesian),
            (Language::English, file.english),
        ] {
            for (word, meanings) in list {
                check_entry(&word, &meanings)?;
                if words.insert(word.clone(), (language, meanings)).is_some() {
                    return Err(invalid(format!("vocabulary: {word} is listed twice")));
                }
            }
        }
        if let Some(w) = file.weak.iter().find(|w| !is_part(w)) {
            return Err(invalid(format!(
                "vocabulary: weak part {w:?} is not a name part"
            )));
        }
        let longest_phrase = words
            .keys()
            .map(|w| w.split('_').count())
            .max()
            .unwrap_or(1);
        Ok(Vocabulary {
            words,
            weak: file.weak,
            longest_phrase,
        })
    }

    /// What a word or `_`-joined phrase means, and its language.
    pub fn lookup(&self, word: &str) -> Option<(Language, &[String])> {
        self.words.get(word).map(|(l, m)| (*l, m.as_slice()))
    }

    /// Whether a column-name part says little on its own (a unit, "no").
    pub fn is_weak(&self, part: &str) -> bool {
        self.weak.iter().any(|w| w == part)
    }

    /// The most words any phrase has, so lookups know how far to look ahead.
    pub fn longest_phrase(&self) -> usize {
        self.longest_phrase
    }

    /// Every entry, in order: word, language, meanings.
    pub fn entries(&self) -> impl Iterator<Item = (&str, Language, &[String])> {
        self.words
            .iter()
            .map(|(w, (l, m))| (w.as_str(), *l, m.as_slice()))
    }
}

/// A word must be written as headers are read (so that it can be found at
/// all) and mean at least one name part.
fn check_entry(word: &str, meanings: &[String]) -> Result<(), CatalogError> {
    if !word.split('_').all(is_part) {
        return Err(invalid(format!(
            "vocabulary: {word:?} must be lowercase words joined by _"
        )));
    }
    if meanings.is_empty() {
        return Err(invalid(format!("vocabulary: {word} means nothing")));
    }
    if let Some(m) = meanings.iter().find(|m| !is_part(m)) {
        return Err(invalid(format!(
            "vocabulary: {word} means {m:?}, which is not one name part"
        )));
    }
    Ok(())
}

/// One part of a column name: lowercase ASCII letters and digits.
fn is_part(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

fn invalid(msg: String) -> CatalogError {
    CatalogError::Invalid(msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    /// Meanings no built-in column uses but a replacement catalog may.
    const GENERAL: &[&str] = &["code", "email", "item"];

    /// Every meaning names a part of some built-in column or alias, so a
    /// misspelt meaning (which would never match) fails here.
    #[test]
    fn builtin_vocabulary_means_parts_of_the_catalog() {
        let vocabulary = Vocabulary::builtin();
        let catalog = Catalog::builtin();
        let mut parts = std::collections::BTreeSet::new();
        for m in catalog.modules() {
            for c in &m.columns {
                for name in std::iter::once(&c.name).chain(&c.aliases) {
                    parts.extend(name.split('_').map(str::to_string));
                }
            }
        }
        for (word, _, meanings) in vocabulary.entries() {
            for m in meanings {
                assert!(
                    parts.contains(m) || GENERAL.contains(&m.as_str()),
                    "{word} means {m}, which no column has"
                );
            }
        }
        for w in &vocabulary.weak {
            assert!(parts.contains(w), "weak part {w} is in no column");
        }
    }

    #[test]
    fn builtin_vocabulary_knows_the_common_words() {
        let v = Vocabulary::builtin();
        for (word, language, meaning) in [
            ("kota", Language::Indonesian, "city"),
            ("pelanggan", Language::Indonesian, "customer"),
            ("no_hp", Language::Indonesian, "phone"),
            ("tgl", Language::Indonesian, "date"),
            ("surel", Language::Indonesian, "email"),
            ("quantity", Language::English, "qty"),
        ] {
            let (l, m) = v.lookup(word).unwrap_or_else(|| panic!("{word}"));
            assert_eq!(l, language, "{word}");
            assert!(m.iter().any(|x| x == meaning), "{word}");
        }
        assert!(v.is_weak("idr") && !v.is_weak("customer"));
        assert!(v.longest_phrase() >= 2);
    }

    #[test]
    fn a_word_in_two_languages_or_in_the_wrong_form_is_refused() {
        let twice = "weak = []\n[indonesian]\nkota = [\"city\"]\n[english]\nkota = [\"city\"]\n";
        assert!(Vocabulary::from_toml(twice).is_err());
        for bad in [
            "\"Kota\" = [\"city\"]",
            "kota = []",
            "kota = [\"City Name\"]",
        ] {
            let text = format!("weak = []\n[indonesian]\n{bad}\n[english]\n");
            assert!(Vocabulary::from_toml(&text).is_err(), "{bad}");
        }
    }
}
