//! A downstream image on Debian's own ROCm packages (issue 23, item 6): docs/docker/debian.Dockerfile,
//! unchanged, built by buildah with `--network none` on the Debian sid base `scripts/images
//! debian-base` makes from the cached `sid-debian-rocm6-dev` tarball (Debian's libamdhip64-6,
//! libhiprtc6, libhiprtc-builtins6, libhsa-runtime64-1 and real dependants; apt pointed at a
//! local repository of those stock .debs). The artifact in the build context is made by
//! docs/docker/build-runtime.sh itself (`ROCM_PIN_STAGING`: a gcc-built stand-in staging with
//! Debian 6.4.3's SONAMEs, packaged against the stock of a chroot of the same tarball, then
//! `rocm-pin repo`). The image runs install-runtime.sh and verify-runtime.sh; `rocm-pin verify
//! --image` passes on it; a later layer that forces a stock .deb back in fails the build — at
//! the guard's dpkg hook with the tool kept, at verify-runtime.sh without it.
//!
//! Needs root, the OCI tools (scripts/install-deps) and the tarball (scripts/test-setup).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::util::*;
use rocm_pin_kit::sandbox::{ChrootImage, Sandbox};
use rocm_pin_testkit::staging::{build_staging, StagingSpec, COMMIT, COMMIT_TIME};

const IMAGE: &str = "chroot/sid-debian-rocm6-dev.tar.zst";
const DOCKERFILE: &str = "debian.Dockerfile";
/// Debian's stock packages the replacements stand in for (the ones with a runtime library).
const STOCK: &[&str] = &[
    "libamdhip64-6",
    "libhiprtc6",
    "libhiprtc-builtins6",
    "libhsa-runtime64-1",
];

/// The artifact directory build-runtime.sh leaves, made in a chroot of the same tarball the
/// base image comes from (so `rocm-pin package` reads the same stock), copied into
/// `<ctx>/rocm-pin-artifact/`.
fn make_artifact(tarball: &Path, work: &Path, ctx: &Path) {
    let sb = Sandbox::new(&ChrootImage::from_tarball("sid", tarball).unwrap()).unwrap();
    let staging = work.join("staging");
    build_staging(&staging, &StagingSpec::like_root(sb.root()));
    sb.install_rocm_pin(&bin()).unwrap();
    sb.copy_in(&staging, "/build/staging").unwrap();
    sb.copy_in(
        &repo_dir().join("docs/docker/build-runtime.sh"),
        "/tmp/build-runtime.sh",
    )
    .unwrap();
    let t = Instant::now();
    let out = sb
        .sh(&format!(
            "ROCM_PIN_STAGING=/build/staging ROCM_PIN_COMMIT={COMMIT} \
             SOURCE_DATE_EPOCH={COMMIT_TIME} ROCM_PIN_OUT=/out bash /tmp/build-runtime.sh 2>&1"
        ))
        .unwrap();
    eprintln!(
        "images: build-runtime.sh (ROCM_PIN_STAGING) in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    assert_eq!(rc(&out), 0, "build-runtime.sh:\n{}", text(&out));
    let artifact = sb.path(format!("/out/rocm-pin-{}", &COMMIT[..12]));
    let debs: Vec<String> = std::fs::read_dir(artifact.join("debs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for stock in STOCK {
        assert!(
            debs.iter()
                .any(|d| d.starts_with(&format!("{stock}-pinned_"))),
            "no replacement for Debian's {stock} in {debs:?}"
        );
    }
    assert!(artifact.join("repo/archive-key.gpg").is_file());
    std::fs::create_dir_all(ctx.join("rocm-pin-artifact")).unwrap();
    let st = Command::new("cp")
        .arg("-a")
        .arg(&artifact)
        .arg(ctx.join("rocm-pin-artifact"))
        .status()
        .unwrap();
    assert!(st.success());
}

/// debian.Dockerfile with the line `revert` inserted before its verify step, and optionally
/// without that step.
fn variant(ctx: &Path, name: &str, revert: &str, keep_verify: bool) {
    let file = std::fs::read_to_string(ctx.join("rocm-pin").join(DOCKERFILE)).unwrap();
    let verify_line = "RUN --mount=type=bind,source=rocm-pin-artifact,target=/tmp/rocm-pin \\\n    bash /usr/local/share/rocm-pin/docker/verify-runtime.sh\n";
    assert!(
        file.ends_with(verify_line),
        "{DOCKERFILE} must end with the verify step:\n{file}"
    );
    let head = &file[..file.len() - verify_line.len()];
    let tail = if keep_verify { verify_line } else { "" };
    std::fs::write(
        ctx.join("rocm-pin").join(name),
        format!("{head}{revert}{tail}"),
    )
    .unwrap();
}

/// The resolved file behind `soname` in `image`, and the package dpkg says owns it.
fn owner_in_image(tools: &Tools, image: &str, soname: &str) -> String {
    tools
        .run_in(
            image,
            &format!(
                "f=$(readlink -f /usr/lib/$(gcc -print-multiarch)/{soname}) && \
                 dpkg-query -S \"$f\" | cut -d: -f1"
            ),
        )
        .trim()
        .to_string()
}

#[test]
fn debian_downstream_image_installs_verifies_and_fails_on_revert() {
    rocm_pin_testkit::needs_root!("image storage and runc");
    let tarball: PathBuf = rocm_pin_testkit::needs_setup!(IMAGE);
    let _serial = one_image_test_at_a_time();
    let t0 = Instant::now();
    let run = ImageRun::start("debian", "debian-");
    let (w, tools) = (run.work.path(), &run.tools);
    let tag = |name: &str| run.tag(name);
    let mut tags = Tags::new(tools);

    let base = images_ok(&["debian-base"]);
    let ctx = recipe_context(w);
    make_artifact(&tarball, w, &ctx);
    let args = |keep_tool: &str| -> Vec<(&str, String)> {
        vec![
            ("DEBIAN_ROCM_IMAGE", base.clone()),
            ("ROCM_PIN_COMMIT", COMMIT.to_string()),
            ("ROCM_PIN_KEEP_TOOL", keep_tool.to_string()),
        ]
    };
    let build = |file: &str, tag: &str, args: &[(&str, String)]| {
        let a: Vec<(&str, &str)> = args.iter().map(|(k, v)| (*k, v.as_str())).collect();
        tools.build(&ctx, file, tag, &a)
    };

    // --- the recipe: install first, Debian's reinstall, verify last -------------------------
    let app = tag("app");
    tags.tags.push(app.clone());
    let t = Instant::now();
    let out = build(DOCKERFILE, &app, &args("1"));
    let build_secs = t.elapsed().as_secs_f64();
    assert_eq!(rc(&out), 0, "{DOCKERFILE}:\n{}", tail(&out));
    assert!(text(&out).contains("verify-runtime: OK"), "{}", tail(&out));
    for (soname, stock) in [
        ("libamdhip64.so.6", "libamdhip64-6"),
        ("libhsa-runtime64.so.1", "libhsa-runtime64-1"),
    ] {
        assert_eq!(
            owner_in_image(tools, &app, soname),
            format!("{stock}-pinned"),
            "{soname} in {app} is not from our package"
        );
    }
    let dependants = tools.run_in(
        &app,
        "dpkg-query -W -f '${db:Status-Abbrev}${Package}\\n' rocminfo librocfft0 libhipfft0 libamdhip64-dev",
    );
    assert_eq!(
        dependants.lines().filter(|l| l.starts_with("ii")).count(),
        4,
        "a dependant was removed:\n{dependants}"
    );
    let out = verify_image(
        &["--image", &format!("containers-storage:{app}")],
        &tools.env,
    );
    assert_eq!(rc(&out), 0, "verify --image {app}:\n{}", text(&out));

    // --- a later layer that forces Debian's stock .deb back in ------------------------------
    let revert = "RUN dpkg -i --force-all $(find /srv/debian-stock -name 'libamdhip64-6_*.deb')\n";
    variant(&ctx, "debian-revert.Dockerfile", revert, true);
    variant(&ctx, "debian-revert-unchecked.Dockerfile", revert, false);
    // With the tool kept (the default) the guard's dpkg hook fails the reverting RUN itself.
    let out = build("debian-revert.Dockerfile", &tag("guarded"), &args("1"));
    let s = text(&out);
    assert_ne!(rc(&out), 0, "the guarded revert built:\n{}", tail(&out));
    assert!(
        s.contains("RUN dpkg -i --force-all")
            && !s.contains("verify-runtime.sh")
            && s.contains("libamdhip64-6"),
        "the guard did not fail the reverting RUN naming the package:\n{}",
        tail(&out)
    );
    // Without the tool (no guard), the last step catches it.
    let reverted = tag("reverted");
    let out = build("debian-revert.Dockerfile", &reverted, &args("0"));
    assert_eq!(
        rc(&out),
        1,
        "the reverting build did not fail at verify:\n{}",
        tail(&out)
    );
    let s = text(&out);
    assert!(
        s.contains("verify-runtime: ERROR") && s.contains("FAIL") && s.contains("libamdhip64-6"),
        "the failure does not name the package:\n{}",
        tail(&out)
    );
    assert!(!tools.exists(&reverted));
    let unchecked = tag("reverted-unchecked");
    tags.tags.push(unchecked.clone());
    let out = build("debian-revert-unchecked.Dockerfile", &unchecked, &args("0"));
    assert_eq!(rc(&out), 0, "without its verify line:\n{}", tail(&out));
    let out = verify_image(
        &["--image", &format!("containers-storage:{unchecked}")],
        &tools.env,
    );
    assert_eq!(rc(&out), 1, "verify --image {unchecked}:\n{}", text(&out));
    assert!(text(&out).contains("libamdhip64-6"), "{}", text(&out));

    let size = tools.ok(
        "podman",
        &["image", "inspect", "--format", "{{.Size}}", &app],
    );
    eprintln!(
        "images: debian end to end in {:.1}s (downstream build {build_secs:.1}s, image {} bytes, base {base})",
        t0.elapsed().as_secs_f64(),
        size.trim()
    );
    drop(tags);
}
