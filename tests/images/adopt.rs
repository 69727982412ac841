//! `rocm-pin adopt` in a real image (issue 14): an image patched in place with exactly the seed's
//! Dockerfile block (tests/fixtures/images-adopt/inplace.Dockerfile, FROM the stand-in base of
//! `scripts/images base`), `rocm-pin verify --image` on it, a vLLM-shaped downstream image that
//! adopts the patch and then runs the commands that revert an in-place patch
//! (tests/fixtures/images-adopt/downstream.Dockerfile), and the control: the same downstream
//! Dockerfile without the adopt line. Real buildah (`--layers --network none`), podman, skopeo.
//!
//! Needs root, the tools from scripts/install-deps and the cached bookworm-apt chroot tarball
//! (scripts/test-setup); the base and tool images are cached by `scripts/images`.

use rocm_pin_testkit::assert_says;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::util::*;

const FIXTURES: &str = "tests/fixtures/images-adopt";
const ADOPT_LINE: &str = "RUN rocm-pin adopt --guard\n";
const VERIFY_LINE: &str = "RUN bash /usr/local/share/rocm-pin/docker/verify-runtime.sh\n";
/// The vLLM image's step the seed's review names as reverting an in-place patch (§6).
const VLLM_STEP: &str =
    "RUN dpkg -i --force-all /srv/rocm-stock-extra/rccl_*.deb && apt-get --fix-broken install -y\n";

use rocm_pin_testkit::must;

/// What the seed's inline builder stage installs, made the way rocm-pin builds it: the stand-in
/// rocm-systems checkout built by `rocm-pin build`. Its lib/ and the commit go into
/// `ctx/runtime-install/`. Returns the commit.
fn build_runtime_pair(work: &Path, ctx: &Path) -> String {
    let src = work.join("rocm-systems");
    let out = must(
        Command::new(bin())
            .args(["standin", "source", "--out"])
            .arg(&src),
    );
    let commit = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
        "rocm-pin standin source printed {commit:?}"
    );
    let t = Instant::now();
    let staging = rocm_pin_testkit::build_standin_staging(&bin(), &src, &commit, work);
    eprintln!(
        "images_adopt: rocm-pin build in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    let install = ctx.join("runtime-install");
    std::fs::create_dir_all(&install).unwrap();
    must(
        Command::new("cp")
            .arg("-a")
            .arg(staging.join("lib"))
            .arg(install.join("lib")),
    );
    std::fs::write(install.join("COMMIT"), format!("{commit}\n")).unwrap();
    commit
}

/// ctx/rocm-pin/: docs/docker/ (verify-runtime.sh) and the fixture Dockerfiles.
fn make_context(work: &Path) -> PathBuf {
    let ctx = recipe_context(work);
    for e in std::fs::read_dir(repo_dir().join(FIXTURES)).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, ctx.join("rocm-pin").join(p.file_name().unwrap())).unwrap();
    }
    ctx
}

/// `text` with `line` removed; it must be there exactly once.
fn without(text: &str, line: &str) -> String {
    assert_eq!(text.matches(line).count(), 1, "{line:?} in:\n{text}");
    text.replacen(line, "", 1)
}

/// The probe's lines: (soname, identity) of the library the loader maps.
fn loaded(tools: &Tools, image: &str) -> Vec<(String, String)> {
    let probe = probe_identities(tools, image);
    let ids: Vec<(String, String)> = probe
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.len() >= 3).then(|| (f[0].to_string(), f[2].to_string()))
        })
        .collect();
    assert_eq!(ids.len(), 2, "{image}: probe printed:\n{probe}");
    ids
}

fn all_patched(ids: &[(String, String)], commit: &str) -> bool {
    rocm_pin_testkit::runtime::runtime_is_patched(
        ids.iter().map(|(_, id)| id.as_str()),
        Some(commit),
    )
}

/// `verify --json --image containers-storage:IMAGE`: exit code and the report.
fn verify_json(tools: &Tools, image: &str) -> (i32, serde_json::Value, String) {
    let out = verify_image(
        &["--json", "--image", &format!("containers-storage:{image}")],
        &tools.env,
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("verify --json on {image}: {e}:\n{}", text(&out)));
    (rc(&out), v, text(&out))
}

fn failed_checks(v: &serde_json::Value) -> Vec<(String, String)> {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ok"] == false)
        .map(|c| {
            (
                c["name"].as_str().unwrap_or("").to_string(),
                c["detail"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The image ID buildah committed for the step that starts with `step` (its `--> ID` line).
fn layer_after(build_output: &str, step: &str) -> String {
    let at = build_output
        .find(&format!(
            "RUN {}",
            step.trim_start_matches("RUN ").trim_end()
        ))
        .unwrap_or_else(|| panic!("step {step:?} not in the build output"));
    let rest = &build_output[at..];
    let id = rest
        .lines()
        .filter_map(|l| l.strip_prefix("--> "))
        .find(|l| !l.starts_with("Using cache"))
        .unwrap_or_else(|| panic!("no layer committed after {step:?}"));
    id.trim().to_string()
}

/// What verify --image's failed in-place-patch check says of the image patched in place
/// (`{commit}`: the patch's): the commit, the danger, the repair, the fix, the stock name.
const IN_PLACE_SAYS: &[&str] = &[
    "{commit}",
    "NOT protected",
    "apt-get install --reinstall hip-runtime-amd hsa-rocr",
    "fix: `rocm-pin adopt`",
    "libamdhip64.so.7.2.70204 (hip-runtime-amd)",
];

/// The patched file and a stock name of it: one inode with two links in the in-place image.
const IN_PLACE_LINKS: &[(&str, &str)] = &[
    ("libamdhip64.so.7.2.53211-", "libamdhip64.so.7.2.70204"),
    (
        "libhsa-runtime64.so.1.18.0",
        "libhsa-runtime64.so.1.18.70204",
    ),
];

/// What the adopting downstream build says.
const ADOPT_SAYS: &[&str] = &[
    "kept for rollback: hip-runtime-amd_7.2.53211.70204-93~24.04_amd64.deb (apt-get download)",
    "kept for rollback: hsa-rocr_1.18.0.70204-93~24.04_amd64.deb (apt-get download)",
    "took over the in-place marker /opt/rocm-7.2.4/.info/atom-rocm-runtime-commit",
    "rocm-pin adopt: commit {commit} is now installed",
    "verify-runtime: OK",
];

/// What the adopted image keeps (in /var/lib/rocm-pin/adopted-from and stock/): the in-place
/// markers taken over and the stock .debs for an offline rollback.
const ADOPTED_KEEPS: &[&str] = &[
    "atom-rocm-runtime-commit",
    "atom-rocm-runtime-sonames",
    "hip-runtime-amd_7.2.53211.70204-93~24.04_amd64.deb",
    "hsa-rocr_1.18.0.70204-93~24.04_amd64.deb",
];

/// `rocm-pin status --json` in the adopted image (`{commit}`: the patch's).
const ADOPTED_STATUS: &[(&str, &str)] = &[
    ("/ours/origin", "\"adopted\""),
    ("/ours/commit", "\"{commit}\""),
    ("/in_place", "null"),
    ("/guard", "true"),
];

/// One build FROM the in-place image: a Dockerfile made from downstream.Dockerfile, its
/// exit (`None`: any failure), what it says, what it must not.
struct AdoptBuild {
    what: &'static str,
    file: &'static str,
    tag: &'static str,
    exit: Option<i32>,
    says: &'static [&'static str],
    says_not: &'static [&'static str],
}

/// After the adopted image, a later step forcing the stock package back fails at that step
/// (the guard), naming it.
const REVERT_AFTER_ADOPT: AdoptBuild = AdoptBuild {
    what: "a reverting step after adopt",
    file: "revert.Dockerfile",
    tag: "revert",
    exit: None,
    says: &["FAIL stock-absent hip-runtime-amd"],
    says_not: &["RUN bash /usr/local/share/rocm-pin/docker/verify-runtime.sh"],
};

/// The control (no adopt line) with its verify line fails at that line.
const CONTROL_CHECKED: AdoptBuild = AdoptBuild {
    what: "the control with its verify line",
    file: "control.Dockerfile",
    tag: "control-checked",
    exit: Some(1),
    says: &[
        "verify-runtime: ERROR",
        "FAIL in-place-patch",
        "hip-runtime-amd",
    ],
    says_not: &[],
};

#[test]
fn adopt_in_a_real_image_survives_the_downstream_steps_and_the_control_reverts() {
    rocm_pin_testkit::needs_root!("image storage and runc");
    let _serial = crate::util::one_image_test_at_a_time();
    let t0 = Instant::now();
    let run = ImageRun::start("adopt", "adopt-");
    let (w, tools) = (run.work.path(), &run.tools);
    let mut tags = Tags::new(tools);
    let base = images_ok(&["base"]);
    let tool = images_ok(&["tool"]);
    let ctx = make_context(w);
    let commit = build_runtime_pair(w, &ctx);
    let vars = |text: &str| text.replace("{commit}", &commit);

    // The image patched in place with the seed's block.
    let inplace = run.tag("inplace");
    tags.tags.push(inplace.clone());
    let out = tools.build(
        &ctx,
        "inplace.Dockerfile",
        &inplace,
        &[("ROCM_IMAGE", &base)],
    );
    assert_eq!(rc(&out), 0, "inplace.Dockerfile:\n{}", tail(&out));
    check_the_inplace_image(tools, &inplace, &commit);
    // verify --image: fails with the in-place-patch check, and names the fix.
    let (code, v, shown) = verify_json(tools, &inplace);
    assert_eq!(code, 1, "verify --image on the in-place image:\n{shown}");
    let failed = failed_checks(&v);
    let in_place = failed
        .iter()
        .find(|(n, _)| n == "in-place-patch")
        .unwrap_or_else(|| panic!("no failed in-place-patch check:\n{shown}"));
    for want in IN_PLACE_SAYS.iter().map(|s| vars(s)) {
        assert!(
            in_place.1.contains(&want),
            "{want:?} not in {:?}",
            in_place.1
        );
    }

    // Downstream: adopt, then the steps that revert an in-place patch.
    let args = [
        ("INPLACE_IMAGE", inplace.as_str()),
        ("ROCM_PIN_TOOL_IMAGE", tool.as_str()),
    ];
    let adopted = run.tag("adopted");
    tags.tags.push(adopted.clone());
    let out = tools.build(&ctx, "downstream.Dockerfile", &adopted, &args);
    assert_eq!(rc(&out), 0, "downstream.Dockerfile:\n{}", tail(&out));
    for want in ADOPT_SAYS.iter().map(|s| vars(s)) {
        assert!(
            text(&out).contains(&want),
            "{want:?} not in the build output:\n{}",
            text(&out)
        );
    }
    check_the_adopted_image(tools, &adopted, &commit);

    // The Dockerfiles made from downstream.Dockerfile: a reverting step; the control without
    // the adopt line, with and without its verify line.
    let downstream = std::fs::read_to_string(ctx.join("rocm-pin/downstream.Dockerfile")).unwrap();
    assert_says(&downstream, &[VLLM_STEP]);
    let revert = "RUN dpkg -i --force-all /srv/rocm-stock/hip-runtime-amd_*.deb\n";
    let control_file = without(&downstream, ADOPT_LINE);
    for (file, text) in [
        (
            "revert",
            downstream.replacen(VERIFY_LINE, &format!("{revert}{VERIFY_LINE}"), 1),
        ),
        ("control", control_file.clone()),
        ("control-unchecked", without(&control_file, VERIFY_LINE)),
    ] {
        std::fs::write(ctx.join(format!("rocm-pin/{file}.Dockerfile")), text).unwrap();
    }
    build_judged(&run, &ctx, &REVERT_AFTER_ADOPT, &args);
    let unchecked = run.tag("control");
    tags.tags.push(unchecked.clone());
    let out = tools.build(&ctx, "control-unchecked.Dockerfile", &unchecked, &args);
    assert_eq!(rc(&out), 0, "control-unchecked.Dockerfile:\n{}", tail(&out));
    check_the_control(tools, &unchecked, &text(&out), &commit);
    build_judged(&run, &ctx, &CONTROL_CHECKED, &args);
    eprintln!("images_adopt: {:.1}s in all", t0.elapsed().as_secs_f64());
    drop(tags);
}

/// `row`'s Dockerfile built with `args`: its exit and what it says and must not say.
fn build_judged(run: &ImageRun, ctx: &Path, row: &AdoptBuild, args: &[(&str, &str)]) {
    let out = run.tools.build(ctx, row.file, &run.tag(row.tag), args);
    assert_build_judged(&out, row.what, row.exit, (row.says, row.says_not));
}

/// The seed's COPY went through /opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-7.2.4 (the
/// review's §4): the patch is live, the symlink chain stands, the stock names are hard links of
/// the patched files.
fn check_the_inplace_image(tools: &Tools, inplace: &str, commit: &str) {
    let ids = loaded(tools, inplace);
    assert!(
        all_patched(&ids, commit),
        "in-place patch not live: {ids:?}"
    );
    let state = tools.run_in(
        inplace,
        "readlink /opt/rocm; readlink /etc/alternatives/rocm; cat /opt/rocm-7.2.4/.info/atom-rocm-runtime-commit; cd /opt/rocm-7.2.4/lib && stat -c '%i %h %n' libamdhip64.so.7.2.* libhsa-runtime64.so.1.*",
    );
    let lines: Vec<&str> = state.lines().collect();
    assert_eq!(
        &lines[..3],
        &["/etc/alternatives/rocm", "/opt/rocm-7.2.4", commit],
        "{state}"
    );
    let inode = |name: &str| {
        lines
            .iter()
            .find(|l| l.split(' ').nth(2).is_some_and(|n| n.starts_with(name)))
            .map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|| panic!("{name} not in the image:\n{state}"))
    };
    for (patched, stock) in IN_PLACE_LINKS {
        assert_eq!(inode(patched), inode(stock), "not one inode:\n{state}");
        assert!(inode(stock).ends_with(" 2"), "{state}");
    }
}

/// After adopt and the downstream steps the loader maps the patch; the in-place markers are
/// taken over, provenance says adopted, the kept stock .debs roll back offline; verify passes
/// with no in-place-patch check.
fn check_the_adopted_image(tools: &Tools, adopted: &str, commit: &str) {
    let ids = loaded(tools, adopted);
    assert!(
        all_patched(&ids, commit),
        "after adopt + the downstream steps the loader maps {ids:?}"
    );
    let inside = tools.run_in(
        adopted,
        "ls /opt/rocm-7.2.4/.info; echo --; ls /var/lib/rocm-pin/adopted-from /var/lib/rocm-pin/stock; echo --; \
         rocm-pin status --json; echo --; rocm-pin rollback >/dev/null 2>&1; echo rollback=$?; \
         rocm-pin-loader-probe libhsa-runtime64.so.1 libamdhip64.so.7",
    );
    let parts: Vec<&str> = inside.split("--\n").collect();
    assert_eq!(parts.len(), 4, "{inside}");
    assert!(
        !parts[0].contains("atom-rocm-runtime") && parts[0].contains("rocm-pin.json"),
        "in-place markers left in .info:\n{}",
        parts[0]
    );
    for f in ADOPTED_KEEPS {
        assert!(parts[1].contains(f), "{f} not kept:\n{}", parts[1]);
    }
    let status: serde_json::Value = serde_json::from_str(parts[2])
        .unwrap_or_else(|e| panic!("status --json: {e}:\n{}", parts[2]));
    for (pointer, want) in ADOPTED_STATUS {
        let got = status
            .pointer(pointer)
            .unwrap_or(&serde_json::Value::Null)
            .to_string();
        assert_eq!(got, want.replace("{commit}", commit), "{pointer}: {status}");
    }
    assert!(
        parts[3].contains("rollback=0")
            && parts[3].matches("-STOCK-").count() == 2
            && !parts[3].contains("-PATCHED-"),
        "rollback inside the adopted image (offline):\n{}",
        parts[3]
    );
    let (code, v, shown) = verify_json(tools, adopted);
    assert_eq!(code, 0, "verify --image on the adopted image:\n{shown}");
    assert_eq!(v["ok"], true, "{v}");
    let checks = v["checks"].as_array().unwrap();
    assert!(
        !checks.iter().any(|c| c["name"] == "in-place-patch"),
        "{shown}"
    );
}

/// The control (no adopt line, no verify line, `build_output` its build's): what the vLLM
/// step alone (forced custom rccl + fix-broken) leaves, as measured in the chroots too and
/// documented (docs/docker.md, docs/install.md), is the in-place patch live — fix-broken
/// reinstalls rccl, not HIP/HSA; the reinstall after it is what reverts; verify fails the
/// image saying the patch was reverted, naming the packages.
fn check_the_control(tools: &Tools, unchecked: &str, build_output: &str, commit: &str) {
    let after_vllm = loaded(tools, &layer_after(build_output, VLLM_STEP));
    eprintln!("images_adopt: control, after the vLLM step alone the loader maps {after_vllm:?}");
    assert!(
        all_patched(&after_vllm, commit),
        "the vLLM step alone reverted the in-place patch ({after_vllm:?}): docs/docker.md and docs/install.md say it does not"
    );
    let ids = loaded(tools, unchecked);
    assert!(
        ids.iter().all(|(_, id)| id.contains("-STOCK-")),
        "control: without adopt the downstream steps must put stock back, the loader maps {ids:?}"
    );
    let (code, v, shown) = verify_json(tools, unchecked);
    assert_eq!(code, 1, "verify --image on the control image:\n{shown}");
    let failed = failed_checks(&v);
    assert!(
        failed.iter().any(|(n, d)| n == "in-place-patch"
            && d.contains("reverted")
            && d.contains("hip-runtime-amd")
            && d.contains("hsa-rocr")),
        "the control's failure does not say the patch was reverted, naming the packages:\n{shown}"
    );
}

/// The fixture's RUN block is the seed's block the chroot tests run
/// (tests/fixtures/inplace-patch.sh): from `cd /opt/rocm/lib` on, line for line.
#[test]
fn inplace_dockerfile_runs_the_same_block_as_the_chroot_fixture() {
    let norm = |l: &str| {
        l.trim()
            .trim_end_matches('\\')
            .trim_end()
            .trim_end_matches(';')
            .trim()
            .to_string()
    };
    let from_cd = |lines: Vec<String>| -> Vec<String> {
        let at = lines
            .iter()
            .position(|l| l == "cd /opt/rocm/lib")
            .expect("no `cd /opt/rocm/lib`");
        lines[at..].to_vec()
    };
    let script = std::fs::read_to_string(repo_dir().join("tests/fixtures/inplace-patch.sh"))
        .unwrap()
        .lines()
        .map(norm)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let dockerfile = std::fs::read_to_string(repo_dir().join(FIXTURES).join("inplace.Dockerfile"))
        .unwrap()
        .lines()
        .map(norm)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(from_cd(script), from_cd(dockerfile));
}
