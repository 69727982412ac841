//! The reading rule, checked (docs/security.md): nothing under a `--root`, an image or an
//! existing repository is opened with a host lookup. Such paths go through the in-root
//! resolver (`host/root/`), which opens every component beneath the root and refuses links
//! out of it, devices, FIFOs and files over their kind's cap.
//!
//! This test reads the library's non-test sources and finds every `std::fs` call (and
//! `std::os::unix::fs::symlink`, `walkdir`), however it is spelt: `std::fs::read(…)`,
//! `use std::fs;` then `fs::read(…)`, `use std::fs::{self as f, File};` then `File::open(…)`,
//! calls split over lines. Every call outside the resolver must be in `AUDITED`
//! (`fs_rule_audited_tests.rs`): the file, the function and why the path it takes is not one a
//! root, an image or a repository chose. A new call fails the test until it is routed through
//! the resolver or audited there, and an entry that no longer names a call fails too, so the
//! list stays the audit of today's code.
//!
//! Not covered: `Path` methods that look paths up (`exists`, `is_dir`, `metadata`, …) and
//! external programs given a path; review catches those.

use std::collections::BTreeMap;

#[path = "fs_rule_audited_tests.rs"]
mod audited;
use audited::{Audited, Category::Temporary, AUDITED};

/// The resolver: the one module that opens paths under a root, by design.
const RESOLVER: &str = "host/root/mod.rs";

/// One fs call found in the sources.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Site {
    file: String,
    function: String,
    line: usize,
    /// The call as written, e.g. `fs::read_to_string`.
    call: String,
}

/// The `std::fs` functions and constructors that look a path up on the host.
const FS_FUNCTIONS: &[&str] = &[
    "read",
    "read_to_string",
    "write",
    "read_dir",
    "metadata",
    "symlink_metadata",
    "read_link",
    "canonicalize",
    "create_dir",
    "create_dir_all",
    "remove_file",
    "remove_dir",
    "remove_dir_all",
    "rename",
    "copy",
    "hard_link",
    "soft_link",
    "set_permissions",
    "exists",
];
/// `Type::function` pairs of `std::fs` that open or make a path (or start to: an
/// `OpenOptions::new()` ends in `.open(path)`).
const FS_CONSTRUCTORS: &[(&str, &str)] = &[
    ("File", "open"),
    ("File", "create"),
    ("File", "create_new"),
    ("File", "options"),
    ("OpenOptions", "new"),
    ("DirBuilder", "new"),
];

/// The code with comments, string and char literals blanked (newlines kept, so line numbers
/// stay right): a `fs::read` in a doc comment or a message is not a call.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&chars, i) {
            // r"…", r#"…"#, br#"…"#: up to the quote followed by as many #.
            let open = chars[i..].iter().position(|&c| c == '"').unwrap() + i;
            for &c in &chars[i..=open] {
                blank(&mut out, c);
            }
            i = open + 1;
            while i < chars.len() {
                let closes =
                    chars[i] == '"' && (0..hashes).all(|k| chars.get(i + 1 + k) == Some(&'#'));
                if closes {
                    out.extend(std::iter::repeat_n(' ', hashes + 1));
                    i += hashes + 1;
                    break;
                }
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A char literal ('a', '\n', '\u{1b}') or a lifetime ('a): only literals blanked.
            let end = if next == Some('\\') {
                chars[i + 2..]
                    .iter()
                    .position(|&c| c == '\'')
                    .map(|p| i + 2 + p)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.extend(std::iter::repeat_n(' ', end + 1 - i));
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The number of `#` of a raw string starting at `i` (`r"`, `r#"`, `br##"`), None otherwise.
fn raw_string_start(chars: &[char], i: usize) -> Option<usize> {
    if i > 0 && is_ident_char(chars[i - 1]) {
        return None;
    }
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|&&c| c == '#').count();
    (chars.get(j + hashes) == Some(&'"')).then_some(hashes)
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// What a file calls `std::fs` and its items: `use std::fs;` makes `fs` a name of the module,
/// `use std::fs::{self as f, File, read as slurp}` makes `f` one and `File`, `slurp` names of
/// items (the alias mapped to the item's own name).
#[derive(Debug, Default)]
struct FsNames {
    modules: Vec<String>,
    items: BTreeMap<String, String>,
}

/// Every `use` tree in `code` expanded to `(path, name it is bound to)`.
fn use_paths(code: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = find_keyword(rest, "use") {
        let after = &rest[at + 3..];
        let Some(end) = after.find(';') else { break };
        let tree: String = after[..end].split_whitespace().collect();
        expand_use("", &tree, &mut found);
        rest = &after[end..];
    }
    found
}

/// `keyword` as a whole word in `text`.
fn find_keyword(text: &str, keyword: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find(keyword).map(|p| p + from) {
        let before = text[..at].chars().next_back();
        let after = text[at + keyword.len()..].chars().next();
        if !before.is_some_and(is_ident_char) && after.is_some_and(char::is_whitespace) {
            return Some(at);
        }
        from = at + keyword.len();
    }
    None
}

/// Expand one use tree (whitespace removed) under `prefix`.
fn expand_use(prefix: &str, tree: &str, found: &mut Vec<(String, String)>) {
    let join = |p: &str, s: &str| {
        if p.is_empty() {
            s.to_string()
        } else {
            format!("{p}::{s}")
        }
    };
    let tree = tree.trim_start_matches("::");
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim_end_matches("::");
        let base = join(prefix, head);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        for item in split_top_level(inner) {
            expand_use(&base, item, found);
        }
        return;
    }
    let (path, alias) = split_alias(tree);
    let full = if path == "self" {
        prefix.to_string()
    } else {
        join(prefix, path)
    };
    let bound = match alias {
        Some(a) => a.to_string(),
        None if path == "self" => prefix.rsplit("::").next().unwrap_or("").to_string(),
        None => path.rsplit("::").next().unwrap_or("").to_string(),
    };
    if !full.is_empty() && bound != "_" && bound != "*" {
        found.push((full, bound));
    }
}

/// `a::b` or an aliased `a::b⟨as⟩c` (the tree is stored with an `as` marker, see
/// [`use_paths`]).
fn split_alias(tree: &str) -> (&str, Option<&str>) {
    match tree.split_once(AS_MARKER) {
        Some((path, alias)) => (path, Some(alias)),
        None => (tree, None),
    }
}

/// What ` as ` becomes before whitespace is removed from a use tree.
const AS_MARKER: &str = "⟨as⟩";

/// The items of a `{…}` group, split at its top-level commas.
fn split_top_level(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items.into_iter().filter(|s| !s.is_empty()).collect()
}

fn fs_names(code: &str) -> FsNames {
    let marked = mark_aliases(code);
    let mut names = FsNames::default();
    for (path, bound) in use_paths(&marked) {
        let path = path.trim_start_matches("::");
        if path == "std::fs" {
            names.modules.push(bound);
        } else if let Some(item) = path.strip_prefix("std::fs::") {
            names.items.insert(bound, item.to_string());
        } else if path == "std::os::unix::fs::symlink" || path == "walkdir::WalkDir" {
            names
                .items
                .insert(bound, path.rsplit("::").next().unwrap().into());
        }
    }
    names
}

/// ` as ` between two names marked with [`AS_MARKER`], so it survives whitespace removal.
fn mark_aliases(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = find_keyword(rest, "as") {
        let before = rest[..at].chars().next_back();
        if before.is_some_and(char::is_whitespace) {
            out.push_str(&rest[..at]);
            out.push_str(AS_MARKER);
        } else {
            out.push_str(&rest[..at + 2]);
        }
        rest = &rest[at + 2..];
    }
    out.push_str(rest);
    out
}

/// The path expression (`a::b::c`, spaces and newlines around `::` allowed) starting at
/// byte `at` of `code`, as its segments, and the byte after it.
fn path_at(code: &str, at: usize) -> (Vec<&str>, usize) {
    let mut segments = Vec::new();
    let mut i = at;
    loop {
        let len = code[i..]
            .find(|c: char| !is_ident_char(c))
            .unwrap_or(code.len() - i);
        if len == 0 {
            break;
        }
        segments.push(&code[i..i + len]);
        i += len;
        let after_space = i + (code[i..].len() - code[i..].trim_start().len());
        if !code[after_space..].starts_with("::") {
            break;
        }
        let next = after_space + 2;
        let next = next + (code[next..].len() - code[next..].trim_start().len());
        if code[next..].starts_with(|c: char| is_ident_char(c)) {
            i = next;
        } else {
            break; // `::{` or `::<`: not a call path we look into
        }
    }
    (segments, i)
}

/// The fs call a path expression makes, if any: the segments after `std::fs` (resolved
/// through the file's names) name a function or a constructor of [`FS_FUNCTIONS`] /
/// [`FS_CONSTRUCTORS`].
fn fs_call(segments: &[&str], names: &FsNames, called: bool) -> Option<String> {
    let segments: Vec<&str> = if segments.first() == Some(&"") {
        segments[1..].to_vec()
    } else {
        segments.to_vec()
    };
    let rest: Vec<&str> = match segments.as_slice() {
        ["std", "fs", rest @ ..] => rest.to_vec(),
        ["std", "os", "unix", "fs", "symlink"] | ["walkdir", "WalkDir", "new"] => {
            return called.then(|| segments.join("::"));
        }
        [first, rest @ ..] if names.modules.iter().any(|m| m == first) => rest.to_vec(),
        [first, rest @ ..] => match names.items.get(*first) {
            Some(item) => std::iter::once(item.as_str())
                .chain(rest.iter().copied())
                .collect(),
            None => return None,
        },
        [] => return None,
    };
    let is_call = match rest.as_slice() {
        [f] => FS_FUNCTIONS.contains(f) || *f == "symlink",
        [t, f] => FS_CONSTRUCTORS.contains(&(*t, *f)) || (*t, *f) == ("WalkDir", "new"),
        _ => false,
    };
    (is_call && called).then(|| segments.join("::"))
}

/// Every fs call in one file's code (comments and literals already blanked), with the
/// function it is in.
fn sites_in(file: &str, code: &str) -> Vec<Site> {
    let names = fs_names(code);
    let mut sites = Vec::new();
    let mut functions: Vec<(String, usize)> = Vec::new(); // (name, depth its body opened at)
    let mut pending_fn: Option<String> = None;
    let mut depth = 0usize;
    let mut line = 1;
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let c = bytes[i];
        match c {
            b'\n' => line += 1,
            b'{' => {
                if let Some(name) = pending_fn.take() {
                    functions.push((name, depth));
                }
                depth += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                if functions.last().is_some_and(|(_, d)| *d == depth) {
                    functions.pop();
                }
            }
            b';' => pending_fn = None, // a declaration without a body
            _ => {}
        }
        let starts_word = is_ident_char(c as char)
            && (i == 0 || !is_ident_char(bytes[i - 1] as char))
            && !continues_a_path(&code[..i]);
        if !starts_word {
            i += 1;
            continue;
        }
        let (segments, end) = path_at(code, i);
        if segments == ["fn"] {
            let (name, _) = path_at(
                code,
                end + (code[end..].len() - code[end..].trim_start().len()),
            );
            if let Some(name) = name.first() {
                pending_fn = Some((*name).to_string());
            }
        } else {
            let called = code[end..].trim_start().starts_with('(');
            if let Some(call) = fs_call(&segments, &names, called) {
                sites.push(Site {
                    file: file.to_string(),
                    function: functions
                        .last()
                        .map_or("(top level)".to_string(), |(f, _)| f.clone()),
                    line,
                    call,
                });
            }
        }
        line += code[i..end].matches('\n').count();
        i = end.max(i + 1);
    }
    sites
}

/// True when the code before a word makes it the middle of a path or a method (`a::b`,
/// `x.read_to_string`), not the start of one (`::std::fs::read` starts one).
fn continues_a_path(before: &str) -> bool {
    let before = before.trim_end();
    if before.ends_with('.') {
        return true;
    }
    match before.strip_suffix("::") {
        Some(head) => head
            .trim_end()
            .ends_with(|c: char| is_ident_char(c) || c == '>'),
        None => false,
    }
}

/// Every fs call in the library's non-test sources: this crate's, and those of the format
/// crate it re-exports (`pkgformats`, crates/formats: it reads the .debs and images the rule is
/// about), whose files are named `pkgformats/<path>`.
fn all_sites() -> Vec<Site> {
    let mut sites = Vec::new();
    for (src, label) in crate::layers_tests::library_roots() {
        let mut files = Vec::new();
        crate::layers_tests::library_sources(&src, &mut files);
        files.sort();
        for path in files {
            let file = format!("{label}{}", path.strip_prefix(&src).unwrap().display());
            let text = std::fs::read_to_string(&path).expect("reading a source file");
            let code = code_only(&crate::layers_tests::non_test_code(&text));
            sites.extend(sites_in(&file, &code));
        }
    }
    sites
}

fn audited_entry(site: &Site) -> Option<&'static Audited> {
    AUDITED
        .iter()
        .find(|a| a.file == site.file && a.function == site.function)
}

#[test]
fn every_fs_call_outside_the_resolver_is_audited() {
    let sites = all_sites();
    assert!(
        sites.len() > 50,
        "the scan found almost no fs calls: is it reading the sources?"
    );
    let unaudited: Vec<String> = sites
        .iter()
        .filter(|s| s.file != RESOLVER && audited_entry(s).is_none())
        .map(|s| format!("  {}:{} in fn {}: {}", s.file, s.line, s.function, s.call))
        .collect();
    assert!(
        unaudited.is_empty(),
        "{} std::fs call(s) outside the resolver ({RESOLVER}) are not audited. A path under a \
         --root, an image or an existing repository must be opened through host::root::Root; \
         a path that is not (our own tempdir, a file the user named, the live host's own \
         configuration) gets an entry in AUDITED (crates/core/src/fs_rule_audited_tests.rs) saying \
         why:\n{}",
        unaudited.len(),
        unaudited.join("\n")
    );
}

#[test]
fn every_audited_entry_still_names_a_call() {
    let sites = all_sites();
    let stale: Vec<String> = AUDITED
        .iter()
        .filter(|a| {
            !sites
                .iter()
                .any(|s| s.file == a.file && s.function == a.function)
        })
        .map(|a| {
            let note = if a.category == Temporary {
                " (TEMPORARY: its fix has landed; remove the entry)"
            } else {
                ""
            };
            format!("  {} fn {}{note}", a.file, a.function)
        })
        .collect();
    assert!(
        stale.is_empty(),
        "AUDITED entries that name no fs call any more; remove them:\n{}",
        stale.join("\n")
    );
    for a in AUDITED {
        assert!(
            !a.why.trim().is_empty(),
            "{} fn {}: say why",
            a.file,
            a.function
        );
    }
}

/// The scanner on planted code: each spelling of an fs call is found in the function it is
/// in, and nothing in comments, strings, types or reader methods is.
#[test]
fn the_scanner_finds_planted_calls_however_they_are_spelt() {
    let planted = r##"
use std::fs;
use std::io::Read;
use std::{fs::{self as f, File as F, read_dir as listing}, io};
use std::os::unix::fs::symlink;

/// `fs::read(path)` in a doc comment is not a call.
fn reads_the_marker(root: &Path) -> String {
    let text = "std::fs::read_to_string(x) in a string";
    let s = r#"fs::write("/", b"")"#;
    let c = '{';
    fs::read_to_string(
        root.join("opt/rocm/.info/rocm-pin.json"),
    )
    .unwrap()
}

fn opens(root: &Path, f2: std::fs::File) -> std::fs::Metadata {
    let mut s = String::new();
    f2.read_to_string(&mut s);
    let _ = F::open(root.join("etc/machine-id"));
    let _ = listing(root);
    let _ = f::OpenOptions::new().write(true).open(root);
    let _ = std
        ::fs
        ::symlink_metadata(root);
    symlink("a", root.join("b"));
    std::fs::Permissions::from_mode(0o644);
    impl X { fn inner(&self) { let _ = ::std::fs::read(root); } }
    fs::metadata(root).unwrap()
}
"##;
    let sites = sites_in("planted.rs", &code_only(planted));
    let found: Vec<(&str, &str, usize)> = sites
        .iter()
        .map(|s| (s.function.as_str(), s.call.as_str(), s.line))
        .collect();
    assert_eq!(
        found,
        [
            ("reads_the_marker", "fs::read_to_string", 12),
            ("opens", "F::open", 21),
            ("opens", "listing", 22),
            ("opens", "f::OpenOptions::new", 23),
            ("opens", "std::fs::symlink_metadata", 24),
            ("opens", "symlink", 27),
            ("inner", "std::fs::read", 29),
            ("opens", "fs::metadata", 30),
        ],
        "{sites:#?}"
    );
    // A planted call in an audited file but another function is a violation.
    let stray = Site {
        file: "ops/verify.rs".into(),
        function: "reads_the_marker".into(),
        line: 1,
        call: "fs::read_to_string".into(),
    };
    assert!(audited_entry(&stray).is_none());
}
