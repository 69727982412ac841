//! Installing ours made against a newer stock upload over ours made against the older one:
//! an update in place, no rollback first (kept apart from install.rs, which is near its size
//! limit, and from package_update.rs, which reads rollback's state).

/// Ours installed as `installed` provide an older upload of the stock `new` is made against:
/// installing `new` updates them in place (no rollback). Anything else — an older stock, or a
/// Provides that cannot be read — is refused as before: install the matching replacement.
pub(crate) fn newer_stock_upload(
    installed: &crate::host::status::StatusEntry,
    new: &super::ourdebs::DebFacts,
) -> anyhow::Result<()> {
    let provided = provided_version(&installed.provides, &new.stock_name);
    if let Some(v) = &provided {
        if crate::deb::version::compare(&new.stock_version, v)
            .is_ok_and(|o| o == std::cmp::Ordering::Greater)
        {
            return Ok(());
        }
    }
    Err(crate::exit::usage(format!(
        "{} {} is installed and provides {} {}, while {} is made against {} {}: only a newer stock upload updates in place; install the matching replacement or roll back first",
        installed.package,
        installed.version,
        new.stock_name,
        provided.as_deref().unwrap_or("at an unreadable version"),
        new.package,
        new.stock_name,
        new.stock_version
    )))
}

/// The exact version `Provides` (a control field's value) gives `name`, if any.
fn provided_version(provides: &str, name: &str) -> Option<String> {
    provides.split(',').find_map(|item| {
        let item = item.trim();
        let rest = item.strip_prefix(name)?.trim_start();
        let v = rest.strip_prefix("(=")?.trim().strip_suffix(')')?;
        Some(v.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_provided_version_is_read_by_exact_name() {
        let p = "libhsa-runtime64-1-x (= 1), libhsa-runtime64-1 (= 7.2.4-1~exp2)";
        assert_eq!(
            provided_version(p, "libhsa-runtime64-1").as_deref(),
            Some("7.2.4-1~exp2")
        );
        assert_eq!(provided_version(p, "libamdhip64-7"), None);
    }
}
