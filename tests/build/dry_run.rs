//! `rocm-pin build --dry-run` prints the exact commands a build runs, in order, and changes
//! nothing: jobs from --jobs / MAX_JOBS / CPUs, the real rocm-systems invocation (DESIGN §6) for a
//! tree with projects/clr/hipamd, and the sparse blobless fetch for a URL.

use rocm_pin_testkit::assert_says;
use std::path::Path;

use crate::util::*;

/// The real layout, without sources: only what tells the real tree from the stand-in.
fn real_layout(root: &Path) -> std::path::PathBuf {
    let src = root.join("rocm-systems");
    for d in [
        "projects/rocr-runtime",
        "projects/clr/hipamd",
        "projects/hip",
        "shared",
        "cmake",
    ] {
        std::fs::create_dir_all(src.join(d)).unwrap();
    }
    src
}

fn dry_run(src: &str, rocm: &Path, out: &Path, extra: &[&str], max_jobs: Option<&str>) -> Run {
    let mut cmd = rocm_pin();
    cmd.args(["build", "--source", src])
        .arg("--rocm-path")
        .arg(rocm)
        .arg("--out")
        .arg(out)
        .arg("--dry-run")
        .args(extra);
    if let Some(j) = max_jobs {
        cmd.env("MAX_JOBS", j);
    }
    run(cmd).ok()
}

#[test]
fn max_jobs_shows_in_the_commands_and_jobs_overrides_it() {
    let (_tmp, src, commit, rocm, out) = standin_build();
    let s = src.to_str().unwrap();
    let r = dry_run(s, &rocm, &out, &["--commit", &commit], Some("3"));
    let builds: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.contains("cmake --build"))
        .collect();
    assert_eq!(builds.len(), 2, "{}", r.stdout);
    assert!(
        builds.iter().all(|l| l.ends_with("--parallel 3")),
        "{builds:?}"
    );
    assert_says(&r.stdout, &["3 jobs (from MAX_JOBS)"]);
    assert!(!out.exists(), "--dry-run must not create anything");

    let r = dry_run(
        s,
        &rocm,
        &out,
        &["--commit", &commit, "--jobs", "5"],
        Some("3"),
    );
    assert!(
        r.stdout.contains("--parallel 5") && !r.stdout.contains("--parallel 3"),
        "{}",
        r.stdout
    );

    let cpus = std::thread::available_parallelism().unwrap().get();
    let r = dry_run(s, &rocm, &out, &["--commit", &commit], None);
    assert_says(
        &r.stdout,
        &[
            &format!("--parallel {cpus}\n"),
            &format!("SOURCE_DATE_EPOCH={COMMIT_EPOCH}"),
        ],
    );

    let mut bad = rocm_pin();
    bad.args(["build", "--source", s, "--out"])
        .arg(&out)
        .arg("--dry-run")
        .env("MAX_JOBS", "lots");
    let r = run(bad).failed_with(2);
    r.says(&["MAX_JOBS=\"lots\" is not a positive integer"]);
}

#[test]
fn the_real_tree_gets_the_real_invocation_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let src = real_layout(tmp.path());
    let rocm = fake_rocm(tmp.path());
    let real_rocm = tmp.path().join("opt/rocm-7.2.4");
    let out = tmp.path().join("staging");
    let r = dry_run(
        src.to_str().unwrap(),
        &rocm,
        &out,
        &["--rocm-patch-version", "70204"],
        Some("4"),
    );
    let text = r.stdout;
    let (s, rr, o) = (src.display(), real_rocm.display(), out.display());
    let commands: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    // Source checks, then ROCr configure/build/install (private prefix), CLR configure/build/
    // install (staging), ROCr staged last.
    let shape: Vec<String> = commands
        .iter()
        .map(|l| {
            let from = l.find(" cmake ").map(|i| i + 1).unwrap_or(0);
            l[from..].split(' ').take(2).collect::<Vec<_>>().join(" ")
        })
        .collect();
    assert_eq!(
        shape,
        [
            "git -C",
            "git -C",
            "cmake -S",
            "cmake --build",
            "cmake --install",
            "cmake -S",
            "cmake --build",
            "cmake --install",
            "cmake --install"
        ],
        "{text}"
    );
    // Each configure step, by its place in the plan, and what its command line must hold.
    let configures = [
        (
            2,
            "ROCr configure",
            vec![
                format!("-S {s}/projects/rocr-runtime -B {o}/.work/build/rocr -G Ninja"),
                "-DCMAKE_BUILD_TYPE=Release".to_string(),
                format!("-DCMAKE_PREFIX_PATH={rr} "),
                format!("-DCMAKE_INSTALL_PREFIX={o}/.work/rocr-prefix"),
                format!("-DLLVM_DIR={o}/.work/cmake/llvm-shim/lib/cmake/llvm"),
                format!("-DClang_DIR={o}/.work/cmake/llvm-shim/lib/cmake/clang"),
                format!("PATH={rr}/llvm/bin:\"$PATH\""),
                "-DROCM_PATCH_VERSION=70204".to_string(),
            ],
        ),
        (
            5,
            "CLR configure",
            vec![
                format!("-S {s}/projects/clr -B {o}/.work/build/clr"),
                "-DCLR_BUILD_HIP=ON -DCLR_BUILD_OCL=OFF".to_string(),
                format!("-DHIP_COMMON_DIR={s}/projects/hip"),
                format!("-DROCM_PATH={rr}"),
                format!("'-DCMAKE_PREFIX_PATH={o}/.work/rocr-prefix;{rr}'"),
                format!("-DCMAKE_INSTALL_PREFIX={o} "),
                format!("-DHIP_LLVM_ROOT={rr}/llvm"),
                "-DHIP_PLATFORM=amd".to_string(),
                format!("-DCMAKE_PROJECT_INCLUDE={o}/.work/cmake/rocr-headers-first.cmake"),
                "GIT_CONFIG_KEY_1=protocol.allow GIT_CONFIG_VALUE_1=never".to_string(),
            ],
        ),
    ];
    for (index, step, wants) in configures {
        let command = commands[index];
        for want in wants {
            assert!(command.contains(&want), "{step} lacks {want}:\n{command}");
        }
    }
    assert!(commands[8].ends_with(&format!(
        "cmake --install {o}/.work/build/rocr --prefix {o}"
    )));
    assert!(text.contains(&format!(
        "# write {o}/.work/cmake/llvm-shim/lib/cmake/llvm/LLVMConfig.cmake"
    )));
    assert!(text.contains(
        "the rocm-systems tree, commit b539bf7eebfd99ad0a69668caa1f4037034d501f, 4 jobs"
    ));
    for pkg in [
        "libelf-dev",
        "libdrm-dev",
        "libnuma-dev",
        "libgl1-mesa-dev",
        "python3-ply",
        "rocm-llvm",
    ] {
        assert!(text.contains(pkg), "prerequisite list lacks {pkg}: {text}");
    }
    assert!(!out.exists());
}

#[test]
fn a_url_is_fetched_sparse_and_blobless_at_the_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let rocm = fake_rocm(tmp.path());
    let out = tmp.path().join("staging");
    let r = dry_run(
        "https://github.com/ROCm/rocm-systems.git",
        &rocm,
        &out,
        &[],
        Some("2"),
    );
    let o = out.display();
    let pin = rocm_pin_core::rocm::PIN_COMMIT;
    let expected = [
        format!("git init --quiet {o}/.work/src"),
        format!("git -C {o}/.work/src remote add origin https://github.com/ROCm/rocm-systems.git"),
        format!("git -C {o}/.work/src sparse-checkout set projects/rocr-runtime projects/clr projects/hip shared cmake"),
        format!("git -C {o}/.work/src fetch --filter=blob:none --depth=1 origin {pin}"),
        format!("git -C {o}/.work/src -c advice.detachedHead=false checkout --detach {pin}"),
    ];
    let git_lines: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("git ")).collect();
    assert_eq!(git_lines, expected, "{}", r.stdout);
    assert_says(&r.stdout, &[&format!("-S {o}/.work/src/projects/clr")]);
}
