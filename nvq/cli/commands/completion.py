"""`nvq completion SHELL`: the script that makes a shell complete nvq's commands,
options, job ids, node and lane names (nvq.cli.completing). The shell runs `nvq` with `_NVQ_COMPLETE` set for each completion; nvq.cli.main
hands those calls to click's completion before anything else."""

from __future__ import annotations

import click
import typer

from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError

on_completion = typer.Typer()  # attached as the `completion` command in nvq.cli.commands

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VAR = "_NVQ_COMPLETE"


@on_completion.command("completion")
def completion(
    shell: str = typer.Argument(..., help="bash, zsh or fish."),
    as_json: bool = JsonOpt,
) -> int:
    """Print the shell completion script.

    \b
    bash: echo 'eval "$(nvq completion bash)"' >> ~/.bashrc
    zsh:  echo 'eval "$(nvq completion zsh)"' >> ~/.zshrc
    fish: nvq completion fish > ~/.config/fish/completions/nvq.fish"""
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell) if shell in SHELLS else None
    if cls is None:
        raise CliError(f"no completion for {shell!r}: give bash, zsh or fish", 2)
    script = cls(root_command(), {}, "nvq", COMPLETE_VAR).source()
    if as_json:
        from nvq.cli.json_shapes import CompletionScript
        from nvq.cli.render.output import emit

        emit(CompletionScript(shell=shell, script=script), True)
    else:
        print(script)
    return 0


def root_command() -> click.Command:
    from nvq.cli.commands import full_app

    return typer.main.get_command(full_app())


def complete() -> int:
    """Answer one completion request from the shell (`_NVQ_COMPLETE` is set). Click's
    own handler, not typer's: typer reads the instruction the other way round
    (`complete_bash`), and the scripts above are click's (`bash_complete`)."""
    import os

    from click.shell_completion import shell_complete

    from nvq.cli.completing import offer_values

    instruction = os.environ.get(COMPLETE_VAR, "")
    return shell_complete(offer_values(root_command()), {}, "nvq", COMPLETE_VAR, instruction)
