//! Malformed input never panics rocm_pin_core::elf: random bytes, every truncation of a real
//! gcc-built library, and random byte corruption of it.

use std::sync::OnceLock;

use crate::util::elf::*;
use proptest::prelude::*;
use rocm_pin_core::elf::ElfInfo;

/// parse_elf, failing the test when only the panic backstop kept the parser from crashing
/// (the parser itself must turn malformed input into errors).
fn parse_elf(bytes: &[u8]) -> anyhow::Result<ElfInfo> {
    let result = rocm_pin_core::elf::parse_elf(bytes);
    if let Err(e) = &result {
        assert!(!e.to_string().contains("gave up"), "parser panicked: {e}");
    }
    result
}

fn real_library() -> &'static [u8] {
    static LIB: OnceLock<Vec<u8>> = OnceLock::new();
    LIB.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        // Stripped: small enough that every truncation point can be tried.
        let (lib, _) = build_foo_bar(dir.path(), &["-s"]);
        std::fs::read(lib).unwrap()
    })
}

#[test]
fn the_intact_library_parses() {
    let info = parse_elf(real_library()).unwrap();
    assert_eq!(info.soname.as_deref(), Some("libfoo.so.7"));
}

#[test]
fn every_truncation_is_an_error_or_a_parse_never_a_panic() {
    let lib = real_library();
    let mut errors = 0;
    for len in 0..lib.len() {
        if parse_elf(&lib[..len]).is_err() {
            errors += 1;
        }
    }
    // Cutting into the headers or the dynamic tables must be noticed.
    assert!(errors > 0);
    assert!(parse_elf(&lib[..64]).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let _ = parse_elf(&bytes);
        let mut with_magic = b"\x7fELF".to_vec();
        with_magic.extend_from_slice(&bytes);
        let _ = parse_elf(&with_magic);
    }

    #[test]
    fn corrupted_library_never_panics(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16),
        header_edits in proptest::collection::vec((0usize..64, any::<u8>()), 0..4),
    ) {
        let mut bytes = real_library().to_vec();
        for (at, value) in edits {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        for (i, value) in header_edits {
            bytes[i] = value;
        }
        let _ = parse_elf(&bytes);
    }
}
