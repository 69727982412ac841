//! The recipe's default image keeps only the guard binary (`ROCM_PIN_KEEP_TOOL=guard`):
//! docs/docker/sglang.Dockerfile built unchanged by buildah with the artifact image from a
//! loopback registry. The image holds `/usr/lib/rocm-pin/rocm-pin-guard` (the hooks' copy) and
//! no full rocm-pin; verify-runtime.sh passes with it; a later step that forces the stock
//! runtime back fails the build at that step, through the guard binary's hook.
//!
//! Needs root and the tools from scripts/install-deps, like tests/images/buildah.rs.

use std::process::Command;

use crate::util::*;

const GUARD_COPY: &str = "/usr/lib/rocm-pin/rocm-pin-guard";

#[test]
fn the_default_recipe_image_keeps_only_the_guard_binary_and_it_guards() {
    rocm_pin_testkit::needs_root!("image storage and runc");
    let _serial = crate::util::one_image_test_at_a_time();
    let run = ImageRun::start("guard", "guard-");
    let (w, tools) = (run.work.path(), &run.tools);
    let mut tags = Tags::new(tools);

    let base = images_ok(&["base"]);
    let registry = Registry(images_ok(&["registry"]));
    let out = Command::new(repo_dir().join("scripts/images"))
        .args(["runtime", "--registry", &registry.0])
        .env("ROCM_PIN_CACHE", cache_dir())
        .env("ROCM_PIN_BIN", bin())
        .output()
        .unwrap();
    assert_eq!(rc(&out), 0, "scripts/images runtime:\n{}", tail(&out));
    let runtime = stdout_last_line(&out);
    tags.tags.push(runtime.clone());
    let inspect = tools.ok("skopeo", &["inspect", &format!("docker://{runtime}")]);
    let inspect: serde_json::Value = serde_json::from_str(&inspect).unwrap();
    let commit = inspect["Labels"]["io.rocm-pin.commit"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(commit.len(), 40, "{inspect}");

    let ctx = recipe_context(w);
    let args = [
        ("ROCM_IMAGE", base.as_str()),
        ("ROCM_PIN_RUNTIME_IMAGE", runtime.as_str()),
        ("ROCM_PIN_COMMIT", commit.as_str()),
    ];
    let image = run.tag("sglang");
    tags.tags.push(image.clone());
    let out = tools.build(&ctx, "sglang.Dockerfile", &image, &args);
    assert_eq!(rc(&out), 0, "sglang.Dockerfile:\n{}", tail(&out));
    assert!(text(&out).contains("verify-runtime: OK"), "{}", tail(&out));

    // Only the guard binary stays: no full rocm-pin anywhere, the hooks' copy executable.
    let left = tools.run_in(
        &image,
        "for p in /usr/local/bin/rocm-pin /usr/bin/rocm-pin /usr/lib/rocm-pin/rocm-pin; do [ ! -e $p ] || echo $p; done",
    );
    assert_eq!(left.trim(), "", "a full rocm-pin in the default image");
    let status = tools.run_in(&image, &format!("{GUARD_COPY} guard status --json"));
    let s: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(
        (&s["armed"], &s["binary"]),
        (&true.into(), &GUARD_COPY.into()),
        "{s}"
    );
    // verify-runtime.sh with the guard binary, in the running container (no artifact mounted).
    let said = tools.run_in(
        &image,
        "bash /usr/local/share/rocm-pin/docker/verify-runtime.sh 2>&1",
    );
    assert!(said.contains("verify-runtime: OK"), "{said}");

    // A later step forcing the stock runtime back fails the build at that step.
    let file = std::fs::read_to_string(ctx.join("rocm-pin/sglang.Dockerfile")).unwrap();
    let verify_line = "RUN --mount=type=bind,from=rocm-pin-runtime,target=/tmp/rocm-pin \\\n    bash /usr/local/share/rocm-pin/docker/verify-runtime.sh\n";
    let without_verify = file
        .strip_suffix(verify_line)
        .unwrap_or_else(|| panic!("sglang.Dockerfile must end with the verify step:\n{file}"));
    let revert = "RUN dpkg -i --force-all /srv/rocm-stock/hip-runtime-amd_*.deb\n";
    std::fs::write(
        ctx.join("rocm-pin/revert-guard.Dockerfile"),
        format!("{without_verify}{revert}{verify_line}"),
    )
    .unwrap();
    let reverted = run.tag("reverted");
    let out = tools.build(&ctx, "revert-guard.Dockerfile", &reverted, &args);
    let s = text(&out);
    assert_ne!(rc(&out), 0, "the reverting build passed:\n{}", tail(&out));
    assert!(
        s.contains("RUN dpkg -i --force-all")
            && !s.contains("verify-runtime: ")
            && s.contains("FAIL stock-absent hip-runtime-amd")
            && s.contains("left the patched ROCm runtime broken"),
        "the guard binary did not fail the reverting RUN:\n{}",
        tail(&out)
    );
    assert!(!tools.exists(&reverted));
}
