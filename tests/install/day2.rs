//! Day-2 acceptance in real chroots (`rocm-pin` runs inside, real apt/dpkg): a host patched in
//! place with exactly the seed's block of commands (tests/fixtures/inplace-patch.sh), what
//! `verify`/`status` say about it, `rocm-pin adopt` and the downstream commands after it, the
//! control without adopt, the bad inputs, and an adoption killed half-way.

use crate::util::*;
use rocm_pin_core::host::apt::Solver;
use rocm_pin_kit::sandbox::Sandbox;
use rocm_pin_kit::standin::StockRole;

const INPLACE_SCRIPT: &str = "/root/inplace-patch.sh";
const COMMIT_MARKER: &str = "/opt/rocm-7.2.4/.info/atom-rocm-runtime-commit";
const LIB: &str = "/opt/rocm-7.2.4/lib";

/// The commit our packages were built from (the stand-in checkout's).
fn our_commit(a: &Artifacts) -> String {
    let out = must(
        std::process::Command::new("dpkg-deb")
            .arg("-f")
            .arg(&a.ours[0])
            .arg("X-Rocm-Pin-Commit"),
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The builder stage's output (`/staging/lib` with the real files and their symlinks, the two
/// markers), made from our .debs without the stock-named aliases, then the seed's block.
fn patch_in_place(sb: &Sandbox, a: &Artifacts, commit: &str) {
    let mut aliases = Vec::new();
    for role in [StockRole::HsaRocr, StockRole::HipRuntime] {
        for l in &a.stock.require(role).unwrap().libraries {
            aliases.push(l.path.rsplit('/').next().unwrap().to_string());
        }
    }
    let staging = format!(
        "set -eu\n\
         rm -rf /tmp/x /staging; mkdir -p /tmp/x /staging/lib /staging/.info\n\
         for d in {OURS_DIR}/*.deb; do dpkg-deb -x \"$d\" /tmp/x; done\n\
         cd /tmp/x{LIB}\n\
         for f in libhsa-runtime64.so* libamdhip64.so*; do\n\
           case \" {} \" in *\" $f \"*) continue;; esac\n\
           cp -P \"$f\" /staging/lib/\n\
         done\n\
         echo {commit} > /staging/.info/atom-rocm-runtime-commit\n\
         ( cd /staging/lib && ls -1 libhsa-runtime64.so.* libamdhip64.so.* | grep -E '\\.so\\.[0-9]+$' ) > /staging/.info/atom-rocm-runtime-sonames\n",
        aliases.join(" ")
    );
    sb.sh_ok(&staging).expect("make /staging");
    sb.copy_in(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/inplace-patch.sh"),
        INPLACE_SCRIPT,
    )
    .unwrap();
    let out = sb.sh(&format!("sh {INPLACE_SCRIPT} /staging")).unwrap();
    assert_eq!(
        rc(&out),
        0,
        "the seed's in-place block failed:\n{}",
        text(&out)
    );
    assert!(
        all_patched(&probe(sb)),
        "in-place patch not live: {:?}",
        probe(sb)
    );
}

/// The vLLM image's downstream package steps: a custom rccl forced in, then fix-broken.
const VLLM_DOWNSTREAM: &str =
    "dpkg -i --force-all /root/rccl_*.deb || true; apt --fix-broken install -y";

/// What must not change when adopt refuses: the dpkg database and the runtime files.
fn host_fingerprint(sb: &Sandbox) -> String {
    sb.sh_ok(&format!(
        "md5sum /var/lib/dpkg/status; ls -li --time-style=+ {LIB} | sort; ls -R /var/lib/rocm-pin 2>/dev/null || true; ls /opt/rocm/.info"
    ))
    .unwrap()
}

fn adopt_then_downstream(suite: &str) {
    let a = artifacts(suite);
    let commit = our_commit(a);
    let sb = fresh(a, &a.stock_snapshot);
    patch_in_place(&sb, a, &commit);

    // verify and status recognise the in-place patch.
    let v = verify(&sb);
    assert_eq!(rc(&v), 1, "{}", text(&v));
    assert!(
        failed_checks(&sb).iter().any(|c| c == "in-place-patch"),
        "{}",
        text(&v)
    );
    assert!(text(&v).contains(&commit), "{}", text(&v));
    assert!(text(&v).contains("rocm-pin adopt"), "{}", text(&v));
    let st = sb.run(&["rocm-pin", "status"]).unwrap();
    let st_text = text(&st);
    assert_eq!(rc(&st), 1, "status on a host patched in place: {st_text}");
    eprintln!("{suite}: status of a host patched in place:\n{st_text}");
    assert!(st_text.contains("IN PLACE"), "{st_text}");
    assert!(st_text.contains("NOT protected"), "{st_text}");
    assert!(st_text.contains("apt-get install --reinstall"), "{st_text}");
    assert!(st_text.contains("rocm-pin adopt"), "{st_text}");

    // adopt (trixie: into --out).
    let t = std::time::Instant::now();
    let out = if suite == "trixie-solver3" {
        sb.run(&["rocm-pin", "adopt", "--out", "/root/adopted"])
            .unwrap()
    } else {
        sb.run(&["rocm-pin", "adopt"]).unwrap()
    };
    assert_eq!(rc(&out), 0, "adopt failed:\n{}", text(&out));
    eprintln!("{suite}: adopt took {:.1}s", t.elapsed().as_secs_f64());
    let v = verify(&sb);
    assert_eq!(rc(&v), 0, "verify after adopt:\n{}", text(&v));
    assert!(all_patched(&probe(&sb)), "{:?}", probe(&sb));
    assert!(
        !sb.path(COMMIT_MARKER).exists(),
        "in-place marker left behind"
    );
    assert!(sb
        .path("/var/lib/rocm-pin/adopted-from/atom-rocm-runtime-commit")
        .exists());
    let marker = sb
        .read_to_string("/opt/rocm-7.2.4/.info/rocm-pin.json")
        .unwrap();
    let m: serde_json::Value = serde_json::from_str(&marker).unwrap();
    assert_eq!(m["commit"], commit.as_str());
    assert!(
        m["source"]
            .as_str()
            .is_some_and(|s| s.starts_with("adopted from an in-place patch")),
        "{marker}"
    );
    let debs_dir = if suite == "trixie-solver3" {
        "/root/adopted"
    } else {
        "/var/lib/rocm-pin/adopted"
    };
    let debs = sb.sh_ok(&format!("ls {debs_dir}")).unwrap();
    assert_eq!(debs.matches(".deb").count(), 2, "{debs}");
    let js = sb.run(&["rocm-pin", "status", "--json"]).unwrap();
    assert_eq!(rc(&js), 0, "{}", text(&js));
    let j: serde_json::Value = serde_json::from_slice(&js.stdout).unwrap();
    assert_eq!(j["ours"]["origin"], "adopted", "{j}");
    assert_eq!(j["ours"]["commit"], commit.as_str());
    assert!(j["in_place"].is_null(), "{j}");
    // Running it again: not patched in place any more, a clear refusal, nothing changes.
    let again = sb.run(&["rocm-pin", "adopt"]).unwrap();
    assert_eq!(rc(&again), 2, "{}", text(&again));
    assert!(
        text(&again).contains("not patched in place"),
        "{}",
        text(&again)
    );

    // The downstream commands that revert an in-place patch.
    for cmd in [
        VLLM_DOWNSTREAM,
        "apt-get install --reinstall -y hip-runtime-amd hsa-rocr",
    ] {
        let out = sb.sh(cmd).unwrap();
        let ids = probe(&sb);
        assert!(all_patched(&ids), "after `{cmd}`: {ids:?}\n{}", text(&out));
        let v = verify(&sb);
        assert_eq!(rc(&v), 0, "after `{cmd}`:\n{}", text(&v));
        assert!(dependants_installed(&sb), "{:?}", dependant_states(&sb));
    }
    // The stock .debs were kept: rollback puts stock back offline.
    let out = sb.run(&["rocm-pin", "rollback"]).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert!(
        probe(&sb).iter().all(|(_, id)| id.contains("-STOCK-")),
        "{:?}",
        probe(&sb)
    );
}

rocm_pin_testkit::root_tests!("a chroot", adopt_then_downstream {
    adopt_in_place_patch_survives_downstream_bookworm => "bookworm",
    adopt_in_place_patch_survives_downstream_trixie => "trixie",
    adopt_in_place_patch_survives_downstream_trixie_solver3 => "trixie-solver3",
});

/// The control: the same downstream commands without adopt put stock back.
#[test]
fn without_adopt_downstream_commands_revert_the_in_place_patch() {
    rocm_pin_testkit::needs_root!("a chroot");
    let a = artifacts("bookworm");
    let sb = fresh(a, &a.stock_snapshot);
    patch_in_place(&sb, a, &our_commit(a));
    let out = sb.sh(VLLM_DOWNSTREAM).unwrap();
    let after_vllm = probe(&sb);
    eprintln!("control: after the vLLM steps the loader uses {after_vllm:?}");
    let out2 = sb
        .sh("apt-get install --reinstall -y hip-runtime-amd hsa-rocr")
        .unwrap();
    assert_eq!(rc(&out2), 0, "{}", text(&out2));
    let ids = probe(&sb);
    assert!(
        ids.iter().all(|(_, id)| id.contains("-STOCK-")),
        "control: expected stock after the reinstall, got {ids:?}\n{}",
        text(&out)
    );
    // verify says so: the marker is stale, the stock runtime is live.
    let v = verify(&sb);
    assert_eq!(rc(&v), 1);
    assert!(text(&v).contains("reverted"), "{}", text(&v));
}

#[test]
fn adopt_refuses_bad_in_place_patches_and_changes_nothing() {
    rocm_pin_testkit::needs_root!("a chroot");
    let a = artifacts("bookworm");
    let commit = our_commit(a);
    let hip_real = || -> String { format!("$(readlink -f {LIB}/libamdhip64.so.7)") };
    let hsa = a.stock.require(StockRole::HsaRocr).unwrap();
    let stock_hsa = format!(
        "dpkg-deb --fsys-tarfile {STOCK_DEBS_DIR}/{} | tar -xOf - .{} > /tmp/stock-hsa",
        hsa.deb.file_name().unwrap().to_string_lossy(),
        hsa.libraries[0].path
    );
    let cases: Vec<(&str, Option<String>, &str)> = vec![
        ("not patched at all", None, "not patched in place"),
        (
            "hard links to a 0-byte file",
            Some(format!("truncate -s 0 {}", hip_real())),
            "EMPTY",
        ),
        (
            "dangling soname link",
            Some(format!("rm {}", hip_real())),
            "does not resolve",
        ),
        (
            "marker commit disagrees with the library",
            Some(format!(
                "echo 0123456789abcdef0123456789abcdef01234567 > {COMMIT_MARKER}"
            )),
            "was built from commit",
        ),
        (
            "HSA library without the backport symbol",
            Some(format!(
                "{}; f=$(readlink -f {LIB}/libhsa-runtime64.so.1); cat /tmp/stock-hsa > $f; printf x >> $f",
                stock_hsa
            )),
            "does not export hsa_amd_signal_create_v2",
        ),
        (
            "only half of the pair patched",
            Some(format!(
                "{}; cat /tmp/stock-hsa > $(readlink -f {LIB}/libhsa-runtime64.so.1)",
                stock_hsa
            )),
            "no patched libhsa-runtime64",
        ),
        (
            "no stock .deb for rollback",
            Some("rm -rf /srv/rocm-pin-test-repos/stock".into()),
            "--no-rollback",
        ),
    ];
    let mut failures = Vec::new();
    for (name, tamper, expect) in cases {
        let sb = fresh(a, &a.stock_snapshot);
        if let Some(t) = &tamper {
            patch_in_place(&sb, a, &commit);
            sb.sh_ok(t).unwrap();
        }
        let before = host_fingerprint(&sb);
        let out = sb.run(&["rocm-pin", "adopt"]).unwrap();
        let after = host_fingerprint(&sb);
        if rc(&out) != 2 || !text(&out).contains(expect) || before != after {
            failures.push(format!(
                "{name}: rc {} (want 2), expected {expect:?} in:\n{}\nchanged: {}",
                rc(&out),
                text(&out),
                before != after
            ));
        }
        if name == "no stock .deb for rollback" {
            let out = sb.run(&["rocm-pin", "adopt", "--no-rollback"]).unwrap();
            if rc(&out) != 0 || !all_patched(&probe(&sb)) || rc(&verify(&sb)) != 0 {
                failures.push(format!(
                    "--no-rollback: rc {}:\n{}\nverify:\n{}",
                    rc(&out),
                    text(&out),
                    text(&verify(&sb))
                ));
            }
        }
    }
    failures.extend(commit_flag_cases(a, &commit));
    failures.extend(apt_cache_case(a, &commit));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `--commit` naming another commit than the marker: refused naming both, nothing changed; the
/// marker's own commit given with --commit is adopted. Returns what failed.
fn commit_flag_cases(a: &Artifacts, commit: &str) -> Vec<String> {
    let mut failures = Vec::new();
    let sb = fresh(a, &a.stock_snapshot);
    patch_in_place(&sb, a, commit);
    let before = host_fingerprint(&sb);
    let other = "0123456789abcdef0123456789abcdef01234567";
    let out = sb.run(&["rocm-pin", "adopt", "--commit", other]).unwrap();
    let both = format!("{COMMIT_MARKER} says {commit} but --commit says {other}");
    if rc(&out) != 2 || !text(&out).contains(&both) || before != host_fingerprint(&sb) {
        failures.push(format!(
            "--commit disagreeing with the marker: rc {} (want 2), expected {both:?} in:\n{}",
            rc(&out),
            text(&out)
        ));
    }
    let out = sb.run(&["rocm-pin", "adopt", "--commit", commit]).unwrap();
    if rc(&out) != 0 || !all_patched(&probe(&sb)) {
        failures.push(format!(
            "--commit agreeing with the marker: rc {}:\n{}",
            rc(&out),
            text(&out)
        ));
    }
    failures
}

/// No repository, but the stock .debs in apt's cache: adopt takes them from there, and
/// rollback puts stock back offline. Returns what failed.
fn apt_cache_case(a: &Artifacts, commit: &str) -> Vec<String> {
    let mut failures = Vec::new();
    let sb = fresh(a, &a.stock_snapshot);
    patch_in_place(&sb, a, commit);
    let mut cp = String::from("rm -rf /srv/rocm-pin-test-repos/stock");
    for role in [StockRole::HsaRocr, StockRole::HipRuntime] {
        let deb = a
            .stock
            .require(role)
            .unwrap()
            .deb
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        cp.push_str(&format!(
            "; cp {STOCK_DEBS_DIR}/{deb} /var/cache/apt/archives/"
        ));
    }
    sb.sh_ok(&cp).unwrap();
    let out = sb.run(&["rocm-pin", "adopt"]).unwrap();
    if rc(&out) != 0 || !text(&out).contains("from the apt cache") {
        failures.push(format!("apt cache: rc {}:\n{}", rc(&out), text(&out)));
    } else {
        let out = sb.run(&["rocm-pin", "rollback"]).unwrap();
        if rc(&out) != 0 || !probe(&sb).iter().all(|(_, id)| id.contains("-STOCK-")) {
            failures.push(format!(
                "rollback after adopting from the apt cache:\n{}",
                text(&out)
            ));
        }
    }
    failures
}

/// An adoption SIGKILLed (with the apt-get it runs, by pid, from an apt hook) before dpkg ran
/// and right after it ran: the next `rocm-pin adopt` completes it.
#[test]
fn adopt_killed_half_way_completes_on_the_next_run() {
    rocm_pin_testkit::needs_root!("a chroot");
    let a = artifacts("bookworm");
    for hook in ["DPkg::Pre-Invoke", "DPkg::Post-Invoke"] {
        let sb = fresh_with_proc(a, &a.stock_snapshot);
        patch_in_place(&sb, a, &our_commit(a));
        apt_hook(
            &sb,
            "kill-adopt",
            hook,
            "#!/bin/sh\n# Walk up from this hook to rocm-pin (apt-get and a sh -c lie between) and\n# SIGKILL it and its apt-get, by pid.\npid=$$\nwhile [ \"$pid\" -gt 1 ]; do\n  pid=$(awk '{print $4}' /proc/$pid/stat)\n  case \"$(cat /proc/$pid/comm)\" in\n    apt-get) apt=$pid ;;\n    rocm-pin) kill -KILL \"$pid\" $apt; exit 0 ;;\n  esac\ndone\nexit 1\n",
        );
        let out = sb.run(&["rocm-pin", "adopt"]).unwrap();
        // Killed by the signal (no exit code), not an error exit of its own.
        assert!(
            matches!(rc(&out), -1 | 137),
            "{hook}: the hook did not kill adopt (rc {}):\n{}",
            rc(&out),
            text(&out)
        );
        assert!(
            sb.path("/var/lib/rocm-pin/adopt-state.json").exists(),
            "{hook}: {}",
            text(&out)
        );
        sb.sh_ok("rm /etc/apt/apt.conf.d/99kill-adopt").unwrap();
        let out = sb.run(&["rocm-pin", "adopt"]).unwrap();
        assert_eq!(rc(&out), 0, "{hook}: {}", text(&out));
        assert!(text(&out).contains("interrupted"), "{}", text(&out));
        assert_eq!(rc(&verify(&sb)), 0, "{hook}: {}", text(&verify(&sb)));
        assert!(all_patched(&probe(&sb)), "{hook}");
        assert!(!sb.path(COMMIT_MARKER).exists(), "{hook}");
        assert!(
            !sb.path("/var/lib/rocm-pin/adopt-state.json").exists(),
            "{hook}"
        );
    }
}

/// An adoption that fails AFTER apt ran, with an error of exit code 2 (a dpkg `Post-Invoke`
/// hook breaks ldconfig, so install's ldconfig after apt fails): the resume record stays and
/// the next `rocm-pin adopt` completes the adoption. Adopt used to read exit 2 as "nothing
/// changed" and delete the record, leaving the host half adopted with nothing to resume.
#[test]
fn adopt_failing_after_apt_keeps_its_resume_record() {
    rocm_pin_testkit::needs_root!("a chroot");
    let a = artifacts("bookworm");
    let sb = fresh_with_proc(a, &a.stock_snapshot);
    patch_in_place(&sb, a, &our_commit(a));
    apt_hook(
        &sb,
        "break-ldconfig",
        "DPkg::Post-Invoke",
        "#!/bin/sh\n# Replace ldconfig by one that fails (once: /sbin may be /usr/sbin).\nfor l in /sbin/ldconfig /usr/sbin/ldconfig; do\n  [ -e \"$l\" ] && [ ! -e \"$l.real\" ] || continue\n  mv \"$l\" \"$l.real\"\n  printf '#!/bin/sh\\necho ldconfig broken by the test >&2\\nexit 1\\n' > \"$l\"\n  chmod +x \"$l\"\ndone\nexit 0\n",
    );
    let out = sb.run(&["rocm-pin", "adopt"]).unwrap();
    assert_eq!(
        rc(&out),
        2,
        "adopt did not fail on ldconfig:\n{}",
        text(&out)
    );
    assert!(text(&out).contains("ldconfig failed"), "{}", text(&out));
    assert!(
        sb.path("/var/lib/rocm-pin/adopt-state.json").exists(),
        "the host changed (apt ran) but the resume record was deleted:\n{}",
        text(&out)
    );
    sb.sh_ok(
        "rm /etc/apt/apt.conf.d/99break-ldconfig; for l in /sbin/ldconfig /usr/sbin/ldconfig; do \
         if [ -e \"$l.real\" ]; then mv \"$l.real\" \"$l\"; fi; done",
    )
    .unwrap();
    let out = sb.run(&["rocm-pin", "adopt"]).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert!(text(&out).contains("interrupted"), "{}", text(&out));
    assert_eq!(rc(&verify(&sb)), 0, "{}", text(&verify(&sb)));
    assert!(all_patched(&probe(&sb)));
    assert!(!sb.path("/var/lib/rocm-pin/adopt-state.json").exists());
}

/// Pin N+1: the stand-in source with one more commit (a day later), built and packaged the
/// way install_support makes pin N. Returns the .debs (in `work`).
fn build_next_pin(a: &Artifacts, work: &std::path::Path) -> (String, Vec<std::path::PathBuf>) {
    use std::process::Command;
    let src = work.join("src");
    must(
        Command::new("cp")
            .arg("-a")
            .arg(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fixtures/rocm-systems"),
            )
            .arg(&src),
    );
    let git = |args: &[&str], date: &str| git_at(&src, args, date);
    git(&["init", "--quiet"], COMMIT_DATE);
    git(&["add", "--all"], COMMIT_DATE);
    git(
        &["commit", "--quiet", "-m", "stand-in rocm-systems"],
        COMMIT_DATE,
    );
    std::fs::write(src.join("README.md"), "pin N+1: the next backport commit\n").unwrap();
    let next_date = "2026-01-16T12:00:00+00:00";
    git(&["commit", "--quiet", "-am", "next pin"], next_date);
    let commit = git(&["rev-parse", "HEAD"], next_date);
    let staging = rocm_pin_testkit::build_standin_staging(&bin(), &src, &commit, work);
    let out = work.join("next");
    must(
        Command::new(bin())
            .args(["package", "--quiet", "--staging"])
            .arg(&staging)
            .arg("--stock-deb")
            .arg(&a.stock.require(StockRole::HsaRocr).unwrap().deb)
            .arg(&a.stock.require(StockRole::HipRuntime).unwrap().deb)
            .arg("--out")
            .arg(&out)
            .env("SOURCE_DATE_EPOCH", "1768564800"),
    );
    let mut debs: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .collect();
    debs.sort();
    assert_eq!(debs.len(), 2, "{debs:?}");
    (commit, debs)
}

/// Probe the loader before and after every dpkg run apt makes (dpkg's pre-/post-invoke): the
/// moments between unpacking and configuring are where stock could show through.
fn log_probes_around_dpkg(sb: &Sandbox) {
    sb.write(
        "/usr/local/bin/probe-log",
        format!("#!/bin/sh\n{PROBE} libhsa-runtime64.so.1 libamdhip64.so.7 >> /root/probe.log 2>&1 || echo probe-failed >> /root/probe.log\n"),
    )
    .unwrap();
    sb.sh_ok("chmod +x /usr/local/bin/probe-log; : > /root/probe.log")
        .unwrap();
    sb.write(
        "/etc/dpkg/dpkg.cfg.d/zz-probe-log",
        "pre-invoke=/usr/local/bin/probe-log\npost-invoke=/usr/local/bin/probe-log\n",
    )
    .unwrap();
}

fn installed_commit(sb: &Sandbox) -> String {
    let m: serde_json::Value = serde_json::from_str(
        &sb.read_to_string("/opt/rocm-7.2.4/.info/rocm-pin.json")
            .unwrap(),
    )
    .unwrap();
    m["commit"].as_str().unwrap_or("").to_string()
}

fn pin_moves(
    suite: &str,
    next_commit: &str,
    next_debs: &[std::path::PathBuf],
    work: &std::path::Path,
) {
    let a = artifacts(suite);
    let n_commit = our_commit(a);
    let sb = fresh(a, &a.installed_snapshot);
    let repo = work.join(format!("pins-{suite}"));
    std::fs::create_dir_all(&repo).unwrap();
    for d in a.ours.iter().chain(next_debs) {
        std::fs::copy(d, repo.join(d.file_name().unwrap())).unwrap();
    }
    sb.add_local_repo("pins", &repo).expect("pins repo");
    assert_eq!(rc(&verify(&sb)), 0, "{}", text(&verify(&sb)));
    // The guard on (its verify runs after apt's dpkg runs of the move, too).
    let mut argv = install_argv(&a.ours);
    argv.push("--guard");
    let out = sb.run(&argv).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    // status: the new pin is published, the guard is on.
    let st = sb.run(&["rocm-pin", "status", "--json"]).unwrap();
    let j: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(j["guard"], true, "{j}");
    let newer = j["upgrades"]["ours"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        newer.len(),
        2,
        "status must list pin N+1 for both packages: {j}"
    );
    assert!(
        text(&sb.run(&["rocm-pin", "status"]).unwrap()).contains("a new commit pin"),
        "human status names the new pin"
    );
    log_probes_around_dpkg(&sb);

    // N -> N+1 through apt.
    let out = sb.sh("apt-get upgrade -y").unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert_eq!(installed_commit(&sb), next_commit, "{}", text(&out));
    let v = verify(&sb);
    assert_eq!(rc(&v), 0, "after N -> N+1:\n{}", text(&v));
    let log = sb.read_to_string("/root/probe.log").unwrap();
    let probes: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(probes.len() >= 4, "dpkg hooks did not run:\n{log}");
    assert!(
        probes.iter().all(|l| l.contains("-PATCHED-")),
        "the loader saw something else than a patched pair during the upgrade:\n{log}"
    );
    assert!(probes.last().unwrap().contains(next_commit), "{log}");
    // Nothing of N lingers: one pin file per package, one loader entry, no N library files.
    let n_short = &n_commit[..7];
    let lingering = sb
        .sh(&format!(
            "ls /etc/apt/preferences.d /etc/ld.so.conf.d; ls {LIB} | grep -e {n_short} || true; ldconfig -p | grep -e {n_short} || true"
        ))
        .unwrap();
    let l = text(&lingering);
    assert!(!l.contains(n_short), "pin N lingers:\n{l}");
    assert_eq!(
        l.matches("-pinned").count(),
        3,
        "pin files / loader entries:\n{l}"
    );

    // Back to N: refused without --allow-downgrade, saying why; nothing changes.
    let before = host_fingerprint(&sb);
    let out = sb.run(&install_argv(&a.ours)).unwrap();
    assert_eq!(rc(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("--allow-downgrade"), "{}", text(&out));
    assert!(text(&out).contains("downgrade"), "{}", text(&out));
    assert_eq!(before, host_fingerprint(&sb));
    let mut argv = install_argv(&a.ours);
    argv.push("--allow-downgrade");
    let out = sb.run(&argv).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert_eq!(installed_commit(&sb), n_commit);
    assert_eq!(rc(&verify(&sb)), 0, "{}", text(&verify(&sb)));

    // Forward again, then rollback still restores stock.
    let out = sb.sh("apt-get upgrade -y").unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert_eq!(installed_commit(&sb), next_commit);
    let out = sb.run(&["rocm-pin", "rollback"]).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert!(
        probe(&sb).iter().all(|(_, id)| id.contains("-STOCK-")),
        "{:?}",
        probe(&sb)
    );
    assert!(dependants_installed(&sb), "{:?}", dependant_states(&sb));
}

/// The commit pin moves N -> N+1 through `apt-get upgrade`, back only with --allow-downgrade,
/// rollback after the move: bookworm, then trixie (apt 3 solver).
#[test]
fn the_pin_moves_through_apt_and_back_only_when_asked() {
    rocm_pin_testkit::needs_root!("a chroot");
    let work = tempfile::Builder::new()
        .prefix("rocm-pin-day2-")
        .tempdir()
        .unwrap();
    let (next_commit, next_debs) = build_next_pin(artifacts("bookworm"), work.path());
    for suite in CONFIGS.iter().copied() {
        pin_moves(suite, &next_commit, &next_debs, work.path());
    }
}

/// The apt image plus aptitude and unattended-upgrades (scripts/setup.d/22-day2-chroot.sh).
fn day2_image(suite: &str) -> rocm_pin_kit::sandbox::ChrootImage {
    let tarball = cache_dir().join(format!("chroot/{suite}-day2.tar.zst"));
    assert!(
        tarball.is_file(),
        "{} is missing: run scripts/test-setup (scripts/setup.d/22-day2-chroot.sh)",
        tarball.display()
    );
    rocm_pin_kit::sandbox::ChrootImage::from_tarball(suite, &tarball).unwrap()
}

/// Stock set + `rocm-pin install` on the day-2 image (its dpkg database differs from the
/// shared snapshots', so they cannot be unpacked onto it).
fn installed_on_day2_image(a: &Artifacts) -> Sandbox {
    let sb = stock_sandbox(&day2_image(&a.suite), a.config, a.pkgs);
    let out = sb.run(&install_argv(&a.ours)).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    sb
}

/// Stock ROCm 7.2.5: new hsa-rocr, hip-runtime-amd, rocm-core, and the exact-`=` dependants
/// rocm-hip-runtime and hip-dev, in their own prefix /opt/rocm-7.2.5.
fn stock_725(work: &std::path::Path) -> rocm_pin_kit::standin::StockSet {
    let mut spec = rocm_pin_kit::standin::StockSetSpec::for_host()
        .unwrap()
        .newer_release_with_meta();
    spec.rocm_version = "7.2.5".into();
    rocm_pin_kit::standin::build_stock_set(
        &spec,
        &work.join("stock-7.2.5"),
        &rocm_pin_core::progress::Silent,
    )
    .expect("stock 7.2.5 set")
}

const UU_CONF: &str = "Unattended-Upgrade::Origins-Pattern { \"origin=rocm-pin-test-stock725\"; \"origin=rocm-pin-test-stock\"; };\n\
Unattended-Upgrade::OnlyOnACPower \"false\";\n\
Unattended-Upgrade::Skip-Updates-On-Metered-Connections \"false\";\n";

fn stock_moves(suite: &str, r725: &rocm_pin_kit::standin::StockSet) {
    let a = artifacts(suite);
    let sb = installed_on_day2_image(a);
    sb.add_local_repo("stock725", &r725.out_dir).unwrap();
    sb.write("/etc/apt/apt.conf.d/51rocm-pin-day2-uu", UU_CONF)
        .unwrap();
    let runtime_ids = probe(&sb);
    assert!(all_patched(&runtime_ids), "{runtime_ids:?}");
    // The control (before any upgrade command ran), measured: without the release hold, the
    // classic solver (bookworm's apt 2.6 and trixie's apt 3.0 alike) removes the meta to
    // upgrade rocm-core alone (exit 0, /opt/rocm re-pointed); apt 3's solver 3.0 keeps all
    // three back even without it.
    let control = sb
        .sh("H=/etc/apt/preferences.d/rocm-pin-release-hold; mv $H /root/hold.saved; apt-get dist-upgrade -s; rocm-pin status | grep ^hold:; mv /root/hold.saved $H")
        .unwrap();
    assert_eq!(
        text(&control).contains("Remv rocm-hip-runtime"),
        solver_of(suite) == Solver::Classic,
        "control on {suite} without the hold:\n{}",
        text(&control)
    );
    assert!(
        text(&control).contains("MISSING rocm-core"),
        "status must say the hold is missing:\n{}",
        text(&control)
    );

    every_upgrade_command_keeps_everything(&sb, suite, &runtime_ids);

    // status: stock 7.2.5 is there, this pin targets 7.2.4, the two ways forward.
    let st = sb.run(&["rocm-pin", "status"]).unwrap();
    let t = text(&st);
    eprintln!("{suite}: status with stock 7.2.5 published:\n{t}");
    assert_eq!(rc(&st), 0, "{t}");
    assert!(
        t.contains("ROCm 7.2.5 is available while this pin targets 7.2.4"),
        "{t}"
    );
    assert!(t.contains("rocm-pin rollback && apt full-upgrade"), "{t}");
    assert!(t.contains("a pin built for 7.2.5"), "{t}");
    assert!(t.contains("hold:        rocm-core 7.2.4"), "{t}");
    let js = sb.run(&["rocm-pin", "status", "--json"]).unwrap();
    let j: serde_json::Value = serde_json::from_slice(&js.stdout).unwrap();
    assert_eq!(j["upgrades"]["stock_release"], "7.2.5", "{j}");
    assert_eq!(j["health"], "healthy");

    // rollback, then apt reaches stock 7.2.5 cleanly with every dependant.
    let out = sb.sh("rocm-pin rollback && apt full-upgrade -y").unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    let inst = sb.installed_packages().unwrap();
    for role in [
        StockRole::HsaRocr,
        StockRole::HipRuntime,
        StockRole::RocmHipRuntime,
        StockRole::HipDev,
    ] {
        let p = r725.require(role).unwrap();
        assert_eq!(inst.get(&p.name), Some(&p.version), "{}", text(&out));
    }
    assert!(dependants_installed(&sb), "{:?}", dependant_states(&sb));
    let ids = probe(&sb);
    assert!(
        ids.iter().all(|(_, id)| id.contains("-STOCK-70205")),
        "{ids:?}"
    );
}

/// apt upgrade / full-upgrade / dist-upgrade, aptitude safe-upgrade, unattended-upgrade, in
/// turn: none removes ours, installs stock, changes any package, /opt/rocm or the runtime
/// (`runtime_ids`), and each shows what it keeps back.
fn every_upgrade_command_keeps_everything(
    sb: &Sandbox,
    suite: &str,
    runtime_ids: &[(String, String)],
) {
    let mut failures = Vec::new();
    let mut table = Vec::new();
    for cmd in [
        "apt upgrade -y",
        "apt full-upgrade -y",
        "apt-get dist-upgrade -y",
        "aptitude safe-upgrade -y",
        "unattended-upgrade -v",
    ] {
        let before = sb.installed_packages().unwrap();
        let out = sb.sh(cmd).unwrap();
        let after = sb.installed_packages().unwrap();
        let ids = probe(sb);
        let v = verify(sb);
        let mut problems = Vec::new();
        if ids != runtime_ids {
            problems.push(format!("the runtime changed: {ids:?} (exit {})", rc(&out)));
        }
        for p in ["hsa-rocr-pinned", "hip-runtime-amd-pinned"] {
            if !after.contains_key(p) {
                problems.push(format!("{p} removed"));
            }
        }
        for p in ["hsa-rocr", "hip-runtime-amd"] {
            if after.contains_key(p) {
                problems.push(format!("stock {p} installed"));
            }
        }
        if rc(&v) != 0 {
            problems.push(format!("verify:\n{}", text(&v)));
        }
        let mut changed: Vec<String> = after
            .iter()
            .filter(|(k, v)| before.get(*k) != Some(*v))
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        changed.extend(
            before
                .keys()
                .filter(|k| !after.contains_key(*k))
                .map(|k| format!("{k} REMOVED")),
        );
        if !changed.is_empty() {
            problems.push(format!("packages changed: {}", changed.join(", ")));
        }
        if sb.resolve("/opt/rocm").ok() != Some(std::path::PathBuf::from("/opt/rocm-7.2.4")) {
            problems.push(format!(
                "/opt/rocm now resolves to {:?}",
                sb.resolve("/opt/rocm")
            ));
        }
        let out_text = text(&out);
        // What is kept back must be visible: apt/aptitude say so; unattended-upgrade logs it.
        let lower = out_text.to_lowercase();
        // apt, apt-get and unattended-upgrade name the packages; aptitude only counts them.
        let visible = (lower.contains("kept back") || lower.contains("not upgrad"))
            && (out_text.contains("rocm-hip-runtime")
                || (cmd.starts_with("aptitude") && !lower.contains(" 0 not upgraded")));
        if std::env::var_os("DAY2_DEBUG").is_some() {
            eprintln!("--- {cmd}:\n{out_text}");
        }
        if !visible {
            problems.push("kept-back packages not visible in the output".into());
        }
        table.push(format!(
            "{suite} {cmd:<26} rc {:<3} changed [{}] {}",
            rc(&out),
            changed.join(", "),
            if problems.is_empty() { "ok" } else { "FAIL" }
        ));
        if !problems.is_empty() {
            failures.push(format!("{cmd}: {}\n{out_text}", problems.join("; ")));
        }
    }
    eprintln!("{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A new stock ROCm release is published: no upgrade command removes ours or installs stock,
/// none exits 0 with a changed runtime; status tells; rollback + full-upgrade reaches it.
#[test]
fn a_new_stock_release_is_kept_back_until_the_admin_chooses() {
    rocm_pin_testkit::needs_root!("a chroot");
    let work = tempfile::Builder::new()
        .prefix("rocm-pin-day2-")
        .tempdir()
        .unwrap();
    let r725 = stock_725(work.path());
    for suite in CONFIGS.iter().copied() {
        stock_moves(suite, &r725);
    }
}

/// Install `script` as `/usr/local/bin/<name>` and run it from apt's `hook` (e.g.
/// `DPkg::Post-Invoke`) through `/etc/apt/apt.conf.d/99<name>`.
fn apt_hook(sb: &Sandbox, name: &str, hook: &str, script: &str) {
    let bin = format!("/usr/local/bin/{name}");
    sb.write(&bin, script).unwrap();
    sb.sh_ok(&format!("chmod +x {bin}")).unwrap();
    sb.write(
        &format!("/etc/apt/apt.conf.d/99{name}"),
        format!("{hook} {{ \"{bin}\"; }};\n"),
    )
    .unwrap();
}
