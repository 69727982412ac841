//! Tiny ELF built by real gcc for the wheel tests (the host venv and the wheel image): a HIP/HSA
//! runtime pair that says which release it is, and torch's stand-ins that need it.

use std::path::Path;
use std::process::Command;

use crate::must;

/// The forced DT_RPATH of torch's libraries into `_rocm_sdk_core/lib` from
/// `site-packages/torch/lib` (TheRock's py_packaging.py `_extend_rpath`).
const TORCH_RPATH: &str = "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../../_rocm_sdk_core/lib";

/// A runtime library exporting `<fn_name>` that returns `identity`, named `file`, with `soname`.
pub fn gcc_lib(dir: &Path, file: &str, soname: &str, fn_name: &str, identity: &str) {
    let src = dir.join(format!("{file}.c"));
    std::fs::write(
        &src,
        format!("const char *{fn_name}(void) {{ return \"{identity}\"; }}\n"),
    )
    .unwrap();
    must(
        Command::new("gcc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(dir.join(file))
            .arg(&src)
            .arg(format!("-Wl,-soname,{soname}")),
    );
    std::fs::remove_file(src).unwrap();
}

/// The pair of one identity in `dir`, as SONAME files (a stock release) or, with `real`, as
/// real names plus links (a `cmake --install` staging).
pub fn runtime_pair(dir: &Path, identity: &str, real: bool) {
    std::fs::create_dir_all(dir).unwrap();
    for (soname, version, f) in [
        ("libamdhip64.so.7", "7.2.0", "hip_identity"),
        ("libhsa-runtime64.so.1", "1.18.0", "hsa_identity"),
    ] {
        let stem = soname.rsplit_once('.').unwrap().0;
        let file = if real {
            format!("{stem}.{version}")
        } else {
            soname.to_string()
        };
        gcc_lib(dir, &file, soname, f, identity);
        if real {
            std::os::unix::fs::symlink(&file, dir.join(soname)).unwrap();
        }
    }
}

/// `elf/torch_consumer`, the program standing in for torch: NEEDs the pair (linked against
/// `stock`, a [`runtime_pair`] directory) with torch's forced DT_RPATH, prints both identities.
pub fn torch_consumer(elf: &Path, stock: &Path) {
    let src = elf.join("consumer.c");
    std::fs::write(&src, "#include <stdio.h>\nconst char *hip_identity(void);\nconst char *hsa_identity(void);\nint main(void) { printf(\"%s %s\\n\", hip_identity(), hsa_identity()); return 0; }\n").unwrap();
    must(
        Command::new("gcc")
            .arg("-o")
            .arg(elf.join("torch_consumer"))
            .arg(&src)
            .arg(format!("-L{}", stock.display()))
            .args([
                "-l:libamdhip64.so.7",
                "-l:libhsa-runtime64.so.1",
                TORCH_RPATH,
            ]),
    );
    std::fs::remove_file(src).unwrap();
}

/// `elf/libtorch_hip.so`, torch's library: the same NEEDs and forced DT_RPATH as
/// [`torch_consumer`], as a shared object.
pub fn torch_library(elf: &Path, stock: &Path) {
    let src = elf.join("torch_hip.c");
    std::fs::write(
        &src,
        "const char *hip_identity(void);\nconst char *torch_hip(void) { return hip_identity(); }\n",
    )
    .unwrap();
    must(
        Command::new("gcc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(elf.join("libtorch_hip.so"))
            .arg(&src)
            .arg(format!("-L{}", stock.display()))
            .args([
                "-Wl,-soname,libtorch_hip.so",
                "-l:libamdhip64.so.7",
                "-l:libhsa-runtime64.so.1",
                TORCH_RPATH,
            ]),
    );
    std::fs::remove_file(src).unwrap();
}
