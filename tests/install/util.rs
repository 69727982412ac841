//! Shared by the tests in tests/install/: the whole chain made ONCE per test binary — the stand-in stock
//! set (standin), our packages from `rocm-pin build` of the fixture + `rocm-pin package`
//! against that stock set, a chroot with the stock set installed through apt and `rocm-pin
//! install` run INSIDE it — kept as two snapshot tarballs (stock only; stock + ours). Every
//! scenario unpacks a snapshot into a fresh sandbox.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use rocm_pin_testkit::scratch::ScratchDir;

use rocm_pin_core::host::apt::Solver;
use rocm_pin_kit::sandbox::{ChrootImage, Sandbox, SandboxOptions};
use rocm_pin_kit::standin::{self, StockRole, StockSet, StockSetSpec};

/// Where things go inside the chroot.
pub const OURS_DIR: &str = "/root/ours";
pub const STOCK_DEBS_DIR: &str = "/root/stock-debs";
pub const PROBE: &str = "/usr/local/bin/rocm-pin-probe";
/// The downstream packages that must survive every scenario.
pub const DEPENDANTS: &[&str] = &["rocm-hip-runtime", "hip-dev", "rccl", "hipblas"];
pub const SONAMES: &[&str] = RUNTIME_SONAMES;

pub use rocm_pin_testkit::fixture::{git_at, COMMIT_DATE};
pub use rocm_pin_testkit::runtime::RUNTIME_SONAMES;
pub use rocm_pin_testkit::{cache_dir, chroot_image as image, must, rc, text};

/// The rocm-pin binary under test.
pub fn bin() -> PathBuf {
    rocm_pin_testkit::rocm_pin_bin!()
}

/// Everything suite-independent: the stand-in stock sets, our packages, the loader probe.
pub struct Packages {
    _work: ScratchDir,
    pub stock: StockSet,
    /// The custom rccl with exact `=` deps (dpkg -i only).
    pub custom: StockSet,
    /// r2: a newer stock release of the pair.
    pub r2: StockSet,
    /// The pair rebuilt as -94 (stock mismatch).
    pub r94: StockSet,
    pub ours: Vec<PathBuf>,
    pub ours_dir: PathBuf,
    pub probe: PathBuf,
}

pub struct Artifacts {
    /// The apt configuration (one of [`CONFIGS`]).
    pub config: &'static str,
    pub suite: String,
    pub pkgs: &'static Packages,
    _work: ScratchDir,
    /// Stock set installed (no rocm-pin yet).
    pub stock_snapshot: PathBuf,
    /// Stock set + `rocm-pin install` done inside.
    pub installed_snapshot: PathBuf,
    /// `rocm-pin install`'s output when the snapshot was made.
    pub install_output: String,
}

impl std::ops::Deref for Artifacts {
    type Target = Packages;
    fn deref(&self) -> &Packages {
        self.pkgs
    }
}

static PACKAGES: OnceLock<Packages> = OnceLock::new();
static BOOKWORM: OnceLock<Artifacts> = OnceLock::new();
static TRIXIE: OnceLock<Artifacts> = OnceLock::new();
static TRIXIE_SOLVER3: OnceLock<Artifacts> = OnceLock::new();

/// The apt configurations the install tests run under: bookworm (apt 2.6), trixie (apt 3.0,
/// classic solver), trixie with `APT::Solver "3.0"`.
pub const CONFIGS: &[&str] = &["bookworm", "trixie", "trixie-solver3"];

/// The Debian suite of an apt configuration.
pub fn suite_of(config: &str) -> &str {
    config.split('-').next().unwrap_or(config)
}

/// The solver apt uses in an apt configuration (what the tests expect, stated, not detected).
pub fn solver_of(config: &str) -> Solver {
    if config.ends_with("-solver3") {
        Solver::Solver3
    } else {
        Solver::Classic
    }
}

pub fn packages() -> &'static Packages {
    PACKAGES.get_or_init(make_packages)
}

/// The chroot snapshots of one apt configuration (one of [`CONFIGS`]), made once per test binary.
pub fn artifacts(config: &str) -> &'static Artifacts {
    let (cell, config) = match config {
        "bookworm" => (&BOOKWORM, "bookworm"),
        "trixie" => (&TRIXIE, "trixie"),
        "trixie-solver3" => (&TRIXIE_SOLVER3, "trixie-solver3"),
        other => panic!("no artifacts for {other}"),
    };
    cell.get_or_init(|| make_artifacts(config))
}

/// Directories a snapshot carries (everything dpkg, apt, rocm-pin and the stand-in touch).
const SNAPSHOT_DIRS: &[&str] = &[
    "opt",
    "etc",
    "var/lib/dpkg",
    "var/lib/apt",
    "var/lib/rocm-pin",
    "var/cache/apt",
    "usr/local",
    "usr/share/doc",
    "usr/share/lintian",
    "srv",
    "root",
];

fn snapshot(sb: &Sandbox, out: &Path) {
    let dirs: Vec<&str> = SNAPSHOT_DIRS
        .iter()
        .copied()
        .filter(|d| sb.path(format!("/{d}")).exists())
        .collect();
    must(
        Command::new("tar")
            .arg("-C")
            .arg(sb.root())
            .arg("-cf")
            .arg(out)
            .args(&dirs),
    );
}

pub fn opts(config: &str) -> SandboxOptions {
    SandboxOptions {
        dpkg_excludes: true,
        apt_solver3: solver_of(config) == Solver::Solver3,
        ..Default::default()
    }
}

/// A fresh sandbox with `snap` unpacked into it.
pub fn fresh(a: &Artifacts, snap: &Path) -> Sandbox {
    fresh_with(a, snap, opts(a.config))
}

/// `fresh` with /proc mounted in the chroot (for tests that look at or signal processes).
pub fn fresh_with_proc(a: &Artifacts, snap: &Path) -> Sandbox {
    fresh_with(
        a,
        snap,
        SandboxOptions {
            mount_proc: true,
            ..opts(a.config)
        },
    )
}

fn fresh_with(a: &Artifacts, snap: &Path, options: SandboxOptions) -> Sandbox {
    let sb = Sandbox::with_options(&image(&a.suite), &options).expect("sandbox");
    must(
        Command::new("tar")
            .arg("-C")
            .arg(sb.root())
            .arg("-xf")
            .arg(snap),
    );
    sb
}

fn make_packages() -> Packages {
    let t0 = std::time::Instant::now();
    assert!(
        unsafe { libc::geteuid() } == 0,
        "the install acceptance tests need root (chroot); CI runs as root"
    );
    let work = ScratchDir::new("install").expect("scratch directory");
    let w = work.path();
    let listener = rocm_pin_core::progress::Silent;

    // 1. The stand-in stock set and its variants.
    let spec = StockSetSpec::for_host().expect("host arch");
    // scripts/bench-verify: the stock libraries at their real sizes (the tests do not need it).
    let stock_spec = if std::env::var_os("ROCM_PIN_BENCH_REAL_SIZES").is_some() {
        spec.clone().at_real_sizes()
    } else {
        spec.clone()
    };
    let stock =
        standin::build_stock_set(&stock_spec, &w.join("stock"), &listener).expect("stock set");
    let custom = standin::build_stock_set(
        &spec.clone().only(&[StockRole::CustomRccl]),
        &w.join("custom"),
        &listener,
    )
    .expect("custom rccl");
    let r2 =
        standin::build_stock_set(&spec.newer_release(), &w.join("r2"), &listener).expect("r2 set");
    let r94 =
        standin::build_stock_set(&spec.rebuild(94), &w.join("r94"), &listener).expect("-94 set");
    let probe = standin::build_loader_probe(&w.join("probe")).expect("loader probe");

    // 2. `rocm-pin build` of the stand-in source, a real git checkout.
    let (src, commit) = rocm_pin_testkit::fixture::standin_repo(w, |_| {});
    let staging = rocm_pin_testkit::build_standin_staging(&bin(), &src, &commit, w);

    // 3. `rocm-pin package` against the stock pair's .debs.
    let ours_dir = w.join("ours");
    let hsa = stock.require(StockRole::HsaRocr).unwrap().deb.clone();
    let hip = stock.require(StockRole::HipRuntime).unwrap().deb.clone();
    must(
        Command::new(bin())
            .args(["package", "--quiet", "--staging"])
            .arg(&staging)
            .arg("--stock-deb")
            .arg(&hsa)
            .arg(&hip)
            .arg("--out")
            .arg(&ours_dir)
            .env("SOURCE_DATE_EPOCH", "1768478400"),
    );
    let mut ours: Vec<PathBuf> = std::fs::read_dir(&ours_dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .collect();
    ours.sort();
    assert_eq!(ours.len(), 2, "rocm-pin package made {ours:?}");
    eprintln!(
        "install_support: packages ready in {:.1}s",
        t0.elapsed().as_secs_f64()
    );
    Packages {
        _work: work,
        stock,
        custom,
        r2,
        r94,
        ours,
        ours_dir,
        probe,
    }
}

fn make_artifacts(config: &'static str) -> Artifacts {
    let suite = suite_of(config);
    let t0 = std::time::Instant::now();
    let p = packages();
    let work = ScratchDir::new("install").expect("scratch directory");
    let w = work.path();
    let (stock, custom, ours) = (&p.stock, &p.custom, &p.ours);

    // 4. The stock set installed through apt from a local repository.
    let sb = stock_sandbox(&image(suite), config, p);
    sb.copy_in(&stock.out_dir, STOCK_DEBS_DIR).unwrap();
    for p in &custom.packages {
        sb.copy_in(
            &p.deb,
            &format!("/root/{}", p.deb.file_name().unwrap().to_string_lossy()),
        )
        .unwrap();
    }
    let stock_snapshot = w.join("stock.tar");
    snapshot(&sb, &stock_snapshot);

    // 5. `rocm-pin install` INSIDE the chroot.
    let out = sb.run(&install_argv(ours)).unwrap();
    let install_output = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "rocm-pin install failed in the chroot ({}):\n{install_output}",
        out.status
    );
    let installed_snapshot = w.join("installed.tar");
    snapshot(&sb, &installed_snapshot);
    // scripts/bench-verify takes the installed set from here.
    if let Some(dir) = std::env::var_os("ROCM_PIN_SNAPSHOT_OUT") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(
            &installed_snapshot,
            dir.join(format!("{config}-installed.tar")),
        )
        .unwrap();
    }
    eprintln!(
        "install_support: {config} artifacts ready in {:.1}s",
        t0.elapsed().as_secs_f64()
    );
    Artifacts {
        config,
        suite: suite.to_string(),
        pkgs: p,
        _work: work,
        stock_snapshot,
        installed_snapshot,
        install_output,
    }
}

/// A sandbox on `image` under apt configuration `config` with the stock set installed through
/// apt from a local repository, and rocm-pin, the loader probe and our packages copied in (our
/// packages not installed yet).
pub fn stock_sandbox(image: &ChrootImage, config: &str, p: &Packages) -> Sandbox {
    let sb = Sandbox::with_options(image, &opts(config)).expect("sandbox");
    sb.add_local_repo("stock", &p.stock.out_dir)
        .expect("stock repo");
    sb.run_ok(&[
        "apt-get",
        "install",
        "-y",
        "rocm-hip-runtime",
        "hip-dev",
        "rccl",
        "hipblas",
        "rocm-smi-lib",
    ])
    .expect("install the stock set");
    sb.install_rocm_pin(&bin()).unwrap();
    sb.copy_in(&p.probe, PROBE).unwrap();
    sb.copy_in(&p.ours_dir, OURS_DIR).unwrap();
    sb
}

/// `rocm-pin install /root/ours/a.deb /root/ours/b.deb`.
pub fn install_argv(ours: &[PathBuf]) -> Vec<&'static str> {
    let mut v = vec!["rocm-pin", "install"];
    for p in ours {
        let s = format!("{OURS_DIR}/{}", p.file_name().unwrap().to_string_lossy());
        v.push(Box::leak(s.into_boxed_str()));
    }
    v
}

/// Which library the dynamic loader really uses, per soname: (soname, identity).
pub fn probe(sb: &Sandbox) -> Vec<(String, String)> {
    let mut argv = vec![PROBE];
    argv.extend(SONAMES);
    let out = sb.run(&argv).unwrap();
    let lines = standin::parse_probe_output(&String::from_utf8_lossy(&out.stdout))
        .unwrap_or_else(|e| panic!("probe output: {e}: {}", text(&out)));
    lines
        .into_iter()
        .map(|l| {
            (
                l.soname,
                l.identity.unwrap_or_else(|| "NOT-LOADED".to_string()),
            )
        })
        .collect()
}

/// True when every probed soname reports a patched identity.
pub fn all_patched(ids: &[(String, String)]) -> bool {
    rocm_pin_testkit::runtime::runtime_is_patched(ids.iter().map(|(_, id)| id.as_str()), None)
}

/// `dpkg-query` states of the dependants (name → abbrev, "" when unknown).
pub fn dependant_states(sb: &Sandbox) -> Vec<(String, String)> {
    DEPENDANTS
        .iter()
        .map(|p| {
            let out = sb
                .run(&["dpkg-query", "-W", "-f=${db:Status-Abbrev}", p])
                .unwrap();
            (
                p.to_string(),
                String::from_utf8_lossy(&out.stdout).trim().to_string(),
            )
        })
        .collect()
}

pub fn dependants_installed(sb: &Sandbox) -> bool {
    dependant_states(sb).iter().all(|(_, s)| s == "ii")
}

pub fn verify(sb: &Sandbox) -> Output {
    sb.run(&["rocm-pin", "verify"]).unwrap()
}

pub fn verify_json(sb: &Sandbox) -> serde_json::Value {
    let out = sb.run(&["rocm-pin", "verify", "--json"]).unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("verify --json: {e}: {}", text(&out)))
}

/// The names of the failed checks in `verify --json`.
pub fn failed_checks(sb: &Sandbox) -> Vec<String> {
    let v = verify_json(sb);
    let mut names: Vec<String> = v["checks"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|c| c["ok"] == false)
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    names.dedup();
    names
}

/// Each test named runs under every apt configuration CI covers, as its own test
/// (`<name>::bookworm`, `<name>::trixie`, `<name>::trixie_solver3`).
macro_rules! per_config {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn bookworm() {
                rocm_pin_testkit::needs_root!("a chroot");
                super::$name("bookworm")
            }
            #[test]
            fn trixie() {
                rocm_pin_testkit::needs_root!("a chroot");
                super::$name("trixie")
            }
            #[test]
            fn trixie_solver3() {
                rocm_pin_testkit::needs_root!("a chroot");
                super::$name("trixie-solver3")
            }
        }
    )*};
}
pub(crate) use per_config;

/// The same fcntl write lock apt and dpkg take on the sandbox's `lock-frontend`, held from
/// outside the chroot until the returned file is dropped.
pub fn hold_dpkg_frontend_lock(sb: &Sandbox) -> std::fs::File {
    use std::os::unix::io::AsRawFd;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(sb.path("/var/lib/dpkg/lock-frontend"))
        .unwrap();
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as _;
    fl.l_whence = libc::SEEK_SET as _;
    assert_eq!(unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETLK, &fl) }, 0);
    f
}
