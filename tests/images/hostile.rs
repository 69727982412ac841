//! Hostile images, as an attacker would craft them (issue 21): archives built here byte by byte,
//! no buildah or registry needed. A layer bomb, digests that lie (sha512, unsupported
//! algorithms, docker-archive diff_ids), whiteouts that name no plain entry, the unpack limits,
//! and the temporary root removed when SIGINT, SIGTERM or SIGHUP ends `verify --image-archive`.

use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::timed::{measure, stderr_without_time, under_time};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rocm_pin_core::deb::compress::{Compression, Encoder};
// A layer entry (`Spec`): name, kind, contents (files only).
use rocm_pin_core::deb::crafted::{file, tar_of, Entry as Spec};
use rocm_pin_core::deb::tar::{TarWriter, WriteKind};
use rocm_pin_core::image::limits::ImageLimits;
use rocm_pin_core::image::ImageError;
use rocm_pin_core::image::{unpack, unpack_within, ImageSource};
use sha2::Digest as _;

use super::util::{bin, rc, text};

fn sha256(data: &[u8]) -> String {
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(data)))
}

fn sha512(data: &[u8]) -> String {
    format!("sha512:{}", hex::encode(sha2::Sha512::digest(data)))
}

fn blob_name(digest: &str) -> String {
    let (alg, hex) = digest.split_once(':').unwrap();
    format!("blobs/{alg}/{hex}")
}

/// An oci-archive of one image: each layer is (blob bytes, the digest the manifest names it by).
fn oci_archive(dir: &Path, name: &str, layers: &[(Vec<u8>, String)]) -> PathBuf {
    oci_archive_sized(dir, name, layers, |blob| blob.len())
}

/// [`oci_archive`] with each layer descriptor's `size` from `size_of`.
fn oci_archive_sized(
    dir: &Path,
    name: &str,
    layers: &[(Vec<u8>, String)],
    size_of: impl Fn(&[u8]) -> usize,
) -> PathBuf {
    let config = br#"{"config":{"Labels":{"io.example":"hostile"}},"rootfs":{"type":"layers"}}"#;
    let layer_descs: Vec<String> = layers
        .iter()
        .map(|(blob, d)| {
            format!(
                r#"{{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"{d}","size":{}}}"#,
                size_of(blob)
            )
        })
        .collect();
    let manifest = format!(
        r#"{{"schemaVersion":2,"config":{{"digest":"{}"}},"layers":[{}]}}"#,
        sha256(config),
        layer_descs.join(",")
    );
    let index = format!(
        r#"{{"schemaVersion":2,"manifests":[{{"digest":"{}"}}]}}"#,
        sha256(manifest.as_bytes())
    );
    let manifest_blob = blob_name(&sha256(manifest.as_bytes()));
    let config_blob = blob_name(&sha256(config));
    let layer_blobs: Vec<String> = layers.iter().map(|(_, d)| blob_name(d)).collect();
    let mut files: Vec<Spec<'_>> = vec![
        (
            "oci-layout",
            file(br#"{"imageLayoutVersion":"1.0.0"}"#),
            br#"{"imageLayoutVersion":"1.0.0"}"#,
        ),
        ("index.json", file(index.as_bytes()), index.as_bytes()),
        (
            &manifest_blob,
            file(manifest.as_bytes()),
            manifest.as_bytes(),
        ),
        (&config_blob, file(config), config),
    ];
    for ((blob, _), path) in layers.iter().zip(&layer_blobs) {
        files.push((path, file(blob), blob));
    }
    let path = dir.join(name);
    std::fs::write(&path, tar_of(&files)).unwrap();
    path
}

/// A docker-archive (`docker save`) of one image whose config lists `diff_ids`.
fn docker_archive(dir: &Path, name: &str, layers: &[Vec<u8>], diff_ids: &[String]) -> PathBuf {
    let ids: Vec<String> = diff_ids.iter().map(|d| format!("{d:?}")).collect();
    let config = format!(
        r#"{{"config":{{"Labels":{{}}}},"rootfs":{{"type":"layers","diff_ids":[{}]}}}}"#,
        ids.join(",")
    );
    let names: Vec<String> = (0..layers.len())
        .map(|i| format!("l{i}/layer.tar"))
        .collect();
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    let manifest = format!(
        r#"[{{"Config":"config.json","RepoTags":["hostile:1"],"Layers":[{}]}}]"#,
        quoted.join(",")
    );
    let mut files: Vec<Spec<'_>> = vec![
        (
            "manifest.json",
            file(manifest.as_bytes()),
            manifest.as_bytes(),
        ),
        ("config.json", file(config.as_bytes()), config.as_bytes()),
    ];
    for (layer, n) in layers.iter().zip(&names) {
        files.push((n, file(layer), layer));
    }
    let path = dir.join(name);
    std::fs::write(&path, tar_of(&files)).unwrap();
    path
}

/// A plain layer: etc/hello.
fn hello_layer() -> Vec<u8> {
    tar_of(&[
        ("etc/", WriteKind::Dir, b""),
        ("etc/hello", file(b"world"), b"world"),
    ])
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = Encoder::new(Vec::new(), Compression::Gzip, Some(6), 1).unwrap();
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

fn our_error(err: &anyhow::Error) -> Option<&ImageError> {
    rocm_pin_core::error::find::<ImageError>(err)
}

#[test]
fn a_sha512_layer_is_checked_and_other_algorithms_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let layer = hello_layer();
    // Named by its true sha512: accepted.
    let good = oci_archive(t.path(), "good.tar", &[(layer.clone(), sha512(&layer))]);
    let img = unpack(&ImageSource::Archive(good)).unwrap();
    assert_eq!(
        std::fs::read(img.root().join("etc/hello")).unwrap(),
        b"world"
    );
    // Named by the sha512 of other bytes: refused, naming the layer.
    let lie = sha512(b"something else");
    let bad = oci_archive(t.path(), "bad.tar", &[(layer.clone(), lie.clone())]);
    let err = unpack(&ImageSource::Archive(bad)).unwrap_err();
    match our_error(&err) {
        Some(ImageError::ImageDigestMismatch {
            blob,
            expected,
            actual,
        }) => {
            assert!(
                blob.contains("layer 1 of 1") && blob.contains(&lie),
                "{err:#}"
            );
            assert_eq!((expected, actual), (&lie, &sha512(&layer)));
        }
        other => panic!("not a digest mismatch: {other:?}: {err:#}"),
    }
    // An algorithm the OCI spec does not register: refused as unsupported, as skopeo does.
    let md5 = format!("md5:{}", "0".repeat(32));
    let odd = oci_archive(t.path(), "odd.tar", &[(layer, md5)]);
    let err = unpack(&ImageSource::Archive(odd)).unwrap_err();
    assert!(
        format!("{err:#}").contains("unsupported digest algorithm"),
        "{err:#}"
    );
}

#[test]
fn a_layer_longer_than_its_descriptor_says_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let layer = hello_layer();
    let archive = oci_archive_sized(
        t.path(),
        "size.tar",
        &[(layer.clone(), sha256(&layer))],
        |blob| blob.len() - 512,
    );
    let err = unpack(&ImageSource::Archive(archive)).unwrap_err();
    assert!(
        format!("{err:#}").contains("but its descriptor says"),
        "{err:#}"
    );
}

#[test]
fn a_docker_archive_whose_layers_do_not_match_its_diff_ids_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let layer = hello_layer();
    let other = tar_of(&[("etc/evil", file(b"x"), b"x")]);
    let good = docker_archive(
        t.path(),
        "good.tar",
        std::slice::from_ref(&layer),
        &[sha256(&layer)],
    );
    let img = unpack(&ImageSource::Archive(good)).unwrap();
    assert_eq!(
        std::fs::read(img.root().join("etc/hello")).unwrap(),
        b"world"
    );
    // The layer swapped for another: its diff_id no longer matches.
    let swapped = docker_archive(t.path(), "swapped.tar", &[other], &[sha256(&layer)]);
    let err = unpack(&ImageSource::Archive(swapped)).unwrap_err();
    assert!(
        matches!(our_error(&err), Some(ImageError::ImageDigestMismatch { blob, .. }) if blob.contains("diff_id")),
        "{err:#}"
    );
    // One layer more than the config lists: refused (skopeo: "inconsistent layer count").
    let extra = docker_archive(
        t.path(),
        "extra.tar",
        &[layer.clone(), layer.clone()],
        &[sha256(&layer)],
    );
    let err = unpack(&ImageSource::Archive(extra)).unwrap_err();
    assert!(format!("{err:#}").contains("rootfs.diff_ids"), "{err:#}");
}

#[test]
fn whiteouts_that_name_no_plain_entry_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let base = tar_of(&[
        ("a/", WriteKind::Dir, b""),
        ("a/b/", WriteKind::Dir, b""),
        ("a/b/keep", file(b"k"), b"k"),
        ("a/sibling", file(b"s"), b"s"),
    ]);
    for name in [
        "a/b/.wh.",
        "a/b/.wh..",
        "a/b/.wh...",
        "a/.wh./b",
        "a/.wh.x/y",
    ] {
        let top = tar_of(&[(name, file(b""), b"")]);
        let archive = oci_archive(
            t.path(),
            "wh.tar",
            &[(base.clone(), sha256(&base)), (top.clone(), sha256(&top))],
        );
        let err = unpack(&ImageSource::Archive(archive)).expect_err(name);
        let msg = format!("{err:#}");
        assert!(
            msg.contains("layer 2 of 2") && msg.contains("whiteout"),
            "{name}: {msg}"
        );
    }
    // The opaque marker and a plain whiteout stay valid.
    let top = tar_of(&[
        ("a/b/.wh.keep", file(b""), b""),
        ("a/.wh..wh..opq", file(b""), b""),
    ]);
    let archive = oci_archive(
        t.path(),
        "ok.tar",
        &[(base.clone(), sha256(&base)), (top.clone(), sha256(&top))],
    );
    let img = unpack(&ImageSource::Archive(archive)).unwrap();
    assert!(img.root().join("a").is_dir());
    assert!(!img.root().join("a/b").exists() && !img.root().join("a/sibling").exists());
}

#[test]
fn entry_count_depth_file_size_and_total_limits_refuse_before_writing() {
    let t = tempfile::tempdir().unwrap();
    let deep = format!("{}/f", vec!["d"; 40].join("/"));
    let many: Vec<String> = (0..50).map(|i| format!("f{i}")).collect();
    let mut many_specs: Vec<Spec<'_>> = Vec::new();
    for n in &many {
        many_specs.push((n, file(b"x"), b"x"));
    }
    let big = vec![7u8; 3 << 20];
    let cases: Vec<(Vec<u8>, &str, &str, &str)> = vec![
        (tar_of(&many_specs), "entries=20", "entries", "f"),
        (
            tar_of(&[(&deep, file(b"x"), b"x")]),
            "depth=32",
            "depth",
            "d/d/d",
        ),
        (
            tar_of(&[("big", file(&big), &big)]),
            "file-bytes=1M",
            "file-bytes",
            "big",
        ),
        // Compressed, so that the archive's own blob stays within the total.
        (
            gzip(&tar_of(&[("big", file(&big), &big)])),
            "bytes=2M",
            "bytes",
            "big",
        ),
    ];
    for (layer, spec, key, entry) in cases {
        let archive = oci_archive(t.path(), "l.tar", &[(layer.clone(), sha256(&layer))]);
        // Within the default limits every one of them unpacks.
        unpack(&ImageSource::Archive(archive.clone())).unwrap_or_else(|e| panic!("{spec}: {e:#}"));
        let mut limits = ImageLimits::default();
        limits.set(spec).unwrap();
        let err = unpack_within(&ImageSource::Archive(archive), &limits).expect_err(spec);
        match our_error(&err) {
            Some(ImageError::ImageLimit {
                place,
                entry: e,
                limit,
                ..
            }) => {
                assert_eq!(*limit, key, "{err:#}");
                // The archive itself is within the limit: the layer is what passes it.
                assert!(place.contains(&sha256(&layer)), "{spec}: {err:#}");
                assert!(e.contains(entry), "{spec}: {err:#}");
            }
            other => panic!("{spec}: not an ImageLimit: {other:?}: {err:#}"),
        }
        assert!(
            format!("{err}").contains(&format!("--image-limit {key}=")),
            "{err}"
        );
    }
}

/// Bytes of regular files under `dir` now.
fn bytes_under(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// The rocm-pin-image-* directories in `tmp`.
fn temp_roots(tmp: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("rocm-pin-image-"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `rocm-pin verify --image-archive ARCHIVE` with its own TMPDIR.
fn spawn_verify(archive: &Path, tmp: &Path, extra: &[&str]) -> Child {
    rocm_pin_testkit::with_default_signals(&mut Command::new(bin()))
        .args(["verify", "--image-archive"])
        .arg(archive)
        .args(extra)
        .env("TMPDIR", tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_layer_bomb_is_refused_before_the_disk_fills() {
    // A 4 GiB file of zeros, zstd-compressed: ~140 KB on the wire.
    const BOMB: u64 = 4 << 30;
    let t = tempfile::tempdir().unwrap();
    let mut enc = Encoder::new(Vec::new(), Compression::Zstd, Some(1), 2).unwrap();
    {
        let mut w = TarWriter::new(&mut enc);
        w.append_header(b"zeros", WriteKind::File(BOMB), 0o644, 0)
            .unwrap();
        w.write_contents(
            &mut std::io::Read::take(std::io::repeat(0), BOMB),
            BOMB,
            &mut |_| {},
        )
        .unwrap();
        w.finish().unwrap();
    }
    let blob = enc.finish().unwrap();
    eprintln!("hostile: the bomb layer is {} bytes compressed", blob.len());
    assert!(blob.len() < 1 << 20, "{}", blob.len());
    let archive = oci_archive(t.path(), "bomb.tar", &[(blob.clone(), sha256(&blob))]);
    let tmp = t.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let start = Instant::now();
    let mut child = spawn_verify(&archive, &tmp, &[]);
    // Watch what it writes; stop it (the test fails) long before 4 GiB.
    let cap = 64u64 << 20;
    let mut peak = 0;
    let status = loop {
        peak = peak.max(bytes_under(&tmp));
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if peak > cap || start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the bomb was not refused: {peak} bytes written in {:?}",
                start.elapsed()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "hostile: bomb refused in {:.2}s, at most {peak} bytes seen in TMPDIR: {stderr}",
        start.elapsed().as_secs_f64()
    );
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("ratio") && stderr.contains(&sha256(&blob)),
        "{}",
        stderr
    );
    assert_says(&stderr, &["--image-limit ratio="]);
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(peak < cap, "{peak}");
    assert!(
        temp_roots(&tmp).is_empty(),
        "temp root left: {:?}",
        temp_roots(&tmp)
    );
}

/// Feeds an oci-archive into a FIFO: a blob entry of 1 GiB whose bytes come slowly and
/// forever (until the reader goes, or `stop`), or not at all after the header (`stall`).
fn feed_fifo(fifo: PathBuf, stall: bool, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&fifo) else {
            return;
        };
        let mut header = Vec::new();
        {
            let mut w = TarWriter::new(&mut header);
            let name = format!("blobs/sha256/{}", "0".repeat(64));
            w.append_header(name.as_bytes(), WriteKind::File(1 << 30), 0o644, 0)
                .unwrap();
            // finish() would end the archive: only the header block is sent.
        }
        let _ = f.write_all(&header[..512]);
        let chunk = vec![0u8; 64 << 10];
        while !stop.load(Ordering::SeqCst) {
            if stall {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            if f.write_all(&chunk).is_err() {
                return; // the reader went away
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    })
}

/// Start verify on a FIFO archive, wait until its temporary root holds part of the blob, send
/// `signal`; it must end with 128+signal and leave no temporary root.
fn signal_mid_unpack(signal: &str, number: i32, stall: bool) {
    let t = tempfile::tempdir().unwrap();
    let tmp = t.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let fifo = t.path().join("image.fifo");
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    let stop = Arc::new(AtomicBool::new(false));
    let mut child = spawn_verify(&fifo, &tmp, &[]);
    let feeder = feed_fifo(fifo, stall, Arc::clone(&stop));
    let start = Instant::now();
    // Mid-unpack: the temporary root exists and holds the blob's file.
    loop {
        let roots = temp_roots(&tmp);
        let started = roots.iter().any(|r| r.join("layout/blobs/sha256").is_dir());
        if started && (stall || bytes_under(&tmp) > 0) {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "verify ended before the signal"
        );
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the unpack never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let st = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(st.success());
    let sent = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if sent.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("verify did not end within 20 s of SIG{signal}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    stop.store(true, Ordering::SeqCst);
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "hostile: SIG{signal} ({}) -> {status:?} after {:.2}s: {stderr}",
        if stall {
            "blocked in a read"
        } else {
            "writing"
        },
        sent.elapsed().as_secs_f64()
    );
    assert_eq!(status.code(), Some(128 + number), "SIG{signal}: {stderr}");
    assert_says(&stderr, &["interrupted by signal"]);
    assert!(
        temp_roots(&tmp).is_empty(),
        "SIG{signal}: temp root left: {:?}",
        temp_roots(&tmp)
    );
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "SIG{signal}: left in TMPDIR: {left:?}");
}

/// Issue 31 item 9: only INT, TERM and HUP were caught; any other terminating signal (QUIT,
/// USR1, …) mid-unpack left the whole unpacked image in TMPDIR (fails on f225f56: SIGQUIT left
/// the rocm-pin-image-* root). Every catchable terminating signal (INT, TERM and HUP among
/// them, one row each) now removes it.
#[test]
fn every_terminating_signal_mid_unpack_removes_the_temporary_root() {
    for &(name, number) in rocm_pin_testkit::TERMINATING_SIGNALS {
        signal_mid_unpack(name, number, false);
    }
}

#[test]
fn a_signal_while_blocked_reading_a_pipe_still_removes_the_temporary_root() {
    signal_mid_unpack("TERM", 15, true);
}

#[test]
fn the_limit_error_is_one_line_naming_layer_entry_limit_and_flag() {
    let t = tempfile::tempdir().unwrap();
    let big = vec![1u8; 2 << 20];
    let layer = tar_of(&[("opt/", WriteKind::Dir, b""), ("opt/big", file(&big), &big)]);
    let archive = oci_archive(t.path(), "l.tar", &[(layer.clone(), sha256(&layer))]);
    let tmp = t.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let out = spawn_verify(&archive, &tmp, &["--image-limit", "file-bytes=1M"])
        .wait_with_output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(rc(&out), 2, "{}", text(&out));
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    for needle in [
        "layer 1 of 1",
        sha256(&layer).as_str(),
        "\"opt/big\"",
        "file-bytes=1048576",
        "--image-limit file-bytes=N",
    ] {
        assert!(stderr.contains(needle), "{needle:?} in {stderr}");
    }
    assert!(temp_roots(&tmp).is_empty());
    // A bad limit is a usage error naming the keys.
    let out = spawn_verify(&archive, &tmp, &["--image-limit", "size=1"])
        .wait_with_output()
        .unwrap();
    assert_eq!(rc(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("keys: bytes, entries"));
}

/// A line that reads like a passing check, after a newline, then an OSC title sequence, an
/// erase-line sequence, a C1 CSI and a right-to-left override.
const FORGED_LINE: &str = "ok   forged           all checks passed";
const ESCAPES: &str = "\x1b]0;owned\x07\x1b[2K\u{9b}2K\u{202e}";

/// No control character but the renderer's newlines and tabs, no bidi override, no forged
/// line of its own.
#[track_caller]
fn assert_escaped(text: &str, what: &str) {
    rocm_pin_testkit::assert_escaped(text, FORGED_LINE, what);
}

/// An image layer with one of our packages in its dpkg status (Version with escapes), the
/// marker its file list names (commit with a newline and escapes), and a file whose tar
/// entry name carries escapes, listed in the marker with a wrong hash.
fn image_with_hostile_text(forged_commit: &str, forged_file: &str, version: &str) -> Vec<u8> {
    let marker = serde_json::json!({
        "commit": forged_commit, "commit_time": 1_700_000_000, "flavor": "pinned",
        "prefix": "/opt/rocm-7.2.4", "replaced": [], "libraries": [],
        "files": { format!("/{forged_file}"): "0".repeat(64) }, "tool_version": "test",
    })
    .to_string();
    let status = format!(
        "Package: hsa-rocr-pinned\nStatus: install ok installed\nArchitecture: amd64\n\
         Version: {version}\nX-Rocm-Pin-Commit: {}\nDescription: x{ESCAPES}\n",
        "a".repeat(40)
    );
    let list = "/opt/rocm-7.2.4/.info/rocm-pin.json\n";
    tar_of(&[
        ("var/", WriteKind::Dir, b""),
        ("var/lib/", WriteKind::Dir, b""),
        ("var/lib/dpkg/", WriteKind::Dir, b""),
        ("var/lib/dpkg/info/", WriteKind::Dir, b""),
        (
            "var/lib/dpkg/status",
            file(status.as_bytes()),
            status.as_bytes(),
        ),
        (
            "var/lib/dpkg/info/hsa-rocr-pinned.list",
            file(list.as_bytes()),
            list.as_bytes(),
        ),
        ("opt/", WriteKind::Dir, b""),
        ("opt/rocm-7.2.4/", WriteKind::Dir, b""),
        ("opt/rocm-7.2.4/.info/", WriteKind::Dir, b""),
        (
            "opt/rocm-7.2.4/.info/rocm-pin.json",
            file(marker.as_bytes()),
            marker.as_bytes(),
        ),
        ("opt/rocm-7.2.4/lib/", WriteKind::Dir, b""),
        (forged_file, file(b"forged"), b"forged"),
    ])
}

/// Issue 31 item 7: `verify --image-archive` of an image whose marker, dpkg status and tar
/// entry names carry newlines and escape sequences shows them escaped in its text (and its
/// `--quiet` lines, the guard's output), and exactly in its JSON.
#[test]
fn control_characters_from_an_image_are_escaped_in_text_and_exact_in_json() {
    let t = tempfile::tempdir().unwrap();
    let commit = format!("{}\n{FORGED_LINE}{ESCAPES}", "a".repeat(40));
    let forged_file = format!("opt/rocm-7.2.4/lib/forged{ESCAPES}");
    let version = format!("1.0{ESCAPES}");
    let layer = image_with_hostile_text(&commit, &forged_file, &version);
    let archive = oci_archive(t.path(), "text.tar", &[(layer.clone(), sha256(&layer))]);
    let tmp = t.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();

    let out = spawn_verify(&archive, &tmp, &[])
        .wait_with_output()
        .unwrap();
    assert_eq!(rc(&out), 1, "{}", text(&out));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_escaped(&stdout, "verify --image-archive");
    for shown in [
        "\\nok   forged",
        "forged\\x1b]0;owned\\x07\\x1b[2K\\u{9b}2K\\u{202e}",
    ] {
        assert!(stdout.contains(shown), "{shown} not shown:\n{stdout}");
    }
    let quiet = spawn_verify(&archive, &tmp, &["--quiet"])
        .wait_with_output()
        .unwrap();
    assert_escaped(&String::from_utf8(quiet.stderr).unwrap(), "--quiet");

    let json = spawn_verify(&archive, &tmp, &["--json"])
        .wait_with_output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let checks = report["checks"].as_array().unwrap();
    assert!(
        checks
            .iter()
            .any(|c| c["subject"] == format!("/{forged_file}").as_str()),
        "the JSON must name the file exactly: {report}"
    );
    assert!(
        checks
            .iter()
            .any(|c| c["detail"].as_str().is_some_and(|d| d.contains(&commit))),
        "the JSON must carry the commit exactly: {report}"
    );
    assert!(temp_roots(&tmp).is_empty());
}

/// `rocm-pin verify --image-archive ARCHIVE` under `/usr/bin/time`, killed after `bound`:
/// (output, peak RSS in KiB, CPU time, user and system). A run killed at the bound fails the
/// test. CPU time, not wall time: the machine may be busy with other work.
fn timed_verify(
    archive: &Path,
    tmp: &Path,
    bound: Duration,
) -> (std::process::Output, u64, Duration) {
    let start = Instant::now();
    let mut child = under_time(&bin())
        .args(["verify", "--image-archive"])
        .arg(archive)
        .env("TMPDIR", tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            for root in temp_roots(tmp) {
                let _ = std::fs::remove_dir_all(root);
            }
            panic!("verify --image-archive still running after {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let (rss, cpu) = measure(&String::from_utf8_lossy(&out.stderr));
    (out, rss, cpu)
}

/// Issue 31 item 5: every `.wh..wh..opq` listed its directory and looked each name up, so N
/// opaque whiteouts of a directory of M files cost N×M (20 000 files and 2 000 opaque entries,
/// a 145 KB layer, took 18-40 s). Now a directory is listed once per layer. The layer here
/// (20 000 files, 20 000 opaque whiteouts of their directory) took f225f56 minutes.
#[test]
fn opaque_whiteouts_cost_what_they_remove() {
    const FILES: usize = 20_000;
    const OPAQUE: usize = 20_000;
    let t = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..FILES).map(|i| format!("d/f{i}")).collect();
    let mut entries: Vec<Spec<'_>> = vec![("d/", WriteKind::Dir, b"")];
    for n in &names {
        entries.push((n, file(b""), b""));
    }
    entries.extend(std::iter::repeat_n(
        ("d/.wh..wh..opq", file(b""), &b""[..]),
        OPAQUE,
    ));
    let layer = gzip(&tar_of(&entries));
    // A lower layer whose entries the first opaque whiteout removes.
    let lower = gzip(&tar_of(&[
        ("d/", WriteKind::Dir, b""),
        ("d/lower", file(b"x"), b"x"),
    ]));
    let archive = oci_archive(
        t.path(),
        "opaque.tar",
        &[
            (lower.clone(), sha256(&lower)),
            (layer.clone(), sha256(&layer)),
        ],
    );
    let tmp = t.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let (out, rss, elapsed) = timed_verify(&archive, &tmp, Duration::from_secs(90));
    let stderr = stderr_without_time(&out);
    eprintln!(
        "hostile: {FILES} files + {OPAQUE} opaque whiteouts ({} bytes gzip): exit {}, {:.2}s CPU, peak RSS {} MiB: {}",
        layer.len(),
        rc(&out),
        elapsed.as_secs_f64(),
        rss / 1024,
        stderr.lines().next().unwrap_or("")
    );
    // Unpacked, then judged as a root (not a Debian one: no dpkg status).
    assert_says(&stderr, &["dpkg status"]);
    assert!(temp_roots(&tmp).is_empty());
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?} of CPU");
}

/// A tar stream of `count` extension records of `kind` (`g`: pax global, `L`: GNU long
/// name) of `each` bytes, then one file, compressed with zstd.
fn extension_bomb(kind: u8, count: usize, each: usize) -> Vec<u8> {
    let mut record = vec![0u8; 512];
    record[..13].copy_from_slice(b"././@LongLink");
    record[100..107].copy_from_slice(b"0000644");
    record[124..135].copy_from_slice(format!("{each:011o}").as_bytes());
    record[156] = kind;
    record[257..265].copy_from_slice(b"ustar  \0");
    record[148..156].fill(b' ');
    let sum: u32 = record.iter().map(|&b| u32::from(b)).sum();
    record[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    let mut body = match kind {
        // One valid pax record filling the data: "<len> comment=xxx…\n".
        b'g' => {
            let mut b = format!("{each} comment=").into_bytes();
            b.resize(each - 1, b'x');
            b.push(b'\n');
            b
        }
        _ => {
            let mut b = vec![b'n'; each - 1];
            b.push(0);
            b
        }
    };
    body.resize(each.div_ceil(512) * 512, 0);
    let mut enc = Encoder::new(Vec::new(), Compression::Zstd, Some(3), 2).unwrap();
    for _ in 0..count {
        enc.write_all(&record).unwrap();
        enc.write_all(&body).unwrap();
    }
    let tail = tar_of(&[("f", file(b"x"), b"x")]);
    enc.write_all(&tail).unwrap();
    enc.finish().unwrap()
}

/// Issue 31 item 6: pax global headers and GNU long names never counted against the ratio
/// limit (a 680 KB layer holding 16 GiB of pax global headers was read to the end), and a
/// 1 MiB GNU long name came back whole in a one-line error. Here 1 GiB of each kind, a few
/// tens of KB compressed: f225f56 reads all of it and accepts the layer.
#[test]
fn tar_extension_records_count_against_the_ratio_limit() {
    let t = tempfile::tempdir().unwrap();
    let tmp = t.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for (kind, what) in [(b'g', "pax global headers"), (b'L', "GNU long names")] {
        let blob = extension_bomb(kind, 1024, (1 << 20) - 512);
        let archive = oci_archive(t.path(), "ext.tar", &[(blob.clone(), sha256(&blob))]);
        let (out, rss, elapsed) = timed_verify(&archive, &tmp, Duration::from_secs(60));
        let stderr = stderr_without_time(&out);
        eprintln!(
            "hostile: 1 GiB of {what} ({} bytes zstd): exit {}, {:.2}s CPU, peak RSS {} MiB: {stderr}",
            blob.len(),
            rc(&out),
            elapsed.as_secs_f64(),
            rss / 1024
        );
        assert_eq!(rc(&out), 2, "{what}: {stderr}");
        assert!(stderr.contains("ratio"), "{what}: {stderr}");
        assert!(stderr.contains("--image-limit ratio="), "{what}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{what}: {stderr}");
        assert!(temp_roots(&tmp).is_empty());
        assert!(rss < 128 << 10, "{what}: peak RSS {rss} KiB");
    }
    // A 1 MiB GNU long name that is refused: the error quotes a short prefix of it.
    let long = format!("{}/../x", "n".repeat((1 << 20) - 100));
    let layer = tar_of(&[(&long, file(b"x"), b"x")]);
    let archive = oci_archive(t.path(), "long.tar", &[(layer.clone(), sha256(&layer))]);
    let (out, _, _) = timed_verify(&archive, &tmp, Duration::from_secs(60));
    let stderr = stderr_without_time(&out);
    assert_eq!(rc(&out), 2, "{}", &stderr[..stderr.len().min(500)]);
    assert!(
        stderr.contains("'..'"),
        "{}",
        &stderr[..stderr.len().min(500)]
    );
    assert!(stderr.len() < 1024, "a {}-byte error", stderr.len());
}

/// Issue 31 item 8: each symlink's target was checked alone, so `x -> .` and then
/// `a/b -> ../x/x/x/../..` (one level up from `a`, alone) resolved outside the root when
/// followed on the host; and a link written first can be made to leave by a later entry.
/// f225f56 unpacked both and judged the tree.
#[test]
fn a_chain_of_relative_links_leaving_the_root_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let tmp = t.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let chain = tar_of(&[
        ("x", WriteKind::Symlink(b"."), b""),
        ("a/", WriteKind::Dir, b""),
        ("a/b", WriteKind::Symlink(b"../x/x/x/../.."), b""),
    ]);
    // The escaping link first, the link that makes it escape in the next layer.
    let first = tar_of(&[
        ("a/", WriteKind::Dir, b""),
        ("a/b", WriteKind::Symlink(b"../x/x/../.."), b""),
    ]);
    let second = tar_of(&[("x", WriteKind::Symlink(b"."), b"")]);
    let cases = [
        (
            vec![chain],
            "\"a/b\" -> \"../x/x/x/../..\" leaves the image root",
        ),
        (
            vec![first, second],
            "\"a/b\" -> \"../x/x/../..\" leaves the image root",
        ),
    ];
    for (layers, needle) in cases {
        let blobs: Vec<(Vec<u8>, String)> = layers.iter().map(|l| (l.clone(), sha256(l))).collect();
        let archive = oci_archive(t.path(), "links.tar", &blobs);
        let (out, _, _) = timed_verify(&archive, &tmp, Duration::from_secs(60));
        let stderr = stderr_without_time(&out);
        eprintln!("hostile: link chain: exit {}: {stderr}", rc(&out));
        assert_eq!(rc(&out), 2, "{stderr}");
        assert!(stderr.contains(needle), "{needle:?} in {stderr}");
        assert_says(&stderr, &["\"x\" -> \".\""]);
        assert!(temp_roots(&tmp).is_empty());
    }
}
