"""`nvq job submit` typed inside a running job: the queue parses its argv with the
CLI's own parser (nvq.cli.submit_argv), so every option and form is the CLI's, and
gives the new job the world a submit from that place has.

Typed inside the caller's working copy, the new job gets a fresh snapshot of that
directory as it is now on the node, files the caller wrote since it started included
(nvq.daemon.artifacts.job_dir_snapshot: the same ignore rules and max_snapshot as any submit), so
it runs on any node. `--in-place`, a caller with no snapshot, or a directory outside
its working copy runs it in that directory itself, on the caller's node. `--workdir`
and `--no-snapshot` mean what they mean outside. The new job takes the caller's
captured environment (not the job's own, which holds the caller's NVQ_* variables) and
names it as its submitter."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from nvq import control as c
from nvq.daemon.artifacts.job_dir_snapshot import snapshot_job_dir
from nvq.daemon.core.errors import BadRequest
from nvq.daemon.handlers import submit
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.domain.arrays import parse_array
from nvq.domain.permissions import owner
from nvq.model import JobRecord, JobSpec

if TYPE_CHECKING:  # the CLI's parser loads on the first submit from a job, not with the daemon
    from nvq.cli.submit_flow import SubmitArgs

# Flags that read or write the queue host's own files (which a job's owner may not
# be), or that a forward from another machine adds: not for a job to give.
HOST_ONLY = {"script": "--script", "manifest": "--manifest", "from_cwd": "--from-cwd",
             "from_env": "--from-env", "from_snapshot": "--from-snapshot"}


@handles(c.SubmitFromJob, may=owner("submit from"))  # a job's own `nvq`: its owner's rights
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
        live = ctx.state.live(caller)
        fresh = None
        if snapshots(args, live, req.subdir):
            assert req.subdir is not None
            fresh = await snapshot_job_dir(
                ctx.state, ctx.artifacts, ctx.snapshots, live, req.subdir, user
            )
        spec = msgspec.structs.replace(spec_of(args), **world_of(args, live, req.cwd, fresh))
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


def snapshots(args: SubmitArgs, caller: JobRecord, subdir: str | None) -> bool:
    """Does the new job take a fresh snapshot of where it was typed? (Only a caller
    that runs in a working copy of its own has one to take it from.)"""
    return (args.workdir is None and not args.no_snapshot and args.in_place is not True
            and bool(caller.spec.manifest_id) and not caller.spec.in_place
            and subdir is not None)


def world_of(
    args: SubmitArgs, caller: JobRecord, cwd: str, fresh: str | None
) -> dict[str, Any]:
    """The JobSpec fields of the new job's world (see the module's doc). `fresh`: the
    snapshot taken of the directory it was typed in (None: none was)."""
    own: JobSpec = caller.spec
    fields: dict[str, Any] = {
        "submitter": f"job {caller.id}",
        "env_captured": {} if args.no_env else own.env_captured,
    }
    if args.workdir is not None or args.no_snapshot:
        return fields
    if fresh is not None:
        return {**fields, "cwd": cwd, "manifest_id": fresh}
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
