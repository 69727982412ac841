//! Every error type of the library reaches [`crate::error::kind_of`], or says why it need not:
//! an error type missing from that list would end a run with exit 2 whatever it means, and
//! nothing else would notice. This test reads the library's non-test sources (and those of the
//! format crate it re-exports, pkgformats) for each type
//! that is an error (`#[derive(… Error …)]`, `impl … Error for T`) and the list in `error.rs`.

use std::collections::BTreeMap;

/// Error types that are not in `kind_of`, each with where its exit is decided instead.
const DECIDED_ELSEWHERE: &[(&str, &str)] = &[
    (
        "AfterChange",
        "a wrapper: `exit::find_map` looks through it to the error it carries",
    ),
    (
        "Interrupted",
        "`error::exit_code_of` gives 128 + the signal before asking kind_of",
    ),
    (
        "StdoutClosed",
        "`main` ends the process by SIGPIPE before any exit code is chosen",
    ),
    (
        "RepoConflict",
        "only ever inside `RepoError::RepoConflicts`, which kind_of lists",
    ),
    (
        "DebSetProblem",
        "only ever inside `InstallError::DebSet`, which kind_of lists",
    ),
    (
        "AllowancePassed",
        "an io::Error payload inside image/layer.rs, turned into an ImageError there",
    ),
];

/// `(type name, file)` of every error type in the library's non-test code.
fn error_types() -> BTreeMap<String, String> {
    let mut files = Vec::new();
    for (src, label) in crate::layers_tests::library_roots() {
        let mut found = Vec::new();
        crate::layers_tests::library_sources(&src, &mut found);
        files.extend(found.into_iter().map(|file| {
            let relative = format!("{label}{}", file.strip_prefix(&src).unwrap().display());
            (file, relative)
        }));
    }
    let mut found = BTreeMap::new();
    for (file, relative) in files {
        let text = std::fs::read_to_string(&file).expect("reading a source file");
        let code = crate::layers_tests::non_test_code(&text);
        for name in derived_errors(&code)
            .into_iter()
            .chain(implemented_errors(&code))
        {
            found.insert(name, relative.clone());
        }
    }
    found
}

/// The types after a `#[derive(…)]` that names `Error` (thiserror's derive).
fn derived_errors(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in code.match_indices("#[derive(") {
        let rest = &code[at..];
        let Some(close) = rest.find(")]") else {
            continue;
        };
        let derives = &rest[..close];
        if !derives
            .split([',', '(', ' '])
            .any(|d| d.trim().ends_with("Error"))
        {
            continue;
        }
        if let Some(name) = item_name(&rest[close..]) {
            names.push(name);
        }
    }
    names
}

/// The name of the first `struct` or `enum` in `text`.
fn item_name(text: &str) -> Option<String> {
    let at = ["struct ", "enum "]
        .iter()
        .filter_map(|k| text.find(k).map(|i| i + k.len()))
        .min()?;
    let name: String = text[at..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The types of `impl std::error::Error for T` (or `impl Error`/`impl StdError for T`).
fn implemented_errors(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in code.lines() {
        let line = line.trim();
        let Some((head, tail)) = line.split_once(" for ") else {
            continue;
        };
        if line.starts_with("impl") && head.ends_with("Error") && !head.contains("Display") {
            let name: String = tail
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            names.push(name);
        }
    }
    names
}

/// The type names in `kind_of`'s list: the last segment before each `=>`.
fn kind_of_entries() -> Vec<String> {
    let text = include_str!("error.rs");
    let start = text
        .find("first_of! {")
        .expect("error.rs: kind_of's first_of! list");
    let list = &text[start..start + text[start..].find("\n    }").unwrap()];
    list.lines()
        .filter_map(|line| line.split_once(" => "))
        .map(|(path, _)| path.trim().rsplit("::").next().unwrap().to_string())
        .collect()
}

#[test]
fn every_error_type_reaches_kind_of() {
    let types = error_types();
    assert!(
        types.len() > 15,
        "found almost no error types ({types:?}): is the test reading the sources?"
    );
    let listed = kind_of_entries();
    let missing: Vec<String> = types
        .iter()
        .filter(|(name, _)| {
            !listed.contains(name) && !DECIDED_ELSEWHERE.iter().any(|(n, _)| n == name)
        })
        .map(|(name, file)| format!("  {name} ({file})"))
        .collect();
    assert!(
        missing.is_empty(),
        "error types that kind_of does not list: a run failing with one exits 2 whatever it \
         means. Add each to `first_of!` in error.rs with its ExitKind, or to DECIDED_ELSEWHERE \
         in {} with where its exit is decided:\n{}",
        file!(),
        missing.join("\n")
    );
    let stale: Vec<&String> = listed.iter().filter(|n| !types.contains_key(*n)).collect();
    assert!(
        stale.is_empty(),
        "kind_of lists types that are not errors of the library: {stale:?}"
    );
    let stale: Vec<&str> = DECIDED_ELSEWHERE
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| !types.contains_key(*n))
        .collect();
    assert!(
        stale.is_empty(),
        "DECIDED_ELSEWHERE names types that are gone: {stale:?}"
    );
}

/// The reader of the sources finds what it is meant to, so the test above can fail.
#[test]
fn the_error_type_reader_finds_each_shape() {
    let code = "#[derive(Debug, thiserror::Error)]\npub(crate) enum A { X }\n\
                #[derive(Debug, Clone)]\npub struct NotAnError;\n\
                #[derive(Debug, Error)]\nstruct B;\n\
                impl std::error::Error for C {}\nimpl fmt::Display for D {}\n";
    assert_eq!(derived_errors(code), ["A", "B"]);
    assert_eq!(implemented_errors(code), ["C"]);
    assert!(kind_of_entries().iter().any(|n| n == "DebError"));
}
