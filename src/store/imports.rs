//! Tests of the store's shape, read from its source: no two files of
//! `src/store` import each other, directly or through others, and no file
//! outside `src/store/sqlite` names `rusqlite`.
//!
//! A file "imports" another when its code (not its comments or strings)
//! names it: a `use` of it or of an item in it, a path through it
//! (`super::x::…`, `crate::store::x::…`, or a module a `use` brought in),
//! or `on_conn!`, which is `db.rs`'s. A parent's `mod` declarations and
//! the re-exports of a `mod.rs` (`pub use`) are not imports: they name
//! what the parent is made of, and callers outside the store reach items
//! through them, never the store's own files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A token of Rust source, comments and strings taken out.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Path,
    Punct(char),
}

/// The tokens of `src`, without comments, string and character literals,
/// and lifetimes.
fn tokens(src: &str) -> Vec<Token> {
    let b = src.as_bytes();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < b.len() {
        let rest = &src[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if let Some(end) = raw_string_end(rest) {
            i += end;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if b[i] == b'\'' {
            i += quoted_len(rest);
        } else if rest.starts_with("::") {
            out.push(Token::Path);
            i += 2;
        } else if is_ident(b[i] as char) {
            let len = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
            out.push(Token::Ident(rest[..len].to_string()));
            i += len;
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            if !c.is_whitespace() {
                out.push(Token::Punct(c));
            }
            i += c.len_utf8();
        }
    }
    out
}

/// The length of the character literal (`'x'`, `'\''`, `'\u{1F600}'`) or
/// lifetime (`'a`, `'_`) starting `s`.
fn quoted_len(s: &str) -> usize {
    let body = &s[1..];
    if let Some(escaped) = body.strip_prefix('\\') {
        let tail = escaped.chars().next().map_or(0, char::len_utf8);
        return 3 + escaped[tail..].find('\'').map_or(0, |e| e + 1);
    }
    let first = body.chars().next().map_or(0, char::len_utf8);
    if body[first..].starts_with('\'') {
        return first + 2;
    }
    1 + body.find(|c: char| !is_ident(c)).unwrap_or(body.len())
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Where a raw string (`r"…"`, `r#"…"#`) starting `s` ends, if one does.
fn raw_string_end(s: &str) -> Option<usize> {
    let hashes = s
        .strip_prefix('r')?
        .bytes()
        .take_while(|&c| c == b'#')
        .count();
    let open = 1 + hashes;
    if s.as_bytes().get(open) != Some(&b'"') {
        return None;
    }
    let close = format!("\"{}", "#".repeat(hashes));
    Some(open + 1 + s[open + 1..].find(&close)? + close.len())
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a source directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            found.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
    found
}

/// A file's module path under `src` (`store/sqlite/lookup.rs`:
/// `store::sqlite::lookup`; `store/stage/mod.rs`: `store::stage`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file
        .strip_prefix(src)
        .expect("under src")
        .with_extension("");
    let mut path: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into()).collect();
    if path.last().is_some_and(|s| s == "mod") {
        path.pop();
    }
    path
}

/// The store's files, each with the store files it imports.
struct Graph {
    modules: BTreeSet<Vec<String>>,
    imports: BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
}

impl Graph {
    fn of(src: &Path) -> Graph {
        let files = sources(&src.join("store"));
        let modules = files.iter().map(|f| module_of(src, f)).collect();
        let mut graph = Graph {
            modules,
            imports: BTreeMap::new(),
        };
        for file in &files {
            let text = std::fs::read_to_string(file).expect("a source file");
            let module = module_of(src, file);
            let is_mod_rs = file.ends_with("mod.rs");
            let found = graph.imports_of(&module, &tokens(&text), is_mod_rs);
            graph.imports.insert(module, found);
        }
        graph
    }

    /// The file module a path names (the longest prefix of it that is one),
    /// `path` read from inside module `here`.
    fn resolve(&self, here: &[String], path: &[String]) -> Option<Vec<String>> {
        let mut full: Vec<String> = match path.first()?.as_str() {
            "crate" => path[1..].to_vec(),
            "self" => here.iter().chain(&path[1..]).cloned().collect(),
            "super" => {
                let ups = path.iter().take_while(|s| *s == "super").count();
                let base = &here[..here.len().checked_sub(ups)?];
                base.iter().chain(&path[ups..]).cloned().collect()
            }
            _ => return None,
        };
        while !full.is_empty() {
            if self.modules.contains(&full) {
                return Some(full);
            }
            full.pop();
        }
        None
    }

    fn imports_of(
        &self,
        module: &[String],
        toks: &[Token],
        is_mod_rs: bool,
    ) -> BTreeSet<Vec<String>> {
        let mut found = BTreeSet::new();
        // Inline modules (`mod tests { … }`) open under the file's own.
        let mut here: Vec<(Vec<String>, usize)> = vec![(module.to_vec(), 0)];
        let mut depth = 0;
        let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut i = 0;
        while i < toks.len() {
            let current = here.last().map(|h| h.0.clone()).unwrap_or_default();
            match &toks[i] {
                Token::Ident(w) if w == "mod" => {
                    if let (Some(Token::Ident(name)), Some(Token::Punct('{'))) =
                        (toks.get(i + 1), toks.get(i + 2))
                    {
                        depth += 1;
                        let mut inner = current.clone();
                        inner.push(name.clone());
                        here.push((inner, depth));
                        i += 3;
                        continue;
                    }
                    // `mod name;`: a child, not an import.
                    i += 3;
                    continue;
                }
                Token::Ident(w) if w == "use" => {
                    let end = (i..toks.len())
                        .find(|&j| toks[j] == Token::Punct(';'))
                        .unwrap_or(toks.len());
                    let reexport = i > 0 && starts_pub(toks, i);
                    if !(is_mod_rs && reexport) {
                        for (path, alias) in use_leaves(&toks[i + 1..end]) {
                            if let Some(target) = self.resolve(&current, &path) {
                                let full = path_full(&current, &path);
                                if target == full {
                                    let absolute = std::iter::once("crate".to_string());
                                    aliases.insert(alias, absolute.chain(full).collect());
                                }
                                found.insert(target);
                            }
                        }
                    }
                    i = end + 1;
                    continue;
                }
                Token::Ident(w)
                    if w == "on_conn" && toks.get(i + 1) == Some(&Token::Punct('!')) =>
                {
                    found.insert(vec!["store".to_string(), "db".to_string()]);
                }
                Token::Ident(first) if toks.get(i + 1) == Some(&Token::Path) => {
                    let mut path = vec![first.clone()];
                    let mut j = i + 1;
                    while let (Some(Token::Path), Some(Token::Ident(next))) =
                        (toks.get(j), toks.get(j + 1))
                    {
                        path.push(next.clone());
                        j += 2;
                    }
                    if let Some(prefix) = aliases.get(first) {
                        path = prefix.iter().chain(&path[1..]).cloned().collect();
                    }
                    if let Some(target) = self.resolve(&current, &path) {
                        found.insert(target);
                    }
                    i = j;
                    continue;
                }
                Token::Punct('{') => depth += 1,
                Token::Punct('}') => {
                    if here.last().is_some_and(|h| h.1 == depth) {
                        here.pop();
                    }
                    depth -= 1;
                }
                _ => {}
            }
            i += 1;
        }
        found.remove(module);
        found
    }
}

/// Whether the `use` at `i` is a re-export (`pub use`, `pub(crate) use`).
fn starts_pub(toks: &[Token], i: usize) -> bool {
    match &toks[i - 1] {
        Token::Ident(w) => w == "pub",
        Token::Punct(')') => toks[..i]
            .iter()
            .rposition(|t| *t == Token::Punct('('))
            .is_some_and(|open| open > 0 && toks[open - 1] == Token::Ident("pub".into())),
        _ => false,
    }
}

/// A path as written, made absolute from `here` (for telling a module
/// brought in by a `use` from an item).
fn path_full(here: &[String], path: &[String]) -> Vec<String> {
    match path.first().map(String::as_str) {
        Some("crate") => path[1..].to_vec(),
        Some("self") => here.iter().chain(&path[1..]).cloned().collect(),
        Some("super") => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let base = &here[..here.len().saturating_sub(ups)];
            base.iter().chain(&path[ups..]).cloned().collect()
        }
        _ => path.to_vec(),
    }
}

/// The paths a `use` tree names, each with the name it is known by.
fn use_leaves(tree: &[Token]) -> Vec<(Vec<String>, String)> {
    let mut leaves = Vec::new();
    leaves_of(tree, &mut Vec::new(), &mut leaves);
    leaves
}

fn leaves_of(tree: &[Token], prefix: &mut Vec<String>, leaves: &mut Vec<(Vec<String>, String)>) {
    let depth0 = prefix.len();
    let mut i = 0;
    while i < tree.len() {
        match &tree[i] {
            Token::Ident(w) if w == "as" => {
                if let (Some(Token::Ident(alias)), Some(last)) =
                    (tree.get(i + 1), leaves.last_mut())
                {
                    last.1 = alias.clone();
                }
                i += 2;
                continue;
            }
            // `a::{self, …}`: the module `a` itself.
            Token::Ident(w) if w == "self" && !prefix.is_empty() => {
                leaves.push((prefix.clone(), prefix.last().cloned().unwrap_or_default()));
            }
            Token::Ident(w) => {
                prefix.push(w.clone());
                if !matches!(tree.get(i + 1), Some(Token::Path)) {
                    leaves.push((prefix.clone(), w.clone()));
                }
            }
            Token::Punct('{') => {
                let mut depth = 0;
                let close = (i..tree.len())
                    .find(|&j| {
                        depth += match tree[j] {
                            Token::Punct('{') => 1,
                            Token::Punct('}') => -1,
                            _ => 0,
                        };
                        depth == 0
                    })
                    .unwrap_or(tree.len());
                for part in tree[i + 1..close].split(|t| *t == Token::Punct(',')) {
                    leaves_of(part, &mut prefix.clone(), leaves);
                }
                i = close;
            }
            Token::Punct('*') => leaves.push((prefix.clone(), String::new())),
            _ => {}
        }
        i += 1;
    }
    prefix.truncate(depth0);
}

/// A cycle of imports, if any: the modules around it.
fn cycle(imports: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Option<Vec<Vec<String>>> {
    fn visit(
        at: &Vec<String>,
        imports: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        done: &mut BTreeSet<Vec<String>>,
        path: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        if let Some(start) = path.iter().position(|p| p == at) {
            return Some(path[start..].to_vec());
        }
        if !done.insert(at.clone()) {
            return None;
        }
        path.push(at.clone());
        for next in imports.get(at).into_iter().flatten() {
            if let Some(found) = visit(next, imports, done, path) {
                return Some(found);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for start in imports.keys() {
        if let Some(found) = visit(start, imports, &mut done, &mut Vec::new()) {
            return Some(found);
        }
    }
    None
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_two_store_files_import_each_other() {
    let graph = Graph::of(&src());
    // The check sees what it must: a backend's file importing a shared one.
    let stage = ["store", "sqlite", "stage"].map(String::from).to_vec();
    let rows = ["store", "rows"].map(String::from).to_vec();
    let shared = ["store", "stage"].map(String::from).to_vec();
    assert!(
        graph.imports[&stage].contains(&shared),
        "{:?}",
        graph.imports[&stage]
    );
    assert!(
        graph.imports[&rows].contains(&stage),
        "{:?}",
        graph.imports[&rows]
    );
    if let Some(around) = cycle(&graph.imports) {
        let names: Vec<String> = around.iter().map(|m| m.join("::")).collect();
        panic!("store files import each other: {}", names.join(" -> "));
    }
}

#[test]
fn a_cycle_is_found_through_a_use_an_alias_and_a_super_path() {
    let graph = Graph {
        modules: [
            vec!["store"],
            vec!["store", "a"],
            vec!["store", "b"],
            vec!["store", "c"],
        ]
        .into_iter()
        .map(|m| m.into_iter().map(String::from).collect())
        .collect(),
        imports: BTreeMap::new(),
    };
    let module = |m: &[&str]| m.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let a = graph.imports_of(
        &module(&["store", "a"]),
        &tokens("use super::{b, c as see};\n fn f() { b::g(); }"),
        false,
    );
    let b = graph.imports_of(&module(&["store", "b"]), &tokens("// super::a::x\n const S: &str = \"super::a\";\n mod t { fn f() { super::super::c::h(); } }"), false);
    let c = graph.imports_of(
        &module(&["store", "c"]),
        &tokens("fn f() { let x = 'a'; crate::store::a::f(); }"),
        false,
    );
    let all: BTreeMap<_, _> = [
        (module(&["store", "a"]), a),
        (module(&["store", "b"]), b),
        (module(&["store", "c"]), c),
    ]
    .into();
    assert_eq!(
        all[&module(&["store", "a"])],
        [module(&["store", "b"]), module(&["store", "c"])].into()
    );
    assert_eq!(
        all[&module(&["store", "b"])],
        [module(&["store", "c"])].into(),
        "comments and strings are not imports"
    );
    assert!(cycle(&all).is_some());
    // A re-export in a mod.rs is not an import.
    let parent = graph.imports_of(
        &module(&["store"]),
        &tokens("mod a;\npub use a::X;\npub(crate) use b::Y;"),
        true,
    );
    assert!(parent.is_empty(), "{parent:?}");
}

#[test]
fn only_the_sqlite_store_names_rusqlite() {
    let src = src();
    let sqlite = src.join("store").join("sqlite");
    let named: Vec<PathBuf> = sources(&src)
        .into_iter()
        .filter(|f| !f.starts_with(&sqlite))
        .filter(|f| {
            let text = std::fs::read_to_string(f).expect("a source file");
            tokens(&text).contains(&Token::Ident("rusqlite".into()))
        })
        .collect();
    assert!(named.is_empty(), "rusqlite named in {named:?}");
}
