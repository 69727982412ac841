//! `rocm-pin repo` without a chroot: the layout, the checksums, the signatures (judged by the
//! real gpgv), the Packages stanzas (judged by apt-ftparchive), adding and refusing.

use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::assert_success;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::Command as BinCommand;
use rocm_pin_core::deb::control::Paragraph;
use rocm_pin_testkit::must_stdout;
use sha2::{Digest, Sha256};

fn rocm_pin() -> BinCommand {
    let mut cmd = BinCommand::new(crate::util::bin());
    cmd.env_remove("SOURCE_DATE_EPOCH");
    cmd
}

/// `<name>_<version>_<arch>.deb` built by dpkg-deb, with `payload` in /usr/share/<name>/data.
fn build_deb(
    dir: &Path,
    name: &str,
    version: &str,
    arch: &str,
    extra: &str,
    payload: &str,
) -> PathBuf {
    let tree = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(tree.path().join("DEBIAN")).unwrap();
    std::fs::write(
        tree.path().join("DEBIAN/control"),
        format!(
            "Package: {name}\nVersion: {version}\nArchitecture: {arch}\n\
             Maintainer: Test <test@example.invalid>\n{extra}Description: repo test package\n \
             Longer description.\n .\n Second paragraph.\n"
        ),
    )
    .unwrap();
    let data = tree.path().join("usr/share").join(name);
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("data"), payload).unwrap();
    let out = dir.join(format!("{name}_{version}_{arch}.deb"));
    must_stdout(
        Command::new("dpkg-deb")
            .args(["--root-owner-group", "-Zxz", "--build"])
            .arg(tree.path())
            .arg(&out),
    );
    out
}

fn keygen(dir: &Path) -> (PathBuf, PathBuf) {
    let key = dir.join("repo-key.asc");
    rocm_pin()
        .args(["repo", "keygen", "--out"])
        .arg(&key)
        .assert()
        .success();
    (key, dir.join("repo-key.pub.gpg"))
}

/// `rocm-pin repo [--sign-key KEY] --out REPO DEBS…`, to be asserted on.
fn publish(repo: &Path, key: Option<&Path>, debs: &[&Path]) -> assert_cmd::assert::Assert {
    publish_cmd(&[], repo, key, debs).assert()
}

/// `rocm-pin repo OPTIONS… [--sign-key KEY] --out REPO DEBS…`, to be run.
fn publish_cmd<D: AsRef<std::ffi::OsStr>>(
    options: &[&str],
    repo: &Path,
    key: Option<&Path>,
    debs: &[D],
) -> BinCommand {
    let mut cmd = rocm_pin();
    cmd.arg("repo").args(options);
    if let Some(key) = key {
        cmd.arg("--sign-key").arg(key);
    }
    cmd.arg("--out").arg(repo).args(debs);
    cmd
}

fn gpgv(keyring: &Path, args: &[&Path]) -> std::process::Output {
    Command::new("gpgv")
        .arg("--keyring")
        .arg(keyring)
        .args(args)
        .output()
        .expect("gpgv is installed (apt-get install gpgv)")
}

/// Every file under `dir` with its bytes (nothing when `dir` does not exist): a snapshot to
/// prove a refusal wrote nothing.
pub(crate) fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().to_path_buf(), std::fs::read(e.path()).unwrap()))
        .collect()
}

/// (hash, size, path) lines of a Release checksum field.
fn release_entries(release: &Paragraph, field: &str) -> Vec<(String, u64, String)> {
    release
        .get(field)
        .unwrap_or_else(|| panic!("Release has {field}"))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let parts: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(parts.len(), 3, "{l:?}");
            (
                parts[0].to_string(),
                parts[1].parse().unwrap(),
                parts[2].to_string(),
            )
        })
        .collect()
}

fn decompress(tool: &str, path: &Path) -> Vec<u8> {
    let out = Command::new(tool)
        .arg("-dc")
        .arg(path)
        .output()
        .expect(tool);
    assert!(out.status.success(), "{tool} -dc {}", path.display());
    out.stdout
}

/// One .deb for [`build_debs`]: (Package, Version, Architecture, extra control lines, payload).
type DebRow<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str);

/// The .debs of `rows`, built by [`build_deb`] in `dir`.
fn build_debs(dir: &Path, rows: &[DebRow]) -> Vec<PathBuf> {
    rows.iter()
        .map(|(name, version, arch, extra, payload)| {
            build_deb(dir, name, version, arch, extra, payload)
        })
        .collect()
}

/// The signed noble repository's packages: an epoch and a tilde, a Source with its own
/// version, a Depends, arch all, and one name in two architectures.
const HELLO_DEBS: &[DebRow] = &[
    ("hello-data", "1.0-1", "all", "", "data"),
    (
        "libhello1",
        "2:1.2~rc1-3",
        "amd64",
        "Source: hello (1.2~rc1-3)\n",
        "lib",
    ),
    (
        "hello-bin",
        "1.2",
        "amd64",
        "Depends: libhello1 (>= 2:1.2~), hello-data\n",
        "bin",
    ),
    ("hello-bin", "1.2", "arm64", "", "bin-arm"),
];

/// The Release file's fields for `--suite noble --component extra` at SOURCE_DATE_EPOCH
/// 1700000000.
const HELLO_RELEASE: &[(&str, &str)] = &[
    ("Date", "Tue, 14 Nov 2023 22:13:20 UTC"),
    ("Origin", "rocm-pin"),
    ("Suite", "noble"),
    ("Codename", "noble"),
    ("Components", "extra"),
    ("Architectures", "amd64 arm64"),
];

/// Files in the pool, and each index's package names (arch all listed in binary-amd64).
const HELLO_POOL: &[&str] = &[
    "pool/extra/h/hello/libhello1_1.2~rc1-3_amd64.deb",
    "pool/extra/h/hello-data/hello-data_1.0-1_all.deb",
];
const HELLO_INDICES: &[(&str, &[&str])] = &[
    ("amd64", &["hello-bin", "hello-data", "libhello1"]),
    ("arm64", &["hello-bin", "hello-data"]),
];

/// The stanza fields that must agree with apt-ftparchive's for the same pool.
const STANZA_FIELDS: &[&str] = &[
    "Package",
    "Version",
    "Architecture",
    "Size",
    "MD5sum",
    "SHA256",
    "Depends",
    "Source",
    "Description",
    "Maintainer",
];

#[test]
fn signed_repository_verifies_and_matches_checksums() {
    let tmp = tempfile::tempdir().unwrap();
    let (key, keyring) = keygen(tmp.path());
    let debs = build_debs(tmp.path(), HELLO_DEBS);
    let repo = tmp.path().join("repo");
    let options = ["--suite", "noble", "--component", "extra"];
    publish_cmd(&options, &repo, Some(&key), &debs)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .assert()
        .success();

    let dists = repo.join("dists/noble");
    // gpgv: both signatures good, with the key from keygen and with the copy in the repository.
    for ring in [keyring.clone(), repo.join("archive-key.gpg")] {
        let out = gpgv(&ring, &[&dists.join("InRelease")]);
        assert_success(&out, "gpgv InRelease");
        let out = gpgv(&ring, &[&dists.join("Release.gpg"), &dists.join("Release")]);
        assert_success(&out, "gpgv Release.gpg");
    }
    // The text signed in InRelease is the Release file (gpgv --output writes what it verified).
    let verified = tmp.path().join("verified");
    let out = Command::new("gpgv")
        .arg("--keyring")
        .arg(&keyring)
        .arg("--output")
        .arg(&verified)
        .arg(dists.join("InRelease"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let release_text = std::fs::read_to_string(dists.join("Release")).unwrap();
    assert_eq!(std::fs::read_to_string(&verified).unwrap(), release_text);

    let release = Paragraph::parse(&release_text).expect("Release parses");
    for (name, value) in HELLO_RELEASE {
        assert_eq!(release.get(name), Some(*value), "Release {name}");
    }
    assert_release_checksums(&dists, &release, HELLO_INDICES.len() * 3);
    for (arch, _) in HELLO_INDICES {
        assert_indices_are_one_index(&dists.join(format!("extra/binary-{arch}/Packages")));
    }

    // Pool layout and the stanzas, against apt-ftparchive's view of the same pool.
    for f in HELLO_POOL {
        assert!(repo.join(f).is_file(), "{f}");
    }
    let mut ours = Vec::new();
    for (arch, names) in HELLO_INDICES {
        let index = dists.join(format!("extra/binary-{arch}/Packages"));
        let stanzas = Paragraph::parse_many(&std::fs::read_to_string(index).unwrap()).unwrap();
        let got: Vec<&str> = stanzas.iter().map(|p| p.get("Package").unwrap()).collect();
        assert_eq!(got, *names, "binary-{arch}");
        ours.extend(stanzas);
    }
    let theirs = must_stdout(
        Command::new("apt-ftparchive")
            .current_dir(&repo)
            .args(["packages", "pool"]),
    );
    let theirs = Paragraph::parse_many(&theirs).expect("apt-ftparchive output parses");
    assert_eq!(theirs.len(), HELLO_DEBS.len());
    for t in &theirs {
        let o = ours
            .iter()
            .find(|o| o.get("Filename") == t.get("Filename"))
            .unwrap_or_else(|| panic!("no stanza for {:?}", t.get("Filename")));
        for field in STANZA_FIELDS {
            assert_eq!(
                o.get(field),
                t.get(field),
                "{field} of {:?}",
                t.get("Filename")
            );
        }
    }
}

/// The Release file's SHA256 and MD5Sum lists name `entries` files (Packages, .gz, .xz per
/// architecture), each with its real size and hashes (md5 by the md5sum tool).
fn assert_release_checksums(dists: &Path, release: &Paragraph, entries: usize) {
    let sha = release_entries(release, "SHA256");
    let md5 = release_entries(release, "MD5Sum");
    assert_eq!(
        sha.len(),
        entries,
        "Packages, .gz, .xz for each architecture"
    );
    assert_eq!(md5.len(), entries);
    for (hash, size, rel) in &sha {
        let bytes = std::fs::read(dists.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!(bytes.len() as u64, *size, "{rel}");
        assert_eq!(&hex::encode(Sha256::digest(&bytes)), hash, "{rel}");
    }
    for (hash, _, rel) in &md5 {
        let out = must_stdout(Command::new("md5sum").arg(dists.join(rel)));
        assert!(out.starts_with(hash.as_str()), "{rel}");
    }
}

/// The compressed indices beside `packages` are the same index (decompressed by the real
/// tools).
fn assert_indices_are_one_index(packages: &Path) {
    let plain = std::fs::read(packages).unwrap();
    assert_eq!(decompress("gzip", &packages.with_extension("gz")), plain);
    assert_eq!(decompress("xz", &packages.with_extension("xz")), plain);
}

#[test]
fn tampering_breaks_the_signatures() {
    let tmp = tempfile::tempdir().unwrap();
    let (key, keyring) = keygen(tmp.path());
    let deb = build_deb(tmp.path(), "tamper-test", "1.0", "all", "", "x");
    let repo = tmp.path().join("repo");
    publish(&repo, Some(&key), &[&deb]).success();
    let dists = repo.join("dists/stable");
    let release = std::fs::read_to_string(dists.join("Release")).unwrap();
    std::fs::write(
        dists.join("Release"),
        release.replace("Label: rocm-pin", "Label: evil"),
    )
    .unwrap();
    assert!(!gpgv(
        &keyring,
        &[&dists.join("Release.gpg"), &dists.join("Release")]
    )
    .status
    .success());
    let inrelease = std::fs::read_to_string(dists.join("InRelease")).unwrap();
    std::fs::write(
        dists.join("InRelease"),
        inrelease.replace("Label: rocm-pin", "Label: evil"),
    )
    .unwrap();
    assert!(!gpgv(&keyring, &[&dists.join("InRelease")]).status.success());
    // A different key does not verify either.
    let other = tempfile::tempdir().unwrap();
    let (_, other_ring) = keygen(other.path());
    std::fs::write(dists.join("InRelease"), inrelease).unwrap();
    assert!(!gpgv(&other_ring, &[&dists.join("InRelease")])
        .status
        .success());
}

#[test]
fn adding_keeps_packages_and_refuses_changed_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let (key, _) = keygen(tmp.path());
    let a_dir = tmp.path().join("a");
    let b_dir = tmp.path().join("b");
    std::fs::create_dir_all(&a_dir).unwrap();
    std::fs::create_dir_all(&b_dir).unwrap();
    let first = build_deb(&a_dir, "keep-me", "1.0", "amd64", "", "one");
    let second = build_deb(&a_dir, "add-me", "1.0", "amd64", "", "two");
    let repo = tmp.path().join("repo");
    let publish = |debs: &[&Path]| {
        let mut cmd = rocm_pin();
        cmd.args(["repo", "--json", "--sign-key"])
            .arg(&key)
            .arg("--out")
            .arg(&repo)
            .args(debs);
        cmd.assert()
    };
    publish(&[&first]).success();
    let out = publish(&[&second, &first]).success();
    let summary: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(summary["added"], serde_json::json!(["add-me_1.0_amd64"]));
    assert_eq!(
        summary["unchanged"],
        serde_json::json!(["keep-me_1.0_amd64"])
    );
    assert_eq!(summary["total"], 2);
    let packages =
        std::fs::read_to_string(repo.join("dists/stable/main/binary-amd64/Packages")).unwrap();
    assert_eq!(Paragraph::parse_many(&packages).unwrap().len(), 2);

    // Same name, version and architecture, different bytes: refused, nothing changes.
    let changed = build_deb(&b_dir, "keep-me", "1.0", "amd64", "", "changed payload");
    let third = build_deb(&b_dir, "third", "1.0", "amd64", "", "three");
    let before = snapshot(&repo);
    let out = publish(&[&third, &changed]).failure().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert_says(
        &stderr,
        &[
            "keep-me 1.0 (amd64) is already in the repository with different contents",
            "bump the version",
        ],
    );
    assert_eq!(snapshot(&repo), before, "a refused run wrote nothing");

    // The same conflict inside one invocation.
    let fresh = tmp.path().join("fresh");
    rocm_pin()
        .args(["repo", "--out"])
        .arg(&fresh)
        .args([&first, &changed])
        .assert()
        .failure()
        .code(2);
    assert!(!fresh.join("dists").exists());
}

#[test]
fn flat_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let (key, keyring) = keygen(tmp.path());
    let debs = build_debs(
        tmp.path(),
        &[
            ("flat-one", "1.0", "amd64", "", "1"),
            ("flat-two", "1.0", "all", "", "2"),
        ],
    );
    let repo = tmp.path().join("repo");
    publish_cmd(&["--flat"], &repo, Some(&key), &debs)
        .assert()
        .success();
    for f in [
        "Packages",
        "Packages.gz",
        "Packages.xz",
        "Release",
        "InRelease",
        "Release.gpg",
    ] {
        assert!(repo.join(f).is_file(), "{f}");
    }
    assert!(!repo.join("dists").exists());
    assert!(gpgv(&keyring, &[&repo.join("InRelease")]).status.success());
    let release =
        Paragraph::parse(&std::fs::read_to_string(repo.join("Release")).unwrap()).unwrap();
    assert_eq!(release.get("Components"), None);
    let entries: Vec<String> = release_entries(&release, "SHA256")
        .into_iter()
        .map(|e| e.2)
        .collect();
    assert_eq!(entries, ["Packages.gz", "Packages.xz", "Packages"]);
    let packages =
        Paragraph::parse_many(&std::fs::read_to_string(repo.join("Packages")).unwrap()).unwrap();
    assert_eq!(packages.len(), 2);
    for p in &packages {
        assert!(repo.join(p.get("Filename").unwrap()).is_file());
    }
}

#[test]
fn unsigned_repository_drops_stale_signatures() {
    let tmp = tempfile::tempdir().unwrap();
    let (key, _) = keygen(tmp.path());
    let one = build_deb(tmp.path(), "stale-one", "1.0", "all", "", "1");
    let two = build_deb(tmp.path(), "stale-two", "1.0", "all", "", "2");
    let repo = tmp.path().join("repo");
    publish(&repo, Some(&key), &[&one]).success();
    assert!(repo.join("dists/stable/InRelease").is_file());
    publish(&repo, None, &[&two]).success();
    assert!(
        !repo.join("dists/stable/InRelease").exists(),
        "an InRelease over an old Release would break apt"
    );
    assert!(!repo.join("dists/stable/Release.gpg").exists());
    let release = std::fs::read_to_string(repo.join("dists/stable/Release")).unwrap();
    assert!(release.contains("main/binary-all/Packages"));
}

#[test]
fn bad_input_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let deb = build_deb(tmp.path(), "good-one", "1.0", "all", "", "1");
    let not_deb = tmp.path().join("not.deb");
    std::fs::write(&not_deb, "this is not an ar archive").unwrap();
    let bad_key = tmp.path().join("bad.asc");
    std::fs::write(
        &bad_key,
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\ngarbage\n",
    )
    .unwrap();
    let repo = tmp.path().join("repo");
    let cases: Vec<(Vec<std::ffi::OsString>, &str)> = vec![
        (
            vec![deb.clone().into(), tmp.path().join("missing.deb").into()],
            "missing.deb",
        ),
        (vec![deb.clone().into(), not_deb.clone().into()], "not.deb"),
        (
            vec![
                deb.clone().into(),
                "--sign-key".into(),
                bad_key.clone().into(),
            ],
            "bad.asc",
        ),
        (
            vec![deb.clone().into(), "--suite".into(), "../escape".into()],
            "invalid suite",
        ),
        (
            vec![deb.clone().into(), "--component".into(), "a/b".into()],
            "invalid component",
        ),
    ];
    for (args, expect) in cases {
        let out = rocm_pin()
            .arg("repo")
            .arg("--out")
            .arg(&repo)
            .args(&args)
            .assert()
            .failure()
            .code(2);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
        assert!(!repo.exists(), "{args:?} created the repository");
    }
    rocm_pin()
        .env("SOURCE_DATE_EPOCH", "yesterday")
        .args(["repo", "--out"])
        .arg(&repo)
        .arg(&deb)
        .assert()
        .failure()
        .code(2);
    assert!(
        !repo.exists(),
        "a bad SOURCE_DATE_EPOCH is caught before writing"
    );
    rocm_pin()
        .args(["repo", "--out"])
        .arg(&repo)
        .assert()
        .failure()
        .code(2);
}

#[test]
fn keygen_writes_private_key_and_refuses_overwrite() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let (key, keyring) = keygen(tmp.path());
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let secret = std::fs::read_to_string(&key).unwrap();
    assert!(secret.starts_with("-----BEGIN PGP PRIVATE KEY BLOCK-----"));
    let public = std::fs::read_to_string(tmp.path().join("repo-key.pub.asc")).unwrap();
    assert!(public.starts_with("-----BEGIN PGP PUBLIC KEY BLOCK-----"));
    // The binary key is what gpg itself would export: gpg lists it as an ed25519 key.
    let out = must_stdout(
        Command::new("gpg")
            .args(["--batch", "--with-colons", "--show-keys"])
            .arg(&keyring),
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("pub:") && l.split(':').nth(3) == Some("22")),
        "{out}"
    );
    assert_says(&out, &["rocm-pin repository signing key"]);
    let before = std::fs::read(&key).unwrap();
    rocm_pin()
        .args(["repo", "keygen", "--out"])
        .arg(&key)
        .assert()
        .failure()
        .code(2);
    assert_eq!(std::fs::read(&key).unwrap(), before);
}

#[test]
fn arch_all_index_gives_way_to_concrete_architectures() {
    let tmp = tempfile::tempdir().unwrap();
    let all = build_deb(tmp.path(), "only-all", "1.0", "all", "", "a");
    let amd = build_deb(tmp.path(), "now-amd64", "1.0", "amd64", "", "b");
    let repo = tmp.path().join("repo");
    publish(&repo, None, &[&all]).success();
    let dists = repo.join("dists/stable");
    assert!(dists.join("main/binary-all/Packages").is_file());
    let release = std::fs::read_to_string(dists.join("Release")).unwrap();
    assert_says(&release, &["Architectures: all\n"]);
    publish(&repo, None, &[&amd]).success();
    assert!(
        !dists.join("main/binary-all").exists(),
        "stale binary-all removed"
    );
    let release = std::fs::read_to_string(dists.join("Release")).unwrap();
    assert_says(&release, &["Architectures: amd64\n"]);
    assert!(!release.contains("binary-all"), "{release}");
    let packages = std::fs::read_to_string(dists.join("main/binary-amd64/Packages")).unwrap();
    let names: Vec<String> = Paragraph::parse_many(&packages)
        .unwrap()
        .iter()
        .map(|p| p.get("Package").unwrap().to_string())
        .collect();
    assert_eq!(names, ["now-amd64", "only-all"]);
}

/// With SOURCE_DATE_EPOCH the unsigned part of a repository is byte-identical across runs
/// (gzip header without name/mtime, sorted stanzas, fixed Date).
#[test]
fn unsigned_output_is_reproducible() {
    let tmp = tempfile::tempdir().unwrap();
    let debs = [
        build_deb(tmp.path(), "repro-b", "1.0", "amd64", "", "b"),
        build_deb(tmp.path(), "repro-a", "1.0", "all", "", "a"),
    ];
    let mut trees = Vec::new();
    for (i, order) in [[0, 1], [1, 0]].iter().enumerate() {
        let repo = tmp.path().join(format!("repo{i}"));
        rocm_pin()
            .env("SOURCE_DATE_EPOCH", "1700000000")
            .args(["repo", "--out"])
            .arg(&repo)
            .args(order.iter().map(|&k| &debs[k]))
            .assert()
            .success();
        let snap: BTreeMap<PathBuf, Vec<u8>> = snapshot(&repo)
            .into_iter()
            .map(|(p, b)| (p.strip_prefix(&repo).unwrap().to_path_buf(), b))
            .collect();
        trees.push(snap);
    }
    assert_eq!(
        trees[0].len(),
        6,
        "{:?}",
        trees[0].keys().collect::<Vec<_>>()
    );
    assert_eq!(trees[0], trees[1]);
}

/// With SOURCE_DATE_EPOCH and the same key, the signed files are byte-identical too: the
/// signature creation time is SOURCE_DATE_EPOCH (not the clock) and Ed25519 signatures are
/// deterministic. A SOURCE_DATE_EPOCH older than the key gives the key's creation time instead
/// (gpgv refuses a signature older than its key). gpgv judges both and reports the time.
#[test]
fn signed_output_is_reproducible() {
    let tmp = tempfile::tempdir().unwrap();
    let (key, keyring) = keygen(tmp.path());
    let deb = build_deb(tmp.path(), "repro-signed", "1.0", "all", "", "s");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let publish = |name: &str, sde: u64| {
        let repo = tmp.path().join(name);
        publish_cmd(&[], &repo, Some(&key), &[&deb])
            .env("SOURCE_DATE_EPOCH", sde.to_string())
            .assert()
            .success();
        repo.join("dists/stable")
    };
    // gpgv's VALIDSIG status line: "[GNUPG:] VALIDSIG FPR DATE TIMESTAMP ..."
    let signature_time = |file: &Path| -> u64 {
        let out = Command::new("gpgv")
            .args(["--status-fd", "1", "--keyring"])
            .arg(&keyring)
            .arg(file)
            .output()
            .expect("gpgv is installed (apt-get install gpgv)");
        let status = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{status}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = status
            .lines()
            .find(|l| l.starts_with("[GNUPG:] VALIDSIG "))
            .unwrap_or_else(|| panic!("no VALIDSIG in {status}"));
        line.split_whitespace().nth(4).unwrap().parse().unwrap()
    };
    for (sde, expect_time) in [(now, Some(now)), (1_700_000_000, None)] {
        let first = publish(&format!("repo-{sde}-1"), sde);
        // More than a second later, so a clock-based creation time would differ.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let second = publish(&format!("repo-{sde}-2"), sde);
        for file in ["Release", "InRelease", "Release.gpg"] {
            assert_eq!(
                std::fs::read(first.join(file)).unwrap(),
                std::fs::read(second.join(file)).unwrap(),
                "{file} differs between two publishes with SOURCE_DATE_EPOCH={sde}"
            );
        }
        let time = signature_time(&first.join("InRelease"));
        match expect_time {
            Some(t) => assert_eq!(time, t, "InRelease signature time"),
            // Older than the key: the key's creation time, between SDE and now.
            None => assert!(time > sde && time <= now, "signature time {time}"),
        }
    }
}

/// Parallel writers to one repository serialise on its lock: every package ends up listed.
#[test]
fn parallel_additions_all_land() {
    let tmp = tempfile::tempdir().unwrap();
    let (key, keyring) = keygen(tmp.path());
    let repo = tmp.path().join("repo");
    let seed = build_deb(tmp.path(), "parallel-seed", "1.0", "all", "", "seed");
    publish(&repo, Some(&key), &[&seed]).success();
    let debs: Vec<PathBuf> = (0..4)
        .map(|i| {
            build_deb(
                tmp.path(),
                &format!("parallel-{i}"),
                "1.0",
                "all",
                "",
                &i.to_string(),
            )
        })
        .collect();
    let workers: Vec<_> = debs
        .into_iter()
        .map(|deb| {
            let (key, repo) = (key.clone(), repo.clone());
            std::thread::spawn(move || {
                rocm_pin()
                    .args(["repo", "--quiet", "--sign-key"])
                    .arg(&key)
                    .arg("--out")
                    .arg(&repo)
                    .arg(&deb)
                    .output()
                    .unwrap()
            })
        })
        .collect();
    for w in workers {
        let out = w.join().unwrap();
        assert_success(&out, "the command");
    }
    let packages =
        std::fs::read_to_string(repo.join("dists/stable/main/binary-all/Packages")).unwrap();
    assert_eq!(Paragraph::parse_many(&packages).unwrap().len(), 5);
    let dists = repo.join("dists/stable");
    assert!(gpgv(&keyring, &[&dists.join("InRelease")]).status.success());
}
