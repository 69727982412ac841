//! What apt could move next, for `rocm-pin status`: a newer commit pin of ours, and a newer
//! stock ROCm release of the pair this pin replaces (held back by our pins), with the two ways
//! forward. Read-only (`apt-cache policy`).

use std::cmp::Ordering;

use crate::host::apt;
use crate::host::root::Root;
use crate::host::status::StatusEntry;
use crate::rocm::stock_runtime::StockRuntime;
use crate::rocm::{self, Marker};

/// A package with a newer version than the one installed (ours) or replaced (stock).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Available {
    pub package: String,
    /// Installed version (ours) or the stock version our Provides carries (stock).
    pub current: String,
    pub newest: String,
    /// apt's pin priority of `newest` (-1: held back by our pin).
    pub priority: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Upgrades {
    /// A newer pin of our packages that `apt-get upgrade` would install.
    pub ours: Vec<Available>,
    /// Newer stock versions of the replaced pair (apt keeps them back: our pin).
    pub stock: Vec<Available>,
    /// Packages the release hold keeps at the installed release although apt has newer ones.
    pub held: Vec<Available>,
    /// The ROCm release of the newest stock pair, when newer than this pin's target.
    pub stock_release: Option<String>,
    pub target_release: Option<String>,
    /// What the admin can do about a newer stock release.
    pub ways_forward: Vec<String>,
    /// apt-cache policy failed: why.
    pub error: Option<String>,
}

fn newer(a: &str, b: &str) -> bool {
    crate::deb::version::compare(a, b).is_ok_and(|o| o == Ordering::Greater)
}

fn newest(p: &apt::Policy) -> Option<(String, i64)> {
    p.versions
        .iter()
        .cloned()
        .reduce(|a, b| if newer(&b.0, &a.0) { b } else { a })
}

/// On a host without ours: the stock runtime packages found that apt has a newer candidate
/// for than the installed version.
pub(crate) fn stock_candidates(
    root: &Root,
    runtimes: &[StockRuntime],
) -> anyhow::Result<Vec<Available>> {
    let installed: Vec<(&str, &str)> = runtimes
        .iter()
        .flat_map(|r| &r.packages)
        .map(|p| (p.package.as_str(), p.version.as_str()))
        .collect();
    if installed.is_empty() {
        return Ok(Vec::new());
    }
    let names: Vec<String> = installed.iter().map(|(n, _)| n.to_string()).collect();
    let pols = apt::policy(root, &names)?;
    Ok(installed
        .into_iter()
        .filter_map(|(name, current)| {
            let p = pols.iter().find(|p| p.package == name)?;
            let c = p.candidate.clone().filter(|c| newer(c, current))?;
            let priority = p.versions.iter().find(|(v, _)| v == &c).map_or(0, |v| v.1);
            Some(Available {
                package: name.to_string(),
                current: current.to_string(),
                newest: c,
                priority,
            })
        })
        .collect())
}

pub(crate) fn available(root: &Root, ours: &[StatusEntry], marker: &Marker) -> Upgrades {
    let spec = marker.layout().spec();
    let mut names: Vec<String> = ours.iter().map(|e| e.package.clone()).collect();
    names.extend(marker.replaced.iter().map(|r| r.stock_name.clone()));
    let hold = crate::host::hold::read(root);
    names.extend(hold.iter().map(|(n, _)| n.clone()));
    let mut up = Upgrades {
        target_release: marker
            .replaced
            .first()
            .and_then(|r| spec.release_of_version(&r.stock_version)),
        ..Default::default()
    };
    let pols = match apt::policy(root, &names) {
        Ok(p) => p,
        Err(e) => {
            up.error = Some(format!("{e:#}"));
            return up;
        }
    };
    for e in ours {
        if let Some(c) = pols
            .iter()
            .find(|p| p.package == e.package)
            .and_then(|p| p.candidate.clone())
        {
            if newer(&c, &e.version) {
                up.ours.push(Available {
                    package: e.package.clone(),
                    current: e.version.clone(),
                    newest: c,
                    priority: 0,
                });
            }
        }
    }
    for r in &marker.replaced {
        let Some((v, prio)) = pols
            .iter()
            .find(|p| p.package == r.stock_name)
            .and_then(newest)
        else {
            continue;
        };
        if newer(&v, &r.stock_version) {
            up.stock.push(Available {
                package: r.stock_name.clone(),
                current: r.stock_version.clone(),
                newest: v,
                priority: prio,
            });
        }
    }
    for (n, v) in &hold {
        if let Some((newest_v, prio)) = pols.iter().find(|p| &p.package == n).and_then(newest) {
            if newer(&newest_v, v) {
                up.held.push(Available {
                    package: n.clone(),
                    current: v.clone(),
                    newest: newest_v,
                    priority: prio,
                });
            }
        }
    }
    up.stock_release = up
        .stock
        .iter()
        .filter_map(|a| spec.release_of_version(&a.newest))
        .max_by(|a, b| crate::deb::version::compare(a, b).unwrap_or(Ordering::Equal));
    if let Some(rel) = &up.stock_release {
        let debs = up
            .stock
            .iter()
            .map(|a| format!("{}_{}.deb", a.package, a.newest))
            .collect::<Vec<_>>()
            .join(" ");
        up.ways_forward = if up.target_release.as_ref() == Some(rel) {
            same_release_ways_forward(rel, &up.stock, marker)
        } else {
            vec![
            format!(
                "stock {rel} without the backport: `rocm-pin rollback && apt full-upgrade`"
            ),
            format!(
                "keep the backport on {rel}: that needs a pin built for {rel} (the backport on {rel}'s sources, a rocm-pin whose version gate targets {rel} — this one targets {} —, `rocm-pin package --stock-deb {debs}`), then `rocm-pin rollback && apt full-upgrade && rocm-pin install <the {rel} pin's .debs>`; until then apt keeps {rel} back",
                rocm::TARGET_ROCM_VERSION
            ),
        ]
        };
    }
    up
}

/// The placeholder in the update-in-place way forward: the one fact rocm-pin cannot know.
const STAGING_PLACEHOLDER: &str = "<the build you packaged from>";

/// A newer upload of the release ours replace (Debian's `-2` of 7.2.4): the same backport
/// applies, the replacements only need making against the new stock, and installing them
/// updates ours in place (packages that depend on the stock with `=`, AMD's metas, move to
/// their new upload in the same transaction).
fn same_release_ways_forward(rel: &str, stock: &[Available], marker: &Marker) -> Vec<String> {
    let pins = stock
        .iter()
        .map(|a| format!("{}={}", a.package, a.newest))
        .collect::<Vec<_>>()
        .join(" ");
    vec![
        format!("the new {rel} upload without the backport: `rocm-pin rollback && apt full-upgrade`"),
        format!(
            "keep the backport, updated in place against the new upload: `cd \"$(mktemp -d)\" && apt-get download {pins} && rocm-pin package --staging {STAGING_PLACEHOLDER} --commit {} --commit-time {} --stock-deb ./*.deb --out new && rocm-pin install new/*.deb`; until then apt keeps it back",
            marker.commit, marker.commit_time
        ),
    ]
}
