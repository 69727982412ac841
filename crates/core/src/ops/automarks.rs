//! apt's auto/manual marks across install and rollback (issue 32): `apt-get install` of a
//! local .deb marks it manually installed, so install-then-rollback turned automatically
//! installed stock packages (pulled in by `rocminfo`, `librocfft0`) into manual ones that
//! `apt autoremove` never takes. The mark travels with the swap: install marks ours auto where
//! the stock it replaces was, rollback marks the stock auto where ours was.

use std::collections::BTreeSet;

use anyhow::Context;

use crate::host::root::Root;

/// Which of `names` apt marks automatically installed (`apt-mark showauto`).
pub(crate) fn auto_installed(root: &Root, names: &[String]) -> anyhow::Result<BTreeSet<String>> {
    if names.is_empty() {
        return Ok(BTreeSet::new());
    }
    // All of them, filtered here: apt-mark stops on a name it does not know (a stock package
    // a repair finds absent).
    let out = crate::host::apt::apt_command(root, "apt-mark")
        .arg("showauto")
        .output()
        .context("cannot run apt-mark showauto")?;
    if !out.status.success() {
        anyhow::bail!(
            "apt-mark showauto failed ({}): {}",
            out.status,
            crate::process::tail_lines(&out.stderr, 5)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split(':').next().unwrap_or(l).trim().to_string())
        .filter(|n| names.contains(n))
        .collect())
}

/// Mark `names` automatically installed (`apt-mark auto`); nothing when empty. Returns the
/// action line for the report.
pub(crate) fn mark_auto(root: &Root, names: &[String]) -> anyhow::Result<Option<String>> {
    if names.is_empty() {
        return Ok(None);
    }
    let out = crate::host::apt::apt_command(root, "apt-mark")
        .arg("auto")
        .args(names)
        .output()
        .context("cannot run apt-mark auto")?;
    if !out.status.success() {
        anyhow::bail!(
            "apt-mark auto {} failed ({}): {}",
            names.join(" "),
            out.status,
            crate::process::tail_lines(&out.stderr, 5)
        );
    }
    Ok(Some(format!(
        "kept apt's automatically-installed mark: apt-mark auto {}",
        names.join(" ")
    )))
}

/// Before install's apt run: which stock packages ours replace are automatically installed.
pub(crate) fn stock_auto(
    root: &Root,
    facts: &[crate::ops::ourdebs::DebFacts],
) -> anyhow::Result<BTreeSet<String>> {
    let stock: Vec<String> = facts.iter().map(|f| f.stock_name.clone()).collect();
    auto_installed(root, &stock)
}

/// After install's apt run: ours marked auto where the stock it replaced was.
pub(crate) fn carry_to_ours(
    root: &Root,
    facts: &[crate::ops::ourdebs::DebFacts],
    auto: &BTreeSet<String>,
) -> anyhow::Result<Option<String>> {
    let swap: Vec<(String, String)> = facts
        .iter()
        .map(|f| (f.stock_name.clone(), f.package.clone()))
        .collect();
    mark_auto(root, &carried(&swap, auto))
}

/// The packages of `pairs` (`(from, to)`) whose `from` is in `auto`: the `to` names to mark.
pub(crate) fn carried(pairs: &[(String, String)], auto: &BTreeSet<String>) -> Vec<String> {
    pairs
        .iter()
        .filter(|(from, _)| auto.contains(from))
        .map(|(_, to)| to.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_goes_to_the_package_taking_the_place() {
        let pairs = vec![
            (
                "libhsa-runtime64-1".to_string(),
                "libhsa-runtime64-1-pinned".to_string(),
            ),
            (
                "libamdhip64-7".to_string(),
                "libamdhip64-7-pinned".to_string(),
            ),
        ];
        let auto: BTreeSet<String> = ["libamdhip64-7".to_string()].into();
        assert_eq!(carried(&pairs, &auto), vec!["libamdhip64-7-pinned"]);
        assert!(carried(&pairs, &BTreeSet::new()).is_empty());
    }
}
