//! The layer check (docs/design.md "Layers"): no arrow of the library's non-test code runs up
//! to a higher layer, and no modules, at any depth, import each other in a circle of any
//! length. The arrows come from `module_graph_tests`, which reads every `use` tree whole and
//! every `crate::`/`super::` path in code, and resolves each to the module defining the item.
//! Both tests fail naming every arrow (file, line, path as written). The self-tests below plant
//! each shape a line-by-line scan used to miss into a copy of today's sources and watch the
//! check fail on it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::module_graph_tests::{circles, Arrow, Graph, ModPath};

/// The one table: each top-level module of `crates/core/src` and its layer, lowest first.
/// A module may import its own layer and the layers below it, never a higher one. `deb`,
/// `elf`, `image`, `wheel`, `interrupt` and `filetype` are the format crate's (pkgformats),
/// re-exported by lib.rs: arrows into them are drawn like any other, and the compiler keeps
/// their own imports inside that crate.
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

/// The library's source roots and the label their files go by: this crate's `src` (no label)
/// and the format crate's (`pkgformats/`), whose modules this crate re-exports. The fs rule
/// and the error list read both; the layer graph reads this crate only (the compiler keeps
/// the format crate below it: it cannot name a module of this one).
pub(crate) fn library_roots() -> [(PathBuf, &'static str); 2] {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        (manifest.join("src"), ""),
        (manifest.join("../formats/src"), "pkgformats/"),
    ]
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

/// Every `.rs` file below `dir`, sorted by path.
pub(crate) fn rust_files_under(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|entry| entry.expect("reading a source directory").into_path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    paths.sort();
    paths
}

/// Every `.rs` file under `src` (tests and lib.rs too: the graph reader tells test code
/// apart itself), as `(path relative to src, text)`, in a stable order.
fn crate_files() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    rust_files_under(&src)
        .iter()
        .map(|path| {
            let relative = path
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(path).expect("reading a source file");
            (relative, text)
        })
        .collect()
}

fn show(module: &ModPath) -> String {
    if module.is_empty() {
        "crate".to_string()
    } else {
        module.join("::")
    }
}

fn describe(a: &Arrow) -> String {
    format!(
        "{}:{}: `{}` ({} -> {})",
        a.file,
        a.line,
        a.written,
        show(&a.from),
        show(&a.to)
    )
}

/// Every arrow of non-test code that runs up a layer, one line each.
fn arrows_up(graph: &Graph) -> Vec<String> {
    let mut up = Vec::new();
    for a in graph.arrows().iter().filter(|a| !a.test) {
        let Some(top) = a.from.first() else {
            continue; // lib.rs only declares the modules
        };
        let from = layer_of(top)
            .unwrap_or_else(|| panic!("{}: module `{top}` is not in LAYERS; add it", a.file));
        let Some(to) = a.to.first().and_then(|m| layer_of(m)) else {
            continue; // a name of the crate root (an exported macro)
        };
        if to.0 > from.0 {
            up.push(format!(
                "  {} runs from {} (layer {}) up to {} (layer {})",
                describe(a),
                from.1,
                from.0,
                to.1,
                to.0
            ));
        }
    }
    up
}

/// Every circle among the modules of non-test code, each with the arrows that close it.
fn module_circles(graph: &Graph) -> Vec<String> {
    let arrows: Vec<Arrow> = graph
        .arrows()
        .into_iter()
        .filter(|a| !a.test && !a.is_face())
        .collect();
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for a in &arrows {
        edges
            .entry(a.from.clone())
            .or_default()
            .insert(a.to.clone());
    }
    circles(&edges)
        .iter()
        .map(|circle| {
            let members: BTreeSet<&ModPath> = circle.iter().collect();
            let mut lines = vec![format!(
                "  circle of {}: {}",
                circle.len(),
                circle.iter().map(show).collect::<Vec<_>>().join(", ")
            )];
            let mut seen = BTreeSet::new();
            for a in &arrows {
                if members.contains(&a.from)
                    && members.contains(&a.to)
                    && seen.insert((a.from.clone(), a.to.clone()))
                {
                    lines.push(format!("    {}", describe(a)));
                }
            }
            lines.join("\n")
        })
        .collect()
}

fn today() -> Graph {
    let graph = Graph::read(&crate_files());
    assert!(
        graph.module_count() > 60 && graph.arrows().len() > 300,
        "the reader found almost no modules or arrows: is it reading the sources?"
    );
    graph
}

#[test]
fn no_arrow_runs_up_a_layer() {
    let up = arrows_up(&today());
    assert!(
        up.is_empty(),
        "{} arrow(s) run up a layer (docs/design.md \"Layers\"); move the item imported \
         down, or the importing code up:\n{}",
        up.len(),
        up.join("\n")
    );
}

/// Circles known today, each allowed only inside one module's subtree and only while it
/// stands: `(module, why)`. An entry whose circle is gone fails the test, so the list only
/// shrinks.
const KNOWN_CIRCLES: &[(&str, &str)] = &[];

/// Modules of one layer, and of one folder, may use each other in any order, but never in a
/// circle, of any length and at any depth (a file, a folder's `mod.rs`, an inline module):
/// modules in a circle are one module in several files. A folder's `pub use` of its own
/// children is its face, not an arrow.
#[test]
fn no_modules_import_each_other_in_a_circle() {
    let inside = |circle: &str, module: &str| {
        let members = circle.lines().next().unwrap_or("");
        let members = members.split_once(": ").map_or("", |(_, m)| m);
        members
            .split(", ")
            .all(|m| m == module || m.starts_with(&format!("{module}::")))
    };
    let all = module_circles(&today());
    let new: Vec<&String> = all
        .iter()
        .filter(|c| !KNOWN_CIRCLES.iter().any(|(module, _)| inside(c, module)))
        .collect();
    let gone: Vec<&str> = KNOWN_CIRCLES
        .iter()
        .filter(|(module, _)| !all.iter().any(|c| inside(c, module)))
        .map(|(module, _)| *module)
        .collect();
    assert!(
        new.is_empty(),
        "{} circle(s) of modules (docs/design.md \"Layers\"); move what they share into one \
         of them, or below all of them:\n{}",
        new.len(),
        new.iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        gone.is_empty(),
        "no circle is left inside {gone:?}: remove it from KNOWN_CIRCLES in {}",
        file!()
    );
}

/// Today's sources with `plants` added: `(file, text)` appended to a file that exists, or a
/// new file (its module path is its place under `src`, as for every file).
fn planted(plants: &[(&str, &str)]) -> Graph {
    let mut files = crate_files();
    for (file, text) in plants {
        match files.iter_mut().find(|(name, _)| name == file) {
            Some((_, body)) => body.push_str(text),
            None => files.push((file.to_string(), text.to_string())),
        }
    }
    Graph::read(&files)
}

// The format layer (deb/, elf, image/, wheel/) is the crate pkgformats now: an upward import
// there does not compile (it cannot name this crate). The shapes a line scan missed are
// planted in this crate's own low layers instead.
#[test]
fn a_multi_line_upward_use_in_host_fails_the_check() {
    let graph = planted(&[(
        "host/apt.rs",
        "\nuse crate::ops::{\n    build::BuildOptions,\n    plan::{self, PlanOptions},\n};\n",
    )]);
    let up = arrows_up(&graph).join("\n");
    assert!(
        up.contains("host/apt.rs:") && up.contains("crate::ops::build::BuildOptions"),
        "{up}"
    );
    assert!(up.contains("crate::ops::plan::PlanOptions"), "{up}");
    assert!(
        up.contains("runs from host (layer 2) up to ops (layer 4)"),
        "{up}"
    );
}

#[test]
fn upward_paths_however_written_fail_the_check() {
    let shapes = [
        // A fully qualified path in code, with no `use`.
        (
            "output.rs",
            "\nfn planted() { let _ = crate::rocm::HIP_PACKAGE; }\n",
            "crate::rocm::HIP_PACKAGE",
        ),
        // A `use` inside a function, `super::super` from an inline module, `pub use`.
        (
            "progress.rs",
            "\nfn planted() { use crate::host::root::Root; }\n",
            "crate::host::root::Root",
        ),
        (
            "host/dirwalk.rs",
            "\nmod planted { use super::super::super::ops::repo; }\n",
            "super::super::super::ops::repo",
        ),
        (
            "host/hold.rs",
            "\npub use crate::rocm::{recipe::{self}};\n",
            "crate::rocm::recipe",
        ),
        // Nested groups under `crate::{…}`, one leaf of them up.
        (
            "digest.rs",
            "\nuse crate::{deb::{self, archive}, error::kind_of};\n",
            "crate::error::kind_of",
        ),
    ];
    for (file, text, written) in shapes {
        let up = arrows_up(&planted(&[(file, text)])).join("\n");
        assert!(
            up.contains(&format!("{file}:")) && up.contains(&format!("`{written}`")),
            "{file}: {text}\n{up}"
        );
    }
}

#[test]
fn text_that_only_looks_like_a_path_is_no_arrow() {
    let graph = planted(&[(
        "digest.rs",
        "\n// use crate::ops::build;\n/* crate::ops::plan */\nconst _A: &str = \"crate::rocm::gate\";\n\
         const _B: &str = r#\"use crate::ops::verify;\"#;\nconst _C: char = '{';\n\
         #[cfg(test)]\nmod planted_tests { use crate::ops::install; }\n",
    )]);
    assert_eq!(arrows_up(&graph), Vec::<String>::new());
}

#[test]
fn a_three_module_circle_in_ops_fails_the_check() {
    let graph = planted(&[
        (
            "ops/planted_a.rs",
            "use super::planted_b::B;\npub(crate) struct A;\n",
        ),
        (
            "ops/planted_b.rs",
            "pub(crate) struct B;\nfn f() { super::planted_c::g(); }\n",
        ),
        (
            "ops/planted_c.rs",
            "pub(crate) fn g() {}\nuse crate::ops::{\n    planted_a::A,\n};\n",
        ),
    ]);
    let circles = module_circles(&graph).join("\n");
    assert!(
        circles.contains("circle of 3: ops::planted_a, ops::planted_b, ops::planted_c"),
        "{circles}"
    );
    assert!(
        circles.contains("ops/planted_c.rs:3: `crate::ops::planted_a::A`"),
        "{circles}"
    );
}

#[test]
fn a_two_module_circle_inside_ops_build_fails_the_check() {
    let graph = planted(&[
        (
            "ops/build/planted_x.rs",
            "pub(crate) fn x() { planted_y::y() }\nuse super::planted_y;\n",
        ),
        (
            "ops/build/planted_y.rs",
            "pub(crate) fn y() { super::planted_x::x() }\n",
        ),
    ]);
    let circles = module_circles(&graph).join("\n");
    assert!(
        circles.contains("circle of 2: ops::build::planted_x, ops::build::planted_y"),
        "{circles}"
    );
}

#[test]
fn a_folders_face_is_no_circle_but_its_code_is() {
    // `host/mod.rs` hands `error`'s names on and `apt` uses `host`'s `refused` (which is
    // `error`'s): no circle.
    assert!(module_circles(&today())
        .iter()
        .all(|c| !c.contains("circle of 2: host, host::apt")));
    // A folder whose own code calls a child that uses the folder's items is one.
    let graph = planted(&[
        (
            "host/mod.rs",
            "\npub(crate) fn planted_parent() {}\nfn planted() { apt::planted_child() }\n",
        ),
        (
            "host/apt.rs",
            "\npub(crate) fn planted_child() { super::planted_parent() }\n",
        ),
    ]);
    let circles = module_circles(&graph).join("\n");
    assert!(circles.contains("host::apt"), "{circles}");
}
