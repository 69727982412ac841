//! ROCm as Python wheels, with real pip and real uv (from PyPI, `scripts/setup.d/40-pip-uv.sh`)
//! in a venv, against stand-in wheels with TheRock's layout (`standin_wheels.py`, which says
//! where each fact comes from) served by a PEP 503 index over loopback HTTP: `package --wheels`
//! makes our rocm-sdk-core reproducibly, `install --venv` pins it, and the commands users run
//! afterwards either keep ours (the consumer maps it, verify passes) or fail without changing
//! the venv; what the pin cannot stop, verify catches; rollback brings stock back offline.

use rocm_pin_testkit::assert_success;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rocm_pin_testkit::gcc::{runtime_pair, torch_consumer};
use rocm_pin_testkit::http::HttpServer;
use rocm_pin_testkit::{must, needs_setup, text};

const BIN: &str = env!("CARGO_BIN_EXE_rocm-pin");
const COMMIT: &str = "b539bf7eebfd99ad0a69668caa1f4037034d501f";
const STOCK: &str = "10.0.0";
const NEWER: &str = "10.0.1";

struct Fixture {
    dir: tempfile::TempDir,
    venv: PathBuf,
    index: HttpServer,
}

impl Fixture {
    fn python_env(&self, cmd: &mut Command) {
        // The user's shell as pip and uv documentation assume it: no PIP_*/UV_* settings from
        // the machine running the tests (PIP_FIND_LINKS there would replace the venv's).
        for (k, _) in std::env::vars() {
            if k.starts_with("PIP_") || k.starts_with("UV_") {
                cmd.env_remove(k);
            }
        }
        cmd.env("PIP_CACHE_DIR", self.dir.path().join("pip-cache"))
            .env("UV_CACHE_DIR", self.dir.path().join("uv-cache"))
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .env("UV_CONFIG_FILE", self.venv.join("uv.toml"))
            .env("UV_PYTHON", self.venv.join("bin/python"))
            .current_dir(self.dir.path());
    }

    fn run(&self, argv: &[String]) -> Output {
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]);
        self.python_env(&mut cmd);
        cmd.output().unwrap()
    }

    fn sh(&self, script: &str) -> Output {
        self.run(&["sh".into(), "-c".into(), script.into()])
    }

    fn rocm_pin(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(BIN);
        cmd.args(args);
        self.python_env(&mut cmd);
        cmd.output().unwrap()
    }

    fn site(&self) -> PathBuf {
        let lib = self.venv.join("lib");
        let py = std::fs::read_dir(&lib)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .find(|n| n.to_string_lossy().starts_with("python3"))
            .unwrap();
        lib.join(py).join("site-packages")
    }

    /// What the consumer prints, and the path ld.so mapped libamdhip64.so.7 from (LD_DEBUG=files).
    fn consumer_maps(&self) -> (String, String) {
        let out = Command::new(self.site().join("torch/lib/torch_consumer"))
            .env("LD_DEBUG", "files")
            .env("LD_LIBRARY_PATH", self.dir.path().join("elf").join(STOCK))
            .output()
            .unwrap();
        assert_success(&out, "consumer");
        let debug = String::from_utf8_lossy(&out.stderr);
        // `calling init: <path>` names the file ld.so mapped for each library.
        let mapped = debug.lines().find_map(|l| {
            l.split("calling init: ")
                .nth(1)
                .filter(|p| p.contains("libamdhip64"))
        });
        (
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
            mapped.unwrap_or_default().to_string(),
        )
    }

    /// What the venv holds: every .dist-info and the bytes of the core's libraries.
    fn snapshot(&self) -> Vec<String> {
        let site = self.site();
        let mut s: Vec<String> = std::fs::read_dir(&site)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".dist-info"))
            .collect();
        for lib in ["libamdhip64.so.7", "libhsa-runtime64.so.1"] {
            let bytes =
                std::fs::read(site.join("_rocm_sdk_core/lib").join(lib)).unwrap_or_default();
            s.push(format!(
                "{lib} {}",
                hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes))
            ));
        }
        s.sort();
        s
    }

    fn assert_ours_mapped_and_verified(&self, what: &str) {
        let (printed, mapped) = self.consumer_maps();
        assert_eq!(
            printed, "PATCHED PATCHED",
            "{what}: the consumer runs the stock pair ({mapped})"
        );
        assert!(
            mapped.contains("_rocm_sdk_core/lib/libamdhip64.so.7"),
            "{what}: ld.so mapped {mapped}"
        );
        let v = self.rocm_pin(&["verify", "--venv", self.venv.to_str().unwrap()]);
        assert!(
            v.status.success(),
            "{what}: verify --venv failed:\n{}",
            text(&v)
        );
    }
}

/// Stand-in releases, the index, a venv with real pip and uv and the stock set installed
/// (devel expanded), then our wheel made twice (byte-identical) and installed with the pin.
fn fixture(pip_uv: &Path) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let elf = dir.path().join("elf");
    runtime_pair(&elf.join(STOCK), &format!("STOCK-{STOCK}"), false);
    runtime_pair(&elf.join(NEWER), &format!("STOCK-{NEWER}"), false);
    torch_consumer(&elf, &elf.join(STOCK));
    let index = dir.path().join("index");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wheels/standin_wheels.py");
    must(
        Command::new("python3")
            .arg(&script)
            .arg(&index)
            .arg(&elf)
            .args([STOCK, NEWER]),
    );
    let venv = dir.path().join("venv");
    must(
        Command::new("python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv),
    );
    let wheels: Vec<PathBuf> = std::fs::read_dir(pip_uv)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    let pip = wheels
        .iter()
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("pip-"))
        .expect("a pip wheel in the cache");
    let f = Fixture {
        dir,
        venv,
        index: HttpServer::serve(&index),
    };
    // pip runs from its own wheel to install itself (pip's documented bootstrap), then uv.
    let mut argv = vec![
        f.venv.join("bin/python").display().to_string(),
        format!("{}/pip", pip.display()),
        "install".into(),
        "-q".into(),
        "--no-index".into(),
    ];
    argv.extend(wheels.iter().map(|p| p.display().to_string()));
    assert!(f.run(&argv).status.success());
    eprintln!(
        "wheels: {} ; {}",
        text(&f.run(&[
            f.venv.join("bin/pip").display().to_string(),
            "--version".into()
        ]))
        .trim(),
        text(&f.run(&[
            f.venv.join("bin/uv").display().to_string(),
            "--version".into()
        ]))
        .trim()
    );
    let pip_install = format!(
        "{}/bin/pip install -q --index-url {}",
        f.venv.display(),
        f.index.url()
    );
    assert!(f
        .sh(&format!(
            "{pip_install} rocm-sdk-core=={STOCK} rocm-sdk-devel=={STOCK} torch"
        ))
        .status
        .success());
    must(
        Command::new("python3")
            .arg(&script)
            .arg("expand")
            .arg(f.site()),
    );
    let (printed, mapped) = f.consumer_maps();
    assert_eq!(
        printed,
        format!("STOCK-{STOCK} STOCK-{STOCK}"),
        "before the pin the consumer runs stock"
    );
    assert!(
        mapped.contains("/_rocm_sdk_core/lib/libamdhip64.so.7"),
        "RPATH decides, not LD_LIBRARY_PATH: {mapped}"
    );
    f
}

/// Our wheel, made twice into two directories; asserts the bytes are identical; returns one.
fn package_twice(f: &Fixture) -> PathBuf {
    let staging = f.dir.path().join("staging");
    runtime_pair(&staging.join("lib"), "PATCHED", true);
    let mut made = Vec::new();
    for out in ["out-a", "out-b"] {
        let out = f.dir.path().join(out);
        let o = f.rocm_pin(&[
            "package",
            "--wheels",
            "--stock-venv",
            f.venv.to_str().unwrap(),
            "--staging",
            staging.to_str().unwrap(),
            "--commit",
            COMMIT,
            "--commit-time",
            "1764720000",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_success(&o, "package --wheels");
        made.push(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    }
    assert_eq!(
        std::fs::read(&made[0]).unwrap(),
        std::fs::read(&made[1]).unwrap(),
        "two runs made different bytes"
    );
    let name = made[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("rocm_sdk_core-{STOCK}+pin.{}-", &COMMIT[..12])),
        "{name}"
    );
    made.swap_remove(0)
}

#[test]
fn downstream_pip_and_uv_commands_keep_ours_or_fail_without_change() {
    let pip_uv = needs_setup!("pip-uv");
    let f = fixture(&pip_uv);
    let ours = package_twice(&f);
    let o = f.rocm_pin(&[
        "install",
        "--venv",
        f.venv.to_str().unwrap(),
        ours.to_str().unwrap(),
    ]);
    assert_success(&o, "install --venv");
    let check = f.run(&[
        f.venv.join("bin/python").display().to_string(),
        "-m".into(),
        "pip".into(),
        "check".into(),
    ]);
    assert_success(&check, "pip check");
    f.assert_ours_mapped_and_verified("install --venv");

    let v = f.venv.display().to_string();
    let idx = f.index.url();
    std::fs::write(f.dir.path().join("requirements.txt"), format!("rocm=={STOCK}\nrocm-sdk-core=={STOCK}\nrocm-sdk-libraries=={STOCK}\nrocm-sdk-devel=={STOCK}\ntorch==2.9.0+rocm{STOCK}\n")).unwrap();
    let stock_wheel = f.dir.path().join(format!(
        "index/rocm-sdk-core/rocm_sdk_core-{STOCK}-py3-none-manylinux_2_28_x86_64.whl"
    ));
    // (command, whether it succeeds keeping ours; otherwise it must fail leaving the venv as it was)
    let scenarios: &[(String, bool)] = &[
        (format!("{v}/bin/pip install --index-url {idx} --force-reinstall rocm-sdk-core=={STOCK}"), true),
        (format!("{v}/bin/pip install --index-url {idx} -U rocm-sdk-core"), true),
        (format!("{v}/bin/pip install --index-url {idx} --force-reinstall torch"), true),
        (format!("{v}/bin/uv pip install --index-url {idx} --reinstall rocm-sdk-core=={STOCK}"), true),
        (format!("{v}/bin/uv pip sync --index-url {idx} requirements.txt"), true),
        (format!("{v}/bin/pip uninstall -y rocm-sdk-core && {v}/bin/pip install --index-url {idx} rocm-sdk-core"), true),
        (format!("{v}/bin/pip install --index-url {idx} rocm-sdk-core=={NEWER}"), false),
        (format!("{v}/bin/pip install --index-url {idx} {}", stock_wheel.display()), false),
        (format!("{v}/bin/uv pip install --index-url {idx} rocm-sdk-core=={NEWER}"), false),
    ];
    for (script, keeps) in scenarios {
        let before = f.snapshot();
        let o = f.sh(script);
        eprintln!(
            "scenario `{script}`: exit {}",
            o.status.code().unwrap_or(-1)
        );
        if *keeps {
            assert!(o.status.success(), "`{script}` failed:\n{}", text(&o));
        } else {
            assert!(
                !o.status.success(),
                "`{script}` succeeded past the pin:\n{}",
                text(&o)
            );
            assert_eq!(
                f.snapshot(),
                before,
                "`{script}` failed but changed the venv"
            );
        }
        f.assert_ours_mapped_and_verified(script);
    }
}

#[test]
fn what_the_pin_cannot_stop_verify_catches_and_rollback_restores_stock_offline() {
    let pip_uv = needs_setup!("pip-uv");
    let f = fixture(&pip_uv);
    let ours = package_twice(&f);
    let v = f.venv.to_str().unwrap();
    assert!(f
        .rocm_pin(&["install", "--venv", v, ours.to_str().unwrap()])
        .status
        .success());
    // pip with no configuration file, given the stock wheel by path: nothing pins that.
    let stock_wheel = f.dir.path().join(format!(
        "index/rocm-sdk-core/rocm_sdk_core-{STOCK}-py3-none-manylinux_2_28_x86_64.whl"
    ));
    let o = f.sh(&format!(
        "PIP_CONFIG_FILE=/dev/null {v}/bin/pip install -q --no-deps --force-reinstall {}",
        stock_wheel.display()
    ));
    assert_success(&o, "the command");
    assert_eq!(f.consumer_maps().0, format!("STOCK-{STOCK} STOCK-{STOCK}"));
    let verify = f.rocm_pin(&["verify", "--venv", v]);
    assert_eq!(
        verify.status.code(),
        Some(1),
        "verify must fail:\n{}",
        text(&verify)
    );
    let said = text(&verify);
    assert!(
        said.contains("stock build") && said.contains("fix: rocm-pin install --venv"),
        "{}",
        said
    );
    // The fix verify prints, run as printed, leads back to green.
    let fix = said
        .lines()
        .find_map(|l| l.trim().strip_prefix("fix: "))
        .unwrap()
        .to_string();
    let bin_dir = Path::new(BIN).parent().unwrap().display().to_string();
    let o = f.sh(&format!("PATH={bin_dir}:$PATH; {fix}"));
    assert!(o.status.success(), "`{fix}`: {}", text(&o));
    f.assert_ours_mapped_and_verified("the fix verify printed");

    // uv run outside the venv without UV_CONFIG_FILE reads no pin either.
    let o = f.sh(&format!("env -u UV_CONFIG_FILE {v}/bin/uv pip install -q --index-url {} --reinstall rocm-sdk-core=={STOCK}", f.index.url()));
    assert_success(&o, "the command");
    assert_eq!(f.consumer_maps().0, format!("STOCK-{STOCK} STOCK-{STOCK}"));
    assert_eq!(f.rocm_pin(&["verify", "--venv", v]).status.code(), Some(1));
    assert!(f
        .sh(&format!("PATH={bin_dir}:$PATH; {fix}"))
        .status
        .success());
    f.assert_ours_mapped_and_verified("the fix again, after uv without its configuration");

    // Rollback runs pip with --no-index: offline by construction.
    let o = f.rocm_pin(&["rollback", "--venv", v]);
    assert_success(&o, "rollback --venv");
    assert_eq!(f.consumer_maps().0, format!("STOCK-{STOCK} STOCK-{STOCK}"));
    assert!(!f.venv.join("pip.conf").exists() && !f.venv.join("uv.toml").exists());
    let check = f.run(&[
        f.venv.join("bin/python").display().to_string(),
        "-m".into(),
        "pip".into(),
        "check".into(),
    ]);
    assert_success(&check, "pip check after rollback");
    // The devel tree's links follow the core's file again (stock bytes).
    let devel = std::fs::read(f.site().join("_rocm_sdk_devel/lib/libamdhip64.so")).unwrap();
    let core = std::fs::read(f.site().join("_rocm_sdk_core/lib/libamdhip64.so.7")).unwrap();
    assert_eq!(devel, core);

    // The version gate: our wheel, made from 10.0.0, is refused on a venv now holding 10.0.1,
    // and the venv is left as it was.
    let o = f.sh(&format!(
        "{v}/bin/pip install -q --no-deps --index-url {} rocm-sdk-core=={NEWER}",
        f.index.url()
    ));
    assert_success(&o, "the command");
    let before = f.snapshot();
    let o = f.rocm_pin(&["install", "--venv", v, ours.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("version gate") && text(&o).contains("package --wheels"),
        "{}",
        text(&o)
    );
    assert_eq!(f.snapshot(), before);
    assert!(!f.venv.join("pip.conf").exists());
}
