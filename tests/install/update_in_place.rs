//! Updates in place on a host that already runs ours (issue 32, criterion 5), with no rollback
//! first, on both flavours: a new commit (a staging built for another commit packaged against
//! the stock rocm-pin kept, then `rocm-pin install`), and a new stock upload of the same ROCm
//! release (published in a local repository, its .debs downloaded with apt, packaged, installed).
//! After each: the loader maps the new build, verify passes, the dependants stay installed.

use std::path::Path;
use std::time::Instant;

use crate::advice_debian::{image_tarball, install_ours, is_installed, packaged_against, sandbox};
use crate::util::*;
use rocm_pin_kit::sandbox::Sandbox;
use rocm_pin_testkit::staging::{build_staging, StagingSpec};

/// The commit the update is built from (not the one the installed pin was).
const NEW_COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
/// Later than both installed pins' commit times (the AMD set's is its SOURCE_DATE_EPOCH): an
/// update, not a downgrade install refuses.
const NEW_COMMIT_TIME: i64 = 1_770_000_000;
/// The one placeholder in status's update-in-place way forward (the staging the pin was built
/// into: rocm-pin cannot know it), replaced by the test's staging.
const STAGING_PLACEHOLDER: &str = "<the build you packaged from>";
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
/// version, their exact `=` on each other re-pointed: hip-runtime-amd's on hsa-rocr),
/// published as the local repository `newstock`; returns the new version of each.
pub(crate) fn publish_newer_upload(sb: &Sandbox, names: &[String]) -> Vec<(String, String)> {
    let debs: Vec<(String, String, String)> = names
        .iter()
        .map(|n| {
            let (v, deb) = kept_stock(sb, n);
            (n.clone(), v, deb)
        })
        .collect();
    let moved: Vec<(String, String, String)> = debs
        .iter()
        .map(|(n, v, _)| (n.clone(), v.clone(), format!("{v}+upd1")))
        .collect();
    publish_repacked(sb, "newstock", &debs, &moved)
}

/// Each `(name, version, .deb)` repacked at `version+upd1`, its exact `=` Depends on a
/// `(name, old, new)` of `moved` re-pointed at the new version, published as the local
/// repository `repo`; returns the new version of each.
fn publish_repacked(
    sb: &Sandbox,
    repo: &str,
    debs: &[(String, String, String)],
    moved: &[(String, String, String)],
) -> Vec<(String, String)> {
    let dir = format!("/root/{repo}");
    let mut script = format!("set -e; rm -rf {dir} /root/rebuild; mkdir -p {dir}\n");
    let mut out = Vec::new();
    for (n, v, deb) in debs {
        let nv = format!("{v}+upd1");
        let mut seds = format!("s/^Version: .*/Version: {nv}/");
        for (m, old, new) in moved {
            seds.push_str(&format!("; s/{m} (= {old})/{m} (= {new})/g"));
        }
        script.push_str(&format!(
            "rm -rf /root/rebuild; dpkg-deb -R {deb} /root/rebuild; \
             sed -i '{seds}' /root/rebuild/DEBIAN/control; \
             dpkg-deb -b /root/rebuild {dir}/{n}_new.deb >/dev/null\n"
        ));
        out.push((n.clone(), nv));
    }
    sb.sh_ok(&script).unwrap();
    sb.add_local_repo(repo, &sb.path(&dir)).unwrap();
    out
}

/// The installed packages that depend with exact `=` on one of `names` (AMD's metas), each
/// with its installed version.
fn exact_dependants(sb: &Sandbox, names: &[&str]) -> Vec<(String, String)> {
    let out = sb
        .sh_ok("dpkg-query -W -f '${db:Status-Abbrev}\\t${Package}\\t${Version}\\t${Depends}\\n'")
        .unwrap();
    out.lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            let (state, pkg, ver, deps) = (f.next()?, f.next()?, f.next()?, f.next()?);
            let exact = deps.split([',', '|']).any(|r| {
                names
                    .iter()
                    .any(|n| r.trim().starts_with(&format!("{n} (= ")))
            });
            (state.trim() == "ii" && exact).then(|| (pkg.to_string(), ver.to_string()))
        })
        .collect()
}

/// Every package the release hold names is held at its installed version (the hold followed
/// the update), and it names at least one.
fn hold_is_installed(sb: &Sandbox, hold: &str) -> bool {
    let mut held = 0;
    let mut package = None;
    for l in hold.lines() {
        if let Some(p) = l.strip_prefix("Package: ") {
            package = Some(p.trim().to_string());
        } else if let (Some(v), Some(p)) = (l.strip_prefix("Pin: version "), package.take()) {
            if installed_version(sb, &p) != v.trim() {
                return false;
            }
            held += 1;
        }
    }
    held > 0
}

/// The installed version of `name` ("" when not installed).
fn installed_version(sb: &Sandbox, name: &str) -> String {
    let out = sb
        .run(&["dpkg-query", "-W", "-f=${Version}", name])
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The commands a message names in backquotes that start with a program a user runs, in order.
fn ticked_commands(message: &str) -> Vec<String> {
    const PROGRAMS: &[&str] = &["rocm-pin ", "apt-get ", "apt ", "dpkg ", "cd "];
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| PROGRAMS.iter().any(|p| c.starts_with(p)))
        .map(str::to_string)
        .collect()
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

/// AMD's stock pair, by name.
const AMD_PAIR: [&str; 2] = ["hsa-rocr", "hip-runtime-amd"];

#[test]
fn updates_in_place_on_amds_flavour() {
    rocm_pin_testkit::needs_root!("a chroot");
    let a = artifacts("bookworm");
    let work = tempfile::tempdir().unwrap();
    let mut table = Vec::new();
    let mut failures = Vec::new();
    let new_build = |sb: &Sandbox| probe(sb).iter().all(|(_, id)| id.contains(NEW_TAG));
    // A new commit against the stock rocm-pin kept.
    let sb = fresh(a, &a.installed_snapshot);
    stage_new_commit(&sb, work.path(), StagingSpec::default());
    let (out, secs) = package_and_install(&sb, "--stock-root /");
    let v = verify(&sb);
    let maps = new_build(&sb);
    row(&mut table, "AMD", "new commit", &out, secs, maps, &v);
    if rc(&out) != 0 || rc(&v) != 0 || !maps || !dependants_installed(&sb) {
        failures.push(format!(
            "AMD new commit: exit {}\n{}\nverify:\n{}\nprobe {:?}\ndependants {:?}",
            rc(&out),
            text(&out),
            text(&v),
            probe(&sb),
            dependant_states(&sb)
        ));
    }
    drop(sb);
    let sb = fresh(a, &a.installed_snapshot);
    stage_new_commit(&sb, work.path(), StagingSpec::default());
    failures.extend(amd_new_stock_upload(&sb, &mut table, &new_build));
    eprintln!("updates in place:\n{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A new upload of AMD's pair: published alone, install refuses (the metas depend on the old
/// one with `=`) naming the commands that make it possible; with the metas' new upload
/// published, those commands run verbatim update ours, the metas and the hold in one
/// transaction; rollback then restores the new stock.
fn amd_new_stock_upload(
    sb: &Sandbox,
    table: &mut Vec<String>,
    new_build: &dyn Fn(&Sandbox) -> bool,
) -> Vec<String> {
    let mut failures = Vec::new();
    let metas = exact_dependants(sb, &AMD_PAIR);
    assert!(!metas.is_empty(), "no package depends on the pair with `=`");
    let pair: Vec<String> = AMD_PAIR.iter().map(|s| s.to_string()).collect();
    let old: Vec<(String, String)> = pair
        .iter()
        .map(|n| (n.clone(), kept_stock(sb, n).0))
        .collect();
    let newer = publish_newer_upload(sb, &pair);
    let (out, secs) = package_and_install(sb, &download(sb, &newer));
    let v = verify(sb);
    row(
        table,
        "AMD",
        "new pair, no metas",
        &out,
        secs,
        new_build(sb),
        &v,
    );
    let fixes = ticked_commands(&text(&out));
    if let Some(l) = text(&out).lines().find(|l| l.contains("apt has no")) {
        table.push(format!("  refusal: {l}"));
    }
    if rc(&out) != 2
        || !fixes.iter().any(|c| c == "apt-get update")
        || !fixes.iter().any(|c| c.starts_with("rocm-pin install "))
        || rc(&v) != 0
        || !all_patched(&probe(sb))
        || !dependants_installed(sb)
    {
        failures.push(format!(
            "AMD new pair without metas: not a clean refusal naming the way:\n{}\nverify:\n{}",
            text(&out),
            text(&v)
        ));
        return failures;
    }
    // The metas' new upload, re-pointed at the new pair, where apt finds it after an update.
    let moved: Vec<(String, String, String)> = old
        .iter()
        .zip(&newer)
        .map(|((n, o), (_, nv))| (n.clone(), o.clone(), nv.clone()))
        .collect();
    let meta_debs: Vec<(String, String, String)> = metas
        .iter()
        .map(|(n, v)| {
            let deb = sb
                .sh_ok(&format!(
                    "set -e; mkdir -p /root/metas; cd /root/metas; apt-get download -q {n}={v} >/dev/null; ls $PWD/{n}_*.deb"
                ))
                .unwrap()
                .trim()
                .to_string();
            (n.clone(), v.clone(), deb)
        })
        .collect();
    let new_metas = publish_repacked(sb, "newmetas", &meta_debs, &moved);
    let t = Instant::now();
    let out = sb.sh(&fixes.join(" && ")).unwrap();
    let secs = t.elapsed().as_secs_f64();
    let v = verify(sb);
    let maps = new_build(sb);
    row(table, "AMD", "new pair + metas", &out, secs, maps, &v);
    let hold = sb
        .read_to_string("/etc/apt/preferences.d/rocm-pin-release-hold")
        .unwrap_or_default();
    let metas_moved = new_metas
        .iter()
        .all(|(n, nv)| installed_version(sb, n) == *nv)
        && hold_is_installed(sb, &hold);
    if rc(&out) != 0 || rc(&v) != 0 || !maps || !dependants_installed(sb) || !metas_moved {
        failures.push(format!(
            "AMD new pair + metas ({}): exit {}\n{}\nverify:\n{}\nmetas {new_metas:?} moved: {metas_moved}\nhold:\n{hold}",
            fixes.join(" && "),
            rc(&out),
            text(&out),
            text(&v)
        ));
        return failures;
    }
    // Rollback after the update restores the NEW stock, kept by the install.
    let out = sb.run(&["rocm-pin", "rollback"]).unwrap();
    let stock_back = newer.iter().all(|(n, nv)| installed_version(sb, n) == *nv);
    let ids = probe(sb);
    let loads_stock = ids.iter().all(|(_, id)| id.contains("STOCK"));
    table.push(format!(
        "{:<14} {:<18} exit {:<3} new stock back {stock_back} loader maps stock {loads_stock}",
        "AMD",
        "rollback",
        rc(&out)
    ));
    if rc(&out) != 0 || !stock_back || !loads_stock || !dependants_installed(sb) {
        failures.push(format!(
            "AMD rollback after the update: exit {}\n{}\nprobe {ids:?}\ndependants {:?}",
            rc(&out),
            text(&out),
            dependant_states(sb)
        ));
    }
    failures
}

/// The provenance marker of ours when rocminfo's loader resolves libhsa-runtime64 to the
/// library it names (ours loaded), else None.
fn debian_loaded_marker(sb: &Sandbox) -> Option<serde_json::Value> {
    let marker: serde_json::Value = sb
        .read_to_string("/var/lib/rocm-pin/marker/amd64.json")
        .ok()
        .and_then(|m| serde_json::from_str(&m).ok())?;
    let (_, sha) = rocm_pin_testkit::runtime::resolved_sha256(
        sb,
        "/usr/bin/rocminfo",
        "libhsa-runtime64.so.1",
    );
    rocm_pin_testkit::runtime::marker_sha256s(&marker)
        .contains(&sha)
        .then_some(marker)
}

/// Debian's dependants that must stay installed.
const DEBIAN_DEPENDANTS: &[&str] = &["rocminfo", "librocfft0", "libhipfft0"];

#[test]
fn updates_in_place_on_debians_packaging() {
    rocm_pin_testkit::needs_root!("a chroot");
    debian_updates(
        "sid-debian-rocm",
        "Debian 7.2.4",
        7,
        true,
        &[("new commit", false), ("new stock upload", true)],
    );
}

/// sid's 6.4.3 series (other sonames, no libhiprtc installed): a new commit in place.
#[test]
fn updates_in_place_on_debians_older_series() {
    rocm_pin_testkit::needs_root!("a chroot");
    debian_updates(
        "sid-debian-rocm6",
        "Debian 6.4.3",
        6,
        false,
        &[("new commit", false)],
    );
}

/// On the Debian image `tag` (HIP major `hip_major`, with or without the hiprtc siblings),
/// ours installed, then each `(step, new stock upload?)` packaged and installed in place.
fn debian_updates(tag: &str, flavour: &str, hip_major: u32, hiprtc: bool, steps: &[(&str, bool)]) {
    let Some(tarball) = image_tarball(tag) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let (debs, stock) =
        packaged_against("ours", &sandbox(&tarball), work.path(), hip_major, hiprtc);
    let new_build = |sb: &Sandbox| {
        debian_loaded_marker(sb).is_some_and(|m| m["commit"].as_str() == Some(NEW_COMMIT))
    };
    let mut table = Vec::new();
    let mut failures = Vec::new();
    for &(step, new_stock) in steps {
        let sb = sandbox(&tarball);
        let out = install_ours(&sb, &debs);
        assert_eq!(rc(&out), 0, "install: {}", text(&out));
        stage_new_commit(
            &sb,
            work.path(),
            StagingSpec {
                hip_major,
                hiprtc,
                ..StagingSpec::default()
            },
        );
        let newer = new_stock.then(|| publish_newer_upload(&sb, &stock));
        let stock_args = match &newer {
            Some(v) => download(&sb, v),
            None => "--stock-root /".to_string(),
        };
        let (out, secs) = package_and_install(&sb, &stock_args);
        let v = verify(&sb);
        let maps = new_build(&sb);
        row(&mut table, flavour, step, &out, secs, maps, &v);
        let missing: Vec<&&str> = DEBIAN_DEPENDANTS
            .iter()
            .filter(|d| !is_installed(&sb, d))
            .collect();
        if rc(&out) != 0 || rc(&v) != 0 || !maps || !missing.is_empty() {
            failures.push(format!(
                "{flavour} {step}: exit {}\n{}\nverify:\n{}\ndependants missing {missing:?}",
                rc(&out),
                text(&out),
                text(&v)
            ));
            continue;
        }
        // Rollback after the update restores the new stock the install kept.
        if let Some(newer) = &newer {
            let out = sb.run(&["rocm-pin", "rollback"]).unwrap();
            let back = newer.iter().all(|(n, nv)| installed_version(&sb, n) == *nv);
            let gone = DEBIAN_DEPENDANTS
                .iter()
                .filter(|d| !is_installed(&sb, d))
                .count();
            table.push(format!(
                "{:<14} {:<18} exit {:<3} new stock back {back} ours loaded {}",
                flavour,
                "rollback",
                rc(&out),
                debian_loaded_marker(&sb).is_some()
            ));
            if rc(&out) != 0 || !back || gone != 0 || debian_loaded_marker(&sb).is_some() {
                failures.push(format!(
                    "Debian rollback after the update: exit {}\n{}",
                    rc(&out),
                    text(&out)
                ));
            }
        }
    }
    eprintln!("updates in place:\n{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The "way forward" lines `rocm-pin status` prints, each with the commands it names.
fn ways_forward(sb: &Sandbox) -> Vec<(String, Vec<String>)> {
    let out = sb.run(&["rocm-pin", "status"]).unwrap();
    text(&out)
        .lines()
        .filter(|l| l.trim_start().starts_with("way forward"))
        .map(|l| (l.trim().to_string(), ticked_commands(l)))
        .collect()
}

/// Status's ways forward for a newer upload of the stock `names` (published with `metas`, the
/// packages that depend on it with `=`, re-pointed), each run verbatim on its own copy of the
/// host (`fresh` makes one, running ours) — only the staging placeholder replaced by the
/// staging the test built: the way that keeps the backport ends with ours rebuilt against the
/// new upload loaded and verify green; the one without it with the new stock loaded.
fn run_ways_forward(
    flavour: &str,
    fresh_host: &dyn Fn() -> Sandbox,
    names: &[String],
    spec: &StagingSpec,
    work: &Path,
    loads_new: &dyn Fn(&Sandbox) -> bool,
) -> (Vec<String>, Vec<String>) {
    let (mut table, mut failures) = (Vec::new(), Vec::new());
    let prepare = |sb: &Sandbox| {
        stage_new_commit(sb, work, spec.clone());
        let old: Vec<String> = names.iter().map(|n| kept_stock(sb, n).0).collect();
        let metas = exact_dependants(sb, &names.iter().map(String::as_str).collect::<Vec<_>>());
        let newer = publish_newer_upload(sb, names);
        if !metas.is_empty() {
            let moved: Vec<(String, String, String)> = names
                .iter()
                .zip(&old)
                .zip(&newer)
                .map(|((n, o), (_, nv))| (n.clone(), o.clone(), nv.clone()))
                .collect();
            let debs: Vec<(String, String, String)> = metas
                .iter()
                .map(|(n, v)| {
                    let deb = sb
                        .sh_ok(&format!(
                            "set -e; mkdir -p /root/metas; cd /root/metas; apt-get download -q {n}={v} >/dev/null; ls $PWD/{n}_*.deb"
                        ))
                        .unwrap();
                    (n.clone(), v.clone(), deb.trim().to_string())
                })
                .collect();
            publish_repacked(sb, "newmetas", &debs, &moved);
        }
        newer
    };
    let sb = fresh_host();
    let newer = prepare(&sb);
    let ways = ways_forward(&sb);
    if ways.len() != 2 || ways.iter().any(|(_, c)| c.len() != 1) {
        failures.push(format!(
            "{flavour}: not two ways forward with one command each: {ways:#?}"
        ));
        return (table, failures);
    }
    let mut first = Some(sb);
    for (i, (line, cmds)) in ways.iter().enumerate() {
        let sb = first.take().unwrap_or_else(|| {
            let sb = fresh_host();
            prepare(&sb);
            sb
        });
        // The chroot has no binutils (objcopy): the test's builds are packaged with --no-strip,
        // as every package step in these tests is.
        let cmd = cmds[0].replace(STAGING_PLACEHOLDER, "/root/staging-new --no-strip");
        let t = Instant::now();
        // The user answers apt's question (`apt full-upgrade` asks).
        let out = sb.sh(&format!("yes | ( {cmd} )")).unwrap();
        let secs = t.elapsed().as_secs_f64();
        let v = verify(&sb);
        let keeps_backport = !cmd.contains("rollback");
        let ok = if keeps_backport {
            rc(&out) == 0 && rc(&v) == 0 && loads_new(&sb)
        } else {
            rc(&out) == 0 && newer.iter().all(|(n, nv)| installed_version(&sb, n) == *nv)
        };
        table.push(format!(
            "{flavour:<14} way forward {}: exit {} verify {} loader maps {} ({secs:.1}s) — {line}",
            i + 1,
            rc(&out),
            rc(&v),
            if loads_new(&sb) {
                "the new build"
            } else {
                "not ours"
            }
        ));
        if !ok {
            failures.push(format!(
                "{flavour} way forward {} ({cmd}): exit {}\n{}\nverify:\n{}",
                i + 1,
                rc(&out),
                text(&out),
                text(&v)
            ));
        }
    }
    (table, failures)
}

#[test]
fn status_ways_forward_run_verbatim_on_amds_flavour() {
    rocm_pin_testkit::needs_root!("a chroot");
    let a = artifacts("bookworm");
    let work = tempfile::tempdir().unwrap();
    let pair: Vec<String> = AMD_PAIR.iter().map(|s| s.to_string()).collect();
    let (table, failures) = run_ways_forward(
        "AMD",
        &|| fresh(a, &a.installed_snapshot),
        &pair,
        &StagingSpec::default(),
        work.path(),
        &|sb| probe(sb).iter().all(|(_, id)| id.contains(NEW_TAG)),
    );
    eprintln!("ways forward:\n{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn status_ways_forward_run_verbatim_on_debians_packaging() {
    rocm_pin_testkit::needs_root!("a chroot");
    let Some(tarball) = image_tarball("sid-debian-rocm") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let (debs, stock) = packaged_against("ours", &sandbox(&tarball), work.path(), 7, true);
    let host = || {
        let sb = sandbox(&tarball);
        let out = install_ours(&sb, &debs);
        assert_eq!(rc(&out), 0, "install: {}", text(&out));
        sb
    };
    let spec = StagingSpec {
        hip_major: 7,
        hiprtc: true,
        ..StagingSpec::default()
    };
    // Ours against the new upload: the marker names it and the loader maps its library.
    let loads_new = |sb: &Sandbox| {
        debian_loaded_marker(sb).is_some_and(|m| m["replaced"].to_string().contains("+upd1"))
    };
    let (table, failures) = run_ways_forward(
        "Debian 7.2.4",
        &host,
        &stock,
        &spec,
        work.path(),
        &loads_new,
    );
    eprintln!("ways forward:\n{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
