//! Big-endian (and little-endian) ELF32/ELF64 shared objects made with Debian's powerpc cross
//! binutils (unpacked into the cache by scripts/setup.d/11-cross-binutils.sh), judged by readelf.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::elf::*;

/// Data symbols only: they assemble the same way on every target (no function descriptors).
const LIB_S: &str = r#"
  .data
  .globl hsa_amd_signal_create_v2
  .type hsa_amd_signal_create_v2,@object
  .size hsa_amd_signal_create_v2,4
hsa_amd_signal_create_v2:
  .long dep_value
  .globl old_v0
  .type old_v0,@object
  .size old_v0,4
old_v0:
  .long 0
  .symver old_v0,old@ROCR_0
  .globl old_v1
  .type old_v1,@object
  .size old_v1,4
old_v1:
  .long 1
  .symver old_v1,old@@ROCR_1
  .weak weak_value
  .type weak_value,@object
  .size weak_value,4
weak_value:
  .long 3
"#;

const DEP_S: &str = r#"
  .data
  .globl dep_value
  .type dep_value,@object
  .size dep_value,4
dep_value:
  .long 42
"#;

const LIB_MAP: &str = "ROCR_0 { global: old; local: *; };\nROCR_1 { global: hsa_amd_signal_create_v2; weak_value; } ROCR_0;\n";

struct Cross {
    bin: PathBuf,
    lib: PathBuf,
}

/// The cross binutils under `root` (the `cross-binutils/root` test input).
fn cross(root: &Path) -> Cross {
    let bin = root.join("usr/bin");
    assert!(
        bin.join("powerpc-linux-gnu-ld").is_file(),
        "{} is missing: run scripts/test-setup",
        bin.display()
    );
    Cross {
        bin,
        lib: root.join("usr/lib/x86_64-linux-gnu"),
    }
}

impl Cross {
    fn tool(&self, name: &str) -> Command {
        let mut cmd = Command::new(self.bin.join(format!("powerpc-linux-gnu-{name}")));
        cmd.env("LD_LIBRARY_PATH", &self.lib);
        cmd
    }
}

/// (as flags, ld emulation, readelf class, readelf data)
const TARGETS: &[(&[&str], &str, &str, &str)] = &[
    (&["-a32", "-mbig"], "elf32ppc", "ELF32", "big endian"),
    (&["-a64", "-mbig"], "elf64ppc", "ELF64", "big endian"),
    (&["-a32", "-mlittle"], "elf32lppc", "ELF32", "little endian"),
    (&["-a64", "-mlittle"], "elf64lppc", "ELF64", "little endian"),
];

fn build(cross: &Cross, dir: &Path, as_flags: &[&str], emulation: &str) -> PathBuf {
    write(&dir.join("lib.s"), LIB_S);
    write(&dir.join("dep.s"), DEP_S);
    write(&dir.join("lib.map"), LIB_MAP);
    for src in ["lib", "dep"] {
        must_stdout(cross.tool("as").current_dir(dir).args(as_flags).args([
            "-o",
            &format!("{src}.o"),
            &format!("{src}.s"),
        ]));
    }
    must_stdout(cross.tool("ld").current_dir(dir).args([
        "-m",
        emulation,
        "-shared",
        "-soname",
        "libdep.so.1",
        "-o",
        "libdep.so.1",
        "dep.o",
    ]));
    must_stdout(cross.tool("ld").current_dir(dir).args([
        "-m",
        emulation,
        "-shared",
        "-soname",
        "libfoo.so.7",
        "--version-script=lib.map",
        "-o",
        "libfoo.so.7.2.0",
        "lib.o",
        "libdep.so.1",
    ]));
    dir.join("libfoo.so.7.2.0")
}

#[test]
fn big_and_little_endian_elf32_and_elf64() {
    let root = rocm_pin_testkit::needs_setup!("cross-binutils/root");
    let cross = cross(&root);
    for (as_flags, emulation, class, data) in TARGETS {
        let dir = tempfile::tempdir().unwrap();
        let lib = build(&cross, dir.path(), as_flags, emulation);
        let header = must_stdout(Command::new("readelf").arg("-h").arg(&lib));
        assert!(
            header.contains(class) && header.contains(data),
            "{emulation}: {header}"
        );
        let info = assert_matches_readelf(&lib);
        assert!(info.shared_object);
        assert_eq!(info.soname.as_deref(), Some("libfoo.so.7"), "{emulation}");
        assert_eq!(info.needed, vec!["libdep.so.1".to_string()], "{emulation}");
        let v2 = info.export("hsa_amd_signal_create_v2").expect(emulation);
        assert_eq!(v2.version.as_deref(), Some("ROCR_1"), "{emulation}");
        assert!(v2.default);
        let names: Vec<String> = info.exports.iter().map(|s| s.versioned_name()).collect();
        let has = |n: &str| names.iter().any(|s| s == n);
        assert!(has("old@ROCR_0"), "{emulation}: {names:?}");
        assert!(has("old@@ROCR_1"), "{emulation}: {names:?}");
        assert!(has("weak_value@@ROCR_1"), "{emulation}: {names:?}");
        assert!(info.export("dep_value").is_none(), "{emulation}: undefined");

        // Stripped with the cross strip: same facts.
        let stripped = dir.path().join("stripped.so");
        must_stdout(
            cross
                .tool("strip")
                .arg("--strip-all")
                .arg("-o")
                .arg(&stripped)
                .arg(&lib),
        );
        assert_eq!(assert_matches_readelf(&stripped), info, "{emulation}");
    }
}
