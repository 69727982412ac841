//! Throwaway chroots for acceptance tests and `rocm-pin demo`: a cached `mmdebstrap
//! --variant=apt` tarball, unpacked fresh per scenario, with helpers to run commands inside.
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use rocm_pin_kit::sandbox::{ChrootImage, Sandbox};
//! let image = ChrootImage::cached("bookworm", std::path::Path::new(".cache"))?;
//! let sb = Sandbox::new(&image)?;
//! sb.add_local_repo("stock", std::path::Path::new("out/stock-debs"))?;
//! sb.run_ok(&["apt-get", "install", "-y", "hsa-rocr"])?;
//! # Ok(()) }
//! ```
//!
//! Two ways to get a fresh tree, chosen per sandbox ([`Backend`]): an overlayfs mount over a
//! read-only unpacked copy of the image kept in the cache (milliseconds), or a full
//! `tar --zstd -xf` of the tarball (seconds; `scripts/bench-sandbox` measures both,
//! docs/performance.md). Overlay is used when the kernel lets us mount it;
//! `ROCM_PIN_SANDBOX_BACKEND=copy|overlay` forces one.
//!
//! Everything here needs root (chroot, mount, device nodes from the tarball).

use std::ffi::{CString, OsStr};
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Output, Stdio};

use anyhow::{anyhow, bail, Context, Result};

use rocm_pin_core::process::tail_lines as tail;

/// The PATH commands inside the chroot get.
pub const CHROOT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Apt settings every sandbox gets: no pty progress noise in logs, no translation downloads,
/// no recommends (tests state exactly what they install).
pub const APT_TEST_CONF: &str =
    "Dpkg::Use-Pty \"0\";\nAcquire::Languages \"none\";\nAPT::Install-Recommends \"0\";\n";
/// Where [`APT_TEST_CONF`] is written inside the chroot.
pub const APT_TEST_CONF_PATH: &str = "/etc/apt/apt.conf.d/99rocm-pin-test";
/// apt 3's solver, the default in Ubuntu's next apt (apt 2.x ignores the option).
pub const APT_SOLVER3_CONF_PATH: &str = "/etc/apt/apt.conf.d/99rocm-pin-solver3";
/// The Ubuntu Docker images' dpkg filter: no documentation except copyright files.
pub const DPKG_EXCLUDES: &str =
    "# Drop documentation like Ubuntu's minimal images (unminimize restores it).\n\
path-exclude=/usr/share/doc/*\n\
path-include=/usr/share/doc/*/copyright\n";
/// Where [`DPKG_EXCLUDES`] goes inside the chroot (the path Ubuntu uses).
pub const DPKG_EXCLUDES_PATH: &str = "/etc/dpkg/dpkg.cfg.d/excludes";
/// Where [`Sandbox::add_local_repo`] puts repositories inside the chroot.
pub const LOCAL_REPOS_DIR: &str = "/srv/rocm-pin-test-repos";

/// A cached chroot tarball made by `mmdebstrap --variant=apt <suite>`.
#[derive(Debug, Clone)]
pub struct ChrootImage {
    suite: String,
    tarball: PathBuf,
    cache_dir: PathBuf,
}

impl ChrootImage {
    /// `<cache_dir>/chroot/<suite>-apt.tar.zst`, made with mmdebstrap when missing (12–40 s,
    /// needs the network and root). Creation is atomic (temp file + rename) and serialised by a
    /// lock file, so parallel tests build it once.
    pub fn cached(suite: &str, cache_dir: &Path) -> Result<ChrootImage> {
        if suite.is_empty() || !suite.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            bail!("invalid suite name {suite:?} (expected e.g. bookworm or trixie)");
        }
        let dir = cache_dir.join("chroot");
        let tarball = dir.join(format!("{suite}-apt.tar.zst"));
        let image = ChrootImage {
            suite: suite.to_string(),
            tarball: tarball.clone(),
            cache_dir: dir.clone(),
        };
        if tarball.is_file() {
            return Ok(image);
        }
        fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let _lock = FileLock::acquire(&dir.join(format!(".{suite}-apt.lock")))?;
        if tarball.is_file() {
            return Ok(image); // another process made it while we waited
        }
        require_root("making the chroot image with mmdebstrap")?;
        if find_in_path("mmdebstrap").is_none() {
            bail!(
                "{} is missing and mmdebstrap is not installed to make it: apt-get install mmdebstrap \
                 (or run scripts/test-setup)",
                tarball.display()
            );
        }
        // mmdebstrap picks the output format from the extension, so the temp name keeps it.
        let tmp = dir.join(format!(".{suite}-apt.{}.tmp.tar.zst", std::process::id()));
        let out = Command::new("mmdebstrap")
            .args(["--variant=apt", "--quiet", suite])
            .arg(&tmp)
            .stdin(Stdio::null())
            .output()
            .context("cannot run mmdebstrap")?;
        if !out.status.success() {
            let _ = fs::remove_file(&tmp);
            bail!(
                "mmdebstrap --variant=apt {suite} failed ({}); it needs network access to the Debian \
                 mirror:\n{}",
                out.status,
                tail(&out.stderr, 40)
            );
        }
        fs::rename(&tmp, &tarball)
            .with_context(|| format!("cannot move {} to {}", tmp.display(), tarball.display()))?;
        Ok(image)
    }

    /// The cached image for tests: Err saying "run scripts/test-setup" when the tarball is not
    /// there yet (tests must not silently build or skip; the setup script makes it).
    pub fn existing(suite: &str, cache_dir: &Path) -> Result<ChrootImage> {
        let tarball = cache_dir
            .join("chroot")
            .join(format!("{suite}-apt.tar.zst"));
        if !tarball.is_file() {
            bail!(
                "{} is missing: run scripts/test-setup (scripts/setup.d/20-chroot.sh makes it)",
                tarball.display()
            );
        }
        Self::cached(suite, cache_dir)
    }

    /// An existing tarball (any `mmdebstrap` output in tar.zst form).
    pub fn from_tarball(suite: &str, tarball: &Path) -> Result<ChrootImage> {
        if !tarball.is_file() {
            bail!("chroot tarball {} does not exist", tarball.display());
        }
        let cache_dir = tarball
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        Ok(ChrootImage {
            suite: suite.to_string(),
            tarball: tarball.to_path_buf(),
            cache_dir,
        })
    }

    pub fn suite(&self) -> &str {
        &self.suite
    }

    pub fn tarball(&self) -> &Path {
        &self.tarball
    }

    /// The read-only unpacked tree overlay sandboxes sit on, unpacked once per tarball version
    /// (its name carries the tarball's size and mtime, so a remade tarball gets a new tree).
    fn lower_tree(&self) -> Result<PathBuf> {
        let meta = fs::metadata(&self.tarball)
            .with_context(|| format!("cannot stat {}", self.tarball.display()))?;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let name = format!("{}-apt.{}-{}.tree", self.suite, meta.len(), mtime);
        let tree = self.cache_dir.join(&name);
        let done = self.cache_dir.join(format!("{name}.done"));
        if done.is_file() {
            return Ok(tree);
        }
        let _lock = FileLock::acquire(&self.cache_dir.join(format!(".{name}.lock")))?;
        if done.is_file() {
            return Ok(tree);
        }
        if tree.exists() {
            fs::remove_dir_all(&tree)
                .with_context(|| format!("cannot remove partial {}", tree.display()))?;
        }
        untar(&self.tarball, &tree)?;
        fs::write(&done, b"").with_context(|| format!("cannot write {}", done.display()))?;
        Ok(tree)
    }
}

/// How a sandbox gets its fresh tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// overlayfs over a cached unpacked image: milliseconds.
    Overlay,
    /// A full unpack of the tarball: seconds (`scripts/bench-sandbox`).
    Copy,
}

/// What a sandbox is set up with besides the defaults (apt test options, empty sources).
#[derive(Debug, Clone, Default)]
pub struct SandboxOptions {
    /// Install the Ubuntu-like `/etc/dpkg/dpkg.cfg.d/excludes` (no /usr/share/doc but copyright).
    pub dpkg_excludes: bool,
    /// Set `APT::Solver "3.0"` (apt ≥ 3, e.g. trixie).
    pub apt_solver3: bool,
    /// Mount /proc inside (unmounted on drop). Off by default: apt and dpkg do not need it.
    pub mount_proc: bool,
    /// None: `ROCM_PIN_SANDBOX_BACKEND` if set, else overlay when it can be mounted, else copy.
    pub backend: Option<Backend>,
}

/// A flat apt repository inside a sandbox (see [`Sandbox::add_local_repo`]).
#[derive(Debug, Clone)]
pub struct LocalRepo {
    pub name: String,
    /// The repository directory as seen inside the chroot.
    pub chroot_dir: PathBuf,
    /// The same directory on the host.
    pub host_dir: PathBuf,
}

/// A fresh chroot for one scenario. Dropping it unmounts what it mounted and removes the tree.
#[derive(Debug)]
pub struct Sandbox {
    /// The temp directory holding everything (root, and for overlay upper/work).
    base: PathBuf,
    root: PathBuf,
    backend: Backend,
    suite: String,
    /// Mount points we made, in mount order.
    mounts: Vec<PathBuf>,
    keep: bool,
}

impl Sandbox {
    pub fn new(image: &ChrootImage) -> Result<Sandbox> {
        Self::with_options(image, &SandboxOptions::default())
    }

    pub fn with_options(image: &ChrootImage, options: &SandboxOptions) -> Result<Sandbox> {
        require_root("a chroot sandbox")?;
        for tool in ["chroot", "tar"] {
            if find_in_path(tool).is_none() {
                bail!("{tool} is not installed (coreutils / tar)");
            }
        }
        let base = tempfile::Builder::new()
            .prefix("rocm-pin-sandbox-")
            .tempdir()
            .context("cannot create a temporary directory for the sandbox")?
            .keep();
        let root = base.join("root");
        let mut sandbox = Sandbox {
            base,
            root,
            backend: Backend::Copy,
            suite: image.suite.clone(),
            mounts: Vec::new(),
            keep: false,
        };
        // From here on, Drop cleans up whatever was made if a step fails.
        let wanted = match options.backend {
            Some(b) => Some(b),
            None => match std::env::var("ROCM_PIN_SANDBOX_BACKEND").ok().as_deref() {
                Some("copy") => Some(Backend::Copy),
                Some("overlay") => Some(Backend::Overlay),
                Some("") | None => None,
                Some(other) => bail!("ROCM_PIN_SANDBOX_BACKEND={other}: expected copy or overlay"),
            },
        };
        sandbox.backend = match wanted {
            Some(Backend::Overlay) => {
                sandbox.mount_overlay(image)?;
                Backend::Overlay
            }
            Some(Backend::Copy) => {
                untar(&image.tarball, &sandbox.root)?;
                Backend::Copy
            }
            None => match sandbox.mount_overlay(image) {
                Ok(()) => Backend::Overlay,
                Err(_) => {
                    // Not allowed here (e.g. an unprivileged container): fall back to a copy.
                    let _ = fs::remove_dir_all(&sandbox.root);
                    untar(&image.tarball, &sandbox.root)?;
                    Backend::Copy
                }
            },
        };
        sandbox.configure(options)?;
        Ok(sandbox)
    }

    fn mount_overlay(&mut self, image: &ChrootImage) -> Result<()> {
        let lower = image.lower_tree()?;
        let upper = self.base.join("upper");
        let work = self.base.join("work");
        for d in [&upper, &work, &self.root] {
            fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
        }
        for p in [&lower, &upper, &work] {
            if p.as_os_str()
                .as_bytes()
                .iter()
                .any(|b| matches!(b, b',' | b':'))
            {
                bail!("overlay path {} contains ',' or ':'", p.display());
            }
        }
        let data = format!(
            "lowerdir={},upperdir={},workdir={}",
            lower.display(),
            upper.display(),
            work.display()
        );
        mount("overlay", &self.root, "overlay", &data)?;
        self.mounts.push(self.root.clone());
        Ok(())
    }

    fn configure(&mut self, options: &SandboxOptions) -> Result<()> {
        // Tests add only local repositories: no network sources.
        self.write("/etc/apt/sources.list", "")?;
        let sources_d = self.path("/etc/apt/sources.list.d");
        if sources_d.is_dir() {
            for e in fs::read_dir(&sources_d)
                .with_context(|| format!("cannot list {}", sources_d.display()))?
            {
                let p = e?.path();
                fs::remove_file(&p).with_context(|| format!("cannot remove {}", p.display()))?;
            }
        }
        self.write(APT_TEST_CONF_PATH, APT_TEST_CONF)?;
        // A throwaway tree needs no fsync after every file; this roughly halves dpkg's time on a
        // busy disk and changes nothing else about what dpkg does.
        self.write("/etc/dpkg/dpkg.cfg.d/99rocm-pin-test", "force-unsafe-io\n")?;
        if options.apt_solver3 {
            self.write(APT_SOLVER3_CONF_PATH, "APT::Solver \"3.0\";\n")?;
        }
        if options.dpkg_excludes {
            self.add_dpkg_excludes()?;
        }
        if options.mount_proc {
            let proc_dir = self.path("/proc");
            fs::create_dir_all(&proc_dir)?;
            mount("proc", &proc_dir, "proc", "")?;
            self.mounts.push(proc_dir);
        }
        Ok(())
    }

    /// The chroot's root directory on the host.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn suite(&self) -> &str {
        &self.suite
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Host path of `p` (an absolute path inside the chroot). `..` cannot climb above the root.
    /// Symlinks are NOT resolved the chroot's way (an absolute link would point into the host):
    /// use [`Sandbox::resolve`] for that.
    pub fn path(&self, p: impl AsRef<Path>) -> PathBuf {
        let mut out = PathBuf::new();
        for c in p.as_ref().components() {
            match c {
                Component::Normal(n) => out.push(n),
                Component::ParentDir => {
                    out.pop();
                }
                _ => {}
            }
        }
        self.root.join(out)
    }

    /// Host path of `p` with every symlink resolved as the chroot would (absolute targets are
    /// relative to the chroot's root). Returns the chroot-side path of the final target.
    pub fn resolve(&self, p: impl AsRef<Path>) -> Result<PathBuf> {
        let resolved = rocm_pin_core::host::root::Root::new(&self.root)
            .resolve(p.as_ref(), rocm_pin_core::host::root::Missing::Keep)?;
        Ok(resolved.path)
    }

    /// A `chroot <root> argv…` command with a clean environment (PATH, DEBIAN_FRONTEND,
    /// LC_ALL=C, HOME=/root), stdin closed. Add env vars or stdin before running it.
    pub fn command(&self, argv: &[&str]) -> Command {
        let mut cmd = Command::new("chroot");
        cmd.arg(&self.root)
            .args(argv)
            .env_clear()
            .env("PATH", CHROOT_PATH)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .env("LC_ALL", "C")
            .env("HOME", "/root")
            .stdin(Stdio::null());
        cmd
    }

    /// Run `argv` inside; Err only when it cannot be started. Look at the status yourself.
    pub fn run(&self, argv: &[&str]) -> Result<Output> {
        self.command(argv).output().with_context(|| {
            format!(
                "cannot run chroot {} {}",
                self.root.display(),
                argv.join(" ")
            )
        })
    }

    /// Run `argv` inside; Err (with its output) unless it exits 0. Returns stdout.
    pub fn run_ok(&self, argv: &[&str]) -> Result<String> {
        let out = self.run(argv)?;
        check_output(&argv.join(" "), &out)
    }

    /// Run a shell script inside (`/bin/sh -ec script`).
    pub fn sh(&self, script: &str) -> Result<Output> {
        self.run(&["/bin/sh", "-ec", script])
    }

    /// Run a shell script inside; Err (with its output) unless it exits 0. Returns stdout.
    pub fn sh_ok(&self, script: &str) -> Result<String> {
        let out = self.sh(script)?;
        check_output(script, &out)
    }

    /// Write `contents` to `chroot_path` (parents created, mode 0644).
    pub fn write(&self, chroot_path: &str, contents: impl AsRef<[u8]>) -> Result<()> {
        let host = self.path(chroot_path);
        if let Some(parent) = host.parent() {
            fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        // Replace, never write through, a symlink at the destination.
        if fs::symlink_metadata(&host).is_ok_and(|m| m.file_type().is_symlink()) {
            fs::remove_file(&host)?;
        }
        fs::write(&host, contents).with_context(|| format!("cannot write {}", host.display()))?;
        fs::set_permissions(&host, fs::Permissions::from_mode(0o644))?;
        Ok(())
    }

    pub fn read_to_string(&self, chroot_path: &str) -> Result<String> {
        let host = self.path(chroot_path);
        fs::read_to_string(&host).with_context(|| format!("cannot read {}", host.display()))
    }

    /// Copy a host file or directory tree to `chroot_path` (modes kept, symlinks copied as
    /// symlinks). A directory lands AT `chroot_path` (like `cp -a src dst` when dst is new).
    pub fn copy_in(&self, host_path: &Path, chroot_path: &str) -> Result<()> {
        let dest = self.path(chroot_path);
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        let out = Command::new("cp")
            .arg("-a")
            .arg("--no-target-directory")
            .arg(host_path)
            .arg(&dest)
            .output()
            .context("cannot run cp")?;
        check_output(
            &format!("cp -a {} {}", host_path.display(), dest.display()),
            &out,
        )
        .map(|_| ())
    }

    /// Copy the rocm-pin binary to /usr/local/bin/rocm-pin inside.
    pub fn install_rocm_pin(&self, bin: &Path) -> Result<()> {
        self.install_local_bin(bin, "rocm-pin")
    }

    /// Copy the guard binary to /usr/local/bin/rocm-pin-guard inside, beside rocm-pin (where
    /// `install --guard` looks for it).
    pub fn install_rocm_pin_guard(&self, bin: &Path) -> Result<()> {
        self.install_local_bin(bin, "rocm-pin-guard")
    }

    fn install_local_bin(&self, bin: &Path, name: &str) -> Result<()> {
        let dest = self.path(format!("/usr/local/bin/{name}"));
        fs::create_dir_all(self.path("/usr/local/bin"))?;
        fs::copy(bin, &dest)
            .with_context(|| format!("cannot copy {} to {}", bin.display(), dest.display()))?;
        fs::set_permissions(&dest, fs::Permissions::from_mode(0o755))?;
        Ok(())
    }

    /// Install the Ubuntu-like dpkg excludes file (see [`DPKG_EXCLUDES`]).
    pub fn add_dpkg_excludes(&self) -> Result<()> {
        self.write(DPKG_EXCLUDES_PATH, DPKG_EXCLUDES)
    }

    /// Publish every `*.deb` in `debs_dir` as a flat, trusted `file:` repository named `name`
    /// inside the chroot, then `apt-get update`. Calling it again with the same name adds the
    /// new .debs (e.g. a newer stock release) and refreshes the index. Index files are written
    /// host-side with `apt-ftparchive` (apt-utils).
    pub fn add_local_repo(&self, name: &str, debs_dir: &Path) -> Result<LocalRepo> {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            bail!("invalid local repository name {name:?}");
        }
        if find_in_path("apt-ftparchive").is_none() {
            bail!("apt-ftparchive is not installed: apt-get install apt-utils");
        }
        let chroot_dir = Path::new(LOCAL_REPOS_DIR).join(name);
        let host_dir = self.path(&chroot_dir);
        fs::create_dir_all(&host_dir)
            .with_context(|| format!("cannot create {}", host_dir.display()))?;
        let mut copied = 0;
        for e in
            fs::read_dir(debs_dir).with_context(|| format!("cannot list {}", debs_dir.display()))?
        {
            let p = e?.path();
            if p.extension() == Some(OsStr::new("deb")) && p.is_file() {
                let file_name = p.file_name().ok_or_else(|| anyhow!("no file name"))?;
                let dest = host_dir.join(file_name);
                fs::copy(&p, &dest).with_context(|| {
                    format!("cannot copy {} to {}", p.display(), dest.display())
                })?;
                fs::set_permissions(&dest, fs::Permissions::from_mode(0o644))?;
                copied += 1;
            }
        }
        if copied == 0 {
            bail!("{} holds no .deb files", debs_dir.display());
        }
        // apt's download sandbox user (_apt) must be able to read the repository.
        fs::set_permissions(&host_dir, fs::Permissions::from_mode(0o755))?;
        let packages = ftparchive(&host_dir, &["packages", "."])?;
        fs::write(host_dir.join("Packages"), &packages)?;
        let release = ftparchive(
            &host_dir,
            &[
                "-o",
                &format!("APT::FTPArchive::Release::Origin=rocm-pin-test-{name}"),
                "-o",
                &format!("APT::FTPArchive::Release::Label={name}"),
                "release",
                ".",
            ],
        )?;
        fs::write(host_dir.join("Release"), &release)?;
        self.write(
            &format!("/etc/apt/sources.list.d/{name}.list"),
            format!("deb [trusted=yes] file:{} ./\n", chroot_dir.display()),
        )?;
        self.apt_update()?;
        Ok(LocalRepo {
            name: name.to_string(),
            chroot_dir,
            host_dir,
        })
    }

    /// The version of `pkg` when dpkg has it fully installed (`ii`), else None.
    pub fn installed_version(&self, pkg: &str) -> Result<Option<String>> {
        Ok(self.installed_packages()?.remove(pkg))
    }

    /// Every fully installed (`ii`) package with its version (`name` or `name:arch` for
    /// foreign-architecture packages), read with dpkg-query: a snapshot to compare before and
    /// after a transaction.
    pub fn installed_packages(&self) -> Result<std::collections::BTreeMap<String, String>> {
        let out = self.run_ok(&[
            "dpkg-query",
            "-W",
            "-f",
            "${db:Status-Abbrev}\t${binary:Package}\t${Version}\n",
        ])?;
        Ok(out
            .lines()
            .filter_map(|l| {
                let mut f = l.split('\t');
                let status = f.next()?;
                let name = f.next()?;
                let version = f.next()?;
                (status.trim() == "ii").then(|| (name.to_string(), version.to_string()))
            })
            .collect())
    }

    /// `apt-get update` inside; Err with its output on failure.
    pub fn apt_update(&self) -> Result<()> {
        self.run_ok(&["apt-get", "update", "-q"]).map(|_| ())
    }

    /// Keep the tree after drop (for `--keep` / debugging); mounts are still undone.
    /// Returns the directory that will be kept. For overlay sandboxes the changes are in
    /// `<base>/upper` and the image in the cache.
    pub fn keep(&mut self) -> PathBuf {
        self.keep = true;
        self.base.clone()
    }

    /// Unmount everything under the root (ours and anything a script inside mounted),
    /// deepest first. Returns the mount points that are still there.
    fn unmount_all(&mut self) -> Vec<PathBuf> {
        for _ in 0..3 {
            let mut under = mounts_under(&self.root);
            if under.is_empty() {
                break;
            }
            under.sort_by_key(|p| std::cmp::Reverse(p.as_os_str().len()));
            for m in under {
                let _ = umount(&m);
            }
        }
        self.mounts.clear();
        mounts_under(&self.root)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let left = self.unmount_all();
        if !left.is_empty() {
            // Never delete through a mount point: it could be a host directory.
            return;
        }
        if !self.keep {
            let _ = fs::remove_dir_all(&self.base);
        }
    }
}

fn check_output(what: &str, out: &Output) -> Result<String> {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        return Ok(stdout);
    }
    bail!(
        "`{what}` failed ({}):\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        tail(&out.stdout, 60),
        tail(&out.stderr, 60)
    )
}

/// The last `n` lines of a command's output.
fn require_root(what: &str) -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("{what} needs root (chroot, mount, device nodes): run as root, e.g. `sudo -E cargo test`");
    }
    Ok(())
}

fn find_in_path(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// Unpack a chroot tarball into `dest` (created). Keeps owners, modes and device nodes.
fn untar(tarball: &Path, dest: &Path) -> Result<()> {
    fs::create_dir_all(dest).with_context(|| format!("cannot create {}", dest.display()))?;
    let out = Command::new("tar")
        .args(["--zstd", "-xpf"])
        .arg(tarball)
        .arg("-C")
        .arg(dest)
        .args(["--numeric-owner", "--xattrs", "--xattrs-include=*"])
        .output()
        .context("cannot run tar")?;
    check_output(
        &format!("tar --zstd -xf {} -C {}", tarball.display(), dest.display()),
        &out,
    )
    .map(|_| ())
}

fn ftparchive(dir: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let out = Command::new("apt-ftparchive")
        .current_dir(dir)
        .args(args)
        .output()
        .context("cannot run apt-ftparchive")?;
    check_output(&format!("apt-ftparchive {}", args.join(" ")), &out)?;
    Ok(out.stdout)
}

fn cstr(s: &OsStr) -> Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| anyhow!("path contains a NUL byte"))
}

fn mount(source: &str, target: &Path, fstype: &str, data: &str) -> Result<()> {
    let src = cstr(OsStr::new(source))?;
    let tgt = cstr(target.as_os_str())?;
    let fst = cstr(OsStr::new(fstype))?;
    let dat = cstr(OsStr::new(data))?;
    // SAFETY: all pointers are valid NUL-terminated strings for the duration of the call.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            tgt.as_ptr(),
            fst.as_ptr(),
            0,
            dat.as_ptr() as *const libc::c_void,
        )
    };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        bail!("cannot mount {fstype} on {}: {err}", target.display());
    }
    Ok(())
}

fn umount(target: &Path) -> Result<()> {
    let tgt = cstr(target.as_os_str())?;
    // SAFETY: valid NUL-terminated path.
    let rc = unsafe { libc::umount2(tgt.as_ptr(), 0) };
    if rc == 0 {
        return Ok(());
    }
    // Busy (a process still inside): detach it so it goes away when the last user does.
    // SAFETY: as above.
    let rc = unsafe { libc::umount2(tgt.as_ptr(), libc::MNT_DETACH) };
    if rc != 0 {
        bail!(
            "cannot unmount {}: {}",
            target.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Mount points at or below `root`, from /proc/self/mountinfo.
pub fn mounts_under(root: &Path) -> Vec<PathBuf> {
    let Ok(info) = fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    info.lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(unescape_mountinfo)
        .filter(|p| p.starts_with(root))
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as octal (`\040`).
fn unescape_mountinfo(field: &str) -> PathBuf {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 4 <= bytes.len() {
            let oct = std::str::from_utf8(&bytes[i + 1..i + 4]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(oct, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    PathBuf::from(OsStr::from_bytes(&out))
}

/// An exclusive flock held until drop.
struct FileLock {
    _file: fs::File,
}

impl FileLock {
    fn acquire(path: &Path) -> Result<FileLock> {
        let mut file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open lock file {}", path.display()))?;
        file.lock()
            .with_context(|| format!("cannot lock {}", path.display()))?;
        let _ = writeln!(file, "{}", std::process::id());
        Ok(FileLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_unescape() {
        assert_eq!(
            unescape_mountinfo("/tmp/a\\040b"),
            PathBuf::from("/tmp/a b")
        );
        assert_eq!(unescape_mountinfo("/plain"), PathBuf::from("/plain"));
        assert_eq!(unescape_mountinfo("/end\\"), PathBuf::from("/end\\"));
    }
}
