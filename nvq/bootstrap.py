"""Install the runner on a node (`nvq node bootstrap NAME`, and the daemon's first connect).

`bootstrap_node(conn, node)` leaves ``<home>/venv`` on the node such that
``<home>/venv/bin/python -m nvq_runner attach --home <home>`` runs exactly this version of
nvq (`nvq.__version__`, and the very files this queue host runs):

1. **probe** — one command with `node.python` (default ``python3`` from the node's PATH):
   its version (Python >= 3.11 is required), implementation, machine and libc, the node's
   home expanded, and what ``<home>/venv`` holds (runner version and build id). When both
   match, nothing is done (unless `force`).
2. **build** (on the queue host, cached under `cache_dir`, default ``$NVQ_HOME/wheels``):
   a pure-Python wheel of this project, packed from the `nvq` and `nvq_runner` packages
   this process imports (works for a source tree, an editable or a normal install; no
   network, no build backend), or the wheel named by ``$NVQ_WHEEL``; plus wheels of the
   runner's own dependencies, msgspec and nvidia-ml-py, at the versions installed here
   (so the node speaks the daemon's wire format). When the node's interpreter matches
   this one (CPython X.Y, machine, libc family, libc not older) those wheels are repacked
   from this installation; otherwise — or when repacking fails — they are fetched with
   ``pip download --only-binary=:all: --python-version X.Y --platform manylinux…_<arch>``
   for the node's interpreter (the queue host then needs PyPI, or a pip index it is
   configured for). Nodes must be Linux with glibc or musl; no compiler is ever needed.
3. **copy** — the wheels and a small installer script over SFTP to ``<home>/wheels/``.
4. **install** — the installer, run by `node.python`, builds ``<home>/venv.new``
   (``venv --without-pip``: no ensurepip needed, so Debian's python3 without
   python3-venv works), unpacks the wheels into its site-packages (the nvq wheel without
   its dependencies: the runner needs only msgspec and nvidia-ml-py), imports
   `nvq_runner`, `msgspec` and `pynvml` there, records the build in
   ``venv/nvq-build.json`` and only then swaps it in for ``<home>/venv``. A failed
   install leaves the previous venv untouched.

A runner already running on the node keeps its old code until it is restarted
(``<home>/venv/bin/python -m nvq_runner stop --home <home>``; jobs keep running):
`BootstrapResult.installed` tells the caller that a restart is due.

Which interpreter the daemon runs on a node (`runner_python`): `node.python` when the
config sets it to anything but its default ``python3`` (the user manages that
interpreter and nvq_runner in it), else ``<home>/venv/bin/python``, the bootstrapped
venv. Bootstrap always uses `node.python` as the venv's base interpreter.

Every failure is a `BootstrapError` (a `NodeUnreachable`): one line naming the node, the
step and the tail of what went wrong, e.g. ``node gpu1 (10.0.0.5:22): bootstrap failed
at install: venv: [Errno 28] No space left on device``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib.metadata
import os
import platform
import posixpath
import re
import shlex
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread
import asyncssh
import msgspec

import nvq
import nvq_runner
from nvq.config import NodeConfig
from nvq.daemon.ssh import NodeUnreachable, run_command, shell_path

__all__ = [
    "RUNNER_DEPENDENCIES",
    "BootstrapError",
    "BootstrapResult",
    "bootstrap_node",
    "default_cache_dir",
    "runner_python",
]

MIN_PYTHON = (3, 11)
# What the runner imports besides itself (distribution names, as pip knows them).
RUNNER_DEPENDENCIES = ("msgspec", "nvidia-ml-py")
_PROJECT = "nvq"
_INSTALLER_NAME = "nvq-install.py"
_PROBE_MARK = "NVQ-PROBE "
_DEFAULT_PYTHON: str = next(
    f.default for f in msgspec.structs.fields(NodeConfig) if f.name == "python"
)


class BootstrapError(NodeUnreachable):
    """Bootstrap failed; the message is one line naming the node and the step."""


@dataclass(frozen=True)
class BootstrapResult:
    python: str  # <home>/venv/bin/python on the node, absolute and expanded
    version: str  # the nvq_runner version now installed there
    installed: bool  # False: it was already up to date and nothing changed
    seconds: float


def runner_python(node: NodeConfig) -> str:
    """The interpreter `attach_command` should run on this node: `node.python` when set
    explicitly (any value but the default), else the bootstrapped ``<home>/venv/bin/python``
    (a leading ``~`` is left for the node's shell)."""
    if node.python != _DEFAULT_PYTHON:
        return node.python
    return posixpath.join(node.home, "venv", "bin", "python")


def default_cache_dir() -> Path:
    """``$NVQ_HOME/wheels`` (``~/.nvq/wheels``)."""
    home = os.environ.get("NVQ_HOME") or str(Path.home() / ".nvq")
    return Path(home).expanduser() / "wheels"


def _tail(text: str, limit: int = 300) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else "…" + one[-limit:]


# ------------------------------------------------------------------ probe

# Runs under whatever `node.python` is, so it must at least parse on old Pythons, to be
# able to say which version it found.
_PROBE = r"""
import json, os, platform, subprocess, sys
home = os.path.abspath(os.path.expanduser(sys.argv[1]))
impl = getattr(sys, "implementation", None)
out = {"python": list(sys.version_info[:3]), "impl": impl.name if impl else "",
       "machine": platform.machine(), "libc": list(platform.libc_ver()), "home": home,
       "executable": sys.executable, "installed": None, "build": None}
vpy = os.path.join(home, "venv", "bin", "python")
if sys.version_info >= (3, 11) and os.path.exists(vpy):
    try:
        p = subprocess.run([vpy, "-c", "import msgspec, pynvml, nvq_runner; "
                            "print(nvq_runner.__version__)"],
                           capture_output=True, text=True, timeout=60)
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
"""


class _Probe(msgspec.Struct):
    python: list[int]
    impl: str
    machine: str
    libc: list[str]
    home: str
    executable: str
    installed: str | None = None
    build: str | None = None
    venv_error: str | None = None

    @property
    def version(self) -> str:
        return ".".join(map(str, self.python[:2]))


async def _probe(conn: asyncssh.SSHClientConnection, node: NodeConfig) -> _Probe:
    command = f"{shell_path(node.python)} -c {shlex.quote(_PROBE)} {shell_path(node.home)}"
    code, out, err = await run_command(conn, command, timeout=90, node=node)
    if code == 127:
        raise BootstrapError(
            node,
            f"{node.python} not found on the node (nodes.python must name a Python >= "
            f"{_min_python()}): {_tail(err)}",
        )
    if code == 126:
        raise BootstrapError(node, f"{node.python} on the node is not executable: {_tail(err)}")
    line = next((ln for ln in out.splitlines() if ln.startswith(_PROBE_MARK)), None)
    if code != 0 or line is None:
        raise BootstrapError(
            node,
            f"bootstrap failed at probe: {node.python} exited with {code}: "
            f"{_tail(err or out) or 'no output'}",
        )
    try:
        probe = msgspec.json.decode(line[len(_PROBE_MARK) :], type=_Probe)
    except msgspec.ValidationError as exc:
        raise BootstrapError(node, f"bootstrap failed at probe: bad reply: {exc}") from None
    if tuple(probe.python[:2]) < MIN_PYTHON:
        raise BootstrapError(
            node,
            f"{node.python} on the node is {probe.version}; nvq needs Python >= {_min_python()}",
        )
    if probe.impl != "cpython":
        raise BootstrapError(
            node, f"{node.python} on the node is {probe.impl or 'not CPython'}; nvq needs CPython"
        )
    return probe


def _min_python() -> str:
    return ".".join(map(str, MIN_PYTHON))


# ------------------------------------------------------------------ target interpreter


@dataclass(frozen=True)
class _Target:
    """The node's interpreter, as far as wheel tags care."""

    python: tuple[int, int]
    machine: str
    libc: str  # "glibc" or "musl"
    libc_version: tuple[int, int]

    @property
    def key(self) -> str:
        v = ".".join(map(str, self.libc_version))
        return f"cp{self.python[0]}{self.python[1]}-{self.machine}-{self.libc}{v}"

    def platforms(self) -> list[str]:
        arch = self.machine
        major, minor = self.libc_version
        if self.libc == "musl":
            return [f"musllinux_{major}_{m}_{arch}" for m in range(minor, 0, -1)]
        tags = [f"manylinux_{major}_{m}_{arch}" for m in range(minor, 16, -1)]
        tags.append(f"manylinux2014_{arch}")
        if arch in ("x86_64", "i686"):
            tags += [f"manylinux2010_{arch}", f"manylinux1_{arch}"]
        return tags


def _libc_version(text: str) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _target_of(node: NodeConfig, probe: _Probe) -> _Target:
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(probe.machine.lower(), probe.machine)
    name, version = [*probe.libc, "", ""][:2]
    if name == "glibc":
        libc, libc_version = "glibc", _libc_version(version)
    else:
        # platform.libc_ver() knows no musl; a musl Python reports ("", "").
        libc, libc_version = "musl", (1, 2)
    if libc == "glibc" and libc_version < (2, 17):
        raise BootstrapError(node, f"the node's glibc {version} is older than 2.17")
    return _Target((probe.python[0], probe.python[1]), machine, libc, libc_version)


def _local_target() -> _Target:
    name, version = platform.libc_ver()
    libc = "glibc" if name == "glibc" else "musl"
    return _Target(
        (sys.version_info[0], sys.version_info[1]),
        platform.machine(),
        libc,
        _libc_version(version) if libc == "glibc" else (1, 2),
    )


def _matches_local(target: _Target) -> bool:
    here = _local_target()
    return (
        sys.implementation.name == "cpython"
        and sys.platform.startswith("linux")
        and (target.python, target.machine, target.libc) == (here.python, here.machine, here.libc)
        and target.libc_version >= here.libc_version
    )


# ------------------------------------------------------------------ local wheels


class _LocalError(Exception):
    """A queue-host side failure while making wheels (message: one line)."""


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def _write_wheel(
    path: Path, files: Iterable[tuple[str, bytes, int]], dist_info: str, wheel_meta: str
) -> None:
    """Write a wheel (deterministic bytes) atomically. `files`: (archive name, bytes,
    mode); `dist_info` gets WHEEL (`wheel_meta`) and RECORD added."""
    entries = [f for f in files if f[0] not in (f"{dist_info}/RECORD", f"{dist_info}/WHEEL")]
    entries.append((f"{dist_info}/WHEEL", wheel_meta.encode(), 0o644))
    record = [f"{name},{_record_hash(data)},{len(data)}" for name, data, _ in entries]
    record.append(f"{dist_info}/RECORD,,")
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode(), 0o644))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".whl")
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data, mode in entries:
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.external_attr = ((mode & 0o777) | 0o100000) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _package_files() -> list[tuple[str, bytes, int]]:
    """(archive name, bytes, mode) of every file of the `nvq` and `nvq_runner` packages
    this process imports (caches and bytecode left out), sorted."""
    out: list[tuple[str, bytes, int]] = []
    for pkg in (nvq, nvq_runner):
        root = Path(pkg.__file__ or "").parent
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if "__pycache__" in rel.parts or path.suffix in (".pyc", ".pyo") or not path.is_file():
                continue
            out.append((f"{pkg.__name__}/{rel.as_posix()}", path.read_bytes(), path.stat().st_mode))
    return out


def _project_wheel(cache_dir: Path) -> tuple[Path, str]:
    """The nvq wheel to install and its build id (a digest of its contents)."""
    version = nvq.__version__
    given = os.environ.get("NVQ_WHEEL")
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise _LocalError(f"NVQ_WHEEL={given} does not exist")
        if not path.name.startswith(f"{_PROJECT}-{version}-") or path.suffix != ".whl":
            raise _LocalError(
                f"NVQ_WHEEL={given} is not a wheel of nvq {version} (nvq-{version}-*.whl)"
            )
        return path, hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    if nvq_runner.__version__ != version:
        raise _LocalError(
            f"nvq {version} and nvq_runner {nvq_runner.__version__} here differ; reinstall nvq"
        )
    try:
        files = _package_files()
    except OSError as exc:
        raise _LocalError(
            f"cannot read nvq's own files ({exc}); set NVQ_WHEEL to a wheel of nvq {version}"
        ) from exc
    if not any(name == "nvq_runner/__main__.py" for name, _, _ in files):
        raise _LocalError(
            f"nvq_runner's sources are not on this host; set NVQ_WHEEL to a wheel of nvq {version}"
        )
    digest = hashlib.sha256()
    for name, data, _ in files:
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    build = digest.hexdigest()[:16]
    dist_info = f"{_PROJECT}-{version}.dist-info"
    metadata = (
        f"Metadata-Version: 2.1\nName: {_PROJECT}\nVersion: {version}\n"
        "Summary: nvq (packed by nvq bootstrap for a node's runner)\n"
        "Requires-Python: >=3.11\n"
    )
    wheel_meta = (
        "Wheel-Version: 1.0\nGenerator: nvq-bootstrap\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files.append((f"{dist_info}/METADATA", metadata.encode(), 0o644))
    path = cache_dir / version / f"{_PROJECT}-{version}-py3-none-any.whl"
    _write_wheel(path, files, dist_info, wheel_meta)
    return path, build


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for name in RUNNER_DEPENDENCIES:
        try:
            pins[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            raise _LocalError(f"{name} is not installed here; reinstall nvq") from None
    return pins


def _cached_wheel(directory: Path, name: str, version: str) -> Path | None:
    prefix = f"{_normalize(name)}-{version}-"
    if directory.is_dir():
        for path in sorted(directory.iterdir()):
            if path.suffix == ".whl" and _normalize(path.name).startswith(_normalize(prefix)):
                return path
    return None


def _repack_installed(name: str, directory: Path) -> Path:
    """A wheel rebuilt from this installation of `name` (its RECORD lists the files)."""
    dist = importlib.metadata.distribution(name)
    version = dist.version
    wheel_text = dist.read_text("WHEEL")
    if dist.files is None or not wheel_text:
        raise _LocalError(f"{name} {version} here has no RECORD/WHEEL to repack")
    tags = [ln.split(":", 1)[1].strip() for ln in wheel_text.splitlines() if ln.startswith("Tag:")]
    if not tags:
        raise _LocalError(f"{name} {version} here has no wheel tags")
    parts = [t.split("-") for t in tags]
    compressed = "-".join(".".join(dict.fromkeys(p[i] for p in parts)) for i in range(3))
    files: list[tuple[str, bytes, int]] = []
    dist_info = ""
    for entry in dist.files:
        rel = entry.as_posix()
        if rel.startswith(("/", "../")) or "__pycache__" in rel or rel.endswith(".pyc"):
            continue
        top = rel.split("/", 1)[0]
        if top.endswith(".dist-info"):
            dist_info = top
            if rel.rsplit("/", 1)[-1] in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json"):
                continue
        path = Path(str(dist.locate_file(entry)))
        files.append((rel, path.read_bytes(), path.stat().st_mode))
    if not dist_info:
        raise _LocalError(f"{name} {version} here has no dist-info in its RECORD")
    wheel_meta = "".join(
        ln + "\n" for ln in wheel_text.splitlines() if not ln.startswith("Generator:")
    )
    path = directory / f"{_normalize(name)}-{version}-{compressed}.whl"
    _write_wheel(path, files, dist_info, wheel_meta)
    return path


def _download(pins: dict[str, str], target: _Target, directory: Path) -> None:
    """`pip download` wheels of `pins` for `target` into `directory`."""
    py = f"{target.python[0]}{target.python[1]}"
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--disable-pip-version-check",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        f"{target.python[0]}.{target.python[1]}",
        "--implementation",
        "cp",
        "--abi",
        f"cp{py}",
        "--abi",
        "abi3",
        "--abi",
        "none",
    ]
    for plat in target.platforms():
        command += ["--platform", plat]
    command += ["-d", str(directory), *(f"{n}=={v}" for n, v in pins.items())]
    directory.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run(
            command, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise _LocalError(f"pip download failed: {exc}") from exc
    if proc.returncode != 0:
        wanted = " ".join(f"{n}=={v}" for n, v in pins.items())
        raise _LocalError(
            f"pip download {wanted} for CPython {target.python[0]}.{target.python[1]} on "
            f"{target.machine}/{target.libc} failed (does this host reach PyPI?): "
            f"{_tail(proc.stderr or proc.stdout)}"
        )


def _dependency_wheels(target: _Target, cache_dir: Path) -> list[Path]:
    """Wheels of the runner's dependencies for `target`, from the cache, repacked from
    this installation, or downloaded — in that order of preference."""
    pins = _pins()
    directory = cache_dir / "deps" / target.key
    found = {n: _cached_wheel(directory, n, v) for n, v in pins.items()}
    missing = {n: pins[n] for n, p in found.items() if p is None}
    if missing and _matches_local(target):
        for name in list(missing):
            try:
                found[name] = _repack_installed(name, directory)
                del missing[name]
            except (_LocalError, OSError, importlib.metadata.PackageNotFoundError):
                pass  # download it instead
    if missing:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=directory, prefix=".download-") as tmp:
            _download(missing, target, Path(tmp))
            for name, version in missing.items():
                got = _cached_wheel(Path(tmp), name, version)
                if got is None:
                    raise _LocalError(f"pip download gave no wheel of {name} {version}")
                final = directory / got.name
                os.replace(got, final)
                found[name] = final
    return [p for p in found.values() if p is not None]


# ------------------------------------------------------------------ node-side installer

_INSTALLER = r'''
"""nvq bootstrap's installer: python nvq-install.py HOME VERSION BUILD WHEEL..."""
import json, os, shutil, subprocess, sys, venv, zipfile

def fail(step, msg):
    sys.stderr.write("%s: %s\n" % (step, " ".join(str(msg).split())))
    sys.exit(3)

home, version, build = sys.argv[1:4]
wheels = sys.argv[4:]
target = os.path.join(home, "venv")
new, old = target + ".new", target + ".old"
def remove(path):
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    else:
        shutil.rmtree(path, ignore_errors=True)

for d in (new, old):
    remove(d)
try:
    venv.EnvBuilder(with_pip=False, symlinks=True, clear=True).create(new)
except Exception as e:
    fail("venv", e)
py = os.path.join(new, "bin", "python")
p = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   capture_output=True, text=True)
if p.returncode != 0:
    fail("venv", p.stderr[-300:] or "the new venv's python does not run")
site = p.stdout.strip()
for wheel in wheels:
    try:
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
                        fail("install", "%s: cannot install %s files" % (wheel, kind))
                    name = rest
                elif top.endswith(".dist-info"):
                    dist_info = top
                dest = os.path.realpath(os.path.join(site, name))
                if not dest.startswith(os.path.realpath(site) + os.sep):
                    fail("install", "%s: unsafe path %s" % (wheel, info.filename))
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with z.open(info) as src, open(dest, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                mode = (info.external_attr >> 16) & 0o777
                os.chmod(dest, (mode | 0o644) if mode else 0o644)
            if dist_info:
                with open(os.path.join(site, dist_info, "INSTALLER"), "w") as f:
                    f.write("nvq-bootstrap\n")
    except SystemExit:
        raise
    except Exception as e:
        fail("install", "%s: %s" % (os.path.basename(wheel), e))
p = subprocess.run([py, "-c", "import msgspec, pynvml, nvq_runner; print(nvq_runner.__version__)"],
                   capture_output=True, text=True)
if p.returncode != 0 or p.stdout.strip() != version:
    fail("verify", p.stderr[-300:] or "nvq_runner %s instead of %s" % (p.stdout.strip(), version))
for script in os.listdir(os.path.join(new, "bin")):  # activate scripts name their dir
    path = os.path.join(new, "bin", script)
    if script.startswith("activate") and os.path.isfile(path):
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text.replace(new, target))
with open(os.path.join(new, "nvq-build.json"), "w") as f:
    json.dump({"version": version, "build": build}, f)
try:
    if os.path.lexists(target):
        os.rename(target, old)
    os.rename(new, target)
except Exception as e:
    fail("swap", e)
remove(old)
keep = set(os.path.basename(w) for w in wheels) | {os.path.basename(__file__)}
for name in os.listdir(os.path.dirname(os.path.abspath(__file__))):
    if name.endswith(".whl") and name not in keep:
        try:
            os.unlink(os.path.join(os.path.dirname(os.path.abspath(__file__)), name))
        except OSError:
            pass
print("NVQ-INSTALLED " + json.dumps({"python": os.path.join(target, "bin", "python")}))
'''


# ------------------------------------------------------------------ bootstrap


async def bootstrap_node(
    conn: asyncssh.SSHClientConnection,
    node: NodeConfig,
    *,
    force: bool = False,
    cache_dir: Path | None = None,
) -> BootstrapResult:
    """Make ``<home>/venv`` on `node` run this exact nvq_runner (see the module doc).
    `conn` is an open connection to the node (`connect_node`). Raises `BootstrapError`
    (or `NodeUnreachable` when the link fails)."""
    start = time.monotonic()
    cache = cache_dir if cache_dir is not None else default_cache_dir()
    version = nvq.__version__

    def local(step: str, exc: BaseException) -> BootstrapError:
        return BootstrapError(node, f"bootstrap failed at {step} (on this host): {exc}")

    try:
        wheel, build = await anyio.to_thread.run_sync(_project_wheel, cache)
    except (_LocalError, OSError) as exc:
        raise local("build", exc) from exc
    probe = await _probe(conn, node)
    venv_python = posixpath.join(probe.home, "venv", "bin", "python")
    if not force and probe.installed == version and probe.build == build:
        return BootstrapResult(venv_python, version, False, time.monotonic() - start)

    target = _target_of(node, probe)
    try:
        deps = await anyio.to_thread.run_sync(_dependency_wheels, target, cache)
    except (_LocalError, OSError) as exc:
        raise local("build", exc) from exc

    wheels_dir = posixpath.join(probe.home, "wheels")
    installer = posixpath.join(wheels_dir, _INSTALLER_NAME)
    files = [wheel, *deps]
    try:
        async with conn.start_sftp_client() as sftp:
            await sftp.makedirs(wheels_dir, exist_ok=True)
            await sftp.put([str(p) for p in files], wheels_dir)
            async with sftp.open(installer, "w") as f:
                await f.write(_INSTALLER)
    except (OSError, asyncssh.Error) as exc:
        reason = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
        raise BootstrapError(
            node, f"bootstrap failed at copy (SFTP to {wheels_dir}): {_tail(str(reason))}"
        ) from exc

    remote_wheels = [posixpath.join(wheels_dir, p.name) for p in files]
    command = (
        " ".join(shlex.quote(a) for a in [probe.executable, installer, probe.home, version, build])
        + " "
        + " ".join(shlex.quote(w) for w in remote_wheels)
    )
    code, out, err = await run_command(conn, command, timeout=300, node=node)
    if code != 0 or "NVQ-INSTALLED " not in out:
        step, _, rest = err.strip().rpartition("\n")[2].partition(": ")
        if step in ("venv", "install", "verify", "swap"):
            raise BootstrapError(node, f"bootstrap failed at {step}: {_tail(rest)}")
        raise BootstrapError(
            node, f"bootstrap failed at install: exit {code}: {_tail(err or out) or 'no output'}"
        )
    return BootstrapResult(venv_python, version, True, time.monotonic() - start)
