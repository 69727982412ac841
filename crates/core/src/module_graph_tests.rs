//! The library's module graph, read from its sources the way the compiler names things: the
//! reader under the layer check (`layers_tests`). It needs no tool and no build.
//!
//! Each file is cut into tokens (comments, strings and char literals dropped, so a path in
//! a doc comment or a message is no arrow), then walked once: `mod name { … }` opens an
//! inline module, `#[cfg(test)]` before a `mod` marks it (and all inside it) as test code,
//! every `use` tree is read whole (over any number of lines, nested `{…}` groups, `self`,
//! `super::`, `crate::`, globs, `as`), and so is every path in code that starts at `crate::`,
//! `super::`, `self::`, a child module or a module a `use` named. Each path is resolved to
//! the module that defines the item, following `pub use` re-exports, and becomes one arrow.

use std::collections::{BTreeMap, BTreeSet};

/// A module's path from the crate root: `[]` is lib.rs, `[ops, build]` is `ops/build/mod.rs`,
/// `[deb, archive, thread_tests]` an inline module of `deb/archive.rs`.
pub(crate) type ModPath = Vec<String>;

/// How an arrow was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// A private `use` (at module level or inside a function).
    Use,
    /// A `pub use` / `pub(crate) use`: a name handed on.
    Reexport,
    /// A path in code: `crate::x::f()`, `super::T`, `child::g()`.
    Code,
}

/// One arrow: the module `from` names an item of the module `to`.
#[derive(Debug, Clone)]
pub(crate) struct Arrow {
    pub(crate) from: ModPath,
    pub(crate) to: ModPath,
    pub(crate) file: String,
    pub(crate) line: usize,
    /// The path as written, `{…}` groups expanded (`crate::ops::build::BuildError`).
    pub(crate) written: String,
    pub(crate) via: Via,
    /// Written in test code (`#[cfg(test)]` modules, test-only files).
    pub(crate) test: bool,
}

impl Arrow {
    /// A module's `pub use` of its own descendants is its face (it hands their names on),
    /// not a dependency: `deb/mod.rs` re-exporting `archive::build_package` does not make
    /// `deb` and `deb::archive` a circle when `archive` uses `deb`'s own `invalid`.
    pub(crate) fn is_face(&self) -> bool {
        self.via == Via::Reexport
            && self.to.len() > self.from.len()
            && self.to.starts_with(&self.from)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// The tokens of a Rust source with their line numbers: identifiers (keywords included),
/// `::` and single punctuation. Comments, string/char literals, lifetimes and numbers are left
/// out: they never name a module.
pub(crate) fn tokens(text: &str) -> Vec<(Tok, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            '/' if at(i + 1) == '/' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(i + 1) == '*' => {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '/' && at(i + 1) == '*' {
                        depth += 1;
                        i += 2;
                    } else if chars[i] == '*' && at(i + 1) == '/' {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        line += usize::from(chars[i] == '\n');
                        i += 1;
                    }
                }
            }
            '"' => i = skip_string(&chars, i + 1, 0, &mut line),
            'r' | 'b' | 'c' if raw_string_start(&chars, i).is_some() => {
                let (open, hashes) = raw_string_start(&chars, i).unwrap();
                i = skip_string(&chars, open, hashes, &mut line);
            }
            '\'' => {
                // A char literal ('a', '\n', '\u{1F600}') or a lifetime/label ('a, 'static).
                if at(i + 1) == '\\' {
                    i += 2;
                    while i < chars.len() && chars[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                } else if at(i + 2) == '\'' {
                    i += 3;
                } else {
                    i += 1;
                    while i < chars.len() && is_ident_char(chars[i]) {
                        i += 1;
                    }
                }
            }
            c if c.is_ascii_digit() => {
                while i < chars.len() && (is_ident_char(chars[i]) || chars[i] == '.') {
                    // `1..2` is two numbers and a range, not one number.
                    if chars[i] == '.' && at(i + 1) == '.' {
                        break;
                    }
                    i += 1;
                }
            }
            c if is_ident_char(c) => {
                let start = i;
                while i < chars.len() && is_ident_char(chars[i]) {
                    i += 1;
                }
                let mut ident: String = chars[start..i].iter().collect();
                if ident == "r" && at(i) == '#' && is_ident_char(at(i + 1)) {
                    let start = i + 1;
                    i = start;
                    while i < chars.len() && is_ident_char(chars[i]) {
                        i += 1;
                    }
                    ident = chars[start..i].iter().collect();
                }
                out.push((Tok::Ident(ident), line));
            }
            ':' if at(i + 1) == ':' => {
                out.push((Tok::Path, line));
                i += 2;
            }
            c if c.is_whitespace() => i += 1,
            c => {
                out.push((Tok::Punct(c), line));
                i += 1;
            }
        }
    }
    out
}

/// Where a raw or byte string starting at `i` opens (the index after its `"`), and its `#`s:
/// `r"`, `r#"`, `b"`, `br##"`, `c"`, `cr"`. `None` for an identifier such as `r` or `bytes`.
fn raw_string_start(chars: &[char], i: usize) -> Option<(usize, usize)> {
    if i > 0 && is_ident_char(chars[i - 1]) {
        return None;
    }
    let mut j = i;
    if matches!(chars.get(j), Some('b' | 'c')) {
        j += 1;
    }
    let raw = chars.get(j) == Some(&'r');
    if raw {
        j += 1;
    }
    let mut hashes = 0;
    while raw && chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    (j > i && chars.get(j) == Some(&'"')).then_some((j + 1, if raw { hashes + 1 } else { 0 }))
}

/// The index after the string that starts at `i` (after its opening quote). `raw` is 0 for a
/// string with escapes, else 1 + the number of `#`s that close it.
fn skip_string(chars: &[char], mut i: usize, raw: usize, line: &mut usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' if raw == 0 => i += 2,
            '"' => {
                let hashes = raw.saturating_sub(1);
                if (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
                    return i + 1 + hashes;
                }
                i += 1;
            }
            c => {
                *line += usize::from(c == '\n');
                i += 1;
            }
        }
    }
    i
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A path found in a module before it is resolved.
#[derive(Debug, Clone)]
struct Written {
    module: ModPath,
    segments: Vec<String>,
    line: usize,
    via: Via,
    test: bool,
    /// The last segment was `*`.
    glob: bool,
}

impl Module {
    /// The path a `use` in this module gave `name`, public or not.
    fn imported(&self, name: &str) -> Option<&Vec<String>> {
        self.reexports.get(name).or_else(|| self.aliases.get(name))
    }
}

/// What one module holds, as the reader needs it to resolve paths into it.
#[derive(Debug, Default)]
struct Module {
    children: BTreeSet<String>,
    /// Items defined here (`fn`, `struct`, `enum`, `trait`, `type`, `const`, `static`, …).
    defines: BTreeSet<String>,
    /// `pub use` names handed on: the name → the whole path it stands for.
    reexports: BTreeMap<String, Vec<String>>,
    /// `pub use path::*`: paths whose items are all handed on.
    glob_reexports: Vec<Vec<String>>,
    /// Private `use` names: the name → the path (so `use crate::ops; ops::build::f()` reads).
    aliases: BTreeMap<String, Vec<String>>,
    /// Test code: `#[cfg(test)]`, a `_tests.rs` file, or inside either.
    test: bool,
}

/// The library as the reader sees it: every module (files and inline ones) and every path
/// written in it.
#[derive(Debug, Default)]
pub(crate) struct Graph {
    modules: BTreeMap<ModPath, Module>,
    written: Vec<(String, Written)>,
}

/// The module path of a source file relative to `src`: `ops/build/mod.rs` is
/// `[ops, build]`, `ops/build/steps.rs` is `[ops, build, steps]`, `lib.rs` is `[]`.
pub(crate) fn file_module(relative: &str) -> ModPath {
    let mut parts: Vec<String> = relative
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

impl Graph {
    /// Reads every `(path relative to src, text)`; a file whose name ends `_tests.rs` is test
    /// code (a `#[cfg(test)] mod` that lives in a file of its own).
    pub(crate) fn read(files: &[(String, String)]) -> Graph {
        let mut graph = Graph::default();
        let placed = path_attributes(files);
        let module_of = |relative: &String| {
            placed
                .get(relative)
                .cloned()
                .unwrap_or_else(|| file_module(relative))
        };
        for (relative, _) in files {
            let path = module_of(relative);
            for depth in 0..=path.len() {
                let module = graph.modules.entry(path[..depth].to_vec()).or_default();
                if let Some(child) = path.get(depth) {
                    module.children.insert(child.clone());
                }
            }
            let module = graph.modules.get_mut(&path).unwrap();
            module.test |= relative.ends_with("_tests.rs");
        }
        for (relative, text) in files {
            graph.scan(relative, &module_of(relative), text);
        }
        // A file module declared under `#[cfg(test)]` (`ops/fakehost.rs`) is test code, and
        // so is everything beneath a test module.
        let paths: Vec<ModPath> = graph.modules.keys().cloned().collect();
        for path in &paths {
            let test = (1..=path.len()).any(|d| graph.modules[&path[..d].to_vec()].test);
            graph.modules.get_mut(path).unwrap().test = test;
        }
        for (_, w) in &mut graph.written {
            w.test |= graph.modules[&w.module].test;
        }
        graph
    }

    /// Walks one file's tokens: modules opened and closed, items defined, `use` trees and
    /// paths in code.
    fn scan(&mut self, file: &str, root: &ModPath, text: &str) {
        let toks = tokens(text);
        // One entry per open `{`: the module it opens, if it opens one.
        let mut scopes: Vec<Option<ModPath>> = Vec::new();
        let mut test_attr = false;
        let mut i = 0;
        while i < toks.len() {
            let here: ModPath = scopes
                .iter()
                .rev()
                .flatten()
                .next()
                .cloned()
                .unwrap_or_else(|| root.clone());
            let at_module_level = scopes.last().is_none_or(|s| s.is_some());
            let ident = |k: usize| match toks.get(k) {
                Some((Tok::Ident(s), _)) => Some(s.as_str()),
                _ => None,
            };
            match &toks[i].0 {
                Tok::Punct('#') => {
                    let end = attribute_end(&toks, i);
                    let words: Vec<&str> = (i..end).filter_map(ident).collect();
                    test_attr |= words.starts_with(&["cfg", "test"]);
                    i = end;
                    continue;
                }
                Tok::Punct('{') => {
                    scopes.push(None);
                    test_attr = false;
                }
                Tok::Punct('}') => {
                    scopes.pop();
                    test_attr = false;
                }
                Tok::Punct(';') => test_attr = false,
                Tok::Ident(word) if word == "mod" => {
                    if let Some(name) = ident(i + 1) {
                        let child = [here.clone(), vec![name.to_string()]].concat();
                        let module = self.modules.entry(child.clone()).or_default();
                        module.test |= test_attr;
                        self.modules
                            .get_mut(&here)
                            .unwrap()
                            .children
                            .insert(name.to_string());
                        if toks.get(i + 2).map(|t| &t.0) == Some(&Tok::Punct('{')) {
                            scopes.push(Some(child));
                            i += 3;
                            test_attr = false;
                            continue;
                        }
                    }
                    test_attr = false;
                }
                Tok::Ident(word) if word == "use" => {
                    let level = (at_module_level, test_attr);
                    i = self.scan_use(file, &here, &toks, i, level);
                    test_attr = false;
                    continue;
                }
                Tok::Ident(word) if DEFINING.contains(&word.as_str()) && at_module_level => {
                    if let Some(name) =
                        ident(i + 1).or_else(|| ident(i + 2).filter(|_| word == "macro_rules"))
                    {
                        self.modules
                            .get_mut(&here)
                            .unwrap()
                            .defines
                            .insert(name.to_string());
                    }
                }
                // The start of a path, not its middle, nor `$crate::` in a macro.
                Tok::Ident(_)
                    if toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Path)
                        && (i == 0 || !matches!(toks[i - 1].0, Tok::Path | Tok::Punct('$'))) =>
                {
                    i = self.scan_code_path(file, here, &toks, i, test_attr);
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// Reads the `use` item at `toks[i]` up to its `;`; returns the index after it.
    fn scan_use(
        &mut self,
        file: &str,
        here: &ModPath,
        toks: &[(Tok, usize)],
        i: usize,
        (at_module_level, test): (bool, bool),
    ) -> usize {
        let public = i > 0 && visibility_before(toks, i);
        let via = if public { Via::Reexport } else { Via::Use };
        let end = (i..toks.len())
            .find(|&k| toks[k].0 == Tok::Punct(';'))
            .unwrap_or(toks.len());
        let mut trees = Vec::new();
        // `use $crate::…` in a macro names the crate the macro is expanded in: no arrow here.
        if toks.get(i + 1).map(|t| &t.0) != Some(&Tok::Punct('$')) {
            use_tree(&toks[i + 1..end], Vec::new(), &mut trees);
        }
        for (segments, line, glob, alias) in trees {
            self.record_use(here, at_module_level, &segments, glob, alias, public);
            let module = here.clone();
            let w = Written {
                module,
                segments,
                line,
                via,
                test,
                glob,
            };
            self.written.push((file.to_string(), w));
        }
        end + 1
    }

    /// Reads the path in code that starts at `toks[i]` (`a::b::c`); returns the index after it.
    fn scan_code_path(
        &mut self,
        file: &str,
        module: ModPath,
        toks: &[(Tok, usize)],
        i: usize,
        test: bool,
    ) -> usize {
        let mut segments = Vec::new();
        let mut k = i;
        // `k` moves past each segment and its `::`; it stops on what ends the path (a `<`
        // of a turbofish, a `(`, …), which the walk still has to see.
        while let Some((Tok::Ident(segment), _)) = toks.get(k) {
            segments.push(segment.clone());
            k += 1;
            if toks.get(k).map(|t| &t.0) != Some(&Tok::Path) {
                break;
            }
            k += 1;
        }
        let line = toks[i].1;
        let w = Written {
            module,
            segments,
            line,
            via: Via::Code,
            test,
            glob: false,
        };
        self.written.push((file.to_string(), w));
        k
    }

    /// Notes what a `use` brings into the module, so later paths through it resolve.
    fn record_use(
        &mut self,
        here: &ModPath,
        module_level: bool,
        segments: &[String],
        glob: bool,
        alias: Option<String>,
        public: bool,
    ) {
        let module = self.modules.get_mut(here).unwrap();
        if glob {
            if public {
                module.glob_reexports.push(segments.to_vec());
            }
            return;
        }
        let name = alias.or_else(|| segments.last().cloned());
        let Some(name) = name.filter(|n| n != "self" && n != "_") else {
            return;
        };
        if public && module_level {
            module.reexports.insert(name, segments.to_vec());
        } else {
            module.aliases.insert(name, segments.to_vec());
        }
    }

    /// Every arrow between two modules of the library (a path to std or another crate is
    /// none; nor is one that stays in its own module).
    pub(crate) fn arrows(&self) -> Vec<Arrow> {
        let mut arrows = Vec::new();
        for (file, w) in &self.written {
            let Some(to) = self.resolve(&w.module, &w.segments, 0) else {
                continue;
            };
            if to == w.module {
                continue;
            }
            arrows.push(Arrow {
                from: w.module.clone(),
                to,
                file: file.clone(),
                line: w.line,
                written: w.segments.join("::") + if w.glob { "::*" } else { "" },
                via: w.via,
                test: w.test,
            });
        }
        arrows
    }

    /// The module that defines what `segments` names from `here`, or `None` for a path that
    /// leaves the crate (std, a dependency) or is not a path into a module (`Self::new`).
    fn resolve(&self, here: &ModPath, segments: &[String], depth: usize) -> Option<ModPath> {
        if depth > 16 {
            return None; // a re-export loop: the compiler refuses those anyway
        }
        let (mut at, mut rest) = match segments.first().map(String::as_str)? {
            "crate" => (Vec::new(), &segments[1..]),
            "self" => (here.clone(), &segments[1..]),
            "super" => {
                let mut at = here.clone();
                let mut rest = segments;
                while rest.first().is_some_and(|s| s == "super") {
                    at.pop()?;
                    rest = &rest[1..];
                }
                (at, rest)
            }
            first => {
                let module = self.modules.get(here)?;
                if module.children.contains(first) {
                    (here.clone(), segments)
                } else if let Some(path) = module.imported(first) {
                    let base = self.resolve(here, path, depth + 1)?;
                    if base.last() != path.last() {
                        // The name is an item (`BuildError::Io`, `Root::open`), not a module.
                        return Some(base);
                    }
                    (base, &segments[1..])
                } else {
                    return None; // std, a dependency, a local type or variable
                }
            }
        };
        while let Some((next, more)) = rest.split_first() {
            let module = self.modules.get(&at)?;
            if module.children.contains(next) {
                at.push(next.clone());
                rest = more;
            } else if module.defines.contains(next) {
                return Some(at);
            } else if let Some(path) = module.imported(next) {
                // Handed on (or imported privately and named by a child through `super::`):
                // the arrow goes to where the item lives.
                let from = at.clone();
                return self.resolve(&from, path, depth + 1);
            } else {
                for glob_path in &module.glob_reexports {
                    let Some(source) = self.resolve(&at, glob_path, depth + 1) else {
                        continue;
                    };
                    let has = self
                        .modules
                        .get(&source)
                        .is_some_and(|m| m.defines.contains(next) || m.imported(next).is_some());
                    if has {
                        let path = [vec!["self".to_string()], rest.to_vec()].concat();
                        return self.resolve(&source, &path, depth + 1);
                    }
                }
                return Some(at);
            }
        }
        Some(at)
    }

    pub(crate) fn module_count(&self) -> usize {
        self.modules.len()
    }
}

/// The files a `#[path = "…"] mod name;` places (`ops/verify.rs` declares
/// `verify_provenance_tests.rs` as `ops::verify::provenance_tests`): file → module path. The
/// path is relative to the declaring file's folder, as the compiler reads it for a file module.
fn path_attributes(files: &[(String, String)]) -> BTreeMap<String, ModPath> {
    let mut placed = BTreeMap::new();
    for (relative, text) in files {
        let folder = relative.rsplit_once('/').map_or("", |(dir, _)| dir);
        let mut rest = text.as_str();
        while let Some(at) = rest.find("#[path = \"") {
            rest = &rest[at + "#[path = \"".len()..];
            let Some((target, after)) = rest.split_once('"') else {
                break;
            };
            let name: String = after
                .trim_start_matches([']', ' ', '\n'])
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("mod ")
                .chars()
                .take_while(|&c| is_ident_char(c))
                .collect();
            let file = if folder.is_empty() {
                target.to_string()
            } else {
                format!("{folder}/{target}")
            };
            let mut module = file_module(relative);
            module.push(name);
            placed.insert(file, module);
        }
    }
    placed
}

/// The keywords that define an item named by the next identifier.
const DEFINING: &[&str] = &[
    "fn",
    "struct",
    "enum",
    "trait",
    "type",
    "const",
    "static",
    "union",
    "macro_rules",
];

/// The index after an attribute `#[…]` or `#![…]` that starts at `i`.
fn attribute_end(toks: &[(Tok, usize)], i: usize) -> usize {
    let mut k = i + 1;
    if toks.get(k).map(|t| &t.0) == Some(&Tok::Punct('!')) {
        k += 1;
    }
    if toks.get(k).map(|t| &t.0) != Some(&Tok::Punct('[')) {
        return i + 1;
    }
    let mut depth = 0;
    while k < toks.len() {
        match toks[k].0 {
            Tok::Punct('[') => depth += 1,
            Tok::Punct(']') => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
        k += 1;
    }
    k
}

/// `pub use` or `pub(…) use`: the tokens just before `use` at `i`.
fn visibility_before(toks: &[(Tok, usize)], i: usize) -> bool {
    match &toks[i - 1].0 {
        Tok::Ident(w) => w == "pub",
        Tok::Punct(')') => {
            (1..=4).any(|back| i > back && toks[i - 1 - back].0 == Tok::Ident("pub".into()))
        }
        _ => false,
    }
}

/// Expands one use tree (the tokens between `use` and `;`) into its leaves: `(the whole path,
/// its line, a glob, its `as` name)`. `a::{b, c::{self, d as e}, f::*}` gives `a::b`,
/// `a::c::self`→`a::c`, `a::c::d` as `e`, `a::f` as a glob.
fn use_tree(
    toks: &[(Tok, usize)],
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, usize, bool, Option<String>)>,
) {
    let mut path = prefix;
    let mut k = 0;
    while k < toks.len() {
        match &toks[k].0 {
            Tok::Path => {}
            Tok::Ident(word) if word == "as" => {
                let alias = match toks.get(k + 1) {
                    Some((Tok::Ident(a), _)) => Some(a.clone()),
                    _ => None,
                };
                if let Some(last) = out.last_mut() {
                    last.3 = alias;
                }
                return;
            }
            Tok::Ident(word) => {
                if word == "self" && !path.is_empty() {
                    // `a::{self}` names `a` itself.
                } else {
                    path.push(word.clone());
                }
                let leaf = !matches!(toks.get(k + 1).map(|t| &t.0), Some(Tok::Path));
                if leaf {
                    out.push((path.clone(), toks[k].1, false, None));
                }
            }
            Tok::Punct('*') => {
                out.push((path.clone(), toks[k].1, true, None));
                return;
            }
            Tok::Punct('{') => {
                // Split the group at its top-level commas; each part is a tree under `path`.
                let mut depth = 0;
                let mut start = k + 1;
                let mut j = k;
                while j < toks.len() {
                    match toks[j].0 {
                        Tok::Punct('{') => depth += 1,
                        Tok::Punct('}') => {
                            depth -= 1;
                            if depth == 0 {
                                use_tree(&toks[start..j], path.clone(), out);
                                return;
                            }
                        }
                        Tok::Punct(',') if depth == 1 => {
                            use_tree(&toks[start..j], path.clone(), out);
                            start = j + 1;
                        }
                        _ => {}
                    }
                    j += 1;
                }
                return;
            }
            _ => {}
        }
        k += 1;
    }
}

/// The circles of a directed graph: Tarjan's strongly connected components with more than one
/// node, each sorted, in the order of their smallest node.
pub(crate) fn circles(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        edges: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        on_stack: BTreeSet<&'a ModPath>,
        found: Vec<Vec<ModPath>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a ModPath) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        let edges = s.edges;
        for w in edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
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
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    let nodes: BTreeSet<&ModPath> = edges
        .iter()
        .flat_map(|(a, bs)| std::iter::once(a).chain(bs))
        .collect();
    for v in nodes {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found.sort();
    s.found
}
