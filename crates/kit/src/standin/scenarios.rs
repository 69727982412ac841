//! The downstream scenarios: the apt and dpkg commands users run after `rocm-pin install` that
//! used to put the stock runtime back. ONE list, written as data in `testdata/scenarios.json`
//! (nfpm's scenarios-as-data), read by `rocm-pin demo` (the entries marked `demo`, in order, in
//! one chroot) and by tests/install/downstream.rs (every entry, each in a fresh copy of an
//! installed chroot, under every apt configuration CI runs: bookworm's apt 2.6, trixie's apt 3.0
//! with the classic solver, and with `APT::Solver "3.0"`), and by the image recipe test
//! tests/images/docker_recipe.rs (every entry, in order, in the chroot the recipe's own scripts
//! installed into, with the guard on and `verify-runtime.sh` after each), and by
//! tests/package/debian_downstream.rs on Debian's real stock ([`StockNames`] from discovery).
//!
//! Where the two apt solvers decide differently, an entry states the outcome per solver. The
//! result users see is the same either way: the patched pair live and dependants kept, and
//! either verify passing, or the command failing loudly with verify naming the repair (which
//! the tests then run, taken from verify's own words, and check again).

use rocm_pin_core::host::apt::Solver;
use rocm_pin_core::ops::plan::templates::render;
use serde::Deserialize;

/// The list, compiled in: the demo runs from an installed binary, far from any checkout.
const SCENARIOS_JSON: &str = include_str!("../../../../testdata/scenarios.json");

/// Where a scenario's inputs are inside the chroot (the demo and the tests copy them to
/// different places). Each fills the `{{field}}` of the same name in a script.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The custom rccl with exact `=` dependencies on the stock pair (dpkg -i only).
    pub custom_rccl_deb: String,
    /// The stock hsa-rocr and hip-runtime-amd .debs.
    pub stock_hsa_deb: String,
    pub stock_hip_deb: String,
    /// `hip-runtime-amd=<exact stock version>`.
    pub stock_hip_request: String,
    /// The stock flavour's package names and paths the scripts and titles name.
    pub names: StockNames,
}

/// The names a scenario uses for the stock flavour it runs on: AMD's stand-in set
/// ([`StockNames::amd`]) or Debian's packages as discovered in a chroot
/// (tests/package/debian_downstream.rs). Each fills the `{{field}}` of the same name.
#[derive(Debug, Clone)]
pub struct StockNames {
    /// Every stock package of the HSA half, space-separated.
    pub stock_hsa: String,
    /// Every stock package of the HIP half (Debian: `libamdhip64-N libhiprtcN
    /// libhiprtc-builtinsN`), space-separated.
    pub stock_hip: String,
    /// The stock package shipping libhsa-runtime64 / libamdhip64 (titles).
    pub hsa_package: String,
    pub hip_package: String,
    /// Dependants not installed yet that apt can install from the repositories the runner
    /// publishes, space-separated (Debian's: one real package per half).
    pub new_dependant: String,
    /// Dependants installed together in one apt command.
    pub dependants: String,
    /// The directory the stock runtime libraries are installed in.
    pub stock_lib_dir: String,
}

impl StockNames {
    /// AMD's packaging as the stand-in stock set has it: the texts of testdata/scenarios.json
    /// before its names became placeholders.
    pub fn amd() -> StockNames {
        StockNames {
            stock_hsa: "hsa-rocr".into(),
            stock_hip: "hip-runtime-amd".into(),
            hsa_package: "hsa-rocr".into(),
            hip_package: "hip-runtime-amd".into(),
            new_dependant: "hipblas".into(),
            dependants: "rocm-hip-runtime hip-dev rccl hipblas".into(),
            stock_lib_dir: "/opt/rocm-7.2.4/lib".into(),
        }
    }
}

/// What a scenario's script ends with, under one solver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
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

/// An outcome under apt's 3.0 solver from an apt version on (`expect_solver3_since_apt`): the
/// solver's decisions changed between apt releases (trixie's 3.0.3 and sid's 3.3.5 differ on
/// the forced-stock entries).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SinceApt {
    /// The first apt version measured with this outcome.
    pub apt: String,
    pub rc: i32,
    pub verify_ok: bool,
}

/// A command whose output the demo prints after the step.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Show {
    pub label: String,
    pub command: String,
}

/// One entry of testdata/scenarios.json, as written (the script still has its `{{fields}}`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioData {
    id: String,
    title: String,
    demo: bool,
    script: String,
    #[serde(default)]
    newer_stock: bool,
    expect: Option<Expect>,
    expect_solver3: Option<Expect>,
    expect_solver3_since_apt: Option<SinceApt>,
    show: Option<Show>,
    /// Why the outcome is what it is (for readers of the file).
    #[serde(default, rename = "why")]
    _why: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ScenarioFile {
    #[serde(rename = "_about")]
    _about: Vec<String>,
    scenarios: Vec<ScenarioData>,
}

#[derive(Debug, Clone)]
pub struct Scenario {
    /// Short id (test tables).
    pub id: String,
    /// The demo's step name (what a user reads).
    pub title: String,
    /// Run by `rocm-pin demo`.
    pub demo: bool,
    /// Shell script run inside the chroot (`/bin/sh -ec`), its inputs filled in.
    pub script: String,
    /// Publish the newer stock release in the stock repository first.
    pub newer_stock: bool,
    pub classic: Expect,
    pub solver3: Expect,
    /// `solver3` from an apt version on.
    pub solver3_since_apt: Option<SinceApt>,
    pub show: Option<Show>,
}

impl Scenario {
    pub fn expect(&self, solver: &Solver) -> Expect {
        match solver {
            Solver::Classic => self.classic,
            Solver::Solver3 => self.solver3,
        }
    }

    /// [`Scenario::expect`] under apt `apt_version` (`dpkg-query -W apt`), which decides
    /// between `expect_solver3` and `expect_solver3_since_apt`.
    pub fn expect_with_apt(&self, solver: &Solver, apt_version: &str) -> Expect {
        match (&self.solver3_since_apt, solver) {
            (Some(since), Solver::Solver3)
                if rocm_pin_core::deb::version::compare(apt_version, &since.apt)
                    .is_ok_and(|o| o.is_ge()) =>
            {
                Expect {
                    rc: since.rc,
                    verify_ok: since.verify_ok,
                }
            }
            _ => self.expect(solver),
        }
    }
}

/// Fill `{{name}}` in a script from the inputs with the package templates' renderer; a name
/// the inputs do not have is the file's mistake, caught by the unit tests rather than run as a
/// literal `{{name}}` in a chroot.
fn fill(script: &str, i: &Inputs) -> Result<String, String> {
    let n = &i.names;
    render(
        script,
        &[
            ("custom_rccl_deb", &i.custom_rccl_deb),
            ("stock_hsa_deb", &i.stock_hsa_deb),
            ("stock_hip_deb", &i.stock_hip_deb),
            ("stock_hip_request", &i.stock_hip_request),
            ("stock_hsa", &n.stock_hsa),
            ("stock_hip", &n.stock_hip),
            ("hsa_package", &n.hsa_package),
            ("hip_package", &n.hip_package),
            ("new_dependant", &n.new_dependant),
            ("dependants", &n.dependants),
            ("stock_lib_dir", &n.stock_lib_dir),
        ],
    )
    .map_err(|e| format!("{e} in {script:?}"))
}

fn parse(json: &str, i: &Inputs) -> Result<Vec<Scenario>, String> {
    let file: ScenarioFile =
        serde_json::from_str(json).map_err(|e| format!("testdata/scenarios.json: {e}"))?;
    file.scenarios
        .into_iter()
        .map(|d| {
            let classic = d.expect.unwrap_or(OK);
            Ok(Scenario {
                script: fill(&d.script, i).map_err(|e| format!("scenario {}: {e}", d.id))?,
                title: fill(&d.title, i).map_err(|e| format!("scenario {}: {e}", d.id))?,
                id: d.id,
                demo: d.demo,
                newer_stock: d.newer_stock,
                classic,
                solver3: d.expect_solver3.unwrap_or(classic),
                solver3_since_apt: d.expect_solver3_since_apt,
                show: d.show,
            })
        })
        .collect()
}

/// Every scenario, the demo's first and in the demo's order.
pub fn scenarios(i: &Inputs) -> Vec<Scenario> {
    // The file is compiled in and checked by the unit tests below: a malformed list is a
    // build of rocm-pin that must not ship, not a user's error.
    parse(SCENARIOS_JSON, i).expect("testdata/scenarios.json is checked by the unit tests")
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
        names: StockNames::amd(),
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
            names: StockNames::amd(),
        }
    }

    #[test]
    fn ids_and_titles_are_unique_and_the_seed_comes_first() {
        let v = scenarios(&inputs());
        let mut ids: Vec<&str> = v.iter().map(|s| s.id.as_str()).collect();
        let mut titles: Vec<&str> = v.iter().map(|s| s.title.as_str()).collect();
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
            .map(|s| s.id.as_str())
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

    /// The demo's and the AMD tests' texts are what they were before the names became
    /// placeholders (the demo prints the titles).
    #[test]
    fn amds_names_give_the_lists_former_texts() {
        let v = scenarios(&inputs());
        let by = |id: &str| v.iter().find(|s| s.id == id).unwrap();
        for (id, title, script) in [
            (
                "reinstall-hip",
                "apt-get install --reinstall hip-runtime-amd",
                "apt-get install --reinstall -y hip-runtime-amd",
            ),
            (
                "install-hipblas",
                "apt-get install hipblas (a new dependant)",
                "apt-get install -y hipblas",
            ),
            (
                "reinstall-hsa",
                "apt-get install --reinstall hsa-rocr",
                "apt-get install --reinstall -y hsa-rocr",
            ),
            (
                "install-dependants",
                "apt-get install rocm-hip-runtime hip-dev rccl hipblas",
                "apt-get install -y rocm-hip-runtime hip-dev rccl hipblas",
            ),
            (
                "ld.so.conf.d+ldconfig",
                "the stock lib directory added to ld.so.conf.d + ldconfig",
                "echo /opt/rocm-7.2.4/lib > /etc/ld.so.conf.d/rocm.conf; ldconfig",
            ),
        ] {
            assert_eq!(
                (by(id).title.as_str(), by(id).script.as_str()),
                (title, script)
            );
        }
        assert_eq!(
            by("explicit-stock-version").title,
            "apt-get install hip-runtime-amd=<stock version>"
        );
        assert_eq!(
            by("dpkg-i-stock").title,
            "dpkg -i <stock hip-runtime-amd>.deb"
        );
        assert_eq!(
            by("force-stock-hsa+fix-broken").title,
            "dpkg -i --force-all <stock hsa-rocr>.deb; apt --fix-broken install"
        );
        assert_eq!(
            by("force-stock-hip+fix-broken").title,
            "dpkg -i --force-all <stock hip-runtime-amd>.deb; apt --fix-broken install"
        );
    }

    #[test]
    fn every_input_is_filled_and_an_unknown_one_is_refused() {
        let v = scenarios(&inputs());
        assert!(v.iter().all(|s| !s.script.contains('{')));
        assert!(v.iter().any(|s| s.script.contains("/s/hsa.deb")));
        assert!(v.iter().any(|s| s.script.contains("hip-runtime-amd=1")));
        let bad = SCENARIOS_JSON.replace("{{stock_hip_deb}}", "{{stock_hip_debb}}");
        let err = parse(&bad, &inputs()).unwrap_err();
        assert!(
            err.contains("placeholder left unfilled") && err.contains("{{stock_hip_debb}}"),
            "{err}"
        );
        let typo = SCENARIOS_JSON.replace("\"newer_stock\"", "\"newer_stok\"");
        assert!(parse(&typo, &inputs()).unwrap_err().contains("newer_stok"));
    }
}
