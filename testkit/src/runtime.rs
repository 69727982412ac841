//! Is the runtime the loader maps the patched one? One answer for every test that asks.

/// The sonames of the runtime pair, in the order the loader probe is asked for them.
pub const RUNTIME_SONAMES: &[&str] = &["libhsa-runtime64.so.1", "libamdhip64.so.7"];

/// What a patched library's embedded identity carries (`<lib>-PATCHED-<commit>`); a stock one
/// has none.
pub const PATCHED_MARKER: &str = "-PATCHED-";

/// True when there is one identity per soname of the pair and each is patched (and, given
/// `commit`, built from it). `identities` are the probe's, one per soname, "" for a soname that
/// did not load.
pub fn runtime_is_patched<'a>(
    identities: impl IntoIterator<Item = &'a str>,
    commit: Option<&str>,
) -> bool {
    let ids: Vec<&str> = identities.into_iter().collect();
    ids.len() == RUNTIME_SONAMES.len()
        && ids
            .iter()
            .all(|id| id.contains(PATCHED_MARKER) && commit.is_none_or(|c| id.ends_with(c)))
}

/// What the loader resolves `soname` to for `program` inside the sandbox (ldd), and that
/// file's sha256: on a host where stock and ours share a path, only the hash tells them apart.
pub fn resolved_sha256(
    sb: &rocm_pin_kit::sandbox::Sandbox,
    program: &str,
    soname: &str,
) -> (String, String) {
    let path = sb
        .sh_ok(&format!("ldd {program} | awk '/{soname}/ {{print $3}}'"))
        .unwrap_or_else(|e| panic!("ldd {program}: {e:#}"));
    let path = path.trim().to_string();
    let sha = sb
        .sh_ok(&format!(
            "sha256sum \"$(readlink -f {path})\" | cut -d' ' -f1"
        ))
        .unwrap_or_else(|e| panic!("sha256sum {path}: {e:#}"));
    (path, sha.trim().to_string())
}

/// The sha256 of every library our provenance marker (its JSON) records.
pub fn marker_sha256s(marker: &serde_json::Value) -> Vec<String> {
    marker["libraries"]
        .as_array()
        .map(|libs| {
            libs.iter()
                .filter_map(|l| l["sha256"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
