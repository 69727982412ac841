//! Shared helpers for the ELF tests: build real shared objects with gcc, and read what
//! `readelf` (binutils, the judge) says about a file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

pub use rocm_pin_testkit::must_stdout;

pub fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// What `readelf -d -W` says: (SONAME, NEEDED in order).
pub fn readelf_dynamic(path: &Path) -> (Option<String>, Vec<String>) {
    let text = must_stdout(Command::new("readelf").args(["-d", "-W"]).arg(path));
    let mut soname = None;
    let mut needed = Vec::new();
    for line in text.lines() {
        let bracketed = || {
            let start = line.find('[')? + 1;
            let end = line.rfind(']')?;
            Some(line[start..end].to_string())
        };
        if line.contains("(SONAME)") {
            soname = bracketed();
        } else if line.contains("(NEEDED)") {
            needed.push(bracketed().expect("NEEDED line with a [name]"));
        }
    }
    (soname, needed)
}

/// Version names `readelf -V` shows (defined and needed).
pub fn readelf_version_names(path: &Path) -> BTreeSet<String> {
    let text = must_stdout(Command::new("readelf").args(["-V", "-W"]).arg(path));
    text.split("Name: ")
        .skip(1)
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// What `readelf --dyn-syms -W` lists as defined GLOBAL/WEAK/UNIQUE symbols with default or
/// protected visibility, as `name`, `name@@VER` or `name@VER` followed by `func` or `data` and
/// the symbol's size — without the absolute marker symbols ld emits per version name (readelf
/// prints those as the bare version name).
pub fn readelf_exports(path: &Path) -> BTreeSet<String> {
    let versions = readelf_version_names(path);
    let text = must_stdout(Command::new("readelf").args(["--dyn-syms", "-W"]).arg(path));
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // Num: Value Size Type Bind Vis Ndx Name
        if fields.len() < 8 || !fields[0].ends_with(':') || fields[0] == "Num:" {
            continue;
        }
        let (size, kind, bind, vis, ndx, name) = (
            fields[2], fields[3], fields[4], fields[5], fields[6], fields[7],
        );
        if !matches!(bind, "GLOBAL" | "WEAK" | "UNIQUE") {
            continue;
        }
        if !matches!(vis, "DEFAULT" | "PROTECTED") || ndx == "UND" {
            continue;
        }
        if ndx == "ABS" && versions.contains(name) {
            continue;
        }
        let kind = if matches!(kind, "FUNC" | "IFUNC") {
            "func"
        } else {
            "data"
        };
        let size = match size.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
            None => size.parse::<u64>().unwrap(),
        };
        out.insert(format!("{name} {kind} {size}"));
    }
    out
}

/// The versioned names rocm_pin_core::elf reports, with kind and size as [`readelf_exports`].
pub fn our_exports(info: &rocm_pin_core::elf::ElfInfo) -> BTreeSet<String> {
    info.exports
        .iter()
        .map(|s| {
            let kind = if s.function { "func" } else { "data" };
            format!("{} {kind} {}", s.versioned_name(), s.size)
        })
        .collect()
}

/// Assert rocm_pin_core::elf agrees with readelf on SONAME, NEEDED and exports.
pub fn assert_matches_readelf(path: &Path) -> rocm_pin_core::elf::ElfInfo {
    let info = rocm_pin_core::elf::read_elf(path)
        .unwrap_or_else(|e| panic!("read_elf {}: {e:#}", path.display()));
    let (soname, needed) = readelf_dynamic(path);
    assert_eq!(info.soname, soname, "SONAME of {}", path.display());
    assert_eq!(info.needed, needed, "NEEDED of {}", path.display());
    assert_eq!(
        our_exports(&info),
        readelf_exports(path),
        "exports of {}",
        path.display()
    );
    info
}

pub const BAR_C: &str = "int bar_value(void) { return 42; }\n";

/// A library that exercises every kind of dynamic symbol we classify.
pub const FOO_C: &str = r#"
extern int bar_value(void);
int hsa_amd_signal_create_v2(void) { return bar_value() + 2; }
int old_v0(void) { return 0; }
int old_v1(void) { return 1; }
__asm__(".symver old_v0,old@ROCR_0");
__asm__(".symver old_v1,old@@ROCR_1");
__attribute__((weak)) int weak_fn(void) { return 3; }
int exported_data = 7;
__attribute__((visibility("protected"))) int protected_fn(void) { return 4; }
__attribute__((visibility("hidden"))) int hidden_fn(void) { return 5; }
int uses_hidden(void) { return hidden_fn(); }
static int local_fn(void) { return 6; }
int uses_local(void) { return local_fn(); }
"#;

pub const FOO_MAP: &str = r#"
ROCR_0 { global: old; local: *; };
ROCR_1 {
  global: hsa_amd_signal_create_v2; weak_fn; exported_data; protected_fn; uses_hidden; uses_local;
} ROCR_0;
"#;

/// Build libbar.so.1 and libfoo.so.7 (NEEDED libbar.so.1, versioned) in `dir` with the given
/// extra gcc flags (e.g. `-m32 -nostdlib`). Returns (libfoo, libbar).
pub fn build_foo_bar(dir: &Path, flags: &[&str]) -> (PathBuf, PathBuf) {
    write(&dir.join("bar.c"), BAR_C);
    write(&dir.join("foo.c"), FOO_C);
    write(&dir.join("foo.map"), FOO_MAP);
    let dep = dir.join("libbar.so.1");
    must_stdout(
        Command::new("gcc")
            .current_dir(dir)
            .args(["-shared", "-fPIC", "-O1", "-Wl,-soname,libbar.so.1", "-o"])
            .arg(&dep)
            .arg("bar.c")
            .args(flags),
    );
    let lib = dir.join("libfoo.so.7.2.0");
    must_stdout(
        Command::new("gcc")
            .current_dir(dir)
            .args([
                "-shared",
                "-fPIC",
                "-O1",
                "-g",
                "-Wl,-soname,libfoo.so.7",
                "-Wl,--version-script=foo.map",
                "-o",
            ])
            .arg(&lib)
            .arg("foo.c")
            .args(flags)
            .arg("-L.")
            .arg("-l:libbar.so.1"),
    );
    (lib, dep)
}
