//! The layer check (docs/design.md "Layers"): no `crate::` path in the library's non-test code
//! runs up to a higher layer, and no two modules of one folder import each other. This is
//! the crate's stand-in for `cargo modules`: it reads the sources, so it needs no tool, and
//! it fails naming every arrow (file, line, path) with the layer of each end.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The one table: each top-level module of `crates/core/src` and its layer, lowest first.
/// A module may import its own layer and the layers below it, never a higher one.
const LAYERS: &[(&str, u8, &str)] = &[
    ("output", 0, "base"),
    ("progress", 0, "base"),
    ("digest", 0, "base"),
    ("filetype", 0, "base"),
    ("process", 0, "base"),
    ("interrupt", 0, "base"),
    ("exit", 0, "base"),
    ("deb", 1, "formats"),
    ("elf", 1, "formats"),
    ("image", 1, "formats"),
    ("wheel", 1, "formats"),
    ("host", 2, "host"),
    ("toolchain", 2, "host"),
    ("rocm", 3, "rocm"),
    ("ops", 4, "ops"),
    ("error", 5, "error"),
];

fn layer_of(module: &str) -> Option<(u8, &'static str)> {
    LAYERS
        .iter()
        .find(|(name, _, _)| *name == module)
        .map(|&(_, layer, name)| (layer, name))
}

/// One `crate::…` or `super::…` path in a source file, resolved to the module path it names.
#[derive(Debug)]
struct Reference {
    file: PathBuf,
    line: usize,
    /// The path as written (`crate::ops::build::BuildError`, `super::super::rocm`).
    written: String,
    target: Vec<String>,
}

/// Every library source file the check reads: not lib.rs (it only declares modules), not
/// test-only files.
pub(crate) fn library_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("reading crates/core/src") {
        let path = entry.expect("reading a directory entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            library_sources(&path, out);
        } else if name.ends_with(".rs")
            && !name.ends_with("_tests.rs")
            && !path.ends_with("ops/fakehost.rs")
            && !path.ends_with("src/lib.rs")
        {
            out.push(path);
        }
    }
}

/// The module path of a source file relative to `src`: `ops/build/mod.rs` is
/// `[ops, build]`, `ops/build/steps.rs` is `[ops, build, steps]`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The source without its inline test modules (`#[cfg(test)]` then `mod name {` up to the
/// brace that closes it): that is test code, which may reach anywhere.
pub(crate) fn non_test_code(text: &str) -> String {
    let mut code = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        let after = &rest[at + "#[cfg(test)]".len()..];
        let header = after.trim_start().lines().next().unwrap_or("");
        let is_mod = ["mod ", "pub mod ", "pub(crate) mod "]
            .iter()
            .any(|m| header.starts_with(m));
        let Some(open) = after
            .find('{')
            .filter(|_| is_mod && header.trim_end().ends_with('{'))
        else {
            code.push_str(&rest[..at + 1]);
            rest = &rest[at + 1..];
            continue;
        };
        code.push_str(&rest[..at]);
        let body = &after[open..];
        let mut depth = 0usize;
        let mut end = body.len();
        for (i, c) in body.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        // Keep the line count, so later line numbers stay right.
        let skipped = &rest[at..rest.len() - after[open + end..].len()];
        code.extend(std::iter::repeat_n('\n', skipped.matches('\n').count()));
        rest = &after[open + end..];
    }
    code.push_str(rest);
    code
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The leading identifiers of each item of a `{a, b::c, d as e}` group that starts at
/// `group` (just after the `{`).
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut at_item_start = true;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_item_start = true,
            c if at_item_start && depth == 0 && is_ident_char(c) => {
                let ident: String = group[i..]
                    .chars()
                    .take_while(|&c| is_ident_char(c))
                    .collect();
                heads.push(ident);
                at_item_start = false;
            }
            _ => {}
        }
    }
    heads
}

/// The module each `crate::` or `super::` path in `line` names, resolved from `here`.
fn paths_in_line(line: &str, here: &[String]) -> Vec<(String, Vec<String>)> {
    let code = line.split("//").next().unwrap_or("");
    let mut found = Vec::new();
    for prefix in ["crate::", "super::"] {
        for (at, _) in code.match_indices(prefix) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| is_ident_char(c) || c == '$' || c == ':') {
                continue; // `$crate::`, `rocm_pin::crate` or the second `super::` of a run
            }
            let written: String = code[at..]
                .chars()
                .take_while(|&c| is_ident_char(c) || c == ':')
                .collect();
            let written = written.trim_end_matches(':').to_string();
            let mut base: Vec<String> = if prefix == "crate::" {
                Vec::new()
            } else {
                here[..here.len().saturating_sub(1)].to_vec()
            };
            let mut rest = &code[at + prefix.len()..];
            while let Some(more) = rest.strip_prefix("super::") {
                base.pop();
                rest = more;
            }
            // Every segment of the path, up to a `{…}` group or the item's end.
            loop {
                let segment: String = rest.chars().take_while(|&c| is_ident_char(c)).collect();
                if segment.is_empty() {
                    break;
                }
                rest = &rest[segment.len()..];
                base.push(segment);
                match rest.strip_prefix("::") {
                    Some(more) => rest = more,
                    None => break,
                }
            }
            match rest.strip_prefix('{') {
                Some(group) => {
                    for head in group_heads(group) {
                        found.push((written.clone(), [base.clone(), vec![head]].concat()));
                    }
                }
                None if !base.is_empty() => found.push((written, base)),
                None => {}
            }
        }
    }
    found
}

fn references() -> Vec<(Vec<String>, Reference)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    library_sources(&src, &mut files);
    files.sort();
    let mut refs = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap().to_path_buf();
        let here = module_path(&relative);
        let text = std::fs::read_to_string(&file).expect("reading a source file");
        for (n, line) in non_test_code(&text).lines().enumerate() {
            for (written, target) in paths_in_line(line, &here) {
                let r = Reference {
                    file: relative.clone(),
                    line: n + 1,
                    written,
                    target,
                };
                refs.push((here.clone(), r));
            }
        }
    }
    refs
}

#[test]
fn no_arrow_runs_up_a_layer() {
    let refs = references();
    assert!(
        refs.len() > 100,
        "the check found almost no paths: is it reading the sources?"
    );
    let mut up = Vec::new();
    let mut files_up = BTreeSet::new();
    for (here, r) in &refs {
        let from = layer_of(&here[0]).unwrap_or_else(|| {
            panic!(
                "{}: module `{}` is not in LAYERS; add it",
                r.file.display(),
                here[0]
            )
        });
        let Some(to) = r.target.first().and_then(|m| layer_of(m)) else {
            continue; // a name from the crate root (a macro or a re-export), or std's `super`
        };
        if to.0 > from.0 {
            up.push(format!(
                "  {}:{}: `{}` ({}, layer {}) from {} (layer {})",
                r.file.display(),
                r.line,
                r.written,
                to.1,
                to.0,
                from.1,
                from.0
            ));
            files_up.insert(r.file.clone());
        }
    }
    assert!(
        up.is_empty(),
        "{} arrow(s) in {} file(s) run up a layer (docs/design.md \"Layers\"); move the item \
         imported down, or the importing code up:\n{}",
        up.len(),
        files_up.len(),
        up.join("\n")
    );
}

/// The modules of one layer, and those of one folder (`ops/`, `host/`, `deb/`, …), may use
/// each other in any order, but never in a circle: two modules that import each other are one
/// module in two files. (Between layers the check above already rules circles out.)
#[test]
fn no_two_modules_import_each_other() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (here, r) in references() {
        let (from, to) = if here[0] != r.target[0] {
            (here[0].clone(), r.target[0].clone())
        } else {
            match (here.get(1), r.target.get(1)) {
                (Some(a), Some(b)) if a != b => {
                    (format!("{}::{a}", here[0]), format!("{}::{b}", here[0]))
                }
                _ => continue,
            }
        };
        edges.entry(from).or_default().insert(to);
    }
    assert!(
        edges.len() > 10,
        "the check found almost no edges between modules: is it reading the sources?"
    );
    let mut circles = Vec::new();
    for (a, outs) in &edges {
        for b in outs {
            if a < b && edges.get(b).is_some_and(|back| back.contains(a)) {
                circles.push(format!("  {a} ⇄ {b}"));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "modules that import each other (docs/design.md \"Layers\"); move what both \
         need into one of them or below both:\n{}",
        circles.join("\n")
    );
}
