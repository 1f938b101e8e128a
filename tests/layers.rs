//! The architecture of `docs/architecture.md`, held by the code itself:
//! no circle between the files of `src/`, and no layer reaching into one it
//! must not use (transport into storage, the domain into the service, …).
//!
//! Every `use` and every path in the code (`crate::…`, `super::…`, a child
//! module's name) is resolved to the file of the module it names; an edge
//! from a file to that file is an import. A folder's `mod.rs` is the folder
//! itself: it declares and composes its children, and they may use what it
//! defines, so edges between a module file and its own descendants do not
//! count. Test modules (`#[cfg(test)]`) are left out: they may reach
//! anywhere.
//!
//! Run alone with `cargo nextest run --test layers`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A module path from the crate root (`["store", "rows"]`), and its file.
type ModPath = Vec<String>;

struct Tree {
    /// Every module that has a file of its own.
    files: BTreeMap<ModPath, PathBuf>,
}

impl Tree {
    fn read(src: &Path) -> Tree {
        let mut files = BTreeMap::new();
        walk(src, src, &mut files);
        Tree { files }
    }

    /// The module with a file of its own that `path` lies in: the longest
    /// prefix of `path` that names one.
    fn owner(&self, path: &[String]) -> Option<&ModPath> {
        (1..=path.len())
            .rev()
            .find_map(|n| self.files.get_key_value(&path[..n]).map(|(k, _)| k))
    }

    fn is_module(&self, path: &[String]) -> bool {
        self.files.contains_key(path)
    }
}

fn walk(root: &Path, dir: &Path, files: &mut BTreeMap<ModPath, PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            walk(root, &path, files);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix(root).expect("under src/");
        let mut parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if parts.last().is_some_and(|l| l == "mod") {
            parts.pop();
        }
        if parts == ["lib"] || parts == ["main"] {
            parts.clear();
            if rel == Path::new("main.rs") {
                // The binary is a crate of its own over the library.
                continue;
            }
        }
        files.insert(parts, path);
    }
}

/// The paths one file names, each resolved to a module path.
struct Names<'t> {
    tree: &'t Tree,
    /// The module whose body is being read (an inline module deepens it).
    here: ModPath,
    found: BTreeSet<ModPath>,
    /// The first segment of every path that names no module of the crate
    /// (`std`, `sqlx`, `rusqlite`, a local name).
    outside: BTreeSet<String>,
}

impl Names<'_> {
    /// `segments` as written in module `self.here`, made absolute; `None`
    /// for a path outside the crate (std, another crate, a local name).
    fn resolve(&self, segments: &[String]) -> Option<ModPath> {
        let (first, rest) = segments.split_first()?;
        let mut base = match first.as_str() {
            "crate" | "importgate" => vec![],
            "self" => self.here.clone(),
            "super" => {
                let mut base = self.here.clone();
                base.pop();
                let mut rest = rest;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                return Some(base.into_iter().chain(rest.iter().cloned()).collect());
            }
            _ => {
                let mut child = self.here.clone();
                child.push(first.clone());
                if !self.tree.is_module(&child) {
                    return None;
                }
                return Some(child.into_iter().chain(rest.iter().cloned()).collect());
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn note(&mut self, segments: &[String]) {
        match self.resolve(segments) {
            Some(path) => {
                self.found.insert(path);
            }
            None => {
                if let Some(first) = segments.first() {
                    self.outside.insert(first.clone());
                }
            }
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                if n.ident != "self" {
                    full.push(n.ident.to_string());
                }
                self.note(&full);
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                self.note(&full);
            }
            syn::UseTree::Glob(_) => {
                let full = prefix.clone();
                self.note(&full);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

impl<'ast> Visit<'ast> for Names<'_> {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if !is_test(&item.attrs) {
            self.use_tree(&mut vec![], &item.tree);
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if is_test(&item.attrs) {
            return;
        }
        if let Some((_, items)) = &item.content {
            self.here.push(item.ident.to_string());
            for i in items {
                self.visit_item(i);
            }
            self.here.pop();
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_test(&item.attrs) {
            syn::visit::visit_item_fn(self, item);
        }
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if !is_test(&item.attrs) {
            syn::visit::visit_item_impl(self, item);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            self.note(&segments);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // A macro's own path (`crate::t!`), and the paths inside its
        // tokens as far as they parse as expressions or statements.
        self.visit_path(&mac.path);
        let body = mac.tokens.clone();
        let list = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        if let Ok(expr) = syn::parse2::<syn::Expr>(body.clone()) {
            self.visit_expr(&expr);
        } else if let Ok(exprs) = syn::parse::Parser::parse2(list, body.clone()) {
            for expr in &exprs {
                self.visit_expr(expr);
            }
        } else if let Ok(block) = syn::parse2::<BlockBody>(body) {
            for stmt in &block.0 {
                self.visit_stmt(stmt);
            }
        }
    }
}

struct BlockBody(Vec<syn::Stmt>);

impl syn::parse::Parse for BlockBody {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        syn::Block::parse_within(input).map(BlockBody)
    }
}

/// What one file names: its module's paths, and the first segments of the
/// rest.
fn names_of<'t>(tree: &'t Tree, module: &ModPath, file: &Path) -> Names<'t> {
    let text = std::fs::read_to_string(file).expect("a source file");
    let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut names = Names {
        tree,
        here: module.clone(),
        found: BTreeSet::new(),
        outside: BTreeSet::new(),
    };
    names.visit_file(&parsed);
    names
}

/// File → the files it imports, by module path.
fn imports(tree: &Tree) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let mut graph = BTreeMap::new();
    for (module, file) in &tree.files {
        let names = names_of(tree, module, file);
        let targets: BTreeSet<ModPath> = names
            .found
            .iter()
            .filter_map(|p| tree.owner(p))
            .filter(|t| !t.is_empty())
            .filter(|t| !t.starts_with(module) && !module.starts_with(t))
            .cloned()
            .collect();
        graph.insert(module.clone(), targets);
    }
    graph
}

/// The strongly connected components of more than one node (Tarjan).
fn circles<N: Ord + Clone>(graph: &BTreeMap<N, BTreeSet<N>>) -> Vec<Vec<N>> {
    struct State<'g, N> {
        graph: &'g BTreeMap<N, BTreeSet<N>>,
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        stack: Vec<N>,
        on_stack: BTreeSet<N>,
        found: Vec<Vec<N>>,
    }
    fn visit<N: Ord + Clone>(s: &mut State<'_, N>, v: &N) {
        let i = s.index.len();
        s.index.insert(v.clone(), i);
        s.low.insert(v.clone(), i);
        s.stack.push(v.clone());
        s.on_stack.insert(v.clone());
        for w in s.graph.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v.clone(), low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v.clone(), low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = vec![];
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(&w);
                let done = &w == v;
                component.push(w);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: vec![],
        on_stack: BTreeSet::new(),
        found: vec![],
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn name(m: &ModPath) -> String {
    m.join("::")
}

#[test]
fn no_two_files_import_each_other() {
    let tree = Tree::read(&src());
    let graph = imports(&tree);
    let found: Vec<String> = circles(&graph)
        .iter()
        .map(|c| {
            let files: Vec<String> = c.iter().map(name).collect();
            format!("  {}", files.join(" ↔ "))
        })
        .collect();
    assert!(
        found.is_empty(),
        "circles between files (move what both need to where both may depend on it):\n{}",
        found.join("\n")
    );
}

/// The top-level modules of each layer, top to bottom.
const LAYERS: &[(&str, &[&str])] = &[
    ("transport", &["http", "console", "client", "app"]),
    ("service", &["service", "worker", "demo"]),
    ("work over the store", &["pipeline"]),
    ("storage", &["store"]),
    (
        "domain",
        &[
            "ledger", "catalog", "ingest", "validate", "rules", "keys", "webhooks", "config", "ids",
        ],
    ),
];

/// What a layer must never use, beyond the layers above it.
const NEVER: &[(&str, &[&str])] = &[
    // The front doors talk to the service; neither calls the other.
    ("http", &["store", "pipeline", "console"]),
    ("console", &["store", "pipeline", "http"]),
    ("client", &["store", "pipeline", "service"]),
    // The ledger is pure rules.
    ("ledger", &["store", "pipeline"]),
    ("validate", &["store", "pipeline", "ledger"]),
];

fn layer_of(top: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, mods)| mods.contains(&top))
}

/// Every import against the layers, and every circle between top-level
/// modules, as lines to show.
fn violations(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> BTreeSet<String> {
    let mut wrong = BTreeSet::new();
    for (from, targets) in graph {
        let Some(from_top) = from.first() else {
            continue;
        };
        for to in targets {
            let to_top = &to[0];
            if from_top == to_top {
                continue;
            }
            let up = match (layer_of(from_top), layer_of(to_top)) {
                (Some(a), Some(b)) => b < a,
                _ => false,
            };
            let never = NEVER
                .iter()
                .any(|(m, banned)| m == from_top && banned.contains(&to_top.as_str()));
            if up || never {
                wrong.insert(format!("  {} → {}", name(from), name(to)));
            }
        }
    }
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, targets) in graph {
        if let Some(f) = from.first() {
            let entry = top.entry(f.clone()).or_default();
            entry.extend(targets.iter().map(|t| t[0].clone()).filter(|t| t != f));
        }
    }
    for c in circles(&top) {
        wrong.insert(format!("  modules in a circle: {}", c.join(" ↔ ")));
    }
    wrong
}

#[test]
fn no_layer_reaches_up_or_into_what_it_must_not_use() {
    let graph = imports(&Tree::read(&src()));
    let wrong = violations(&graph);
    assert!(
        wrong.is_empty(),
        "imports against docs/architecture.md's layers:\n{}",
        wrong.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The second SQLite driver (`rusqlite`, with its FFI) stays inside the
/// SQLite store: everything else goes through sqlx.
#[test]
fn only_the_sqlite_store_names_rusqlite() {
    let tree = Tree::read(&src());
    let sqlite = ["store".to_string(), "sqlite".to_string()];
    let naming: Vec<String> = tree
        .files
        .iter()
        .filter(|(module, _)| !module.starts_with(&sqlite))
        .filter(|(module, file)| names_of(&tree, module, file).outside.contains("rusqlite"))
        .map(|(module, _)| name(module))
        .collect();
    assert!(
        naming.is_empty(),
        "rusqlite named outside store::sqlite: {naming:?}"
    );
}

#[test]
fn the_check_sees_a_circle_and_a_reach_into_storage() {
    // The check itself: a made-up tree with a circle and a transport file
    // that names the store must be caught.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path();
    std::fs::create_dir_all(src.join("http")).unwrap();
    std::fs::create_dir_all(src.join("store")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod http; pub mod store;").unwrap();
    std::fs::write(src.join("http/mod.rs"), "pub mod a; pub mod b;").unwrap();
    std::fs::write(
        src.join("http/a.rs"),
        "use super::b::B; pub struct A; fn f() { format!(\"{}\", crate::store::rows::get()); }",
    )
    .unwrap();
    std::fs::write(src.join("http/b.rs"), "pub struct B(super::a::A);").unwrap();
    std::fs::write(src.join("store/mod.rs"), "pub mod rows;").unwrap();
    std::fs::write(src.join("store/rows.rs"), "pub fn get() {}").unwrap();
    let tree = Tree::read(src);
    let graph = imports(&tree);
    let found = circles(&graph);
    assert_eq!(
        found,
        vec![vec![
            vec!["http".to_string(), "a".to_string()],
            vec!["http".to_string(), "b".to_string()]
        ]]
    );
    assert_eq!(
        violations(&graph).into_iter().collect::<Vec<_>>(),
        vec!["  http::a → store::rows".to_string()]
    );
}
