"""`nvq job submit` typed inside a running job: the queue parses its argv with the
CLI's own parser (nvq.cli.submit_argv), so every option and form is the CLI's, and
gives the new job the world a submit from that place has.

A job's directory lives on its node, out of the queue host's reach, so nothing is
snapshotted afresh: where the caller runs in a snapshot, the new job runs in that same
snapshot, at the directory the submit was typed in (what the caller started with, not
what it wrote since); `--in-place`, a caller with no snapshot, or a directory the
snapshot lacks (made since) runs it in that directory itself, on the caller's node. `--workdir` and `--no-snapshot` mean what they
mean outside. The new job takes the caller's captured environment (not the job's own,
which holds the caller's NVQ_* variables) and names it as its submitter."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio.to_thread
import msgspec

from nvq import control as c
from nvq.daemon.blobs import blob_store
from nvq.daemon.context import Context
from nvq.daemon.errors import BadRequest
from nvq.daemon.handlers import submit
from nvq.domain.arrays import parse_array
from nvq.model import JobRecord, JobSpec

if TYPE_CHECKING:  # the CLI's parser loads on the first submit from a job, not with the daemon
    from nvq.cli.submit_flow import SubmitArgs

# Flags that read or write the queue host's own files (which a job's owner may not
# be), or that a forward from another machine adds: not for a job to give.
HOST_ONLY = {"script": "--script", "manifest": "--manifest", "from_cwd": "--from-cwd",
             "from_env": "--from-env", "from_snapshot": "--from-snapshot"}


async def submit_from_job(ctx: Context, req: c.SubmitFromJob, user: str) -> c.JsonValue:
    from nvq.cli.flag_values import CliError
    from nvq.cli.submit_argv import submit_args
    from nvq.cli.submit_flow import checked, spec_of

    caller = await ctx.state.get_job(req.id)  # the permission table checked it is theirs
    try:
        args = submit_args(req.argv)
        for field, flag in HOST_ONLY.items():
            if getattr(args, field) is not None:
                raise CliError(f"{flag} is not taken inside a job (it reads the queue host)", 2)
        known = await in_snapshot(ctx, caller.spec.manifest_id, req.subdir)
        spec = msgspec.structs.replace(
            spec_of(args), **world_of(args, ctx.state.live(caller), req.cwd, known))
        checked(spec)
    except CliError as exc:
        raise BadRequest(str(exc)) from None
    if args.dry_run:
        return await submit.submit_dry_run(ctx, c.SubmitDry(spec), user)
    first = await submit.submit(ctx, c.Submit(spec), user)
    if spec.array is None:
        from nvq.cli.submit_flow import without_env

        return without_env(first)
    ids = list(range(first.id, first.id + len(parse_array(spec.array).indices())))
    return c.ArraySubmitted(id=first.id, ids=ids, count=len(ids))


async def in_snapshot(ctx: Context, manifest_id: str | None, subdir: str | None) -> str | None:
    """`subdir` when the caller's snapshot holds that directory (one it made after it
    started is only on its node); else None."""
    if not manifest_id or subdir is None:
        return None
    if subdir == "":
        return subdir
    try:
        manifest = await anyio.to_thread.run_sync(
            blob_store(ctx.state.home).get_manifest, manifest_id)
    except (OSError, ValueError, msgspec.DecodeError):
        return None
    inside = subdir + "/"
    return subdir if any(e.path == subdir or e.path.startswith(inside)
                         for e in manifest.entries) else None


def world_of(
    args: SubmitArgs, caller: JobRecord, cwd: str, subdir: str | None
) -> dict[str, Any]:
    """The JobSpec fields of the new job's world (see the module's doc). `subdir`:
    where the submit was typed inside the caller's snapshot (None: not in it)."""
    own: JobSpec = caller.spec
    fields: dict[str, Any] = {
        "submitter": f"job {caller.id}",
        "env_captured": {} if args.no_env else own.env_captured,
    }
    if args.workdir is not None or args.no_snapshot:
        return fields
    if args.in_place is not True and own.manifest_id and subdir is not None:
        return {**fields, "cwd": own.cwd, "manifest_id": own.manifest_id, "subdir": subdir}
    if args.in_place is False:
        from nvq.cli.flag_values import CliError

        where = "outside its working copy" if own.manifest_id else "without a snapshot"
        raise CliError(
            f"--snapshot: job {caller.id} runs {where}, so there is no snapshot to give this "
            "job; --in-place runs it in that directory, on the same node", 2)
    # In that directory itself: as `--workdir` on the caller's node, where it is (an
    # in-place job is placed only where the queue host's directories are seen).
    fields.update(cwd=cwd, workdir=cwd)
    if args.node is None and args.lane is None:
        fields["node"] = caller.node
    return fields
