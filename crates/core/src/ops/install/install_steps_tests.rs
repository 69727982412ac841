//! install's steps on a directory made to look like a host ([`FakeHost`]): the gate, the stock
//! match and the apt transaction it plans, and the refusal to run apt on a root that is not
//! `/`. The chroot acceptance tests (install_matrix) run the whole command.

use super::*;
use crate::error::exit_code_for;
use crate::host::status;
use crate::ops::fakehost::{self, FakeHost, HIP_STOCK, HSA_STOCK, PAIR};
use crate::progress::Silent;
use crate::rocm::gate::GateError;

/// Exit code 2: refused, nothing changed.
const USAGE: i32 = 2;

fn opts(mode: GateMode) -> InstallOptions {
    InstallOptions {
        debs: Vec::new(),
        mode,
        lock_timeout: 60,
        guard: false,
        local_repo: false,
        accept_skipped_backport_check: false,
        allow_downgrade: false,
        no_rollback: false,
    }
}

fn args(cmd: &Command) -> Vec<String> {
    cmd.get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

fn plan(host: &FakeHost, opts: &InstallOptions) -> anyhow::Result<Transaction> {
    let facts = fakehost::facts(Path::new("/srv/debs"));
    let before = crate::rocm::read_status(&host.root).unwrap();
    Transaction::plan(&host.root, opts, &facts, &fakehost::marker(), &before)
}

#[test]
fn the_gate_refuses_another_rocm_release_and_writes_nothing() {
    let host = FakeHost::new("7.2.5-42");
    let mut report = InstallReport::default();
    let e = gate_step(
        &host.root,
        &opts(GateMode::Require),
        &fakehost::marker(),
        &mut report,
        &Silent,
    )
    .unwrap_err();
    assert_eq!(exit_code_for(&e), USAGE, "{e:#}");
    assert!(
        matches!(
            crate::error::find(&e),
            Some(GateError::GateRefused { found: Some(found), required, .. })
                if found == "7.2.5-42" && required == "7.2.4"
        ),
        "{e:?}"
    );
    let msg = format!("{e:#}");
    assert!(
        msg.contains("ROCm 7.2.5-42 at /opt/rocm-7.2.4") && msg.contains("does not match 7.2.4"),
        "{msg}"
    );
    assert!(msg.contains("--mode auto"), "{msg}");
    assert!(!host.exists(StateLayout::skip_record()));
    assert!(report.actions.is_empty());
}

#[test]
fn the_gate_in_auto_mode_skips_another_release_and_records_why_in_the_root() {
    let host = FakeHost::new("7.2.40");
    let mut report = InstallReport::default();
    let stopped = gate_step(
        &host.root,
        &opts(GateMode::Auto),
        &fakehost::marker(),
        &mut report,
        &Silent,
    )
    .unwrap();
    assert_eq!(stopped, Some(Outcome::Skipped));
    let record = gate::read_skip_record(&host.root).expect("a skip record in the root");
    assert!(
        record.contains("ROCm 7.2.40") && record.contains("mode auto: skipped"),
        "{record}"
    );
}

#[test]
fn the_gate_passes_the_target_release_and_off_stops_without_writing() {
    let host = FakeHost::new("7.2.4-93");
    let marker = fakehost::marker();
    let mut report = InstallReport::default();
    let go = gate_step(
        &host.root,
        &opts(GateMode::Require),
        &marker,
        &mut report,
        &Silent,
    )
    .unwrap();
    assert_eq!(go, None);
    let g = report.gate.as_ref().unwrap();
    assert!(g.matches && !g.rocm_path_elsewhere, "{g:?}");
    assert_eq!(
        g.rocm_path_chain.as_deref().unwrap(),
        ["/opt/rocm", "/etc/alternatives/rocm", "/opt/rocm-7.2.4"]
    );
    let off = gate_step(
        &host.root,
        &opts(GateMode::Off),
        &marker,
        &mut InstallReport::default(),
        &Silent,
    )
    .unwrap();
    assert_eq!(off, Some(Outcome::Off));
    assert!(!host.exists(StateLayout::skip_record()));
}

#[test]
fn a_fresh_host_plans_our_debs_and_the_stock_pair_removed_by_name() {
    let host = FakeHost::new("7.2.4");
    let o = opts(GateMode::Require);
    let tx = plan(&host, &o).unwrap();
    assert!(tx.need_apt && !tx.reinstall);
    assert!(tx.missing_conffiles.is_empty());
    assert_eq!(tx.stock_names, ["hsa-rocr", "hip-runtime-amd"]);
    assert_eq!(tx.lib_dir, "/opt/rocm-7.2.4/lib");
    assert_eq!(
        tx.loader_entry,
        Path::new("/etc/ld.so.conf.d/hsa-rocr-pinned.conf")
    );
    let debs: Vec<String> = fakehost::facts(Path::new("/srv/debs"))
        .iter()
        .map(|f| f.path.display().to_string())
        .collect();
    assert_eq!(
        tx.deb_args,
        [
            debs[0].clone(),
            debs[1].clone(),
            "hsa-rocr-".into(),
            "hip-runtime-amd-".into()
        ]
    );
    // What apt is told: the simulation first, then the same arguments for real.
    let sim = args(&tx.apt_command(&host.root, &o, true));
    let tail: Vec<&str> = sim.iter().map(String::as_str).rev().take(6).collect();
    assert_eq!(
        tail,
        [
            "hip-runtime-amd-",
            "hsa-rocr-",
            debs[1].as_str(),
            debs[0].as_str(),
            "install",
            "-s"
        ]
    );
    assert!(
        sim.contains(&"DPkg::Lock::Timeout=60".to_string()),
        "{sim:?}"
    );
    let real = args(&tx.apt_command(&host.root, &o, false));
    assert!(real.windows(2).any(|w| w == ["install", "-y"]), "{real:?}");
    assert!(
        !real.iter().any(|a| a == "--reinstall" || a == "-s"),
        "{real:?}"
    );
    // apt reads this root's database, not the live system's.
    assert!(
        real.contains(&format!("Dir={}", host.root.display())),
        "{real:?}"
    );
}

#[test]
fn stock_at_another_version_is_refused_before_apt_is_asked() {
    let host = FakeHost::new("7.2.4");
    host.set_status(&[
        fakehost::stock("hsa-rocr", "1.18.0.70203-80~24.04", "install ok installed"),
        fakehost::stock("hip-runtime-amd", HIP_STOCK, "install ok installed"),
        fakehost::dependant(),
    ]);
    let e = plan(&host, &opts(GateMode::Require))
        .err()
        .expect("a refusal");
    assert_eq!(exit_code_for(&e), USAGE);
    let msg = format!("{e:#}");
    assert!(
        msg.contains("stock hsa-rocr is installed at 1.18.0.70203-80~24.04")
            && msg.contains(&format!("built against {HSA_STOCK}"))
            && msg.contains("Rebuild the replacement"),
        "{msg}"
    );
}

#[test]
fn stock_half_configured_or_absent_is_refused() {
    let host = FakeHost::new("7.2.4");
    host.set_status(&[
        fakehost::stock("hsa-rocr", HSA_STOCK, "install ok half-configured"),
        fakehost::stock("hip-runtime-amd", HIP_STOCK, "install ok installed"),
    ]);
    let msg = format!("{:#}", plan(&host, &opts(GateMode::Require)).err().unwrap());
    assert!(
        msg.contains("dpkg state iF") && msg.contains("dpkg --configure -a"),
        "{msg}"
    );
    host.set_status(&[fakehost::stock(
        "hip-runtime-amd",
        HIP_STOCK,
        "install ok installed",
    )]);
    let msg = format!("{:#}", plan(&host, &opts(GateMode::Require)).err().unwrap());
    assert!(
        msg.contains(&format!("stock hsa-rocr={HSA_STOCK} not installed"))
            && msg.contains(&format!("`apt-get install hsa-rocr={HSA_STOCK}`")),
        "{msg}"
    );
}

#[test]
fn ours_in_place_needs_no_apt_and_a_deleted_pin_is_restored_by_reinstall() {
    let host = FakeHost::new("7.2.4");
    host.install_ours("install ok installed");
    let o = opts(GateMode::Require);
    let tx = plan(&host, &o).unwrap();
    assert!(!tx.need_apt, "already installed: apt is not run");
    assert!(tx.stock_match.present.is_empty());

    std::fs::remove_file(
        host.root
            .host_path(StateLayout::pin_file("hsa-rocr-pinned")),
    )
    .unwrap();
    let tx = plan(&host, &o).unwrap();
    assert!(tx.need_apt && tx.reinstall);
    assert_eq!(
        tx.missing_conffiles,
        ["/etc/apt/preferences.d/hsa-rocr-pinned"]
    );
    let real = args(&tx.apt_command(&host.root, &o, false));
    assert!(
        real.contains(&"--reinstall".to_string())
            && real.contains(&"Dpkg::Options::=--force-confmiss".to_string()),
        "{real:?}"
    );
    // The simulation does not pass dpkg options.
    let sim = args(&tx.apt_command(&host.root, &o, true));
    assert!(
        sim.contains(&"--reinstall".to_string())
            && !sim.iter().any(|a| a.contains("force-confmiss")),
        "{sim:?}"
    );
}

#[test]
fn a_stock_package_forced_in_next_to_ours_is_removed_whatever_its_version() {
    let host = FakeHost::new("7.2.4");
    host.install_ours("install ok installed");
    let mut status: Vec<String> = PAIR
        .iter()
        .map(|(s, v, p)| fakehost::ours(p, s, v, "install ok installed"))
        .collect();
    // `dpkg -i --force-all` of an older stock .deb: dpkg records it unpacked.
    status.push(fakehost::stock(
        "hip-runtime-amd",
        "7.2.53211.70203-80~24.04",
        "install ok unpacked",
    ));
    host.set_status(&status);
    let tx = plan(&host, &opts(GateMode::Require)).unwrap();
    assert!(tx.need_apt && tx.reinstall);
    assert_eq!(tx.deb_args.last().unwrap(), "hip-runtime-amd-");
    // Not the version ours provides: not worth keeping for rollback.
    assert!(!tx.stock_match.kept_for_rollback(&tx.stock_match.present[0]));
}

#[test]
fn an_older_pin_is_a_downgrade_refused_unless_allowed() {
    let host = FakeHost::new("7.2.4");
    host.set_status(
        &PAIR
            .iter()
            .map(|(s, v, p)| {
                fakehost::ours(p, s, v, "install ok installed")
                    .replace(fakehost::PIN_SUFFIX, "+pin1800000000.g0123456")
            })
            .collect::<Vec<_>>(),
    );
    let e = plan(&host, &opts(GateMode::Require)).err().unwrap();
    assert_eq!(exit_code_for(&e), USAGE);
    assert!(format!("{e:#}").contains("--allow-downgrade"), "{e:#}");
    let mut o = opts(GateMode::Require);
    o.allow_downgrade = true;
    let tx = plan(&host, &o).unwrap();
    assert!(tx.need_apt && !tx.reinstall);
    assert!(args(&tx.apt_command(&host.root, &o, true)).contains(&"--allow-downgrades".into()));
}

#[test]
fn apt_and_dpkg_are_refused_on_a_root_that_is_not_the_live_system() {
    let host = FakeHost::new("7.2.4");
    let e = live_system_only(&host.root, "rocm-pin install").unwrap_err();
    assert_eq!(exit_code_for(&e), USAGE);
    let msg = format!("{e:#}");
    assert!(
        msg.contains(&format!("chroot {}", host.root.display())) && msg.contains("nothing changed"),
        "{msg}"
    );
    assert!(live_system_only(&Root::system(), "rocm-pin install").is_ok());
    // An interrupted run of ours on that root: dpkg --configure -a is not run on it.
    host.install_ours("install ok unpacked");
    let mut changed = crate::error::HostChange::Unchanged;
    let e = complete_interrupted_run(
        &host.root,
        &crate::rocm::read_status(&host.root).unwrap(),
        &fakehost::facts(Path::new("/srv/debs")),
        &mut InstallReport::default(),
        &Silent,
        &mut changed,
    )
    .unwrap_err();
    assert!(format!("{e:#}").contains("dpkg --configure -a"), "{e:#}");
    // Refused before dpkg ran: the host did not change.
    assert_eq!(changed, crate::error::HostChange::Unchanged);
}

/// The whole of `install` on a root that is not `/`, from real .debs: the gate and the stock
/// match run, then it stops before apt with nothing changed in the root.
#[test]
fn install_on_a_root_judges_it_then_refuses_apt_with_nothing_changed() {
    let host = FakeHost::new("7.2.4");
    let debs_dir = tempfile::tempdir().unwrap();
    let mut o = opts(GateMode::Require);
    o.debs = fakehost::build_debs(debs_dir.path());
    let status_before = std::fs::read(status::status_path(&host.root)).unwrap();
    let parses_before = status::status_parses();
    let e = install(&host.root, &o, &Silent).unwrap_err();
    // Read once for the gate, the interrupted-run check and the stock match (it was twice).
    assert_eq!(status::status_parses() - parses_before, 1);
    assert_eq!(exit_code_for(&e), USAGE);
    // The fact adopt keeps or drops its resume record by, stated by install itself.
    assert_eq!(
        crate::error::host_change(&e),
        Some(crate::error::HostChange::Unchanged)
    );
    assert!(
        format!("{e:#}").contains("rocm-pin install changes packages with apt-get and dpkg"),
        "{e:#}"
    );
    assert_eq!(
        std::fs::read(status::status_path(&host.root)).unwrap(),
        status_before
    );
    assert!(!host.exists("/etc/ld.so.conf.d/hsa-rocr-pinned.conf"));
    assert!(!host.exists(StateLayout::stock_dir()));
    assert!(!host.exists(StateLayout::skip_record()));

    // The stock match refuses first when the host's stock pair is not what the .debs replace.
    host.set_status(&[
        fakehost::stock("hsa-rocr", HSA_STOCK, "install ok installed"),
        fakehost::stock(
            "hip-runtime-amd",
            "7.2.53211.70205-1~24.04",
            "install ok installed",
        ),
    ]);
    let msg = format!("{:#}", install(&host.root, &o, &Silent).unwrap_err());
    assert!(
        msg.contains("stock hip-runtime-amd is installed at 7.2.53211.70205-1~24.04"),
        "{msg}"
    );
}

#[test]
fn install_on_a_root_of_another_release_is_skipped_in_auto_mode() {
    let host = FakeHost::new("7.1.1");
    let debs_dir = tempfile::tempdir().unwrap();
    let mut o = opts(GateMode::Auto);
    o.debs = fakehost::build_debs(debs_dir.path());
    let report = install(&host.root, &o, &Silent).unwrap();
    assert_eq!(report.outcome, Outcome::Skipped);
    assert_eq!(
        report
            .packages
            .iter()
            .map(|f| (f.package.as_str(), f.stock_name.as_str()))
            .collect::<Vec<_>>(),
        [
            ("hsa-rocr-pinned", "hsa-rocr"),
            ("hip-runtime-amd-pinned", "hip-runtime-amd")
        ]
    );
    assert!(gate::read_skip_record(&host.root)
        .unwrap()
        .contains("ROCm 7.1.1"));
}
