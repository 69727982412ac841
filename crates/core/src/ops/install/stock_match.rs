//! Step 2 of install: each replacement against the dpkg database — which stock packages are
//! still installed, whether ours are in place, and the refusals that must come before apt runs.

use std::collections::BTreeMap;

use crate::exit::usage;
use crate::host::status::StatusEntry;
use crate::ops::ourdebs::DebFacts;

/// What step 2 found: the stock packages still installed, and whether ours are all in place.
pub(super) struct StockMatch {
    pub(super) present: Vec<StatusEntry>,
    /// Every replacement installed (`ii`) at the version given.
    pub(super) ours_current: bool,
    /// Some of ours are installed and another was force-removed (left in `rc` or gone): dpkg's
    /// database is broken on purpose, and apt only installs the missing one with
    /// `--fix-broken` (measured: without it apt keeps the removed one's status version at
    /// priority -1, offers no candidate and refuses "Unmet dependencies").
    pub(super) repair: bool,
    /// One of ours is installed at the version given but its dpkg record lost `Protected:
    /// yes` (an edited status database): only a reinstall writes the record again.
    pub(super) unprotected: bool,
    /// (stock name, the exact version our Provides carries).
    pub(super) provided: Vec<(String, String)>,
}

impl StockMatch {
    /// The stock .deb worth keeping for rollback: the exact version ours provides.
    pub(super) fn kept_for_rollback(&self, stock: &StatusEntry) -> bool {
        self.provided
            .iter()
            .any(|(n, v)| *n == stock.package && *v == stock.version)
    }
}

/// Step 2: each replacement against the dpkg database. Before ours are installed the stock
/// package must be at the exact version and architecture our Provides carry (else apt would
/// remove every `=` dependant). Once ours provide it, a stock package next to them (forced in
/// with `dpkg -i --force-all`) is only something to remove, whatever its version or state.
pub(super) fn match_stock(
    facts: &[DebFacts],
    before: &[StatusEntry],
    allow_downgrade: bool,
) -> anyhow::Result<StockMatch> {
    let by_name: BTreeMap<&str, &StatusEntry> =
        before.iter().map(|e| (e.package.as_str(), e)).collect();
    let mut m = StockMatch {
        present: Vec::new(),
        ours_current: true,
        provided: Vec::new(),
        repair: false,
        unprotected: false,
    };
    // A replacement of this set is (or was: its pin conffile left behind) on the host: a stock
    // package that is absent was replaced by ours, and installing ours back is the repair
    // (one of ours force-removed), not "nothing to replace".
    let ours_seen = facts.iter().any(|f| {
        by_name
            .get(f.package.as_str())
            .is_some_and(|e| e.has_files() || e.status.ends_with(" config-files"))
    });
    let mut absent = Vec::new();
    for f in facts {
        m.provided
            .push((f.stock_name.clone(), f.stock_version.clone()));
        let provides = format!("{} (= {})", f.stock_name, f.stock_version);
        let ours = by_name.get(f.package.as_str()).filter(|e| e.has_files());
        match ours {
            Some(o) if o.provides.contains(&provides) => {
                if o.version != f.version || !o.is_installed_ok() {
                    m.ours_current = false;
                } else if !o.protected {
                    m.unprotected = true;
                }
                if !allow_downgrade {
                    crate::ops::pinmove::refuse_downgrade(o, &f.version)?;
                }
            }
            // Ours of an older stock upload: the new replacements update them in place.
            Some(o) => {
                crate::ops::stock_upload::newer_stock_upload(o, f)?;
                m.ours_current = false;
            }
            None => m.ours_current = false,
        }
        let stock = by_name.get(f.stock_name.as_str()).filter(|e| e.has_files());
        match (stock, ours) {
            (Some(s), Some(_)) => m.present.push((*s).clone()),
            (Some(s), None) => {
                if s.version != f.stock_version || s.architecture != f.architecture {
                    return Err(usage(format!(
                        "stock {} is installed at {} ({}), but {} was built against {} ({}): apt would remove every package that depends on {} with `=` (rocm-hip-runtime, hip-dev) and exit 0. Rebuild the replacement with `rocm-pin package` against this host's stock packages.",
                        s.package, s.version, s.architecture, f.package, f.stock_version, f.architecture, s.package
                    )));
                }
                if !s.is_installed_ok() {
                    return Err(usage(format!(
                        "stock {} is in dpkg state {} ({}): fix it first (`dpkg --configure -a` / `apt-get -f install`)",
                        s.package,
                        s.abbrev(),
                        s.status
                    )));
                }
                m.present.push((*s).clone());
            }
            (None, Some(_)) => {}
            (None, None) if ours_seen => m.repair = true,
            (None, None) => absent.push(f),
        }
    }
    if !absent.is_empty() {
        return Err(usage(crate::ops::ourdebs::absent_stock_refusal(&absent)));
    }
    Ok(m)
}
