//! Symlinks of an unpacked image as the host would follow them: a relative link checked alone
//! may stay inside the root (`a/b -> ../x/x/x/../..` climbs one level from `a`) and still
//! leave it through the links already there (`x -> .`: every `x` stays at the root, so the
//! last `..` is the root's parent). A link is checked by resolving its target in the tree as
//! it stands: each component looked up, each link followed (an absolute one from the image
//! root, as a resolver confined to the root reads it), `..` taken from the directory actually
//! reached. A missing component or a file counts as a directory, so a link that would leave
//! once a later entry fills the gap is refused too; the tree check after the last layer sees
//! what later entries changed.
//!
//! Cost: every step (a component, one `lstat`) comes out of a [`LinkSteps`] allowance that
//! grows by a fixed amount per link checked, so the checks stay linear in the layer's entries
//! however the links chain.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::deb::tar::shown_name;
use crate::image::invalid;

/// Steps each link checked adds to the allowance: real links (`libx.so -> libx.so.1`,
/// `../../lib/x86_64-linux-gnu/libx.so.1`, through `/lib -> usr/lib`) take well under 64.
const STEPS_PER_LINK: u64 = 64;
/// Steps any check may take whatever the links before it used.
const STEPS_SLACK: u64 = 1 << 16;
/// Links followed in one resolution: Linux gives up with ELOOP after 40, leaving nothing.
const MAX_FOLLOWS: usize = 40;
/// Links named in an error.
const SHOWN_HOPS: usize = 3;

/// The work the symlink checks of one pass may still do.
pub(crate) struct LinkSteps {
    left: u64,
    checked: u64,
}

impl LinkSteps {
    pub(crate) fn new() -> Self {
        LinkSteps {
            left: STEPS_SLACK,
            checked: 0,
        }
    }

    /// One more link is checked: its share of steps.
    pub(crate) fn allow_one(&mut self) {
        self.checked += 1;
        self.left = self.left.saturating_add(STEPS_PER_LINK);
    }

    fn take(&mut self) -> anyhow::Result<()> {
        if self.left == 0 {
            return Err(invalid(format!(
                "the image's symlinks chain through one another more than the unpacker checks ({} steps for {} links, {STEPS_PER_LINK} a link): it cannot tell they stay inside the image root, so the image is refused",
                STEPS_SLACK + self.checked * STEPS_PER_LINK,
                self.checked
            )));
        }
        self.left -= 1;
        Ok(())
    }
}

/// Why the symlink in directory `dirs` (components below `root`, real directories) with
/// `target` leaves the root when the host follows it; None when it stays inside (or the host
/// would stop: a loop).
pub(crate) fn escapes(
    root: &Path,
    dirs: &[impl AsRef<OsStr>],
    target: &str,
    steps: &mut LinkSteps,
) -> anyhow::Result<Option<String>> {
    let mut at = root.to_path_buf();
    let mut depth = 0usize;
    if !target.starts_with('/') {
        for d in dirs {
            at.push(d.as_ref());
            depth += 1;
        }
    }
    let mut pending: Vec<Vec<u8>> = reversed_parts(target.as_bytes());
    let mut hops: Vec<String> = Vec::new();
    let mut follows = 0usize;
    while let Some(part) = pending.pop() {
        steps.take()?;
        match part.as_slice() {
            b"" | b"." => {}
            b".." if depth == 0 => return Ok(Some(leaves(&hops))),
            b".." => {
                at.pop();
                depth -= 1;
            }
            name => {
                let next = at.join(OsStr::from_bytes(name));
                match fs::symlink_metadata(&next) {
                    Ok(m) if m.file_type().is_symlink() => {
                        if follows >= MAX_FOLLOWS {
                            return Ok(None);
                        }
                        let to = fs::read_link(&next)?;
                        let to = to.as_os_str().as_bytes();
                        let this = hop(root, &next, to);
                        if hops.last() != Some(&this) {
                            hops.push(this);
                        }
                        follows += 1;
                        if to.starts_with(b"/") {
                            at = root.to_path_buf();
                            depth = 0;
                        }
                        pending.extend(reversed_parts(to));
                    }
                    _ => {
                        at = next;
                        depth += 1;
                    }
                }
            }
        }
    }
    Ok(None)
}

fn reversed_parts(path: &[u8]) -> Vec<Vec<u8>> {
    path.split(|&b| b == b'/')
        .rev()
        .map(<[u8]>::to_vec)
        .collect()
}

fn hop(root: &Path, link: &Path, to: &[u8]) -> String {
    let rel = link.strip_prefix(root).unwrap_or(link);
    format!(
        "{:?} -> {:?}",
        shown_name(rel.as_os_str().as_bytes()),
        shown_name(to)
    )
}

fn leaves(hops: &[String]) -> String {
    if hops.is_empty() {
        return "points outside the image root".to_string();
    }
    let more = if hops.len() > SHOWN_HOPS { ", …" } else { "" };
    format!(
        "leaves the image root when followed (through {}{more})",
        hops[..hops.len().min(SHOWN_HOPS)].join(", ")
    )
}

/// After the last layer: no symlink of the tree under `root` may leave it when the host
/// follows it (a later entry can turn a link that stayed inside when written into one that
/// leaves). One walk, each link resolved within the shared step allowance; `interrupted`
/// is asked every 4096 entries.
pub(crate) fn check_tree(
    root: &Path,
    interrupted: &dyn Fn() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut steps = LinkSteps::new();
    let walk = walkdir::WalkDir::new(root).follow_links(false).min_depth(1);
    for (i, entry) in walk.into_iter().enumerate() {
        if i % 4096 == 0 {
            interrupted()?;
        }
        let entry = entry.map_err(|e| invalid(format!("walking the unpacked image: {e}")))?;
        if !entry.path_is_symlink() {
            continue;
        }
        let link = entry.path();
        let rel = link.strip_prefix(root).unwrap_or(link);
        let dirs: Vec<&OsStr> = rel.parent().map(|p| p.iter().collect()).unwrap_or_default();
        let target = fs::read_link(link)?;
        let Some(target_text) = target.to_str() else {
            continue; // the unpacker only writes UTF-8 targets
        };
        steps.allow_one();
        if let Some(why) = escapes(root, &dirs, target_text, &mut steps)? {
            return Err(invalid(format!(
                "image refused: symlink {:?} -> {:?} {why}: an entry after it changed where it leads",
                shown_name(rel.as_os_str().as_bytes()),
                shown_name(target_text.as_bytes())
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn check(root: &Path, dir: &[&str], target: &str) -> Option<String> {
        escapes(root, dir, target, &mut LinkSteps::new()).unwrap()
    }

    #[test]
    fn a_chain_through_a_link_to_dot_leaves_the_root() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        fs::create_dir(root.join("a")).unwrap();
        // Alone, the target climbs one level from `a`: inside.
        assert_eq!(check(root, &["a"], "../x/x/x/../.."), None);
        symlink(".", root.join("x")).unwrap();
        let why = check(root, &["a"], "../x/x/x/../..").expect("escapes");
        assert!(why.contains("\"x\" -> \".\""), "{why}");
        // Real links stay inside: through `/lib -> usr/lib`, and climbing from a real depth.
        fs::create_dir_all(root.join("usr/lib/x86_64-linux-gnu")).unwrap();
        fs::create_dir_all(root.join("usr/bin")).unwrap();
        symlink("usr/lib", root.join("lib")).unwrap();
        assert_eq!(
            check(root, &["usr", "bin"], "../../lib/x86_64-linux-gnu/../../.."),
            None
        );
        assert!(check(root, &["usr", "bin"], "../../lib/../../..").is_some());
        // An absolute link is read from the image root, as the in-root resolver reads it.
        symlink("/", root.join("top")).unwrap();
        assert_eq!(check(root, &[], "top/usr/.."), None);
        assert!(check(root, &[], "top/..").is_some());
    }

    #[test]
    fn loops_stop_and_long_chains_run_out_of_steps() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        symlink("b", root.join("a")).unwrap();
        symlink("a", root.join("b")).unwrap();
        assert_eq!(check(root, &[], "a/.."), None);
        let mut steps = LinkSteps {
            left: 3,
            checked: 0,
        };
        let err = escapes(root, &[] as &[&str], "x/y/z/w", &mut steps).unwrap_err();
        assert!(
            format!("{err}").contains("chain through one another"),
            "{err}"
        );
    }
}
