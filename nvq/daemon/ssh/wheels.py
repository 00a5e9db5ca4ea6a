"""The wheels bootstrap ships to a node, built on the queue host and cached under
``$NVQ_HOME/wheels``.

* `project_wheel`: a pure-Python wheel of this project, packed from the `nvq` and
  `nvq_runner` packages this process imports (works for a source tree, an editable or a
  normal install; no network, no build backend), or the wheel named by ``$NVQ_WHEEL``.
* `dependency_wheels`: wheels of the runner's own dependencies (`RUNNER_DEPENDENCIES`)
  at the versions installed here, so the node speaks the daemon's wire format. When the
  node's interpreter matches this one (CPython X.Y, machine, libc family, libc not
  older) they are repacked from this installation; otherwise, or when repacking fails,
  they are fetched with ``pip download --only-binary=:all:`` for the node's interpreter
  (the queue host then needs PyPI, or a pip index it is configured for). For such a
  foreign interpreter the newest release no newer than the one here is taken: msgspec
  stopped publishing CPython 3.9 wheels, and its msgpack wire format does not change
  between releases. Nodes before 3.11 also get `tomli` (the fake GPU backend's TOML
  reader there). Nodes must be Linux with glibc or musl; no compiler is ever needed.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib.metadata
import os
import platform
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import nvq
import nvq_runner
from nvq.daemon.ssh.errors import tail
from nvq.errors import Internal

# What the runner imports besides itself (distribution names, as pip knows them).
RUNNER_DEPENDENCIES = ("msgspec", "nvidia-ml-py", "mfusepy")
# tomllib's origin, for runners on CPython 3.9 and 3.10 (any release has what it needs).
TOMLI = ("tomli", "1.1.0")
_PROJECT = "nvq"


@dataclass(frozen=True)
class Target:
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


def parse_libc_version(text: str) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _local_target() -> Target:
    name, version = platform.libc_ver()
    libc = "glibc" if name == "glibc" else "musl"
    return Target(
        (sys.version_info[0], sys.version_info[1]),
        platform.machine(),
        libc,
        parse_libc_version(version) if libc == "glibc" else (1, 2),
    )


def _matches_local(target: Target) -> bool:
    here = _local_target()
    return (
        sys.implementation.name == "cpython"
        and sys.platform.startswith("linux")
        and (target.python, target.machine, target.libc) == (here.python, here.machine, here.libc)
        and target.libc_version >= here.libc_version
    )


# ------------------------------------------------------------------ wheels


class WheelError(Internal):
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


def project_wheel(cache_dir: Path) -> tuple[Path, str]:
    """The nvq wheel to install and its build id (a digest of its contents)."""
    version = nvq.__version__
    given = os.environ.get("NVQ_WHEEL")
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise WheelError(f"NVQ_WHEEL={given} does not exist")
        if not path.name.startswith(f"{_PROJECT}-{version}-") or path.suffix != ".whl":
            raise WheelError(
                f"NVQ_WHEEL={given} is not a wheel of nvq {version} (nvq-{version}-*.whl)"
            )
        return path, hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    if nvq_runner.__version__ != version:
        raise WheelError(
            f"nvq {version} and nvq_runner {nvq_runner.__version__} here differ; reinstall nvq"
        )
    try:
        files = _package_files()
    except OSError as exc:
        raise WheelError(
            f"cannot read nvq's own files ({exc}); set NVQ_WHEEL to a wheel of nvq {version}"
        ) from exc
    if not any(name == "nvq_runner/__main__.py" for name, _, _ in files):
        raise WheelError(
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
        "Requires-Python: >=3.9\n"  # the runner's floor; nvq itself needs 3.11

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
            raise WheelError(f"{name} is not installed here; reinstall nvq") from None
    return pins


def _version_key(text: str) -> tuple[int, ...]:
    """A release's leading numeric parts ("0.20.0" -> (0, 20, 0))."""
    m = re.match(r"\d+(?:\.\d+)*", text)
    return tuple(int(x) for x in m.group(0).split(".")) if m else ()


def _cached_wheel(directory: Path, name: str, version: str, exact: bool = True) -> Path | None:
    """A wheel of `name` in `directory`: of `version` exactly, or (`exact` False) the
    newest no newer than it."""
    if not directory.is_dir():
        return None
    prefix = _normalize(f"{name}-")
    best: tuple[tuple[int, ...], Path] | None = None
    for path in sorted(directory.iterdir()):
        norm = _normalize(path.name)
        if path.suffix != ".whl" or not norm.startswith(prefix):
            continue
        found = path.name.split("-")[1]
        if exact and _normalize(found) != _normalize(version):
            continue
        key = _version_key(found)
        if key <= _version_key(version) and (best is None or key > best[0]):
            best = (key, path)
    return None if best is None else best[1]


def _repack_installed(name: str, directory: Path) -> Path:
    """A wheel rebuilt from this installation of `name` (its RECORD lists the files)."""
    dist = importlib.metadata.distribution(name)
    version = dist.version
    wheel_text = dist.read_text("WHEEL")
    if dist.files is None or not wheel_text:
        raise WheelError(f"{name} {version} here has no RECORD/WHEEL to repack")
    tags = [ln.split(":", 1)[1].strip() for ln in wheel_text.splitlines() if ln.startswith("Tag:")]
    if not tags:
        raise WheelError(f"{name} {version} here has no wheel tags")
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
        raise WheelError(f"{name} {version} here has no dist-info in its RECORD")
    wheel_meta = "".join(
        ln + "\n" for ln in wheel_text.splitlines() if not ln.startswith("Generator:")
    )
    path = directory / f"{_normalize(name)}-{version}-{compressed}.whl"
    _write_wheel(path, files, dist_info, wheel_meta)
    return path


def _download(
    pins: dict[str, str], target: Target, directory: Path, bounds: dict[str, str]
) -> None:
    """`pip download` wheels of `pins` for `target` into `directory`; `bounds` names,
    per distribution, the pip operator to its version ("==", "<=", ">=")."""
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
    command += ["-d", str(directory), *(f"{n}{bounds[n]}{v}" for n, v in pins.items())]
    directory.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run(
            command, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WheelError(f"pip download failed: {exc}") from exc
    if proc.returncode != 0:
        wanted = " ".join(f"{n}{bounds[n]}{v}" for n, v in pins.items())
        raise WheelError(
            f"pip download {wanted} for CPython {target.python[0]}.{target.python[1]} on "
            f"{target.machine}/{target.libc} failed (does this host reach PyPI?): "
            f"{tail(proc.stderr or proc.stdout)}"
        )


def dependency_wheels(target: Target, cache_dir: Path) -> list[Path]:
    """Wheels of the runner's dependencies for `target`, from the cache, repacked from
    this installation, or downloaded — in that order of preference."""
    pins = _pins()
    local = _matches_local(target)
    # The same release as here where the node's interpreter is this one; else the newest
    # no newer (see the module's doc).
    bounds = dict.fromkeys(pins, "==" if local else "<=")
    if target.python < (3, 11):
        pins[TOMLI[0]] = TOMLI[1]
        bounds[TOMLI[0]] = ">="
    directory = cache_dir / "deps" / target.key

    def cached(where: Path, name: str) -> Path | None:
        if bounds[name] == ">=":
            return _cached_wheel(where, name, "999999", exact=False)
        return _cached_wheel(where, name, pins[name], exact=bounds[name] == "==")

    found = {n: cached(directory, n) for n in pins}
    missing = {n: pins[n] for n, p in found.items() if p is None}
    if missing and local:
        for name in list(missing):
            try:
                found[name] = _repack_installed(name, directory)
                del missing[name]
            except (WheelError, OSError, importlib.metadata.PackageNotFoundError):
                pass  # download it instead
    if missing:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=directory, prefix=".download-") as tmp:
            _download(missing, target, Path(tmp), bounds)
            for name in missing:
                got = cached(Path(tmp), name)
                if got is None:
                    raise WheelError(f"pip download gave no wheel of {name} {pins[name]}")
                final = directory / got.name
                os.replace(got, final)
                found[name] = final
    return [p for p in found.values() if p is not None]
