"""nvq bootstrap's installer, copied to the node and run there by the Python that the
probe found (>= 3.9): ``python nvq-install.py HOME VERSION BUILD WHEEL...``.

It builds ``HOME/venv.new`` without pip, unpacks the wheels into it, checks that the
runner imports, and only then swaps it in for ``HOME/venv``, so a failed install leaves
the previous venv untouched. A failure is one stderr line ``STEP: reason`` (steps:
venv, install, verify, swap) and exit status 3; success prints ``NVQ-INSTALLED {json}``.
It imports nothing from nvq: the node has no nvq until it has run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from typing import NoReturn


def fail(step: str, msg: object) -> NoReturn:
    sys.stderr.write("{}: {}\n".format(step, " ".join(str(msg).split())))
    sys.exit(3)


def remove(path: str) -> None:
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    else:
        shutil.rmtree(path, ignore_errors=True)


def make_venv(new: str) -> tuple[str, str]:
    """(python, site-packages) of a fresh venv at `new`: without pip, so a Debian python3
    without python3-venv (no ensurepip) works too."""
    try:
        venv.EnvBuilder(with_pip=False, symlinks=True, clear=True).create(new)
    except Exception as e:
        fail("venv", e)
    py = os.path.join(new, "bin", "python")
    p = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        fail("venv", p.stderr[-300:] or "the new venv's python does not run")
    return py, p.stdout.strip()


def unpack(wheel: str, site: str) -> None:
    """Unpack one wheel into `site` (only purelib/platlib data; nothing outside `site`)."""
    with zipfile.ZipFile(wheel) as z:
        dist_info = None
        for info in z.infolist():
            name = info.filename
            if name.endswith("/"):
                continue
            top, _, rest = name.partition("/")
            if top.endswith(".data"):
                kind, _, rest = rest.partition("/")
                if kind not in ("purelib", "platlib"):
                    fail("install", f"{wheel}: cannot install {kind} files")
                name = rest
            elif top.endswith(".dist-info"):
                dist_info = top
            dest = os.path.realpath(os.path.join(site, name))
            if not dest.startswith(os.path.realpath(site) + os.sep):
                fail("install", f"{wheel}: unsafe path {info.filename}")
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with z.open(info) as src, open(dest, "wb") as dst:
                shutil.copyfileobj(src, dst)
            mode = (info.external_attr >> 16) & 0o777
            os.chmod(dest, (mode | 0o644) if mode else 0o644)
        if dist_info:
            with open(os.path.join(site, dist_info, "INSTALLER"), "w") as f:
                f.write("nvq-bootstrap\n")


def retarget_activate_scripts(new: str, target: str) -> None:
    """The activate scripts name the venv's directory: make them name its final place."""
    for script in os.listdir(os.path.join(new, "bin")):
        path = os.path.join(new, "bin", script)
        if script.startswith("activate") and os.path.isfile(path):
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
            with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(text.replace(new, target))


def drop_old_wheels(wheels: list[str]) -> None:
    """Wheels of earlier installs, next to this script, are no longer needed."""
    here = os.path.dirname(os.path.abspath(__file__))
    keep = {os.path.basename(w) for w in wheels} | {os.path.basename(__file__)}
    for name in os.listdir(here):
        if name.endswith(".whl") and name not in keep:
            try:
                os.unlink(os.path.join(here, name))
            except OSError:
                pass


def main(argv: list[str]) -> None:
    home, version, build = argv[:3]
    wheels = argv[3:]
    target = os.path.join(home, "venv")
    new, old = target + ".new", target + ".old"
    for d in (new, old):
        remove(d)
    py, site = make_venv(new)
    for wheel in wheels:
        try:
            unpack(wheel, site)
        except SystemExit:
            raise
        except Exception as e:
            fail("install", f"{os.path.basename(wheel)}: {e}")
    p = subprocess.run(
        [py, "-c", "import msgspec, pynvml, nvq_runner; print(nvq_runner.__version__)"],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0 or p.stdout.strip() != version:
        fail("verify", p.stderr[-300:] or f"nvq_runner {p.stdout.strip()} instead of {version}")
    retarget_activate_scripts(new, target)
    with open(os.path.join(new, "nvq-build.json"), "w") as f:
        json.dump({"version": version, "build": build}, f)
    try:
        if os.path.lexists(target):
            os.rename(target, old)
        os.rename(new, target)
    except Exception as e:
        fail("swap", e)
    remove(old)
    drop_old_wheels(wheels)
    print("NVQ-INSTALLED " + json.dumps({"python": os.path.join(target, "bin", "python")}))


if __name__ == "__main__":
    main(sys.argv[1:])
