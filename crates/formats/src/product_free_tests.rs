//! The crate knows no product built on it: no ROCm word (package, library or symbol prefix),
//! no rocm-pin name, no host database path, anywhere in its sources (code, comments, tests).
//! A word of them here means knowledge that belongs in the caller (rocm-pin's core).

use std::path::{Path, PathBuf};

/// Words (compared whole, case-insensitively, after splitting on everything not a letter or
/// digit: `hsa_amd_x` holds `hsa`, `relationship` holds no `hip`).
const PRODUCT_WORDS: &[&str] = &["rocm", "rocr", "hip", "hsa", "amdgpu", "amdhip64", "pin"];
/// Host paths the format crate has no business naming.
const HOST_PATHS: &[&str] = &["/var/lib/dpkg", "/etc/apt", "/opt/rocm"];

fn findings(file: &str, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let lower = line.to_lowercase();
        let words = lower.split(|c: char| !c.is_alphanumeric());
        for word in words.filter(|w| PRODUCT_WORDS.contains(w)) {
            found.push(format!(
                "  {file}:{}: `{word}` in: {}",
                number + 1,
                line.trim()
            ));
        }
        for path in HOST_PATHS.iter().filter(|p| lower.contains(*p)) {
            found.push(format!(
                "  {file}:{}: `{path}` in: {}",
                number + 1,
                line.trim()
            ));
        }
    }
    found
}

/// Every `.rs` file below `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|entry| entry.expect("reading crates/formats/src").into_path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect()
}

#[test]
fn no_product_or_host_knowledge_in_the_sources() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = sources(&src);
    files.retain(|f| !f.ends_with("product_free_tests.rs"));
    assert!(files.len() > 20, "read almost no sources: {files:?}");
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("reading a source file");
        found.extend(findings(
            &file.strip_prefix(&src).unwrap().display().to_string(),
            &text,
        ));
    }
    assert!(
        found.is_empty(),
        "{} place(s) in crates/formats name a product or a host path; move that knowledge to \
         the caller (rocm-pin's crates/core) or say it generically:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_check_finds_planted_words() {
    let planted = "// the libhsa-runtime64 of ROCm\nconst P: &str = \"/opt/rocm/lib\";\n\
                   fn f() { let _ = \"hsa_amd_signal_create\"; }\nconst D: &str = \"/var/lib/dpkg/status\";\n";
    let found = findings("planted.rs", planted).join("\n");
    for expected in ["`rocm`", "`/opt/rocm`", "`hsa`", "`/var/lib/dpkg`"] {
        assert!(found.contains(expected), "{expected} not found:\n{found}");
    }
    assert!(findings("ok.rs", "// relationship fields; shipping; dpkg-deb's walk").is_empty());
}
