//! Hostile and broken .deb files: every one is refused with a one-line error naming the file
//! and the problem, a non-zero exit and no panic, and extraction writes nothing outside its
//! destination.

use rocm_pin_testkit::assert_says;
use std::fs;
use std::path::Path;
use std::process::Command;

use crate::util::deb::*;
use rocm_pin_core::deb::ar::ArWriter;
use rocm_pin_core::deb::compress::compress_bytes;
use rocm_pin_core::deb::tar::{TarWriter, WriteKind};
use rocm_pin_core::deb::{self, Compression, ReadLimits};

type TarSpec<'a> = Vec<(&'a [u8], WriteKind<'a>, &'a [u8])>;

fn tar(entries: &TarSpec<'_>) -> Vec<u8> {
    let mut w = TarWriter::new(Vec::new());
    for (name, kind, data) in entries {
        w.append_header(name, *kind, 0o644, SDE).unwrap();
        if let WriteKind::File(n) = kind {
            w.write_contents(&mut &data[..], *n, &mut |_| {}).unwrap();
        }
    }
    w.finish().unwrap()
}

fn control_tar(control: &str) -> Vec<u8> {
    tar(&vec![
        (b"./", WriteKind::Dir, b""),
        (
            b"./control",
            WriteKind::File(control.len() as u64),
            control.as_bytes(),
        ),
    ])
}

fn good_data() -> Vec<u8> {
    tar(&vec![
        (b"./", WriteKind::Dir, b""),
        (b"./usr/", WriteKind::Dir, b""),
        (b"./usr/f", WriteKind::File(5), b"hello"),
    ])
}

/// An ar with the given members, compressing each tar with `c`.
fn deb_bytes(control: &[u8], data: &[u8], c: Compression, data_name: Option<&str>) -> Vec<u8> {
    let mut ar = ArWriter::new(Vec::new(), SDE).unwrap();
    ar.append_bytes("debian-binary", b"2.0\n").unwrap();
    ar.append_bytes(
        &format!("control.tar{}", c.suffix()),
        &compress_bytes(control, c, None, 1).unwrap(),
    )
    .unwrap();
    let name = data_name
        .map(str::to_string)
        .unwrap_or_else(|| format!("data.tar{}", c.suffix()));
    ar.append_bytes(&name, &compress_bytes(data, c, None, 1).unwrap())
        .unwrap();
    ar.finish().unwrap()
}

fn good_deb(c: Compression) -> Vec<u8> {
    deb_bytes(&control_tar(CONTROL), &good_data(), c, None)
}

/// `rocm-pin deb inspect` on `bytes`: must fail with exit 2, one line naming the file and
/// containing `needle`, and no panic.
fn refused(tmp: &Path, label: &str, bytes: &[u8], needle: &str) {
    let file = tmp.join(format!("{label}.deb"));
    fs::write(&file, bytes).unwrap();
    let res = Command::new(bin())
        .args(["deb", "inspect"])
        .arg(&file)
        .output()
        .unwrap();
    let err =
        rocm_pin_testkit::assert_refused_in_one_line(&res, label, &[&file.display().to_string()]);
    assert!(
        err.to_lowercase().contains(&needle.to_lowercase()),
        "{label}: expected {needle:?} in {err}"
    );
    // The library refuses it too, with the same message shape.
    assert!(deb::reader::read_deb(&file, &ReadLimits::default()).is_err());
}

#[test]
fn the_good_baseline_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    for c in ALL_COMPRESSIONS {
        let file = tmp.path().join(format!("good-{c}.deb"));
        fs::write(&file, good_deb(c)).unwrap();
        must(Command::new(bin()).args(["deb", "inspect"]).arg(&file));
        // dpkg-deb agrees that the baseline is a valid package.
        must(Command::new("dpkg-deb").arg("-c").arg(&file));
    }
}

#[test]
fn truncation_anywhere_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    for c in ALL_COMPRESSIONS {
        let bytes = good_deb(c);
        // Every prefix through the library (fast) …
        let last_member_odd = {
            let info = deb::reader::read_deb_from(
                &bytes[..],
                bytes.len() as u64,
                "x",
                &ReadLimits::default(),
            )
            .unwrap();
            info.members.last().unwrap().size % 2 == 1
        };
        let accepted_from = if last_member_odd {
            bytes.len() - 1
        } else {
            bytes.len()
        };
        for len in 0..accepted_from {
            let cut = &bytes[..len];
            assert!(
                deb::reader::read_deb_from(cut, len as u64, "cut", &ReadLimits::default()).is_err(),
                "{c}: prefix of {len} bytes accepted"
            );
        }
        // … and each member boundary through the CLI.
        let control_len = compress_bytes(&control_tar(CONTROL), c, None, 1)
            .unwrap()
            .len();
        let control_end = 8 + 60 + 4 + 60 + control_len + control_len % 2;
        for (label, at, needle) in [
            ("empty", 0, "ar magic"),
            ("magic-only", 8, "no debian-binary"),
            ("in-header", 8 + 30, "truncated ar header"),
            ("after-binary", 8 + 60 + 4, "no control member"),
            (
                "in-control",
                8 + 60 + 4 + 60 + control_len / 2,
                "control.tar",
            ),
            ("after-control", control_end, "no data member"),
            ("after-data-header", control_end + 60, "data.tar"),
            ("in-data", control_end + 60 + 10, "data.tar"),
        ] {
            refused(
                tmp.path(),
                &format!("trunc-{label}-{c}"),
                &bytes[..at],
                needle,
            );
        }
    }
}

#[test]
fn container_damage_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let good = good_deb(Compression::Xz);

    let mut wrong_magic = good.clone();
    wrong_magic[..8].copy_from_slice(b"!<arcx>\n");
    refused(tmp.path(), "wrong-magic", &wrong_magic, "ar magic");

    refused(
        tmp.path(),
        "not-a-deb",
        b"just some text, not an archive",
        "ar magic",
    );

    // The debian-binary size field is at 8+48.
    let mut bad_size = good.clone();
    bad_size[8 + 48..8 + 58].copy_from_slice(b"4x        ");
    refused(
        tmp.path(),
        "ar-size-not-decimal",
        &bad_size,
        "not a decimal number",
    );

    let mut huge = good.clone();
    huge[8 + 60 + 4 + 48..8 + 60 + 4 + 58].copy_from_slice(b"9999999999");
    refused(tmp.path(), "ar-size-too-large", &huge, "only");

    let mut no_terminator = good.clone();
    no_terminator[8 + 58] = b'x';
    refused(
        tmp.path(),
        "ar-header-terminator",
        &no_terminator,
        "header terminator",
    );

    let mut version = good.clone();
    version[8 + 60] = b'3';
    refused(tmp.path(), "debian-binary-3", &version, "debian-binary");

    let unknown = deb_bytes(
        &control_tar(CONTROL),
        &good_data(),
        Compression::Xz,
        Some("data.tar.bz2"),
    );
    refused(
        tmp.path(),
        "unknown-compression",
        &unknown,
        "unknown compression",
    );

    let extra = {
        let mut ar = ArWriter::new(Vec::new(), 0).unwrap();
        ar.append_bytes("debian-binary", b"2.0\n").unwrap();
        ar.append_bytes("evil.tar", b"x").unwrap();
        ar.finish().unwrap()
    };
    refused(tmp.path(), "unexpected-member", &extra, "evil.tar");

    for c in [Compression::Xz, Compression::Gzip, Compression::Zstd] {
        let data = compress_bytes(&good_data(), c, None, 1).unwrap();
        let mut corrupt = data.clone();
        let mid = corrupt.len() / 2;
        let end = (mid + 16).min(corrupt.len() - 4);
        for b in &mut corrupt[mid..end] {
            *b ^= 0xa5;
        }
        let mut ar = ArWriter::new(Vec::new(), 0).unwrap();
        ar.append_bytes("debian-binary", b"2.0\n").unwrap();
        ar.append_bytes(
            &format!("control.tar{}", c.suffix()),
            &compress_bytes(&control_tar(CONTROL), c, None, 1).unwrap(),
        )
        .unwrap();
        ar.append_bytes(&format!("data.tar{}", c.suffix()), &corrupt)
            .unwrap();
        let bytes = ar.finish().unwrap();
        refused(tmp.path(), &format!("corrupt-{c}"), &bytes, c.name());
        // The bytes are not what the suffix says.
        let mut ar = ArWriter::new(Vec::new(), 0).unwrap();
        ar.append_bytes("debian-binary", b"2.0\n").unwrap();
        ar.append_bytes(
            &format!("control.tar{}", c.suffix()),
            b"not compressed at all",
        )
        .unwrap();
        ar.append_bytes(&format!("data.tar{}", c.suffix()), &data)
            .unwrap();
        refused(
            tmp.path(),
            &format!("garbage-{c}"),
            &ar.finish().unwrap(),
            "control.tar",
        );
    }
}

#[test]
fn hostile_tar_entries_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, TarSpec<'_>, &str)> = vec![
        (
            "dotdot",
            vec![(b"./usr/../../etc/passwd", WriteKind::File(1), b"x")],
            "'..'",
        ),
        (
            "absolute",
            vec![(b"/etc/passwd", WriteKind::File(1), b"x")],
            "absolute",
        ),
        (
            "through-symlink",
            vec![
                (b"./lib", WriteKind::Symlink(b"/etc"), b""),
                (b"./lib/passwd", WriteKind::File(1), b"x"),
            ],
            "through the symlink",
        ),
        (
            "hardlink-through-symlink",
            vec![
                (b"./lib", WriteKind::Symlink(b"/etc"), b""),
                (b"./h", WriteKind::Hardlink(b"./lib/shadow"), b""),
            ],
            "through the symlink",
        ),
        (
            "hardlink-outside",
            vec![(b"./h", WriteKind::Hardlink(b"../../etc/shadow"), b"")],
            "'..'",
        ),
        (
            "duplicate",
            vec![
                (b"./f", WriteKind::File(1), b"x"),
                (b"./f", WriteKind::Symlink(b"/etc/passwd"), b""),
            ],
            "twice",
        ),
    ];
    for (label, entries, needle) in cases {
        let bytes = deb_bytes(&control_tar(CONTROL), &tar(&entries), Compression::Xz, None);
        refused(tmp.path(), label, &bytes, needle);
    }

    // Declared size larger than the data: a 4096-byte file header followed by 100 bytes.
    let mut data = Vec::new();
    {
        let mut w = TarWriter::new(&mut data);
        w.append_header(b"./big", WriteKind::File(4096), 0o644, 0)
            .unwrap();
    }
    data.extend_from_slice(&[b'a'; 100]);
    let bytes = deb_bytes(&control_tar(CONTROL), &data, Compression::None, None);
    refused(tmp.path(), "declared-size", &bytes, "declared size 4096");

    // Unknown entry type (a FIFO).
    let mut data = tar(&vec![(b"./fifo", WriteKind::File(0), b"")]);
    data[156] = b'6';
    data[148..156].fill(b' ');
    let sum: u32 = data[..512].iter().map(|&b| u32::from(b)).sum();
    data[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    let bytes = deb_bytes(&control_tar(CONTROL), &data, Compression::Gzip, None);
    refused(tmp.path(), "fifo", &bytes, "unsupported type");
}

#[test]
fn control_injection_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let second_paragraph = format!("{CONTROL}\nPackage: evil\nVersion: 1\n");
    let bytes = deb_bytes(
        &control_tar(&second_paragraph),
        &good_data(),
        Compression::Xz,
        None,
    );
    refused(tmp.path(), "second-paragraph", &bytes, "control");
    let injected_field = "Package: p\nVersion: 1\nArchitecture: all\nMaintainer: m\nDescription: d\nline without leading space\n";
    let bytes = deb_bytes(
        &control_tar(injected_field),
        &good_data(),
        Compression::Xz,
        None,
    );
    refused(tmp.path(), "continuation-injection", &bytes, "control");
    let no_control = tar(&vec![(b"./postinst", WriteKind::File(2), b"#!")]);
    let bytes = deb_bytes(&no_control, &good_data(), Compression::Xz, None);
    refused(tmp.path(), "no-control-file", &bytes, "no control file");
}

#[test]
fn decompression_bomb_stops_at_the_limit() {
    // 64 MiB of zeros compresses to a few KiB.
    let zeros = vec![0u8; 64 << 20];
    let data = tar(&vec![(
        b"./bomb",
        WriteKind::File(zeros.len() as u64),
        &zeros,
    )]);
    let bytes = deb_bytes(&control_tar(CONTROL), &data, Compression::Xz, None);
    assert!(bytes.len() < 64 << 10);
    let limits = ReadLimits {
        max_member_uncompressed: 16 << 20,
        ..ReadLimits::default()
    };
    let err = deb::reader::read_deb_from(&bytes[..], bytes.len() as u64, "bomb.deb", &limits)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("bomb.deb: data.tar.xz: "), "{err}");
    assert_says(&err, &["limit of 16777216 bytes"]);
    assert!(!err.contains('\n'));
    // A control file over its own limit is refused before it is held in memory.
    let big_control = format!("{CONTROL}X-Pad: {}\n", "p".repeat(100_000));
    let bytes = deb_bytes(
        &control_tar(&big_control),
        &good_data(),
        Compression::Xz,
        None,
    );
    let limits = ReadLimits {
        max_control_file: 10_000,
        ..ReadLimits::default()
    };
    let err = deb::reader::read_deb_from(&bytes[..], bytes.len() as u64, "c.deb", &limits)
        .unwrap_err()
        .to_string();
    assert_says(&err, &["more than the limit of 10000"]);
}

/// Every path below `dir`, for before/after comparisons.
fn listing(dir: &Path) -> Vec<String> {
    walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.unwrap().path().display().to_string())
        .collect()
}

#[test]
fn extraction_never_writes_outside_the_destination() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("victim");
    fs::create_dir(&victim).unwrap();
    let victim_s = victim.display().to_string();
    let cases: Vec<(&str, TarSpec<'_>)> = vec![
        (
            "dotdot",
            vec![
                (b"./", WriteKind::Dir, b""),
                (b"./a/", WriteKind::Dir, b""),
                (b"./a/../../victim/pwned", WriteKind::File(1), b"x"),
            ],
        ),
        (
            "through-symlink",
            vec![
                (b"./", WriteKind::Dir, b""),
                (b"./l", WriteKind::Symlink(victim_s.as_bytes()), b""),
                (b"./l/pwned", WriteKind::File(1), b"x"),
            ],
        ),
        (
            "symlink-then-dir",
            vec![
                (b"./l", WriteKind::Symlink(victim_s.as_bytes()), b""),
                (b"./l/sub/", WriteKind::Dir, b""),
            ],
        ),
        (
            "absolute",
            vec![(
                format!("{victim_s}/pwned").leak().as_bytes(),
                WriteKind::File(1),
                b"x",
            )],
        ),
    ];
    for (label, entries) in cases {
        let dest = tmp.path().join(format!("dest-{label}"));
        fs::create_dir(&dest).unwrap();
        let file = tmp.path().join(format!("{label}.deb"));
        fs::write(
            &file,
            deb_bytes(
                &control_tar(CONTROL),
                &tar(&entries),
                Compression::Gzip,
                None,
            ),
        )
        .unwrap();
        let before = listing(&victim);
        let err = deb::reader::extract_data(&file, &dest, &ReadLimits::default()).unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.starts_with(&file.display().to_string()),
            "{label}: {msg}"
        );
        assert_eq!(
            listing(&victim),
            before,
            "{label}: wrote into the victim dir"
        );
        // Nothing escaped into the temp dir either: only the dests, the victim and the .debs.
        for e in fs::read_dir(tmp.path()).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            assert!(
                name == "victim" || name.starts_with("dest-") || name.ends_with(".deb"),
                "{label}: unexpected {name}"
            );
        }
    }
    // A dangling symlink is a fine entry: extracted, never followed.
    let dest = tmp.path().join("dest-dangling");
    fs::create_dir(&dest).unwrap();
    let file = tmp.path().join("dangling.deb");
    fs::write(
        &file,
        deb_bytes(
            &control_tar(CONTROL),
            &tar(&vec![
                (b"./", WriteKind::Dir, b""),
                (b"./d", WriteKind::Symlink(b"../victim/nothing-here"), b""),
            ]),
            Compression::Gzip,
            None,
        ),
    )
    .unwrap();
    deb::reader::extract_data(&file, &dest, &ReadLimits::default()).unwrap();
    assert_eq!(
        fs::read_link(dest.join("d")).unwrap(),
        Path::new("../victim/nothing-here")
    );
    assert!(listing(&victim).len() == 1);
}
