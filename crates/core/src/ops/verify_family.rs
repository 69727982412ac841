//! verify for a pinned family other than the runtime pair (issue 34): the pair's checks run
//! on the family's own packages and marker (ours installed and Protected, the stock absent,
//! every file, the pin file and apt's view of it, the loader mapping ours for the family's
//! SONAMEs, the loader entry, the release hold, the ABI of the programs that link them), after
//! one `family` line naming the family and what failed. Their fix commands name the family's
//! own .debs (the pair's `rocm-pin install` with no .deb reinstalls the pair, not RCCL).
//!
//! A leaf for verify: it knows the checks by name and text only (verify's `Check` type stays
//! in verify, which calls this).

use crate::host::root::Root;
use crate::rocm::PinnedFamily;

/// The `family` line: `(subject, ok, detail)` from the family's checks' `(name, subject, ok)`.
pub(crate) fn summary(
    root: &Root,
    family: &PinnedFamily,
    checks: &[(&str, &str, bool)],
) -> (String, bool, String) {
    let failed: Vec<String> = checks
        .iter()
        .filter(|(_, _, ok)| !ok)
        .map(|(name, subject, _)| {
            if subject.is_empty() {
                name.to_string()
            } else {
                format!("{name} {subject}")
            }
        })
        .collect();
    let detail = if failed.is_empty() {
        format!(
            "{}: all {} checks of the {} family passed",
            family.title,
            checks.len(),
            family.name
        )
    } else {
        format!(
            "{}: {} of {} checks of the {} family FAILED ({}); fix each as its line says, or reinstall ours: `{}`",
            family.title,
            failed.len(),
            checks.len(),
            family.name,
            failed.join(", "),
            crate::ops::install_family::reinstall_command(root, family)
        )
    };
    (
        family.name.to_string(),
        failed.is_empty() && !checks.is_empty(),
        detail,
    )
}

/// A family check's detail with the fix retargeted: the pair's reinstall command (backquoted,
/// as every check writes it) becomes the family's.
pub(crate) fn retarget_fix(root: &Root, family: &PinnedFamily, detail: String) -> String {
    let pair = format!("`{}`", crate::ops::ourdebs::reinstall_command(root));
    if !detail.contains(&pair) {
        return detail;
    }
    detail.replace(
        &pair,
        &format!(
            "`{}`",
            crate::ops::install_family::reinstall_command(root, family)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rocm::families::RCCL;

    #[test]
    fn the_family_line_names_the_family_and_what_failed() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let (subject, ok, detail) = summary(
            &root,
            &RCCL,
            &[
                ("packages", "rccl-pinned", true),
                ("stock-absent", "rccl", false),
            ],
        );
        assert_eq!(subject, "rccl");
        assert!(!ok);
        assert!(
            detail.contains("1 of 2 checks of the rccl family FAILED (stock-absent rccl)"),
            "{detail}"
        );
        assert!(detail.contains("--family rccl"), "no kept .debs: {detail}");
        let (_, ok, detail) = summary(&root, &RCCL, &[("packages", "rccl-pinned", true)]);
        assert!(ok, "{detail}");
        assert!(!summary(&root, &RCCL, &[]).1, "no check is no pass");
    }

    #[test]
    fn fixes_name_the_familys_debs() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let pair = crate::ops::ourdebs::reinstall_command(&root);
        let out = retarget_fix(&root, &RCCL, format!("gone; reinstall ours: `{pair}`"));
        assert!(!out.contains(&format!("`{pair}`")), "{out}");
        assert!(out.contains("rocm-pin package --family rccl"), "{out}");
        assert_eq!(retarget_fix(&root, &RCCL, "fine".into()), "fine");
    }
}
