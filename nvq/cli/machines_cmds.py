"""CLI commands of issue 5: `job artifacts`, `queue busy`, `queue forbid-busy-assign`
and `queue allow-busy-assign`. Registered on the apps of `nvq.cli.main`, which
imports this module."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import typer

from nvq import control as c
from nvq.cli.client import CliError, call
from nvq.cli.main import JsonOpt, emit, job_app, queue_app
from nvq.units import format_mib


def _files_table(doc: dict[str, Any]) -> str:
    if not doc["files"]:
        return f"job {doc['job_id']}: no artifacts stored"
    width = max(len(f["path"]) for f in doc["files"])
    lines = [f"{f['path']:<{width}}  {f['size']:>12} B" for f in doc["files"]]
    total = format_mib(doc["bytes"] // (1024 * 1024)) if doc["bytes"] >= 1024 * 1024 else ""
    lines.append(f"{len(doc['files'])} files, {doc['bytes']} bytes {total}".rstrip())
    return "\n".join(lines)


@job_app.command("artifacts")
def job_artifacts(
    job_id: int = typer.Argument(..., help="Job id."),
    get: Path = typer.Option(None, "--get", help="Copy them into this directory."),
    as_json: bool = JsonOpt,
) -> int:
    """A job's stored artifacts ($NVQ_ARTIFACTS as of its last sync)."""
    if get is not None and get.exists() and not get.is_dir():
        raise CliError(f"--get {get}: not a directory", 2)
    doc = call(c.JobArtifacts(id=job_id)).data
    if get is None:
        emit(doc, as_json, _files_table(doc))
        return 0
    src = Path(doc["dir"])
    copied = []
    for f in doc["files"]:
        target = get / f["path"]
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / f["path"], target)
        except OSError as exc:
            raise CliError(f"--get {get}: {f['path']}: {exc.strerror or exc}") from None
        copied.append(f["path"])
    doc["copied_to"] = str(get.absolute())
    emit(doc, as_json, f"copied {len(copied)} files to {get}")
    return 0


@queue_app.command("busy")
def queue_busy(
    node: str = typer.Argument(..., help="Node name (or unique prefix)."),
    mode: str = typer.Argument(None, help="on, off or auto (the owner's logins decide)."),
    as_json: bool = JsonOpt,
) -> int:
    """Show or set whether a node counts as busy (its owner is using it)."""
    if mode is not None and mode not in ("on", "off", "auto"):
        raise CliError(f"busy mode {mode!r}: expected on, off or auto", 2)
    doc = call(c.BusyMode(node=node, mode=mode)).data
    state = "busy" if doc["busy"] else "idle"
    emit(doc, as_json, f"node {doc['node']}: {state} (mode {doc['mode']}, owner {doc['owner']})")
    return 0


@queue_app.command("forbid-busy-assign")
def queue_forbid_busy_assign(as_json: bool = JsonOpt) -> int:
    """Keep your own jobs off your nodes while you are using them."""
    doc = call(c.BusyAssign(forbid=True)).data
    emit(doc, as_json, f"{doc['user']}: your jobs no longer go to your busy nodes")
    return 0


@queue_app.command("allow-busy-assign")
def queue_allow_busy_assign(as_json: bool = JsonOpt) -> int:
    """Let your own jobs use your busy nodes again (when no idle node fits)."""
    doc = call(c.BusyAssign(forbid=False)).data
    emit(doc, as_json, f"{doc['user']}: your jobs may use your busy nodes again")
    return 0
