#!/usr/bin/env python3
"""Stand-in ROCm wheels with TheRock's layout, and a PEP 503 index serving them.

Made with Python's own zipfile and hashlib, so nothing here shares code with rocm-pin's wheel
writer. Usage: standin_wheels.py INDEX_DIR ELF_DIR VERSION [VERSION...]
       standin_wheels.py expand SITE_PACKAGES   (what `rocm-sdk init` does to the devel wheel)
The `rocm` wheel installs that expansion as the `rocm-sdk init` console script, so a Dockerfile
runs the same command on the stand-ins as on TheRock's wheels (docs/docker/wheels.Dockerfile).
ELF_DIR/<version>/ holds the gcc-built stock libraries of that release (libamdhip64.so.7,
libhsa-runtime64.so.1), ELF_DIR/torch_consumer the consumer program and, optionally,
ELF_DIR/libtorch_hip.so a library of the same shape.

Where each layout fact comes from (ROCm/TheRock):
- distribution names `rocm-sdk-core`, `rocm-sdk-libraries`, `rocm-sdk-devel`, the selector
  `rocm` with extras (`rocm[libraries,devel]`): build_tools/packaging/python/templates/rocm/
  src/rocm_sdk/_dist_info.py (PackageEntry table) and docs/packaging/python_packaging.md;
- platform directory `_` + distribution name with `_` (`_rocm_sdk_core`) beside a pure-Python
  package (`rocm_sdk_core`): _dist_info.py get_py_package_name;
- runtime wheels hold only the SONAME file of each library, no symlinks:
  docs/packaging/python_packaging.md ("Runtime packages"), build_tools/_therock_utils/
  py_packaging.py (soname_aliases);
- rocm-sdk-devel ships `rocm_sdk_devel/_devel.tar` expanded on use into `_rocm_sdk_devel/`,
  files a runtime wheel holds becoming hard links to it, the paths appended to its RECORD with
  no hash: rocm_sdk/_devel.py (_expand_devel_contents); the tests expand it the same way;
- consumers carry RPATH `$ORIGIN/<up>/_rocm_sdk_core/lib`: py_packaging.py _extend_rpath
  (patchelf --add-rpath), kept as DT_RPATH here (-Wl,--disable-new-dtags) as torch's is;
- `rocm-sdk init` is the `rocm-sdk` console script (`rocm_sdk.__main__:main`) of the `rocm`
  package: build_tools/packaging/python/templates/rocm/setup.py (entry_points), rocm_sdk/
  __main__.py; here it runs `expand` below on the running interpreter's site-packages;
- the real `rocm` selector is an sdist evaluated at install time; here it is a wheel with the
  same extras, enough for a resolver to pull rocm-sdk-core through `rocm[libraries]==V`;
- the wheel tag: TheRock's Linux wheels are manylinux (py3-none-manylinux_2_28_x86_64).
"""

import base64
import hashlib
import inspect
import io
import os
import sys
import tarfile
import zipfile

TAG = "py3-none-manylinux_2_28_x86_64"
EPOCH = (2026, 1, 1, 0, 0, 0)


def record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def wheel(index, name, version, files, requires=(), extras=(), tag=TAG, entry_points=""):
    """Write `name`-`version` holding `files` (path -> (bytes, mode)) into the index."""
    escaped = name.replace("-", "_")
    dist_info = f"{escaped}-{version}.dist-info"
    meta = [f"Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
            "Summary: stand-in for ROCm/TheRock's wheel of the same name"]
    meta += [f"Provides-Extra: {e}" for e in extras]
    meta += [f"Requires-Dist: {r}" for r in requires]
    files = dict(files)
    if entry_points:
        files[f"{dist_info}/entry_points.txt"] = entry_points.encode(), 0o644
    files[f"{dist_info}/METADATA"] = ("\n".join(meta) + "\n\n").encode(), 0o644
    files[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: standin\nRoot-Is-Purelib: false\nTag: {tag}\n"
    ).encode(), 0o644
    record = "".join(f"{p},{record_hash(d)},{len(d)}\n" for p, (d, _) in sorted(files.items()))
    record += f"{dist_info}/RECORD,,\n"
    files[f"{dist_info}/RECORD"] = record.encode(), 0o644
    project_dir = os.path.join(index, name)
    os.makedirs(project_dir, exist_ok=True)
    file_name = f"{escaped}-{version}-{tag}.whl"
    with zipfile.ZipFile(os.path.join(project_dir, file_name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, (data, mode) in sorted(files.items()):
            info = zipfile.ZipInfo(path, EPOCH)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return file_name


def devel_tar():
    """_devel.tar: the pair's full name set as relative symlinks into _rocm_sdk_core/lib."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for soname, names in (("libamdhip64.so.7", ["libamdhip64.so", "libamdhip64.so.7"]),
                              ("libhsa-runtime64.so.1", ["libhsa-runtime64.so", "libhsa-runtime64.so.1"])):
            for n in names:
                info = tarfile.TarInfo(f"_rocm_sdk_devel/lib/{n}")
                info.type = tarfile.SYMTYPE
                info.linkname = f"../../_rocm_sdk_core/lib/{soname}"
                info.mtime = 1767225600
                t.addfile(info)
        init = b"# stand-in devel platform package\n"
        info = tarfile.TarInfo("_rocm_sdk_devel/__init__.py")
        info.size = len(init)
        info.mtime = 1767225600
        t.addfile(info, io.BytesIO(init))
    return buf.getvalue()


def expand(site):
    """Expand rocm_sdk_devel/_devel.tar as rocm_sdk/_devel.py does: file symlinks become hard
    links to their target, each path appended to rocm-sdk-devel's RECORD with no hash."""
    record = [os.path.join(site, d, "RECORD") for d in os.listdir(site)
              if d.startswith("rocm_sdk_devel-") and d.endswith(".dist-info")][0]
    with tarfile.open(os.path.join(site, "rocm_sdk_devel", "_devel.tar")) as t, open(record, "a") as rec:
        for ti in t.getmembers():
            dest = os.path.join(site, ti.name)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            if ti.issym():
                os.link(os.path.join(os.path.dirname(dest), ti.linkname), dest)
            else:
                t.extract(ti, site)
            rec.write(f"{ti.name},,\n")


def rocm_sdk_main():
    """rocm_sdk/__main__.py of the stand-in `rocm` wheel: `rocm-sdk init` runs `expand`."""
    return (
        "import os\nimport sys\nimport sysconfig\nimport tarfile\n\n\n"
        + inspect.getsource(expand)
        + "\n\ndef main():\n"
        + "    if sys.argv[1:] != [\"init\"]:\n"
        + "        sys.exit(\"usage: rocm-sdk init (the stand-in expands rocm-sdk-devel)\")\n"
        + "    expand(sysconfig.get_paths()[\"purelib\"])\n"
    )


def main():
    if sys.argv[1] == "expand":
        return expand(sys.argv[2])
    index, elf_dir, versions = sys.argv[1], sys.argv[2], sys.argv[3:]
    py = lambda text: (text.encode(), 0o644)
    for v in versions:
        lib = os.path.join(elf_dir, v)
        core = {
            "rocm_sdk_core/__init__.py": py(f"__version__ = {v!r}\n"),
            "_rocm_sdk_core/__init__.py": py(""),
        }
        for so in sorted(os.listdir(lib)):
            core[f"_rocm_sdk_core/lib/{so}"] = open(os.path.join(lib, so), "rb").read(), 0o755
        wheel(index, "rocm-sdk-core", v, core)
        wheel(index, "rocm-sdk-libraries", v, {
            "rocm_sdk_libraries/__init__.py": py(""),
            "_rocm_sdk_libraries/lib/README": py("stand-in math libraries\n"),
        }, requires=[f"rocm-sdk-core=={v}"])
        wheel(index, "rocm-sdk-devel", v, {
            "rocm_sdk_devel/__init__.py": py(""),
            "rocm_sdk_devel/_devel.tar": (devel_tar(), 0o644),
        }, requires=[f"rocm-sdk-core=={v}"])
        wheel(index, "rocm", v, {"rocm_sdk/__init__.py": py(f"__version__ = {v!r}\n"),
                                 "rocm_sdk/__main__.py": py(rocm_sdk_main())},
              entry_points="[console_scripts]\nrocm-sdk = rocm_sdk.__main__:main\n",
              requires=[f"rocm-sdk-core=={v}",
                        f'rocm-sdk-libraries=={v}; extra == "libraries"',
                        f'rocm-sdk-devel=={v}; extra == "devel"'],
              extras=["libraries", "devel"])
    first = versions[0]
    torch = {"torch/__init__.py": py("")}
    # The consumer program, and (when ELF_DIR has one) torch's library of the same shape, the
    # name verify's shadow search looks for consumers by (torch/lib/*.so*).
    for elf in ("torch_consumer", "libtorch_hip.so"):
        if elf == "torch_consumer" or os.path.exists(os.path.join(elf_dir, elf)):
            torch[f"torch/lib/{elf}"] = open(os.path.join(elf_dir, elf), "rb").read(), 0o755
    wheel(index, "torch", f"2.9.0+rocm{first}", torch, requires=[f"rocm[libraries]=={first}"])
    # PEP 503: /<project>/ lists its files; the root lists the projects.
    projects = sorted(d for d in os.listdir(index) if os.path.isdir(os.path.join(index, d)))
    for p in projects:
        links = "".join(f'<a href="{f}">{f}</a>\n' for f in sorted(os.listdir(os.path.join(index, p))) if f.endswith(".whl"))
        with open(os.path.join(index, p, "index.html"), "w") as out:
            out.write(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
    with open(os.path.join(index, "index.html"), "w") as out:
        out.write("<!DOCTYPE html><html><body>\n" + "".join(f'<a href="{p}/">{p}</a>\n' for p in projects) + "</body></html>\n")


if __name__ == "__main__":
    main()
