//! The audit of every `std::fs` call in the library outside the resolver (`host/root/`):
//! per file and function, the kind of path it takes and why that path is not one a root, an
//! image or a repository chose. `fs_rule_tests.rs` scans the sources and checks them against
//! this list, both ways.

/// Why a call site's path is not root-derived: the kinds of path the audit found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Category {
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
pub(super) struct Audited {
    pub(super) file: &'static str,
    pub(super) function: &'static str,
    pub(super) category: Category,
    pub(super) why: &'static str,
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
pub(super) const AUDITED: &[Audited] = &[
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
        "pkgformats/deb/archive.rs",
        "check_tree_exists",
        UserNamedFile,
        "`deb build TREE`: whether the tree the user names exists and is a directory",
    ),
    audited(
        "pkgformats/image/layer.rs",
        "opaque",
        ImageUnpack,
        "an opaque whiteout lists its directory inside the temporary root this run unpacks into",
    ),
    audited(
        "pkgformats/image/links.rs",
        "escapes",
        ImageUnpack,
        "a symlink chain resolved step by step inside the temporary root this run unpacks into (lstat, readlink: never followed by the host)",
    ),
    audited(
        "pkgformats/image/links.rs",
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
        "pkgformats/interrupt.rs",
        "end_registered",
        OursMadeThisRun,
        "removes the temporary paths this run registered (its tempdirs, the unpacked image) on a signal",
    ),
    audited(
        "ops/ourdebs/mod.rs",
        "keep_into",
        LiveHost,
        "install (live system only): our .debs the user gave, copied into our own state directory /var/lib/rocm-pin/ours (/ours/<family> for another family than the pair)",
    ),
    audited(
        "ops/install_family.rs",
        "forget",
        LiveHost,
        "that family's rollback/install --no-rollback (live system only): our own state directory /var/lib/rocm-pin/ours/<family>",
    ),
    audited(
        "ops/ourdebs/mod.rs",
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
        "pkgformats/deb/archive.rs",
        "assemble_deb",
        UserNamedFile,
        "`deb build`/`package` output: the .deb being written (its mode, its size)",
    ),
    audited(
        "pkgformats/deb/archive.rs",
        "build_from_dir",
        UserNamedFile,
        "`deb build TREE`: the tree the user gives (or staging this run made), walked without following links",
    ),
    audited(
        "pkgformats/deb/archive.rs",
        "read_control_dir",
        UserNamedFile,
        "the DEBIAN/ directory of the tree given to `deb build` (or staging this run made)",
    ),
    audited(
        "pkgformats/deb/archive.rs",
        "scan_payload",
        UserNamedFile,
        "the payload tree given to `deb build` (or staging this run made)",
    ),
    audited(
        "pkgformats/deb/archive.rs",
        "walk_dir",
        UserNamedFile,
        "the payload tree given to `deb build` (or staging this run made), lstat and readlink only",
    ),
    audited(
        "pkgformats/deb/content.rs",
        "open",
        Helper,
        "a payload file of a package being built: from a tree the user gave, staging this run made, or a stock file of `package --stock-root` whose directory host::root resolved and whose entry was lstat'ed as a regular file (plan/stock.rs)",
    ),
    audited(
        "pkgformats/deb/content.rs",
        "size",
        Helper,
        "as `open` in this file",
    ),
    audited(
        "pkgformats/deb/output.rs",
        "package_output_path",
        UserNamedFile,
        "the output path the user named (`deb build … OUT`)",
    ),
    audited(
        "pkgformats/deb/reader.rs",
        "ensure_parent_dirs",
        OursMadeThisRun,
        "extraction into a directory this run made, each parent checked to be a real directory",
    ),
    audited(
        "pkgformats/deb/reader.rs",
        "extract_data",
        OursMadeThisRun,
        "extraction into a directory this run made, each parent checked to be a real directory (no link followed)",
    ),
    audited(
        "pkgformats/deb/reader.rs",
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
        "pkgformats/elf/mod.rs",
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
        "pkgformats/image/layer.rs",
        "apply",
        ImageUnpack,
        "layer entries created in the temporary image root this run made, every parent checked",
    ),
    audited(
        "pkgformats/image/layer.rs",
        "existing_dir",
        ImageUnpack,
        "lstat inside the temporary image root this run made",
    ),
    audited(
        "pkgformats/image/layer.rs",
        "existing_file",
        ImageUnpack,
        "lstat inside the temporary image root this run made",
    ),
    audited(
        "pkgformats/image/layer.rs",
        "make_parents",
        ImageUnpack,
        "directories created inside the temporary image root this run made",
    ),
    audited(
        "pkgformats/image/layer.rs",
        "open_layer",
        OursMadeThisRun,
        "a layer blob inside the archive this run extracted into its own temporary directory",
    ),
    audited(
        "pkgformats/image/layer.rs",
        "remove_any",
        ImageUnpack,
        "whiteouts: removal inside the temporary image root this run made (lstat first, no link followed)",
    ),
    audited(
        "pkgformats/image/limits.rs",
        "install",
        OursMadeThisRun,
        "the signal handler removing the temporary image root this run made",
    ),
    audited(
        "pkgformats/image/mod.rs",
        "apply_blob",
        OursMadeThisRun,
        "a layer blob in the directory this run extracted the archive into",
    ),
    audited(
        "pkgformats/image/mod.rs",
        "check_size",
        OursMadeThisRun,
        "a blob in the directory this run extracted the archive into",
    ),
    audited(
        "pkgformats/image/mod.rs",
        "extract_archive",
        UserNamedFile,
        "the archive the user named (`--image-archive`), extracted into a directory this run made",
    ),
    audited(
        "pkgformats/image/mod.rs",
        "read_json",
        OursMadeThisRun,
        "index/manifest JSON in the directory this run extracted the archive into (size-capped)",
    ),
    audited(
        "pkgformats/image/mod.rs",
        "skopeo_fetch",
        OursMadeThisRun,
        "the archive skopeo writes into a temporary directory this run made",
    ),
    audited(
        "pkgformats/image/mod.rs",
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
        "rocm/gate/mod.rs",
        "clear_skip_record",
        LiveHost,
        "the skip record: written by `install`, live system only (verify --root reads it through host::root)",
    ),
    audited(
        "rocm/gate/mod.rs",
        "write_skip_record",
        LiveHost,
        "the skip record: written by `install`, live system only (verify --root reads it through host::root)",
    ),
    audited(
        "ops/guard/mod.rs",
        "arm",
        LiveHost,
        "the guard hooks and its private binary copy: `guard`/`install --guard` run on the live system only",
    ),
    audited(
        "ops/guard/binary.rs",
        "guard_binary_for",
        LiveHost,
        "the running executable's own directory (a rocm-pin-guard beside it), never a path a root chose",
    ),
    audited(
        "ops/guard/binary.rs",
        "copy_atomically",
        LiveHost,
        "the guard hooks and its private binary copy: `guard`/`install --guard` run on the live system only",
    ),
    audited(
        "ops/guard/binary.rs",
        "remove_if_present",
        LiveHost,
        "the guard hooks and its private binary copy: `guard`/`install --guard` run on the live system only",
    ),
    audited(
        "ops/guard/binary.rs",
        "remove_private_copies",
        LiveHost,
        "the guard hooks and its private binary copy: `guard`/`install --guard` run on the live system only",
    ),
    audited(
        "ops/guard/binary.rs",
        "stable_binary",
        LiveHost,
        "the guard hooks and its private binary copy: `guard`/`install --guard` run on the live system only",
    ),
    audited(
        "ops/guard/mod.rs",
        "write_atomically",
        LiveHost,
        "the guard hooks and its private binary copy: `guard`/`install --guard` run on the live system only",
    ),
    audited(
        "ops/install/mod.rs",
        "keep_stock",
        LiveHost,
        "`install` runs on the live system only; what it keeps for rollback is in our state directory",
    ),
    audited(
        "ops/install/mod.rs",
        "keep_stock_for_rollback",
        LiveHost,
        "`install` runs on the live system only; what it keeps for rollback is in our state directory",
    ),
    audited(
        "ops/install/mod.rs",
        "record_stock_not_kept",
        LiveHost,
        "`install` runs on the live system only; what it keeps for rollback is in our state directory",
    ),
    audited(
        "ops/install/mod.rs",
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
        "ops/ourdebs/mod.rs",
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
        "load_stock_debs",
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
        "rocm/real_tree/mod.rs",
        "check_comgr",
        BuildCache,
        "`build`: the rocm-systems checkout and the build host's ROCm/comgr, with scratch files of ours",
    ),
    audited(
        "rocm/real_tree/mod.rs",
        "check_offload_targets",
        BuildCache,
        "`build`: the rocm-systems checkout and the build host's ROCm/comgr, with scratch files of ours",
    ),
    audited(
        "rocm/real_tree/mod.rs",
        "comgr_version",
        BuildCache,
        "`build`: the rocm-systems checkout and the build host's ROCm/comgr, with scratch files of ours",
    ),
    audited(
        "rocm/real_tree/mod.rs",
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
