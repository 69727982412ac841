//! Issue 21 probes against `rocm-pin repo`: a signing key that is expired, revoked or not yet
//! valid (made by real gpg) is refused before anything is written; a control file's own
//! SHA512/SHA1/MD5sum/Size/Filename never reach the index, judged by real apt downloading the
//! package; an existing index whose `Filename:` leaves the repository is refused.

use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::assert_success;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::{rocm_pin, tiny_package};
use rocm_pin_kit::sandbox::Sandbox;
use rocm_pin_testkit::http::HttpServer;
use rocm_pin_testkit::{chroot_image, must, must_stdout};

use crate::repo_publish::snapshot;

/// gpg with its own home, no agent prompts, no passphrase.
struct Gpg {
    home: tempfile::TempDir,
}

impl Gpg {
    fn new() -> Self {
        let home = tempfile::tempdir().unwrap();
        Gpg { home }
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::new("gpg");
        cmd.env("GNUPGHOME", self.home.path()).args([
            "--batch",
            "--pinentry-mode",
            "loopback",
            "--passphrase=",
        ]);
        cmd
    }

    /// A signing-only Ed25519 key made as if at `faked_time` (gpg's `--faked-system-time`),
    /// valid for `expire`.
    fn generate(&self, uid: &str, faked_time: Option<&str>, expire: &str) -> String {
        let mut cmd = self.cmd();
        if let Some(t) = faked_time {
            cmd.args(["--faked-system-time", t]);
        }
        must(cmd.args(["--quick-gen-key", uid, "ed25519", "sign", expire]));
        let listing = must_stdout(self.cmd().args(["--with-colons", "--list-keys", uid]));
        listing
            .lines()
            .find_map(|l| l.strip_prefix("fpr:"))
            .and_then(|l| l.split(':').find(|f| !f.is_empty()))
            .unwrap()
            .to_string()
    }

    /// Import the revocation certificate gpg stored when it made the key.
    fn revoke(&self, fingerprint: &str) {
        let stored = self
            .home
            .path()
            .join(format!("openpgp-revocs.d/{fingerprint}.rev"));
        // gpg prefixes the armor line with ':' so the certificate is not imported by accident.
        let cert = std::fs::read_to_string(stored)
            .unwrap()
            .replace(":-----BEGIN PGP", "-----BEGIN PGP");
        let file = self.home.path().join("revoke.asc");
        std::fs::write(&file, cert).unwrap();
        must(self.cmd().arg("--import").arg(&file));
    }

    fn export_secret(&self, fingerprint: &str, out: &Path) {
        let key = must(
            self.cmd()
                .args(["--armor", "--export-secret-keys"])
                .arg(fingerprint),
        )
        .stdout;
        std::fs::write(out, key).unwrap();
    }
}

impl Drop for Gpg {
    /// gpg started an agent for this home: stop it before the home goes away.
    fn drop(&mut self) {
        let _ = Command::new("gpgconf")
            .env("GNUPGHOME", self.home.path())
            .args(["--kill", "gpg-agent"])
            .status();
    }
}

/// The probe: `repo --sign-key` with an expired key signed, and apt then failed with
/// EXPKEYSIG. Keys made by gpg — expired, revoked, created in the future — are refused with one
/// line saying which and when, and nothing is written; a valid gpg key of the same kind signs.
#[test]
fn an_expired_revoked_or_not_yet_valid_signing_key_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let deb = tiny_package(tmp.path(), "keyed", "1.0", "");
    let gpg = Gpg::new();
    let expired = gpg.generate(
        "Expired <e@example.invalid>",
        Some("20200101T000000!"),
        "1d",
    );
    let future = gpg.generate(
        "Future <f@example.invalid>",
        Some("20350101T000000!"),
        "never",
    );
    let revoked = gpg.generate("Revoked <r@example.invalid>", None, "never");
    gpg.revoke(&revoked);
    let good = gpg.generate("Good <g@example.invalid>", None, "1y");
    let cases = [
        (&expired, "expired on Thu, 02 Jan 2020 00:00:00 UTC"),
        (&future, "is not valid until Mon, 01 Jan 2035 00:00:00 UTC"),
        (&revoked, "was revoked on "),
    ];
    for (fingerprint, problem) in cases {
        let key = tmp.path().join(format!("{fingerprint}.asc"));
        gpg.export_secret(fingerprint, &key);
        let out_dir = tmp.path().join(format!("repo-{fingerprint}"));
        let out = rocm_pin()
            .args(["repo", "--quiet", "--sign-key"])
            .arg(&key)
            .arg("--out")
            .arg(&out_dir)
            .arg(&deb)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{problem}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{problem}: {err}");
        assert!(
            err.contains(&format!(
                "{}: the signing key {fingerprint} {problem}",
                key.display()
            )),
            "{problem}: {err}"
        );
        assert!(!out_dir.exists(), "{problem}: something was written");
    }
    let key = tmp.path().join("good.asc");
    gpg.export_secret(&good, &key);
    let out_dir = tmp.path().join("repo-good");
    must_stdout(
        rocm_pin()
            .args(["repo", "--quiet", "--sign-key"])
            .arg(&key)
            .arg("--out")
            .arg(&out_dir)
            .arg(&deb),
    );
    assert!(out_dir.join("dists/stable/InRelease").is_file());
}

/// The Packages stanza of `name` in a suite repository's binary-all index.
fn stanza(repo: &Path, name: &str) -> String {
    let index =
        std::fs::read_to_string(repo.join("dists/stable/main/binary-all/Packages")).unwrap();
    index
        .split("\n\n")
        .find(|s| s.starts_with(&format!("Package: {name}\n")))
        .unwrap_or_else(|| panic!("{name} not in {index}"))
        .to_string()
}

const BOGUS_FIELDS: &str = "SHA512: 00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000\n\
SHA1: 0000000000000000000000000000000000000000\n\
MD5sum: 00000000000000000000000000000000\n\
Size: 1\n\
Filename: ../../etc/passwd\n\
Description-md5: 00000000000000000000000000000000\n";

/// The probe: a control's own `SHA512:` was copied into Packages and `apt-get download`
/// failed with "Hash Sum mismatch". The index now carries only the repository's own file fields,
/// and real apt (bookworm, signed repository) downloads the package.
#[test]
fn control_hash_fields_never_reach_the_index_and_apt_downloads_the_package() {
    let tmp = tempfile::tempdir().unwrap();
    let deb = tiny_package(tmp.path(), "bogus-hashes", "1.0", BOGUS_FIELDS);
    let key = tmp.path().join("key.asc");
    must_stdout(rocm_pin().args(["repo", "keygen", "--out"]).arg(&key));
    let repo = tmp.path().join("repo");
    must_stdout(
        rocm_pin()
            .args(["repo", "--quiet", "--sign-key"])
            .arg(&key)
            .arg("--out")
            .arg(&repo)
            .arg(&deb),
    );
    let stanza = stanza(&repo, "bogus-hashes");
    let size = std::fs::metadata(&deb).unwrap().len();
    let fields: Vec<&str> = stanza
        .lines()
        .filter_map(|l| l.split_once(':').map(|(f, _)| f))
        .collect();
    for field in ["SHA512", "SHA1", "Description-md5"] {
        assert!(!fields.contains(&field), "{field} copied: {stanza}");
    }
    for field in ["MD5sum", "Size", "Filename", "SHA256"] {
        assert_eq!(
            fields.iter().filter(|f| **f == field).count(),
            1,
            "{field}: {stanza}"
        );
    }
    assert_says(
        &stanza,
        &[
            &format!("\nSize: {size}\n"),
            "\nFilename: pool/main/b/bogus-hashes/bogus-hashes_1.0_all.deb\n",
        ],
    );

    rocm_pin_testkit::needs_root!("apt in a chroot");
    must_stdout(Command::new("chmod").args(["-R", "a+rX"]).arg(tmp.path()));
    let server = HttpServer::serve(tmp.path());
    let sb = Sandbox::new(&chroot_image("bookworm")).expect("sandbox");
    let keyring = "/usr/share/keyrings/rocm-pin-test.gpg";
    sb.copy_in(&tmp.path().join("key.pub.gpg"), keyring)
        .expect("copy the key in");
    sb.write(
        "/etc/apt/sources.list.d/served.list",
        format!(
            "deb [signed-by={keyring}] {}repo stable main\n",
            server.url()
        ),
    )
    .unwrap();
    let update = sb.run(&["apt-get", "update"]).expect("apt-get runs");
    assert_success(&update, "the command");
    let download: Output = sb
        .run(&["sh", "-c", "cd /tmp && apt-get download bogus-hashes"])
        .expect("apt-get runs");
    assert_success(&download, "apt-get download failed");
    let fetched = sb
        .run_ok(&["sh", "-c", "sha256sum /tmp/bogus-hashes_1.0_all.deb"])
        .unwrap();
    let expected = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(
        std::fs::read(&deb).unwrap(),
    ));
    eprintln!("apt-get download fetched: {}", fetched.trim());
    assert!(fetched.starts_with(&expected), "{fetched} vs {expected}");
}

/// An existing index whose `Filename:` is absolute or climbs out with `..` is refused by name
/// before anything is read through it or written: the package it names may be any file of the
/// right size outside the repository (here a copy of the real one, which the old code accepted).
#[test]
fn an_index_whose_filename_leaves_the_repository_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let first = tiny_package(tmp.path(), "first", "1.0", "");
    let second = tiny_package(tmp.path(), "second", "1.0", "");
    let repo = tmp.path().join("repo");
    must_stdout(
        rocm_pin()
            .args(["repo", "--quiet", "--out"])
            .arg(&repo)
            .arg(&first),
    );
    let outside = tmp.path().join("outside.deb");
    std::fs::copy(&first, &outside).unwrap();
    let index = repo.join("dists/stable/main/binary-all/Packages");
    let pristine = std::fs::read_to_string(&index).unwrap();
    let pool = "pool/main/f/first/first_1.0_all.deb";
    assert_says(&pristine, &[pool]);
    for escape in ["../outside.deb", &outside.display().to_string()] {
        std::fs::write(&index, pristine.replace(pool, escape)).unwrap();
        let before = snapshot(&repo);
        let out = rocm_pin()
            .args(["repo", "--quiet", "--out"])
            .arg(&repo)
            .arg(&second)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{escape}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{escape}: {err}");
        assert!(
            err.contains(&format!("with Filename {escape:?}"))
                && err.contains("refusing to read or publish outside the repository"),
            "{escape}: {err}"
        );
        assert_eq!(snapshot(&repo), before, "{escape}: the repository changed");
    }
}

/// One bounded run of `rocm-pin repo`: its exit code (128 + signal when killed) and stderr.
struct Bounded {
    code: i32,
    stderr: String,
}

/// How long a refused `repo` run may take: it reads nothing large.
const REPO_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// Run `cmd` with at most 2 GiB of address space (a read of `/dev/zero` fails fast instead of
/// pushing the machine into the OOM killer) and kill it after [`REPO_TIMEOUT`] (a FIFO read
/// hangs); `None` when it was killed for taking too long.
fn run_bounded(cmd: &mut Command) -> Option<Bounded> {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &limit);
            Ok(())
        });
    }
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = err.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    });
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > REPO_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    Some(Bounded {
        code,
        stderr: reader.join().unwrap(),
    })
}

/// A published repository holding `first`, and the package `second` to add to it.
fn published(tmp: &Path) -> (PathBuf, PathBuf) {
    let first = tiny_package(tmp, "first", "1.0", "");
    let second = tiny_package(tmp, "second", "1.0", "");
    let repo = tmp.join("repo");
    must_stdout(
        rocm_pin()
            .args(["repo", "--quiet", "--out"])
            .arg(&repo)
            .arg(&first),
    );
    (repo, second)
}

const TRUSTED_ONLY: &str =
    "refused: an existing repository directory is trusted only for its regular files and directories";

/// Issue 31: with a directory inside an existing repository replaced by a symlink to another
/// directory (holding the same files, so the repository still reads as consistent), `repo`
/// wrote Packages, Release and the new .deb into the directory the link names. Each is now
/// refused with one line naming the link, before anything is written anywhere.
#[test]
fn a_symlinked_directory_in_an_existing_repository_is_refused_and_nothing_is_written() {
    for linked in [
        "dists/stable/main/binary-all",
        "dists/stable",
        "pool/main",
        "pool/main/f/first",
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, second) = published(tmp.path());
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::rename(repo.join(linked), &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, repo.join(linked)).unwrap();
        let (repo_before, elsewhere_before) = (snapshot(&repo), snapshot(&elsewhere));
        let out = run_bounded(
            rocm_pin()
                .args(["repo", "--quiet", "--out"])
                .arg(&repo)
                .arg(&second),
        )
        .unwrap_or_else(|| panic!("{linked}: repo hung"));
        assert_eq!(out.code, 2, "{linked}: {}", out.stderr);
        assert_eq!(
            out.stderr.trim_end(),
            format!(
                "rocm-pin: error: {} is a symlink; {TRUSTED_ONLY}",
                repo.join(linked).display()
            ),
            "{linked}"
        );
        assert_eq!(
            snapshot(&elsewhere),
            elsewhere_before,
            "{linked}: written through the link"
        );
        assert_eq!(
            snapshot(&repo),
            repo_before,
            "{linked}: the repository changed"
        );
    }
}

/// A symlinked `Release` (or key file) is refused too: the repository is trusted for regular
/// files only, and a refused run writes nothing.
#[test]
fn a_symlinked_file_rocm_pin_would_replace_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, second) = published(tmp.path());
    let host_file = tmp.path().join("host-release");
    std::fs::write(&host_file, "kept\n").unwrap();
    let release = repo.join("dists/stable/Release");
    std::fs::remove_file(&release).unwrap();
    std::os::unix::fs::symlink(&host_file, &release).unwrap();
    let out = run_bounded(
        rocm_pin()
            .args(["repo", "--quiet", "--out"])
            .arg(&repo)
            .arg(&second),
    )
    .expect("repo hung");
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_says(
        &out.stderr,
        &[&format!(
            "{} is a symlink; {TRUSTED_ONLY}",
            release.display()
        )],
    );
    assert!(std::fs::symlink_metadata(&release).unwrap().is_symlink());
    assert_eq!(std::fs::read_to_string(&host_file).unwrap(), "kept\n");
}

/// Make a FIFO (`mknod p`) or the character device 1:5 (`/dev/zero`) at `path`.
fn mknod(path: &Path, mode: libc::mode_t, dev: libc::dev_t) {
    let _ = std::fs::remove_file(path);
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(
        unsafe { libc::mknod(c.as_ptr(), mode | 0o644, dev) },
        0,
        "mknod {}",
        path.display()
    );
}

/// Issue 31: `repo --out` read the existing index and the pool with host lookups and no cap. A
/// `Packages` linked to a host file had a line of it quoted in the error; a FIFO hung; a
/// device like /dev/zero ran out of memory (index) or hashed forever (a pool file where the
/// new package goes). Each is now refused at once, one line naming the file, nothing of a
/// refused file quoted, nothing written.
#[test]
fn a_hostile_existing_index_or_pool_file_is_refused_unread() {
    rocm_pin_testkit::needs_root!("mknod of a character device");
    let secret = "SECRET-LINE-FROM-THE-HOST";
    type Setup = fn(&Path, &Path, &str);
    let cases: [(&str, Setup, &str); 6] = [
        (
            "Packages -> host file",
            |repo, tmp, secret| {
                let host = tmp.join("host-file");
                std::fs::write(&host, format!("{secret}\n")).unwrap();
                let index = repo.join("dists/stable/main/binary-all/Packages");
                std::fs::remove_file(&index).unwrap();
                std::os::unix::fs::symlink(&host, &index).unwrap();
            },
            "Packages is a symlink; refused",
        ),
        (
            "Packages is a FIFO",
            |repo, _, _| {
                mknod(
                    &repo.join("dists/stable/main/binary-all/Packages"),
                    libc::S_IFIFO,
                    0,
                )
            },
            "Packages is a FIFO, not a regular file; refused",
        ),
        (
            "Packages is /dev/zero",
            |repo, _, _| {
                mknod(
                    &repo.join("dists/stable/main/binary-all/Packages"),
                    libc::S_IFCHR,
                    libc::makedev(1, 5),
                )
            },
            "Packages is a character device, not a regular file; refused",
        ),
        (
            "Packages over the index cap",
            |repo, _, _| {
                let f = std::fs::File::create(repo.join("dists/stable/main/binary-all/Packages"))
                    .unwrap();
                f.set_len((128 << 20) + 1).unwrap();
            },
            "is larger than the 134217728-byte limit for a Packages index; refused, not truncated",
        ),
        (
            "the new package's pool file is /dev/zero",
            |repo, _, _| {
                let dir = repo.join("pool/main/s/second");
                std::fs::create_dir_all(&dir).unwrap();
                mknod(
                    &dir.join("second_1.0_all.deb"),
                    libc::S_IFCHR,
                    libc::makedev(1, 5),
                );
            },
            "second_1.0_all.deb is a character device, not a regular file; refused",
        ),
        (
            "the new package's pool file is a FIFO",
            |repo, _, _| {
                let dir = repo.join("pool/main/s/second");
                std::fs::create_dir_all(&dir).unwrap();
                mknod(&dir.join("second_1.0_all.deb"), libc::S_IFIFO, 0);
            },
            "second_1.0_all.deb is a FIFO, not a regular file; refused",
        ),
    ];
    for (what, setup, expected) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, second) = published(tmp.path());
        setup(&repo, tmp.path(), secret);
        let before = snapshot_entries(&repo);
        let out = run_bounded(
            rocm_pin()
                .args(["repo", "--quiet", "--out"])
                .arg(&repo)
                .arg(&second),
        )
        .unwrap_or_else(|| panic!("{what}: repo hung for {}s", REPO_TIMEOUT.as_secs()));
        assert_eq!(out.code, 2, "{what}: {}", out.stderr);
        assert_eq!(
            out.stderr.trim_end().lines().count(),
            1,
            "{what}: {}",
            out.stderr
        );
        assert!(out.stderr.contains(expected), "{what}: {}", out.stderr);
        assert!(!out.stderr.contains(secret), "{what}: {}", out.stderr);
        assert_eq!(
            snapshot_entries(&repo),
            before,
            "{what}: the repository changed"
        );
    }
}

/// Every entry under `dir` (not following links, not opening special files): its type and,
/// for a regular file, its bytes.
fn snapshot_entries(dir: &Path) -> BTreeMap<PathBuf, (String, Vec<u8>)> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| {
            let kind = format!("{:?}", e.file_type());
            let bytes = if e.file_type().is_file() {
                std::fs::read(e.path()).unwrap()
            } else {
                Vec::new()
            };
            (e.path().to_path_buf(), (kind, bytes))
        })
        .collect()
}
