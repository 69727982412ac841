//! `rocm-pin repo` judged by real apt in a bookworm chroot: the repository is served over
//! HTTP on the loopback interface (the chroot shares the host's network namespace), the sources
//! entry trusts only the exported key (`signed-by=`), and apt must accept the good repository
//! and refuse a tampered Release, a tampered InRelease and an index that does not match its
//! checksum. Needs root (CI runs as root).

use rocm_pin_testkit::assert_says;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::{rocm_pin, tiny_package};
use rocm_pin_kit::sandbox::Sandbox;
use rocm_pin_testkit::http::HttpServer;
use rocm_pin_testkit::{chroot_image, must_stdout, text};

const KEYRING: &str = "/usr/share/keyrings/rocm-pin-test.gpg";

struct Fixture {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    flat: PathBuf,
    keyring: PathBuf,
}

/// A signed suite repository and a signed flat repository holding the same two packages.
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("key.asc");
    must_stdout(rocm_pin().args(["repo", "keygen", "--out"]).arg(&key));
    let debs = [
        tiny_package(tmp.path(), "served-hello", "1.0-1", ""),
        tiny_package(tmp.path(), "served-other", "2.0", ""),
    ];
    let repo = tmp.path().join("repo");
    let flat = tmp.path().join("flat");
    for (dir, extra) in [(&repo, None), (&flat, Some("--flat"))] {
        must_stdout(
            rocm_pin()
                .args(["repo", "--quiet", "--sign-key"])
                .arg(&key)
                .arg("--out")
                .arg(dir)
                .args(extra)
                .args(&debs),
        );
    }
    // http.server runs as root, apt's download method as _apt: only the served files matter,
    // but keep the tree world-readable like a real web root.
    must_stdout(Command::new("chmod").args(["-R", "a+rX"]).arg(tmp.path()));
    Fixture {
        keyring: tmp.path().join("key.pub.gpg"),
        repo,
        flat,
        _tmp: tmp,
    }
}

fn sandbox_with_key(suite: &str, keyring: &Path) -> Sandbox {
    let sb = Sandbox::new(&chroot_image(suite)).expect("sandbox");
    sb.copy_in(keyring, KEYRING).expect("copy the key in");
    sb
}

fn apt_update(sb: &Sandbox) -> Output {
    // Forget what an earlier update fetched, so each scenario downloads everything again.
    sb.sh_ok("find /var/lib/apt/lists -type f -delete")
        .expect("clean lists");
    sb.run(&["apt-get", "update"]).expect("apt-get runs")
}

fn assert_update_ok(sb: &Sandbox) {
    let out = apt_update(sb);
    let all = text(&out);
    assert!(out.status.success(), "apt-get update failed:\n{all}");
    assert!(
        !all.contains("W:") && !all.contains("Err:"),
        "apt-get update warned:\n{all}"
    );
}

fn assert_update_fails(sb: &Sandbox, why: &[&str]) -> String {
    let out = apt_update(sb);
    let all = text(&out);
    assert!(
        !out.status.success(),
        "apt-get update accepted a broken repository:\n{all}"
    );
    assert!(
        why.iter().any(|w| all.contains(w)),
        "unexpected failure, wanted one of {why:?}:\n{all}"
    );
    for line in all
        .lines()
        .filter(|l| l.starts_with("E:") || l.starts_with("W:"))
    {
        eprintln!("apt refused as expected: {line}");
    }
    all
}

fn install_and_check(sb: &Sandbox) {
    sb.run_ok(&["apt-get", "install", "-y", "served-hello", "served-other"])
        .expect("apt-get install from the served repository");
    let status = sb
        .run_ok(&[
            "dpkg-query",
            "-W",
            "-f",
            "${Package} ${Version} ${Status}\\n",
            "served-hello",
            "served-other",
        ])
        .expect("dpkg-query");
    assert_eq!(
        status,
        "served-hello 1.0-1 install ok installed\nserved-other 2.0 install ok installed\n"
    );
    assert_eq!(
        sb.read_to_string("/usr/share/served-hello/marker").unwrap(),
        "served-hello 1.0-1\n"
    );
}

rocm_pin_testkit::root_tests!("a chroot", signed_repository_scenarios {
    /// bookworm: apt 2.6 verifies with gpgv.
    bookworm_apt_installs_from_the_signed_repository_and_refuses_tampering => "bookworm",
    /// trixie: apt 3.0 verifies with Sequoia's sqv and its signature policy.
    trixie_apt_installs_from_the_signed_repository_and_refuses_tampering => "trixie",
});

fn signed_repository_scenarios(suite: &str) {
    let fx = fixture();
    let server = HttpServer::serve(fx.repo.parent().unwrap());
    let sb = sandbox_with_key(suite, &fx.keyring);
    sb.write(
        "/etc/apt/sources.list.d/served.list",
        format!(
            "deb [signed-by={KEYRING}] {}repo stable main\n",
            server.url()
        ),
    )
    .unwrap();

    assert_update_ok(&sb);
    install_and_check(&sb);
    let policy = sb.run_ok(&["apt-cache", "policy"]).unwrap();
    assert_says(&policy, &["o=rocm-pin,a=stable,n=stable,l=rocm-pin,c=main"]);

    let dists = fx.repo.join("dists/stable");
    let pristine: Vec<(PathBuf, Vec<u8>)> = ["InRelease", "Release", "Release.gpg"]
        .iter()
        .map(|f| (dists.join(f), std::fs::read(dists.join(f)).unwrap()))
        .collect();
    let restore = || {
        for (p, b) in &pristine {
            std::fs::write(p, b).unwrap();
        }
    };

    // 1. The signed text of InRelease edited after signing.
    let inrelease = String::from_utf8(pristine[0].1.clone()).unwrap();
    std::fs::write(
        dists.join("InRelease"),
        inrelease.replace("Label: rocm-pin", "Label: edited"),
    )
    .unwrap();
    assert_update_fails(&sb, &["signatures were invalid", "BADSIG", "is not signed"]);
    restore();

    // 2. No InRelease: apt falls back to Release + Release.gpg; Release edited after signing.
    std::fs::remove_file(dists.join("InRelease")).unwrap();
    let release = String::from_utf8(pristine[1].1.clone()).unwrap();
    std::fs::write(
        dists.join("Release"),
        release.replace("Label: rocm-pin", "Label: edited"),
    )
    .unwrap();
    assert_update_fails(&sb, &["signatures were invalid", "BADSIG", "is not signed"]);
    restore();
    assert_update_ok(&sb);

    // 3. An index that does not match the checksum in the (validly signed) Release: every
    //    compression of Packages replaced by one listing an extra package.
    let index = dists.join("main/binary-all/Packages");
    let original: Vec<(PathBuf, Vec<u8>)> = ["", ".gz", ".xz"]
        .iter()
        .map(|ext| {
            let p = PathBuf::from(format!("{}{ext}", index.display()));
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    let mut packages = std::fs::read_to_string(&index).unwrap();
    packages.push_str(
        "\nPackage: injected\nVersion: 6.6.6\nArchitecture: all\nMaintainer: X <x@x.invalid>\n\
         Filename: pool/main/s/served-hello/served-hello_1.0-1_all.deb\nSize: 1\nSHA256: 00\n\
         Description: not in the signed index\n",
    );
    std::fs::write(&index, &packages).unwrap();
    must_stdout(Command::new("sh").arg("-c").arg(format!(
        "gzip -9nc '{0}' > '{0}.gz' && xz -c '{0}' > '{0}.xz'",
        index.display()
    )));
    assert_update_fails(&sb, &["Hash Sum mismatch", "unexpected size"]);
    let show = sb.run(&["apt-cache", "show", "injected"]).unwrap();
    assert!(
        !show.status.success(),
        "the injected package must not be visible to apt"
    );
    for (p, b) in &original {
        std::fs::write(p, b).unwrap();
    }
    assert_update_ok(&sb);

    // 4. A key that did not sign the repository.
    let other = tempfile::tempdir().unwrap();
    let other_key = other.path().join("other.asc");
    must_stdout(rocm_pin().args(["repo", "keygen", "--out"]).arg(&other_key));
    sb.copy_in(&other.path().join("other.pub.gpg"), KEYRING)
        .unwrap();
    assert_update_fails(
        &sb,
        &[
            "NO_PUBKEY",
            "is not signed",
            "signatures couldn't be verified",
        ],
    );
    drop(server);
}

#[test]
fn apt_installs_from_a_flat_repository() {
    rocm_pin_testkit::needs_root!("a chroot");
    let fx = fixture();
    let server = HttpServer::serve(&fx.flat);
    let sb = sandbox_with_key("bookworm", &fx.keyring);
    sb.write(
        "/etc/apt/sources.list.d/served-flat.list",
        format!("deb [signed-by={KEYRING}] {} ./\n", server.url()),
    )
    .unwrap();
    assert_update_ok(&sb);
    install_and_check(&sb);
    drop(server);
}
