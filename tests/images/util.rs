//! Shared by the image tests (tests/images/buildah.rs, tests/images/adopt.rs, tests/images/buildkit.rs,
//! tests/images/tool.rs, tests/images/ci_doc.rs): `scripts/images` with this test's cache and binary, the OCI tools in its
//! environment (buildah, podman, skopeo), the images a test tagged removed when it ends, and
//! `rocm-pin verify --image`.

use rocm_pin_testkit::assert_success;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

/// The image tests share this machine's container storage (`podman image prune` when one
/// ends), the one loopback registry of `scripts/images registry` (stopped by the test that
/// started it) and the one BuildKit daemon. As separate test binaries they never overlapped;
/// in one binary each holds this for its whole run, so they still do not.
pub fn one_image_test_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A failed test poisons the lock; the next one must still run.
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The loopback registry of `scripts/images registry` (its HOST:PORT), stopped when the test
/// ends, however it ends.
pub struct Registry(pub String);

impl Registry {
    pub fn start() -> Registry {
        let registry = Registry(images_ok(&["registry"]));
        assert!(
            registry.0.starts_with("127.0.0.1:"),
            "registry not on loopback: {}",
            registry.0
        );
        registry
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let out = images(&["registry", "--stop"]);
        if !out.status.success() {
            eprintln!("stopping the registry failed: {}", text(&out));
        }
    }
}

/// A repository signing key made by `rocm-pin repo keygen` in `dir`, and one line from the
/// middle of its secret body: the marker the tests grep image layers and caches for, so the
/// secret half is proved never to land in them.
pub fn signing_key(dir: &Path) -> (PathBuf, String) {
    let key = dir.join("rocm-pin-key.asc");
    let out = Command::new(bin())
        .args(["repo", "keygen", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    assert_success(&out, "the command");
    let key_text = std::fs::read_to_string(&key).unwrap();
    let body: Vec<&str> = key_text
        .lines()
        .filter(|l| l.len() >= 40 && !l.contains(' ') && !l.starts_with('-'))
        .collect();
    assert!(!body.is_empty(), "no base64 body in the key:\n{key_text}");
    let marker = body[body.len() / 2].to_string();
    (key, marker)
}

pub fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The rocm-pin binary under test.
pub fn bin() -> PathBuf {
    rocm_pin_testkit::rocm_pin_bin!()
}

pub use rocm_pin_testkit::runtime::runtime_is_patched;
pub use rocm_pin_testkit::{cache_dir, labeled as text, must, rc, tail};

pub fn stdout_last_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or("")
        .trim()
        .to_string()
}

/// `scripts/images …` with this test's cache and binary.
pub fn images(args: &[&str]) -> Output {
    let t = Instant::now();
    let out = Command::new(repo_dir().join("scripts/images"))
        .args(args)
        .env("ROCM_PIN_CACHE", cache_dir())
        .env("ROCM_PIN_BIN", bin())
        .output()
        .expect("run scripts/images");
    eprintln!(
        "images: scripts/images {} -> exit {} in {:.1}s",
        args.join(" "),
        rc(&out),
        t.elapsed().as_secs_f64()
    );
    out
}

pub fn images_ok(args: &[&str]) -> String {
    let out = images(args);
    assert_eq!(rc(&out), 0, "scripts/images {args:?}:\n{}", text(&out));
    stdout_last_line(&out)
}

/// The environment `scripts/images env` prints (CONTAINERS_CONF, …).
pub fn tool_env() -> BTreeMap<String, String> {
    let out = images(&["env"]);
    assert_eq!(rc(&out), 0, "{}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub struct Tools {
    pub env: BTreeMap<String, String>,
}

impl Tools {
    pub fn run(&self, program: &str, args: &[&str]) -> Output {
        let t = Instant::now();
        let mut cmd = Command::new(program);
        if program == "skopeo" {
            // skopeo 1.9 reads registries.conf only from this flag (not CONTAINERS_REGISTRIES_CONF).
            cmd.arg("--registries-conf")
                .arg(&self.env["CONTAINERS_REGISTRIES_CONF"]);
        }
        let out = cmd
            .args(args)
            .envs(&self.env)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e} (scripts/install-deps)"));
        let shown: Vec<&str> = args.iter().copied().filter(|a| a.len() < 80).collect();
        eprintln!(
            "images: {program} {} -> exit {} in {:.1}s",
            shown.join(" "),
            rc(&out),
            t.elapsed().as_secs_f64()
        );
        out
    }

    pub fn ok(&self, program: &str, args: &[&str]) -> String {
        let out = self.run(program, args);
        assert_eq!(rc(&out), 0, "{program} {args:?}:\n{}", tail(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn exists(&self, reference: &str) -> bool {
        self.run("podman", &["image", "exists", reference])
            .status
            .success()
    }

    /// `buildah bud --layers --network none -f <ctx>/rocm-pin/<file>` with build args.
    pub fn build(&self, ctx: &Path, file: &str, tag: &str, args: &[(&str, &str)]) -> Output {
        let dockerfile = ctx.join("rocm-pin").join(file);
        let mut argv: Vec<String> = vec![
            "bud".into(),
            "--layers".into(),
            // Failed builds too: no working containers (and their mounts) left behind.
            "--force-rm".into(),
            "--network".into(),
            "none".into(),
            "-f".into(),
            dockerfile.display().to_string(),
            "-t".into(),
            tag.into(),
        ];
        for (k, v) in args {
            argv.push("--build-arg".into());
            argv.push(format!("{k}={v}"));
        }
        argv.push(ctx.display().to_string());
        let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
        self.run("buildah", &refs)
    }

    /// The image's ID.
    pub fn id(&self, reference: &str) -> String {
        self.ok(
            "podman",
            &["image", "inspect", "--format", "{{.Id}}", reference],
        )
        .trim()
        .to_string()
    }

    /// `podman run --rm --network none IMAGE sh -c SCRIPT`.
    pub fn run_in(&self, image: &str, script: &str) -> String {
        self.ok(
            "podman",
            &[&RUN_OFFLINE[..], &[image, "sh", "-c", script]].concat(),
        )
    }
}

/// Removes the images this test tagged (and the dangling layers they leave) when it ends.
pub struct Tags<'a> {
    pub tools: &'a Tools,
    pub tags: Vec<String>,
}

impl<'a> Tags<'a> {
    pub fn new(tools: &'a Tools) -> Tags<'a> {
        Tags {
            tools,
            tags: Vec::new(),
        }
    }
}

/// What an image test starts with: its work directory (`rocm-pin-images-<label>-*`), the OCI
/// tools' environment, and this run's id, which every tag it makes carries.
pub struct ImageRun {
    pub work: tempfile::TempDir,
    pub tools: Tools,
    pub run_id: String,
    tag_prefix: String,
}

impl ImageRun {
    /// `label` names the work directory; `tag_prefix` starts the name of each image tagged.
    pub fn start(label: &str, tag_prefix: &str) -> ImageRun {
        ImageRun {
            work: tempfile::Builder::new()
                .prefix(&format!("rocm-pin-images-{label}-"))
                .tempdir()
                .unwrap(),
            tools: Tools { env: tool_env() },
            run_id: format!("t{}", std::process::id()),
            tag_prefix: tag_prefix.to_string(),
        }
    }

    /// `localhost/rocm-pin-test/<tag prefix><name>:<run id>`.
    pub fn tag(&self, name: &str) -> String {
        format!(
            "localhost/rocm-pin-test/{}{name}:{}",
            self.tag_prefix, self.run_id
        )
    }
}

impl Drop for Tags<'_> {
    fn drop(&mut self) {
        for t in &self.tags {
            let _ = self.tools.run("buildah", &["rmi", "-f", t]);
        }
        let _ = self.tools.run("podman", &["image", "prune", "-f"]);
    }
}

/// Which file the loader maps for each soname, inside the image (the base image's probe).
pub fn probe_identities(tools: &Tools, image: &str) -> String {
    tools.run_in(
        image,
        "rocm-pin-loader-probe libhsa-runtime64.so.1 libamdhip64.so.7",
    )
}

pub fn verify_image(args: &[&str], env: &BTreeMap<String, String>) -> Output {
    let t = Instant::now();
    let out = Command::new(bin())
        .arg("verify")
        .args(args)
        .envs(env)
        .output()
        .unwrap();
    eprintln!(
        "images: rocm-pin verify {} -> exit {} in {:.1}s",
        args.join(" "),
        rc(&out),
        t.elapsed().as_secs_f64()
    );
    out
}

/// `run` with no network, the container removed after (podman's and docker's alike).
pub const RUN_OFFLINE: [&str; 4] = ["run", "--rm", "--network", "none"];

/// The last step of the recipe's vllm.Dockerfile (the tests derive reverting Dockerfiles from
/// it), and the RUN that puts the stock HIP back.
pub const VERIFY_LINE: &str = "RUN --mount=type=bind,from=rocm-pin-runtime,target=/tmp/rocm-pin \\\n    bash /usr/local/share/rocm-pin/docker/verify-runtime.sh\n";
pub const REVERT_LINE: &str = "RUN dpkg -i --force-all /srv/rocm-stock/hip-runtime-amd_*.deb\n";

/// `dir/ctx` with `rocm-pin/` holding docs/docker/ (the recipe's Dockerfiles and scripts): the
/// build-context layout every recipe Dockerfile expects. Returns the context.
pub fn recipe_context(dir: &Path) -> PathBuf {
    let ctx = dir.join("ctx");
    std::fs::create_dir_all(&ctx).unwrap();
    let st = Command::new("cp")
        .arg("-r")
        .arg(repo_dir().join("docs/docker"))
        .arg(ctx.join("rocm-pin"))
        .status()
        .unwrap();
    assert!(st.success());
    ctx
}

/// `ctx/rccl/`: the stand-in's custom rccl .deb the vLLM shape forces in (made under `dir/stock`).
pub fn add_custom_rccl(ctx: &Path, dir: &Path) {
    std::fs::create_dir_all(ctx.join("rccl")).unwrap();
    let stock = dir.join("stock");
    let out = Command::new(bin())
        .args(["standin", "stock", "--out"])
        .arg(&stock)
        .output()
        .unwrap();
    assert_success(&out, "the command");
    for e in std::fs::read_dir(stock.join("extra")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, ctx.join("rccl").join(p.file_name().unwrap())).unwrap();
    }
}

/// `ctx/rocm-systems/`: the stand-in ROCm source (a git checkout); returns its commit.
pub fn add_standin_source(ctx: &Path) -> String {
    let out = Command::new(bin())
        .args(["standin", "source", "--out"])
        .arg(ctx.join("rocm-systems"))
        .output()
        .unwrap();
    assert_success(&out, "the command");
    let commit = stdout_last_line(&out);
    assert_eq!(commit.len(), 40, "standin source printed {commit:?}");
    commit
}

/// A downstream build judged: its exit (`None`: any failure) and what its output must and must
/// not say (`what` names the row in every message).
pub fn assert_build_judged(
    out: &Output,
    what: &str,
    exit: Option<i32>,
    (says, says_not): (&[&str], &[&str]),
) {
    let s = text(out);
    match exit {
        Some(want) => assert_eq!(rc(out), want, "{what}:\n{}", tail(out)),
        None => assert_ne!(rc(out), 0, "{what} built:\n{}", tail(out)),
    }
    for p in says {
        assert!(s.contains(p), "{what}: no {p:?}:\n{}", tail(out));
    }
    for p in says_not {
        assert!(!s.contains(p), "{what}: {p:?}:\n{}", tail(out));
    }
}
