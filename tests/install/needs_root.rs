//! Run without root (issue 32, criterion 6): `install` (with and without .debs), `rollback`,
//! `guard on`, `guard off` and `adopt` each fail with one "needs root" line, exit 2, before
//! anything is touched — no raw "Permission denied", no ldconfig error, nothing changed under
//! /etc, /var/lib/dpkg, /var/lib/rocm-pin, /opt or /usr/local. Run as `nobody` with setpriv in
//! the installed chroot, where each command as root would change the host.

use crate::util::*;

/// Every path, size and mtime under the directories the commands write, as one digest.
const FINGERPRINT: &str = "find /etc /var/lib/dpkg /var/lib/rocm-pin /opt /usr/local -printf '%p %s %T@ %m\\n' 2>/dev/null | sort | sha256sum";

#[test]
fn without_root_each_changing_command_says_so_in_one_line_before_touching_anything() {
    rocm_pin_testkit::needs_root!("a chroot and setpriv");
    let a = artifacts("bookworm");
    let sb = fresh(a, &a.installed_snapshot);
    let ours = install_argv(&a.ours)[2..].join(" ");
    let before = sb.sh_ok(FINGERPRINT).unwrap();
    let commands = [
        "install".to_string(),
        format!("install {ours}"),
        "rollback".into(),
        "guard on".into(),
        "guard off".into(),
        "adopt".into(),
    ];
    for command in &commands {
        let out = sb
            .sh(&format!(
                "setpriv --reuid=65534 --regid=65534 --clear-groups rocm-pin {command}"
            ))
            .unwrap();
        let said = text(&out);
        assert_eq!(rc(&out), 2, "rocm-pin {command} as nobody:\n{said}");
        let verb = command
            .split(' ')
            .take_while(|w| !w.starts_with('/'))
            .collect::<Vec<_>>();
        assert_eq!(
            said.trim().lines().count(),
            1,
            "rocm-pin {command}: one line:\n{said}"
        );
        assert!(
            said.contains(&format!("rocm-pin {} needs root", verb.join(" ")))
                && said.contains("nothing changed")
                && !said.contains("Permission denied"),
            "rocm-pin {command}:\n{said}"
        );
        assert_eq!(
            before,
            sb.sh_ok(FINGERPRINT).unwrap(),
            "rocm-pin {command} as nobody changed the host"
        );
    }
    // As root the same host is unchanged by the refusals: verify still passes.
    let v = verify(&sb);
    assert_eq!(rc(&v), 0, "{}", text(&v));
}
