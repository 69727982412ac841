//! Prerequisite checks: programs on PATH, headers, libraries, Python modules and files. Every
//! missing item is collected and reported in ONE error with the package that provides it, before
//! anything compiles. Knows nothing of ROCm: the list comes from `rocm::recipe`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::toolchain::{MissingItem, ToolchainError};

/// How to tell whether a prerequisite is present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Probe {
    /// Any of these programs on PATH.
    Program(Vec<String>),
    /// A header (relative path such as `numa.h`) in the system include directories.
    Header(String),
    /// A shared library file name (e.g. `libGL.so`) in the system library directories.
    Library(String),
    /// `python3 -c "import <module>"` succeeds.
    PythonModule(String),
    /// This exact file or directory exists.
    Path(PathBuf),
    /// Any of these files or directories exists.
    AnyPath(Vec<PathBuf>),
}

/// One thing the build needs and the package that provides it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Requirement {
    /// What a person would call it, e.g. "C++ compiler".
    pub what: String,
    pub probe: Probe,
    /// Debian package that provides it (what `apt-get install` takes).
    pub package: String,
    /// Extra instruction when the package alone is not enough (e.g. a pip module).
    pub note: Option<String>,
}

impl Requirement {
    pub(crate) fn new(what: &str, probe: Probe, package: &str) -> Self {
        Requirement {
            what: what.to_string(),
            probe,
            package: package.to_string(),
            note: None,
        }
    }
    pub(crate) fn with_note(mut self, note: &str) -> Self {
        self.note = Some(note.to_string());
        self
    }
}

/// The environment probes look in. `path` is the PATH to search (the process PATH by default).
#[derive(Debug, Clone)]
pub(crate) struct ProbeEnv {
    pub path: Option<OsString>,
    pub include_dirs: Vec<PathBuf>,
    pub library_dirs: Vec<PathBuf>,
}

impl Default for ProbeEnv {
    fn default() -> Self {
        let triple = multiarch_triple();
        let mut include_dirs = vec![
            PathBuf::from("/usr/include"),
            PathBuf::from("/usr/local/include"),
        ];
        let mut library_dirs = vec![
            PathBuf::from("/usr/lib"),
            PathBuf::from("/usr/local/lib"),
            PathBuf::from("/usr/lib64"),
            PathBuf::from("/lib"),
        ];
        if let Some(t) = triple {
            include_dirs.push(PathBuf::from(format!("/usr/include/{t}")));
            library_dirs.push(PathBuf::from(format!("/usr/lib/{t}")));
            library_dirs.push(PathBuf::from(format!("/lib/{t}")));
        }
        ProbeEnv {
            path: std::env::var_os("PATH"),
            include_dirs,
            library_dirs,
        }
    }
}

/// Debian's multiarch directory name for this machine (`x86_64-linux-gnu`).
pub(crate) fn multiarch() -> Option<&'static str> {
    multiarch_triple()
}

fn multiarch_triple() -> Option<&'static str> {
    match std::env::consts::ARCH {
        "x86_64" => Some("x86_64-linux-gnu"),
        "aarch64" => Some("aarch64-linux-gnu"),
        "powerpc64" => Some("powerpc64le-linux-gnu"),
        "riscv64" => Some("riscv64-linux-gnu"),
        _ => None,
    }
}

/// Find `program` on the PATH of `env`: the first executable regular file.
pub(crate) fn find_program(env: &ProbeEnv, program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
        let p = PathBuf::from(program);
        return p.is_file().then_some(p);
    }
    let path = env.path.as_ref()?;
    std::env::split_paths(path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// The first of `programs` found on PATH.
pub(crate) fn find_any_program(env: &ProbeEnv, programs: &[String]) -> Option<PathBuf> {
    programs.iter().find_map(|p| find_program(env, p))
}

fn present(env: &ProbeEnv, probe: &Probe) -> bool {
    match probe {
        Probe::Program(names) => find_any_program(env, names).is_some(),
        Probe::Header(rel) => env.include_dirs.iter().any(|d| d.join(rel).is_file()),
        Probe::Library(name) => env.library_dirs.iter().any(|d| d.join(name).exists()),
        Probe::PythonModule(module) => {
            let Some(python) = find_program(env, "python3") else {
                return false;
            };
            let mut cmd = std::process::Command::new(python);
            cmd.arg("-c").arg(format!("import {module}"));
            if let Some(p) = &env.path {
                cmd.env("PATH", p);
            }
            cmd.stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false)
        }
        Probe::Path(p) => p.exists(),
        Probe::AnyPath(ps) => ps.iter().any(|p| p.exists()),
    }
}

fn describe(probe: &Probe) -> String {
    match probe {
        Probe::Program(names) => format!(
            "program {}",
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        ),
        Probe::Header(rel) => format!("header <{rel}>"),
        Probe::Library(name) => format!("library {name}"),
        Probe::PythonModule(m) => format!("Python module {m}"),
        Probe::Path(p) => format!("{}", p.display()),
        Probe::AnyPath(ps) => ps
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" or "),
    }
}

/// The requirements whose probe fails.
pub(crate) fn missing<'a>(env: &ProbeEnv, reqs: &'a [Requirement]) -> Vec<&'a Requirement> {
    reqs.iter().filter(|r| !present(env, &r.probe)).collect()
}

/// Check everything; one error listing every missing item with its package, or Ok.
pub(crate) fn check(env: &ProbeEnv, reqs: &[Requirement], context: &str) -> anyhow::Result<()> {
    let missing = missing(env, reqs);
    if missing.is_empty() {
        return Ok(());
    }
    Err(ToolchainError::MissingPrerequisites {
        context: context.to_string(),
        missing: missing
            .iter()
            .map(|r| MissingItem {
                what: r.what.clone(),
                looked_for: describe(&r.probe),
                package: r.package.clone(),
                note: r.note.clone(),
            })
            .collect(),
    }
    .into())
}

/// First line of `<program> <args>` output (stdout, else stderr), for the manifest's tool list.
pub(crate) fn version_line(program: &Path, args: &[&str], env: &ProbeEnv) -> Option<String> {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    if let Some(p) = &env.path {
        cmd.env("PATH", p);
    }
    let out = cmd.stdin(std::process::Stdio::null()).output().ok()?;
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    String::from_utf8_lossy(&text)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with_path(dir: &Path) -> ProbeEnv {
        ProbeEnv {
            path: Some(dir.as_os_str().to_owned()),
            include_dirs: vec![dir.join("include")],
            library_dirs: vec![dir.join("lib")],
        }
    }

    #[test]
    fn reports_every_missing_item_once_with_packages() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("present-tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(dir.path().join("include/libdrm")).unwrap();
        std::fs::write(dir.path().join("include/libdrm/drm.h"), "").unwrap();
        let env = env_with_path(dir.path());
        let reqs = vec![
            Requirement::new(
                "tool",
                Probe::Program(vec!["present-tool".into()]),
                "tool-pkg",
            ),
            Requirement::new("cmake", Probe::Program(vec!["cmake-nope".into()]), "cmake"),
            Requirement::new("drm", Probe::Header("libdrm/drm.h".into()), "libdrm-dev"),
            Requirement::new("numa", Probe::Header("numa.h".into()), "libnuma-dev"),
            Requirement::new("GL", Probe::Library("libGL.so".into()), "libglvnd-dev")
                .with_note("GL"),
        ];
        let err = check(&env, &reqs, "the test tree").unwrap_err();
        match err.downcast_ref::<ToolchainError>() {
            Some(ToolchainError::MissingPrerequisites { context, missing }) => {
                assert_eq!(context, "the test tree");
                let packages: Vec<&str> = missing.iter().map(|m| m.package.as_str()).collect();
                assert_eq!(packages, ["cmake", "libnuma-dev", "libglvnd-dev"]);
                assert_eq!(missing[0].looked_for, "program `cmake-nope`");
                assert_eq!(missing[2].note.as_deref(), Some("GL"));
            }
            other => panic!("not MissingPrerequisites: {other:?}"),
        }
        assert_eq!(crate::error::exit_code_for(&err), 2);
        let err = err.to_string();
        assert!(err.contains("3 items"), "{err}");
        assert!(
            err.contains("`cmake`") && err.contains("libnuma-dev"),
            "{err}"
        );
        assert!(
            err.contains("apt-get install -y cmake libglvnd-dev libnuma-dev"),
            "{err}"
        );
        assert!(
            !err.contains("tool-pkg") && !err.contains("libdrm-dev"),
            "{err}"
        );
    }

    #[test]
    fn a_non_executable_file_is_not_a_program() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cmake"), "").unwrap();
        assert!(find_program(&env_with_path(dir.path()), "cmake").is_none());
    }
}
