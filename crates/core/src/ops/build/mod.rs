//! `rocm-pin build`: check out the pinned source, build ROCr, then CLR against it, into a
//! staging tree with a `rocm-pin-build.json` manifest. (Issue 3.)
//!
//! Order: options → source (local checks or sparse blobless fetch) → prerequisites (all missing
//! items in one error) → cache lookup → clean staging → cmake steps (logs in `DIR/logs`) →
//! validation (fail closed) → cache key → manifest, written last: its presence means success.
//!
//! `DIR` holds the install as `cmake --install` lays it out (`lib/`, `include/`, …), the manifest,
//! and two by-products that are not part of the install: `DIR/logs/` and `DIR/.work/` (checkout,
//! build trees, ROCr's private prefix, cache key).

pub(crate) mod cache;
mod error;
pub(crate) mod manifest;
pub(crate) mod patches;
pub(crate) mod source;
pub(crate) mod stage;
mod staging_dir;
pub(crate) mod steps;
pub(crate) mod validate;

pub use crate::rocm::recipe::{TreeKind, ROCM_SYSTEMS};
pub(crate) use error::refused;
pub use error::{BadInput, BuildError};
pub use manifest::{BuildManifest, ManifestLibrary, MANIFEST_FILE};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;

use crate::exit::usage;
use crate::progress::{self, Listener};
use crate::rocm::{real_tree, recipe};
use crate::toolchain::prereq::ProbeEnv;
use crate::toolchain::{launcher, prereq};
use source::SourceSpec;
pub use staging_dir::StagingLock;
use staging_dir::{claim_staging, clean_staging, remove_any};
use steps::{Generator, Layout, Step, StepInputs};

/// Environment variable that sets the job count when `--jobs` is not given.
pub const JOBS_ENV: &str = "MAX_JOBS";

/// What to build and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildOptions {
    /// Git URL or local checkout.
    pub source: String,
    /// Full commit id; defaults to [`crate::rocm::PIN_COMMIT`].
    pub commit: String,
    /// The ROCm install the build uses (resolved through its symlink chain).
    pub rocm_path: PathBuf,
    /// `--jobs`; None → `MAX_JOBS`, else the number of CPUs.
    pub jobs: Option<u32>,
    /// The staging directory `DIR`.
    pub out: PathBuf,
    /// Ignore the cache and build from clean.
    pub rebuild: bool,
    /// Refuse an HSA library without the backport symbol (default true).
    pub backport_check: bool,
    /// `ROCM_PATCH_VERSION` for ROCr and CLR (e.g. 70204: library names then match stock ones).
    pub rocm_patch_version: Option<String>,
    /// Extra arguments appended to ROCr's / CLR's configure command.
    pub rocr_cmake_args: Vec<String>,
    pub clr_cmake_args: Vec<String>,
    /// `--llvm-dir`: LLVM/Clang outside `<rocm>/llvm` (Debian's `/usr/lib/llvm-22`).
    pub llvm_dir: Option<PathBuf>,
    /// `--patches DIR`: its `*.patch`/`*.diff` in name order, applied first.
    pub patches_dir: Option<PathBuf>,
    /// `--patch FILE` (repeatable), applied after `patches_dir`'s, in order.
    pub patches: Vec<PathBuf>,
    /// `--compiler-launcher ccache|sccache`.
    pub compiler_launcher: Option<String>,
    /// The kinds of tree this build accepts, tried in order: the real rocm-systems tree by
    /// default; a caller adds its own (the test kit's stand-in).
    pub trees: Vec<TreeKind>,
}

impl BuildOptions {
    pub fn new(source: impl Into<String>, out: impl Into<PathBuf>) -> Self {
        BuildOptions {
            source: source.into(),
            commit: crate::rocm::PIN_COMMIT.to_string(),
            rocm_path: PathBuf::from(crate::rocm::DEFAULT_ROCM_PATH),
            jobs: None,
            out: out.into(),
            rebuild: false,
            backport_check: true,
            rocm_patch_version: None,
            rocr_cmake_args: vec![],
            clr_cmake_args: vec![],
            llvm_dir: None,
            patches_dir: None,
            patches: vec![],
            compiler_launcher: None,
            trees: vec![recipe::ROCM_SYSTEMS],
        }
    }

    /// The toolchain description the recipe uses, for `rocm` (the resolved ROCm path).
    fn toolchain<'a>(
        &'a self,
        rocm: &'a Path,
        llvm_dir: Option<&'a Path>,
    ) -> recipe::Toolchain<'a> {
        recipe::Toolchain {
            rocm,
            llvm_dir,
            clr_cmake_args: &self.clr_cmake_args,
            rocr_cmake_args: &self.rocr_cmake_args,
        }
    }
}

/// The result of a build.
#[derive(Debug, Clone)]
pub struct BuildOutcome {
    /// `DIR`, absolute.
    pub staging: PathBuf,
    pub manifest: BuildManifest,
    /// True when the staging was reused without building.
    pub cache_hit: bool,
    pub tree: TreeKind,
    pub warnings: Vec<String>,
}

/// Where the job count came from, for the plan header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobsSource {
    Flag,
    Env,
    Cpus,
}

/// `--jobs`, else `MAX_JOBS` (must be a positive integer), else the number of CPUs.
pub fn resolve_jobs(
    flag: Option<u32>,
    env_value: Option<&str>,
) -> anyhow::Result<(u32, JobsSource)> {
    if let Some(n) = flag {
        if n == 0 {
            return Err(usage("--jobs must be at least 1"));
        }
        return Ok((n, JobsSource::Flag));
    }
    if let Some(v) = env_value {
        return match v.trim().parse::<u32>() {
            Ok(n) if n > 0 => Ok((n, JobsSource::Env)),
            _ => Err(usage(format!(
                "{JOBS_ENV}={v:?} is not a positive integer (unset it or pass --jobs N)"
            ))),
        };
    }
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    Ok((u32::try_from(cpus).unwrap_or(u32::MAX), JobsSource::Cpus))
}

fn jobs_from_env(opts: &BuildOptions) -> anyhow::Result<(u32, JobsSource)> {
    let env = std::env::var(JOBS_ENV).ok();
    resolve_jobs(opts.jobs, env.as_deref())
}

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    if path.is_absolute() {
        Ok(path.to_path_buf())
    } else {
        Ok(std::env::current_dir()
            .context("reading the current directory")?
            .join(path))
    }
}

/// The ROCm path resolved through its symlink chain; when it does not resolve, the path as given
/// (the real tree then fails its prerequisite check on ROCm's LLVM; the stand-in does not need it).
fn resolve_rocm(path: &Path) -> anyhow::Result<(PathBuf, bool)> {
    let path = absolute(path)?;
    match crate::rocm::resolve_rocm_path(&crate::host::root::Root::system(), &path) {
        Ok((resolved, _hops)) => Ok((resolved, true)),
        Err(_) => Ok((path, false)),
    }
}

fn choose_generator(env: &ProbeEnv) -> Generator {
    if prereq::find_program(env, "ninja").is_some() {
        Generator::Ninja
    } else {
        Generator::Make
    }
}

/// Tool name → first line of its version output, for the manifest and the cache key.
fn tool_versions(
    env: &ProbeEnv,
    generator: Generator,
    kind: TreeKind,
    tc: &recipe::Toolchain,
) -> BTreeMap<String, String> {
    let mut tools = BTreeMap::new();
    let mut add = |name: &str, program: Option<PathBuf>, args: &[&str]| {
        if let Some(p) = program {
            if let Some(v) = prereq::version_line(&p, args, env) {
                tools.insert(name.to_string(), v);
            }
        }
    };
    let from_env_or = |var: &str, names: &[&str]| -> Option<PathBuf> {
        std::env::var(var)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .and_then(|v| prereq::find_program(env, v.split_whitespace().next().unwrap_or("")))
            .or_else(|| {
                prereq::find_any_program(
                    env,
                    &names.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                )
            })
    };
    add("cmake", prereq::find_program(env, "cmake"), &["--version"]);
    add("git", prereq::find_program(env, "git"), &["--version"]);
    add(
        "cc",
        from_env_or("CC", &["cc", "gcc", "clang"]),
        &["--version"],
    );
    add(
        "c++",
        from_env_or("CXX", &["c++", "g++", "clang++"]),
        &["--version"],
    );
    add(
        generator.program(),
        prereq::find_program(env, generator.program()),
        &["--version"],
    );
    if kind.rocm_toolchain {
        let clang = tc.clang();
        add(
            if tc.llvm_dir.is_some() {
                "llvm"
            } else {
                "rocm-llvm"
            },
            clang.is_file().then_some(clang),
            &["--version"],
        );
        let dirs = real_tree::comgr_package_dirs(tc.rocm, tc.llvm_dir);
        if let Some((dir, version)) = real_tree::comgr_version(&dirs) {
            tools.insert(
                "amd_comgr".to_string(),
                format!("{version} ({})", dir.display()),
            );
        }
    }
    tools
}

/// What the source and the tree are, before anything runs.
struct Prepared {
    spec: SourceSpec,
    commit: String,
    staging: PathBuf,
    layout: Layout,
    rocm: PathBuf,
    rocm_resolved: bool,
    jobs: u32,
    jobs_source: JobsSource,
    env: ProbeEnv,
    /// `--llvm-dir`, absolute.
    llvm_dir: Option<PathBuf>,
    series: Vec<patches::Patch>,
    launcher: Option<(launcher::Launcher, PathBuf)>,
    trees: Vec<TreeKind>,
}

impl Prepared {
    fn checkout(&self) -> stage::Checkout<'_> {
        stage::Checkout {
            spec: &self.spec,
            commit: &self.commit,
            layout: &self.layout,
            series: &self.series,
        }
    }
}

fn prepare(opts: &BuildOptions) -> anyhow::Result<Prepared> {
    let commit = source::normalize_commit(&opts.commit)?;
    let spec = SourceSpec::parse(&opts.source)?;
    let staging = absolute(&opts.out)?;
    let (rocm, rocm_resolved) = resolve_rocm(&opts.rocm_path)?;
    let (jobs, jobs_source) = jobs_from_env(opts)?;
    if let Some(v) = &opts.rocm_patch_version {
        if v.is_empty() || !v.chars().all(|c| c.is_ascii_digit()) {
            return Err(usage(format!(
                "--rocm-patch-version {v:?} must be digits (e.g. 70204)"
            )));
        }
    }
    if let SourceSpec::Local(dir) = &spec {
        if staging.starts_with(dir) {
            return Err(usage(format!(
                "--out {} is inside the source checkout {}: the build would dirty the tree it \
                 checks; choose a directory outside it",
                staging.display(),
                dir.display()
            )));
        }
    }
    let series = patches::load_series(opts.patches_dir.as_deref(), &opts.patches)?;
    let llvm_dir = match &opts.llvm_dir {
        Some(d) => {
            let d = absolute(d)?;
            if !d.is_dir() {
                return Err(usage(format!(
                    "--llvm-dir {} is not a directory (Debian: /usr/lib/llvm-<N> from clang-<N>)",
                    d.display()
                )));
            }
            Some(d)
        }
        None => None,
    };
    let env = ProbeEnv::default();
    let launcher = match &opts.compiler_launcher {
        Some(name) => {
            let l = launcher::Launcher::parse(name)?;
            Some((l, l.locate(&env)?))
        }
        None => None,
    };
    Ok(Prepared {
        layout: Layout::new(&staging),
        spec,
        commit,
        staging,
        rocm,
        rocm_resolved,
        jobs,
        jobs_source,
        env,
        llvm_dir,
        series,
        launcher,
        trees: opts.trees.clone(),
    })
}

/// Where the tree is built from: the user's checkout as it is, or the tool's own checkout (a
/// URL fetch, or a shared clone of a local checkout when a patch series is applied).
fn source_dir(p: &Prepared) -> PathBuf {
    match &p.spec {
        SourceSpec::Local(dir) if p.series.is_empty() => dir.clone(),
        _ => p.layout.checkout.clone(),
    }
}

fn step_inputs<'a>(
    p: &'a Prepared,
    opts: &'a BuildOptions,
    kind: TreeKind,
    source_dir: &'a Path,
    generator: Generator,
    source_date_epoch: String,
) -> StepInputs<'a> {
    StepInputs {
        kind,
        source_dir,
        rocm: &p.rocm,
        layout: &p.layout,
        jobs: p.jobs,
        generator,
        source_date_epoch,
        rocm_patch_version: opts.rocm_patch_version.as_deref(),
        rocr_cmake_args: &opts.rocr_cmake_args,
        clr_cmake_args: &opts.clr_cmake_args,
        llvm_dir: p.llvm_dir.as_deref(),
        launcher: p.launcher.as_ref().map(|(_, path)| path.as_path()),
        rocr_cached: false,
    }
}

/// The shell form of the commit time, for a dry run that cannot know it yet.
fn commit_time_substitution(dir: &Path, commit: &str) -> String {
    format!(
        "$(git -C {} show -s --format=%ct {commit})",
        steps::shell_quote(&dir.display().to_string())
    )
}

/// The `--dry-run` output: the exact commands a build would run, in order, as shell lines, with
/// `#` comments for what is not a command (checks, files written, validation). Runs nothing that
/// changes anything; a URL source is assumed to be the real rocm-systems tree.
pub fn plan(opts: &BuildOptions) -> anyhow::Result<Vec<String>> {
    let p = prepare(opts)?;
    let src = source_dir(&p);
    let mut lines = vec![];
    let (kind, epoch) = match &p.spec {
        SourceSpec::Local(dir) => {
            let kind = local_tree_kind(dir, &p.trees, "")?;
            let epoch = source::commit_time(dir, &p.commit)
                .map(|t| t.to_string())
                .unwrap_or_else(|_| commit_time_substitution(dir, &p.commit));
            (kind, epoch)
        }
        SourceSpec::Url(_) => (
            recipe::ROCM_SYSTEMS,
            commit_time_substitution(&p.layout.checkout, &p.commit),
        ),
    };
    let generator = choose_generator(&p.env);
    let jobs_from = match p.jobs_source {
        JobsSource::Flag => "--jobs",
        JobsSource::Env => JOBS_ENV,
        JobsSource::Cpus => "the number of CPUs",
    };
    lines.push(format!(
        "# rocm-pin build: {}, commit {}, {} jobs (from {jobs_from})",
        kind.describe(),
        p.commit,
        p.jobs
    ));
    lines.push(format!(
        "# ROCm path: {}{}",
        p.rocm.display(),
        if p.rocm_resolved {
            ""
        } else {
            " (does not exist here)"
        }
    ));
    match &p.spec {
        SourceSpec::Local(dir) => {
            lines.push(format!(
                "# source: local checkout {}; refused unless HEAD is {} and the build paths are clean",
                dir.display(),
                p.commit
            ));
            lines.extend(
                source::local_check_commands(dir, crate::rocm::SOURCE_PATHS)
                    .iter()
                    .map(|c| c.to_string()),
            );
        }
        SourceSpec::Url(url) => {
            lines.push(format!(
                "# step fetch (sparse, blobless, depth 1) from {url}"
            ));
            lines.extend(
                source::fetch_commands(
                    url,
                    &p.commit,
                    &p.layout.checkout,
                    crate::rocm::SOURCE_PATHS,
                )
                .iter()
                .map(|c| c.to_string()),
            );
        }
    }
    if let Some(l) = &p.llvm_dir {
        lines.push(format!(
            "# toolchain: LLVM/Clang from --llvm-dir {}",
            l.display()
        ));
    }
    if let Some((l, path)) = &p.launcher {
        lines.push(format!(
            "# compiler launcher: {} ({}), CMAKE_C/CXX_COMPILER_LAUNCHER",
            l.program(),
            path.display()
        ));
    }
    lines.extend(stage::plan_lines(&p.checkout()));
    let tc = opts.toolchain(&p.rocm, p.llvm_dir.as_deref());
    lines.push(format!(
        "# prerequisites checked for {}: {}",
        kind.describe(),
        recipe::requirements_for(kind, &tc)
            .iter()
            .map(|r| r.package.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    ));
    if kind.rocm_toolchain {
        lines.push(format!(
            "# then checked on the tree: comgr's version against {} and {}'s AMDGPU targets \
             against ROCr's hard-coded lists",
            real_tree::COMGR_REQUEST_FILE,
            tc.clang().display()
        ));
    }
    let inputs = step_inputs(&p, opts, kind, &src, generator, epoch);
    for step in steps::build_steps(&inputs) {
        lines.push(format!(
            "# step {} (log: {})",
            step.name,
            p.layout.logs.join(format!("{}.log", step.name)).display()
        ));
        for (path, _) in &step.writes {
            lines.push(format!("# write {}", path.display()));
        }
        lines.extend(step.commands.iter().map(|c| c.to_string()));
    }
    lines.push(format!(
        "# then: validate the install in {} and write {}",
        p.staging.display(),
        p.staging.join(MANIFEST_FILE).display()
    ));
    Ok(lines)
}

fn run_steps(steps: &[Step], logs: &Path, listener: &dyn Listener) -> anyhow::Result<()> {
    for step in steps {
        progress::step(listener, &step.name, || steps::run_step(step, logs))?;
    }
    Ok(())
}

/// Fetch the URL source into the work directory (reusing a clean checkout at the commit).
fn fetch(url: &str, p: &Prepared, listener: &dyn Listener) -> anyhow::Result<()> {
    let dir = &p.layout.checkout;
    if dir.join(".git").exists()
        && source::check_local(dir, &p.commit, crate::rocm::SOURCE_PATHS).is_ok()
    {
        listener.info(&format!(
            "reusing the checkout of {} in {}",
            p.commit,
            dir.display()
        ));
        return Ok(());
    }
    if dir.exists() {
        remove_any(dir)?;
    }
    std::fs::create_dir_all(&p.layout.work)
        .with_context(|| format!("creating {}", p.layout.work.display()))?;
    let step = Step {
        name: "fetch".into(),
        writes: vec![],
        commands: source::fetch_commands(url, &p.commit, dir, crate::rocm::SOURCE_PATHS),
    };
    run_steps(std::slice::from_ref(&step), &p.layout.logs, listener)?;
    source::verify_fetched(dir, &p.commit)
}

fn write_manifest(staging: &Path, manifest: &BuildManifest) -> anyhow::Result<()> {
    let path = staging.join(MANIFEST_FILE);
    let tmp = staging.join(format!(".{MANIFEST_FILE}.tmp"));
    let mut text = serde_json::to_string_pretty(manifest)?;
    text.push('\n');
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
}

const SKIP_IN_STAGING: &[&str] = &[steps::WORK_DIR, steps::LOGS_DIR, MANIFEST_FILE];

/// Build (or reuse) the staging tree. See the module documentation for the order of things.
pub fn build(opts: &BuildOptions, listener: &dyn Listener) -> anyhow::Result<BuildOutcome> {
    let started = Instant::now();
    let p = prepare(opts)?;
    let validate_opts = validate::ValidateOptions {
        backport_check: opts.backport_check,
    };
    let generator = choose_generator(&p.env);
    let tc = opts.toolchain(&p.rocm, p.llvm_dir.as_deref());

    // Source and prerequisites. A local tree is checked in full before anything else; a URL can
    // only be told apart after the fetch, so the base set is checked first, the rest after.
    let kind = check_source(&p, &tc, listener)?;
    if !p.rocm_resolved {
        listener.warn(&format!(
            "ROCm path {} does not exist; building without a ROCm install",
            p.rocm.display()
        ));
    }
    let rocm_version = recipe::rocm_version(&p.rocm);

    let tools = tool_versions(&p.env, generator, kind.unwrap_or(recipe::ROCM_SYSTEMS), &tc);
    let key = cache::CacheKey {
        format: cache::CACHE_FORMAT,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        commit: p.commit.clone(),
        source: p.spec.display(),
        rocm_path: p.rocm.display().to_string(),
        rocm_version: rocm_version.clone(),
        generator: generator.cmake_name().to_string(),
        tools: tools.clone(),
        rocm_patch_version: opts.rocm_patch_version.clone(),
        rocr_cmake_args: opts.rocr_cmake_args.clone(),
        clr_cmake_args: opts.clr_cmake_args.clone(),
        llvm_dir: p.llvm_dir.as_ref().map(|d| d.display().to_string()),
        patches: p.series.iter().map(|x| x.record.clone()).collect(),
        backport_check: opts.backport_check,
    };

    let _lock = claim_staging(&p.layout)?;
    if opts.rebuild {
        listener.info("--rebuild: ignoring any cached staging");
    } else if let Some(hit) = cached_staging(&p, &key, kind, validate_opts, started, listener) {
        return Ok(hit);
    }

    let rocr_digest = stage::rocr_stage_digest(&key, &p.series, recipe::CLR_ONLY_PATHS);
    let rocr_cached = !opts.rebuild && stage::rocr_stage_valid(&p.layout, &rocr_digest);
    let keep = if rocr_cached {
        stage::rocr_stage_paths(&p.layout)
    } else {
        vec![]
    };
    clean_staging(&p.layout, &keep)?;
    let src = source_dir(&p);
    let kind = fetch_and_patch(&p, &tc, kind, &src, listener)?;
    let commit_time = source::commit_time(&src, &p.commit)?;
    let mut tools = tools;
    if kind.rocm_toolchain {
        check_tree(&p, &tc, &src, &mut tools, listener)?;
    }

    let mut inputs = step_inputs(&p, opts, kind, &src, generator, commit_time.to_string());
    inputs.rocr_cached = rocr_cached;
    let steps = steps::build_steps(&inputs);
    listener.info(&building_line(&p, kind, rocr_cached));
    for step in &steps {
        progress::step(listener, &step.name, || {
            steps::run_step(step, &p.layout.logs)
        })?;
        if step.name == "install-rocr" {
            stage::mark_rocr_stage(&p.layout, &rocr_digest)?;
        }
    }

    let validated = progress::step(listener, "validate install", || {
        validate::validate_install(&p.staging, SKIP_IN_STAGING, validate_opts)
    })?;
    for w in &validated.warnings {
        listener.warn(w);
    }
    let manifest = BuildManifest {
        commit: p.commit.clone(),
        commit_time,
        source: p.spec.display(),
        rocm_version,
        jobs: p.jobs,
        tools,
        libraries: validated.libraries,
        llvm_dir: key.llvm_dir.clone(),
        patches: key.patches.clone(),
        backport_check_skipped: !opts.backport_check,
        compiler_launcher: p
            .launcher
            .as_ref()
            .map(|(l, path)| launcher::record(*l, path, &p.env)),
    };
    cache::store(&p.layout.work, &key)?;
    write_manifest(&p.staging, &manifest)?;
    listener.info(&format!(
        "built in {:.1}s; manifest {}",
        started.elapsed().as_secs_f64(),
        p.staging.join(MANIFEST_FILE).display()
    ));
    Ok(BuildOutcome {
        staging: p.staging.clone(),
        manifest,
        cache_hit: false,
        tree: kind,
        warnings: validated.warnings,
    })
}

fn building_line(p: &Prepared, kind: TreeKind, rocr_cached: bool) -> String {
    format!(
        "building {} at {}{} with {} jobs{}",
        kind.describe(),
        p.commit,
        if p.series.is_empty() {
            String::new()
        } else {
            format!(" + {} patch(es)", p.series.len())
        },
        p.jobs,
        if rocr_cached {
            "; ROCr's stage is cached (same inputs): not rebuilt"
        } else {
            ""
        }
    )
}

/// What a local source tree is; refused when it is not a directory (the message ending with
/// `not_a_dir_hint`) or lacks a project of rocm-systems.
fn local_tree_kind(
    dir: &Path,
    trees: &[TreeKind],
    not_a_dir_hint: &str,
) -> anyhow::Result<TreeKind> {
    if !dir.is_dir() {
        return Err(usage(format!(
            "source {} is not a directory{not_a_dir_hint}",
            dir.display()
        )));
    }
    let missing = recipe::missing_projects(dir);
    if !missing.is_empty() {
        return Err(usage(format!(
            "source {} lacks {} (not a rocm-systems checkout?)",
            dir.display(),
            missing.join(", ")
        )));
    }
    recipe::tree_kind(dir, trees).ok_or_else(|| {
        usage(format!(
            "source {} {} (not the rocm-systems tree)",
            dir.display(),
            recipe::unknown_tree_reason(trees)
        ))
    })
}

/// A local tree: its projects, the prerequisites and its cleanliness (Some(kind)). A URL: the
/// base prerequisites only (None: the kind is known after the fetch).
fn check_source(
    p: &Prepared,
    tc: &recipe::Toolchain,
    listener: &dyn Listener,
) -> anyhow::Result<Option<TreeKind>> {
    match &p.spec {
        SourceSpec::Local(dir) => {
            let kind = local_tree_kind(
                dir,
                &p.trees,
                " (give a local rocm-systems checkout or a git URL)",
            )?;
            progress::step(listener, "check prerequisites", || {
                prereq::check(
                    &p.env,
                    &recipe::requirements_for(kind, tc),
                    &format!("{} at {}", kind.describe(), dir.display()),
                )
            })?;
            progress::step(listener, "check source", || {
                source::check_local(dir, &p.commit, crate::rocm::SOURCE_PATHS)
            })?;
            Ok(Some(kind))
        }
        SourceSpec::Url(url) => {
            progress::step(listener, "check prerequisites", || {
                prereq::check(
                    &p.env,
                    &recipe::base_requirements(),
                    &format!("fetching {url}"),
                )
            })?;
            // A fetched tree is the real runtime, which cannot build without ROCm's toolchain:
            // say so before the fetch, not after minutes of it.
            if !p.rocm_resolved {
                return Err(BuildError::NoRocmToBuildAgainst {
                    rocm_path: p.rocm.clone(),
                    url: url.clone(),
                    rocm_version: crate::rocm::TARGET_ROCM_VERSION.to_string(),
                }
                .into());
            }
            Ok(None)
        }
    }
}

/// The staging of an earlier build with the same key, when it still validates.
fn cached_staging(
    p: &Prepared,
    key: &cache::CacheKey,
    kind: Option<TreeKind>,
    validate_opts: validate::ValidateOptions,
    started: Instant,
    listener: &dyn Listener,
) -> Option<BuildOutcome> {
    match cache::lookup(&p.staging, &p.layout.work, key) {
        cache::Lookup::Candidate(manifest) => {
            match validate::validate_install(&p.staging, SKIP_IN_STAGING, validate_opts) {
                Ok(validated) if validated.libraries == manifest.libraries => {
                    for w in &validated.warnings {
                        listener.warn(w);
                    }
                    listener.info(&format!(
                        "cache hit: reusing the staging in {} built from {} (same commit, patches, \
                         options and toolchain; checked in {:.2}s; --rebuild forces a clean build)",
                        p.staging.display(),
                        p.commit,
                        started.elapsed().as_secs_f64()
                    ));
                    // A URL's tree kind is known from the checkout the cached build used.
                    let tree = kind
                        .or_else(|| recipe::tree_kind(&p.layout.checkout, &p.trees))
                        .unwrap_or(recipe::ROCM_SYSTEMS);
                    return Some(BuildOutcome {
                        staging: p.staging.clone(),
                        manifest: *manifest,
                        cache_hit: true,
                        tree,
                        warnings: validated.warnings,
                    });
                }
                Ok(_) => listener
                    .info("cache miss: the staging no longer matches its manifest; rebuilding"),
                Err(e) => listener.info(&format!(
                    "cache miss: the cached staging fails validation now ({e}); rebuilding"
                )),
            }
        }
        cache::Lookup::Miss(reason) => listener.info(&format!("cache miss: {reason}")),
    }
    None
}

/// Fetch a URL (then check its prerequisites), make the tool's checkout for a series, apply it.
fn fetch_and_patch(
    p: &Prepared,
    tc: &recipe::Toolchain,
    kind: Option<TreeKind>,
    src: &Path,
    listener: &dyn Listener,
) -> anyhow::Result<TreeKind> {
    let mut kind = kind;
    if let SourceSpec::Url(url) = &p.spec {
        stage::reset_if_patched(&p.checkout())?;
        fetch(url, p, listener)?;
        let missing = recipe::missing_projects(src);
        if !missing.is_empty() {
            return Err(usage(format!(
                "{url} at {} lacks {} (not a rocm-systems repository?)",
                p.commit,
                missing.join(", ")
            )));
        }
        let k = recipe::tree_kind(src, &p.trees).ok_or_else(|| {
            usage(format!(
                "{url} at {} {} (not the rocm-systems tree)",
                p.commit,
                recipe::unknown_tree_reason(&p.trees)
            ))
        })?;
        progress::step(listener, "check prerequisites", || {
            prereq::check(
                &p.env,
                &recipe::requirements_for(k, tc),
                &format!("{} fetched from {url}", k.describe()),
            )
        })?;
        kind = Some(k);
    }
    stage::checkout_and_patch(&p.checkout(), listener)?;
    Ok(kind.unwrap_or(recipe::ROCM_SYSTEMS))
}

/// The real tree against the toolchain, on the patched checkout, before anything compiles.
fn check_tree(
    p: &Prepared,
    tc: &recipe::Toolchain,
    src: &Path,
    tools: &mut BTreeMap<String, String>,
    listener: &dyn Listener,
) -> anyhow::Result<()> {
    progress::step(listener, "check the tree against the toolchain", || {
        let dirs = real_tree::comgr_package_dirs(tc.rocm, tc.llvm_dir);
        if let Some(v) = real_tree::check_comgr(src, &dirs, &p.layout.work.join("checks"))? {
            tools
                .entry("amd_comgr".to_string())
                .or_insert_with(|| v.clone());
        }
        real_tree::check_offload_targets(src, &tc.clang(), tc.image_support())
    })
}

#[cfg(test)]
mod build_tests;
