"""The `nvq` inside a job (nvq_runner/job_cli.py, standard library only) takes the
options the CLI's commands take, but those it names in NOT_INSIDE with a reason: a
new option of the CLI fails this until the in-job `nvq` takes it too (or says why not).
`job submit` is not here: its words go to the queue, which parses them with the
CLI's own parser (nvq/cli/submit_argv.py)."""

from __future__ import annotations

import argparse

import click
import typer.main

from nvq.cli.commands import full_app
from nvq_runner import job_cli

COMMANDS = [("job", "show"), ("job", "why"), ("job", "ls"), ("job", "wait"), ("job", "result"),
            ("job", "cancel"), ("job", "note"), ("job", "logs"), ("queue", "status")]


def cli_options(path: tuple[str, str]) -> set[str]:
    command: click.Command = typer.main.get_command(full_app())
    for word in path:
        assert isinstance(command, click.Group)
        command = command.commands[word]
    return {o for p in command.params if isinstance(p, click.Option) for o in p.opts}


def shim_options(path: tuple[str, str]) -> set[str]:
    parser: argparse.ArgumentParser = job_cli._parser()
    for word in path:
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = sub.choices[word]
    hidden = {"-h", "--help", "--no-tick"}
    return {o for a in parser._actions for o in a.option_strings} - hidden


def test_the_in_job_nvq_takes_the_clis_options() -> None:
    for path in COMMANDS:
        left_out = {flag for (*where, flag) in job_cli.NOT_INSIDE if tuple(where) == path}
        assert shim_options(path) == cli_options(path) - left_out, path
