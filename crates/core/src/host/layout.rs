//! Where rocm-pin keeps its own state on a host: every path it writes, or reads back as its own,
//! under `/var/lib/rocm-pin`, `/etc/apt`, `/etc/dpkg`, `/etc/ld.so.conf.d` and `/usr/lib/rocm-pin`.
//! One table for install, adopt, rollback, the guard, verify, status, the release hold and the
//! local repository, so no operation re-derives a path by hand (docs/design.md "State layout"
//! lists each path and who writes it).
//!
//! Every path is absolute *inside* a root (`/` on a host, a chroot or image in tests):
//! readers open them through [`Root`](super::root::Root), writers through
//! `Root::host_path`. Nothing here knows a ROCm name: per-package paths take the package name.
//! apt's and dpkg's own configuration that rocm-pin only reads (`/etc/apt/sources.list`,
//! `/etc/dpkg/dpkg.cfg.d/*`, `/var/lib/dpkg`) stays with the readers of those tools.

use std::path::PathBuf;

/// The on-host layout of rocm-pin's state. A namespace (no value): the layout is the same on
/// every root.
#[derive(Debug, Clone, Copy)]
pub struct StateLayout;

impl StateLayout {
    /// rocm-pin's state directory (records, kept stock .debs, local repository, adopt work).
    pub const STATE_DIR: &'static str = "/var/lib/rocm-pin";
    /// The guard's apt hook (apt reads every file in `apt.conf.d`).
    pub const GUARD_APT_HOOK: &'static str = "/etc/apt/apt.conf.d/80rocm-pin-guard";
    /// The guard's dpkg hook (dpkg reads every file in `dpkg.cfg.d`).
    pub const GUARD_DPKG_HOOK: &'static str = "/etc/dpkg/dpkg.cfg.d/rocm-pin-guard";
    /// Where rocm-pin's own .deb installs the binary (owned by dpkg, not written by us).
    pub const PACKAGED_BINARY: &'static str = "/usr/bin/rocm-pin";
    /// Where rocm-pin's own .deb installs the guard binary (owned by dpkg, not written by us).
    pub const PACKAGED_GUARD_BINARY: &'static str = "/usr/bin/rocm-pin-guard";
    /// The private copy of the full binary the guard's hooks run when no guard binary sits
    /// beside rocm-pin and rocm-pin does not come from its .deb (and every hook file of
    /// versions before the guard binary).
    pub const GUARD_PRIVATE_COPY: &'static str = "/usr/lib/rocm-pin/rocm-pin";
    /// The private copy of the guard binary the hooks run when it does not come from the .deb.
    pub const GUARD_PRIVATE_GUARD_COPY: &'static str = "/usr/lib/rocm-pin/rocm-pin-guard";
    /// Names of adopt's work directories in [`Self::STATE_DIR`] (removed under the adopt lock).
    pub const ADOPT_WORK_PREFIX: &'static str = ".adopt-";

    fn state(name: &str) -> PathBuf {
        PathBuf::from(Self::STATE_DIR).join(name)
    }

    pub fn state_dir() -> PathBuf {
        PathBuf::from(Self::STATE_DIR)
    }
    /// The gate's skip record: install skipped on a ROCm release other than the target.
    pub fn skip_record() -> PathBuf {
        Self::state("skipped")
    }
    /// Where install keeps the stock .debs rollback reinstalls offline.
    pub fn stock_dir() -> PathBuf {
        Self::state("stock")
    }
    /// Where install keeps our own .debs, so `rocm-pin install` with no .deb given repairs
    /// the host (a replacement force-removed, a deleted pin) with the packages it installed.
    pub fn ours_dir() -> PathBuf {
        Self::state("ours")
    }
    /// The record `install --no-rollback` leaves: no stock .debs were kept on purpose.
    pub fn stock_not_kept() -> PathBuf {
        Self::state("stock-not-kept")
    }
    /// Adopt's resume record (an interrupted adoption continues from it).
    pub fn adopt_record() -> PathBuf {
        Self::state("adopt-state.json")
    }
    /// The flock that keeps adoptions one at a time.
    pub fn adopt_lock() -> PathBuf {
        Self::state("adopt.lock")
    }
    /// Where adopt keeps the in-place markers it took over.
    pub fn adopted_from() -> PathBuf {
        Self::state("adopted-from")
    }
    /// Adopt's default output directory for the .debs it makes.
    pub fn adopted_debs() -> PathBuf {
        Self::state("adopted")
    }
    /// The signed flat apt repository of `install --local-repo`.
    pub fn local_repo() -> PathBuf {
        Self::state("repo")
    }
    /// The local repository's signing key (0700 directory, secret 0600).
    pub fn local_repo_keys() -> PathBuf {
        Self::state("keys")
    }
    /// The local repository's public key, where apt's unprivileged gpgv can read it.
    pub fn local_repo_public_key() -> PathBuf {
        Self::state("repo-key.gpg")
    }
    /// The apt source of the local repository.
    pub fn local_repo_sources() -> PathBuf {
        PathBuf::from("/etc/apt/sources.list.d/rocm-pin-local.list")
    }
    /// The apt preferences that let only our package names come from the local repository.
    pub fn local_repo_preferences() -> PathBuf {
        PathBuf::from("/etc/apt/preferences.d/rocm-pin-local")
    }
    /// The release hold (`install --hold-release`): apt preferences keeping the release.
    pub fn release_hold() -> PathBuf {
        PathBuf::from("/etc/apt/preferences.d/rocm-pin-release-hold")
    }
    /// The apt pin a replacement package ships (a conffile) keeping its stock name at -1.
    pub fn pin_file(replacement_package: &str) -> PathBuf {
        PathBuf::from("/etc/apt/preferences.d").join(replacement_package)
    }
    /// The loader entry our package's maintainer scripts own. Never the stock entry's name:
    /// a later run of the stock scripts would delete it.
    pub fn loader_entry(replacement_package: &str) -> PathBuf {
        PathBuf::from("/etc/ld.so.conf.d").join(format!("{replacement_package}.conf"))
    }
    /// Where the provenance marker lives on a host whose runtime has no `/opt/rocm-*` prefix
    /// with an `.info/` directory (Debian's own packages install under `/usr/lib/<triplet>`):
    /// shipped by our package under the state directory instead.
    pub const MARKER_DIR: &'static str = "/var/lib/rocm-pin/marker";

    /// The marker of one architecture in [`Self::MARKER_DIR`]: a `Multi-Arch: same` package may
    /// not ship one path with different contents per architecture.
    pub fn prefixless_marker(architecture: &str) -> PathBuf {
        PathBuf::from(Self::MARKER_DIR).join(format!("{architecture}.json"))
    }
}

#[cfg(test)]
mod tests {
    use super::StateLayout as L;

    /// Every path is absolute, clean and distinct: two records can never share a file, and a
    /// root joins each as `<root>/<path>`.
    #[test]
    fn paths_are_absolute_clean_and_distinct() {
        let paths = [
            L::state_dir(),
            L::skip_record(),
            L::stock_dir(),
            L::stock_not_kept(),
            L::adopt_record(),
            L::adopt_lock(),
            L::adopted_from(),
            L::adopted_debs(),
            L::local_repo(),
            L::local_repo_keys(),
            L::local_repo_public_key(),
            L::local_repo_sources(),
            L::local_repo_preferences(),
            L::release_hold(),
            L::pin_file("p-pinned"),
            L::loader_entry("p-pinned"),
            L::prefixless_marker("amd64"),
            L::GUARD_APT_HOOK.into(),
            L::GUARD_DPKG_HOOK.into(),
            L::GUARD_PRIVATE_COPY.into(),
            L::GUARD_PRIVATE_GUARD_COPY.into(),
        ];
        assert!(L::prefixless_marker("amd64").starts_with(L::state_dir()));
        let mut seen = std::collections::BTreeSet::new();
        for p in &paths {
            let s = p.to_str().unwrap();
            assert!(crate::host::root::unclean_in_root_path(s).is_none(), "{s}");
            assert!(seen.insert(s.to_string()), "{s} twice");
        }
    }
}
