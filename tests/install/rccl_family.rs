//! Two families installed by `rocm-pin install` (issue 34, item 4): the pinned pair (the
//! install tests' snapshot), then the custom RCCL made by CPack, packaged with `package
//! --family rccl --from-deb` against that host and installed with `rocm-pin install
//! <rccl-pinned.deb>` (its family read from the .deb). Then: verify checks both and names the
//! family that fails, its printed fix run verbatim leads to green; the guard keeps RCCL through
//! the seed's `dpkg -i --force-all <stock rccl>.deb; apt --fix-broken install`; a newer stock
//! RCCL published is kept back, and its way forward (`rollback --family rccl`, then the newer
//! stock) never touches the pair; `rollback` with no family puts every stock package back.

use std::time::Instant;

use rocm_pin_kit::sandbox::Sandbox;
use rocm_pin_kit::standin::StockRole;

use crate::rccl_pair::rccl_identity;
use crate::util::*;
use rocm_pin_testkit::deb_table::fill;

const IDENTITY: &str = "rccl-CPACK-family";

/// Version of every package of the pair's (ours and the stock ones kept), to see that nothing
/// of it moved.
fn pair_versions(sb: &Sandbox) -> String {
    let out = sb
        .sh("dpkg-query -W -f='${Package} ${Version} ${db:Status-Abbrev}\\n' | grep -v rccl | sort")
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `family` check of verify --json for `name`: (ok, detail).
fn family_check(sb: &Sandbox, name: &str) -> Option<(bool, String)> {
    let v = verify_json(sb);
    v["checks"].as_array()?.iter().find_map(|c| {
        (c["name"] == "family" && c["subject"] == name).then(|| {
            (
                c["ok"] == true,
                c["detail"].as_str().unwrap_or_default().to_string(),
            )
        })
    })
}

/// The stock rccl .deb again at a newer version (what AMD's next point release publishes).
fn newer_stock(stock: &std::path::Path, dir: &std::path::Path) -> String {
    let tree = dir.join("tree");
    std::fs::create_dir_all(dir).unwrap();
    let ok = |c: &mut std::process::Command| assert!(c.status().unwrap().success(), "{c:?}");
    ok(std::process::Command::new("dpkg-deb")
        .arg("-R")
        .arg(stock)
        .arg(&tree));
    let control = tree.join("DEBIAN/control");
    let text = std::fs::read_to_string(&control).unwrap();
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("Version: "))
        .unwrap()
        .to_string();
    let newer = format!("{version}+next1");
    std::fs::write(
        &control,
        text.replace(
            &format!("Version: {version}\n"),
            &format!("Version: {newer}\n"),
        ),
    )
    .unwrap();
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    ok(std::process::Command::new("dpkg-deb")
        .args(["--root-owner-group", "-b"])
        .arg(&tree)
        .arg(repo.join("rccl_newer_amd64.deb")));
    newer
}

/// What is done before a step's command (the steps that need more than a shell line).
#[derive(PartialEq)]
enum Before {
    Nothing,
    /// The stock rccl .deb copied in as `{stock_in}`.
    CopyStock,
    /// verify's fix for the failing rccl family taken as `{fix}` (it must be an install of the
    /// kept .deb).
    TakeVerifysFix,
    /// A newer stock rccl published (`{newer}` its version).
    PublishNewerStock,
    /// The custom build packaged again against the host as it is, as `{second_in}`.
    PackageAgain,
}

/// The rccl family's check in verify --json.
#[derive(PartialEq, Debug)]
enum Family {
    Any,
    Passes,
    Fails,
    Absent,
}

/// The pair's packages after a step: as many as before, or each at the same version and state.
#[derive(PartialEq)]
enum Pair {
    Any,
    SameCount,
    Kept,
}

/// One step of the scenario: a shell line run in the chroot (`{vars}` filled) and what must
/// hold after it. `None` / `Any` = not judged at this step.
struct Step {
    title: &'static str,
    before: Before,
    run: &'static str,
    /// `Some(true)` exit 0, `Some(false)` non-zero.
    succeeds: Option<bool>,
    /// The command's output says each.
    says: &'static [&'static str],
    /// (JSON pointer, text its value's JSON contains) in the command's stdout.
    json: &'static [(&'static str, &'static str)],
    /// What the loader maps for librccl contains this ({identity}: ours).
    rccl: Option<&'static str>,
    verify: Option<i32>,
    verify_says: &'static [&'static str],
    family: Family,
    /// The pair's packages (all but rccl's) after the step against before the first.
    pair: Pair,
    /// The pair's runtimes are the patched ones.
    pair_patched: Option<bool>,
    /// `Some(true)` every dependant installed; `Some(false)` all but the stock rccl ours
    /// stands in for.
    dependants: Option<bool>,
}

const STEP: Step = Step {
    title: "",
    before: Before::Nothing,
    run: "",
    succeeds: None,
    says: &[],
    json: &[],
    rccl: None,
    verify: None,
    verify_says: &[],
    family: Family::Any,
    pair: Pair::Any,
    pair_patched: None,
    dependants: None,
};

const RCCL_FAMILY: &[Step] = &[
    Step {
        title: "rocm-pin install <rccl-pinned.deb>: the family read from the .deb",
        run: "rocm-pin install {ours_in}",
        succeeds: Some(true),
        rccl: Some("{identity}"),
        verify: Some(0),
        family: Family::Passes,
        pair: Pair::SameCount,
        ..STEP
    },
    Step {
        title: "ours and the stock kept",
        run: "ls /var/lib/rocm-pin/ours/rccl /var/lib/rocm-pin/stock",
        says: &["rccl-pinned_", "rccl_"],
        ..STEP
    },
    Step {
        title: "status names the family",
        run: "rocm-pin status --json",
        json: &[("/families/0/package", "\"rccl-pinned\""), ("/packages", "hsa-rocr")],
        ..STEP
    },
    Step {
        title: "the seed's first command alone: verify fails naming the family",
        before: Before::CopyStock,
        run: "dpkg -i --force-all {stock_in}",
        verify: Some(1),
        verify_says: &["FAIL family           rccl:", "stock-absent     rccl:"],
        family: Family::Fails,
        ..STEP
    },
    Step {
        title: "verify's fix, verbatim",
        before: Before::TakeVerifysFix,
        run: "{fix}",
        rccl: Some("{identity}"),
        verify: Some(0),
        ..STEP
    },
    Step {
        title: "guard on",
        run: "rocm-pin guard on",
        succeeds: Some(true),
        ..STEP
    },
    Step {
        title: "the guard catches the first command (dpkg's hook runs verify, naming the family)",
        run: "dpkg -i --force-all {stock_in}",
        succeeds: Some(false),
        says: &["FAIL family rccl:"],
        rccl: Some("{identity}"),
        verify: Some(1),
        ..STEP
    },
    Step {
        title: "apt's repair removes the forced stock and passes the guard",
        run: "apt-get --fix-broken install -y -q",
        succeeds: Some(true),
        rccl: Some("{identity}"),
        verify: Some(0),
        dependants: Some(false),
        ..STEP
    },
    Step {
        title: "a newer stock rccl published: kept back, nothing of either family moves",
        before: Before::PublishNewerStock,
        run: "apt-get full-upgrade -y -q",
        rccl: Some("{identity}"),
        verify: Some(0),
        pair: Pair::Kept,
        ..STEP
    },
    Step {
        title: "rccl's way forward: its own rollback",
        run: "rocm-pin rollback --family rccl",
        succeeds: Some(true),
        ..STEP
    },
    Step {
        title: "… then the newer stock; the pair untouched and green",
        run: "apt-get install -y -q rccl={newer}",
        rccl: Some("STOCK"),
        verify: Some(0),
        family: Family::Absent,
        pair: Pair::Kept,
        pair_patched: Some(true),
        ..STEP
    },
    Step {
        title: "the custom build pinned again, against the newer stock (the docs' way forward)",
        before: Before::PackageAgain,
        run: "rocm-pin install {second_in}",
        rccl: Some("{identity}"),
        verify: Some(0),
        pair: Pair::Kept,
        ..STEP
    },
    Step {
        title: "rollback with no family: both families back to their stock, the pair first",
        run: "rocm-pin rollback",
        succeeds: Some(true),
        says: &["the stock runtime is back", "the stock rccl is back"],
        rccl: Some("STOCK"),
        pair_patched: Some(false),
        dependants: Some(true),
        ..STEP
    },
    Step {
        title: "the newer stock rccl back",
        run: "dpkg-query -W -f='${Version}\\n' rccl",
        says: &["{newer}\n"],
        ..STEP
    },
    Step {
        title: "the guard goes with nothing of ours left",
        run: "ls /etc/apt/apt.conf.d/80rocm-pin-guard /etc/dpkg/dpkg.cfg.d/rocm-pin-guard 2>&1 || true",
        says: &["80rocm-pin-guard': No such file", "dpkg.cfg.d/rocm-pin-guard': No such file"],
        ..STEP
    },
];

#[test]
fn rocm_pin_installs_verifies_and_rolls_back_rccl_next_to_the_pair() {
    rocm_pin_testkit::needs_root!("a chroot");
    let started = Instant::now();
    let a = artifacts("bookworm");
    let sb = fresh(a, &a.installed_snapshot);
    let work = tempfile::tempdir().unwrap();
    let stock = a.stock.require(StockRole::Rccl).unwrap();
    let mut vars = vec![("identity", IDENTITY.to_string())];
    let deb = crate::rccl_pair::package_cpack_rccl(sb.root(), work.path(), IDENTITY);
    vars.push(("ours_in", copy_in_root(&sb, &deb)));
    let pair_before = pair_versions(&sb);
    for step in RCCL_FAMILY {
        match step.before {
            Before::Nothing => {}
            Before::CopyStock => vars.push(("stock_in", copy_in_root(&sb, &stock.deb))),
            Before::TakeVerifysFix => {
                let (_, detail) = family_check(&sb, "rccl").unwrap();
                let fix = detail.rsplit('`').nth(1).unwrap().to_string();
                assert!(
                    fix.starts_with("rocm-pin install /var/lib/rocm-pin/ours/rccl/"),
                    "{fix}"
                );
                vars.push(("fix", fix));
            }
            Before::PublishNewerStock => {
                vars.push(("newer", newer_stock(&stock.deb, &work.path().join("newer"))));
                sb.add_local_repo("rccl-newer", &work.path().join("newer/repo"))
                    .unwrap();
            }
            Before::PackageAgain => {
                let dir = work.path().join("second");
                let second = crate::rccl_pair::package_cpack_rccl(sb.root(), &dir, IDENTITY);
                vars.push(("second_in", copy_in_root(&sb, &second)));
            }
        }
        let out = sb.sh(&fill(step.run, &vars).unwrap()).unwrap();
        judge_step(&sb, step, &out, &vars, &pair_before, started);
    }
}

/// `deb` copied into the chroot's /root; its path there.
fn copy_in_root(sb: &Sandbox, deb: &std::path::Path) -> String {
    let inside = format!("/root/{}", deb.file_name().unwrap().to_str().unwrap());
    sb.copy_in(deb, &inside).unwrap();
    inside
}

/// Everything `step` says must hold after its command gave `out`; prints the scenario's row
/// (step, exit, what the loader maps for rccl, verify's exit, the pair patched, time).
fn judge_step(
    sb: &Sandbox,
    step: &Step,
    out: &std::process::Output,
    vars: &[(&str, String)],
    pair_before: &str,
    started: Instant,
) {
    let (said, title) = (text(out), step.title);
    let identity = rccl_identity(sb);
    let v = verify(sb);
    eprintln!(
        "rccl_family | {title} | {:?} | {identity} | verify {} | pair patched {} | {:.1}s",
        out.status.code(),
        rc(&v),
        all_patched(&probe(sb)),
        started.elapsed().as_secs_f64()
    );
    if let Some(ok) = step.succeeds {
        assert_eq!(rc(out) == 0, ok, "{title}: exit {}:\n{said}", rc(out));
    }
    for phrase in step.says {
        let phrase = fill(phrase, vars).unwrap();
        assert!(said.contains(&phrase), "{title}: no {phrase:?} in:\n{said}");
    }
    if !step.json.is_empty() {
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for (pointer, want) in step.json {
            let got = json
                .pointer(pointer)
                .map(|v| v.to_string())
                .unwrap_or_default();
            assert!(
                got.contains(want),
                "{title}: {pointer} is {got:?}, want {want:?}:\n{json:#}"
            );
        }
    }
    if let Some(want) = step.rccl {
        let want = fill(want, vars).unwrap();
        assert!(
            identity.contains(&want),
            "{title}: rccl is {identity}, want {want}\n{said}"
        );
    }
    if let Some(want) = step.verify {
        assert_eq!(rc(&v), want, "{title}: verify:\n{}\n{said}", text(&v));
    }
    for phrase in step.verify_says {
        assert!(
            text(&v).contains(phrase),
            "{title}: verify says no {phrase:?}:\n{}",
            text(&v)
        );
    }
    let family = match family_check(sb, "rccl") {
        None => Family::Absent,
        Some((true, _)) => Family::Passes,
        Some((false, _)) => Family::Fails,
    };
    assert!(
        step.family == Family::Any || step.family == family,
        "{title}: the rccl family {family:?}"
    );
    match step.pair {
        Pair::Any => {}
        Pair::SameCount => assert_eq!(
            pair_versions(sb).lines().count(),
            pair_before.lines().count(),
            "{title}: the pair's packages"
        ),
        Pair::Kept => assert_eq!(pair_versions(sb), pair_before, "{title}: the pair moved"),
    }
    if let Some(want) = step.pair_patched {
        assert_eq!(all_patched(&probe(sb)), want, "{title}: the pair patched");
    }
    match step.dependants {
        Some(true) => assert!(
            dependants_installed(sb),
            "{title}: {:?}",
            dependant_states(sb)
        ),
        Some(false) => {
            let states = dependant_states(sb);
            assert!(
                states.iter().all(|(p, s)| p == "rccl" || s == "ii"),
                "{title}: every dependant but the stock rccl ours stands in for: {states:?}"
            );
        }
        None => {}
    }
}
