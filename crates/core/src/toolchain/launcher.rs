//! `--compiler-launcher ccache|sccache`: CMake runs every C/C++ compile through the launcher
//! (`CMAKE_<LANG>_COMPILER_LAUNCHER`), whose cache — local, or shared between machines through
//! its remote backend (ccache `remote_storage`, e.g. `redis://host:6379` or `http://…`; sccache's
//! `SCCACHE_REDIS_ENDPOINT`, `SCCACHE_WEBDAV_ENDPOINT`, …) — is configured the launcher's own
//! way (its config file or environment). A cache hit returns the object file the same compile
//! produced, so the built bytes do not depend on it: the launcher is recorded in the manifest
//! (program, version, cache configuration with any credentials removed) but is not part of the
//! staging's cache key.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::prereq::{self, ProbeEnv};
use crate::exit::usage;
use crate::toolchain::ToolchainError;

/// Which launcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Launcher {
    Ccache,
    Sccache,
}

impl Launcher {
    pub(crate) fn parse(text: &str) -> anyhow::Result<Launcher> {
        match text {
            "ccache" => Ok(Launcher::Ccache),
            "sccache" => Ok(Launcher::Sccache),
            other => Err(usage(format!(
                "--compiler-launcher {other:?}: choose ccache or sccache"
            ))),
        }
    }

    pub(crate) fn program(self) -> &'static str {
        match self {
            Launcher::Ccache => "ccache",
            Launcher::Sccache => "sccache",
        }
    }

    /// The Debian package that ships it (for the prerequisite check).
    pub(crate) fn package(self) -> &'static str {
        self.program()
    }

    /// Where it is on PATH, or a usage error naming the package.
    pub(crate) fn locate(self, env: &ProbeEnv) -> anyhow::Result<PathBuf> {
        prereq::find_program(env, self.program()).ok_or_else(|| {
            ToolchainError::MissingLauncher {
                tool: self.program().to_string(),
                package: self.package().to_string(),
            }
            .into()
        })
    }

    /// The configure arguments that put it in front of the C and C++ compilers.
    pub(crate) fn cmake_defines(program: &std::path::Path) -> Vec<String> {
        ["C", "CXX"]
            .iter()
            .map(|lang| format!("-DCMAKE_{lang}_COMPILER_LAUNCHER={}", program.display()))
            .collect()
    }
}

/// What the manifest records about the launcher.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LauncherRecord {
    pub program: String,
    /// First line of `<program> --version`.
    pub version: Option<String>,
    /// Cache settings in effect (ccache's `remote_storage`, `remote_only`, `cache_dir`; sccache's
    /// `SCCACHE_*` variables), credentials removed from URLs.
    pub config: BTreeMap<String, String>,
}

/// `scheme://user:secret@host/…` → `scheme://host/…` (also inside `|`-separated ccache lists).
pub(crate) fn redact_credentials(value: &str) -> String {
    value
        .split(' ')
        .map(|word| match word.split_once("://") {
            Some((scheme, rest)) => {
                let (authority, tail) = match rest.find('/') {
                    Some(i) => rest.split_at(i),
                    None => (rest, ""),
                };
                match authority.rsplit_once('@') {
                    Some((_, host)) => format!("{scheme}://{host}{tail}"),
                    None => word.to_string(),
                }
            }
            None => word.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn ccache_config(program: &std::path::Path, env: &ProbeEnv) -> BTreeMap<String, String> {
    let mut config = BTreeMap::new();
    for key in ["remote_storage", "remote_only", "cache_dir", "base_dir"] {
        if let Some(v) = prereq::version_line(program, &["--get-config", key], env) {
            config.insert(key.to_string(), redact_credentials(&v));
        }
    }
    config
}

fn sccache_config() -> BTreeMap<String, String> {
    std::env::vars()
        .filter(|(k, _)| k.starts_with("SCCACHE_") && !k.contains("KEY") && !k.contains("TOKEN"))
        .filter(|(k, _)| !k.contains("PASSWORD") && !k.contains("SECRET"))
        .map(|(k, v)| (k, redact_credentials(&v)))
        .collect()
}

/// The record for `launcher` found at `program`.
pub(crate) fn record(
    launcher: Launcher,
    program: &std::path::Path,
    env: &ProbeEnv,
) -> LauncherRecord {
    LauncherRecord {
        program: launcher.program().to_string(),
        version: prereq::version_line(program, &["--version"], env),
        config: match launcher {
            Launcher::Ccache => ccache_config(program, env),
            Launcher::Sccache => sccache_config(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::Failure;

    #[test]
    fn a_launcher_not_on_path_names_its_package() {
        let empty = tempfile::tempdir().unwrap();
        let env = ProbeEnv {
            path: Some(empty.path().as_os_str().to_owned()),
            ..ProbeEnv::default()
        };
        let err = Launcher::parse("sccache")
            .unwrap()
            .locate(&env)
            .unwrap_err();
        assert!(
            matches!(err.downcast_ref::<ToolchainError>(),
                Some(ToolchainError::MissingLauncher { tool, package }) if tool == "sccache" && package == "sccache"),
            "{err:?}"
        );
        assert!(
            err.to_string().contains("apt-get install -y sccache"),
            "{err}"
        );
        let err = Launcher::parse("distcc").unwrap_err();
        assert!(
            matches!(err.downcast_ref::<Failure>(), Some(Failure::Usage(_))),
            "{err:?}"
        );
    }

    #[test]
    fn credentials_never_reach_the_manifest() {
        assert_eq!(
            redact_credentials("redis://user:hunter2@127.0.0.1:6379/0|connect-timeout=50"),
            "redis://127.0.0.1:6379/0|connect-timeout=50"
        );
        assert_eq!(
            redact_credentials("http://cache.example:8080/ccache file:///srv/c"),
            "http://cache.example:8080/ccache file:///srv/c"
        );
        assert_eq!(redact_credentials("https://tok@h"), "https://h");
    }

    #[test]
    fn only_the_two_known_launchers() {
        assert_eq!(Launcher::parse("ccache").unwrap(), Launcher::Ccache);
        assert_eq!(Launcher::parse("sccache").unwrap(), Launcher::Sccache);
        assert!(Launcher::parse("distcc").is_err());
        assert_eq!(
            Launcher::cmake_defines(std::path::Path::new("/usr/bin/ccache")),
            [
                "-DCMAKE_C_COMPILER_LAUNCHER=/usr/bin/ccache",
                "-DCMAKE_CXX_COMPILER_LAUNCHER=/usr/bin/ccache"
            ]
        );
    }
}
