//! rocm_pin_core::elf against real gcc-built shared objects, judged by readelf.

use rocm_pin_testkit::assert_says;
use std::path::Path;
use std::process::Command;

use crate::util::elf::*;
use rocm_pin_core::elf::{read_elf, ElfInfo};

fn sym(info: &ElfInfo, versioned: &str) -> bool {
    info.exports.iter().any(|s| s.versioned_name() == versioned)
}

fn assert_foo_facts(info: &ElfInfo) {
    assert!(info.shared_object);
    assert_eq!(info.soname.as_deref(), Some("libfoo.so.7"));
    assert_eq!(info.needed.first().map(String::as_str), Some("libbar.so.1"));

    let signal = info.export("hsa_amd_signal_create_v2").unwrap();
    assert_eq!(
        (&signal.name, signal.version.as_deref(), signal.default),
        (
            &"hsa_amd_signal_create_v2".to_string(),
            Some("ROCR_1"),
            true
        )
    );
    assert!(signal.function && signal.size > 0, "{signal:?}");
    let data = info.export("exported_data").unwrap();
    assert!(!data.function && data.size == 4, "an int: {data:?}");
    // The hidden old version and the default new one of the same name.
    assert!(sym(info, "old@ROCR_0"), "{:?}", info.exports);
    assert!(sym(info, "old@@ROCR_1"), "{:?}", info.exports);
    assert_eq!(
        info.export("old").and_then(|s| s.version.as_deref()),
        Some("ROCR_1")
    );
    let hidden = info
        .exports
        .iter()
        .find(|s| s.name == "old" && !s.default)
        .expect("hidden old@ROCR_0");
    assert_eq!(hidden.version.as_deref(), Some("ROCR_0"));
    // Weak, data and protected symbols are exported; hidden-visibility, static, local-by-script
    // and undefined ones are not.
    assert!(sym(info, "weak_fn@@ROCR_1"));
    assert!(sym(info, "exported_data@@ROCR_1"));
    assert!(sym(info, "protected_fn@@ROCR_1"));
    for absent in ["hidden_fn", "local_fn", "bar_value"] {
        assert!(
            info.export(absent).is_none(),
            "{absent} must not be exported"
        );
    }
}

#[test]
fn gcc_built_versioned_library_64bit() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, dep) = build_foo_bar(dir.path(), &[]);
    let info = assert_matches_readelf(&lib);
    assert_foo_facts(&info);

    let dep_info = assert_matches_readelf(&dep);
    assert_eq!(dep_info.soname.as_deref(), Some("libbar.so.1"));
    // No version script: exported, unversioned, default.
    let bar = dep_info.export("bar_value").unwrap();
    assert_eq!(
        (&bar.name, bar.version.as_deref(), bar.default, bar.function),
        (&"bar_value".to_string(), None, true, true)
    );
}

#[test]
fn gcc_built_versioned_library_32bit_and_x32() {
    // ELF32 little-endian through the host toolchain; -nostdlib because the 32-bit libc is
    // not installed (nothing here calls it).
    for flags in [&["-m32", "-nostdlib"][..], &["-mx32", "-nostdlib"][..]] {
        let dir = tempfile::tempdir().unwrap();
        let (lib, _dep) = build_foo_bar(dir.path(), flags);
        let class = must_stdout(Command::new("readelf").args(["-h"]).arg(&lib));
        assert!(class.contains("ELF32"), "{flags:?} built {class}");
        let info = assert_matches_readelf(&lib);
        assert_foo_facts(&info);
    }
}

#[test]
fn stripped_copies_keep_exports() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, _dep) = build_foo_bar(dir.path(), &[]);
    let original = read_elf(&lib).unwrap();
    let has_symtab =
        |p: &Path| must_stdout(Command::new("readelf").arg("-S").arg(p)).contains(".symtab");
    assert!(has_symtab(&lib), "the unstripped library has a .symtab");
    for mode in ["--strip-debug", "--strip-unneeded", "--strip-all"] {
        let copy = dir.path().join(format!("libfoo{mode}.so"));
        must_stdout(
            Command::new("strip")
                .arg(mode)
                .arg("-o")
                .arg(&copy)
                .arg(&lib),
        );
        let info = assert_matches_readelf(&copy);
        assert_eq!(info, original, "{mode} changed the dynamic facts");
        if mode != "--strip-debug" {
            assert!(!has_symtab(&copy), "{mode} removed .symtab");
        }
    }
}

/// Remove the section header table (what `sstrip` does): the loader never needs it, and the
/// version tables must then be found through DT_VERSYM / DT_VERDEF.
#[test]
fn without_section_headers_versions_come_from_the_dynamic_section() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, _dep) = build_foo_bar(dir.path(), &[]);
    let original = read_elf(&lib).unwrap();
    let mut bytes = std::fs::read(&lib).unwrap();
    // ELF64 little-endian header: e_shoff @0x28 (8 bytes), e_shnum @0x3c, e_shstrndx @0x3e.
    bytes[0x28..0x30].fill(0);
    bytes[0x3c..0x40].fill(0);
    let sstripped = dir.path().join("libfoo-noshdr.so");
    std::fs::write(&sstripped, &bytes).unwrap();
    let sections = must_stdout(Command::new("readelf").arg("-S").arg(&sstripped));
    assert_says(&sections, &["There are no sections"]);
    let info = read_elf(&sstripped).unwrap();
    assert_eq!(info, original);
}

#[test]
fn executable_is_not_a_shared_object() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("main.c"), "int main(void) { return 0; }\n");
    let exe = dir.path().join("main");
    must_stdout(
        Command::new("gcc")
            .current_dir(dir.path())
            .args(["-no-pie", "-o"])
            .arg(&exe)
            .arg("main.c"),
    );
    let info = assert_matches_readelf(&exe);
    assert!(!info.shared_object);
    assert_eq!(info.soname, None);
    // A non-ELF file and a missing file: errors naming the path.
    let c = dir.path().join("main.c");
    let err = format!("{:#}", read_elf(&c).unwrap_err());
    assert!(
        err.contains("main.c") && err.contains("not an ELF"),
        "{}",
        err
    );
    let missing = dir.path().join("nope.so");
    let err = format!("{:#}", read_elf(&missing).unwrap_err());
    assert_says(&err, &["nope.so"]);
    let empty = dir.path().join("empty.so");
    std::fs::write(&empty, b"").unwrap();
    assert!(read_elf(&empty).is_err());
}
