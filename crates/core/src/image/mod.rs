//! Container images read from the outside, without running them: an `oci-archive` or
//! `docker-archive` tarball, or a reference fetched with skopeo (`skopeo copy REF oci:DIR`,
//! any transport skopeo knows: `docker://` registries, `containers-storage:`, …). The layers
//! are unpacked in manifest order into a temporary root ([`layer`]), digests checked, and the
//! image config's labels returned. ROCm-agnostic.

pub mod layer;

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context};
use sha2::Digest as _;

use crate::deb::tar::components;
use crate::deb::EntryKind;

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

/// An image unpacked into a temporary directory (removed on drop).
#[derive(Debug)]
pub struct UnpackedImage {
    dir: tempfile::TempDir,
    /// The image config's labels (`config.Labels`).
    pub labels: BTreeMap<String, String>,
    /// Layer count, in the order applied.
    pub layers: usize,
}

impl UnpackedImage {
    /// The image's root filesystem.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("rootfs")
    }
}

/// One image as its layout describes it: the config's labels and the layer files in order.
struct ImagePlan {
    labels: BTreeMap<String, String>,
    layers: Vec<(PathBuf, Option<String>)>,
}

/// Unpack `source` into a new temporary root.
pub fn unpack(source: &ImageSource) -> anyhow::Result<UnpackedImage> {
    let dir = tempfile::Builder::new()
        .prefix("rocm-pin-image-")
        .tempdir()
        .context("creating a temporary directory for the image")?;
    let layout = dir.path().join("layout");
    match source {
        ImageSource::Archive(path) => extract_archive(path, &layout)?,
        ImageSource::Reference(r) => skopeo_fetch(r, &layout)?,
    }
    let plan = if layout.join("index.json").is_file() {
        oci_plan(&layout)?
    } else if layout.join("manifest.json").is_file() {
        docker_plan(&layout)?
    } else {
        bail!(
            "{} is neither an OCI layout (index.json) nor a docker-archive (manifest.json)",
            source.describe()
        );
    };
    let root = dir.path().join("rootfs");
    fs::create_dir(&root)?;
    for (i, (path, digest)) in plan.layers.iter().enumerate() {
        if let Some(d) = digest {
            check_digest(path, d)?;
        }
        let mut stream = layer::open_layer(path)?;
        layer::apply_layer(&root, &mut stream).with_context(|| {
            format!(
                "layer {} of {} ({})",
                i + 1,
                plan.layers.len(),
                path.display()
            )
        })?;
    }
    // The layout is no longer needed; keep only the root.
    fs::remove_dir_all(&layout).ok();
    Ok(UnpackedImage {
        dir,
        labels: plan.labels,
        layers: plan.layers.len(),
    })
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

fn skopeo_fetch(reference: &str, layout: &Path) -> anyhow::Result<()> {
    let src = skopeo_source(reference);
    let dest = format!("oci:{}:image", layout.display());
    let mut cmd = Command::new("skopeo");
    // skopeo 1.9 ignores CONTAINERS_REGISTRIES_CONF (buildah and podman read it): pass it on,
    // so a registry marked insecure there (a loopback registry) is reachable.
    if let Some(conf) = std::env::var_os("CONTAINERS_REGISTRIES_CONF").filter(|v| !v.is_empty()) {
        cmd.arg("--registries-conf").arg(conf);
    }
    let out = cmd
        // Local storage holds layers uncompressed: keep them so (no gzip round trip).
        .args([
            "copy",
            "--quiet",
            "--dest-oci-accept-uncompressed-layers",
            &src,
            &dest,
        ])
        .output()
        .map_err(|e| {
            anyhow!("cannot run skopeo ({e}): apt-get install skopeo (scripts/install-deps)")
        })?;
    if !out.status.success() {
        bail!(
            "skopeo copy {src} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Extract the outer archive (regular files and directories only, names checked).
fn extract_archive(path: &Path, dest: &Path) -> anyhow::Result<()> {
    let mut f = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    fs::create_dir(dest)?;
    crate::deb::tar::read_safe(&mut f, &mut |entry, content| {
        let rel = entry.path.trim_start_matches("./").trim_end_matches('/');
        let target = dest.join(rel);
        match &entry.kind {
            EntryKind::Dir => fs::create_dir_all(&target)?,
            EntryKind::File => {
                if let Some(parent) = target.parent() {
                    fs::create_dir_all(parent)?;
                }
                let mut out = fs::File::create(&target)?;
                std::io::copy(content, &mut out)?;
            }
            // docker-archive's legacy `<id>/layer.tar` links to the `<digest>.tar` that
            // manifest.json names: never followed, not needed.
            EntryKind::Symlink(_) => {}
            other => bail!(
                "{}: entry {} is a {other:?}; an image archive holds only files, directories and symlinks",
                path.display(),
                entry.path
            ),
        }
        Ok(())
    })
    .with_context(|| format!("reading the image archive {}", path.display()))
}

fn read_json(path: &Path) -> anyhow::Result<serde_json::Value> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))
}

/// `blobs/<algorithm>/<hex>` for a digest; only sha256/sha512 hex digests are accepted.
fn blob_path(layout: &Path, digest: &str) -> anyhow::Result<PathBuf> {
    let (alg, hex) = digest
        .split_once(':')
        .ok_or_else(|| anyhow!("malformed digest {digest:?}"))?;
    let len = match alg {
        "sha256" => 64,
        "sha512" => 128,
        _ => bail!("unsupported digest algorithm in {digest:?}"),
    };
    if hex.len() != len || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("malformed digest {digest:?}");
    }
    Ok(layout.join("blobs").join(alg).join(hex))
}

fn check_digest(path: &Path, digest: &str) -> anyhow::Result<()> {
    let Some(want) = digest.strip_prefix("sha256:") else {
        return Ok(()); // sha512 blobs: the name was validated; not re-hashed
    };
    let mut f = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    let got = hex::encode(h.finalize());
    if got != want {
        bail!(
            "{} does not match its digest sha256:{want} (got sha256:{got}): the image is corrupt",
            path.display()
        );
    }
    Ok(())
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

/// An OCI layout: index.json → (nested indexes) → the one manifest → config and layers.
fn oci_plan(layout: &Path) -> anyhow::Result<ImagePlan> {
    let mut index = read_json(&layout.join("index.json"))?;
    for _ in 0..4 {
        let manifests = index["manifests"]
            .as_array()
            .ok_or_else(|| anyhow!("index.json has no manifests"))?;
        if manifests.len() != 1 {
            bail!(
                "the OCI layout holds {} manifests; give an archive of exactly one image",
                manifests.len()
            );
        }
        let desc = &manifests[0];
        let digest = desc["digest"]
            .as_str()
            .ok_or_else(|| anyhow!("a manifest descriptor has no digest"))?;
        let path = blob_path(layout, digest)?;
        check_digest(&path, digest)?;
        let doc = read_json(&path)?;
        if doc["manifests"].is_array() {
            index = doc; // an image index: descend
            continue;
        }
        let config_digest = doc["config"]["digest"]
            .as_str()
            .ok_or_else(|| anyhow!("manifest {digest} has no config digest"))?;
        let config_path = blob_path(layout, config_digest)?;
        check_digest(&config_path, config_digest)?;
        let config = read_json(&config_path)?;
        let mut layers = Vec::new();
        for l in doc["layers"].as_array().into_iter().flatten() {
            let d = l["digest"]
                .as_str()
                .ok_or_else(|| anyhow!("a layer of manifest {digest} has no digest"))?;
            layers.push((blob_path(layout, d)?, Some(d.to_string())));
        }
        return Ok(ImagePlan {
            labels: labels_of(&config),
            layers,
        });
    }
    bail!("index.json nests image indexes too deeply")
}

/// A docker-archive: manifest.json names the config and the layer tars by path.
fn docker_plan(layout: &Path) -> anyhow::Result<ImagePlan> {
    let manifest = read_json(&layout.join("manifest.json"))?;
    let images = manifest
        .as_array()
        .ok_or_else(|| anyhow!("manifest.json is not a list"))?;
    if images.len() != 1 {
        bail!(
            "the docker-archive holds {} images; give an archive of exactly one image",
            images.len()
        );
    }
    let in_archive = |name: &str| -> anyhow::Result<PathBuf> {
        let parts = components(name.as_bytes()).map_err(|e| anyhow!("manifest.json: {e}"))?;
        Ok(parts.iter().fold(layout.to_path_buf(), |p, c| p.join(c)))
    };
    let config_name = images[0]["Config"]
        .as_str()
        .ok_or_else(|| anyhow!("manifest.json has no Config"))?;
    let config = read_json(&in_archive(config_name)?)?;
    let mut layers = Vec::new();
    for l in images[0]["Layers"].as_array().into_iter().flatten() {
        let name = l
            .as_str()
            .ok_or_else(|| anyhow!("manifest.json has a layer that is not a path"))?;
        layers.push((in_archive(name)?, None));
    }
    Ok(ImagePlan {
        labels: labels_of(&config),
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
