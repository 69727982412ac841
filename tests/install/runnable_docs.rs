//! The docs' runnable shell blocks, run as written (issue 36): every ```sh block of README.md
//! and docs/*.md that follows a `<!-- runnable: WHERE… -->` line (CONTRIBUTING.md, "Runnable
//! docs") runs with `bash -eo pipefail`, so a block that drifts from the tool is a red test.
//!
//! WHERE says what the block needs (one or more, space-separated): `scratch` (a scratch
//! directory on this machine, nothing written outside it; the rocm-pin under test first on
//! PATH) and `amd-host` (a bookworm chroot with the stand-in ROCm 7.2.4 stock set installed
//! through apt, as an AMD ROCm host has it) run here, each block on its own, in a working
//! directory holding `debs/` (replacement packages `rocm-pin package` made from the stand-in
//! runtime; in `amd-host`, against the stock set installed there) and `examples/` (a copy of the
//! checkout's). The `*-build-host` places (a host with build tools, the blocks of one page run in
//! order in one chroot from an empty directory: docs/try.md) are run by tests/install/try_doc.rs.
//! `sudo` in a chroot is a shim that runs its arguments: the chroot's user is root already.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::{artifacts, bin, fresh, must, rc, text};
use rocm_pin_kit::sandbox::Sandbox;

/// Where a runnable block runs (the marker's WHERE).
pub const WHERE: &[&str] = &[
    "scratch",
    "amd-host",
    "amd-build-host",
    "debian-7.2.4-build-host",
    "debian-6.4.3-build-host",
];

/// One marked block: the file, its line, where it runs, and the script.
#[derive(Debug, Clone)]
pub struct DocBlock {
    pub file: String,
    pub line: usize,
    pub places: Vec<String>,
    pub script: String,
}

impl DocBlock {
    pub fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

fn docs() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut in_docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    in_docs.sort();
    files.extend(in_docs);
    files
}

/// The marked blocks of one markdown text. A marker not followed by a ```sh block, or naming
/// an unknown WHERE, is an error: a typo must not turn a check off silently.
pub fn parse_blocks(file: &str, text: &str) -> Result<Vec<DocBlock>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.trim().strip_prefix("<!-- runnable") else {
            continue;
        };
        let at = format!("{file}:{}", i + 1);
        let places: Vec<String> = rest
            .strip_suffix("-->")
            .and_then(|r| r.trim().strip_prefix(':'))
            .map(|r| r.split_whitespace().map(str::to_string).collect())
            .ok_or_else(|| format!("{at}: write the marker as `<!-- runnable: WHERE -->`"))?;
        if places.is_empty() {
            return Err(format!("{at}: the marker names no WHERE"));
        }
        if let Some(bad) = places.iter().find(|p| !WHERE.contains(&p.as_str())) {
            return Err(format!("{at}: unknown WHERE {bad:?}, not one of {WHERE:?}"));
        }
        if !matches!(
            lines.get(i + 1).map(|l| l.trim()),
            Some("```sh" | "```bash")
        ) {
            return Err(format!(
                "{at}: the marker must be followed by a ```sh block"
            ));
        }
        let body: Vec<&str> = lines[i + 2..]
            .iter()
            .copied()
            .take_while(|l| l.trim() != "```")
            .collect();
        if i + 2 + body.len() >= lines.len() {
            return Err(format!("{at}: the block is not closed"));
        }
        blocks.push(DocBlock {
            file: file.to_string(),
            line: i + 2,
            places,
            script: body.iter().map(|l| format!("{l}\n")).collect(),
        });
    }
    Ok(blocks)
}

/// Every marked block of README.md and docs/*.md.
pub fn runnable_blocks() -> Vec<DocBlock> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    for path in docs() {
        let name = path.strip_prefix(&root).unwrap().display().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        all.extend(parse_blocks(&name, &text).unwrap_or_else(|e| panic!("{e}")));
    }
    all
}

/// The marked blocks that run in `place`, in page order.
pub fn blocks_for(place: &str) -> Vec<DocBlock> {
    runnable_blocks()
        .into_iter()
        .filter(|b| b.places.iter().any(|p| p == place))
        .collect()
}

/// Replacement .debs of the stand-in runtime in `dir/debs`, made without root: a gcc-built
/// staging packaged against the stand-in stock set.
fn scratch_debs(dir: &Path, work: &Path) {
    use rocm_pin_kit::standin::StockRole;
    use rocm_pin_testkit::staging::{
        build_staging, commit_args, default_spec, stock_set, StagingSpec,
    };
    let staging = work.join("staging");
    build_staging(&staging, &StagingSpec::default());
    let stock = stock_set(&work.join("stock"), default_spec());
    must(
        Command::new(bin())
            .args(["package", "--quiet", "--staging"])
            .arg(&staging)
            .args(commit_args())
            .arg("--stock-deb")
            .arg(&stock.require(StockRole::HsaRocr).unwrap().deb)
            .arg(&stock.require(StockRole::HipRuntime).unwrap().deb)
            .arg("--out")
            .arg(dir.join("debs")),
    );
}

fn run_scratch(block: &DocBlock, dir: &Path) -> Output {
    let bin_dir = bin().parent().unwrap().to_path_buf();
    Command::new("bash")
        .args([
            "--noprofile",
            "--norc",
            "-eo",
            "pipefail",
            "-c",
            &block.script,
        ])
        .current_dir(dir)
        .env_clear()
        .env(
            "PATH",
            format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", bin_dir.display()),
        )
        .env("HOME", dir)
        .env("TMPDIR", dir)
        .env("LC_ALL", "C")
        .output()
        .unwrap()
}

#[test]
fn every_runnable_marker_is_well_formed_and_the_parser_refuses_a_bad_one() {
    for place in ["scratch", "amd-host"] {
        let blocks = blocks_for(place);
        assert!(
            blocks.len() >= 2,
            "fewer than two `{place}` blocks are marked: {blocks:#?}"
        );
    }
    let bad = [
        "<!-- runnable: moon -->\n```sh\ntrue\n```\n",
        "<!-- runnable: scratch -->\n\n```sh\ntrue\n```\n",
        "<!-- runnable: scratch -->\n```sh\ntrue\n",
        "<!-- runnable scratch -->\n```sh\ntrue\n```\n",
        "<!-- runnable: -->\n```sh\ntrue\n```\n",
        "<!-- runnable: scratch moon -->\n```sh\ntrue\n```\n",
    ];
    for text in bad {
        assert!(parse_blocks("x.md", text).is_err(), "accepted {text:?}");
    }
    let good = parse_blocks(
        "x.md",
        "a\n<!-- runnable: scratch -->\n```sh\necho hi\n```\n",
    )
    .unwrap();
    assert_eq!(good.len(), 1);
    assert_eq!((good[0].line, good[0].script.as_str()), (3, "echo hi\n"));
    let two = parse_blocks(
        "x.md",
        "<!-- runnable: scratch amd-host -->\n```sh\nx\n```\n",
    )
    .unwrap();
    assert_eq!(two[0].places, ["scratch", "amd-host"]);
}

/// The `scratch` blocks, each in a fresh directory holding `debs/` and `examples/`.
#[test]
fn runnable_scratch_blocks_run_as_written() {
    let work = tempfile::tempdir().unwrap();
    let fixture = work.path().join("fixture");
    std::fs::create_dir_all(&fixture).unwrap();
    scratch_debs(&fixture, work.path());
    must(
        Command::new("cp")
            .arg("-a")
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples"))
            .arg(fixture.join("examples")),
    );
    for (n, block) in blocks_for("scratch").iter().enumerate() {
        let dir = work.path().join(format!("block{n}"));
        must(Command::new("cp").arg("-a").arg(&fixture).arg(&dir));
        let t = std::time::Instant::now();
        let out = run_scratch(block, &dir);
        eprintln!(
            "runnable_docs: {} (scratch) -> exit {} in {:.1}s",
            block.at(),
            rc(&out),
            t.elapsed().as_secs_f64()
        );
        assert_eq!(
            rc(&out),
            0,
            "{} no longer runs as written:\n{}\n{}",
            block.at(),
            block.script,
            text(&out)
        );
    }
}

/// The `amd-host` blocks, each in a fresh chroot with the stand-in stock set installed and
/// `debs/` (our packages, made against that set) in its working directory.
#[test]
fn runnable_amd_host_blocks_run_as_written_in_a_chroot() {
    rocm_pin_testkit::needs_root!("a chroot");
    let a = artifacts("bookworm");
    for block in blocks_for("amd-host") {
        let sb = fresh(a, &a.stock_snapshot);
        sb.copy_in(&a.ours_dir, "/root/doc/debs").unwrap();
        // The chroot's user is root: sudo only runs its arguments.
        sb.write("/usr/local/bin/sudo", "#!/bin/sh\nexec \"$@\"\n")
            .unwrap();
        must(
            Command::new("chmod")
                .arg("755")
                .arg(sb.path("/usr/local/bin/sudo")),
        );
        run_block_in(
            &sb,
            &block,
            "/root/doc",
            "/root/doc/block.sh",
            "a chroot (amd-host)",
        );
    }
}

/// Run `block` as written in the chroot `sb`: its text in `script`, sourced by `bash -eo
/// pipefail` from `workdir`; it must exit 0 (`place` names the host in the messages).
pub fn run_block_in(sb: &Sandbox, block: &DocBlock, workdir: &str, script: &str, place: &str) {
    sb.write(script, &block.script).unwrap();
    let t = std::time::Instant::now();
    let out = sb
        .run(&[
            "bash",
            "--noprofile",
            "--norc",
            "-eo",
            "pipefail",
            "-c",
            &format!("cd {workdir} && . {script}"),
        ])
        .unwrap();
    eprintln!(
        "{} in {place} -> exit {} in {:.1}s\n{}",
        block.at(),
        rc(&out),
        t.elapsed().as_secs_f64(),
        text(&out)
    );
    assert_eq!(
        rc(&out),
        0,
        "{} does not run as written in {place}:\n{}\n{}",
        block.at(),
        block.script,
        text(&out)
    );
}
