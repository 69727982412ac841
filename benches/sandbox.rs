//! Benchmark (not a test): how long a fresh chroot sandbox takes, per backend, against what a
//! person would otherwise run — unpacking the cached image with `tar --zstd -xf` into a new
//! directory and `rm -rf` after. RUNS (default 6, rounded up to a multiple of 6) runs of each, in
//! the orders of a balanced Latin square (each side first, second and last equally often, each
//! ordered pair adjacent equally often: the 3 rotations, then each reversed); min/median/max per
//! side, and each ratio paired per run: the median of the per-run ratios with their min and max.
//! Run by `scripts/bench-sandbox` (needs root and the cached bookworm image). Under
//! `cargo test --all-targets` it only says how to run it.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use rocm_pin_kit::sandbox::{Backend, ChrootImage, Sandbox, SandboxOptions};
use rocm_pin_testkit::cache_dir as test_cache_dir;

/// `min/median/max` of `v` in seconds (or as ratios), three decimals.
fn spread(mut v: Vec<f64>) -> String {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    let median = (v[(n - 1) / 2] + v[n / 2]) / 2.0;
    format!("{:.3}/{:.3}/{:.3}", v[0], median, v[n - 1])
}

/// The side order of each run: a balanced Latin square over 3 sides (Williams design; for an odd
/// count the rows and then the rows reversed), repeated to at least `runs` rows.
fn balanced_orders(runs: usize) -> Vec<[usize; 3]> {
    let square: Vec<[usize; 3]> = (0..3).map(|r| [r, (r + 1) % 3, (r + 2) % 3]).collect();
    let reversed = square.iter().map(|&[a, b, c]| [c, b, a]);
    let design: Vec<[usize; 3]> = square.iter().copied().chain(reversed).collect();
    let whole = runs.div_ceil(design.len()).max(1);
    design
        .iter()
        .copied()
        .cycle()
        .take(whole * design.len())
        .collect()
}

/// Per-run ratios `a[i] / b[i]` (the runs of one round share the machine's state).
fn ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x / y).collect()
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
        .unwrap_or(6);
    let orders = balanced_orders(runs);
    let runs = orders.len();
    let cache = test_cache_dir();
    let tarball = cache.join("chroot/bookworm-apt.tar.zst");
    let image = ChrootImage::existing("bookworm", &cache).unwrap_or_else(|e| panic!("{e:#}"));
    // Warm the overlay's unpacked lower layer, as every test run after the first has it.
    let _warm = sandbox(&image, Backend::Overlay);
    // Side 0 is the tar baseline, 1 and 2 the two backends: (create, remove) seconds per run.
    let backends = [Backend::Overlay, Backend::Copy];
    let mut times: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); 3];
    for order in &orders {
        for &side in order {
            let (c, r) = match side {
                0 => plain_tar(&tarball),
                _ => sandbox(&image, backends[side - 1]),
            };
            times[side].0.push(c);
            times[side].1.push(r);
        }
    }
    println!(
        "sandbox bench: {runs} runs per side, orders a balanced Latin square (rotations, then \
         reversed); seconds min/median/max; ratios paired per run; baseline `tar --zstd -xf` + `rm -rf`"
    );
    let (tar_c, tar_r) = &times[0];
    println!(
        "  tar --zstd -xf      create {}  remove {}",
        spread(tar_c.clone()),
        spread(tar_r.clone())
    );
    let tar_total: Vec<f64> = tar_c.iter().zip(tar_r).map(|(c, r)| c + r).collect();
    for (backend, (create, remove)) in backends.iter().zip(&times[1..]) {
        let total: Vec<f64> = create.iter().zip(remove).map(|(c, r)| c + r).collect();
        println!(
            "  sandbox {:<11} create {}  remove {}  create ratio {}  total ratio {} (per-run min/median/max)",
            format!("{backend:?}"),
            spread(create.clone()),
            spread(remove.clone()),
            spread(ratios(create, tar_c)),
            spread(ratios(&total, &tar_total))
        );
    }
}
