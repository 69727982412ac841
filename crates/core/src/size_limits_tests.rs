//! The size limits of the product and kit sources (CONTRIBUTING.md): no file over
//! [`MAX_FILE_LINES`] lines, no function over [`MAX_FN_LINES`]. Functions are found in the
//! token stream of `module_graph_tests` (comments, strings and char literals dropped, so a
//! brace in a message or a doc comment never moves the count): `fn name`, then the first `{`
//! or `;` at the signature's own depth; a body runs to the brace that closes that `{`.

use std::path::{Path, PathBuf};

use crate::module_graph_tests::{tokens, Tok};

const MAX_FILE_LINES: usize = 1_000;
const MAX_FN_LINES: usize = 120;

/// Each function with a body in `text`: `(name, first line, lines from `fn` to its `}`)`.
fn function_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let toks = tokens(text);
    let mut out = Vec::new();
    for (i, (tok, line)) in toks.iter().enumerate() {
        let Tok::Ident(kw) = tok else { continue };
        // `fn(u32) -> u32` (a pointer type) names no function.
        let Some((Tok::Ident(name), _)) = toks.get(i + 1) else {
            continue;
        };
        if kw != "fn" {
            continue;
        }
        // The signature: parentheses and generics may hold `;` or `{` only inside brackets.
        let mut depth = 0i32;
        let mut j = i + 2;
        let open = loop {
            match toks.get(j) {
                None => break None,
                Some((Tok::Punct('(' | '[' | '<'), _)) => depth += 1,
                Some((Tok::Punct(')' | ']' | '>'), _)) => depth -= 1,
                Some((Tok::Punct(';'), _)) if depth <= 0 => break None,
                Some((Tok::Punct('{'), _)) if depth <= 0 => break Some(j),
                _ => {}
            }
            j += 1;
        };
        let Some(open) = open else { continue };
        let mut braces = 0usize;
        for (tok, end) in &toks[open..] {
            match tok {
                Tok::Punct('{') => braces += 1,
                Tok::Punct('}') => {
                    braces -= 1;
                    if braces == 0 {
                        out.push((name.clone(), *line, end - line + 1));
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// Every `.rs` file of the core, the kit and the binary.
fn product_files() -> Vec<PathBuf> {
    let core = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths: Vec<PathBuf> = ["src", "../kit/src", "../../src"]
        .iter()
        .flat_map(|dir| crate::layers_tests::rust_files_under(&core.join(dir)))
        .collect();
    paths.sort();
    paths
}

/// One line per file or function over its limit.
fn over_limits(name: &str, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let lines = text.lines().count();
    if lines > MAX_FILE_LINES {
        found.push(format!("{name}: {lines} lines (at most {MAX_FILE_LINES})"));
    }
    for (f, line, len) in function_lengths(text) {
        if len > MAX_FN_LINES {
            found.push(format!(
                "{name}:{line}: fn {f} is {len} lines (at most {MAX_FN_LINES})"
            ));
        }
    }
    found
}

#[test]
fn no_source_file_or_function_is_over_its_limit() {
    let files = product_files();
    assert!(files.len() > 100, "found only {} source files", files.len());
    let found: Vec<String> = files
        .iter()
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).expect("reading a source file");
            over_limits(&p.display().to_string(), &text)
        })
        .collect();
    assert!(
        found.is_empty(),
        "split these by concept (new files, helper functions):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_planted_long_function_and_file_fail_the_check() {
    let body = "    let x = 1;\n".repeat(MAX_FN_LINES);
    let text = format!(
        "/// fn not_code() {{\nfn short(a: [u8; 2]) -> u8 {{ a[0] }}\nfn long() {{\n    let s = \"}}\";\n{body}}}\nfn after() {{}}\n"
    );
    let found = over_limits("planted.rs", &text);
    assert_eq!(
        found,
        [format!(
            "planted.rs:3: fn long is {} lines (at most {MAX_FN_LINES})",
            MAX_FN_LINES + 3
        )]
    );
    let lengths = function_lengths(&text);
    let names: Vec<&str> = lengths.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, ["short", "long", "after"]);
    let big = "//\n".repeat(MAX_FILE_LINES + 1);
    assert_eq!(over_limits("big.rs", &big).len(), 1);
    assert!(over_limits("ok.rs", &"//\n".repeat(MAX_FILE_LINES)).is_empty());
}
