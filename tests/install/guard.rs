//! The guard can never make apt unusable (issue 21, item 5), judged by real apt and dpkg in a
//! bookworm chroot: the binary the hooks run deleted, rocm-pin's own .deb removed and purged,
//! `install --guard` run from a temp path that then disappears, `ROCM_PIN_NO_GUARD=1`,
//! `guard off`, a failed rollback, an environment error inside the hook's verify. In each,
//! apt and dpkg still work and say why the guard let them through; only a broken runtime
//! fails them.

use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::assert_success;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::util::*;
use rocm_pin_kit::sandbox::Sandbox;
use rocm_pin_kit::standin::StockRole;
use rocm_pin_testkit::scratch::ScratchDir;

/// The tests that are about apt itself run under every apt configuration CI covers; the rest
/// under this one.
pub(crate) const CONFIG: &str = "bookworm";
pub(crate) const APT_HOOK: &str = "/etc/apt/apt.conf.d/80rocm-pin-guard";
pub(crate) const DPKG_HOOK: &str = "/etc/dpkg/dpkg.cfg.d/rocm-pin-guard";
pub(crate) const PRIVATE_COPY: &str = "/usr/lib/rocm-pin/rocm-pin";
/// Two tiny packages: `guard-probe-a` from a local apt repository, `guard-probe-b` for dpkg -i.
const PROBE_A: &str = "guard-probe-a";
const PROBE_B_DEB: &str = "/root/guard-probe-b_1.0_all.deb";

/// What a hook says when it let a run through because its binary is gone.
pub(crate) const GONE: &str = "is gone or not executable";
/// What a hook says when it failed a run because the runtime is broken.
pub(crate) const BROKE: &str = "left the patched ROCm runtime broken";

struct Probes {
    _work: ScratchDir,
    repo: PathBuf,
    b: PathBuf,
}

/// `guard-probe-a` (in `repo/`, for a local apt repository) and `guard-probe-b` (for dpkg -i),
/// made once with dpkg-deb.
fn probes() -> &'static Probes {
    static PROBES: OnceLock<Probes> = OnceLock::new();
    PROBES.get_or_init(|| {
        let work = ScratchDir::new("guard-probes").expect("scratch directory");
        let repo = work.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let a = tiny_deb(work.path(), "guard-probe-a");
        std::fs::rename(&a, repo.join(a.file_name().unwrap())).unwrap();
        let b = tiny_deb(work.path(), "guard-probe-b");
        Probes {
            _work: work,
            repo,
            b,
        }
    })
}

fn tiny_deb(dir: &Path, name: &str) -> PathBuf {
    let tree = dir.join(format!("{name}-tree"));
    std::fs::create_dir_all(tree.join("DEBIAN")).unwrap();
    std::fs::create_dir_all(tree.join(format!("usr/share/{name}"))).unwrap();
    std::fs::write(tree.join(format!("usr/share/{name}/probe")), name).unwrap();
    std::fs::write(
        tree.join("DEBIAN/control"),
        format!("Package: {name}\nVersion: 1.0\nArchitecture: all\nMaintainer: T <t@example.invalid>\nDescription: a package apt and dpkg install in the guard tests\n"),
    )
    .unwrap();
    let deb = dir.join(format!("{name}_1.0_all.deb"));
    must(
        Command::new("dpkg-deb")
            .args(["--root-owner-group", "--build"])
            .arg(&tree)
            .arg(&deb),
    );
    deb
}

/// rocm-pin's own .deb (scripts/package-self of the binary under test), made once.
fn self_deb() -> &'static Path {
    static DEB: OnceLock<(ScratchDir, PathBuf)> = OnceLock::new();
    &DEB.get_or_init(|| {
        let work = ScratchDir::new("guard-self-deb").expect("scratch directory");
        let out = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/package-self"))
            .arg(work.path())
            .env("ROCM_PIN_BIN", bin())
            .output()
            .unwrap();
        assert_success(&out, "package-self");
        let deb = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        (work, deb)
    })
    .1
}

/// A chroot with ours installed, the probe packages reachable (apt repository `guard`,
/// `guard-probe-b` copied in), the guard NOT armed yet.
pub(crate) fn sandbox() -> Sandbox {
    sandbox_in(CONFIG)
}

fn sandbox_in(config: &str) -> Sandbox {
    let a = artifacts(config);
    let sb = fresh(a, &a.installed_snapshot);
    let p = probes();
    sb.add_local_repo("guard", &p.repo).unwrap();
    sb.copy_in(&p.b, PROBE_B_DEB).unwrap();
    sb
}

/// `sandbox()` with `rocm-pin install --guard` run (our packages already in: it arms the
/// guard), plus `extra` arguments.
fn guarded(extra: &[&str]) -> Sandbox {
    guarded_in(CONFIG, extra)
}

fn guarded_in(config: &str, extra: &[&str]) -> Sandbox {
    let sb = sandbox_in(config);
    let mut argv = install_argv(&artifacts(config).ours);
    argv.push("--guard");
    argv.extend(extra);
    let out = sb.run(&argv).unwrap();
    assert_eq!(rc(&out), 0, "install --guard: {}", text(&out));
    assert!(sb.path(APT_HOOK).is_file() && sb.path(DPKG_HOOK).is_file());
    sb
}

/// Tamper with our installed HIP library (its md5sum no longer matches): verify exits 1.
fn break_runtime(sb: &Sandbox) {
    sb.sh_ok(&format!(
        "printf tampered >> \"$(readlink -f /opt/rocm-7.2.4/lib/{})\"",
        SONAMES[0]
    ))
    .unwrap();
    assert_eq!(rc(&verify(sb)), 1, "the tamper must break the runtime");
}

pub(crate) fn apt_install(sb: &Sandbox, env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = sb.command(&["apt-get", "install", "-y", "--reinstall", PROBE_A]);
    cmd.envs(env.iter().copied());
    cmd.output().unwrap()
}

fn dpkg_install(sb: &Sandbox, env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = sb.command(&["dpkg", "-i", PROBE_B_DEB]);
    cmd.envs(env.iter().copied());
    cmd.output().unwrap()
}

use crate::util::per_config;

per_config!(
    deleting_the_binary_disarms_both_hooks_and_apt_and_dpkg_still_work,
    rocm_pin_no_guard_is_honoured_by_both_hooks,
);

/// The binary the hooks run deleted (the one install ran and its private copy): both hooks
/// disarm with a line saying why, apt and dpkg exit 0.
fn deleting_the_binary_disarms_both_hooks_and_apt_and_dpkg_still_work(config: &str) {
    let sb = guarded_in(config, &[]);
    sb.sh_ok(&format!("rm -f /usr/local/bin/rocm-pin {PRIVATE_COPY}"))
        .unwrap();
    for (what, out) in [
        ("apt", apt_install(&sb, &[])),
        ("dpkg", dpkg_install(&sb, &[])),
    ] {
        let said = text(&out);
        assert_eq!(rc(&out), 0, "{what} with the binary gone:\n{said}");
        assert!(
            said.contains("rocm-pin --guard: off: ") && said.contains(GONE),
            "{what} must say why the guard is off:\n{said}"
        );
    }
}

/// rocm-pin from its own .deb: the hooks run /usr/bin/rocm-pin (no private copy); `apt-get
/// remove` takes the hooks away in prerm, and neither that run nor later ones fail; purge too.
#[test]
fn removing_and_purging_rocm_pins_own_deb_takes_the_hooks_away() {
    rocm_pin_testkit::needs_root!("a chroot");
    let sb = sandbox();
    sb.copy_in(self_deb(), "/root/rocm-pin.deb").unwrap();
    sb.run_ok(&["apt-get", "install", "-y", "/root/rocm-pin.deb"])
        .unwrap();
    sb.sh_ok("rm -f /usr/local/bin/rocm-pin").unwrap();
    let mut argv = install_argv(&artifacts(CONFIG).ours);
    argv[0] = "/usr/bin/rocm-pin";
    argv.push("--guard");
    let out = sb.run(&argv).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    let hook = sb.read_to_string(APT_HOOK).unwrap();
    // The .deb ships the guard binary beside rocm-pin: the hooks run it.
    assert_says(&hook, &["exec /usr/bin/rocm-pin-guard guard hook apt"]);
    assert!(
        !sb.path(PRIVATE_COPY).exists(),
        "the .deb's binary is run, not a copy"
    );

    let out = sb.run(&["apt-get", "remove", "-y", "rocm-pin"]).unwrap();
    assert_eq!(rc(&out), 0, "apt-get remove rocm-pin:\n{}", text(&out));
    // apt still runs the hook line it read before prerm took the hooks away: it must not say
    // the guard is "off" and the run "not checked", as if something were wrong.
    assert!(
        !text(&out).contains("rocm-pin --guard"),
        "apt-get remove rocm-pin:\n{}",
        text(&out)
    );
    assert!(
        !sb.path(APT_HOOK).exists() && !sb.path(DPKG_HOOK).exists(),
        "prerm/postrm must remove the hooks"
    );
    for (what, out) in [
        ("apt", apt_install(&sb, &[])),
        ("dpkg", dpkg_install(&sb, &[])),
    ] {
        assert_eq!(rc(&out), 0, "{what} after the removal:\n{}", text(&out));
        assert!(!text(&out).contains("rocm-pin --guard"), "{}", text(&out));
    }
    let out = sb.run(&["apt-get", "purge", "-y", "rocm-pin"]).unwrap();
    assert_eq!(rc(&out), 0, "apt-get purge rocm-pin:\n{}", text(&out));
    let out = sb.run(&["dpkg-query", "-W", "rocm-pin"]).unwrap();
    assert_ne!(rc(&out), 0, "rocm-pin must be purged: {}", text(&out));
    let out = sb.run(&["apt-config", "dump"]).unwrap();
    assert!(!text(&out).contains("rocm-pin"), "{}", text(&out));
}

/// `install --guard` run from a temp path that then disappears: the hooks run the private
/// copy, so apt works AND is still checked (a forced stock package still fails dpkg).
#[test]
fn a_guard_installed_from_a_temp_path_runs_its_stable_copy() {
    rocm_pin_testkit::needs_root!("a chroot");
    let sb = sandbox();
    install_guard_from_a_build_dir(&sb, None);
    let hook = sb.read_to_string(APT_HOOK).unwrap();
    assert!(
        !hook.contains("/tmp/build"),
        "a temp path in the hook:\n{hook}"
    );
    for (what, out) in [
        ("apt", apt_install(&sb, &[])),
        ("dpkg", dpkg_install(&sb, &[])),
    ] {
        assert_eq!(rc(&out), 0, "{what}:\n{}", text(&out));
        assert!(!text(&out).contains(GONE), "{what} checked: {}", text(&out));
    }
    let out = sb
        .run(&[PRIVATE_COPY, "guard", "status", "--json"])
        .unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["armed"], true, "{s}");
    assert_eq!(s["binary"], PRIVATE_COPY, "{s}");
    // No guard binary beside the rocm-pin that ran: the full binary was copied, as before.
    assert!(!sb.path("/usr/lib/rocm-pin/rocm-pin-guard").exists());
    // Still checking: a forced stock package fails that dpkg run.
    let hsa = artifacts(CONFIG).stock.require(StockRole::HsaRocr).unwrap();
    let deb = format!(
        "{STOCK_DEBS_DIR}/{}",
        hsa.deb.file_name().unwrap().to_string_lossy()
    );
    let out = sb.run(&["dpkg", "-i", "--force-all", &deb]).unwrap();
    assert_eq!(
        rc(&out),
        2,
        "the guard must still fail dpkg:\n{}",
        text(&out)
    );
    assert!(text(&out).contains(BROKE), "{}", text(&out));
}

/// `ROCM_PIN_NO_GUARD=1` skips both hooks, each saying so; without it a broken runtime
/// fails both.
fn rocm_pin_no_guard_is_honoured_by_both_hooks(config: &str) {
    let sb = guarded_in(config, &[]);
    break_runtime(&sb);
    let skip = [("ROCM_PIN_NO_GUARD", "1")];
    for (what, out) in [
        ("apt", apt_install(&sb, &skip)),
        ("dpkg", dpkg_install(&sb, &skip)),
    ] {
        let said = text(&out);
        assert_eq!(rc(&out), 0, "{what} with ROCM_PIN_NO_GUARD=1:\n{said}");
        assert!(
            said.contains("ROCM_PIN_NO_GUARD is set") && !said.contains(BROKE),
            "{what}:\n{said}"
        );
    }
    for (what, out) in [
        ("apt", apt_install(&sb, &[])),
        ("dpkg", dpkg_install(&sb, &[])),
    ] {
        assert_ne!(rc(&out), 0, "{what} on a broken runtime:\n{}", text(&out));
        assert!(text(&out).contains(BROKE), "{what}:\n{}", text(&out));
        // What dpkg and apt print of the failed hook is its one short line, not a script.
        let said = text(&out);
        let hook_lines: Vec<&str> = said.lines().filter(|l| l.contains("guard hook")).collect();
        assert!(
            !hook_lines.is_empty()
                && hook_lines.iter().all(|l| l.len() < 400)
                && !said.contains("esac"),
            "{what} printed the hook as: {hook_lines:#?}\n{said}"
        );
    }
}

/// `rocm-pin guard off`: both hooks and the private copy gone, apt's configuration has no
/// hook, apt and dpkg pass on a broken runtime; `guard status` then says off, exit 0 and no
/// `error:` (off is a normal state; exit 3 means "skipped by the gate").
#[test]
fn guard_off_leaves_apt_and_dpkg_without_a_hook() {
    rocm_pin_testkit::needs_root!("a chroot");
    let sb = guarded(&[]);
    break_runtime(&sb);
    let out = sb.run(&["rocm-pin", "guard", "off"]).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    for p in [APT_HOOK, DPKG_HOOK, PRIVATE_COPY] {
        assert!(!sb.path(p).exists(), "{p} left behind");
    }
    let out = sb.run(&["apt-config", "dump"]).unwrap();
    assert!(!text(&out).contains("rocm-pin"), "{}", text(&out));
    for (what, out) in [
        ("apt", apt_install(&sb, &[])),
        ("dpkg", dpkg_install(&sb, &[])),
    ] {
        assert_eq!(rc(&out), 0, "{what}:\n{}", text(&out));
        assert!(!text(&out).contains("rocm-pin --guard"), "{}", text(&out));
    }
    let out = sb.run(&["rocm-pin", "guard", "status"]).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert!(
        text(&out).starts_with("guard: off") && !text(&out).contains("error:"),
        "{}",
        text(&out)
    );
}

/// A rollback that fails (another dpkg holds the lock) puts the guard back with the flags it
/// was installed with (`--accept-skipped-backport-check` here), not without them.
#[test]
fn a_failed_rollback_puts_the_guard_back_with_its_flags() {
    rocm_pin_testkit::needs_root!("a chroot");
    let sb = guarded(&["--accept-skipped-backport-check"]);
    let before = (
        sb.read_to_string(APT_HOOK).unwrap(),
        sb.read_to_string(DPKG_HOOK).unwrap(),
    );
    assert!(before
        .0
        .contains("guard hook apt --accept-skipped-backport-check"));
    // The same fcntl write lock apt and dpkg take, held from outside the chroot.
    let lock = hold_dpkg_frontend_lock(&sb);
    let out = sb
        .run(&["rocm-pin", "rollback", "--lock-timeout", "2"])
        .unwrap();
    drop(lock);
    assert_ne!(rc(&out), 0, "the rollback must fail: {}", text(&out));
    let after = (
        sb.read_to_string(APT_HOOK).unwrap(),
        sb.read_to_string(DPKG_HOOK).unwrap(),
    );
    assert_eq!(after, before, "the guard came back changed");
}

/// An environment error inside the hook's verify (`apt-cache policy` fails: exit 2) is
/// reported as such, does not claim the runtime broke, and does not fail apt or dpkg.
#[test]
fn an_environment_error_in_the_hook_warns_and_does_not_fail_apt() {
    rocm_pin_testkit::needs_root!("a chroot");
    let sb = guarded(&[]);
    // apt-get and dpkg never run apt-cache; verify does (apt's view of the pins).
    sb.write(
        "/usr/local/sbin/apt-cache",
        "#!/bin/sh\necho 'E: simulated apt-cache failure' >&2\nexit 100\n",
    )
    .unwrap();
    sb.sh_ok("chmod 0755 /usr/local/sbin/apt-cache").unwrap();
    assert_eq!(
        rc(&verify(&sb)),
        2,
        "verify must end with an environment error"
    );
    for (what, out) in [
        ("apt", apt_install(&sb, &[])),
        ("dpkg", dpkg_install(&sb, &[])),
    ] {
        let said = text(&out);
        assert_eq!(rc(&out), 0, "{what}:\n{said}");
        assert!(
            said.contains("could not check (environment error")
                && said.contains("the runtime was not judged")
                && !said.contains(BROKE),
            "{what}:\n{said}"
        );
    }
}

/// `rocm-pin guard on` arms only over a runtime that passes verify: on a stock host (nothing of
/// ours installed) and over a broken runtime it is refused (exit 2, nothing written), since it
/// would fail every later apt run; on a healthy one it arms both hooks (`guard status` exit 0).
#[test]
fn guard_on_refuses_a_failing_runtime_and_arms_a_healthy_one() {
    rocm_pin_testkit::needs_root!("a chroot");
    let a = artifacts(CONFIG);
    let stock = fresh(a, &a.stock_snapshot);
    let broken = sandbox();
    break_runtime(&broken);
    for (what, sb) in [("stock host", &stock), ("broken runtime", &broken)] {
        let out = sb.run(&["rocm-pin", "guard", "on"]).unwrap();
        assert_eq!(rc(&out), 2, "{what}: {}", text(&out));
        assert!(
            text(&out).contains("the guard was not armed"),
            "{what}: {}",
            text(&out)
        );
        for p in [APT_HOOK, DPKG_HOOK, PRIVATE_COPY] {
            assert!(!sb.path(p).exists(), "{what}: {p} written");
        }
    }
    let sb = sandbox();
    let out = sb.run(&["rocm-pin", "guard", "on"]).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert_armed_and_apt_passes(&sb, "rocm-pin", PRIVATE_COPY);
}

/// `install --guard` run by a rocm-pin in /tmp/build (moved there from /usr/local/bin, with
/// `guard_bin` copied beside it as rocm-pin-guard when given), a directory removed right after,
/// as a build or temp path that vanishes: the hooks must run a stable copy.
pub(crate) fn install_guard_from_a_build_dir(sb: &Sandbox, guard_bin: Option<&Path>) {
    sb.sh_ok("mkdir -p /tmp/build && mv /usr/local/bin/rocm-pin /tmp/build/rocm-pin")
        .unwrap();
    if let Some(guard_bin) = guard_bin {
        sb.copy_in(guard_bin, "/tmp/build/rocm-pin-guard").unwrap();
    }
    let mut argv = install_argv(&artifacts(CONFIG).ours);
    argv[0] = "/tmp/build/rocm-pin";
    argv.push("--guard");
    let out = sb.run(&argv).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    sb.sh_ok("rm -rf /tmp/build").unwrap();
}

/// `CLI guard status --json` says armed with `binary`, and an apt run that leaves the runtime
/// alone passes the hook that runs it.
pub(crate) fn assert_armed_and_apt_passes(sb: &Sandbox, cli: &str, binary: &str) {
    let out = sb.run(&[cli, "guard", "status", "--json"]).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&s["armed"], &s["binary"]),
        (&true.into(), &binary.into()),
        "{s}"
    );
    let out = apt_install(sb, &[]);
    assert_eq!(
        rc(&out),
        0,
        "apt under the guard ({binary}):\n{}",
        text(&out)
    );
}
