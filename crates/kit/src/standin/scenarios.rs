//! The downstream scenarios: the apt and dpkg commands users run after `rocm-pin install` that
//! used to put the stock runtime back. ONE list, read by `rocm-pin demo` (the entries marked
//! `demo`, in order, in one chroot) and by tests/install_downstream.rs (every entry, each in a
//! fresh copy of an installed chroot, under every apt configuration CI runs: bookworm's apt 2.6,
//! trixie's apt 3.0 with the classic solver, and with `APT::Solver "3.0"`).
//!
//! Where the two apt solvers decide differently, an entry states the outcome per solver. The
//! result users see is the same either way: the patched pair live and dependants kept, and
//! either verify passing, or the command failing loudly with verify naming the repair (which
//! the tests then run, taken from verify's own words, and check again).

use rocm_pin::host::apt::Solver;

/// Where a scenario's inputs are inside the chroot (the demo and the tests copy them to
/// different places).
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The custom rccl with exact `=` dependencies on the stock pair (dpkg -i only).
    pub custom_rccl_deb: String,
    /// The stock hsa-rocr and hip-runtime-amd .debs.
    pub stock_hsa_deb: String,
    pub stock_hip_deb: String,
    /// `hip-runtime-amd=<exact stock version>`.
    pub stock_hip_request: String,
}

/// What a scenario's script ends with, under one solver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expect {
    /// Exit code of the script (its last command's).
    pub rc: i32,
    /// `rocm-pin verify` passes afterwards. When false, verify must fail `stock-absent` and name
    /// a repair command that, run next, makes it pass.
    pub verify_ok: bool,
}

const OK: Expect = Expect {
    rc: 0,
    verify_ok: true,
};

#[derive(Debug, Clone)]
pub struct Scenario {
    /// Short id (test tables).
    pub id: &'static str,
    /// The demo's step name (what a user reads).
    pub title: &'static str,
    /// Run by `rocm-pin demo`.
    pub demo: bool,
    /// Shell script run inside the chroot (`/bin/sh -ec`).
    pub script: String,
    /// Publish the newer stock release in the stock repository first.
    pub newer_stock: bool,
    pub classic: Expect,
    pub solver3: Expect,
    /// A command whose output the demo prints after the step (label, command).
    pub show: Option<(&'static str, &'static str)>,
}

impl Scenario {
    pub fn expect(&self, solver: &Solver) -> Expect {
        match solver {
            Solver::Classic => self.classic,
            Solver::Solver3 => self.solver3,
        }
    }
}

fn same(
    id: &'static str,
    title: &'static str,
    demo: bool,
    script: impl Into<String>,
    e: Expect,
) -> Scenario {
    Scenario {
        id,
        title,
        demo,
        script: script.into(),
        newer_stock: false,
        classic: e,
        solver3: e,
        show: None,
    }
}

/// Every scenario, the demo's first and in the demo's order.
pub fn scenarios(i: &Inputs) -> Vec<Scenario> {
    let mut v = vec![
        Scenario {
            show: Some(("rccl installed", "dpkg-query -W -f '${Version}' rccl")),
            ..same(
                "custom-rccl-eq+fix-broken",
                "fix-broken (seed): dpkg -i --force-all custom rccl; apt --fix-broken install",
                true,
                format!(
                    "dpkg -i --force-all {} || true\napt --fix-broken install -y",
                    i.custom_rccl_deb
                ),
                OK,
            )
        },
        same(
            "reinstall-hip",
            "apt-get install --reinstall hip-runtime-amd",
            true,
            "apt-get install --reinstall -y hip-runtime-amd",
            OK,
        ),
        same(
            "install-hipblas",
            "apt-get install hipblas (a new dependant)",
            true,
            "apt-get install -y hipblas",
            OK,
        ),
        Scenario {
            newer_stock: true,
            ..same(
                "r2:apt-get-upgrade",
                "apt-get upgrade (newer stock release published)",
                true,
                "apt-get upgrade -y",
                OK,
            )
        },
        Scenario {
            newer_stock: true,
            ..same(
                "r2:dist-upgrade",
                "apt-get dist-upgrade",
                true,
                "apt-get dist-upgrade -y",
                OK,
            )
        },
        Scenario {
            newer_stock: true,
            ..same(
                "r2:apt-upgrade",
                "apt upgrade (newer stock release published)",
                false,
                "apt upgrade -y",
                OK,
            )
        },
        same(
            "fix-broken",
            "apt-get -f install",
            false,
            "apt-get -f install -y",
            OK,
        ),
        same(
            "reinstall-hsa",
            "apt-get install --reinstall hsa-rocr",
            false,
            "apt-get install --reinstall -y hsa-rocr",
            OK,
        ),
        // apt refuses (the stock names are pinned to -1): a loud failure, nothing changed.
        same(
            "explicit-stock-version",
            "apt-get install hip-runtime-amd=<stock version>",
            false,
            format!("apt-get install -y {}", i.stock_hip_request),
            Expect {
                rc: 100,
                verify_ok: true,
            },
        ),
        same(
            "install-dependants",
            "apt-get install rocm-hip-runtime hip-dev rccl hipblas",
            false,
            "apt-get install -y rocm-hip-runtime hip-dev rccl hipblas",
            OK,
        ),
        same(
            "autoremove",
            "apt-get autoremove",
            false,
            "apt-get autoremove -y",
            OK,
        ),
        // dpkg refuses (ours conflict with the stock package): rc 1, nothing changed.
        same(
            "dpkg-i-stock",
            "dpkg -i <stock hip-runtime-amd>.deb",
            false,
            format!("dpkg -i {}", i.stock_hip_deb),
            Expect {
                rc: 1,
                verify_ok: true,
            },
        ),
        same(
            "ld.so.conf.d+ldconfig",
            "the stock lib directory added to ld.so.conf.d + ldconfig",
            false,
            "echo /opt/rocm-7.2.4/lib > /etc/ld.so.conf.d/rocm.conf; ldconfig",
            OK,
        ),
    ];
    // `dpkg -i --force-all` of a stock package of the pair next to ours, then fix-broken.
    // Classic solver: fix-broken removes the stock package again (rc 0). apt 3's solver
    // (measured, trixie apt 3.0): "Reached two conflicting decisions", rc 100; our files stay
    // live and verify fails `stock-absent`, naming `apt-get remove -y <stock>`, which repairs.
    for (id, title, deb) in [
        (
            "force-stock-hsa+fix-broken",
            "dpkg -i --force-all <stock hsa-rocr>.deb; apt --fix-broken install",
            &i.stock_hsa_deb,
        ),
        (
            "force-stock-hip+fix-broken",
            "dpkg -i --force-all <stock hip-runtime-amd>.deb; apt --fix-broken install",
            &i.stock_hip_deb,
        ),
    ] {
        v.push(Scenario {
            solver3: Expect {
                rc: 100,
                verify_ok: false,
            },
            ..same(
                id,
                title,
                false,
                format!("dpkg -i --force-all {deb} || true\napt --fix-broken install -y"),
                OK,
            )
        });
    }
    v
}

/// The demo's entries, in order. The demo has only the custom rccl among the inputs; the
/// other entries (which need the rest) are not the demo's.
pub fn demo_scenarios(custom_rccl_deb: &str) -> Vec<Scenario> {
    let unused = "/nonexistent/not-a-demo-input".to_string();
    scenarios(&Inputs {
        custom_rccl_deb: custom_rccl_deb.to_string(),
        stock_hsa_deb: unused.clone(),
        stock_hip_deb: unused.clone(),
        stock_hip_request: unused,
    })
    .into_iter()
    .filter(|s| s.demo)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> Inputs {
        Inputs {
            custom_rccl_deb: "/c/rccl.deb".into(),
            stock_hsa_deb: "/s/hsa.deb".into(),
            stock_hip_deb: "/s/hip.deb".into(),
            stock_hip_request: "hip-runtime-amd=1".into(),
        }
    }

    #[test]
    fn ids_and_titles_are_unique_and_the_seed_comes_first() {
        let v = scenarios(&inputs());
        let mut ids: Vec<&str> = v.iter().map(|s| s.id).collect();
        let mut titles: Vec<&str> = v.iter().map(|s| s.title).collect();
        ids.sort();
        ids.dedup();
        titles.sort();
        titles.dedup();
        assert_eq!(ids.len(), v.len());
        assert_eq!(titles.len(), v.len());
        assert!(v[0].demo && v[0].script.contains("/c/rccl.deb"));
        // The demo's entries come first, so the demo's order is the list's.
        let first_non_demo = v.iter().position(|s| !s.demo).unwrap();
        assert!(v[first_non_demo..].iter().all(|s| !s.demo));
        // The demo runs them one after another: each must pass under either solver.
        let demo = demo_scenarios("/c/rccl.deb");
        assert_eq!(demo.len(), first_non_demo);
        assert!(demo.iter().all(|s| s.classic == OK && s.solver3 == OK));
        assert!(demo.iter().all(|s| !s.script.contains("/nonexistent/")));
    }

    #[test]
    fn solvers_differ_only_on_the_forced_stock_cases() {
        let v = scenarios(&inputs());
        let differ: Vec<&str> = v
            .iter()
            .filter(|s| s.classic != s.solver3)
            .map(|s| s.id)
            .collect();
        assert_eq!(
            differ,
            ["force-stock-hsa+fix-broken", "force-stock-hip+fix-broken"]
        );
        // Every failing verify comes with an apt failure, never silently.
        assert!(v
            .iter()
            .flat_map(|s| [s.classic, s.solver3])
            .all(|e| e.verify_ok || e.rc != 0));
    }
}
