//! `rocm-pin install --local-repo`: our .debs in a signed flat apt repository on the host
//! (`/var/lib/rocm-pin/repo`), so `apt-get install --reinstall hip-runtime-amd` really
//! reinstalls ours instead of printing "cannot be downloaded". The key is generated on the host
//! (rpgp, `crate::ops::repo`); the source uses `signed-by=`; a preferences file lets only our
//! package names come from it.

use std::path::PathBuf;

use anyhow::Context;

use super::ourdebs::DebFacts;
use crate::host::layout::StateLayout;
use crate::host::refused;
use crate::host::root::Root;
use crate::ops::repo::{self, RepoOptions};

/// The preferences that keep everything but our package names from the local repository.
pub(crate) fn preferences(packages: &[String]) -> String {
    format!(
        "Explanation: rocm-pin --local-repo: only {names} may come from the local repository\nPackage: {names}\nPin: release o=rocm-pin\nPin-Priority: 500\n\nExplanation: nothing else from it\nPackage: *\nPin: release o=rocm-pin\nPin-Priority: -1\n",
        names = packages.join(" ")
    )
}

/// Publish `facts`' .debs, (re)write the source and the preferences, refresh that source only.
pub(crate) fn publish(root: &Root, facts: &[DebFacts]) -> anyhow::Result<()> {
    let keys = root.host_path(StateLayout::local_repo_keys());
    std::fs::create_dir_all(&keys).with_context(|| format!("cannot create {}", keys.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o700))?;
    }
    let secret = keys.join("repo-key.asc");
    let public = keys.join("repo-key.pub.gpg");
    if !secret.exists() {
        repo::keygen(
            &secret,
            "rocm-pin local repository (generated on this host)",
        )
        .context("generating the local repository's signing key")?;
    }
    let out = root.host_path(StateLayout::local_repo());
    let mut opts = RepoOptions::new(&out);
    opts.flat = true;
    opts.sign_key = Some(secret.clone());
    let debs: Vec<PathBuf> = facts.iter().map(|f| f.path.clone()).collect();
    repo::publish(&debs, &opts, &crate::progress::Silent)
        .context("publishing our .debs in the local repository")?;
    if !public.exists() {
        return Err(refused(format!(
            "{} is missing after keygen",
            public.display()
        )));
    }
    // apt's gpgv runs as the unprivileged _apt user: the public key goes where it can read it
    // (the secret stays 0600 inside the 0700 key directory).
    let pub_in_root = StateLayout::local_repo_public_key();
    let pub_host = root.host_path(&pub_in_root);
    std::fs::copy(&public, &pub_host)
        .with_context(|| format!("cannot write {}", pub_host.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&pub_host, std::fs::Permissions::from_mode(0o644))?;
    }
    let pub_in_root = pub_in_root.display().to_string();
    let src = root.host_path(StateLayout::local_repo_sources());
    std::fs::write(
        &src,
        format!(
            "# rocm-pin --local-repo: our replacement packages, signed by a key made on this host\ndeb [signed-by={pub_in_root}] file:{} ./\n",
            StateLayout::local_repo().display()
        ),
    )
    .with_context(|| format!("cannot write {}", src.display()))?;
    let names: Vec<String> = facts.iter().map(|f| f.package.clone()).collect();
    let prefs = root.host_path(StateLayout::local_repo_preferences());
    std::fs::write(&prefs, preferences(&names))
        .with_context(|| format!("cannot write {}", prefs.display()))?;
    // Refresh only our source.
    let out = crate::host::apt::apt_command(root, "apt-get")
        .args(["update", "-q"])
        .arg("-o")
        .arg(format!(
            "Dir::Etc::sourcelist={}",
            StateLayout::local_repo_sources().display()
        ))
        .args([
            "-o",
            "Dir::Etc::sourceparts=-",
            "-o",
            "APT::Get::List-Cleanup=0",
        ])
        .output()
        .context("cannot run apt-get update")?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success()
        || text.contains("\nW: ")
        || text.contains("\nE: ")
        || text.starts_with("E: ")
    {
        return Err(refused(format!(
            "apt-get update of the local repository failed ({}):\n{}",
            out.status,
            text.trim()
        )));
    }
    Ok(())
}

/// Take the local repository away (rollback): source, preferences, repository; the key stays.
pub(crate) fn remove(root: &Root) -> anyhow::Result<bool> {
    let mut any = false;
    for p in [
        StateLayout::local_repo_sources(),
        StateLayout::local_repo_preferences(),
    ] {
        let h = root.host_path(&p);
        if h.exists() {
            std::fs::remove_file(&h).with_context(|| format!("cannot remove {}", h.display()))?;
            any = true;
        }
    }
    let r = root.host_path(StateLayout::local_repo());
    if r.exists() {
        std::fs::remove_dir_all(&r).with_context(|| format!("cannot remove {}", r.display()))?;
        any = true;
    }
    Ok(any)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preferences_parse_and_name_only_ours() {
        let p = preferences(&["hsa-rocr-pinned".into(), "hip-runtime-amd-pinned".into()]);
        let s = crate::host::apt::parse_preferences(&p).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0].packages,
            vec!["hsa-rocr-pinned", "hip-runtime-amd-pinned"]
        );
        assert_eq!(s[0].priority, 500);
        assert_eq!(s[1].packages, vec!["*"]);
        assert_eq!(s[1].priority, -1);
    }
}
