"""What bootstrap learns about a node: run there as ``<python> -c <this file> HOME``.

It runs under whatever interpreter `node.python` names, before nvq knows its version,
so it must parse on old Pythons (no f-strings, no annotations) to be able to say which
version it found. It prints one line, ``NVQ-PROBE {json}``.
"""

import json
import os
import platform
import subprocess
import sys


def main():  # type: () -> None
    home = os.path.abspath(os.path.expanduser(sys.argv[1]))
    impl = getattr(sys, "implementation", None)
    out = {
        "python": list(sys.version_info[:3]),
        "impl": impl.name if impl else "",
        "machine": platform.machine(),
        "libc": list(platform.libc_ver()),
        "home": home,
        "executable": sys.executable,
        "installed": None,
        "build": None,
    }
    vpy = os.path.join(home, "venv", "bin", "python")
    if sys.version_info >= (3, 9) and os.path.exists(vpy):
        try:
            p = subprocess.run(
                [vpy, "-c", "import msgspec, pynvml, nvq_runner; print(nvq_runner.__version__)"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            if p.returncode == 0:
                out["installed"] = p.stdout.strip()
            else:
                out["venv_error"] = p.stderr[-300:]
        except Exception as e:
            out["venv_error"] = str(e)
        try:
            with open(os.path.join(home, "venv", "nvq-build.json")) as f:
                out["build"] = json.load(f).get("build")
        except Exception:
            pass
    print("NVQ-PROBE " + json.dumps(out))


if __name__ == "__main__":
    main()
