"""`nvq job shell [SUBMIT OPTIONS] [-- CMD]`: an interactive job. It takes every
`job submit` option (the same parser runs: one definition of each), queues the job
as interactive, shows where it stands while it waits, and then is a terminal on the
job's node until the shell exits; `nvq` exits with the shell's code."""

from __future__ import annotations

import functools
import inspect
import os
import sys
from pathlib import Path  # noqa: F401 - job_submit's annotations resolve here
from typing import Any

import msgspec
import typer

from nvq.cli.commands.submit import RUN_SPEC, job_submit, on_job
from nvq.cli.dashes import KeepsRawArgs
from nvq.cli.params import CliError
from nvq.model import JobSpec

NOT_FOR_A_SHELL = ("array", "wait", "manifest", "script")


@on_job.command(
    "shell",
    cls=KeepsRawArgs,
    context_settings={"allow_interspersed_args": False},
)
@functools.wraps(job_submit)
def job_shell(ctx: typer.Context, *args: Any, **kwargs: Any) -> int:
    """A terminal on a queued GPU: waits for the cards, then a shell (or CMD) on the node."""
    for name in NOT_FOR_A_SHELL:
        if kwargs.get(name):
            raise CliError(f"--{name} is not for a shell: it is one interactive job", 2)
    keep = bool(kwargs.pop("no_idle_release", False))
    ctx.meta[RUN_SPEC] = functools.partial(run_shell, idle_release=not keep)
    return int(job_submit(ctx, *args, **kwargs))


job_shell.__doc__ = "A terminal on a queued GPU: waits for the cards, then a shell (or CMD) on the node."
# Every option of `job submit`, and the one only a shell has.
_NO_IDLE = inspect.Parameter(
    "no_idle_release", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation="bool",
    default=typer.Option(False, "--no-idle-release",
                         help="Keep the session when idle ([queue] interactive_idle)."),
)
_submit_sig = inspect.signature(job_submit)
_params = list(_submit_sig.parameters.values())
job_shell.__signature__ = _submit_sig.replace(  # type: ignore[attr-defined]
    parameters=[*_params[:-1], _NO_IDLE, _params[-1]]
)
job_shell.__annotations__ = {**job_submit.__annotations__, "no_idle_release": "bool"}


def run_shell(spec: JobSpec, as_json: bool, *, idle_release: bool = True) -> int:
    from nvq import control as c
    from nvq.cli.terminal import run_session, window
    from nvq.client import Client

    if as_json:
        raise CliError("--json is not for a shell: its output is a terminal", 2)
    rows, cols = window()
    term = os.environ.get("TERM")
    if term and "TERM" not in spec.env:
        # Full-screen programs on the node draw for the terminal they run in.
        spec = msgspec.structs.replace(spec, env={**spec.env, "TERM": term})
    job_id: list[int] = []
    sock = Client().open_stream(
        c.Shell(spec=spec, rows=rows, cols=cols, idle_release=idle_release))
    try:
        done = run_session(sock, on_progress=lambda d: job_id.append(int(d.get("job", 0))))
    except KeyboardInterrupt:
        if job_id:
            print(f"\nnvq: job {job_id[-1]} withdrawn", file=sys.stderr)
        return 130
    if done.error:
        print(f"nvq: {done.error}", file=sys.stderr)
    return done.exit_code
