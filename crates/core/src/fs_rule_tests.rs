//! The reading rule, checked (docs/security.md): nothing under a `--root`, an image or an
//! existing repository is opened with a host lookup. Such paths go through the in-root
//! resolver (`host/root.rs`), which opens every component beneath the root and refuses links
//! out of it, devices, FIFOs and files over their kind's cap.
//!
//! This test reads the library's non-test sources and finds every `std::fs` call (and
//! `std::os::unix::fs::symlink`, `walkdir`), however it is spelt: `std::fs::read(…)`,
//! `use std::fs;` then `fs::read(…)`, `use std::fs::{self as f, File};` then `File::open(…)`,
//! calls split over lines. Every call outside the resolver must be in [`AUDITED`]: the file,
//! the function and why the path it takes is not one a root, an image or a repository chose.
//! A new call fails the test until it is routed through the resolver or audited here, and an
//! entry that no longer names a call fails too, so the list stays the audit of today's code.
//!
//! Not covered: `Path` methods that look paths up (`exists`, `is_dir`, `metadata`, …) and
//! external programs given a path; review catches those.

use std::collections::BTreeMap;
use std::path::Path;

/// The resolver: the one module that opens paths under a root, by design.
const RESOLVER: &str = "host/root.rs";

/// Why a call site's path is not root-derived: the kinds of path the audit found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Category {
    /// A directory or file this run created itself (a tempdir, staging, a build tree, a
    /// package or repository being written fresh) or its contents.
    OursMadeThisRun,
    /// A path the user named on the command line as an input or output of their own
    /// (`deb build TREE OUT`, `deb inspect FILE`, `package --out`, a patch file), not a root.
    UserNamedFile,
    /// The live system's own files, when the root is `/` and not a `--root`/image (the host's
    /// apt and dpkg configuration, `/proc` of the running system, our own state directory).
    LiveHost,
    /// rocm-pin's own build cache and toolchain (ROCm source checkouts, compilers), which the
    /// user set up; never a target root.
    BuildCache,
    /// An image's unpacking into the temporary root this run made: the layer unpacker creates
    /// each entry there with in-root checks of its own (`image/layer.rs`).
    ImageUnpack,
    /// A path host::root resolved inside the root (every link on the way followed inside it,
    /// none left in it): only `lstat`ed, `readlink`ed or linked to, never opened here.
    ResolvedByRoot,
    /// A helper that opens the path its caller gives (hashing, ELF reading, a package's
    /// payload); its callers pass paths of the other categories (named in `why`).
    Helper,
    /// Being changed on another branch so it goes through the resolver (issue 31); the
    /// coordinator removes these entries after the merge, and the test names any left over.
    Temporary,
}

/// One audited function: every fs call in it takes a path of `category`.
struct Audited {
    file: &'static str,
    function: &'static str,
    category: Category,
    why: &'static str,
}

const fn audited(
    file: &'static str,
    function: &'static str,
    category: Category,
    why: &'static str,
) -> Audited {
    Audited {
        file,
        function,
        category,
        why,
    }
}

use Category::*;

/// Every fs call outside the resolver, by file and function, with why its path is safe.
const AUDITED: &[Audited] = &[
    audited(
        "ops/wheels/package.rs",
        "read_staged",
        UserNamedFile,
        "`package --wheels --staging DIR`: a library of the staging the user built (as plan/staging.rs reads it)",
    ),
    audited(
        "ops/wheels/package.rs",
        "write_wheel",
        UserNamedFile,
        "`package --out DIR` (the user's output directory) or the venv's share/rocm-pin/stock this run made (install --venv): a new wheel, written through a temporary name",
    ),
    audited(
        "ops/wheels/install.rs",
        "read_our_wheel",
        UserNamedFile,
        "`install --venv DIR WHEEL`: the wheel file the user names",
    ),
    audited(
        "ops/wheels/install.rs",
        "install_venv",
        UserNamedFile,
        "`install --venv DIR`: copies the wheel the user named into DIR/share/rocm-pin/wheelhouse, a directory make_state_dirs made and checked is no symlink (the venv is the target the user names, as its own pip writes into it)",
    ),
    audited(
        "ops/wheels/install.rs",
        "make_state_dirs",
        UserNamedFile,
        "`install --venv DIR`: creates DIR/share, DIR/share/rocm-pin and its wheelhouse and stock one level at a time, refusing any that is not a real directory (a symlink)",
    ),
    audited(
        "ops/wheels/install.rs",
        "write_pin",
        UserNamedFile,
        "`install --venv DIR`: DIR/pip.conf, DIR/uv.toml, DIR/share/rocm-pin/constraints.txt, each written as a new file (create_new) renamed over the name, so a symlink there is replaced, never followed; ensure_ours_or_absent read the old one through host::root",
    ),
    audited(
        "ops/wheels/install.rs",
        "relink_devel",
        ResolvedByRoot,
        "the devel tree's library and the core's file, both paths host::root resolved inside the venv (host_path_of_entry): hard-linked to and renamed over, never opened",
    ),
    audited(
        "ops/wheels/install.rs",
        "rollback_venv",
        UserNamedFile,
        "`rollback --venv DIR`: removes the pin files rocm-pin wrote in DIR (pip.conf and uv.toml checked ours through host::root first)",
    ),
    audited(
        "deb/archive.rs",
        "check_tree_exists",
        UserNamedFile,
        "`deb build TREE`: whether the tree the user names exists and is a directory",
    ),
    audited(
        "image/layer.rs",
        "opaque",
        ImageUnpack,
        "an opaque whiteout lists its directory inside the temporary root this run unpacks into",
    ),
    audited(
        "image/links.rs",
        "escapes",
        ImageUnpack,
        "a symlink chain resolved step by step inside the temporary root this run unpacks into (lstat, readlink: never followed by the host)",
    ),
    audited(
        "image/links.rs",
        "check_tree",
        ImageUnpack,
        "the post-unpack link check walks the temporary root this run unpacked (links not followed)",
    ),
    audited(
        "host/apt.rs",
        "copy_machine_id",
        OursMadeThisRun,
        "the machine id, read inside the root, written into the private apt view this run made",
    ),
    audited(
        "interrupt.rs",
        "end_registered",
        OursMadeThisRun,
        "removes the temporary paths this run registered (its tempdirs, the unpacked image) on a signal",
    ),
    audited(
        "ops/ourdebs.rs",
        "keep",
        LiveHost,
        "install (live system only): our .debs the user gave, copied into our own state directory /var/lib/rocm-pin/ours",
    ),
    audited(
        "ops/ourdebs.rs",
        "forget",
        LiveHost,
        "rollback/install --no-rollback (live system only): our own state directory /var/lib/rocm-pin/ours",
    ),
    audited(
        "ops/repo/index.rs",
        "existing_index",
        UserNamedFile,
        "`repo --out DIR`: DIR itself is the caller's own path (followed as given); everything inside it goes through ops/repo/dir.rs",
    ),
    audited(
        "ops/repo/dir.rs",
        "open",
        UserNamedFile,
        "`repo --out DIR`: opens DIR itself, the caller's own path; every entry below it is opened relative to it without following links",
    ),
    audited(
        "deb/archive.rs",
        "assemble_deb",
        UserNamedFile,
        "`deb build`/`package` output: the .deb being written (its mode, its size)",
    ),
    audited(
        "deb/archive.rs",
        "build_from_dir",
        UserNamedFile,
        "`deb build TREE`: the tree the user gives (or staging this run made), walked without following links",
    ),
    audited(
        "deb/archive.rs",
        "read_control_dir",
        UserNamedFile,
        "the DEBIAN/ directory of the tree given to `deb build` (or staging this run made)",
    ),
    audited(
        "deb/archive.rs",
        "scan_payload",
        UserNamedFile,
        "the payload tree given to `deb build` (or staging this run made)",
    ),
    audited(
        "deb/archive.rs",
        "walk_dir",
        UserNamedFile,
        "the payload tree given to `deb build` (or staging this run made), lstat and readlink only",
    ),
    audited(
        "deb/content.rs",
        "open",
        Helper,
        "a payload file of a package being built: from a tree the user gave, staging this run made, or a stock file of `package --stock-root` whose directory host::root resolved and whose entry was lstat'ed as a regular file (plan/stock.rs)",
    ),
    audited(
        "deb/content.rs",
        "size",
        Helper,
        "as `open` in this file",
    ),
    audited(
        "deb/output.rs",
        "package_output_path",
        UserNamedFile,
        "the output path the user named (`deb build … OUT`)",
    ),
    audited(
        "deb/reader.rs",
        "ensure_parent_dirs",
        OursMadeThisRun,
        "extraction into a directory this run made, each parent checked to be a real directory",
    ),
    audited(
        "deb/reader.rs",
        "extract_data",
        OursMadeThisRun,
        "extraction into a directory this run made, each parent checked to be a real directory (no link followed)",
    ),
    audited(
        "deb/reader.rs",
        "open",
        UserNamedFile,
        "the .deb path the user named (`deb inspect FILE`, `install DEBS`)",
    ),
    audited(
        "digest.rs",
        "file_hex",
        Helper,
        "hashes the file its caller names: files this run made or the user named (callers audited here)",
    ),
    audited(
        "elf.rs",
        "read_elf",
        Helper,
        "reads the ELF file its caller names: build staging, our extracted packages, stock files whose entry host::root resolved (plan/families.rs)",
    ),
    audited(
        "host/apt.rs",
        "link_apt_cache",
        ResolvedByRoot,
        "as link_in_view: lstat of a resolved path, a link in our view",
    ),
    audited(
        "host/apt.rs",
        "link_in_view",
        ResolvedByRoot,
        "lstat of a path host::root resolved inside the root (no link left in it), then a link to it in our view; never opened here",
    ),
    audited(
        "host/apt.rs",
        "of",
        OursMadeThisRun,
        "the private apt view: a tempdir this run made",
    ),
    audited(
        "host/hold.rs",
        "remove",
        LiveHost,
        "as write: `install`/`rollback`, live system only",
    ),
    audited(
        "host/hold.rs",
        "write",
        LiveHost,
        "the release hold in /etc/apt/preferences.d: written by `install`, which runs on the live system only",
    ),
    audited(
        "host/loader.rs",
        "read_cache",
        OursMadeThisRun,
        "a tempfile copy of the root's ld.so.cache (read through host::root) for `ldconfig -p -C`",
    ),
    audited(
        "host/loader.rs",
        "write_loader_entry",
        LiveHost,
        "/etc/ld.so.conf.d entry written by `install`, live system only",
    ),
    audited(
        "host/repack.rs",
        "repack",
        LiveHost,
        "`install` keeping the stock packages for rollback, live system only (its files lstat'ed via host_path_of_entry); writes go to a tempdir this run made",
    ),
    audited(
        "image/layer.rs",
        "apply",
        ImageUnpack,
        "layer entries created in the temporary image root this run made, every parent checked",
    ),
    audited(
        "image/layer.rs",
        "existing_dir",
        ImageUnpack,
        "lstat inside the temporary image root this run made",
    ),
    audited(
        "image/layer.rs",
        "existing_file",
        ImageUnpack,
        "lstat inside the temporary image root this run made",
    ),
    audited(
        "image/layer.rs",
        "make_parents",
        ImageUnpack,
        "directories created inside the temporary image root this run made",
    ),
    audited(
        "image/layer.rs",
        "open_layer",
        OursMadeThisRun,
        "a layer blob inside the archive this run extracted into its own temporary directory",
    ),
    audited(
        "image/layer.rs",
        "remove_any",
        ImageUnpack,
        "whiteouts: removal inside the temporary image root this run made (lstat first, no link followed)",
    ),
    audited(
        "image/limits.rs",
        "install",
        OursMadeThisRun,
        "the signal handler removing the temporary image root this run made",
    ),
    audited(
        "image/mod.rs",
        "apply_blob",
        OursMadeThisRun,
        "a layer blob in the directory this run extracted the archive into",
    ),
    audited(
        "image/mod.rs",
        "check_size",
        OursMadeThisRun,
        "a blob in the directory this run extracted the archive into",
    ),
    audited(
        "image/mod.rs",
        "extract_archive",
        UserNamedFile,
        "the archive the user named (`--image-archive`), extracted into a directory this run made",
    ),
    audited(
        "image/mod.rs",
        "read_json",
        OursMadeThisRun,
        "index/manifest JSON in the directory this run extracted the archive into (size-capped)",
    ),
    audited(
        "image/mod.rs",
        "skopeo_fetch",
        OursMadeThisRun,
        "the archive skopeo writes into a temporary directory this run made",
    ),
    audited(
        "image/mod.rs",
        "unpack_within",
        OursMadeThisRun,
        "the temporary image root this run makes and removes",
    ),
    audited(
        "ops/adopt.rs",
        "adopt",
        LiveHost,
        "`adopt` runs on the live system only (install::live_system_only); its state, staging and lock are ours",
    ),
    audited(
        "ops/adopt.rs",
        "adopt_locked",
        LiveHost,
        "`adopt` runs on the live system only (install::live_system_only); its state, staging and lock are ours",
    ),
    audited(
        "ops/adopt.rs",
        "find_stock_debs",
        LiveHost,
        "`adopt` runs on the live system only (install::live_system_only); its state, staging and lock are ours",
    ),
    audited(
        "ops/adopt.rs",
        "finish",
        LiveHost,
        "`adopt` runs on the live system only (install::live_system_only); its state, staging and lock are ours",
    ),
    audited(
        "ops/adopt.rs",
        "lock_and_clean",
        LiveHost,
        "`adopt` runs on the live system only (install::live_system_only); its state, staging and lock are ours",
    ),
    audited(
        "ops/adopt.rs",
        "make_staging",
        LiveHost,
        "`adopt` runs on the live system only (install::live_system_only); its state, staging and lock are ours",
    ),
    audited(
        "ops/adopt.rs",
        "take_over_markers",
        LiveHost,
        "`adopt` runs on the live system only (install::live_system_only); its state, staging and lock are ours",
    ),
    audited(
        "ops/adopt.rs",
        "write_state",
        LiveHost,
        "`adopt` runs on the live system only (install::live_system_only); its state, staging and lock are ours",
    ),
    audited(
        "ops/build/cache.rs",
        "lookup",
        BuildCache,
        "`build`: the build cache, checkout, staging and logs this tool made",
    ),
    audited(
        "ops/build/cache.rs",
        "store",
        BuildCache,
        "`build`: the build cache, checkout, staging and logs this tool made",
    ),
    audited(
        "ops/build/staging_dir.rs",
        "claim_staging",
        BuildCache,
        "`build`: the build cache, checkout, staging and logs this tool made",
    ),
    audited(
        "ops/build/staging_dir.rs",
        "clean_staging",
        BuildCache,
        "`build`: the build cache, checkout, staging and logs this tool made",
    ),
    audited(
        "ops/build/mod.rs",
        "fetch",
        BuildCache,
        "`build`: the build cache, checkout, staging and logs this tool made",
    ),
    audited(
        "ops/build/staging_dir.rs",
        "remove_any",
        BuildCache,
        "`build`: the build cache, checkout, staging and logs this tool made",
    ),
    audited(
        "ops/build/staging_dir.rs",
        "remove_except",
        BuildCache,
        "`build`: the build cache, checkout, staging and logs this tool made",
    ),
    audited(
        "ops/build/mod.rs",
        "write_manifest",
        BuildCache,
        "`build`: the build cache, checkout, staging and logs this tool made",
    ),
    audited(
        "ops/build/patches.rs",
        "load_series",
        UserNamedFile,
        "the patch series directory the user names",
    ),
    audited(
        "ops/build/stage.rs",
        "checkout_and_patch",
        BuildCache,
        "`build`: the build cache, checkout, staging and logs this tool made",
    ),
    audited(
        "ops/build/stage.rs",
        "mark_rocr_stage",
        BuildCache,
        "`build`: the build cache, checkout, staging and logs this tool made",
    ),
    audited(
        "ops/build/stage.rs",
        "rocr_stage_valid",
        BuildCache,
        "`build`: the build cache, checkout, staging and logs this tool made",
    ),
    audited(
        "ops/build/steps.rs",
        "log_tail",
        BuildCache,
        "`build`: the build cache, checkout, staging and logs this tool made",
    ),
    audited(
        "ops/build/steps.rs",
        "run_step",
        BuildCache,
        "`build`: the build cache, checkout, staging and logs this tool made",
    ),
    audited(
        "ops/build/validate.rs",
        "read_libraries",
        BuildCache,
        "`build`: the build cache, checkout, staging and logs this tool made",
    ),
    audited(
        "ops/build/validate.rs",
        "resolve_link",
        BuildCache,
        "`build`: the build cache, checkout, staging and logs this tool made",
    ),
    audited(
        "ops/build/validate.rs",
        "scan_library_entries",
        BuildCache,
        "`build`: the build cache, checkout, staging and logs this tool made",
    ),
    audited(
        "ops/gate.rs",
        "clear_skip_record",
        LiveHost,
        "the skip record: written by `install`, live system only (verify --root reads it through host::root)",
    ),
    audited(
        "ops/gate.rs",
        "write_skip_record",
        LiveHost,
        "the skip record: written by `install`, live system only (verify --root reads it through host::root)",
    ),
    audited(
        "ops/guard.rs",
        "arm",
        LiveHost,
        "the guard hooks and its private binary copy: `guard`/`install --guard` run on the live system only",
    ),
    audited(
        "ops/guard.rs",
        "copy_atomically",
        LiveHost,
        "the guard hooks and its private binary copy: `guard`/`install --guard` run on the live system only",
    ),
    audited(
        "ops/guard.rs",
        "remove_if_present",
        LiveHost,
        "the guard hooks and its private binary copy: `guard`/`install --guard` run on the live system only",
    ),
    audited(
        "ops/guard.rs",
        "remove_private_copy",
        LiveHost,
        "the guard hooks and its private binary copy: `guard`/`install --guard` run on the live system only",
    ),
    audited(
        "ops/guard.rs",
        "stable_binary",
        LiveHost,
        "the guard hooks and its private binary copy: `guard`/`install --guard` run on the live system only",
    ),
    audited(
        "ops/guard.rs",
        "write_atomically",
        LiveHost,
        "the guard hooks and its private binary copy: `guard`/`install --guard` run on the live system only",
    ),
    audited(
        "ops/install.rs",
        "keep_stock",
        LiveHost,
        "`install` runs on the live system only; what it keeps for rollback is in our state directory",
    ),
    audited(
        "ops/install.rs",
        "keep_stock_for_rollback",
        LiveHost,
        "`install` runs on the live system only; what it keeps for rollback is in our state directory",
    ),
    audited(
        "ops/install.rs",
        "record_stock_not_kept",
        LiveHost,
        "`install` runs on the live system only; what it keeps for rollback is in our state directory",
    ),
    audited(
        "ops/install.rs",
        "run_apt",
        LiveHost,
        "`install` runs on the live system only; what it keeps for rollback is in our state directory",
    ),
    audited(
        "ops/localrepo.rs",
        "publish",
        LiveHost,
        "the local repository `install --local-repo` publishes: live system only, our state directory",
    ),
    audited(
        "ops/localrepo.rs",
        "remove",
        LiveHost,
        "the local repository `install --local-repo` publishes: live system only, our state directory",
    ),
    audited(
        "ops/ourdebs.rs",
        "read_debs",
        UserNamedFile,
        "the .deb paths the user named",
    ),
    audited(
        "ops/family_stock.rs",
        "staging_from_debs",
        OursMadeThisRun,
        "`package --from-deb`: the staging it makes in the package step's own work directory",
    ),
    audited(
        "ops/family_stock.rs",
        "collect_family_files",
        OursMadeThisRun,
        "`package --from-deb`: copies a file stock::from_deb extracted into this run's work directory into the staging it makes there",
    ),
    audited(
        "ops/package.rs",
        "deliver_debs",
        UserNamedFile,
        "`package`: its work directory beside --out and the --out directory the user names",
    ),
    audited(
        "ops/package.rs",
        "load_stock",
        UserNamedFile,
        "`package`: its work directory beside --out and the --out directory the user names",
    ),
    audited(
        "ops/package.rs",
        "package",
        UserNamedFile,
        "`package`: its work directory beside --out and the --out directory the user names",
    ),
    audited(
        "ops/package.rs",
        "package_content",
        UserNamedFile,
        "`package`: its work directory beside --out and the --out directory the user names",
    ),
    audited(
        "ops/package.rs",
        "work_dir_beside",
        UserNamedFile,
        "`package`: its work directory beside --out and the --out directory the user names",
    ),
    audited(
        "ops/plan/staging.rs",
        "list_dir_sorted",
        UserNamedFile,
        "`package --staging DIR`: the staging tree the user names (made by `build`)",
    ),
    audited(
        "ops/plan/staging.rs",
        "read_head",
        UserNamedFile,
        "`package --staging DIR`: the staging tree the user names (made by `build`)",
    ),
    audited(
        "ops/plan/staging.rs",
        "read_lib_entry",
        UserNamedFile,
        "`package --staging DIR`: the staging tree the user names (made by `build`)",
    ),
    audited(
        "ops/plan/staging.rs",
        "read_manifest",
        UserNamedFile,
        "`package --staging DIR`: the staging tree the user names (made by `build`)",
    ),
    audited(
        "ops/plan/staging.rs",
        "read_staged_link",
        UserNamedFile,
        "`package --staging DIR`: the staging tree the user names (made by `build`)",
    ),
    audited(
        "ops/plan/stock.rs",
        "from_dpkg_db_allowing",
        ResolvedByRoot,
        "`package --stock-root`: readlink of an entry whose directory host::root resolved inside the root (the link itself, not followed)",
    ),
    audited(
        "ops/repo.rs",
        "copy_atomic",
        UserNamedFile,
        "`repo ADD.deb`: the .deb the user gives, copied into the repository through RepoDir's no-follow descriptors",
    ),
    audited(
        "ops/repo.rs",
        "hash_file",
        UserNamedFile,
        "`repo ADD.deb`: the .deb the user gives, hashed once",
    ),
    audited(
        "ops/repo/keygen.rs",
        "keygen",
        UserNamedFile,
        "the signing key file the user names",
    ),
    audited(
        "ops/repo/signing.rs",
        "load_secret_key",
        UserNamedFile,
        "the signing key file the user names",
    ),
    audited(
        "ops/repo.rs",
        "publish",
        UserNamedFile,
        "`repo --out DIR`: DIR itself is the caller's own path (followed as given); everything inside it goes through ops/repo/dir.rs",
    ),
    audited(
        "process.rs",
        "self_path",
        LiveHost,
        "/proc/self/exe: this process",
    ),
    audited(
        "rocm/real_tree.rs",
        "check_comgr",
        BuildCache,
        "`build`: the rocm-systems checkout and the build host's ROCm/comgr, with scratch files of ours",
    ),
    audited(
        "rocm/real_tree.rs",
        "check_offload_targets",
        BuildCache,
        "`build`: the rocm-systems checkout and the build host's ROCm/comgr, with scratch files of ours",
    ),
    audited(
        "rocm/real_tree.rs",
        "comgr_version",
        BuildCache,
        "`build`: the rocm-systems checkout and the build host's ROCm/comgr, with scratch files of ours",
    ),
    audited(
        "rocm/real_tree.rs",
        "evaluate_version_file",
        BuildCache,
        "`build`: the rocm-systems checkout and the build host's ROCm/comgr, with scratch files of ours",
    ),
    audited(
        "rocm/recipe.rs",
        "rocm_version",
        BuildCache,
        "`build`: the ROCm release of the build host's ROCm install (--rocm)",
    ),
    audited(
        "toolchain/prereq.rs",
        "find_program",
        LiveHost,
        "a program on the live system's PATH",
    ),
];

/// One fs call found in the sources.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Site {
    file: String,
    function: String,
    line: usize,
    /// The call as written, e.g. `fs::read_to_string`.
    call: String,
}

/// The `std::fs` functions and constructors that look a path up on the host.
const FS_FUNCTIONS: &[&str] = &[
    "read",
    "read_to_string",
    "write",
    "read_dir",
    "metadata",
    "symlink_metadata",
    "read_link",
    "canonicalize",
    "create_dir",
    "create_dir_all",
    "remove_file",
    "remove_dir",
    "remove_dir_all",
    "rename",
    "copy",
    "hard_link",
    "soft_link",
    "set_permissions",
    "exists",
];
/// `Type::function` pairs of `std::fs` that open or make a path (or start to: an
/// `OpenOptions::new()` ends in `.open(path)`).
const FS_CONSTRUCTORS: &[(&str, &str)] = &[
    ("File", "open"),
    ("File", "create"),
    ("File", "create_new"),
    ("File", "options"),
    ("OpenOptions", "new"),
    ("DirBuilder", "new"),
];

/// The code with comments, string and char literals blanked (newlines kept, so line numbers
/// stay right): a `fs::read` in a doc comment or a message is not a call.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&chars, i) {
            // r"…", r#"…"#, br#"…"#: up to the quote followed by as many #.
            let open = chars[i..].iter().position(|&c| c == '"').unwrap() + i;
            for &c in &chars[i..=open] {
                blank(&mut out, c);
            }
            i = open + 1;
            while i < chars.len() {
                let closes =
                    chars[i] == '"' && (0..hashes).all(|k| chars.get(i + 1 + k) == Some(&'#'));
                if closes {
                    out.extend(std::iter::repeat_n(' ', hashes + 1));
                    i += hashes + 1;
                    break;
                }
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A char literal ('a', '\n', '\u{1b}') or a lifetime ('a): only literals blanked.
            let end = if next == Some('\\') {
                chars[i + 2..]
                    .iter()
                    .position(|&c| c == '\'')
                    .map(|p| i + 2 + p)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.extend(std::iter::repeat_n(' ', end + 1 - i));
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The number of `#` of a raw string starting at `i` (`r"`, `r#"`, `br##"`), None otherwise.
fn raw_string_start(chars: &[char], i: usize) -> Option<usize> {
    if i > 0 && is_ident_char(chars[i - 1]) {
        return None;
    }
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|&&c| c == '#').count();
    (chars.get(j + hashes) == Some(&'"')).then_some(hashes)
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// What a file calls `std::fs` and its items: `use std::fs;` makes `fs` a name of the module,
/// `use std::fs::{self as f, File, read as slurp}` makes `f` one and `File`, `slurp` names of
/// items (the alias mapped to the item's own name).
#[derive(Debug, Default)]
struct FsNames {
    modules: Vec<String>,
    items: BTreeMap<String, String>,
}

/// Every `use` tree in `code` expanded to `(path, name it is bound to)`.
fn use_paths(code: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = find_keyword(rest, "use") {
        let after = &rest[at + 3..];
        let Some(end) = after.find(';') else { break };
        let tree: String = after[..end].split_whitespace().collect();
        expand_use("", &tree, &mut found);
        rest = &after[end..];
    }
    found
}

/// `keyword` as a whole word in `text`.
fn find_keyword(text: &str, keyword: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find(keyword).map(|p| p + from) {
        let before = text[..at].chars().next_back();
        let after = text[at + keyword.len()..].chars().next();
        if !before.is_some_and(is_ident_char) && after.is_some_and(char::is_whitespace) {
            return Some(at);
        }
        from = at + keyword.len();
    }
    None
}

/// Expand one use tree (whitespace removed) under `prefix`.
fn expand_use(prefix: &str, tree: &str, found: &mut Vec<(String, String)>) {
    let join = |p: &str, s: &str| {
        if p.is_empty() {
            s.to_string()
        } else {
            format!("{p}::{s}")
        }
    };
    let tree = tree.trim_start_matches("::");
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim_end_matches("::");
        let base = join(prefix, head);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        for item in split_top_level(inner) {
            expand_use(&base, item, found);
        }
        return;
    }
    let (path, alias) = split_alias(tree);
    let full = if path == "self" {
        prefix.to_string()
    } else {
        join(prefix, path)
    };
    let bound = match alias {
        Some(a) => a.to_string(),
        None if path == "self" => prefix.rsplit("::").next().unwrap_or("").to_string(),
        None => path.rsplit("::").next().unwrap_or("").to_string(),
    };
    if !full.is_empty() && bound != "_" && bound != "*" {
        found.push((full, bound));
    }
}

/// `a::b` or an aliased `a::b⟨as⟩c` (the tree is stored with an `as` marker, see
/// [`use_paths`]).
fn split_alias(tree: &str) -> (&str, Option<&str>) {
    match tree.split_once(AS_MARKER) {
        Some((path, alias)) => (path, Some(alias)),
        None => (tree, None),
    }
}

/// What ` as ` becomes before whitespace is removed from a use tree.
const AS_MARKER: &str = "⟨as⟩";

/// The items of a `{…}` group, split at its top-level commas.
fn split_top_level(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items.into_iter().filter(|s| !s.is_empty()).collect()
}

fn fs_names(code: &str) -> FsNames {
    let marked = mark_aliases(code);
    let mut names = FsNames::default();
    for (path, bound) in use_paths(&marked) {
        let path = path.trim_start_matches("::");
        if path == "std::fs" {
            names.modules.push(bound);
        } else if let Some(item) = path.strip_prefix("std::fs::") {
            names.items.insert(bound, item.to_string());
        } else if path == "std::os::unix::fs::symlink" || path == "walkdir::WalkDir" {
            names
                .items
                .insert(bound, path.rsplit("::").next().unwrap().into());
        }
    }
    names
}

/// ` as ` between two names marked with [`AS_MARKER`], so it survives whitespace removal.
fn mark_aliases(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = find_keyword(rest, "as") {
        let before = rest[..at].chars().next_back();
        if before.is_some_and(char::is_whitespace) {
            out.push_str(&rest[..at]);
            out.push_str(AS_MARKER);
        } else {
            out.push_str(&rest[..at + 2]);
        }
        rest = &rest[at + 2..];
    }
    out.push_str(rest);
    out
}

/// The path expression (`a::b::c`, spaces and newlines around `::` allowed) starting at
/// byte `at` of `code`, as its segments, and the byte after it.
fn path_at(code: &str, at: usize) -> (Vec<&str>, usize) {
    let mut segments = Vec::new();
    let mut i = at;
    loop {
        let len = code[i..]
            .find(|c: char| !is_ident_char(c))
            .unwrap_or(code.len() - i);
        if len == 0 {
            break;
        }
        segments.push(&code[i..i + len]);
        i += len;
        let after_space = i + (code[i..].len() - code[i..].trim_start().len());
        if !code[after_space..].starts_with("::") {
            break;
        }
        let next = after_space + 2;
        let next = next + (code[next..].len() - code[next..].trim_start().len());
        if code[next..].starts_with(|c: char| is_ident_char(c)) {
            i = next;
        } else {
            break; // `::{` or `::<`: not a call path we look into
        }
    }
    (segments, i)
}

/// The fs call a path expression makes, if any: the segments after `std::fs` (resolved
/// through the file's names) name a function or a constructor of [`FS_FUNCTIONS`] /
/// [`FS_CONSTRUCTORS`].
fn fs_call(segments: &[&str], names: &FsNames, called: bool) -> Option<String> {
    let segments: Vec<&str> = if segments.first() == Some(&"") {
        segments[1..].to_vec()
    } else {
        segments.to_vec()
    };
    let rest: Vec<&str> = match segments.as_slice() {
        ["std", "fs", rest @ ..] => rest.to_vec(),
        ["std", "os", "unix", "fs", "symlink"] | ["walkdir", "WalkDir", "new"] => {
            return called.then(|| segments.join("::"));
        }
        [first, rest @ ..] if names.modules.iter().any(|m| m == first) => rest.to_vec(),
        [first, rest @ ..] => match names.items.get(*first) {
            Some(item) => std::iter::once(item.as_str())
                .chain(rest.iter().copied())
                .collect(),
            None => return None,
        },
        [] => return None,
    };
    let is_call = match rest.as_slice() {
        [f] => FS_FUNCTIONS.contains(f) || *f == "symlink",
        [t, f] => FS_CONSTRUCTORS.contains(&(*t, *f)) || (*t, *f) == ("WalkDir", "new"),
        _ => false,
    };
    (is_call && called).then(|| segments.join("::"))
}

/// Every fs call in one file's code (comments and literals already blanked), with the
/// function it is in.
fn sites_in(file: &str, code: &str) -> Vec<Site> {
    let names = fs_names(code);
    let mut sites = Vec::new();
    let mut functions: Vec<(String, usize)> = Vec::new(); // (name, depth its body opened at)
    let mut pending_fn: Option<String> = None;
    let mut depth = 0usize;
    let mut line = 1;
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let c = bytes[i];
        match c {
            b'\n' => line += 1,
            b'{' => {
                if let Some(name) = pending_fn.take() {
                    functions.push((name, depth));
                }
                depth += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                if functions.last().is_some_and(|(_, d)| *d == depth) {
                    functions.pop();
                }
            }
            b';' => pending_fn = None, // a declaration without a body
            _ => {}
        }
        let starts_word = is_ident_char(c as char)
            && (i == 0 || !is_ident_char(bytes[i - 1] as char))
            && !continues_a_path(&code[..i]);
        if !starts_word {
            i += 1;
            continue;
        }
        let (segments, end) = path_at(code, i);
        if segments == ["fn"] {
            let (name, _) = path_at(
                code,
                end + (code[end..].len() - code[end..].trim_start().len()),
            );
            if let Some(name) = name.first() {
                pending_fn = Some((*name).to_string());
            }
        } else {
            let called = code[end..].trim_start().starts_with('(');
            if let Some(call) = fs_call(&segments, &names, called) {
                sites.push(Site {
                    file: file.to_string(),
                    function: functions
                        .last()
                        .map_or("(top level)".to_string(), |(f, _)| f.clone()),
                    line,
                    call,
                });
            }
        }
        line += code[i..end].matches('\n').count();
        i = end.max(i + 1);
    }
    sites
}

/// True when the code before a word makes it the middle of a path or a method (`a::b`,
/// `x.read_to_string`), not the start of one (`::std::fs::read` starts one).
fn continues_a_path(before: &str) -> bool {
    let before = before.trim_end();
    if before.ends_with('.') {
        return true;
    }
    match before.strip_suffix("::") {
        Some(head) => head
            .trim_end()
            .ends_with(|c: char| is_ident_char(c) || c == '>'),
        None => false,
    }
}

/// Every fs call in the library's non-test sources.
fn all_sites() -> Vec<Site> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    crate::layers_tests::library_sources(&src, &mut files);
    files.sort();
    let mut sites = Vec::new();
    for path in files {
        let file = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&path).expect("reading a source file");
        let code = code_only(&crate::layers_tests::non_test_code(&text));
        sites.extend(sites_in(&file, &code));
    }
    sites
}

fn audited_entry(site: &Site) -> Option<&'static Audited> {
    AUDITED
        .iter()
        .find(|a| a.file == site.file && a.function == site.function)
}

#[test]
fn every_fs_call_outside_the_resolver_is_audited() {
    let sites = all_sites();
    assert!(
        sites.len() > 50,
        "the scan found almost no fs calls: is it reading the sources?"
    );
    let unaudited: Vec<String> = sites
        .iter()
        .filter(|s| s.file != RESOLVER && audited_entry(s).is_none())
        .map(|s| format!("  {}:{} in fn {}: {}", s.file, s.line, s.function, s.call))
        .collect();
    assert!(
        unaudited.is_empty(),
        "{} std::fs call(s) outside the resolver ({RESOLVER}) are not audited. A path under a \
         --root, an image or an existing repository must be opened through host::root::Root; \
         a path that is not (our own tempdir, a file the user named, the live host's own \
         configuration) gets an entry in AUDITED (crates/core/src/fs_rule_tests.rs) saying \
         why:\n{}",
        unaudited.len(),
        unaudited.join("\n")
    );
}

#[test]
fn every_audited_entry_still_names_a_call() {
    let sites = all_sites();
    let stale: Vec<String> = AUDITED
        .iter()
        .filter(|a| {
            !sites
                .iter()
                .any(|s| s.file == a.file && s.function == a.function)
        })
        .map(|a| {
            let note = if a.category == Temporary {
                " (TEMPORARY: its fix has landed; remove the entry)"
            } else {
                ""
            };
            format!("  {} fn {}{note}", a.file, a.function)
        })
        .collect();
    assert!(
        stale.is_empty(),
        "AUDITED entries that name no fs call any more; remove them:\n{}",
        stale.join("\n")
    );
    for a in AUDITED {
        assert!(
            !a.why.trim().is_empty(),
            "{} fn {}: say why",
            a.file,
            a.function
        );
    }
}

/// The scanner on planted code: each spelling of an fs call is found in the function it is
/// in, and nothing in comments, strings, types or reader methods is.
#[test]
fn the_scanner_finds_planted_calls_however_they_are_spelt() {
    let planted = r##"
use std::fs;
use std::io::Read;
use std::{fs::{self as f, File as F, read_dir as listing}, io};
use std::os::unix::fs::symlink;

/// `fs::read(path)` in a doc comment is not a call.
fn reads_the_marker(root: &Path) -> String {
    let text = "std::fs::read_to_string(x) in a string";
    let s = r#"fs::write("/", b"")"#;
    let c = '{';
    fs::read_to_string(
        root.join("opt/rocm/.info/rocm-pin.json"),
    )
    .unwrap()
}

fn opens(root: &Path, f2: std::fs::File) -> std::fs::Metadata {
    let mut s = String::new();
    f2.read_to_string(&mut s);
    let _ = F::open(root.join("etc/machine-id"));
    let _ = listing(root);
    let _ = f::OpenOptions::new().write(true).open(root);
    let _ = std
        ::fs
        ::symlink_metadata(root);
    symlink("a", root.join("b"));
    std::fs::Permissions::from_mode(0o644);
    impl X { fn inner(&self) { let _ = ::std::fs::read(root); } }
    fs::metadata(root).unwrap()
}
"##;
    let sites = sites_in("planted.rs", &code_only(planted));
    let found: Vec<(&str, &str, usize)> = sites
        .iter()
        .map(|s| (s.function.as_str(), s.call.as_str(), s.line))
        .collect();
    assert_eq!(
        found,
        [
            ("reads_the_marker", "fs::read_to_string", 12),
            ("opens", "F::open", 21),
            ("opens", "listing", 22),
            ("opens", "f::OpenOptions::new", 23),
            ("opens", "std::fs::symlink_metadata", 24),
            ("opens", "symlink", 27),
            ("inner", "std::fs::read", 29),
            ("opens", "fs::metadata", 30),
        ],
        "{sites:#?}"
    );
    // A planted call in an audited file but another function is a violation.
    let stray = Site {
        file: "ops/verify.rs".into(),
        function: "reads_the_marker".into(),
        line: 1,
        call: "fs::read_to_string".into(),
    };
    assert!(audited_entry(&stray).is_none());
}
