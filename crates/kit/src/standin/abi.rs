//! The real runtime's ABI for libraries built without the stand-in's CMake (the tests' gcc
//! staging): the same lists (tests/fixtures/rocm-systems/cmake/abi, embedded) and the same rules as
//! cmake/standin_abi.cmake, so such a library exports every symbol of the real one, in its
//! version node, and `rocm-pin package`'s ABI check accepts it against Debian's stock and the
//! stand-in stock set alike.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::tree::STANDIN_FILES;

/// One family's rules: its list, the node of its own extra exports (the identity), and the
/// node its unversioned listed symbols get (the stand-in stock set versions them).
struct Family {
    stem: &'static str,
    main_node: &'static str,
    unversioned_node: Option<&'static str>,
    /// Exported beyond the list because the stand-in stock set exports them.
    stock_extras: &'static [&'static str],
    /// What every stub function answers (the runtime's "no GPU" error).
    error: &'static str,
    /// Listed functions given a real body (what a program calls to say why it stops), as
    /// projects/*/src/*.c define them for the CMake build.
    bodies: &'static [(&'static str, &'static str)],
}

const HSA_STATUS_STRING: &str = "int hsa_status_string(int status, const char **s) {
  if (!s) return 0x1000;
  *s = status == 0 ? \"HSA_STATUS_SUCCESS\" : \"HSA_STATUS_ERROR_NOT_INITIALIZED: the rocm-pin stand-in runtime has no GPU support\";
  return 0;
}";
const HIP_GET_ERROR_NAME: &str = "const char *hipGetErrorName(int e) {
  return e == 0 ? \"hipSuccess\" : e == 100 ? \"hipErrorNoDevice\" : \"hipErrorUnknown\";
}";
const HIP_GET_ERROR_STRING: &str = "const char *hipGetErrorString(int e) {
  return e == 100 ? \"no ROCm-capable device is detected (rocm-pin stand-in runtime)\" : \"hip error\";
}";
const HIP_GET_DEVICE_COUNT: &str = "int hipGetDeviceCount(int *count) {
  if (count) *count = 0;
  return 100;
}";

const NCCL_GET_ERROR_STRING: &str = "const char *ncclGetErrorString(int r) {
  return r == 0 ? \"no error\" : \"unhandled cuda error (rocm-pin stand-in RCCL: no GPU support)\";
}";
const NCCL_GET_LAST_ERROR: &str = "const char *ncclGetLastError(void *comm) {
  (void)comm;
  return \"rocm-pin stand-in RCCL: no GPU support\";
}";

const FAMILIES: &[Family] = &[
    Family {
        stem: "libhsa-runtime64",
        main_node: "ROCR_1",
        unversioned_node: None,
        stock_extras: &[],
        error: "0x100B",
        bodies: &[("hsa_status_string", HSA_STATUS_STRING)],
    },
    Family {
        stem: "libamdhip64",
        main_node: "hip_4.2",
        unversioned_node: None,
        stock_extras: &[],
        error: "100",
        bodies: &[
            ("hipGetErrorName", HIP_GET_ERROR_NAME),
            ("hipGetErrorString", HIP_GET_ERROR_STRING),
            ("hipGetDeviceCount", HIP_GET_DEVICE_COUNT),
        ],
    },
    Family {
        stem: "libhiprtc",
        main_node: "hiprtc_4.0",
        unversioned_node: Some("hiprtc_4.0"),
        stock_extras: &[],
        error: "11",
        bodies: &[],
    },
    Family {
        stem: "libhiprtc-builtins",
        main_node: "hiprtc_builtins",
        unversioned_node: Some("hiprtc_builtins"),
        stock_extras: &["__hipGetPCH"],
        error: "0",
        bodies: &[],
    },
    // RCCL (the `rccl` family of rocm_pin_core::rocm::families): no committed list; a stand-in
    // follows a root's stock librccl (`list_like`). Debian's librccl.so.1 has no version nodes,
    // so the main node is the anonymous one; every stub answers ncclUnhandledCudaError (1).
    Family {
        stem: "librccl",
        main_node: "",
        unversioned_node: None,
        stock_extras: &[],
        error: "1",
        bodies: &[
            ("ncclGetErrorString", NCCL_GET_ERROR_STRING),
            ("ncclGetLastError", NCCL_GET_LAST_ERROR),
        ],
    },
];

/// One listed symbol: a function or a data object of `size` bytes, in `node` (None: none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbiSymbol {
    pub function: bool,
    pub name: String,
    pub node: Option<String>,
    pub size: u64,
}

/// The embedded list of family `stem` (`libhsa-runtime64`, …): its symbols and its version
/// nodes in order; None for a stem without one.
pub fn list(stem: &str) -> Option<(Vec<AbiSymbol>, Vec<String>)> {
    let rel = format!("cmake/abi/{stem}.abi");
    let text = STANDIN_FILES.iter().find(|(p, _)| *p == rel)?.1;
    let mut symbols = Vec::new();
    let mut nodes = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["version", node] => nodes.push(node.to_string()),
            [kind, name, node, size] => symbols.push(AbiSymbol {
                function: *kind == "func",
                name: name.to_string(),
                node: (*node != "-").then(|| node.to_string()),
                size: size.parse().unwrap_or(0),
            }),
            _ => {}
        }
    }
    Some((symbols, nodes))
}

/// The committed list of family `stem` widened to what `root`'s stock libraries of that family
/// export (see [`stock_libraries`]): the root's symbols in the root's nodes first, then the
/// listed ones the root lacks. A stand-in built from it is ABI-complete against that root's
/// stock even after an upload the committed list predates, so tests and `rocm-pin standin
/// source --like` never depend on which upload the archive holds today. A family with rules
/// but no committed list (RCCL) takes the root's symbols alone. None for a stem without
/// rules; the committed list alone when the root has no such library.
pub fn list_like(stem: &str, root: &Path) -> anyhow::Result<Option<(Vec<AbiSymbol>, Vec<String>)>> {
    let Some((listed, listed_nodes)) = list(stem).or_else(|| {
        FAMILIES
            .iter()
            .any(|f| f.stem == stem)
            .then(|| (Vec::new(), Vec::new()))
    }) else {
        return Ok(None);
    };
    let mut symbols: Vec<AbiSymbol> = Vec::new();
    let mut nodes: Vec<String> = Vec::new();
    for path in stock_libraries(root, stem)? {
        let info = rocm_pin_core::elf::read_elf(&path)
            .with_context(|| format!("reading the stock library {}", path.display()))?;
        // The default definition of each name (a hidden older version of a name the stand-in
        // also defines would need a second symbol; no runtime library has one).
        for e in info
            .exports
            .iter()
            .filter(|e| e.default && !LINKER_SYMBOLS.contains(&e.name.as_str()))
            .filter(|e| !defined_beyond_the_list(stem, &e.name))
        {
            if let Some(node) = &e.version {
                if !nodes.contains(node) {
                    nodes.push(node.clone());
                }
            }
            if !symbols.iter().any(|s| s.name == e.name) {
                symbols.push(AbiSymbol {
                    function: e.function,
                    name: e.name.clone(),
                    node: e.version.clone(),
                    size: e.size,
                });
            }
        }
    }
    for s in listed {
        if !symbols.iter().any(|have| have.name == s.name) {
            if let Some(node) = &s.node {
                if !nodes.contains(node) {
                    nodes.push(node.clone());
                }
            }
            symbols.push(s);
        }
    }
    for node in listed_nodes {
        if !nodes.contains(&node) {
            nodes.push(node);
        }
    }
    Ok(Some((symbols, nodes)))
}

/// The names the stand-in's sources export beyond its list (the `EXTRA` of each
/// `standin_abi()` call in the fixture's CMakeLists.txt: the identity, the backport symbol,
/// `__hipGetPCH` of libhiprtc-builtins). A root exporting one of them (the stand-in stock set
/// exports `rocm_pin_identity`, as an AMD-flavour trial host has it) must not put it in the list
/// too: the list's stub and the source's definition would be defined twice.
fn defined_beyond_the_list(stem: &str, name: &str) -> bool {
    matches!(name, "rocm_pin_identity")
        || (stem == "libhsa-runtime64" && name == "hsa_amd_signal_create_v2")
        || (stem == "libhiprtc-builtins" && name == "__hipGetPCH")
}

/// Symbols every linked library defines; not part of an ABI (scripts/standin-abi.sh skips them
/// too).
const LINKER_SYMBOLS: &[&str] = &["_init", "_fini", "_edata", "_end", "__bss_start"];

/// The regular files named `<stem>.so.<version>` in `root`'s library directories (the
/// multiarch and plain `/usr/lib` ones Debian uses, and `/opt/rocm*/lib` as AMD's packages lay
/// them out), sorted; symbolic links are left out (the file they name is found by its own
/// name). Only for roots the caller trusts (a test's chroot, the host).
pub fn stock_libraries(root: &Path, stem: &str) -> anyhow::Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = [
        "usr/lib/x86_64-linux-gnu",
        "usr/lib/aarch64-linux-gnu",
        "usr/lib64",
        "usr/lib",
    ]
    .iter()
    .map(|d| root.join(d))
    .collect();
    if let Ok(opt) = std::fs::read_dir(root.join("opt")) {
        for entry in opt.flatten() {
            if entry.file_name().to_string_lossy().starts_with("rocm") {
                dirs.push(entry.path().join("lib"));
            }
        }
    }
    let prefix = format!("{stem}.so.");
    let mut found = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let versioned = name
                .strip_prefix(&prefix)
                .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()));
            let regular = entry.file_type().is_ok_and(|t| t.is_file());
            if versioned && regular {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

/// The SONAME major of `root`'s stock HIP runtime (`libamdhip64.so.6` → 6), when it has one.
pub fn hip_major_in(root: &Path) -> anyhow::Result<Option<u32>> {
    for path in stock_libraries(root, "libamdhip64")? {
        let info = rocm_pin_core::elf::read_elf(&path)
            .with_context(|| format!("reading the stock library {}", path.display()))?;
        let major = info
            .soname
            .as_deref()
            .and_then(|s| s.strip_prefix("libamdhip64.so."))
            .and_then(|m| m.parse().ok());
        if major.is_some() {
            return Ok(major);
        }
    }
    Ok(None)
}

/// A list in the committed files' format (what cmake/standin_abi.cmake reads), with `source`
/// said in its header.
pub fn render(symbols: &[AbiSymbol], nodes: &[String], source: &str) -> String {
    let mut text = format!(
        "# Generated by rocm-pin from: {source}\n\
         # <func|object> <name> <version node, - = none> <object size>; then the nodes in order.\n"
    );
    for s in symbols {
        let _ = writeln!(
            text,
            "{} {} {} {}",
            if s.function { "func" } else { "object" },
            s.name,
            s.node.as_deref().unwrap_or("-"),
            if s.function { 0 } else { s.size }
        );
    }
    for node in nodes {
        let _ = writeln!(text, "version {node}");
    }
    text
}

/// C stubs and a version script for a library of family `stem` whose own source defines
/// `own` (each in its listed node, else in the family's main node, with `identity_function`):
/// `(C source to append, version script)`; `omit`: a listed symbol left out (a test's build
/// that lost one). None for a stem without a list.
pub fn stubs_and_script(
    stem: &str,
    own: &[&str],
    identity_function: &str,
    omit: Option<&str>,
) -> Option<(String, String)> {
    stubs_and_script_from(stem, list(stem)?, own, identity_function, omit)
}

/// [`stubs_and_script`] from a given list (e.g. [`list_like`]'s).
pub fn stubs_and_script_from(
    stem: &str,
    (mut symbols, mut nodes): (Vec<AbiSymbol>, Vec<String>),
    own: &[&str],
    identity_function: &str,
    omit: Option<&str>,
) -> Option<(String, String)> {
    let family = FAMILIES.iter().find(|f| f.stem == stem)?;
    symbols.retain(|s| Some(s.name.as_str()) != omit);
    let mut members: Vec<(String, Vec<String>)> = Vec::new();
    let mut add = |node: &str, name: &str| match members.iter_mut().find(|(n, _)| n == node) {
        Some((_, names)) => names.push(name.to_string()),
        None => members.push((node.to_string(), vec![name.to_string()])),
    };
    let mut c = String::new();
    for (i, s) in symbols.iter().enumerate() {
        let node = s
            .node
            .as_deref()
            .or(family.unversioned_node)
            .unwrap_or(family.main_node);
        add(node, &s.name);
        if own.contains(&s.name.as_str()) {
            continue;
        }
        if let Some((_, body)) = family.bodies.iter().find(|(n, _)| *n == s.name) {
            let _ = writeln!(c, "__attribute__((visibility(\"default\"))) {body}");
        } else if s.function {
            let _ = writeln!(
                c,
                "__attribute__((visibility(\"default\"))) long standin_stub_{i}(void) __asm__(\"{}\");\n\
                 long standin_stub_{i}(void) {{ return {}; }}",
                s.name, family.error
            );
        } else {
            let _ = writeln!(
                c,
                "__attribute__((visibility(\"default\"))) unsigned char standin_object_{i}[{}] __asm__(\"{}\") = {{0}};",
                s.size.max(1),
                s.name
            );
        }
    }
    let listed = |n: &str| symbols.iter().any(|s| s.name == n);
    for name in own
        .iter()
        .copied()
        .chain(family.stock_extras.iter().copied())
        .chain([identity_function])
        .filter(|n| !listed(n))
    {
        add(family.main_node, name);
        if family.stock_extras.contains(&name) && !own.contains(&name) {
            let _ = writeln!(c, "int {name}(void) {{ return 0; }}");
        }
    }
    for node in family
        .unversioned_node
        .into_iter()
        .chain([family.main_node])
    {
        if !nodes.iter().any(|n| n == node) {
            nodes.push(node.to_string());
        }
    }
    let mut map = String::new();
    let last = nodes.len().saturating_sub(1);
    for (i, node) in nodes.iter().enumerate() {
        let _ = writeln!(map, "{node} {{\n  global:");
        for (_, names) in members.iter().filter(|(n, _)| n == node) {
            for name in names {
                let _ = writeln!(map, "    \"{name}\";");
            }
        }
        if i == last {
            map.push_str("  local: *;\n");
        }
        map.push_str("};\n");
    }
    Some((c, map))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_has_its_list_and_the_script_names_each_symbol_once() {
        // RCCL has rules but no committed list: a stand-in follows a root's stock.
        for f in FAMILIES.iter().filter(|f| f.stem != "librccl") {
            let (symbols, _) = list(f.stem).unwrap_or_else(|| panic!("no list for {}", f.stem));
            assert!(!symbols.is_empty(), "{}", f.stem);
            let (_, map) = stubs_and_script(f.stem, &[], "rocm_pin_identity", None).unwrap();
            for s in &symbols {
                assert_eq!(
                    map.matches(&format!("\"{}\";", s.name)).count(),
                    1,
                    "{}: {}",
                    f.stem,
                    s.name
                );
            }
        }
        let (symbols, nodes) = list("libhsa-runtime64").unwrap();
        assert_eq!(nodes, ["ROCR_1"]);
        assert!(symbols
            .iter()
            .any(|s| s.name == "hsa_agent_iterate_isas" && s.node.as_deref() == Some("ROCR_1")));
    }

    #[test]
    fn a_family_without_a_committed_list_follows_the_root_alone() {
        let empty = tempfile::tempdir().unwrap();
        let (symbols, nodes) = list_like("librccl", empty.path()).unwrap().unwrap();
        assert!(symbols.is_empty() && nodes.is_empty());
        assert!(list_like("libunknown", empty.path()).unwrap().is_none());
        let listed = vec![
            AbiSymbol {
                function: true,
                name: "ncclGetErrorString".into(),
                node: None,
                size: 0,
            },
            AbiSymbol {
                function: false,
                name: "_ZTV5Thing".into(),
                node: None,
                size: 24,
            },
        ];
        let (c, map) =
            stubs_and_script_from("librccl", (listed, vec![]), &[], "rocm_pin_identity", None)
                .unwrap();
        // Unversioned like Debian's librccl.so.1: one anonymous node.
        assert_eq!(
            map,
            " {\n  global:\n    \"ncclGetErrorString\";\n    \"_ZTV5Thing\";\n    \"rocm_pin_identity\";\n  local: *;\n};\n"
        );
        assert!(c.contains("const char *ncclGetErrorString(int r)"), "{c}");
        assert!(
            c.contains("standin_object_1[24] __asm__(\"_ZTV5Thing\")"),
            "{c}"
        );
    }
}
