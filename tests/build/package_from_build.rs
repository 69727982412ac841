//! `rocm-pin build` of the stand-in monorepo (tests/fixtures/rocm-systems), then `rocm-pin
//! package` of its staging against the stand-in stock .debs: the manifest supplies the commit
//! and its time, and a vendored library nothing needs is reported, not silently dropped.

use std::process::Command;

use crate::util::{bin, contents, deb_of, debs_in, default_spec, field, stock_set};
use rocm_pin_kit::standin::StockRole;

#[test]
fn packages_the_staging_rocm_pin_build_made() {
    let (tmp, src, commit, rocm, staging) = crate::util::standin_build();
    crate::util::run(crate::util::build_cmd(
        &src,
        &commit,
        &rocm,
        &staging,
        &["--rocr-cmake-arg=-DSTANDIN_VENDORED_LIBRARY=ON"],
    ))
    .ok();
    let set = stock_set(&tmp.path().join("stock"), default_spec());
    let out = tmp.path().join("out");
    let res = Command::new(bin())
        .arg("package")
        .arg("--staging")
        .arg(&staging)
        .arg("--out")
        .arg(&out)
        .arg("--stock-deb")
        .arg(&set.require(StockRole::HsaRocr).unwrap().deb)
        .arg(&set.require(StockRole::HipRuntime).unwrap().deb)
        .env_remove("SOURCE_DATE_EPOCH")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{err}");
    // Nothing NEEDs the vendored helper: said so by name, not dropped silently.
    assert!(
        err.contains("liburcu-standin.so.8.1.0") && err.contains("NOT shipped"),
        "{}",
        err
    );
    let debs = debs_in(&out);
    assert_eq!(debs.len(), 2);
    let short = &commit[..7];
    for d in &debs {
        let v = field(d, "Version");
        assert!(
            v.ends_with(&format!("+pin{}.g{short}", crate::util::COMMIT_EPOCH)),
            "{v}"
        );
        assert_eq!(field(d, "X-Rocm-Pin-Commit"), commit);
        assert!(contents(d).iter().all(|(_, p, _)| !p.contains("liburcu")));
    }
    let hsa = deb_of(&debs, "hsa-rocr-pinned");
    assert!(contents(hsa)
        .iter()
        .any(|(k, p, _)| *k == '-' && p == "/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.0"));
}
