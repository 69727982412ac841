//! The repository scenario end to end: the stand-in stock ROCm set installed in a
//! bookworm chroot, `rocm-pin package` makes the replacement pair, `rocm-pin repo` publishes it
//! signed, apt installs `hip-runtime-amd-pinned hsa-rocr-pinned` from the repository served on
//! loopback (trusting only the exported key), and `rocm-pin verify` passes inside the chroot.
//! Needs root (CI runs as root).

use rocm_pin_testkit::assert_success;
use std::ffi::OsStr;
use std::process::Command;

use crate::util::*;
use rocm_pin_kit::sandbox::SandboxOptions;
use rocm_pin_testkit::http::HttpServer;

const KEYRING: &str = "/usr/share/keyrings/rocm-pin-repo.gpg";

#[test]
fn apt_installs_the_pinned_pair_from_the_signed_repository_and_verify_passes() {
    rocm_pin_testkit::needs_root!("a chroot");
    let (work, set) = work_with_default_stock();
    let w = work.path();
    let sb = sandbox_with_stock(&set, &["rocm-hip-runtime"], &SandboxOptions::default());
    // The stock repository was only needed to install the stock set.
    sb.sh_ok("rm -f /etc/apt/sources.list.d/stock.list")
        .unwrap();

    let staging = w.join("staging");
    build_staging(&staging, &StagingSpec::default());
    let out = w.join("out");
    let time = COMMIT_TIME.to_string();
    let res = package_cmd(&[
        OsStr::new("--staging"),
        staging.as_os_str(),
        OsStr::new("--stock-root"),
        sb.root().as_os_str(),
        OsStr::new("--commit"),
        OsStr::new(COMMIT),
        OsStr::new("--commit-time"),
        OsStr::new(&time),
        OsStr::new("--out"),
        out.as_os_str(),
    ]);
    assert_success(&res, "package failed");
    let debs = debs_in(&out);
    assert_eq!(debs.len(), 2, "{debs:?}");

    // Publish signed, serve on loopback, trust only the exported key.
    let key = w.join("repo-key.asc");
    must_stdout(
        Command::new(bin())
            .args(["repo", "keygen", "--out"])
            .arg(&key),
    );
    let web = w.join("web");
    let repo = web.join("rocm-pin");
    must_stdout(
        Command::new(bin())
            .args(["repo", "--quiet", "--suite", "rocm-7.2.4", "--sign-key"])
            .arg(&key)
            .arg("--out")
            .arg(&repo)
            .args(&debs),
    );
    must_stdout(Command::new("chmod").args(["-R", "a+rX"]).arg(&web));
    let server = HttpServer::serve(&web);
    sb.copy_in(&w.join("repo-key.pub.gpg"), KEYRING).unwrap();
    sb.write(
        "/etc/apt/sources.list.d/rocm-pin.list",
        format!(
            "deb [signed-by={KEYRING}] {}rocm-pin rocm-7.2.4 main\n",
            server.url()
        ),
    )
    .unwrap();
    let update = sb.run(&["apt-get", "update"]).unwrap();
    let update_text = format!(
        "{}{}",
        String::from_utf8_lossy(&update.stdout),
        String::from_utf8_lossy(&update.stderr)
    );
    assert!(update.status.success(), "apt-get update: {update_text}");
    assert!(
        !update_text.contains("W:"),
        "apt-get update warned: {update_text}"
    );

    let install = sb
        .run(&[
            "apt-get",
            "install",
            "-y",
            "-q",
            "hip-runtime-amd-pinned",
            "hsa-rocr-pinned",
        ])
        .unwrap();
    assert!(
        install.status.success(),
        "apt-get install from the repository failed:\n{}{}",
        String::from_utf8_lossy(&install.stdout),
        String::from_utf8_lossy(&install.stderr)
    );
    let status = dpkg_states(&sb);
    for name in [
        "hsa-rocr-pinned",
        "hip-runtime-amd-pinned",
        "rocm-hip-runtime",
    ] {
        assert_eq!(
            status.get(name).map(String::as_str),
            Some("ii"),
            "{name}: {status:?}"
        );
    }
    for stock in ["hsa-rocr", "hip-runtime-amd"] {
        assert!(
            status.get(stock).is_none_or(|s| s != "ii"),
            "{stock} still installed: {status:?}"
        );
    }

    // With the repository, `--reinstall` of ours is a real reinstall (DESIGN §4).
    sb.run_ok(&[
        "apt-get",
        "install",
        "-y",
        "-q",
        "--reinstall",
        "hsa-rocr-pinned",
    ])
    .expect("reinstall from the repository");

    rocm_pin_inside_ok(&sb, &["verify"]);
    drop(server);
}
