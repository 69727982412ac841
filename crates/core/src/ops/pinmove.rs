//! The commit pin moves: a newer pin replaces the installed one through apt (same package
//! names, higher version); going back to an older pin is an explicit decision.

use std::cmp::Ordering;

use crate::exit::usage;
use crate::host::status::StatusEntry;
use crate::ops::ourdebs::error::InstallError;
use crate::rocm;

/// Refuse installing `version` over the installed `ours` when it is older: a downgrade to an
/// earlier pin must be asked for (`--allow-downgrade`), never happen because an old .deb was
/// at hand.
pub(crate) fn refuse_downgrade(ours: &StatusEntry, version: &str) -> anyhow::Result<()> {
    let order = crate::deb::version::compare(version, &ours.version).map_err(|e| {
        usage(format!(
            "cannot compare versions {version} and {}: {e}",
            ours.version
        ))
    })?;
    if order != Ordering::Less {
        return Ok(());
    }
    Err(InstallError::Downgrade {
        package: ours.package.clone(),
        installed: ours.version.clone(),
        installed_commit: ours
            .extra
            .get(rocm::COMMIT_FIELD)
            .map(String::as_str)
            .unwrap_or("?")
            .to_string(),
        offered: version.to_string(),
    }
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::Failure;

    #[test]
    fn an_older_pin_is_a_refused_downgrade_and_a_newer_one_is_not() {
        let ours = StatusEntry {
            package: "hip-runtime-amd-pinned".into(),
            version: "7.2.4+pin2".into(),
            extra: [(rocm::COMMIT_FIELD.to_string(), "c2".to_string())].into(),
            ..StatusEntry::default()
        };
        let err = refuse_downgrade(&ours, "7.2.4+pin1").unwrap_err();
        assert!(
            matches!(err.downcast_ref::<InstallError>(),
                Some(InstallError::Downgrade { package, installed, installed_commit, offered })
                    if package == "hip-runtime-amd-pinned" && installed == "7.2.4+pin2"
                        && installed_commit == "c2" && offered == "7.2.4+pin1"),
            "{err:?}"
        );
        assert!(err.to_string().contains("--allow-downgrade"), "{err}");
        assert_eq!(crate::error::exit_code_for(&err), 2);
        refuse_downgrade(&ours, "7.2.4+pin2").unwrap();
        refuse_downgrade(&ours, "7.2.4+pin3").unwrap();
        let err = refuse_downgrade(&ours, "not a version!").unwrap_err();
        assert!(
            matches!(err.downcast_ref::<Failure>(), Some(Failure::Usage(_))),
            "{err:?}"
        );
    }
}
