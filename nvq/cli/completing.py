"""What the shell is offered for a command's values (`nvq completion`): job ids, the
live ones first (running, then waiting, newest first; then the latest ended), node
names and lane names, read from the daemon that is running. No daemon, or any
trouble asking it: nothing is offered, and no daemon is started for it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import click
from click.shell_completion import CompletionItem

JOB_ARGUMENTS = frozenset({"job_id", "job_ids"})
NODE_PARAMS = frozenset({"node"})
LANE_PARAMS = frozenset({"lane"})
RECENT = 30  # ended jobs offered after the live ones


def ordered_jobs(jobs: Iterable[Any]) -> list[Any]:
    """Running first, then the other live jobs, newest first; ended ones last."""
    rank = {"running": 0}
    live = sorted((j for j in jobs if not j.state.finished),
                  key=lambda j: (rank.get(j.state.value, 1), -j.id))
    ended = sorted((j for j in jobs if j.state.finished), key=lambda j: -j.id)
    seen: set[int] = set()
    out = []
    for j in [*live, *ended]:
        if j.id not in seen:
            seen.add(j.id)
            out.append(j)
    return out


def _ask(read: Callable[[Any], list[CompletionItem]]) -> list[CompletionItem]:
    from nvq.client import Client, ClientError

    try:
        with Client(autostart=False) as client:
            return read(client)
    except (ClientError, OSError):
        return []


def job_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    def read(client: Any) -> list[CompletionItem]:
        jobs = ordered_jobs([*client.jobs(active=True), *client.jobs(limit=RECENT)])
        return [CompletionItem(str(j.id), help=f"{j.state.value} {j.name}")
                for j in jobs if str(j.id).startswith(incomplete)]
    return _ask(read)


def node_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    def read(client: Any) -> list[CompletionItem]:
        return [CompletionItem(n.name, help=n.state) for n in client.nodes()
                if n.name.startswith(incomplete)]
    return _ask(read)


def lane_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    def read(client: Any) -> list[CompletionItem]:
        return [CompletionItem(lane.lane) for lane in client.lanes()
                if lane.lane.startswith(incomplete)]
    return _ask(read)


def offer_values(command: click.Command) -> click.Command:
    """Give every job id, node and lane parameter under `command` its completion."""
    for param in command.params:
        if isinstance(param, click.Argument) and param.name in JOB_ARGUMENTS:
            param._custom_shell_complete = job_ids  # what shell_complete= would set
        elif param.name in NODE_PARAMS:
            param._custom_shell_complete = node_names
        elif param.name in LANE_PARAMS:
            param._custom_shell_complete = lane_names
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            offer_values(sub)
    return command
