//! The pinned RCCL next to the pinned pair in an image (issue 34, item 5):
//! docs/docker/rccl.Dockerfile, unchanged, built by buildah with `--network none` on the
//! stand-in base of `scripts/images base` (stock pair and stock `rccl` installed through apt).
//! The artifact in the build context holds the pair packaged against the stand-in stock .debs
//! (`rocm-pin build` of the stand-in source, `rocm-pin package`) and RCCL's replacement made
//! from a real CPack .deb (`rocm-pin package --family rccl --from-deb`). The image ends in
//! `rocm-pin verify` and the loader maps ours for librccl.so.1; the seed's
//! `dpkg -i --force-all <stock rccl>.deb && apt-get --fix-broken install -y` in a later RUN is
//! caught by the guard (that RUN fails, naming the rccl family), and the forced .deb with the
//! guard bypassed is caught by the last `rocm-pin verify` (exit 1, naming the family).
//!
//! Needs root and the OCI tools (scripts/install-deps); the base image is cached by
//! `scripts/images`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::util::*;
use rocm_pin_testkit::cpack::{cpack_rccl, CpackRccl};
use rocm_pin_testkit::{must, must_stdout};

const DOCKERFILE: &str = "rccl.Dockerfile";
const IDENTITY: &str = "rccl-CPACK-image";
const COMMIT_TIME: &str = "1764720000";

/// `ctx/rocm-pin-artifact/rocm-pin-<commit12>/`: debs/ (the pair), families/rccl/, bin/, COMMIT,
/// SHA256SUMS. Returns the pair's commit.
fn make_artifact(work: &Path, ctx: &Path) -> String {
    let stock = work.join("stock");
    must(
        Command::new(bin())
            .args(["standin", "stock", "--out"])
            .arg(&stock),
    );
    let stock_deb = |prefix: &str| -> PathBuf {
        rocm_pin_testkit::debs::debs_in(&stock.join("debs"))
            .into_iter()
            .find(|d| {
                d.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{prefix}_")))
            })
            .unwrap_or_else(|| panic!("no stock {prefix} in {}", stock.display()))
    };
    let src = work.join("rocm-systems");
    let commit = must_stdout(
        Command::new(bin())
            .args(["standin", "source", "--out"])
            .arg(&src),
    )
    .trim()
    .to_string();
    let staging = rocm_pin_testkit::build_standin_staging(&bin(), &src, &commit, work);
    let dir = ctx
        .join("rocm-pin-artifact")
        .join(format!("rocm-pin-{}", &commit[..12]));
    must(
        Command::new(bin())
            .args(["package", "--quiet", "--staging"])
            .arg(&staging)
            .arg("--stock-deb")
            .arg(stock_deb("hsa-rocr"))
            .arg(stock_deb("hip-runtime-amd"))
            .arg("--out")
            .arg(dir.join("debs"))
            .env("SOURCE_DATE_EPOCH", COMMIT_TIME),
    );
    let (custom, _) = cpack_rccl(
        &work.join("cpack"),
        &CpackRccl {
            soname_major: 1,
            architecture: None,
            identity: IDENTITY,
        },
    );
    must(
        Command::new(bin())
            .args(["package", "--quiet", "--family", "rccl", "--from-deb"])
            .arg(&custom)
            .arg("--stock-deb")
            .arg(stock_deb("rccl"))
            .args(["--commit", &commit, "--commit-time", COMMIT_TIME, "--out"])
            .arg(dir.join("families/rccl")),
    );
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::fs::copy(bin(), dir.join("bin/rocm-pin")).unwrap();
    std::fs::write(dir.join("COMMIT"), format!("{commit}\n")).unwrap();
    must(Command::new("sh").current_dir(&dir).args([
        "-c",
        "find . -type f ! -name SHA256SUMS | sort | xargs sha256sum > SHA256SUMS",
    ]));
    commit
}

/// rccl.Dockerfile with `extra` inserted before its last step (`RUN rocm-pin verify`).
fn variant(ctx: &Path, name: &str, extra: &str) {
    let file = std::fs::read_to_string(ctx.join("rocm-pin").join(DOCKERFILE)).unwrap();
    let last = "RUN rocm-pin verify\n";
    assert!(file.ends_with(last), "{DOCKERFILE} must end in {last:?}");
    let head = &file[..file.len() - last.len()];
    std::fs::write(
        ctx.join("rocm-pin").join(name),
        format!("{head}{extra}{last}"),
    )
    .unwrap();
}

#[test]
fn rccl_next_to_the_pair_in_an_image_and_the_seeds_revert_caught() {
    rocm_pin_testkit::needs_root!("image storage and runc");
    let _serial = one_image_test_at_a_time();
    let t0 = Instant::now();
    let work = tempfile::Builder::new()
        .prefix("rocm-pin-images-rccl-")
        .tempdir()
        .unwrap();
    let w = work.path();
    let tools = Tools { env: tool_env() };
    let run_id = format!("t{}", std::process::id());
    let tag = |name: &str| format!("localhost/rocm-pin-test/rccl-{name}:{run_id}");
    let mut tags = Tags {
        tools: &tools,
        tags: Vec::new(),
    };
    let base = images_ok(&["base"]);
    let ctx = recipe_context(w);
    let commit = make_artifact(w, &ctx);
    let args = [
        ("ROCM_IMAGE", base.as_str()),
        ("ROCM_PIN_COMMIT", commit.as_str()),
    ];

    // --- the recipe: the pair, RCCL, verify last --------------------------------------------
    let app = tag("app");
    tags.tags.push(app.clone());
    let t = Instant::now();
    let out = tools.build(&ctx, DOCKERFILE, &app, &args);
    let build_secs = t.elapsed().as_secs_f64();
    assert_eq!(rc(&out), 0, "{DOCKERFILE}:\n{}", tail(&out));
    let s = text(&out);
    assert!(
        s.contains("family           rccl:") && s.contains("verify: all"),
        "the last step did not check the rccl family:\n{}",
        tail(&out)
    );
    let maps = tools.run_in(
        &app,
        "rocm-pin-loader-probe librccl.so.1 libhsa-runtime64.so.1 libamdhip64.so.7",
    );
    assert!(maps.contains(IDENTITY), "librccl.so.1 is not ours:\n{maps}");
    assert!(
        maps.matches(&commit[..12]).count() >= 2 || maps.matches(&commit).count() >= 2,
        "the pair is not ours:\n{maps}"
    );
    let states = tools.run_in(
        &app,
        "dpkg-query -W -f '${db:Status-Abbrev}${Package}\\n' rccl-pinned hsa-rocr-pinned hip-runtime-amd-pinned rocm-hip-runtime hip-dev",
    );
    assert_eq!(
        states.lines().filter(|l| l.starts_with("ii")).count(),
        5,
        "{states}"
    );
    eprintln!(
        "images_rccl | recipe | 0 | {} | verify 0 | {build_secs:.1}s",
        maps.lines().next().unwrap_or("")
    );

    // --- the seed's revert in a later RUN: the guard fails that RUN -------------------------
    let seed =
        "RUN dpkg -i --force-all /srv/rocm-stock/rccl_*.deb && apt-get --fix-broken install -y\n";
    variant(&ctx, "rccl-seed.Dockerfile", seed);
    let guarded = tag("guarded");
    let t = Instant::now();
    let out = tools.build(&ctx, "rccl-seed.Dockerfile", &guarded, &args);
    let s = text(&out);
    eprintln!(
        "images_rccl | seed's dpkg -i --force-all + fix-broken RUN | {} | guard | {:.1}s",
        rc(&out),
        t.elapsed().as_secs_f64()
    );
    assert_ne!(rc(&out), 0, "the seed's RUN built:\n{}", tail(&out));
    assert!(
        s.contains("rocm-pin --guard: this dpkg run left")
            && s.contains("FAIL family rccl:")
            && !s.contains("RUN rocm-pin verify\n"),
        "the guard did not fail the seed's RUN naming the family:\n{}",
        tail(&out)
    );
    assert!(!tools.exists(&guarded));

    // --- the forced .deb with the guard bypassed: the last verify fails ---------------------
    let bypassed = "RUN ROCM_PIN_NO_GUARD=1 dpkg -i --force-all /srv/rocm-stock/rccl_*.deb\n";
    variant(&ctx, "rccl-bypass.Dockerfile", bypassed);
    let reverted = tag("reverted");
    let t = Instant::now();
    let out = tools.build(&ctx, "rccl-bypass.Dockerfile", &reverted, &args);
    let s = text(&out);
    eprintln!(
        "images_rccl | ROCM_PIN_NO_GUARD=1 dpkg -i --force-all RUN, then verify | {} | verify | {:.1}s",
        rc(&out),
        t.elapsed().as_secs_f64()
    );
    assert_eq!(rc(&out), 1, "the bypassed revert built:\n{}", tail(&out));
    assert!(
        s.contains("FAIL family           rccl:") && s.contains("stock-absent     rccl:"),
        "verify did not name the rccl family:\n{}",
        tail(&out)
    );
    assert!(!tools.exists(&reverted));
    eprintln!(
        "images_rccl: end to end in {:.1}s",
        t0.elapsed().as_secs_f64()
    );
    drop(tags);
}
