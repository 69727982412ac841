//! A temporary directory made to look like a Debian host with the stock ROCm 7.2.4 runtime
//! installed, so the steps of install and rollback run on a [`Root`] in unit tests (no chroot,
//! no root privileges). What is written is in the formats dpkg, apt and ld.so read: the dpkg
//! status database and `info/<pkg>.list`, the `/opt/rocm -> /etc/alternatives/rocm ->
//! /opt/rocm-7.2.4` chain with its `.info/version`, `/etc/apt`, `/etc/ld.so.conf(.d)`.
//! The acceptance tests (install_matrix, day2) run the same steps in real chroots.

use std::path::Path;

use super::ourdebs::DebFacts;
use crate::host::layout::StateLayout;
use crate::host::root::Root;
use crate::rocm::{self, Marker, MarkerLibrary, ReplacedPackage};

pub(crate) const PREFIX: &str = "/opt/rocm-7.2.4";
pub(crate) const HSA_STOCK: &str = "1.18.0.70204-93~24.04";
pub(crate) const HIP_STOCK: &str = "7.2.53211.70204-93~24.04";
/// What `rocm-pin package` appends to a stock version.
pub(crate) const PIN_SUFFIX: &str = "+pin1764720000.gb539bf7";
/// The stock library files and the soname links ldconfig makes to them.
pub(crate) const HSA_LIB: &str = "/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.70204";
pub(crate) const HIP_LIB: &str = "/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204";

/// The pair: (stock name, stock version, our package).
pub(crate) const PAIR: [(&str, &str, &str); 2] = [
    ("hsa-rocr", HSA_STOCK, "hsa-rocr-pinned"),
    ("hip-runtime-amd", HIP_STOCK, "hip-runtime-amd-pinned"),
];

pub(crate) struct FakeHost {
    dir: tempfile::TempDir,
    pub root: Root,
}

impl FakeHost {
    /// A host whose `/opt/rocm-7.2.4/.info/version` says `rocm_version`, with the stock pair
    /// (and `rocm-hip-runtime`, which depends on it with `=`) installed.
    pub(crate) fn new(rocm_version: &str) -> FakeHost {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let host = FakeHost { dir, root };
        for d in [
            "etc/apt/apt.conf.d",
            "etc/apt/preferences.d",
            "etc/apt/sources.list.d",
            "etc/ld.so.conf.d",
            "etc/alternatives",
            "var/lib/dpkg/info",
            "var/cache/apt/archives",
            "opt/rocm-7.2.4/lib",
        ] {
            std::fs::create_dir_all(host.dir.path().join(d)).unwrap();
        }
        host.write("/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
        host.write(
            "/etc/ld.so.conf.d/x86_64-linux-gnu.conf",
            "# Multiarch support\n/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n",
        );
        host.write(
            "/etc/apt/sources.list.d/debian.sources",
            "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n",
        );
        host.symlink("/opt/rocm-7.2.4", "/etc/alternatives/rocm");
        host.symlink("/etc/alternatives/rocm", "/opt/rocm");
        host.write(
            &format!("{PREFIX}/{}", rocm::VERSION_RELPATH),
            &format!("{rocm_version}\n"),
        );
        for (lib, link) in [
            (HSA_LIB, "/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1"),
            (HIP_LIB, "/opt/rocm-7.2.4/lib/libamdhip64.so.7"),
        ] {
            host.write(lib, "stock library bytes\n");
            host.symlink(Path::new(lib).file_name().unwrap().to_str().unwrap(), link);
        }
        host.list(
            "hsa-rocr",
            &[
                "/opt/rocm-7.2.4/lib",
                HSA_LIB,
                "/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1",
            ],
        );
        host.list(
            "hip-runtime-amd",
            &[
                "/opt/rocm-7.2.4/lib",
                HIP_LIB,
                "/opt/rocm-7.2.4/lib/libamdhip64.so.7",
            ],
        );
        host.set_status(&[
            stock("hsa-rocr", HSA_STOCK, "install ok installed"),
            stock("hip-runtime-amd", HIP_STOCK, "install ok installed"),
            dependant(),
        ]);
        host
    }

    pub(crate) fn write(&self, in_root: &str, text: &str) {
        let p = self.root.host_path(in_root);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub(crate) fn symlink(&self, target: &str, in_root: &str) {
        let p = self.root.host_path(in_root);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, p).unwrap();
    }

    pub(crate) fn exists(&self, in_root: impl AsRef<Path>) -> bool {
        self.root.host_path(in_root).exists()
    }

    /// dpkg's file list of `package` (`var/lib/dpkg/info/<package>.list`).
    pub(crate) fn list(&self, package: &str, paths: &[&str]) {
        let mut text = String::from("/.\n");
        for p in paths {
            text.push_str(p);
            text.push('\n');
        }
        self.write(&format!("/var/lib/dpkg/info/{package}.list"), &text);
    }

    /// Replace the status database with these paragraphs.
    pub(crate) fn set_status(&self, paragraphs: &[String]) {
        self.write("/var/lib/dpkg/status", &paragraphs.join("\n"));
    }

    /// Our pair installed as `rocm-pin install` leaves it (status `status`, stock gone), its
    /// pin conffiles, our library files and the marker listed by the HSA package.
    pub(crate) fn install_ours(&self, status: &str) {
        let mut paragraphs = vec![dependant()];
        for (stock_name, stock_version, package) in PAIR {
            paragraphs.push(ours(package, stock_name, stock_version, status));
            self.write(
                &StateLayout::pin_file(package).to_string_lossy(),
                &format!("Package: {stock_name}\nPin: version *\nPin-Priority: -1\n"),
            );
        }
        self.set_status(&paragraphs);
        let marker_path = format!("{PREFIX}/{}", rocm::MARKER_RELPATH);
        self.write(
            &marker_path,
            &serde_json::to_string_pretty(&marker()).unwrap(),
        );
        for lib in &marker().libraries {
            self.write(&lib.path, "patched library bytes\n");
        }
        self.list(
            "hsa-rocr-pinned",
            &[
                "/etc/apt/preferences.d/hsa-rocr-pinned",
                &marker().libraries[0].path,
                &marker_path,
            ],
        );
        self.list(
            "hip-runtime-amd-pinned",
            &[
                "/etc/apt/preferences.d/hip-runtime-amd-pinned",
                &marker().libraries[1].path,
            ],
        );
    }
}

/// A stock package's status paragraph, as dpkg writes it.
pub(crate) fn stock(name: &str, version: &str, status: &str) -> String {
    format!(
        "Package: {name}\nStatus: {status}\nPriority: optional\nSection: devel\nInstalled-Size: 3412\nMaintainer: ROCm Dev Support <rocm-dev.support@amd.com>\nArchitecture: amd64\nVersion: {version}\nDepends: libc6 (>= 2.34), libelf1, libnuma1\nDescription: AMD ROCm runtime\n ROCm {} runtime library.\n",
        rocm::TARGET_ROCM_VERSION
    )
}

/// The metapackage that depends on the stock pair with `=` (apt would remove it with them).
pub(crate) fn dependant() -> String {
    format!(
        "Package: rocm-hip-runtime\nStatus: install ok installed\nPriority: optional\nSection: devel\nInstalled-Size: 13\nMaintainer: ROCm Dev Support <rocm-dev.support@amd.com>\nArchitecture: amd64\nVersion: 7.2.4.70204-93~24.04\nDepends: hsa-rocr (= {HSA_STOCK}), hip-runtime-amd (= {HIP_STOCK})\nDescription: ROCm HIP runtime metapackage\n"
    )
}

/// Our replacement's status paragraph: Provides the exact stock version, the pin conffile.
pub(crate) fn ours(package: &str, stock_name: &str, stock_version: &str, status: &str) -> String {
    format!(
        "Package: {package}\nStatus: {status}\nProtected: yes\nPriority: optional\nSection: devel\nInstalled-Size: 3500\nMaintainer: rocm-pin <rocm-pin@localhost>\nArchitecture: amd64\nVersion: {stock_version}{PIN_SUFFIX}\nReplaces: {stock_name}\nProvides: {stock_name} (= {stock_version})\nConflicts: {stock_name}\nConffiles:\n /etc/apt/preferences.d/{package} 6f1ed002ab5595859014ebf0951522d9\nDescription: {stock_name}, patched\n Built from ROCm/rocm-systems {}.\n{}: {}\n",
        rocm::PIN_COMMIT,
        rocm::COMMIT_FIELD,
        rocm::PIN_COMMIT
    )
}

/// The facts `read_debs` reads from our two .debs (named as `rocm-pin package` names them).
pub(crate) fn facts(deb_dir: &Path) -> Vec<DebFacts> {
    PAIR.iter()
        .map(|(stock_name, stock_version, package)| {
            let version = format!("{stock_version}{PIN_SUFFIX}");
            DebFacts {
                path: deb_dir.join(format!("{package}_{version}_amd64.deb")),
                package: package.to_string(),
                version,
                architecture: "amd64".into(),
                commit: rocm::PIN_COMMIT.into(),
                protected: true,
                stock_name: stock_name.to_string(),
                stock_version: stock_version.to_string(),
                family: "runtime",
            }
        })
        .collect()
}

/// The provenance marker our HSA package ships.
pub(crate) fn marker() -> Marker {
    Marker {
        commit: rocm::PIN_COMMIT.into(),
        commit_time: 1_764_720_000,
        suffix: rocm::DEFAULT_SUFFIX.into(),
        prefix: PREFIX.into(),
        replaced: PAIR
            .iter()
            .map(|(stock_name, stock_version, package)| ReplacedPackage {
                stock_name: stock_name.to_string(),
                stock_version: stock_version.to_string(),
                architecture: "amd64".into(),
                package: package.to_string(),
                version: format!("{stock_version}{PIN_SUFFIX}"),
            })
            .collect(),
        libraries: vec![
            MarkerLibrary {
                path: "/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.0-b539bf7".into(),
                soname: "libhsa-runtime64.so.1".into(),
                sha256: "0".repeat(64),
                aliases: vec![HSA_LIB.into()],
                package: "hsa-rocr-pinned".into(),
            },
            MarkerLibrary {
                path: "/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.53211-b539bf7".into(),
                soname: "libamdhip64.so.7".into(),
                sha256: "0".repeat(64),
                aliases: vec![HIP_LIB.into()],
                package: "hip-runtime-amd-pinned".into(),
            },
        ],
        files: Default::default(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        patches: Vec::new(),
        backport_check_skipped: false,
        missing_symbols: Default::default(),
        source: None,
    }
}

/// Our two replacement .debs, built into `out` with the crate's own .deb writer (what
/// `rocm-pin package` writes, cut down to what install reads): the control fields, the pin
/// conffile, and the marker in the HSA package.
pub(crate) fn build_debs(out: &Path) -> Vec<std::path::PathBuf> {
    let m = marker();
    facts(out)
        .iter()
        .map(|f| {
            let tree = tempfile::tempdir().unwrap();
            let write = |rel: &str, text: &str| {
                let p = tree.path().join(rel.trim_start_matches('/'));
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            };
            let pin = StateLayout::pin_file(&f.package);
            write(
                &pin.to_string_lossy(),
                &format!("Package: {}\nPin: version *\nPin-Priority: -1\n", f.stock_name),
            );
            write("DEBIAN/conffiles", &format!("{}\n", pin.display()));
            if f.package == m.libraries[0].package {
                write(
                    &format!("{PREFIX}/{}", rocm::MARKER_RELPATH),
                    &serde_json::to_string_pretty(&m).unwrap(),
                );
            }
            write(
                "DEBIAN/control",
                &format!(
                    "Package: {}\nVersion: {}\nArchitecture: amd64\nMaintainer: rocm-pin <rocm-pin@localhost>\nProtected: yes\nProvides: {} (= {})\nConflicts: {}\nReplaces: {}\nSection: devel\nPriority: optional\nDescription: {}, patched\n Built from ROCm/rocm-systems {}.\n{}: {}\n",
                    f.package,
                    f.version,
                    f.stock_name,
                    f.stock_version,
                    f.stock_name,
                    f.stock_name,
                    f.stock_name,
                    f.commit,
                    rocm::COMMIT_FIELD,
                    f.commit
                ),
            );
            let opts = crate::deb::BuildOptions {
                compression: crate::deb::Compression::Gzip,
                threads: Some(1),
                source_date_epoch: Some(1_764_720_000),
                ..Default::default()
            };
            crate::deb::build_from_dir(tree.path(), &f.path, &opts, &crate::progress::Silent)
                .unwrap();
            f.path.clone()
        })
        .collect()
}

/// A stock rocm-sdk-core 10.0.0 installed in the venv `site-packages` directory `site` (its
/// dist-info only: METADATA, WHEEL, RECORD), for the wheel checks' unit tests.
pub(crate) fn stock_core_dist_info(site: &Path) {
    let di = site.join("rocm_sdk_core-10.0.0.dist-info");
    std::fs::create_dir_all(&di).unwrap();
    std::fs::write(
        di.join("METADATA"),
        "Name: rocm-sdk-core\nVersion: 10.0.0\n",
    )
    .unwrap();
    std::fs::write(di.join("WHEEL"), "Wheel-Version: 1.0\nTag: py3-none-any\n").unwrap();
    std::fs::write(
        di.join("RECORD"),
        "rocm_sdk_core-10.0.0.dist-info/RECORD,,\n",
    )
    .unwrap();
}
