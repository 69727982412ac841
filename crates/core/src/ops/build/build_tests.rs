use super::staging_dir::LOCK_FILE;
use super::*;
use crate::exit::Failure;

#[test]
fn a_second_build_into_the_same_directory_is_refused_while_the_first_runs() {
    let d = tempfile::tempdir().unwrap();
    let layout = Layout::new(&d.path().join("out"));
    let first = claim_staging(&layout).unwrap();
    let err = claim_staging(&layout).err().unwrap();
    assert!(
        matches!(err.downcast_ref::<BuildError>(),
            Some(BuildError::StagingLocked { staging, lock })
                if *staging == layout.staging && *lock == layout.work.join(LOCK_FILE)),
        "{err:?}"
    );
    assert!(err.to_string().contains("another rocm-pin build"), "{err}");
    drop(first);
    // flock belongs to the open file description: a child another test thread forks at this
    // moment holds a copy of the descriptor until its exec closes it (O_CLOEXEC), so the
    // lock can outlive the drop by a few milliseconds inside this multi-threaded test binary.
    let mut again = claim_staging(&layout);
    for _ in 0..200 {
        if again.is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        again = claim_staging(&layout);
    }
    let _again = again.unwrap();
    clean_staging(&layout, &[]).unwrap();
    assert!(layout.work.join(LOCK_FILE).exists());
}

#[test]
fn jobs_come_from_flag_then_env_then_cpus() {
    assert_eq!(
        resolve_jobs(Some(5), Some("3")).unwrap(),
        (5, JobsSource::Flag)
    );
    assert_eq!(resolve_jobs(None, Some("3")).unwrap(), (3, JobsSource::Env));
    let (n, src) = resolve_jobs(None, None).unwrap();
    assert_eq!(src, JobsSource::Cpus);
    assert_eq!(
        n as usize,
        std::thread::available_parallelism().unwrap().get()
    );
    assert!(resolve_jobs(None, Some("0")).is_err());
    assert!(resolve_jobs(None, Some("many")).is_err());
    let err = resolve_jobs(Some(0), None).unwrap_err();
    assert!(
        matches!(err.downcast_ref::<Failure>(), Some(Failure::Usage(m)) if m.contains("--jobs")),
        "{err:?}"
    );
}

#[test]
fn a_staging_with_a_broken_library_link_fails_validation_with_exit_1() {
    let d = tempfile::tempdir().unwrap();
    let lib = d.path().join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::os::unix::fs::symlink("libgone.so.1.0", lib.join("libgone.so.1")).unwrap();
    let err = validate::validate_install(
        d.path(),
        SKIP_IN_STAGING,
        validate::ValidateOptions {
            backport_check: true,
        },
    )
    .unwrap_err();
    assert!(
        matches!(err.downcast_ref::<Failure>(),
            Some(Failure::CheckFailed(m)) if m.contains("failed validation")),
        "{err:?}"
    );
    assert_eq!(crate::error::exit_code_for(&err), 1);
}

#[test]
fn a_foreign_output_directory_is_refused_and_left_alone() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("precious.txt"), "mine\n").unwrap();
    let layout = Layout::new(&out);
    for err in [
        claim_staging(&layout).err().unwrap(),
        clean_staging(&layout, &[]).unwrap_err(),
    ] {
        assert!(
            matches!(err.downcast_ref::<BuildError>(), Some(BuildError::ForeignOutDir { out: o }) if *o == out),
            "{err:?}"
        );
    }
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
}

#[test]
fn a_url_without_rocm_to_build_against_is_refused_before_the_fetch() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    // The base prerequisites, as stand-ins on a PATH of their own: only the ROCm path is
    // missing here.
    let bin = d.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["git", "cmake", "make", "cc"] {
        std::fs::write(bin.join(tool), "#!/bin/sh\nexit 1\n").unwrap();
        std::fs::set_permissions(bin.join(tool), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let url = "https://example.invalid/rocm-systems.git";
    let mut opts = BuildOptions::new(url, d.path().join("out"));
    opts.rocm_path = d.path().join("no-rocm");
    opts.jobs = Some(1);
    let mut p = prepare(&opts).unwrap();
    p.env.path = Some(bin.into_os_string());
    let tc = opts.toolchain(&p.rocm, None);
    let err = check_source(&p, &tc, &progress::Silent).unwrap_err();
    assert!(
        matches!(err.downcast_ref::<BuildError>(),
            Some(BuildError::NoRocmToBuildAgainst { rocm_path, url: u, .. })
                if *rocm_path == opts.rocm_path && u == url),
        "{err:?}"
    );
    assert!(!p.layout.checkout.exists());
}
