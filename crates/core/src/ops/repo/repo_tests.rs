use super::index::check_index_filename;
use super::*;

/// A small .deb made by our own writer in `dir`: `package` at `version` (architecture
/// amd64), `extra` appended to its control file, `files` (root-relative path, bytes).
pub(crate) fn small_deb(
    dir: &Path,
    package: &str,
    version: &str,
    extra: &str,
    files: &[(&str, &[u8])],
) -> PathBuf {
    let root = dir.join(format!("{package}_{version}.tree"));
    if root.exists() {
        fs::remove_dir_all(&root).unwrap();
    }
    fs::create_dir_all(root.join("DEBIAN")).unwrap();
    fs::write(
        root.join("DEBIAN/control"),
        format!(
            "Package: {package}\nVersion: {version}\nArchitecture: amd64\n\
             Maintainer: t <t@example.invalid>\nDescription: test\n{extra}"
        ),
    )
    .unwrap();
    for (path, bytes) in files {
        let p = root.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, bytes).unwrap();
    }
    let out = dir.join(format!("{package}_{version}_amd64.deb"));
    crate::deb::archive::build_from_dir(
        &root,
        &out,
        &crate::deb::archive::BuildOptions::default(),
        &crate::progress::Silent,
    )
    .unwrap();
    out
}

#[test]
fn an_index_filename_must_stay_inside_the_repository() {
    assert_eq!(check_index_filename("pool/main/a/a/a_1_all.deb"), Ok(()));
    assert_eq!(
        check_index_filename("./a.deb").unwrap_err(),
        "has an empty, '.' or '..' component"
    );
    for escape in [
        "/etc/hostname",
        "../x.deb",
        "pool/../../x.deb",
        "pool//x.deb",
        "",
        "pool/main\n /x.deb",
        "pool/a b.deb",
        "pool/\u{1b}[2J.deb",
    ] {
        assert!(check_index_filename(escape).is_err(), "{escape}");
    }
}

#[test]
fn names_are_checked() {
    for bad in ["", "a/b", "..", "a b", "ü"] {
        let err = check_name("suite", bad).unwrap_err();
        assert!(
            matches!(err.downcast_ref::<RepoError>(),
                Some(RepoError::BadName { what: "suite", name }) if name == bad),
            "{bad:?}: {err:?}"
        );
    }
    check_name("suite", "bookworm-rocm_7.2+x").unwrap();
    let err = publish(
        &[],
        &RepoOptions {
            component: "a b".into(),
            ..RepoOptions::new("/nonexistent/repo")
        },
        &crate::progress::Silent,
    )
    .unwrap_err();
    assert!(
        matches!(err.downcast_ref::<RepoError>(),
            Some(RepoError::BadName { what: "component", name }) if name == "a b"),
        "{err:?}"
    );
}

#[test]
fn a_published_version_never_changes() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("repo");
    let opts = RepoOptions::new(&out);
    let first = d.path().join("first");
    let second = d.path().join("second");
    fs::create_dir_all(&first).unwrap();
    fs::create_dir_all(&second).unwrap();
    let a = small_deb(&first, "tool", "1.0", "", &[("usr/share/tool/a", b"one\n")]);
    let b = small_deb(
        &second,
        "tool",
        "1.0",
        "",
        &[("usr/share/tool/a", b"two\n")],
    );
    publish(std::slice::from_ref(&a), &opts, &crate::progress::Silent).unwrap();
    let before = fs::read(out.join("dists/stable/Release")).unwrap();

    let err = publish(std::slice::from_ref(&b), &opts, &crate::progress::Silent).unwrap_err();
    match err.downcast_ref::<RepoError>() {
        Some(RepoError::RepoConflicts(c)) => assert!(
            matches!(c.as_slice(), [RepoConflict::ChangedVersion { deb, name, version, place, .. }]
                if *deb == b && name == "tool" && version == "1.0" && *place == "the repository"),
            "{c:?}"
        ),
        other => panic!("not RepoConflicts: {other:?} ({err})"),
    }
    assert!(
        err.to_string().starts_with("refused, nothing written:\n  "),
        "{err}"
    );
    assert_eq!(fs::read(out.join("dists/stable/Release")).unwrap(), before);

    // The same clash between two arguments of one run.
    let fresh = RepoOptions::new(d.path().join("repo2"));
    let err = publish(&[a, b], &fresh, &crate::progress::Silent).unwrap_err();
    assert!(
        matches!(err.downcast_ref::<RepoError>(),
            Some(RepoError::RepoConflicts(c)) if matches!(c.as_slice(),
                [RepoConflict::ChangedVersion { place: "an earlier argument", .. }])),
        "{err:?}"
    );
}

#[test]
fn keygen_never_overwrites_a_key() {
    let d = tempfile::tempdir().unwrap();
    let public = d.path().join("k.pub.asc");
    fs::write(&public, "keep\n").unwrap();
    let err = keygen(&d.path().join("k.asc"), "t <t@example.invalid>").unwrap_err();
    assert!(
        matches!(err.downcast_ref::<RepoError>(), Some(RepoError::KeyExists { path }) if *path == public),
        "{err:?}"
    );
    assert!(!d.path().join("k.asc").exists());
    assert_eq!(fs::read_to_string(&public).unwrap(), "keep\n");
}
