//! Every fix verify names leads to green (issue: "advice that loops"). Each row breaks an
//! installed host the way a user or a downstream image does; verify must fail, and every fix
//! command it prints (backquoted, starting with a command a user runs) is run verbatim in the
//! chroot, in order, until verify passes. No fix may be the command that just refused, and the
//! last one run must leave verify passing with the patched runtime live.

use crate::util::*;
use rocm_pin_kit::sandbox::Sandbox;
use rocm_pin_kit::standin::StockRole;

/// One way to break an installed host: one row of the advice-graph table.
pub(crate) struct Breakage {
    pub id: &'static str,
    /// Shell run in the chroot; each flavour fills its own placeholders (here
    /// `{stock_hsa_deb}`, `{stock_hip_deb}`).
    pub script: &'static str,
}

const BREAKAGES: &[Breakage] = &[
    Breakage {
        id: "forced-stock-hsa",
        script: "dpkg -i --force-all {stock_hsa_deb}",
    },
    Breakage {
        id: "ours-force-removed",
        script: "dpkg -r --force-depends --force-remove-protected hsa-rocr-pinned",
    },
    Breakage {
        id: "both-ours-force-removed",
        script: "dpkg -r --force-depends --force-remove-protected hsa-rocr-pinned hip-runtime-amd-pinned",
    },
    Breakage {
        id: "forced-stock-hip",
        script: "dpkg -i --force-all {stock_hip_deb}",
    },
    Breakage {
        id: "pin-file-deleted",
        script: "rm /etc/apt/preferences.d/hip-runtime-amd-pinned",
    },
    Breakage {
        id: "protected-dropped",
        script: "sed -i '/^Package: hsa-rocr-pinned$/,/^$/{/^Protected: yes$/d}' /var/lib/dpkg/status",
    },
    Breakage {
        id: "marker-deleted",
        script: "rm /opt/rocm-7.2.4/.info/rocm-pin.json",
    },
    Breakage {
        id: "library-deleted",
        script: "rm /opt/rocm-7.2.4/lib/libamdhip64.so.7.2.53211-*",
    },
    Breakage {
        id: "hold-removed",
        script: "rm /etc/apt/preferences.d/rocm-pin-release-hold",
    },
    Breakage {
        id: "loader-entry-deleted",
        script: "rm /etc/ld.so.conf.d/hsa-rocr-pinned.conf && ldconfig",
    },
];

/// The commands a verify report names as fixes, in order: backquoted text on FAIL lines that
/// starts with a program a user runs.
fn fixes_named(report: &str) -> Vec<String> {
    const PROGRAMS: &[&str] = &["rocm-pin ", "apt-get ", "apt ", "dpkg "];
    let mut out = Vec::new();
    for line in report.lines().filter(|l| l.contains("FAIL")) {
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 1
                && PROGRAMS.iter().any(|p| part.starts_with(p))
                && !out.contains(&part.to_string())
            {
                out.push(part.to_string());
            }
        }
    }
    out
}

#[test]
fn every_fix_verify_names_leads_to_green() {
    rocm_pin_testkit::needs_root!("a chroot");
    let a = artifacts("bookworm");
    let stock_deb = |role: StockRole| {
        let deb = &a.stock.require(role).unwrap().deb;
        format!(
            "{STOCK_DEBS_DIR}/{}",
            deb.file_name().unwrap().to_string_lossy()
        )
    };
    let fill = |script: &str| {
        script
            .replace("{stock_hsa_deb}", &stock_deb(StockRole::HsaRocr))
            .replace("{stock_hip_deb}", &stock_deb(StockRole::HipRuntime))
    };
    let (table, failures, _) = drive(
        BREAKAGES,
        &|| fresh(a, &a.installed_snapshot),
        &fill,
        &runtime_problems,
    );
    eprintln!("advice graph, AMD's packaging:\n{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The shared steps of every row: a fresh installed host (`installed`), the breakage (its
/// script with the flavour's placeholders filled by `fill`), then the advice followed until
/// verify passes; `runtime_problems` judges the host verify calls green. Returns the table
/// rows, the problems found, and everything verify and the fixes said (for the wording test).
pub(crate) fn drive(
    rows: &[Breakage],
    installed: &dyn Fn() -> Sandbox,
    fill: &dyn Fn(&str) -> String,
    runtime_problems: &dyn Fn(&Sandbox) -> Vec<String>,
) -> (Vec<String>, Vec<String>, String) {
    let mut table = Vec::new();
    let mut failures = Vec::new();
    let mut said = String::new();
    // ROCM_PIN_ADVICE_ROWS=id,id runs only those rows (while working on one).
    let only = std::env::var("ROCM_PIN_ADVICE_ROWS").ok();
    let wanted = |id: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|w| w == id))
    };
    for b in rows.iter().filter(|b| wanted(b.id)) {
        let sb = installed();
        let script = fill(b.script);
        if let Err(e) = sb.sh_ok(&script) {
            table.push(format!("{:<22} breakage did not apply", b.id));
            failures.push(format!("{}: `{script}` failed: {e:#}", b.id));
            continue;
        }
        let (row, problem) = follow_the_advice(&sb, b.id, runtime_problems, &mut said);
        table.push(row);
        failures.extend(problem);
    }
    (table, failures, said)
}

/// Run verify, then each fix it names, until verify passes. Returns the table row and a
/// problem when the advice does not lead to green, or a fix that fails names itself.
pub(crate) fn follow_the_advice(
    sb: &Sandbox,
    id: &str,
    runtime_problems: &dyn Fn(&Sandbox) -> Vec<String>,
    said: &mut String,
) -> (String, Option<String>) {
    let v = verify(sb);
    said.push_str(&text(&v));
    if v.status.success() {
        return (
            format!("{id:<22} verify passes after the breakage"),
            Some(format!(
                "{id}: verify passes on a broken host:\n{}",
                text(&v)
            )),
        );
    }
    let fixes = fixes_named(&text(&v));
    let mut ran = Vec::new();
    for fix in &fixes {
        let out = sb.sh(fix).unwrap();
        if fix.starts_with("rocm-pin ") {
            said.push_str(&text(&out));
        }
        ran.push(format!("`{fix}` rc {}", rc(&out)));
        // A command that refuses must not name itself as the way out.
        if rc(&out) != 0 && text(&out).contains(&format!("`{fix}`")) {
            return (
                format!("{id:<22} {} -> names itself", ran.join(", then ")),
                Some(format!(
                    "{id}: `{fix}` refused and names itself as the fix:\n{}",
                    text(&out)
                )),
            );
        }
        let after = verify(sb);
        said.push_str(&text(&after));
        if after.status.success() {
            let problems = runtime_problems(sb);
            return (
                format!("{id:<22} {} -> verify ok", ran.join(", then ")),
                (!problems.is_empty()).then(|| format!("{id}: {problems:?}")),
            );
        }
        let next = fixes_named(&text(&after));
        if rc(&out) != 0 && next.contains(fix) {
            return (
                format!("{id:<22} {} -> LOOP", ran.join(", then ")),
                Some(format!(
                    "{id}: `{fix}` failed and verify names it again:\n{}\n--- verify:\n{}",
                    text(&out),
                    text(&after)
                )),
            );
        }
    }
    (
        format!("{id:<22} {} -> still failing", ran.join(", then ")),
        Some(format!(
            "{id}: no fix verify named made it pass ({fixes:?}):\n{}",
            text(&verify(sb))
        )),
    )
}

fn runtime_problems(sb: &Sandbox) -> Vec<String> {
    let mut problems = Vec::new();
    let ids = probe(sb);
    if !all_patched(&ids) {
        problems.push(format!("loader uses {ids:?}"));
    }
    if !dependants_installed(sb) {
        problems.push(format!("dependants {:?}", dependant_states(sb)));
    }
    problems
}
