"""`nvq schema`: every command with --json has a described shape (or says why not),
the README's table is the one the shapes make, and real --json output decodes into
its shape and back to the same document (same keys, same types)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import msgspec
import typer.main

from nvq.cli.commands import full_app
from nvq.cli.json_shapes import NOT_DESCRIBED, SHAPES, readme_table, schema
from tests.cluster import Nvq

README = Path(__file__).resolve().parents[2] / "README.md"


def _commands(cmd: click.Command, path: list[str]) -> Iterator[tuple[str, click.Command]]:
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            yield from _commands(sub, [*path, name])
    else:
        yield " ".join(path), cmd


def test_every_command_with_json_has_a_shape_or_says_why_not() -> None:
    app = typer.main.get_command(full_app())
    with_json = {
        name for name, cmd in _commands(app, [])
        if any("--json" in getattr(p, "opts", []) for p in cmd.params)
    }
    assert with_json == set(SHAPES) | set(NOT_DESCRIBED)
    assert not set(SHAPES) & set(NOT_DESCRIBED)
    for command in SHAPES:
        doc = schema(command)
        assert doc["description"].startswith(f"nvq {command} --json")
        assert "$ref" in doc or "anyOf" in doc or "type" in doc


def test_the_readme_table_is_the_one_the_shapes_make() -> None:
    text = README.read_text()
    start = text.index("<!-- json-shapes")
    body = text[text.index("\n", start) + 1 : text.index("<!-- /json-shapes -->")]
    assert body.strip() == readme_table(), "regenerate: nvq.cli.json_shapes.readme_table()"


def _same_after_decoding(command: str, out: str) -> None:
    """Decoded into the shape and encoded again, the document is unchanged: no key
    the shape lacks, none it adds, every value of its type."""
    kind = SHAPES[command].kind
    decoded: Any = msgspec.json.decode(out, type=kind)
    assert json.loads(msgspec.json.encode(decoded)) == json.loads(out), command


def test_real_output_decodes_into_its_shape(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--", "echo hi")
    assert job["id"] == 1
    waited = nvq.run("job", "wait", "1", "--json")
    assert waited.code == 0
    _same_after_decoding("job wait", waited.out)
    for command in ["job show 1", "job ls", "job why 1", "queue status", "queue nodes",
                    "queue lanes", "queue events", "job artifacts 1", "job result 1",
                    "job logs 1"]:
        words = command.split()
        name = " ".join(w for w in words if not w.isdigit())
        _same_after_decoding(name, nvq.ok(*words, "--json").out)
    bad = nvq.run("schema", "job", "frobnicate")
    assert bad.code == 2 and bad.err == "nvq: no command `nvq job frobnicate` with --json (nvq schema lists them all)\n"
    shown = json.loads(nvq.ok("schema", "job", "show").out)
    assert shown["$ref"] == "#/$defs/JobDetail" and "attempts" in shown["$defs"]["JobDetail"]["properties"]
