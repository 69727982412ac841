//! The chroot sandbox: real apt inside a fresh copy of the cached mmdebstrap image, installing
//! tiny .debs built with dpkg-deb from a flat local repository. Needs root (CI runs as root).

use rocm_pin_testkit::assert_says;
use std::path::{Path, PathBuf};
use std::process::Command;

use rocm_pin_kit::sandbox::{Backend, ChrootImage, Sandbox};
use rocm_pin_testkit::chroot_image as image;

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("spawn");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Build `<name>_<version>_all.deb` in `out` with dpkg-deb. `files` are (path, contents);
/// `extra` are additional control lines.
fn build_deb(out: &Path, name: &str, version: &str, extra: &str, files: &[(&str, &str)]) {
    let tree = tempfile::tempdir().unwrap();
    let debian = tree.path().join("DEBIAN");
    std::fs::create_dir_all(&debian).unwrap();
    std::fs::write(
        debian.join("control"),
        format!(
            "Package: {name}\nVersion: {version}\nArchitecture: all\nMaintainer: Test <test@example.invalid>\n\
             Description: sandbox test package\n{extra}"
        ),
    )
    .unwrap();
    for (path, contents) in files {
        let p = tree.path().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, contents).unwrap();
    }
    run(Command::new("dpkg-deb")
        .args(["--root-owner-group", "--build"])
        .arg(tree.path())
        .arg(out.join(format!("{name}_{version}_all.deb"))));
}

/// hello-lib 1.0 and hello-app 1.0 (Depends: hello-lib (>= 1.0)), with documentation.
fn hello_debs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    build_deb(
        dir.path(),
        "hello-lib",
        "1.0",
        "",
        &[
            ("/usr/share/hello-lib/data.txt", "lib 1.0\n"),
            ("/usr/share/doc/hello-lib/copyright", "public domain\n"),
            ("/usr/share/doc/hello-lib/README", "docs\n"),
        ],
    );
    build_deb(
        dir.path(),
        "hello-app",
        "1.0",
        "Depends: hello-lib (>= 1.0)\n",
        &[("/usr/share/hello-app/app.txt", "app 1.0\n")],
    );
    dir
}

fn installed_version(sb: &Sandbox, pkg: &str) -> Option<String> {
    let out = sb
        .run(&[
            "dpkg-query",
            "-W",
            "-f",
            "${db:Status-Abbrev} ${Version}",
            pkg,
        ])
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.strip_prefix("ii  ").map(|v| v.trim().to_string())
}

fn backends() -> Vec<Backend> {
    vec![Backend::Overlay, Backend::Copy]
}

#[test]
fn apt_installs_from_a_local_repo_in_each_backend() {
    rocm_pin_testkit::needs_root!("chroots and mounts");
    let img = image("bookworm");
    let debs = hello_debs();
    for backend in backends() {
        let sb = rocm_pin_testkit::sandbox_with(&img, |o| o.backend = Some(backend));
        assert_eq!(sb.backend(), backend);
        // Set up as promised: test apt options, no network sources.
        assert!(sb
            .read_to_string("/etc/apt/apt.conf.d/99rocm-pin-test")
            .unwrap()
            .contains("Dpkg::Use-Pty \"0\";"));
        assert_eq!(sb.read_to_string("/etc/apt/sources.list").unwrap(), "");
        let dump = sb.run_ok(&["apt-config", "dump"]).unwrap();
        assert_says(&dump, &["APT::Install-Recommends \"0\";"]);

        sb.add_local_repo("hello", debs.path()).unwrap();
        let log = sb
            .run_ok(&["apt-get", "install", "-y", "hello-app"])
            .unwrap();
        assert!(
            log.contains("hello-lib"),
            "apt pulled the dependency: {log}"
        );
        assert_eq!(installed_version(&sb, "hello-app").as_deref(), Some("1.0"));
        assert_eq!(installed_version(&sb, "hello-lib").as_deref(), Some("1.0"));
        assert_eq!(
            std::fs::read_to_string(sb.path("/usr/share/hello-lib/data.txt")).unwrap(),
            "lib 1.0\n"
        );
        // Without the excludes file documentation is installed.
        assert!(sb.path("/usr/share/doc/hello-lib/README").is_file());

        // A newer release published to the same repository is an upgrade.
        let newer = tempfile::tempdir().unwrap();
        build_deb(
            newer.path(),
            "hello-lib",
            "2.0",
            "",
            &[("/usr/share/hello-lib/data.txt", "lib 2.0\n")],
        );
        sb.add_local_repo("hello", newer.path()).unwrap();
        sb.run_ok(&["apt-get", "upgrade", "-y"]).unwrap();
        assert_eq!(installed_version(&sb, "hello-lib").as_deref(), Some("2.0"));
        // The snapshot lists the image's own packages too.
        let all = sb.installed_packages().unwrap();
        assert!(
            all.contains_key("apt") && all.contains_key("dpkg"),
            "{all:?}"
        );
        assert_eq!(all.get("hello-app").map(String::as_str), Some("1.0"));
    }
}

#[test]
fn fresh_copies_are_independent_and_removed_on_drop() {
    rocm_pin_testkit::needs_root!("chroots and mounts");
    let img = image("bookworm");
    let debs = hello_debs();
    for backend in backends() {
        let a = rocm_pin_testkit::sandbox_with(&img, |o| o.backend = Some(backend));
        let b = rocm_pin_testkit::sandbox_with(&img, |o| o.backend = Some(backend));
        assert_ne!(a.root(), b.root());
        a.add_local_repo("hello", debs.path()).unwrap();
        a.run_ok(&["apt-get", "install", "-y", "hello-lib"])
            .unwrap();
        a.write("/etc/only-in-a", "a").unwrap();
        a.run_ok(&["rm", "/etc/debian_version"]).unwrap();
        assert_eq!(installed_version(&a, "hello-lib").as_deref(), Some("1.0"));
        assert_eq!(installed_version(&b, "hello-lib"), None);
        assert!(!b.path("/etc/only-in-a").exists());
        assert!(b.path("/etc/debian_version").is_file());
        assert!(b
            .read_to_string("/etc/apt/sources.list.d/hello.list")
            .is_err());

        // A third one made after a's changes starts from the pristine image.
        let c = rocm_pin_testkit::sandbox_with(&img, |o| o.backend = Some(backend));
        assert!(c.path("/etc/debian_version").is_file());
        assert_eq!(installed_version(&c, "hello-lib"), None);

        let root = a.root().to_path_buf();
        drop(a);
        assert!(!root.exists(), "{} left behind", root.display());
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert!(!mountinfo.contains(root.to_str().unwrap()));
    }
}

#[test]
fn missing_image_says_run_test_setup() {
    let empty = tempfile::tempdir().unwrap();
    let err = ChrootImage::existing("bookworm", empty.path()).unwrap_err();
    assert!(err.to_string().contains("run scripts/test-setup"), "{err}");
    let err = ChrootImage::cached("../evil", empty.path()).unwrap_err();
    assert!(err.to_string().contains("invalid suite"), "{err}");
}

/// Run as `nobody` (this same test binary, re-executed), a sandbox is refused with a clear
/// error instead of failing half-way.
#[test]
fn non_root_is_refused_clearly() {
    // The child runs as nobody on purpose: it must not be skipped for not being root.
    if std::env::var_os("ROCM_PIN_SANDBOX_NONROOT_CHILD").is_some() {
        let img = ChrootImage::from_tarball("bookworm", Path::new("/etc/hostname")).unwrap();
        let err = Sandbox::new(&img).unwrap_err().to_string();
        assert_says(&err, &["needs root"]);
        return;
    }
    rocm_pin_testkit::needs_root!("setpriv to run the check as nobody");
    let exe = std::env::current_exe().unwrap();
    // libtest names a test by its module path without the crate name.
    let (_, module) = module_path!()
        .split_once("::")
        .expect("a module of the test crate");
    let name = format!("{module}::non_root_is_refused_clearly");
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        .args(["--exact", &name, "--nocapture"])
        .env("ROCM_PIN_SANDBOX_NONROOT_CHILD", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "child as nobody: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn dpkg_excludes_drop_documentation_but_copyright() {
    rocm_pin_testkit::needs_root!("chroots and mounts");
    let img = image("bookworm");
    let debs = hello_debs();
    let sb = rocm_pin_testkit::sandbox_with(&img, |o| o.dpkg_excludes = true);
    assert!(sb
        .read_to_string("/etc/dpkg/dpkg.cfg.d/excludes")
        .unwrap()
        .contains("path-exclude=/usr/share/doc/*"));
    sb.add_local_repo("hello", debs.path()).unwrap();
    sb.run_ok(&["apt-get", "install", "-y", "hello-lib"])
        .unwrap();
    assert!(sb.path("/usr/share/doc/hello-lib/copyright").is_file());
    assert!(!sb.path("/usr/share/doc/hello-lib/README").exists());
    assert!(sb.path("/usr/share/hello-lib/data.txt").is_file());
}

#[test]
fn helpers_copy_resolve_and_run_rocm_pin_inside() {
    rocm_pin_testkit::needs_root!("chroots and mounts");
    let img = image("bookworm");
    let sb = rocm_pin_testkit::sandbox_with(&img, |o| o.mount_proc = true);
    // The rocm-pin binary runs inside.
    sb.install_rocm_pin(&rocm_pin_testkit::rocm_pin_bin!())
        .unwrap();
    let version = sb.run_ok(&["rocm-pin", "--version"]).unwrap();
    assert_says(&version, &["rocm-pin"]);

    // copy_in: a tree lands at the destination with modes kept.
    let host = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(host.path().join("sub")).unwrap();
    std::fs::write(host.path().join("sub/x.sh"), "#!/bin/sh\necho copied\n").unwrap();
    run(Command::new("chmod")
        .arg("755")
        .arg(host.path().join("sub/x.sh")));
    sb.copy_in(host.path(), "/opt/copied").unwrap();
    assert_eq!(sb.run_ok(&["/opt/copied/sub/x.sh"]).unwrap(), "copied\n");

    // The environment is clean and fixed.
    let env = sb.sh_ok("env | sort").unwrap();
    assert_says(&env, &["DEBIAN_FRONTEND=noninteractive", "LC_ALL=C"]);
    assert!(!env.contains("CARGO"), "host environment leaked: {env}");
    // /proc is mounted when asked.
    assert!(sb.path("/proc/self/status").exists());

    // resolve follows an absolute symlink chain the chroot's way.
    sb.sh_ok(
        "mkdir -p /opt/rocm-7.2.4/.info /etc/alternatives && echo 7.2.4 > /opt/rocm-7.2.4/.info/version \
         && ln -s /opt/rocm-7.2.4 /etc/alternatives/rocm && ln -s /etc/alternatives/rocm /opt/rocm",
    )
    .unwrap();
    assert_eq!(
        sb.resolve("/opt/rocm").unwrap(),
        PathBuf::from("/opt/rocm-7.2.4")
    );
    assert_eq!(
        sb.resolve("/opt/rocm/.info/version").unwrap(),
        PathBuf::from("/opt/rocm-7.2.4/.info/version")
    );
    assert_eq!(
        std::fs::read_to_string(sb.path(sb.resolve("/opt/rocm/.info/version").unwrap())).unwrap(),
        "7.2.4\n"
    );
    // path() cannot climb out of the root.
    assert!(sb.path("/../../etc/passwd").starts_with(sb.root()));

    // A failing command is an error that carries its output.
    let err = sb.sh_ok("echo why >&2; exit 3").unwrap_err().to_string();
    assert!(
        err.contains("why") && err.contains("exit status: 3"),
        "{}",
        err
    );

    let proc_dir = sb.path("/proc");
    drop(sb);
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mountinfo.contains(proc_dir.to_str().unwrap()));
}
