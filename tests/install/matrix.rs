//! Acceptance in chroots under each apt configuration CI covers (bookworm, trixie, trixie
//! with `APT::Solver "3.0"`): the tamper matrix (each tamper takes effect, then `verify`
//! fails naming the check) and the gate matrix (every version × every mode, the stock-version
//! mismatch, verify's exit 3 after an `auto` skip). `rocm-pin` runs inside the chroot.

use crate::util::*;
use rocm_pin_core::host::apt::Solver;
use rocm_pin_kit::sandbox::Sandbox;
use rocm_pin_kit::standin::StockRole;
use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::assert_success;

const LIB: &str = "/opt/rocm-7.2.4/lib";

use crate::util::per_config;

per_config!(
    tamper_matrix_fails_verify_naming_the_check,
    gate_matrix_versions_by_modes,
    stock_mismatch_and_absent_stock_are_refused_before_apt,
    an_interrupted_install_is_completed_by_the_next_run,
    a_run_killed_by_sigkill_inside_dpkg_is_completed_by_the_next_run,
    status_reports_the_install_and_processes_mapping_the_old_runtime,
    guard_fails_the_apt_command_that_breaks_the_runtime,
    a_held_dpkg_lock_fails_cleanly_after_the_timeout,
    stock_is_rebuilt_from_the_dpkg_database_only_when_unmodified,
    dpkg_guard_fails_a_forced_stock_install_at_that_command,
);

struct Tamper {
    name: &'static str,
    script: String,
    /// Shell test that is true once the tamper took effect.
    took_effect: String,
    /// Checks verify must name.
    fails: &'static [&'static str],
}

fn stock_lib_cmd(a: &Artifacts, role: StockRole, soname: &str, dest: &str) -> String {
    let pkg = a.stock.require(role).unwrap();
    let lib = pkg
        .libraries
        .iter()
        .find(|l| l.soname == soname)
        .unwrap_or_else(|| panic!("{soname} not in {}", pkg.name));
    format!(
        "dpkg-deb --fsys-tarfile {STOCK_DEBS_DIR}/{} | tar -xOf - .{} > {dest}",
        pkg.deb.file_name().unwrap().to_string_lossy(),
        lib.path
    )
}

fn tampers(a: &Artifacts) -> Vec<Tamper> {
    let hsa = a.stock.require(StockRole::HsaRocr).unwrap();
    let hip = a.stock.require(StockRole::HipRuntime).unwrap();
    let hsa_alias = hsa.libraries[0].path.clone();
    let hip_alias = hip
        .libraries
        .iter()
        .find(|l| l.soname == "libamdhip64.so.7")
        .unwrap()
        .path
        .clone();
    vec![
        Tamper {
            name: "library overwritten with stock content",
            // Written through the stock file name: the seed's in-place method.
            script: stock_lib_cmd(a, StockRole::HipRuntime, "libamdhip64.so.7", &hip_alias),
            took_effect: format!("{PROBE} libamdhip64.so.7 | grep -q hip-STOCK"),
            fails: &["files"],
        },
        Tamper {
            name: "library truncated to 0 bytes",
            script: format!(": > {hip_alias}"),
            took_effect: format!("test ! -s {LIB}/libamdhip64.so.7"),
            fails: &["files", "sonames"],
        },
        Tamper {
            name: "soname symlink dangling",
            script: format!("ln -sfn libamdhip64.so.7.9.9 {LIB}/libamdhip64.so.7"),
            took_effect: format!("test -L {LIB}/libamdhip64.so.7 && test ! -e {LIB}/libamdhip64.so.7"),
            fails: &["sonames", "symlinks"],
        },
        Tamper {
            name: "alias hard link replaced by a copy",
            script: format!("cp {hip_alias} /tmp/copy && mv /tmp/copy {hip_alias}"),
            took_effect: format!(
                "test \"$(stat -c %h {hip_alias})\" = 1"
            ),
            fails: &["aliases"],
        },
        Tamper {
            name: "pin file removed",
            script: "rm /etc/apt/preferences.d/hip-runtime-amd-pinned".into(),
            took_effect: "apt-cache policy hip-runtime-amd | grep -q 'Candidate: 7'".into(),
            fails: &["pin-file", "pin-effective"],
        },
        Tamper {
            name: "marker removed",
            script: "rm /opt/rocm-7.2.4/.info/rocm-pin.json".into(),
            took_effect: "test ! -e /opt/rocm-7.2.4/.info/rocm-pin.json".into(),
            fails: &["marker"],
        },
        Tamper {
            name: "marker commit edited",
            script: "sed -i 's/\"commit\": *\"[0-9a-f]*\"/\"commit\": \"0000000000000000000000000000000000000000\"/' /opt/rocm-7.2.4/.info/rocm-pin.json".into(),
            took_effect: "grep -q 0000000000000000000000000000000000000000 /opt/rocm-7.2.4/.info/rocm-pin.json".into(),
            fails: &["marker-commit"],
        },
        Tamper {
            name: "loader entry removed + ldconfig",
            script: "rm /etc/ld.so.conf.d/hsa-rocr-pinned.conf; ldconfig".into(),
            took_effect: "! ldconfig -p | grep -q libamdhip64.so.7".into(),
            fails: &["loader-entry", "loader"],
        },
        Tamper {
            name: "stock package force-installed next to ours",
            script: format!(
                "dpkg -i --force-all {STOCK_DEBS_DIR}/{} || true",
                hsa.deb.file_name().unwrap().to_string_lossy()
            ),
            took_effect: "dpkg-query -W -f='${db:Status-Abbrev}' hsa-rocr | grep -q '^i'".into(),
            fails: &["stock-absent"],
        },
        Tamper {
            name: "HSA library without the backport symbol",
            script: stock_lib_cmd(a, StockRole::HsaRocr, "libhsa-runtime64.so.1", &hsa_alias),
            took_effect: format!("{PROBE} libhsa-runtime64.so.1 | grep -q hsa-STOCK"),
            fails: &["backport-symbol", "files"],
        },
        Tamper {
            name: "same-named library in another prefix found first",
            script: format!(
                "mkdir -p /opt/other/lib; {}; echo /opt/other/lib > /etc/ld.so.conf.d/00-other.conf; ldconfig",
                stock_lib_cmd(
                    a,
                    StockRole::HsaRocr,
                    "libhsa-runtime64.so.1",
                    "/opt/other/lib/libhsa-runtime64.so.1"
                )
            ),
            took_effect: format!("{PROBE} libhsa-runtime64.so.1 | grep -q /opt/other/lib"),
            fails: &["loader"],
        },
    ]
}

fn tamper_matrix_fails_verify_naming_the_check(config: &str) {
    let a = artifacts(config);
    let mut failures = Vec::new();
    for t in tampers(a) {
        let sb = fresh(a, &a.installed_snapshot);
        assert!(verify(&sb).status.success(), "fresh copy must verify");
        let out = sb.sh(&t.script).unwrap();
        let effect = sb.sh(&t.took_effect).unwrap();
        if !effect.status.success() {
            failures.push(format!(
                "{}: the tamper did not take effect ({}):\n{}",
                t.name,
                t.took_effect,
                text(&out)
            ));
            continue;
        }
        let v = verify(&sb);
        let failed = failed_checks(&sb);
        let missing: Vec<&&str> = t
            .fails
            .iter()
            .filter(|n| !failed.iter().any(|f| f == *n))
            .collect();
        eprintln!(
            "tamper {:<48} verify rc {} failed {:?}",
            t.name,
            rc(&v),
            failed
        );
        if rc(&v) != 1 || !missing.is_empty() {
            failures.push(format!(
                "{}: verify rc {} failed {failed:?}, expected {:?}:\n{}",
                t.name,
                rc(&v),
                t.fails,
                text(&v)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// dpkg's `db:Status-Abbrev` of `package` in the chroot (`ii`, `iU`, `iF` …).
fn status_abbrev(sb: &Sandbox, package: &str) -> String {
    sb.run_ok(&["dpkg-query", "-W", "-f=${db:Status-Abbrev}", package])
        .unwrap()
}

fn status_of(sb: &Sandbox) -> String {
    sb.read_to_string("/var/lib/dpkg/status").unwrap()
}

fn gate_matrix_versions_by_modes(config: &str) {
    let a = artifacts(config);
    let versions: &[(Option<&str>, bool)] = &[
        (Some("7.2.4"), true),
        (Some("7.2.4-42"), true),
        (Some("7.2.4+123"), true),
        (Some("7.2.40"), false),
        (Some("7.2.3"), false),
        (Some("10.0.0"), false),
        (None, false),
    ];
    let mut failures = Vec::new();
    for (version, matches) in versions {
        // The refusals and skips are decided before apt runs: the same under every apt
        // configuration, so only bookworm runs them; the others run every case that installs.
        if !matches && config != "bookworm" {
            continue;
        }
        for mode in ["require", "auto", "off"] {
            let sb = fresh(a, &a.stock_snapshot);
            let vf = "/opt/rocm-7.2.4/.info/version";
            match version {
                Some(v) => sb.write(vf, format!("{v}\n")).unwrap(),
                None => std::fs::remove_file(sb.path(vf)).unwrap(),
            }
            let before = status_of(&sb);
            let mut argv = install_argv(&a.ours);
            // auto through the environment, the others through --mode.
            let out = if mode == "auto" {
                let mut cmd = sb.command(&argv);
                cmd.env("ROCM_PIN_MODE", "auto");
                cmd.output().unwrap()
            } else {
                argv.extend(["--mode", mode]);
                sb.run(&argv).unwrap()
            };
            let unchanged = status_of(&sb) == before
                && !sb.path("/etc/ld.so.conf.d/hsa-rocr-pinned.conf").exists();
            let skip = sb.path("/var/lib/rocm-pin/skipped").exists();
            let v = rc(&verify(&sb));
            let (want_rc, want_unchanged, want_skip, want_verify) = match (mode, matches) {
                ("off", _) => (0, true, false, 1),
                (_, true) => (0, false, false, 0),
                ("require", false) => (2, true, false, 1),
                _ => (0, true, true, 3),
            };
            let got = (rc(&out), unchanged, skip, v);
            eprintln!(
                "gate {version:?} {mode:<8} rc {} unchanged {unchanged} skip {skip} verify {v}",
                rc(&out)
            );
            if got != (want_rc, want_unchanged, want_skip, want_verify) {
                failures.push(format!(
                    "{version:?} {mode}: got (rc, unchanged, skip, verify) {got:?}, want {:?}:\n{}",
                    (want_rc, want_unchanged, want_skip, want_verify),
                    text(&out)
                ));
            }
            if *matches && mode != "off" && !all_patched(&probe(&sb)) {
                failures.push(format!("{version:?} {mode}: loader not patched"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn stock_mismatch_and_absent_stock_are_refused_before_apt(config: &str) {
    let a = artifacts(config);
    // Stock -94 where we were built against -93.
    let sb = fresh(a, &a.stock_snapshot);
    sb.add_local_repo("r94", &a.r94.out_dir).unwrap();
    let hsa = a.r94.require(StockRole::HsaRocr).unwrap();
    let hip = a.r94.require(StockRole::HipRuntime).unwrap();
    // The dependants with `=` on -93 go by name: the classic solver removes them by itself,
    // apt 3's solver refuses to decide it ("Reached two conflicting decisions").
    sb.run_ok(&[
        "apt-get",
        "install",
        "-y",
        &hsa.pinned_request(),
        &hip.pinned_request(),
        "hip-dev-",
        "rocm-hip-runtime-",
    ])
    .unwrap();
    let said = install_refused_changing_nothing(&sb, a);
    assert!(said.contains("built against"), "{said}");
    assert!(!sb.path("/etc/ld.so.conf.d/hsa-rocr-pinned.conf").exists());

    // Stock absent.
    let sb = fresh(a, &a.stock_snapshot);
    sb.run_ok(&[
        "dpkg",
        "--purge",
        "--force-depends",
        "hip-runtime-amd",
        "hsa-rocr",
    ])
    .unwrap();
    let said = install_refused_changing_nothing(&sb, a);
    // One line naming what is missing and the exact apt line that installs it.
    let error: Vec<&str> = said.lines().filter(|l| l.contains("error:")).collect();
    assert_eq!(error.len(), 1, "{said}");
    assert!(
        error[0].contains("not installed")
            && error[0].contains(&format!("`apt-get install {}=", hip.name))
            && error[0].contains(&format!(" {}=", hsa.name)),
        "{said}"
    );
}

/// `rocm-pin install` of ours refused (exit 2) with the dpkg status byte-identical; its output.
fn install_refused_changing_nothing(sb: &Sandbox, a: &Artifacts) -> String {
    let before = status_of(sb);
    let out = sb.run(&install_argv(&a.ours)).unwrap();
    assert_eq!(rc(&out), 2, "{}", text(&out));
    assert_eq!(before, status_of(sb), "a refusal must change nothing");
    text(&out)
}

/// A run killed between dpkg's unpack and configure (the state SIGKILL during apt leaves):
/// the next `rocm-pin install` completes it.
fn an_interrupted_install_is_completed_by_the_next_run(config: &str) {
    let a = artifacts(config);
    let sb = fresh(a, &a.stock_snapshot);
    let argv = install_argv(&a.ours);
    let mut unpack = vec!["dpkg", "--unpack"];
    unpack.extend(&argv[2..]);
    let out = sb.run(&unpack).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    let state = status_abbrev(&sb, "hsa-rocr-pinned");
    assert_eq!(state.trim(), "iU", "the interrupted state must be set up");
    assert_eq!(rc(&verify(&sb)), 1);
    let out = sb.run(&argv).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert!(text(&out).contains("dpkg --configure -a"), "{}", text(&out));
    assert!(verify(&sb).status.success());
    assert!(all_patched(&probe(&sb)));
    assert!(dependants_installed(&sb));
}

/// The `ldconfig` that our hsa postinst runs, put first in PATH (`/usr/local/sbin`; apt gives
/// dpkg its own PATH, `DPkg::Path`, without it by default, so the test sets that too): inside
/// that postinst (dpkg mid-transaction: stock hsa-rocr gone, ours unpacked and half-configured)
/// it removes itself, records its ancestors and SIGKILLs exactly the `rocm-pin`, `apt-get` and
/// `dpkg` processes above it, top-down (no pkill: /proc is the host's, other chroots run the
/// same names). Everywhere else it is the real ldconfig.
const KILLING_LDCONFIG: &str = r#"#!/bin/sh
if [ "${DPKG_MAINTSCRIPT_PACKAGE:-}" = hsa-rocr-pinned ] && [ "${DPKG_MAINTSCRIPT_NAME:-}" = postinst ]; then
    rm -f /usr/local/sbin/ldconfig
    victims=""
    p=$PPID
    while [ "$p" -gt 1 ] && [ -r "/proc/$p/stat" ]; do
        name=$(cat "/proc/$p/comm")
        case "$name" in
            dpkg|apt-get|rocm-pin) victims="$p:$name $victims" ;;
        esac
        [ "$name" = rocm-pin ] && break
        # Field 4 of stat is the parent; comm (field 2) ends at the last ')'.
        set -- $(sed 's/^.*) //' "/proc/$p/stat")
        p=$2
    done
    echo "$victims" > /root/killed-in-hsa-postinst
    for v in $victims; do
        kill -KILL "${v%%:*}"
    done
    exit 1
fi
exec /sbin/ldconfig "$@"
"#;

/// A real SIGKILL in the middle of apt (issue 5): `rocm-pin install`, apt-get and dpkg die
/// inside our hsa postinst; dpkg is left interrupted and the next `rocm-pin install` completes.
fn a_run_killed_by_sigkill_inside_dpkg_is_completed_by_the_next_run(config: &str) {
    use std::os::unix::process::ExitStatusExt;
    let a = artifacts(config);
    let sb = fresh_with_proc(a, &a.stock_snapshot);
    let wrapper = "/usr/local/sbin/ldconfig";
    sb.write(wrapper, KILLING_LDCONFIG).unwrap();
    sb.run_ok(&["chmod", "0755", wrapper]).unwrap();
    // apt runs dpkg with PATH=DPkg::Path (default /usr/sbin:/usr/bin:/sbin:/bin).
    sb.write(
        "/etc/apt/apt.conf.d/99rocm-pin-test-path",
        "DPkg::Path \"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\";\n",
    )
    .unwrap();
    let argv = install_argv(&a.ours);

    // 1. Killed: by SIGKILL, at the wrapper, with all three processes found.
    let out = sb.run(&argv).unwrap();
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGKILL),
        "rocm-pin install must die by SIGKILL ({}):\n{}",
        out.status,
        text(&out)
    );
    assert!(!sb.path(wrapper).exists(), "the wrapper removes itself");
    let killed = sb.read_to_string("/root/killed-in-hsa-postinst").unwrap();
    for name in ["rocm-pin", "apt-get", "dpkg"] {
        assert!(
            killed
                .split_whitespace()
                .any(|v| v.ends_with(&format!(":{name}"))),
            "{name} not among the killed: {killed}"
        );
    }
    // No survivor holds the dpkg lock or runs on inside this chroot.
    for v in killed.split_whitespace() {
        let pid = v.split(':').next().unwrap();
        let gone = (0..50).any(|_| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Gone, or a zombie waiting for its (re)parent.
            let dead =
                stat.is_empty() || stat.rsplit(") ").next().is_some_and(|r| r.starts_with('Z'));
            if !dead {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            dead
        });
        assert!(gone, "{v} still runs after SIGKILL");
    }

    // 2. dpkg is really interrupted, and verify says the runtime is not in place.
    let state = status_abbrev(&sb, "hsa-rocr-pinned");
    assert_eq!(
        state.trim(),
        "iF",
        "killed inside its postinst: half-configured"
    );
    let audit = sb.run(&["dpkg", "--audit"]).unwrap();
    assert!(
        !String::from_utf8_lossy(&audit.stdout).trim().is_empty(),
        "dpkg --audit must report the interrupted run: {}",
        text(&audit)
    );
    assert_eq!(
        rc(&verify(&sb)),
        1,
        "verify must fail on the interrupted run"
    );
    eprintln!(
        "killed {}; hsa-rocr-pinned {}; dpkg --audit:\n{}",
        killed.trim(),
        state.trim(),
        String::from_utf8_lossy(&audit.stdout).trim()
    );

    // 3. The next run completes it.
    let out = sb.run(&argv).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert!(text(&out).contains("dpkg --configure -a"), "{}", text(&out));
    let v = verify(&sb);
    assert_success(&v, "the command");
    assert!(all_patched(&probe(&sb)));
    assert!(dependants_installed(&sb), "{:?}", dependant_states(&sb));
    let audit = sb.run(&["dpkg", "--audit"]).unwrap();
    assert_eq!(rc(&audit), 0, "{}", text(&audit));
    assert!(
        String::from_utf8_lossy(&audit.stdout).trim().is_empty(),
        "dpkg --audit after the second run: {}",
        text(&audit)
    );
}

/// status: the facts, and a process still mapping the replaced (deleted) stock library.
fn status_reports_the_install_and_processes_mapping_the_old_runtime(config: &str) {
    let a = artifacts(config);
    let sb = fresh_with_proc(a, &a.stock_snapshot);
    // A long-running process with the stock runtime mapped, like a serving process.
    let mut holder = sb
        .command(&["sleep", "120"])
        .env("LD_PRELOAD", "/opt/rocm-7.2.4/lib/libamdhip64.so.7")
        .spawn()
        .unwrap();
    let out = sb.run(&install_argv(&a.ours)).unwrap();
    let out_status = sb.run(&["rocm-pin", "status"]).unwrap();
    let json = sb.run(&["rocm-pin", "status", "--json"]).unwrap();
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert_eq!(rc(&out_status), 0, "{}", text(&out_status));
    let human = text(&out_status);
    assert_says(
        &human,
        &[
            "7.2.4-93",
            "/opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-7.2.4",
            "verify:      all",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["flavor"], "pinned");
    assert_eq!(v["verify_ok"], true);
    let stale = v["stale_processes"].as_array().unwrap();
    assert!(
        stale.iter().any(|p| p["pid"] == holder.id()
            && p["path"]
                .as_str()
                .unwrap()
                .contains("libamdhip64.so.7.2.70204")),
        "the sleeping process must be listed: {v}"
    );
}

/// `--guard`: a later apt command that makes another libhsa-runtime64.so.1 win the loader
/// fails at that command (DPkg::Post-Invoke runs `rocm-pin verify --quiet`); without the
/// guard the same command exits 0 and only a later verify notices.
fn guard_fails_the_apt_command_that_breaks_the_runtime(config: &str) {
    let a = artifacts(config);
    // A package shipping a stock libhsa-runtime64.so.1 in its own prefix + an ld.so.conf.d
    // entry that sorts first.
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    let hsa = a.stock.require(StockRole::HsaRocr).unwrap();
    let extracted = work.path().join("x");
    must(
        std::process::Command::new("dpkg-deb")
            .arg("-x")
            .arg(&hsa.deb)
            .arg(&extracted),
    );
    std::fs::create_dir_all(tree.join("DEBIAN")).unwrap();
    std::fs::create_dir_all(tree.join("opt/other/lib")).unwrap();
    std::fs::create_dir_all(tree.join("etc/ld.so.conf.d")).unwrap();
    std::fs::copy(
        extracted.join(hsa.libraries[0].path.trim_start_matches('/')),
        tree.join("opt/other/lib/libhsa-runtime64.so.1"),
    )
    .unwrap();
    std::fs::write(
        tree.join("etc/ld.so.conf.d/00-other.conf"),
        "/opt/other/lib\n",
    )
    .unwrap();
    std::fs::write(
        tree.join("DEBIAN/control"),
        "Package: other-runtime\nVersion: 1.0\nArchitecture: all\nMaintainer: T <t@example.invalid>\nDescription: another runtime copy\n",
    )
    .unwrap();
    std::fs::write(tree.join("DEBIAN/triggers"), "activate-noawait ldconfig\n").unwrap();
    let deb = work.path().join("other-runtime_1.0_all.deb");
    must(
        std::process::Command::new("dpkg-deb")
            .args(["--root-owner-group", "--build"])
            .arg(&tree)
            .arg(&deb),
    );
    for guarded in [true, false] {
        let sb = fresh(a, &a.stock_snapshot);
        let mut argv = install_argv(&a.ours);
        if guarded {
            argv.push("--guard");
        }
        let out = sb.run(&argv).unwrap();
        assert_eq!(rc(&out), 0, "{}", text(&out));
        sb.copy_in(&deb, "/root/other-runtime_1.0_all.deb").unwrap();
        let out = sb
            .run(&[
                "apt-get",
                "install",
                "-y",
                "/root/other-runtime_1.0_all.deb",
            ])
            .unwrap();
        let took_effect = sb
            .sh(&format!(
                "{PROBE} libhsa-runtime64.so.1 | grep -q /opt/other/lib"
            ))
            .unwrap();
        assert!(
            took_effect.status.success(),
            "the other copy must win the loader"
        );
        if guarded {
            assert_ne!(rc(&out), 0, "the guard must fail apt:\n{}", text(&out));
            assert!(
                text(&out).contains("rocm-pin verify: FAIL loader"),
                "{}",
                text(&out)
            );
        } else {
            assert_eq!(rc(&out), 0, "{}", text(&out));
        }
        assert_eq!(rc(&verify(&sb)), 1);
    }
}

/// Another apt/dpkg holding the lock: install waits `--lock-timeout`, then fails with a clear
/// message, and nothing changed (the loader entry it wrote first is taken away again).
fn a_held_dpkg_lock_fails_cleanly_after_the_timeout(config: &str) {
    let a = artifacts(config);
    let sb = fresh(a, &a.stock_snapshot);
    // The same fcntl write lock apt and dpkg take, held from outside the chroot.
    let lock = hold_dpkg_frontend_lock(&sb);
    let before = status_of(&sb);
    let mut argv = install_argv(&a.ours);
    argv.extend(["--lock-timeout", "2"]);
    let t = std::time::Instant::now();
    let out = sb.run(&argv).unwrap();
    drop(lock);
    assert_eq!(rc(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("held the lock"), "{}", text(&out));
    assert!(t.elapsed().as_secs() >= 2);
    assert_eq!(before, status_of(&sb));
    assert!(!sb.path("/etc/ld.so.conf.d/hsa-rocr-pinned.conf").exists());
}

/// No apt cache and no repository: the stock pair is rebuilt from the dpkg database (its
/// files all match dpkg's md5sums), and rollback restores it offline. With a stock file
/// changed in place, no "stock" package is made: a warning names the file, rollback refuses.
fn stock_is_rebuilt_from_the_dpkg_database_only_when_unmodified(config: &str) {
    let a = artifacts(config);
    let offline =
        "rm -f /etc/apt/sources.list.d/*.list; rm -rf /var/lib/apt/lists/*; apt-get update -q";
    let sb = fresh(a, &a.stock_snapshot);
    sb.sh_ok(offline).unwrap();
    let out = sb.run(&install_argv(&a.ours)).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert!(
        text(&out).matches("rebuilt from the dpkg database").count() == 2,
        "{}",
        text(&out)
    );
    let out = sb.run(&["rocm-pin", "rollback"]).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    let ids = probe(&sb);
    assert!(ids.iter().all(|(_, id)| id.contains("-STOCK-")), "{ids:?}");
    assert!(dependants_installed(&sb));

    let sb = fresh(a, &a.stock_snapshot);
    sb.sh_ok(offline).unwrap();
    let hip = a.stock.require(StockRole::HipRuntime).unwrap();
    let lib = &hip.libraries[0].path;
    sb.sh_ok(&format!("printf 'patched in place' >> {lib}"))
        .unwrap();
    let out = sb.run(&install_argv(&a.ours)).unwrap();
    assert_eq!(rc(&out), 0, "{}", text(&out));
    assert!(
        text(&out).contains("no longer matches dpkg's md5sum"),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains(lib.as_str()), "{}", text(&out));
    let out = sb.run(&["rocm-pin", "rollback"]).unwrap();
    assert_eq!(rc(&out), 2, "{}", text(&out));
    assert!(
        verify(&sb).status.success(),
        "nothing changed by the refusal"
    );
}

/// `--guard`'s dpkg `post-invoke` hook, under every apt configuration: `dpkg -i --force-all`
/// of a stock package of either half fails that very command, naming the package and the
/// repair, and the named repair (an apt command: apt's own dpkg runs are not checked mid-way)
/// goes through; a healthy dpkg run by hand passes; rollback takes both hook files away.
fn dpkg_guard_fails_a_forced_stock_install_at_that_command(config: &str) {
    let dpkg_hook = "/etc/dpkg/dpkg.cfg.d/rocm-pin-guard";
    let apt_hook = "/etc/apt/apt.conf.d/80rocm-pin-guard";
    let a = artifacts(config);
    {
        let sb = fresh(a, &a.stock_snapshot);
        let mut argv = install_argv(&a.ours);
        argv.push("--guard");
        let out = sb.run(&argv).unwrap();
        assert_eq!(rc(&out), 0, "{config}: {}", text(&out));
        assert!(sb.path(dpkg_hook).is_file() && sb.path(apt_hook).is_file());
        // A dpkg run by hand that leaves the runtime intact passes the hook.
        let out = sb.run(&["dpkg", "-i", argv[2]]).unwrap();
        assert_eq!(rc(&out), 0, "{config}: healthy dpkg -i: {}", text(&out));
        for role in [StockRole::HsaRocr, StockRole::HipRuntime] {
            let stock = a.stock.require(role).unwrap();
            let deb = format!(
                "{STOCK_DEBS_DIR}/{}",
                stock.deb.file_name().unwrap().to_string_lossy()
            );
            let out = sb.run(&["dpkg", "-i", "--force-all", &deb]).unwrap();
            let said = text(&out);
            let repair = format!("apt-get remove -y {}", stock.name);
            eprintln!(
                "{config:<14} guarded dpkg -i --force-all {:<16} rc {}",
                stock.name,
                rc(&out)
            );
            assert_eq!(rc(&out), 2, "{config}: the hook must fail dpkg:\n{said}");
            assert!(
                said.contains(&format!("FAIL stock-absent {}", stock.name))
                    && said.contains(&repair)
                    && said.contains("rocm-pin --guard"),
                "{config}: the failure must name {} and `{repair}`:\n{said}",
                stock.name
            );
            // The hint fits the solver apt uses here (read from the chroot's apt configuration).
            let fix_broken_hint = match solver_of(config) {
                Solver::Classic => "(or `apt-get -f install`)",
                Solver::Solver3 => "not `apt-get -f install`",
            };
            assert!(
                said.contains(fix_broken_hint),
                "{config}: want {fix_broken_hint:?}:\n{said}"
            );
            let out = sb.sh(&repair).unwrap();
            assert_eq!(rc(&out), 0, "{config}: {repair}: {}", text(&out));
            let v = verify(&sb);
            assert!(v.status.success(), "{config}: {}", text(&v));
            assert!(all_patched(&probe(&sb)));
            assert!(dependants_installed(&sb), "{:?}", dependant_states(&sb));
        }
        // ROCM_PIN_NO_GUARD=1 skips the dpkg check for one command; `rocm-pin install`, with
        // both hooks in place, then repairs what it let through.
        let hsa = a.stock.require(StockRole::HsaRocr).unwrap();
        let deb = format!(
            "{STOCK_DEBS_DIR}/{}",
            hsa.deb.file_name().unwrap().to_string_lossy()
        );
        let mut cmd = sb.command(&["dpkg", "-i", "--force-all", &deb]);
        let out = cmd.env("ROCM_PIN_NO_GUARD", "1").output().unwrap();
        assert_eq!(rc(&out), 0, "{config}: skipped guard: {}", text(&out));
        assert!(failed_checks(&sb).contains(&"stock-absent".to_string()));
        let out = sb.run(&argv).unwrap();
        assert_eq!(
            rc(&out),
            0,
            "{config}: repair under the guard: {}",
            text(&out)
        );
        assert!(verify(&sb).status.success());
        let out = sb.run(&["rocm-pin", "rollback"]).unwrap();
        assert_eq!(rc(&out), 0, "{config}: {}", text(&out));
        assert!(!sb.path(dpkg_hook).exists() && !sb.path(apt_hook).exists());
        // No hook left behind: dpkg by hand works on the stock host again.
        let out = sb.run(&["dpkg", "--configure", "-a"]).unwrap();
        assert_eq!(rc(&out), 0, "{config}: {}", text(&out));
    }
}
