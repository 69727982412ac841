//! The stand-in shaped like a root's stock runtime (`rocm-pin standin source --like ROOT`): the
//! embedded tree ([`super::tree`]) with the ABI lists ([`super::abi`]) and the HIP major taken
//! from the root. Its own module so the tree and the lists need not know each other.

use std::path::Path;

use super::abi;
use super::tree::{self, STANDIN_FILES};

/// [`tree::write_standin_checkout`] shaped like `root`'s stock runtime (`rocm-pin standin source
/// --like`): the HIP major of the root's `libamdhip64` (Debian's 6.4.3 ships `.so.6`) and ABI
/// lists widened to every symbol the root's stock libraries export
/// ([`abi::list_like`]), so the stand-in packages against that root's stock whatever
/// upload it holds. The commit id then depends on the root.
pub fn write_standin_checkout_like(dest: &Path, root: &Path) -> anyhow::Result<String> {
    let mut overrides = Vec::new();
    for (rel, _) in STANDIN_FILES {
        let Some(stem) = rel
            .strip_prefix("cmake/abi/")
            .and_then(|f| f.strip_suffix(".abi"))
        else {
            continue;
        };
        if let Some((symbols, nodes)) = abi::list_like(stem, root)? {
            let source = format!(
                "the committed list and {}'s stock libraries",
                root.display()
            );
            overrides.push((rel.to_string(), abi::render(&symbols, &nodes, &source)));
        }
    }
    if let Some(major) = abi::hip_major_in(root)? {
        let (rel, version) = STANDIN_FILES
            .iter()
            .find(|(p, _)| *p == "projects/hip/VERSION")
            .expect("the stand-in has projects/hip/VERSION");
        overrides.push((rel.to_string(), with_hip_major(version, major)));
    }
    tree::write_checkout(dest, &overrides)
}

/// projects/hip/VERSION with its major (the line after `#HIP_VERSION_MAJOR`) set to `major`.
fn with_hip_major(version: &str, major: u32) -> String {
    let mut out = String::new();
    let mut next_is_major = false;
    for line in version.lines() {
        if next_is_major {
            out.push_str(&major.to_string());
        } else {
            out.push_str(line);
        }
        out.push('\n');
        next_is_major = line.trim() == "#HIP_VERSION_MAJOR";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hip_major_line_is_replaced_and_nothing_else() {
        let (_, version) = STANDIN_FILES
            .iter()
            .find(|(p, _)| *p == "projects/hip/VERSION")
            .unwrap();
        let six = with_hip_major(version, 6);
        let lines: Vec<&str> = six.lines().collect();
        let at = lines
            .iter()
            .position(|l| *l == "#HIP_VERSION_MAJOR")
            .unwrap();
        assert_eq!(lines[at + 1], "6");
        let before: Vec<&str> = version.lines().collect();
        assert_eq!(lines.len(), before.len());
        for (n, (new, old)) in lines.iter().zip(&before).enumerate() {
            assert!(
                n == at + 1 || new == old,
                "line {n}: {old:?} became {new:?}"
            );
        }
    }
}
