//! Updates in place on a host that already runs ours (issue 32, criterion 5), with no rollback
//! first, on both flavours: a new commit (a staging built for another commit packaged against
//! the stock rocm-pin kept, then `rocm-pin install`), and a new stock upload of the same ROCm
//! release (published in a local repository, its .debs downloaded with apt, packaged, installed).
//! After each: the loader maps the new build, verify passes, the dependants stay installed.

use std::path::Path;
use std::time::Instant;

use crate::advice_debian::{image_tarball, install_ours, is_installed, package_against, sandbox};
use crate::util::*;
use rocm_pin_kit::sandbox::Sandbox;
use rocm_pin_testkit::staging::{build_staging, StagingSpec};

/// The commit the update is built from (not the one the installed pin was).
const NEW_COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
/// Later than both installed pins' commit times (the AMD set's is its SOURCE_DATE_EPOCH): an
/// update, not a downgrade install refuses.
const NEW_COMMIT_TIME: i64 = 1_770_000_000;
/// The identity tag of the update's libraries (the loader probe and ldd tell it apart).
const NEW_TAG: &str = "PATCHED-UPDATE";

/// The new-commit staging for `spec`, copied into the chroot at `/root/staging-new`.
fn stage_new_commit(sb: &Sandbox, work: &Path, spec: StagingSpec) {
    let staging = work.join("staging-new");
    let _ = std::fs::remove_dir_all(&staging);
    build_staging(
        &staging,
        &StagingSpec {
            tag: NEW_TAG.into(),
            ..spec
        },
    );
    sb.copy_in(&staging, "/root/staging-new").unwrap();
}

/// `rocm-pin package` inside the chroot (the host that runs ours) then `rocm-pin install` of
/// what it made: both outputs, and the time taken.
fn package_and_install(sb: &Sandbox, stock_args: &str) -> (std::process::Output, f64) {
    let t = Instant::now();
    let out = sb
        .sh(&format!(
            "set -e; rm -rf /root/new; rocm-pin package --no-strip --staging /root/staging-new {stock_args} \
             --commit {NEW_COMMIT} --commit-time {} --out /root/new; \
             rocm-pin install /root/new/*.deb",
            NEW_COMMIT_TIME
        ))
        .unwrap();
    (out, t.elapsed().as_secs_f64())
}

/// The `Version` the stock package `name` has in the first kept stock .deb of it, and that
/// .deb's path inside the chroot.
fn kept_stock(sb: &Sandbox, name: &str) -> (String, String) {
    let deb = sb
        .sh_ok(&format!(
            "ls /var/lib/rocm-pin/stock/{name}_*.deb | head -1"
        ))
        .unwrap()
        .trim()
        .to_string();
    let v = sb
        .sh_ok(&format!("dpkg-deb -f {deb} Version"))
        .unwrap()
        .trim()
        .to_string();
    (v, deb)
}

/// A newer upload of the stock packages `names` (the kept .debs with `+upd1` appended to the
/// version), published as the local repository `newstock`; returns the new version of each.
pub(crate) fn publish_newer_upload(sb: &Sandbox, names: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut script =
        String::from("set -e; rm -rf /root/newstock /root/rebuild; mkdir -p /root/newstock\n");
    for n in names {
        let (v, deb) = kept_stock(sb, n);
        let nv = format!("{v}+upd1");
        script.push_str(&format!(
            "rm -rf /root/rebuild; dpkg-deb -R {deb} /root/rebuild; \
             sed -i 's/^Version: .*/Version: {nv}/' /root/rebuild/DEBIAN/control; \
             dpkg-deb -b /root/rebuild /root/newstock/{n}_new.deb >/dev/null\n"
        ));
        out.push((n.clone(), nv));
    }
    sb.sh_ok(&script).unwrap();
    let dir = sb.path("/root/newstock");
    sb.add_local_repo("newstock", &dir).unwrap();
    out
}

/// `apt-get download` of each `name=version` into /root/dl: the argument for `--stock-deb`.
fn download(sb: &Sandbox, versions: &[(String, String)]) -> String {
    let pins: Vec<String> = versions.iter().map(|(n, v)| format!("{n}={v}")).collect();
    sb.sh_ok(&format!(
        "set -e; rm -rf /root/dl; mkdir -p /root/dl; cd /root/dl; apt-get download -q {}",
        pins.join(" ")
    ))
    .unwrap();
    "--stock-deb /root/dl/*.deb".to_string()
}

fn row(
    table: &mut Vec<String>,
    flavour: &str,
    step: &str,
    out: &std::process::Output,
    secs: f64,
    maps: bool,
    v: &std::process::Output,
) {
    table.push(format!(
        "{flavour:<14} {step:<18} exit {:<3} loader maps {:<9} verify {} ({secs:.1}s)",
        rc(out),
        if maps { "the new" } else { "NOT new" },
        rc(v)
    ));
}

#[test]
fn updates_in_place_on_amds_flavour() {
    rocm_pin_testkit::needs_root!("a chroot");
    let a = artifacts("bookworm");
    let work = tempfile::tempdir().unwrap();
    let mut table = Vec::new();
    let mut failures = Vec::new();
    let new_build = |sb: &Sandbox| probe(sb).iter().all(|(_, id)| id.contains(NEW_TAG));
    for (step, stock_args) in [("new commit", None), ("new stock upload", Some(()))] {
        let sb = fresh(a, &a.installed_snapshot);
        stage_new_commit(&sb, work.path(), StagingSpec::default());
        let stock = match stock_args {
            None => "--stock-root /".to_string(),
            Some(()) => {
                let v = publish_newer_upload(&sb, &["hsa-rocr".into(), "hip-runtime-amd".into()]);
                download(&sb, &v)
            }
        };
        let (out, secs) = package_and_install(&sb, &stock);
        let v = verify(&sb);
        let maps = new_build(&sb);
        row(&mut table, "AMD", step, &out, secs, maps, &v);
        // AMD's metas (rocm-hip-runtime, hip-dev) depend on the pair with `=`: an upload of the
        // pair alone cannot replace it without removing them, so install refuses with nothing
        // changed and the installed build still loaded (updating the metas in the same
        // transaction, from an upload that carries them, is not done yet).
        if stock_args.is_some() {
            if rc(&out) != 2
                || !text(&out).contains("apt would also remove")
                || rc(&v) != 0
                || !all_patched(&probe(&sb))
                || !dependants_installed(&sb)
            {
                failures.push(format!(
                    "AMD {step}: not a clean refusal:\n{}\nverify:\n{}",
                    text(&out),
                    text(&v)
                ));
            }
            continue;
        }
        if rc(&out) != 0 || rc(&v) != 0 || !maps || !dependants_installed(&sb) {
            failures.push(format!(
                "AMD {step}: exit {}\n{}\nverify:\n{}\nprobe {:?}\ndependants {:?}",
                rc(&out),
                text(&out),
                text(&v),
                probe(&sb),
                dependant_states(&sb)
            ));
        }
    }
    eprintln!("updates in place:\n{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Debian's dependants that must stay installed.
const DEBIAN_DEPENDANTS: &[&str] = &["rocminfo", "librocfft0", "libhipfft0"];

#[test]
fn updates_in_place_on_debians_packaging() {
    rocm_pin_testkit::needs_root!("a chroot");
    let Some(tarball) = image_tarball("sid-debian-rocm") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let (run, debs) = package_against(&sandbox(&tarball), work.path(), 7, true);
    assert!(run.status.success(), "package: {}", text(&run));
    let stock: Vec<String> = debs
        .iter()
        .map(|d| {
            rocm_pin_testkit::debs::field(d, "Package")
                .trim_end_matches("-pinned")
                .to_string()
        })
        .collect();
    let new_build = |sb: &Sandbox| {
        let marker: serde_json::Value = sb
            .read_to_string("/var/lib/rocm-pin/marker/amd64.json")
            .ok()
            .and_then(|m| serde_json::from_str(&m).ok())
            .unwrap_or_default();
        let (_, sha) = rocm_pin_testkit::runtime::resolved_sha256(
            sb,
            "/usr/bin/rocminfo",
            "libhsa-runtime64.so.1",
        );
        marker["commit"].as_str() == Some(NEW_COMMIT)
            && rocm_pin_testkit::runtime::marker_sha256s(&marker).contains(&sha)
    };
    let mut table = Vec::new();
    let mut failures = Vec::new();
    for (step, new_stock) in [("new commit", false), ("new stock upload", true)] {
        let sb = sandbox(&tarball);
        let out = install_ours(&sb, &debs);
        assert_eq!(rc(&out), 0, "install: {}", text(&out));
        stage_new_commit(
            &sb,
            work.path(),
            StagingSpec {
                hip_major: 7,
                hiprtc: true,
                ..StagingSpec::default()
            },
        );
        let stock_args = if new_stock {
            let v = publish_newer_upload(&sb, &stock);
            download(&sb, &v)
        } else {
            "--stock-root /".to_string()
        };
        let (out, secs) = package_and_install(&sb, &stock_args);
        let v = verify(&sb);
        let maps = new_build(&sb);
        row(&mut table, "Debian 7.2.4", step, &out, secs, maps, &v);
        let missing: Vec<&&str> = DEBIAN_DEPENDANTS
            .iter()
            .filter(|d| !is_installed(&sb, d))
            .collect();
        if rc(&out) != 0 || rc(&v) != 0 || !maps || !missing.is_empty() {
            failures.push(format!(
                "Debian {step}: exit {}\n{}\nverify:\n{}\ndependants missing {missing:?}",
                rc(&out),
                text(&out),
                text(&v)
            ));
        }
    }
    eprintln!("updates in place:\n{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
