//! Container images read from the outside, without running them: an `oci-archive` or
//! `docker-archive` tarball, or a reference fetched with skopeo (`skopeo copy REF oci:DIR`,
//! any transport skopeo knows: `docker://` registries, `containers-storage:`, …). The layers
//! are unpacked in manifest order into a temporary root ([`layer`]), digests checked, and the
//! image config's labels returned.
//!
//! An image is untrusted: every blob is hashed while it is read and must match the digest that
//! names it (sha256 or sha512, the algorithms the OCI image spec registers; any other is
//! refused, as skopeo does); a docker-archive's layers must match the config's
//! `rootfs.diff_ids`, count and values (its layers have no other digest). What unpacking may
//! write is bounded ([`limits`]), and the temporary root is removed when a signal ends the run.

mod error;
pub mod layer;
pub mod limits;
mod links;

pub(crate) use error::invalid;
pub use error::ImageError;

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;
use sha2::Digest as _;

use crate::deb::tar::components;
use crate::deb::EntryKind;
use limits::{Budget, ImageLimits, InterruptGuard, Limit};

/// The most a JSON document of the layout (index.json, manifest.json, a manifest, a config) may
/// be: skopeo's own caps for manifests and configs.
const MAX_JSON_BYTES: u64 = 4 << 20;

/// Where an image comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSource {
    /// An `oci-archive` or `docker-archive` tarball (told apart by its contents).
    Archive(PathBuf),
    /// A reference for skopeo; without a transport prefix `docker://` is assumed.
    Reference(String),
}

impl ImageSource {
    pub fn describe(&self) -> String {
        match self {
            ImageSource::Archive(p) => format!("image archive {}", p.display()),
            ImageSource::Reference(r) => format!("image {}", skopeo_source(r)),
        }
    }
}

/// An image unpacked into a temporary directory (removed on drop, and when a signal ends the
/// run while it lives).
#[derive(Debug)]
pub struct UnpackedImage {
    // Dropped in this order: the directory is gone before the signal watcher stops.
    dir: tempfile::TempDir,
    interrupt: InterruptGuard,
    /// The image config's labels (`config.Labels`).
    pub labels: BTreeMap<String, String>,
    /// The image config's environment (`config.Env`, `NAME=value` each), as a container
    /// started from it gets it.
    pub env: Vec<String>,
    /// Layer count, in the order applied.
    pub layers: usize,
}

impl UnpackedImage {
    /// The image's root filesystem.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("rootfs")
    }

    /// [`ImageError::Interrupted`] when a signal arrived since the image was unpacked (the caller
    /// returns it, and the root is removed as it unwinds).
    pub fn check_interrupt(&self) -> anyhow::Result<()> {
        match self.interrupt.signal() {
            None => Ok(()),
            Some(signal) => Err(ImageError::Interrupted { signal }.into()),
        }
    }
}

impl std::fmt::Debug for InterruptGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InterruptGuard")
    }
}

/// One layer as the layout names it.
struct LayerRef {
    path: PathBuf,
    /// The blob's digest (OCI); none for a docker-archive, whose layers are named by path.
    digest: Option<String>,
    /// The digest of the uncompressed tar the config lists (docker-archive's `diff_ids`).
    diff_id: Option<String>,
}

/// One image as its layout describes it: the config's labels and the layer files in order.
struct ImagePlan {
    labels: BTreeMap<String, String>,
    env: Vec<String>,
    layers: Vec<LayerRef>,
}

/// Unpack `source` into a new temporary root, with the default limits.
pub fn unpack(source: &ImageSource) -> anyhow::Result<UnpackedImage> {
    unpack_within(source, &ImageLimits::default())
}

/// Unpack `source` into a new temporary root; refused as soon as it would pass `limits`.
pub fn unpack_within(source: &ImageSource, limits: &ImageLimits) -> anyhow::Result<UnpackedImage> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("{}-image-", crate::program::name()))
        .tempdir()
        .context("creating a temporary directory for the image")?;
    let interrupt = InterruptGuard::install(dir.path().to_path_buf());
    let mut budget = Budget::new(limits, interrupt.flag());
    let layout = dir.path().join("layout");
    budget.set_place(source.describe());
    match source {
        ImageSource::Archive(path) => extract_archive(path, &layout, &mut budget)?,
        ImageSource::Reference(r) => skopeo_fetch(r, &layout, &budget)?,
    }
    let plan = if layout.join("index.json").is_file() {
        oci_plan(&layout)?
    } else if layout.join("manifest.json").is_file() {
        docker_plan(&layout)?
    } else {
        return Err(invalid(format!(
            "{} is neither an OCI layout (index.json) nor a docker-archive (manifest.json)",
            source.describe()
        )));
    };
    let root = dir.path().join("rootfs");
    fs::create_dir(&root)?;
    for (i, layer) in plan.layers.iter().enumerate() {
        let name = layer
            .digest
            .clone()
            .unwrap_or_else(|| layer.path.display().to_string());
        let place = format!("layer {} of {} ({name})", i + 1, plan.layers.len());
        budget.set_place(place.clone());
        apply_blob(&root, layer, &mut budget, &place).map_err(|e| match error::find(&e) {
            Some(i) if i.names_its_place() => e,
            _ => e.context(place),
        })?;
    }
    budget.set_place(source.describe());
    layer::check_links(&root, &budget)?;
    // The layout is no longer needed; keep only the root.
    fs::remove_dir_all(&layout).ok();
    Ok(UnpackedImage {
        dir,
        interrupt,
        labels: plan.labels,
        env: plan.env,
        layers: plan.layers.len(),
    })
}

/// Hash the blob while its tar is applied: one read of each blob. Its digest (and diff_id) is
/// compared at the end; on a mismatch the whole unpack fails and its root is removed.
fn apply_blob(
    root: &Path,
    layer: &LayerRef,
    budget: &mut Budget<'_>,
    place: &str,
) -> anyhow::Result<()> {
    let file =
        fs::File::open(&layer.path).with_context(|| format!("opening {}", layer.path.display()))?;
    let compressed = file.metadata()?.len();
    let ratio = budget.limits().ratio;
    let allowance = compressed
        .saturating_mul(ratio)
        .saturating_add(limits::RATIO_SLACK);
    let mut blob = Hashing::new(file, layer.digest.as_deref())?;
    {
        let decoded = layer::decompress(&mut blob)?;
        let mut tar = Hashing::new(decoded, layer.diff_id.as_deref())?;
        layer::apply_layer_within(root, &mut tar, budget, allowance)?;
        // The rest of the tar stream (end-of-archive padding) is part of the diff_id; bounded
        // by the same allowance.
        let rest = drain(&mut tar, allowance, budget)?;
        if rest > allowance {
            return Err(budget
                .exceeded(Limit::Ratio, "the padding after the tar's end", rest)
                .into());
        }
        if let Some(want) = &layer.diff_id {
            tar.check(
                want,
                &format!("{place}: its uncompressed tar (the config's diff_id)"),
            )?;
        }
    }
    drain(&mut blob, u64::MAX, budget)?;
    if let Some(want) = &layer.digest {
        blob.check(want, place)?;
    }
    Ok(())
}

/// Read `r` to its end (at most `max` bytes and one more); how many bytes there were.
fn drain(r: &mut dyn std::io::Read, max: u64, budget: &Budget<'_>) -> anyhow::Result<u64> {
    let mut sink = std::io::sink();
    let mut limited = r.take(max.saturating_add(1));
    layer::copy_checked(&mut limited, &mut sink, budget)
}

/// The hash of one registered digest algorithm (OCI image spec, "Registered algorithms").
enum Hasher {
    Sha256(sha2::Sha256),
    Sha512(sha2::Sha512),
}

/// A digest split and checked: the algorithm and its lowercase hex.
fn parse_digest(digest: &str) -> anyhow::Result<(&str, &str)> {
    let (alg, hex) = digest
        .split_once(':')
        .ok_or_else(|| invalid(format!("malformed digest {digest:?}")))?;
    let len = match alg {
        "sha256" => 64,
        "sha512" => 128,
        _ => {
            return Err(invalid(format!(
            "unsupported digest algorithm in {digest:?}: only sha256 and sha512 (the OCI image \
             spec's registered algorithms) can be checked, so the blob is refused"
        )))
        }
    };
    if hex.len() != len || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(invalid(format!("malformed digest {digest:?}")));
    }
    Ok((alg, hex))
}

/// A reader that hashes what passes through it (nothing when no digest is expected).
struct Hashing<R> {
    inner: R,
    hasher: Option<Hasher>,
}

impl<R: std::io::Read> Hashing<R> {
    fn new(inner: R, digest: Option<&str>) -> anyhow::Result<Self> {
        let hasher = match digest.map(parse_digest).transpose()? {
            None => None,
            Some(("sha256", _)) => Some(Hasher::Sha256(sha2::Sha256::new())),
            Some(_) => Some(Hasher::Sha512(sha2::Sha512::new())),
        };
        Ok(Hashing { inner, hasher })
    }

    /// Compare what was read with `want`; `blob` names it in the error.
    fn check(&mut self, want: &str, blob: &str) -> anyhow::Result<()> {
        let got = match self.hasher.take() {
            Some(Hasher::Sha256(h)) => format!("sha256:{}", hex::encode(h.finalize())),
            Some(Hasher::Sha512(h)) => format!("sha512:{}", hex::encode(h.finalize())),
            None => return Ok(()),
        };
        if got != want {
            return Err(ImageError::ImageDigestMismatch {
                blob: blob.to_string(),
                expected: want.to_string(),
                actual: got,
            }
            .into());
        }
        Ok(())
    }
}

impl<R: std::io::Read> std::io::Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        match &mut self.hasher {
            Some(Hasher::Sha256(h)) => h.update(&buf[..n]),
            Some(Hasher::Sha512(h)) => h.update(&buf[..n]),
            None => {}
        }
        Ok(n)
    }
}

/// skopeo's source name for a reference: as given when it names a transport, else `docker://`.
fn skopeo_source(reference: &str) -> String {
    const TRANSPORTS: &[&str] = &[
        "docker://",
        "containers-storage:",
        "oci:",
        "oci-archive:",
        "docker-archive:",
        "docker-daemon:",
        "dir:",
    ];
    if TRANSPORTS.iter().any(|t| reference.starts_with(t)) {
        reference.to_string()
    } else {
        format!("docker://{reference}")
    }
}

fn skopeo_fetch(reference: &str, layout: &Path, budget: &Budget<'_>) -> anyhow::Result<()> {
    let src = skopeo_source(reference);
    let dest = format!("oci:{}:image", layout.display());
    let mut cmd = Command::new("skopeo");
    // skopeo 1.9 ignores CONTAINERS_REGISTRIES_CONF (buildah and podman read it): pass it on,
    // so a registry marked insecure there (a loopback registry) is reachable.
    if let Some(conf) = std::env::var_os("CONTAINERS_REGISTRIES_CONF").filter(|v| !v.is_empty()) {
        cmd.arg("--registries-conf").arg(conf);
    }
    // skopeo's messages go to a file (a pipe nobody reads while we wait could fill).
    let log_path = layout.with_extension("skopeo.log");
    let log = fs::File::create(&log_path).context("creating skopeo's log file")?;
    let mut child = cmd
        // Local storage holds layers uncompressed: keep them so (no gzip round trip).
        .args([
            "copy",
            "--quiet",
            "--dest-oci-accept-uncompressed-layers",
            &src,
            &dest,
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| {
            invalid(format!(
                "cannot run skopeo ({e}): apt-get install skopeo (scripts/install-deps)"
            ))
        })?;
    // Wait, but end skopeo when a signal asks us to end (it may not have received it).
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if let Err(e) = budget.check_interrupt() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // A Ctrl-C reaches skopeo too (same process group): it failed because we are ending.
    budget.check_interrupt()?;
    if !status.success() {
        let mut text = String::new();
        fs::File::open(&log_path)
            .and_then(|f| f.take(64 << 10).read_to_string(&mut text))
            .ok();
        return Err(invalid(format!(
            "skopeo copy {src} failed ({status}): {}",
            text.trim()
        )));
    }
    Ok(())
}

/// Extract the outer archive (regular files and directories only, names checked), counted
/// against `budget` (the archive may be a pipe: its size says nothing).
fn extract_archive(path: &Path, dest: &Path, budget: &mut Budget<'_>) -> anyhow::Result<()> {
    let mut f = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    fs::create_dir(dest)?;
    crate::deb::tar::read_safe(&mut f, &mut |entry, content| {
        let rel = entry.path.trim_start_matches("./").trim_end_matches('/');
        budget.entry(rel, rel.split('/').count())?;
        let target = dest.join(rel);
        match &entry.kind {
            EntryKind::Dir => fs::create_dir_all(&target)?,
            EntryKind::File => {
                budget.file(rel, entry.size, false)?;
                if let Some(parent) = target.parent() {
                    fs::create_dir_all(parent)?;
                }
                let mut out = fs::File::create(&target)?;
                layer::copy_checked(content, &mut out, budget)?;
            }
            // docker-archive's legacy `<id>/layer.tar` links to the `<digest>.tar` that
            // manifest.json names: never followed, not needed.
            EntryKind::Symlink(_) => {}
            other => return Err(invalid(format!("{}: entry {} is a {other:?}; an image archive holds only files, directories and symlinks", path.display(), entry.path))),
        }
        Ok(())
    })
    .map_err(|e| match error::find(&e) {
        Some(i) if i.names_its_place() => e,
        _ => e.context(format!("reading the image archive {}", path.display())),
    })
}

/// A JSON document of the layout, at most [`MAX_JSON_BYTES`]; hashed against `digest` when it
/// is a blob (`what` names it in errors).
fn read_json(path: &Path, digest: Option<&str>, what: &str) -> anyhow::Result<serde_json::Value> {
    let f = fs::File::open(path).with_context(|| format!("opening {what} ({})", path.display()))?;
    let mut r = Hashing::new(f, digest)?;
    let mut bytes = Vec::new();
    (&mut r)
        .take(MAX_JSON_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {what} ({})", path.display()))?;
    if bytes.len() as u64 > MAX_JSON_BYTES {
        return Err(invalid(format!("{what} ({}) is larger than {MAX_JSON_BYTES} bytes, the most an image's JSON document may be (skopeo's limit too)", path.display())));
    }
    if let Some(want) = digest {
        r.check(want, what)?;
    }
    serde_json::from_slice(&bytes).with_context(|| format!("parsing {what} ({})", path.display()))
}

/// A blob must be as long as its descriptor says (skopeo refuses one that is not).
fn check_size(path: &Path, declared: Option<u64>, digest: &str) -> anyhow::Result<()> {
    let Some(declared) = declared else {
        return Ok(());
    };
    let len = fs::metadata(path)
        .with_context(|| {
            format!(
                "the blob {digest} is not in the archive ({})",
                path.display()
            )
        })?
        .len();
    if len != declared {
        return Err(invalid(format!("the blob {digest} is {len} bytes but its descriptor says {declared}: the image is corrupt or was tampered with")));
    }
    Ok(())
}

/// `blobs/<algorithm>/<hex>` for a digest; only sha256/sha512 hex digests are accepted.
fn blob_path(layout: &Path, digest: &str) -> anyhow::Result<PathBuf> {
    let (alg, hex) = parse_digest(digest)?;
    Ok(layout.join("blobs").join(alg).join(hex))
}

fn labels_of(config: &serde_json::Value) -> BTreeMap<String, String> {
    config["config"]["Labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn env_of(config: &serde_json::Value) -> Vec<String> {
    config["config"]["Env"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

impl UnpackedImage {
    /// The value of `name` in the image config's environment, None when it is not set.
    pub fn env_var(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .rev()
            .find_map(|e| e.strip_prefix(name)?.strip_prefix('='))
    }
}

/// An OCI layout: index.json → (nested indexes) → the one manifest → config and layers.
fn oci_plan(layout: &Path) -> anyhow::Result<ImagePlan> {
    let mut index = read_json(&layout.join("index.json"), None, "index.json")?;
    for _ in 0..4 {
        let manifests = index["manifests"]
            .as_array()
            .ok_or_else(|| invalid("index.json has no manifests"))?;
        if manifests.len() != 1 {
            return Err(invalid(format!(
                "the OCI layout holds {} manifests; give an archive of exactly one image",
                manifests.len()
            )));
        }
        let desc = &manifests[0];
        let digest = desc["digest"]
            .as_str()
            .ok_or_else(|| invalid("a manifest descriptor has no digest"))?;
        let path = blob_path(layout, digest)?;
        let doc = read_json(&path, Some(digest), &format!("the manifest {digest}"))?;
        if doc["manifests"].is_array() {
            index = doc; // an image index: descend
            continue;
        }
        let config_digest = doc["config"]["digest"]
            .as_str()
            .ok_or_else(|| invalid(format!("manifest {digest} has no config digest")))?;
        let config_path = blob_path(layout, config_digest)?;
        let config = read_json(
            &config_path,
            Some(config_digest),
            &format!("the config {config_digest}"),
        )?;
        let mut layers = Vec::new();
        for l in doc["layers"].as_array().into_iter().flatten() {
            let d = l["digest"]
                .as_str()
                .ok_or_else(|| invalid(format!("a layer of manifest {digest} has no digest")))?;
            let path = blob_path(layout, d)?;
            check_size(&path, l["size"].as_u64(), d)?;
            layers.push(LayerRef {
                path,
                digest: Some(d.to_string()),
                diff_id: None,
            });
        }
        return Ok(ImagePlan {
            labels: labels_of(&config),
            env: env_of(&config),
            layers,
        });
    }
    Err(invalid("index.json nests image indexes too deeply"))
}

/// A docker-archive: manifest.json names the config and the layer tars by path.
fn docker_plan(layout: &Path) -> anyhow::Result<ImagePlan> {
    let manifest = read_json(&layout.join("manifest.json"), None, "manifest.json")?;
    let images = manifest
        .as_array()
        .ok_or_else(|| invalid("manifest.json is not a list"))?;
    if images.len() != 1 {
        return Err(invalid(format!(
            "the docker-archive holds {} images; give an archive of exactly one image",
            images.len()
        )));
    }
    let in_archive = |name: &str| -> anyhow::Result<PathBuf> {
        let parts =
            components(name.as_bytes()).map_err(|e| invalid(format!("manifest.json: {e}")))?;
        Ok(parts.iter().fold(layout.to_path_buf(), |p, c| p.join(c)))
    };
    let config_name = images[0]["Config"]
        .as_str()
        .ok_or_else(|| invalid("manifest.json has no Config"))?;
    let config = read_json(&in_archive(config_name)?, None, "the config")?;
    let mut paths = Vec::new();
    for l in images[0]["Layers"].as_array().into_iter().flatten() {
        let name = l
            .as_str()
            .ok_or_else(|| invalid("manifest.json has a layer that is not a path"))?;
        paths.push(in_archive(name)?);
    }
    // The layers are named by path only: the config's diff_ids are their digests (skopeo
    // refuses a docker-archive whose counts differ, and checks each).
    let diff_ids = config["rootfs"]["diff_ids"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if diff_ids.len() != paths.len() {
        return Err(invalid(format!("the docker-archive's manifest.json lists {} layers but its config's rootfs.diff_ids {}: \
             inconsistent image, refused", paths.len(), diff_ids.len())));
    }
    let mut layers = Vec::new();
    for (path, diff_id) in paths.into_iter().zip(&diff_ids) {
        let diff_id = diff_id
            .as_str()
            .ok_or_else(|| invalid("the config has a diff_id that is not a string"))?;
        parse_digest(diff_id)?;
        layers.push(LayerRef {
            path,
            digest: None,
            diff_id: Some(diff_id.to_string()),
        });
    }
    Ok(ImagePlan {
        labels: labels_of(&config),
        env: env_of(&config),
        layers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deb::tar::{TarWriter, WriteKind};

    /// A tar of (name, contents) regular files.
    fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = TarWriter::new(Vec::new());
        for (name, data) in files {
            w.append_header(
                name.as_bytes(),
                WriteKind::File(data.len() as u64),
                0o644,
                0,
            )
            .unwrap();
            w.write_contents(&mut &data[..], data.len() as u64, &mut |_| {})
                .unwrap();
        }
        w.finish().unwrap()
    }

    fn sha(data: &[u8]) -> String {
        format!("sha256:{}", hex::encode(sha2::Sha256::digest(data)))
    }

    /// An oci-archive of one image with one layer; `tamper` changes the layer after hashing.
    fn oci_archive(dir: &Path, tamper: bool) -> PathBuf {
        let layer = tar_of(&[("etc/hello", b"world")]);
        let config = br#"{"config":{"Labels":{"io.example":"yes"}},"rootfs":{"type":"layers"}}"#;
        let manifest = format!(
            r#"{{"schemaVersion":2,"config":{{"digest":"{}"}},"layers":[{{"digest":"{}"}}]}}"#,
            sha(config),
            sha(&layer)
        );
        let index = format!(
            r#"{{"schemaVersion":2,"manifests":[{{"digest":"{}"}}]}}"#,
            sha(manifest.as_bytes())
        );
        let blob = |d: &str| format!("blobs/sha256/{}", d.trim_start_matches("sha256:"));
        let mut stored_layer = layer.clone();
        if tamper {
            stored_layer[600] ^= 1; // inside the file's contents
        }
        let archive = tar_of(&[
            ("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#),
            ("index.json", index.as_bytes()),
            (&blob(&sha(manifest.as_bytes())), manifest.as_bytes()),
            (&blob(&sha(config)), config),
            (&blob(&sha(&layer)), &stored_layer),
        ]);
        let path = dir.join(if tamper { "bad.tar" } else { "good.tar" });
        fs::write(&path, archive).unwrap();
        path
    }

    #[test]
    fn an_oci_archive_unpacks_with_its_labels_and_a_changed_blob_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let img = unpack(&ImageSource::Archive(oci_archive(t.path(), false))).unwrap();
        assert_eq!(fs::read(img.root().join("etc/hello")).unwrap(), b"world");
        assert_eq!(
            img.labels.get("io.example").map(String::as_str),
            Some("yes")
        );
        assert_eq!(img.layers, 1);
        let err = unpack(&ImageSource::Archive(oci_archive(t.path(), true))).unwrap_err();
        assert!(
            format!("{err:#}").contains("does not match its digest"),
            "{err:#}"
        );
    }

    #[test]
    fn a_docker_archive_naming_a_layer_outside_the_archive_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let layer = tar_of(&[("f", b"x")]);
        for (layers, needle) in [
            (r#"["../outside.tar"]"#, "'..'"),
            (r#"["/etc/passwd"]"#, "absolute"),
        ] {
            let manifest = format!(r#"[{{"Config":"c.json","Layers":{layers}}}]"#);
            let archive = tar_of(&[
                ("manifest.json", manifest.as_bytes()),
                ("c.json", br#"{"config":{}}"#),
                ("l.tar", &layer),
            ]);
            let path = t.path().join("d.tar");
            fs::write(&path, archive).unwrap();
            let err = unpack(&ImageSource::Archive(path)).unwrap_err();
            assert!(format!("{err:#}").contains(needle), "{needle}: {err:#}");
        }
    }

    #[test]
    fn references_without_a_transport_are_registry_references() {
        assert_eq!(skopeo_source("reg:5000/a:b"), "docker://reg:5000/a:b");
        assert_eq!(
            skopeo_source("containers-storage:localhost/a"),
            "containers-storage:localhost/a"
        );
    }
}
