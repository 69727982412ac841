//! What a read under a root is bounded by: the symlinks followed in one lookup and, per kind of
//! file, the bytes read (over the cap is an error, never a short read).

/// Linux's own limit on symlinks followed in one lookup (`MAXSYMLINKS`).
pub(super) const MAX_HOPS: usize = 40;

/// What a file read under a root is: each kind has a size cap no real host reaches (Debian's
/// status file on a big host is 10-30 MB), so a hostile root cannot make a read unbounded.
///
/// | kind               | cap     | file                                                |
/// |--------------------|---------|-----------------------------------------------------|
/// | `DpkgStatus`       | 128 MiB | `var/lib/dpkg/status`, `available`                  |
/// | `DpkgList`         | 128 MiB | `var/lib/dpkg/info/<pkg>.list`                      |
/// | `DpkgMd5sums`      | 128 MiB | `var/lib/dpkg/info/<pkg>.md5sums`                   |
/// | `DpkgInfo`         | 16 MiB  | other `info/` files: conffiles, maintainer scripts  |
/// | `Marker`           | 16 MiB  | the provenance marker (JSON)                        |
/// | `StateRecord`      | 1 MiB   | rocm-pin's records: skip record, hold, adopt state  |
/// | `LdCache`          | 128 MiB | `etc/ld.so.cache`                                   |
/// | `Config`           | 4 MiB   | apt preferences, apt.conf.d, dpkg.cfg.d, ld.so.conf, loader entries |
/// | `VersionFile`      | 64 KiB  | `<prefix>/.info/version` and similar one-liners     |
/// | `PackageIndex`     | 128 MiB | a local apt repository's `Packages`                 |
/// | `AptCache`         | 1 GiB   | `var/cache/apt/{,src}pkgcache.bin`, linked for apt-cache |
/// | `PackagedFile`     | 64 GiB  | a packaged file that is hashed as a stream          |
/// | `ProcMaps`         | 64 MiB  | `/proc/<pid>/maps` (status's stale-mapping scan)    |
/// | `ProcComm`         | 64 B    | `/proc/<pid>/comm`                                  |
///
/// `/proc/<pid>/maps` has one line per mapping: at most `vm.max_map_count` of them (65 530 by
/// default; 262 144 where databases raise it), each the 73 fixed columns plus a path, ~100
/// bytes for a library (26 MB at 262 144); long paths on every line of a process at the
/// raised count are the only way past 64 MiB. `comm` is the kernel's `TASK_COMM_LEN` (16
/// bytes with its NUL, so 15 + a newline); 64 leaves room for a kernel that widens it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    DpkgStatus,
    DpkgList,
    DpkgMd5sums,
    DpkgInfo,
    Marker,
    StateRecord,
    LdCache,
    Config,
    VersionFile,
    PackageIndex,
    AptCache,
    PackagedFile,
    ProcMaps,
    ProcComm,
    /// A file of a Python `.dist-info` directory (METADATA, RECORD, WHEEL, …).
    DistInfo,
}

const MIB: u64 = 1 << 20;

impl FileKind {
    /// The most bytes a file of this kind may have.
    pub fn cap(self) -> u64 {
        match self {
            // About 900 bytes a package on a real host: 128 MiB is ~146 000 packages, twice
            // Debian's whole archive for one architecture installed at once. The status is
            // parsed whole, at ~9 bytes of memory per byte: 512 MiB allowed a hostile root
            // minutes of CPU and gigabytes of memory (`hostile_root` measures the cap).
            FileKind::DpkgStatus => 128 * MIB,
            FileKind::DpkgList
            | FileKind::DpkgMd5sums
            | FileKind::LdCache
            | FileKind::PackageIndex => 128 * MIB,
            FileKind::DpkgInfo | FileKind::Marker => 16 * MIB,
            FileKind::StateRecord => MIB,
            FileKind::Config => 4 * MIB,
            FileKind::VersionFile => 64 * 1024,
            FileKind::AptCache => 1024 * MIB,
            FileKind::PackagedFile => 64 * 1024 * MIB,
            FileKind::ProcMaps => 64 * MIB,
            FileKind::ProcComm => 64,
            // RECORD of the largest ROCm wheel (rocm-sdk-devel, extended on use) is a few MiB.
            FileKind::DistInfo => 64 * MIB,
        }
    }

    /// What the file is, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::DpkgStatus => "dpkg status file",
            FileKind::DpkgList => "dpkg file list",
            FileKind::DpkgMd5sums => "dpkg md5sums file",
            FileKind::DpkgInfo => "dpkg info file",
            FileKind::Marker => "provenance marker",
            FileKind::StateRecord => "rocm-pin state record",
            FileKind::LdCache => "ld.so cache",
            FileKind::Config => "configuration file",
            FileKind::VersionFile => "version file",
            FileKind::PackageIndex => "Packages index",
            FileKind::AptCache => "apt package cache",
            FileKind::PackagedFile => "packaged file",
            FileKind::ProcMaps => "process memory map (/proc/<pid>/maps)",
            FileKind::ProcComm => "process name (/proc/<pid>/comm)",
            FileKind::DistInfo => "Python .dist-info file",
        }
    }
}
