//! Unit tests of `ops::install`'s pure helpers.

use super::*;

#[test]
fn reads_remv_lines_of_apt_get_s() {
    let text = "NOTE: This is only a simulation!\nRemv hip-runtime-amd [7.2.53211.70204-93~24.04] [rocm-hip-runtime:amd64 ]\nRemv hsa-rocr:amd64 [1.18.0.70204-93~24.04]\nInst hsa-rocr-pinned (1.18 local-deb [amd64])\nConf hsa-rocr-pinned (1.18 local-deb [amd64])\n";
    assert_eq!(
        simulated_removals(text),
        vec!["hip-runtime-amd", "hsa-rocr"]
    );
}

#[test]
fn deb_file_names_escape_epochs() {
    assert_eq!(deb_file_name("a", "1:2-3", "amd64"), "a_1%3a2-3_amd64.deb");
}
