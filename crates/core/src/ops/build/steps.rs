//! The command list: one function ([`build_steps`]) returns the exact commands of a build for a
//! given tree and options, so `--dry-run` prints exactly what [`run_step`] runs. Generic CMake
//! orchestration; the ROCm specifics (options, LLVM wiring) come from [`super::recipe`].

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;

use crate::ops::build::refused;
use crate::rocm::recipe::{self, ConfigureInputs, TreeKind};

/// Lines of a failed step's log quoted in the error.
pub(crate) const LOG_TAIL_LINES: usize = 40;

/// One command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cmd {
    pub program: String,
    pub args: Vec<String>,
    /// Extra environment (added to the inherited one).
    pub env: Vec<(String, String)>,
    /// Directories put in front of the inherited PATH.
    pub path_prepend: Vec<PathBuf>,
}

impl Cmd {
    pub(crate) fn new<I, S>(program: &str, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Cmd {
            program: program.to_string(),
            args: args.into_iter().map(|a| a.as_ref().to_string()).collect(),
            env: vec![],
            path_prepend: vec![],
        }
    }

    fn with_env(mut self, env: &[(String, String)], path_prepend: &[PathBuf]) -> Self {
        self.env = env.to_vec();
        self.path_prepend = path_prepend.to_vec();
        self
    }
}

/// Quote for a POSIX shell only when needed, so the printed line can be pasted.
pub(crate) fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    '-' | '_' | '.' | '/' | '=' | ':' | ',' | '+' | '@' | '%' | '^' | '{' | '}'
                )
        });
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

impl fmt::Display for Cmd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut words: Vec<String> = vec![];
        if !self.env.is_empty() || !self.path_prepend.is_empty() {
            words.push("env".into());
            if !self.path_prepend.is_empty() {
                let dirs: Vec<String> = self
                    .path_prepend
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                words.push(format!("PATH={}:\"$PATH\"", shell_quote(&dirs.join(":"))));
            }
            for (k, v) in &self.env {
                // A `$(…)` value is a command substitution the dry run shows for a value only
                // known after an earlier step (the commit time of a URL checkout): keep it live.
                if v.starts_with("$(") && v.ends_with(')') && !v.contains('"') {
                    words.push(format!("{k}=\"{v}\""));
                } else {
                    words.push(format!("{k}={}", shell_quote(v)));
                }
            }
        }
        words.push(shell_quote(&self.program));
        words.extend(self.args.iter().map(|a| shell_quote(a)));
        f.write_str(&words.join(" "))
    }
}

/// A named step: files it writes first, then its commands, all logged to `<logs>/<name>.log`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Step {
    pub name: String,
    pub writes: Vec<(PathBuf, String)>,
    pub commands: Vec<Cmd>,
}

/// The CMake generator: Ninja when available, else Unix Makefiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub(crate) enum Generator {
    Ninja,
    Make,
}

impl Generator {
    pub(crate) fn cmake_name(self) -> &'static str {
        match self {
            Generator::Ninja => "Ninja",
            Generator::Make => "Unix Makefiles",
        }
    }
    pub(crate) fn program(self) -> &'static str {
        match self {
            Generator::Ninja => "ninja",
            Generator::Make => "make",
        }
    }
}

/// Where everything goes under the output directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// `DIR`: the install (lib/, include/, …) and the manifest.
    pub staging: PathBuf,
    /// `DIR/logs/<step>.log`.
    pub logs: PathBuf,
    /// `DIR/.work`: checkout, build trees, ROCr's private prefix; safe to delete after a build.
    pub work: PathBuf,
    /// `DIR/.work/src`: the checkout when `--source` is a URL.
    pub checkout: PathBuf,
    pub rocr_build: PathBuf,
    pub clr_build: PathBuf,
    /// ROCr's private install prefix CLR builds against.
    pub rocr_prefix: PathBuf,
    pub cmake_dir: PathBuf,
}

/// Names of the by-products in `DIR` that are not part of the install.
pub(crate) const WORK_DIR: &str = ".work";
pub(crate) const LOGS_DIR: &str = "logs";

impl Layout {
    pub(crate) fn new(staging: &Path) -> Layout {
        let work = staging.join(WORK_DIR);
        Layout {
            staging: staging.to_path_buf(),
            logs: staging.join(LOGS_DIR),
            checkout: work.join("src"),
            rocr_build: work.join("build/rocr"),
            clr_build: work.join("build/clr"),
            rocr_prefix: work.join("rocr-prefix"),
            cmake_dir: work.join("cmake"),
            work,
        }
    }
}

/// Everything [`build_steps`] needs.
#[derive(Debug, Clone)]
pub(crate) struct StepInputs<'a> {
    pub kind: TreeKind,
    pub source_dir: &'a Path,
    pub rocm: &'a Path,
    pub layout: &'a Layout,
    pub jobs: u32,
    pub generator: Generator,
    /// SOURCE_DATE_EPOCH value: the commit's committer time, or a placeholder for `--dry-run`.
    pub source_date_epoch: String,
    pub rocm_patch_version: Option<&'a str>,
    pub rocr_cmake_args: &'a [String],
    pub clr_cmake_args: &'a [String],
    /// `--llvm-dir` (None: `<rocm>/llvm`).
    pub llvm_dir: Option<&'a Path>,
    /// `--compiler-launcher`, resolved to its path.
    pub launcher: Option<&'a Path>,
    /// Skip ROCr's configure, build and private install: its stage is cached (same inputs).
    pub rocr_cached: bool,
}

/// Environment of every configure/build/install command. The build makes no network call and
/// gives the same names whatever the clone depth: hipamd's configure runs `git fetch --unshallow`
/// (refused here; it is ERROR_QUIET upstream) and names libraries after `git rev-parse --short`,
/// whose length otherwise grows with the object count of the clone. The same commit built from
/// another directory gives the same bytes: `-ffile-prefix-map` rewrites the checkout and work
/// paths that `__FILE__` and friends would embed (CFLAGS/CXXFLAGS seed CMake's flags on the first
/// configure, and the user's own flags are kept in front).
pub(crate) fn reproducible_env(
    source_date_epoch: &str,
    source_dir: &Path,
    work: &Path,
) -> Vec<(String, String)> {
    let maps = format!(
        "-ffile-prefix-map={}=. -ffile-prefix-map={}=.work",
        source_dir.display(),
        work.display()
    );
    let flags = |var: &str| match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => format!("{} {maps}", v.trim()),
        _ => maps.clone(),
    };
    let mut env: Vec<(String, String)> = [
        ("GIT_CONFIG_COUNT", "2"),
        ("GIT_CONFIG_KEY_0", "core.abbrev"),
        ("GIT_CONFIG_VALUE_0", "7"),
        ("GIT_CONFIG_KEY_1", "protocol.allow"),
        ("GIT_CONFIG_VALUE_1", "never"),
        ("SOURCE_DATE_EPOCH", source_date_epoch),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    env.push(("CFLAGS".into(), flags("CFLAGS")));
    env.push(("CXXFLAGS".into(), flags("CXXFLAGS")));
    env
}

/// The exact build: configure, build and install ROCr into its private prefix; configure CLR
/// against it (ROCr's prefix first on CMAKE_PREFIX_PATH, its headers first on the include path),
/// build, install into the staging directory; finally install ROCr into the staging directory too.
pub(crate) fn build_steps(i: &StepInputs) -> Vec<Step> {
    let l = i.layout;
    let env = reproducible_env(&i.source_date_epoch, i.source_dir, &l.work);
    let llvm_root = i
        .llvm_dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| i.rocm.join("llvm"));
    let rocr_path = recipe::rocr_path_prepend(i.kind, &llvm_root);
    let llvm = i
        .kind
        .rocm_toolchain
        .then(|| recipe::llvm_wiring(&llvm_root, &l.cmake_dir.join("llvm-shim")));
    let inputs = ConfigureInputs {
        kind: i.kind,
        source_dir: i.source_dir,
        rocm: i.rocm,
        rocr_prefix: &l.rocr_prefix,
        staging: &l.staging,
        llvm: llvm.as_ref(),
        rocm_patch_version: i.rocm_patch_version,
        llvm_dir: i.llvm_dir,
        launcher: i.launcher,
    };
    let include_first = rocr_headers_first(l);
    let rocr_defines = recipe::rocr_defines(&inputs);
    let mut clr_defines = recipe::clr_defines(&inputs);
    clr_defines.push(format!(
        "-DCMAKE_PROJECT_INCLUDE={}",
        include_first.0.display()
    ));

    let cmake = Cmake {
        generator: i.generator,
        env: &env,
        jobs: i.jobs.to_string(),
    };
    let mut steps = vec![];
    steps.extend(cmake.project_steps(CmakeProject {
        name: "rocr",
        source: i.source_dir.join(recipe::ROCR_PROJECT),
        build: &l.rocr_build,
        defines: rocr_defines,
        extra_args: i.rocr_cmake_args,
        writes: llvm.map(|w| w.shims).unwrap_or_default(),
        path_prepend: &rocr_path,
    }));
    steps.extend(cmake.project_steps(CmakeProject {
        name: "clr",
        source: i.source_dir.join(recipe::CLR_PROJECT),
        build: &l.clr_build,
        defines: clr_defines,
        extra_args: i.clr_cmake_args,
        writes: vec![include_first],
        path_prepend: &[],
    }));
    steps.push(Step {
        name: "stage-rocr".into(),
        writes: vec![],
        commands: vec![Cmd::new(
            "cmake",
            [
                "--install",
                &l.rocr_build.display().to_string(),
                "--prefix",
                &l.staging.display().to_string(),
            ],
        )
        .with_env(&env, &rocr_path)],
    });
    if i.rocr_cached {
        steps.retain(|s| !ROCR_STAGE_STEPS.contains(&s.name.as_str()));
    }
    steps
}

/// The CMake project include file that puts the freshly built ROCr's headers first, and its
/// text. Include directories added BEFORE at directory scope precede every target include
/// directory and usage requirement, so a stock hsa.h under $ROCM/include cannot win.
/// (-I in CMAKE_CXX_FLAGS would not: CMake puts <FLAGS> after <INCLUDES>.)
fn rocr_headers_first(l: &Layout) -> (PathBuf, String) {
    let path = l.cmake_dir.join("rocr-headers-first.cmake");
    let text = format!(
        "# Written by rocm-pin: the freshly built ROCr's headers come first on the include path.\n\
         include_directories(BEFORE \"{}\")\n",
        l.rocr_prefix.join("include").display()
    );
    (path, text)
}

/// What every CMake command of the build shares.
struct Cmake<'a> {
    generator: Generator,
    env: &'a [(String, String)],
    jobs: String,
}

/// One CMake project to configure, build and install into its `CMAKE_INSTALL_PREFIX`.
struct CmakeProject<'a> {
    /// `rocr` or `clr`: the steps are `configure-<name>`, `build-<name>`, `install-<name>`.
    name: &'a str,
    source: PathBuf,
    build: &'a Path,
    defines: Vec<String>,
    /// The user's extra configure arguments, after ours so they win.
    extra_args: &'a [String],
    /// Files the configure step writes first.
    writes: Vec<(PathBuf, String)>,
    path_prepend: &'a [PathBuf],
}

impl Cmake<'_> {
    /// The configure, build and install steps of `project`, in that order.
    fn project_steps(&self, project: CmakeProject<'_>) -> [Step; 3] {
        let build = project.build.display().to_string();
        let mut configure = vec![
            "-S".to_string(),
            project.source.display().to_string(),
            "-B".into(),
            build.clone(),
            "-G".into(),
            self.generator.cmake_name().into(),
        ];
        configure.extend(project.defines);
        configure.extend(project.extra_args.iter().cloned());
        let cmd =
            |args: Vec<String>| Cmd::new("cmake", args).with_env(self.env, project.path_prepend);
        [
            Step {
                name: format!("configure-{}", project.name),
                writes: project.writes,
                commands: vec![cmd(configure)],
            },
            Step {
                name: format!("build-{}", project.name),
                writes: vec![],
                commands: vec![cmd(vec![
                    "--build".into(),
                    build.clone(),
                    "--parallel".into(),
                    self.jobs.clone(),
                ])],
            },
            Step {
                name: format!("install-{}", project.name),
                writes: vec![],
                commands: vec![cmd(vec!["--install".into(), build])],
            },
        ]
    }
}

/// The steps that make ROCr's stage (its build tree and private prefix), skipped when cached.
pub(crate) const ROCR_STAGE_STEPS: &[&str] = &["configure-rocr", "build-rocr", "install-rocr"];

/// Run one step: write its files, run its commands with output appended to `<logs>/<name>.log`.
/// On failure the error names the command, the log and quotes its last [`LOG_TAIL_LINES`] lines.
pub(crate) fn run_step(step: &Step, logs: &Path) -> anyhow::Result<()> {
    for (path, text) in &step.writes {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    std::fs::create_dir_all(logs).with_context(|| format!("creating {}", logs.display()))?;
    let log_path = logs.join(format!("{}.log", step.name));
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    for cmd in &step.commands {
        writeln!(log, "$ {cmd}").with_context(|| format!("writing {}", log_path.display()))?;
        let mut command = Command::new(&cmd.program);
        command.args(&cmd.args).stdin(Stdio::null());
        for (k, v) in &cmd.env {
            command.env(k, v);
        }
        if !cmd.path_prepend.is_empty() {
            let mut dirs = cmd.path_prepend.clone();
            if let Some(current) = std::env::var_os("PATH") {
                dirs.extend(std::env::split_paths(&current));
            }
            command.env(
                "PATH",
                std::env::join_paths(dirs).context("building PATH for the step")?,
            );
        }
        let out = log
            .try_clone()
            .with_context(|| format!("opening {}", log_path.display()))?;
        let err = log
            .try_clone()
            .with_context(|| format!("opening {}", log_path.display()))?;
        command.stdout(out).stderr(err);
        let status = match command.status() {
            Ok(s) => s,
            Err(e) => {
                return Err(refused(format!(
                    "step {} could not start `{}`: {e}\n  command: {cmd}\n  log: {}",
                    step.name,
                    cmd.program,
                    log_path.display()
                )))
            }
        };
        if !status.success() {
            return Err(refused(format!("step {} failed ({status})\n  command: {cmd}\n  log: {}\n--- last {LOG_TAIL_LINES} lines of {} ---\n{}", step.name, log_path.display(), log_path.display(), log_tail(&log_path, LOG_TAIL_LINES))));
        }
    }
    Ok(())
}

/// The last `n` lines of a log (lossy UTF-8).
pub(crate) fn log_tail(path: &Path, n: usize) -> String {
    crate::process::tail_lines(&std::fs::read(path).unwrap_or_default(), n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_commands_are_shell_exact() {
        let c = Cmd::new(
            "cmake",
            ["-DCMAKE_PREFIX_PATH=/a;/b", "--parallel", "3", "it's"],
        )
        .with_env(
            &[("SOURCE_DATE_EPOCH".into(), "17".into())],
            &[PathBuf::from("/opt/rocm/llvm/bin")],
        );
        assert_eq!(
            c.to_string(),
            "env PATH=/opt/rocm/llvm/bin:\"$PATH\" SOURCE_DATE_EPOCH=17 cmake \
             '-DCMAKE_PREFIX_PATH=/a;/b' --parallel 3 'it'\\''s'"
        );
    }

    #[test]
    fn failing_step_quotes_the_log_tail() {
        let dir = tempfile::tempdir().unwrap();
        let step = Step {
            name: "fails".into(),
            writes: vec![(dir.path().join("w/file.txt"), "x".into())],
            commands: vec![Cmd::new(
                "sh",
                ["-c", "for i in $(seq 1 100); do echo line$i; done; exit 3"],
            )],
        };
        let err = run_step(&step, &dir.path().join("logs"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("line100") && err.contains("line61"), "{err}");
        assert!(!err.contains("line60\n"), "{err}");
        assert!(err.contains("logs/fails.log"), "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("w/file.txt")).unwrap(),
            "x"
        );
    }
}
