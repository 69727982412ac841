//! docs/ci.md's CI jobs, run as written: the verify step of the GitHub Actions job and the
//! `script:` of the GitLab CI job are taken from the page and run with bash (`-eo pipefail`, as
//! both CI systems run them) against images pushed to the loopback registry of `scripts/images
//! registry` (Debian's docker-registry on 127.0.0.1), fetched by rocm-pin with Debian's skopeo.
//! The images: the stand-in ROCm base of `scripts/images base` with the replacement packages
//! installed by `rocm-pin install` (buildah, offline), and the same image after a later
//! `dpkg -i --force-all` of the stock hip-runtime-amd — the revert the page says fails the
//! pipeline, with the exit code and JSON fields it documents.
//!
//! Needs root (image storage, runc), the OCI tools (scripts/install-deps) and the cached
//! bookworm-apt tarball (scripts/test-setup).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use crate::util::*;
use rocm_pin_testkit::must;

const DOC: &str = "docs/ci.md";

/// The ```yaml block that follows `heading` in the page.
fn yaml_after<'a>(doc: &'a str, heading: &str) -> &'a str {
    let at = doc
        .find(heading)
        .unwrap_or_else(|| panic!("{DOC} has no {heading:?}"));
    let start = at
        + doc[at..]
            .find("```yaml\n")
            .unwrap_or_else(|| panic!("no yaml block after {heading:?}"))
        + "```yaml\n".len();
    let end = start + doc[start..].find("```\n").expect("an unterminated block");
    &doc[start..end]
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The GitHub job's `run: |` block of the step named `rocm-pin verify --image`, dedented.
fn github_verify_step(yaml: &str) -> String {
    let lines: Vec<&str> = yaml.lines().collect();
    let name = lines
        .iter()
        .position(|l| l.trim() == "- name: rocm-pin verify --image")
        .expect("the GitHub job has no step `rocm-pin verify --image`");
    let run = &lines[name + 1];
    assert_eq!(run.trim(), "run: |", "the step's run block: {run:?}");
    let body: Vec<&str> = lines[name + 2..]
        .iter()
        .copied()
        .take_while(|l| l.trim().is_empty() || indent(l) > indent(run))
        .collect();
    let cut = body.iter().map(|l| indent(l)).min().unwrap_or(0);
    body.iter()
        .map(|l| l.get(cut..).unwrap_or("").to_string() + "\n")
        .collect()
}

/// The GitLab job's `script:` items, one command a line.
fn gitlab_script(yaml: &str) -> String {
    let lines: Vec<&str> = yaml.lines().collect();
    let script = lines
        .iter()
        .position(|l| l.trim() == "script:")
        .expect("the GitLab job has no script:");
    let own = indent(lines[script]);
    lines[script + 1..]
        .iter()
        .take_while(|l| indent(l) > own)
        .map(|l| {
            let item = l.trim().strip_prefix("- ").unwrap_or_else(|| {
                panic!("script: holds {l:?}, not a one-line item (the test runs items only)")
            });
            format!("{item}\n")
        })
        .collect()
}

/// One documented step run by bash in `dir` with IMAGE set, as `user` (uid:gid) or root.
fn run_step(
    script: &str,
    image: &str,
    dir: &Path,
    env: &BTreeMap<String, String>,
    user: Option<&str>,
) -> Output {
    let bin_dir = bin().parent().unwrap().to_path_buf();
    let mut cmd = match user {
        Some(ids) => {
            let (uid, gid) = ids.split_once(':').unwrap();
            let mut c = Command::new("setpriv");
            c.args([
                &format!("--reuid={uid}"),
                &format!("--regid={gid}"),
                "--clear-groups",
                "bash",
            ]);
            c
        }
        None => Command::new("bash"),
    };
    let t = Instant::now();
    let out = cmd
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
        .current_dir(dir)
        .env_clear()
        .envs(env)
        .env(
            "PATH",
            format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", bin_dir.display()),
        )
        .env("HOME", dir)
        .env("TMPDIR", dir)
        .env("IMAGE", image)
        .output()
        .unwrap();
    eprintln!(
        "images_ci_doc: step as {} on {image} -> exit {} in {:.1}s",
        user.unwrap_or("root"),
        rc(&out),
        t.elapsed().as_secs_f64()
    );
    out
}

/// Our packages for the stand-in stock 7.2.4 set `scripts/images base` installs: the stand-in
/// source built by `rocm-pin build` and packaged against that set's .debs. Returns
/// (directory of our .debs, commit).
fn our_packages(work: &Path) -> (PathBuf, String) {
    let stock = work.join("stock");
    must(
        Command::new(bin())
            .args(["standin", "stock", "--rocm-version", "7.2.4", "--out"])
            .arg(&stock),
    );
    let src_parent = work.join("src");
    std::fs::create_dir_all(&src_parent).unwrap();
    let commit = add_standin_source(&src_parent);
    let staging = rocm_pin_testkit::build_standin_staging(
        &bin(),
        &src_parent.join("rocm-systems"),
        &commit,
        work,
    );
    let deb = |prefix: &str| -> PathBuf {
        std::fs::read_dir(stock.join("debs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("{prefix}_"))
            })
            .unwrap_or_else(|| panic!("no {prefix}_*.deb in the stand-in stock set"))
    };
    let ours = work.join("ours");
    must(
        Command::new(bin())
            .args(["package", "--quiet", "--staging"])
            .arg(&staging)
            .arg("--stock-deb")
            .arg(deb("hsa-rocr"))
            .arg(deb("hip-runtime-amd"))
            .arg("--out")
            .arg(&ours),
    );
    (ours, commit)
}

/// A new image `tag`: `from` with `copies` copied in, `script` run in it by buildah (offline),
/// and `labels` set.
fn derive(
    tools: &Tools,
    (from, tag): (&str, &str),
    copies: &[(&Path, &str)],
    script: &str,
    labels: &[String],
) {
    let ctr = tools
        .ok("buildah", &["from", "--quiet", from])
        .trim()
        .to_string();
    for (host, inside) in copies {
        tools.ok(
            "buildah",
            &["copy", "--quiet", &ctr, host.to_str().unwrap(), inside],
        );
    }
    let out = tools.run(
        "buildah",
        &["run", "--network", "none", &ctr, "--", "sh", "-c", script],
    );
    if rc(&out) != 0 {
        let _ = tools.run("buildah", &["rm", &ctr]);
        panic!("buildah run {script:?} in {from}:\n{}", tail(&out));
    }
    for label in labels {
        tools.ok("buildah", &["config", "--label", label, &ctr]);
    }
    tools.ok("buildah", &["commit", "--quiet", "--rm", &ctr, tag]);
}

#[test]
fn ci_doc_jobs_pass_a_good_published_image_and_fail_a_reverted_one() {
    rocm_pin_testkit::needs_root!("image storage and runc");
    let _serial = crate::util::one_image_test_at_a_time();
    let t0 = Instant::now();
    let doc = std::fs::read_to_string(repo_dir().join(DOC)).unwrap();
    let github = github_verify_step(yaml_after(&doc, "## GitHub Actions"));
    let gitlab = gitlab_script(yaml_after(&doc, "## GitLab CI"));
    for step in [&github, &gitlab] {
        assert!(
            step.contains("rocm-pin verify --image \"$IMAGE\" --json"),
            "the documented step does not run verify --image --json:\n{step}"
        );
    }

    let run = ImageRun::start("ci-doc", "ci-doc-");
    let (w, tools, run_id) = (run.work.path(), &run.tools, run.run_id.as_str());
    let tag = |name: &str| run.tag(name);
    let (good, reverted) = (tag("good"), tag("reverted"));
    let _tags = Tags {
        tools,
        tags: vec![good.clone(), reverted.clone()],
    };

    // --- the images: ours installed; then a later layer forcing the stock HIP back in -------
    let base = images_ok(&["base"]);
    let (ours, commit) = our_packages(w);
    derive(
        tools,
        (&base, &good),
        &[(&bin(), "/usr/local/bin/rocm-pin"), (&ours, "/tmp/ours/")],
        "rocm-pin install --no-rollback /tmp/ours/*.deb && rm -rf /tmp/ours",
        &[format!("io.rocm-pin.commit={commit}")],
    );
    derive(
        tools,
        (&good, &reverted),
        &[],
        "dpkg -i --force-all /srv/rocm-stock/hip-runtime-amd_*.deb",
        &[],
    );

    // --- published: pushed to the loopback registry; CI fetches them from there -------------
    let registry = Registry::start();
    // The registry's address is in registries.conf only once it runs: read the env again.
    let tools = Tools { env: tool_env() };
    let published = |name: &str| format!("{}/rocm-pin-ci-doc:{name}-{run_id}", registry.0);
    for (local, name) in [(&good, "good"), (&reverted, "reverted")] {
        tools.ok(
            "buildah",
            &[
                "push",
                "--quiet",
                local,
                &format!("docker://{}", published(name)),
            ],
        );
    }

    // GitHub's runners run steps as an unprivileged user; GitLab's job container as root.
    for (ci, step, user) in [("github", &github, Some(NOBODY)), ("gitlab", &gitlab, None)] {
        for (name, want_rc) in CI_IMAGES {
            let dir = w.join(format!("{ci}-{name}"));
            std::fs::create_dir_all(&dir).unwrap();
            if user.is_some() {
                must(Command::new("chown").arg(NOBODY).arg(&dir));
            }
            let image = published(name);
            let out = run_step(step, &image, &dir, &tools.env, user);
            judge_ci_step(
                (ci, name, *want_rc),
                &out,
                &dir.join("verify.json"),
                &image,
                &doc,
            );
        }
    }
    drop(registry);
    eprintln!(
        "images_ci_doc: end to end in {:.1}s",
        t0.elapsed().as_secs_f64()
    );
}

/// An image CI checks: (its name, the exit the documented step must give on it).
const CI_IMAGES: &[(&str, i32)] = &[("good", 0), ("reverted", 1)];
const NOBODY: &str = "65534:65534";

/// The documented step of `ci` on the `name` image (`image`) gave `out` and wrote
/// `verify_json`: the exit is `want_rc`, the report names the image and says ok or not, one
/// output line per failed check; on the reverted image the stock HIP's stock-absent check
/// fails, and every failed check is in the doc's table.
fn judge_ci_step(
    (ci, name, want_rc): (&str, &str, i32),
    out: &Output,
    verify_json: &Path,
    image: &str,
    doc: &str,
) {
    let shown = format!("{ci} step on the {name} image:\n{}", text(out));
    assert_eq!(rc(out), want_rc, "{shown}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(verify_json).unwrap())
        .unwrap_or_else(|e| panic!("verify.json: {e}\n{shown}"));
    assert_eq!(report["ok"], want_rc == 0, "{report:#}");
    assert!(
        report["root"]
            .as_str()
            .is_some_and(|r| r.starts_with("image ") && r.contains(image)),
        "root names the image: {report:#}"
    );
    let failed: Vec<(String, String)> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ok"] == false)
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["subject"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let prefix = if ci == "github" { "::error " } else { "FAIL " };
    let shown_lines = stdout.lines().filter(|l| l.starts_with(prefix)).count();
    assert_eq!(
        shown_lines,
        failed.len(),
        "one line per failed check:\n{shown}"
    );
    eprintln!("images_ci_doc: {ci} step's output on the {name} image:\n{stdout}");
    if want_rc == 0 {
        assert!(failed.is_empty(), "{shown}");
        return;
    }
    // The revert: the stock HIP is installed again; the page names that check.
    assert!(
        failed.contains(&("stock-absent".into(), "hip-runtime-amd".into())),
        "no failed stock-absent check for hip-runtime-amd: {failed:?}\n{shown}"
    );
    assert!(
        stdout.contains("stock-absent") && stdout.contains("hip-runtime-amd"),
        "{shown}"
    );
    for (check, _) in &failed {
        assert!(
            doc.contains(&format!("| `{check}` |")),
            "the reverted image fails `{check}`, which {DOC}'s table of checks does not list"
        );
    }
}
