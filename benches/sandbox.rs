//! Benchmark (not a test): how long a fresh chroot sandbox takes, per backend, against what a
//! person would otherwise run — unpacking the cached image with `tar --zstd -xf` into a new
//! directory and `rm -rf` after. Medians of RUNS (default 5) alternating runs, as ratios.
//! Run by `scripts/bench-sandbox` (needs root and the cached bookworm image). Under
//! `cargo test --all-targets` it only says how to run it.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use rocm_pin_kit::sandbox::{Backend, ChrootImage, Sandbox, SandboxOptions};
use rocm_pin_testkit::cache_dir as test_cache_dir;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// `tar --zstd -xf` of the image into a fresh directory, then `rm -rf`: (create, remove) seconds.
fn plain_tar(tarball: &Path) -> (f64, f64) {
    let dir = tempfile::Builder::new()
        .prefix("rocm-pin-bench-tar-")
        .tempdir()
        .unwrap();
    let start = Instant::now();
    let st = Command::new("tar")
        .args(["--zstd", "-xf"])
        .arg(tarball)
        .arg("-C")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(st.success(), "tar failed");
    let create = start.elapsed().as_secs_f64();
    let start = Instant::now();
    drop(dir);
    (create, start.elapsed().as_secs_f64())
}

fn sandbox(image: &ChrootImage, backend: Backend) -> (f64, f64) {
    let start = Instant::now();
    let sb = Sandbox::with_options(
        image,
        &SandboxOptions {
            backend: Some(backend),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e:#}"));
    let create = start.elapsed().as_secs_f64();
    let start = Instant::now();
    drop(sb);
    (create, start.elapsed().as_secs_f64())
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!(
            "sandbox benchmark: run scripts/bench-sandbox (or cargo bench --bench sandbox) as root"
        );
        return;
    }
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let cache = test_cache_dir();
    let tarball = cache.join("chroot/bookworm-apt.tar.zst");
    let image = ChrootImage::existing("bookworm", &cache).unwrap_or_else(|e| panic!("{e:#}"));
    // Warm the overlay's unpacked lower layer, as every test run after the first has it.
    let _warm = sandbox(&image, Backend::Overlay);
    let mut tar = (Vec::new(), Vec::new());
    let mut ours: Vec<(Backend, Vec<f64>, Vec<f64>)> = [Backend::Overlay, Backend::Copy]
        .into_iter()
        .map(|b| (b, Vec::new(), Vec::new()))
        .collect();
    for _ in 0..runs {
        let (c, r) = plain_tar(&tarball);
        tar.0.push(c);
        tar.1.push(r);
        for (backend, create, remove) in &mut ours {
            let (c, r) = sandbox(&image, *backend);
            create.push(c);
            remove.push(r);
        }
    }
    let (tar_c, tar_r) = (median(tar.0), median(tar.1));
    println!(
        "sandbox bench: {runs} alternating runs, medians; baseline `tar --zstd -xf` + `rm -rf`"
    );
    println!("  tar --zstd -xf      create {tar_c:.3}s  remove {tar_r:.3}s");
    for (backend, create, remove) in ours {
        let (c, r) = (median(create), median(remove));
        println!(
            "  sandbox {:<11} create {c:.3}s  remove {r:.3}s  create ratio {:.2}  total ratio {:.2}",
            format!("{backend:?}"),
            c / tar_c,
            (c + r) / (tar_c + tar_r)
        );
    }
}
