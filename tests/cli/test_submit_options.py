"""A submit option is declared once (nvq.domain.submit_options) and every door takes
it from there: typer's `job submit`, `job shell` and `job edit`, the fast path's
table, `SubmitArgs`, the JobSpec it sets, manifest.toml and the queue's editable set;
an edit reads a value as a submit does."""

from __future__ import annotations

import click
import msgspec
import typer.main

from nvq.cli.commands import full_app
from nvq.cli.fast_submit import OPTIONS
from nvq.cli.submit_flow import SubmitArgs
from nvq.domain.submit_options import SUBMIT_OPTIONS
from nvq.domain.validate import SUBMIT_FIELDS, flag_of
from nvq.manifest import KEYS
from nvq.model import JobSpec
from tests.cluster import Nvq

# JobSpec fields no option sets: the command comes after --, the world (directory,
# environment, snapshot, in place or not) from where the submit was typed.
NOT_AN_OPTION = {"command", "submitter", "cwd", "env_captured", "manifest_id", "subdir",
                 "in_place", "interactive", "image_manifest", "image_id"}


def _command(*path: str) -> click.Command:
    command: click.Command = typer.main.get_command(full_app())
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


def _options(command: click.Command) -> dict[str, tuple[list[str], str | None, bool]]:
    return {p.name or "": (p.opts + p.secondary_opts, getattr(p, "help", None), p.hidden)
            for p in command.params if isinstance(p, click.Option)}


def test_each_jobspec_field_has_its_option_or_is_the_world() -> None:
    set_by = {o.field for o in SUBMIT_OPTIONS if o.field}
    assert set(JobSpec.__struct_fields__) - set_by == NOT_AN_OPTION
    assert set(SubmitArgs.__struct_fields__) == {"command", *(o.param for o in SUBMIT_OPTIONS)}
    assert {f.field for f in SUBMIT_FIELDS} <= {k[0] for k in KEYS.values()}
    assert all(flag_of(o.field) == o.flag for o in SUBMIT_OPTIONS if o.field)


def test_typer_takes_the_table_as_declared() -> None:
    want = {o.param: ([f for fs in o.flags for f in fs.split("/")], o.help or None, o.hidden)
            for o in SUBMIT_OPTIONS}
    assert _options(_command("job", "submit")) == want
    shell = _options(_command("job", "shell"))
    assert shell.pop("no_idle_release")[0] == ["--no-idle-release"]
    assert shell == want
    edit = _options(_command("job", "edit"))
    assert {edit.pop(p)[0][0] for p in ("drop_after", "add_after", "command", "as_json")} == {
        "--drop-after", "--add-after", "--command", "--json"}
    assert {o.param: o.edit for o in SUBMIT_OPTIONS if o.edit} == {
        p: help for p, (_, help, _) in edit.items()}


def test_the_fast_path_takes_the_table_less_what_only_typer_parses() -> None:
    fast = {o.param for o in SUBMIT_OPTIONS if o.fast}
    assert {param for param, _ in OPTIONS.values()} == fast
    assert {o.param for o in SUBMIT_OPTIONS if not o.fast} == {
        "script", "dry_run", "image", "manifest", "from_cwd", "from_env", "from_snapshot"}


def test_an_edit_reads_a_value_as_a_submit_does(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--timeout", "1h", "--signal", "USR1@5m", "--", "sleep 30")
    assert job["checkpoint_signal"] == "USR1@300"
    nvq.ok("job", "pause", str(job["id"]))
    edited = nvq.json("job", "edit", str(job["id"]), "--signal", "usr2@2m")
    assert edited["checkpoint_signal"] == "USR2@120"
    bad = nvq.run("job", "edit", str(job["id"]), "--signal", "KILL@1m")
    assert (bad.code, bad.err) == (2, "nvq: invalid --signal 'KILL': SIGKILL is not one a job "
                                   "can be warned with (one of USR1, USR2, TERM, INT, HUP, QUIT, "
                                   "ALRM, URG, WINCH)\n")
    assert msgspec.json.decode(nvq.ok("job", "show", str(job["id"]), "--json").out)[
        "checkpoint_signal"] == "USR2@120"
    nvq.ok("job", "cancel", str(job["id"]))
