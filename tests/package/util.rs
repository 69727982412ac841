//! Shared by the tests in tests/package/ (and a few in tests/build/, tests/install/): a gcc-built patched staging, the stand-in
//! stock set, a chroot with it installed, and small runners. Real tools only (gcc, dpkg-deb,
//! apt, lintian); nothing here fakes a result.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rocm_pin_kit::sandbox::{ChrootImage, Sandbox, SandboxOptions};
use rocm_pin_kit::standin::StockSet;

pub const PREFIX: &str = "/opt/rocm-7.2.4";

pub use rocm_pin_testkit::debs::*;
pub use rocm_pin_testkit::staging::*;
pub use rocm_pin_testkit::{must, must_stdout};

pub fn image() -> ChrootImage {
    rocm_pin_testkit::chroot_image("bookworm")
}

/// The rocm-pin binary under test.
pub fn bin() -> PathBuf {
    rocm_pin_testkit::rocm_pin_bin!()
}

/// A command-line argument (for [`package_cmd`]).
pub fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// Every package dpkg knows in the chroot: name -> `db:Status-Abbrev` (e.g. `ii`).
pub fn dpkg_states(sb: &Sandbox) -> BTreeMap<String, String> {
    sb.run_ok(&["dpkg-query", "-W", "-f", "${Package} ${db:Status-Abbrev}\n"])
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (p, s) = l.split_once(' ')?;
            Some((p.to_string(), s.trim().to_string()))
        })
        .collect()
}

/// A chroot with the stand-in repository and `packages` installed from it.
pub fn sandbox_with_stock(set: &StockSet, packages: &[&str], options: &SandboxOptions) -> Sandbox {
    let sb = Sandbox::with_options(&image(), options).expect("sandbox");
    sb.add_local_repo("stock", &set.out_dir)
        .expect("stock repo");
    let mut argv = vec!["apt-get", "install", "-y", "-q"];
    argv.extend_from_slice(packages);
    sb.run_ok(&argv).expect("install the stock set");
    sb
}

/// `rocm-pin package …` with `args`; returns the output.
pub fn package_cmd(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(bin())
        .arg("package")
        .args(args)
        .env_remove("SOURCE_DATE_EPOCH")
        .output()
        .expect("run rocm-pin package")
}

/// Where `rocm-pin package` reads the stock facts from.
pub enum StockFrom<'a> {
    /// `--stock-root`: an installed root (a chroot).
    Root(&'a Path),
    /// `--stock-deb`: the stock .debs.
    Debs(Vec<&'a Path>),
}

/// `rocm-pin package` of the testkit's `staging` (built from [`COMMIT`] at [`COMMIT_TIME`])
/// against `stock`, into `out`, with `extra` arguments after the others.
pub fn package_staging(staging: &Path, stock: StockFrom, out: &Path, extra: &[&str]) -> Output {
    let time = COMMIT_TIME.to_string();
    let mut args: Vec<&OsStr> = vec![
        os("--staging"),
        staging.as_os_str(),
        os("--commit"),
        os(COMMIT),
        os("--commit-time"),
        os(&time),
        os("--out"),
        out.as_os_str(),
    ];
    match &stock {
        StockFrom::Root(root) => args.extend([os("--stock-root"), root.as_os_str()]),
        StockFrom::Debs(debs) => {
            args.push(os("--stock-deb"));
            args.extend(debs.iter().map(|d| d.as_os_str()));
        }
    }
    args.extend(extra.iter().map(|a| os(a)));
    package_cmd(&args)
}

/// Lintian has no error or warning for `deb` that is not overridden with a reason (overridden
/// tags are not shown), else a panic listing its E:/W: lines.
pub fn assert_lintian_clean(deb: &Path) {
    // lintian leaves its mldbm-elf-* files in TMPDIR: give it a directory removed afterwards.
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new("lintian")
        .arg("--no-cfg")
        .arg(deb)
        .env("TMPDIR", tmp.path())
        .output()
        .expect("run lintian (apt-get install lintian)");
    let text = String::from_utf8_lossy(&out.stdout);
    let problems: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("E:") || l.starts_with("W:"))
        .collect();
    assert!(
        problems.is_empty(),
        "lintian on {}: {problems:#?}",
        deb.display()
    );
}

/// Each of `debs` has a byte-identical namesake in `again` (a second build's output).
pub fn assert_rebuilt_identically(debs: &[PathBuf], again: &Path) {
    for d in debs {
        let b = again.join(d.file_name().unwrap());
        assert_eq!(
            std::fs::read(d).unwrap(),
            std::fs::read(&b).unwrap(),
            "{} differs on rebuild",
            d.display()
        );
    }
}

/// `rocm-pin SUBCOMMAND --root ROOT` (status, verify, …) from outside the root.
pub fn rocm_pin_on_root(subcommand: &str, root: &Path) -> Output {
    rocm_pin()
        .args([subcommand, "--root"])
        .arg(root)
        .output()
        .expect("run rocm-pin")
}

/// `rocm-pin ARGS` inside `sb` (the binary under test installed there first): it must succeed.
pub fn rocm_pin_inside_ok(sb: &Sandbox, args: &[&str]) -> Output {
    sb.install_rocm_pin(&bin()).unwrap();
    let mut argv = vec!["rocm-pin"];
    argv.extend(args);
    let out = sb.run(&argv).unwrap();
    rocm_pin_testkit::assert_success(&out, &format!("rocm-pin {}", args.join(" ")));
    out
}

/// The rocm-pin binary under test, without an inherited `SOURCE_DATE_EPOCH`.
pub fn rocm_pin() -> Command {
    let mut cmd = Command::new(bin());
    cmd.env_remove("SOURCE_DATE_EPOCH");
    cmd
}

/// A tiny `all` package built with `rocm-pin deb build` for the repository tests; `extra` is
/// added to its control file before `Description:`, and `/usr/share/<name>/marker` holds
/// "<name> <version>\n".
pub fn tiny_package(dir: &Path, name: &str, version: &str, extra: &str) -> PathBuf {
    let tree = dir.join(format!("{name}-tree"));
    std::fs::create_dir_all(tree.join("DEBIAN")).unwrap();
    std::fs::create_dir_all(tree.join("usr/share").join(name)).unwrap();
    std::fs::write(
        tree.join("DEBIAN/control"),
        format!(
            "Package: {name}\nVersion: {version}\nArchitecture: all\nMaintainer: Test <test@example.invalid>\n\
             {extra}Description: served by a rocm-pin repository\n"
        ),
    )
    .unwrap();
    std::fs::write(
        tree.join("usr/share").join(name).join("marker"),
        format!("{name} {version}\n"),
    )
    .unwrap();
    let deb = dir.join(format!("{name}_{version}_all.deb"));
    must_stdout(
        rocm_pin()
            .args(["deb", "build", "--quiet"])
            .arg(&tree)
            .arg(&deb),
    );
    deb
}

/// Copies each .deb of `debs` into the chroot as /tmp/ours/<its file name> and runs
/// `apt-get install -y -q` on them there with `env` set; panics with apt's output on failure.
pub fn apt_install_debs(sb: &Sandbox, debs: &[PathBuf], env: &[(&str, &str)]) {
    sb.run_ok(&["mkdir", "-p", "/tmp/ours"]).unwrap();
    let mut argv = vec![
        "apt-get".to_string(),
        "install".into(),
        "-y".into(),
        "-q".into(),
    ];
    for d in debs {
        let at = format!("/tmp/ours/{}", d.file_name().unwrap().to_string_lossy());
        sb.copy_in(d, &at).unwrap();
        argv.push(at);
    }
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let mut cmd = sb.command(&argv);
    cmd.envs(env.iter().copied());
    must(&mut cmd);
}
