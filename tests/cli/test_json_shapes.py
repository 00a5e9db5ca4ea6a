"""`nvq schema`: every command with --json has a described shape (or says why not),
the README's table is the one the shapes make, real --json output decodes into its
shape and back to the same document (same keys, same types), and every command's real
documents — plain, variants, empty and full lists, errors — validate against what
`nvq schema COMMAND` prints (jsonschema), one case list made to cover the whole table."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import jsonschema
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
    # a group that prints something itself (`nvq skill`) takes --json too
    with_json.add("skill")
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
    assert shown["anyOf"] == [{"$ref": "#/$defs/JobDetail"}, {"$ref": "#/$defs/ErrorDocument"}]
    assert "attempts" in shown["$defs"]["JobDetail"]["properties"]


# Every command of the table, in an order that builds the state the next one needs,
# with its variants, lists empty and full, and refusals. `{name}`s are filled from
# the jobs made on the way. Covering a new command is adding its row here.
CASES: list[tuple[str, str]] = [
    ("job ls", "job ls"),  # empty
    ("queue alerts", "queue alerts"),
    ("queue events", "queue events --since 999999"),
    ("reserve ls", "reserve ls"),
    ("cluster status", "cluster status"),  # no [[clusters]]: a refusal
    ("job submit", "job submit --gpus 0 -- true"),
    ("job submit", "job submit --gpus 0 --wait -- echo {q}result{q}"),
    ("job submit", "job submit --gpus 0 --array 0-1 -- true"),
    ("job submit", "job submit --gpus 0 --array 0-1 --wait -- true"),
    ("job submit", "job submit --gpus 0 --dry-run -- true"),
    ("job submit", "job submit --vram 20GB -- true"),
    ("job clone", "job clone {done}"),
    ("job clone", "job clone 999999"),
    ("job show", "job show {done}"),
    ("job show", "job show 999999"),
    ("job why", "job why {waiting}"),
    ("job wait", "job wait {done} {bad}"),
    ("job note", "job note {done} --append seen"),
    ("job result", "job result {done}"),
    ("job result", "job result {done} {bad}"),
    ("job result", "job result --array {array}"),
    ("job result", "job result 999999"),
    ("job edit", "job edit {waiting} --name renamed"),
    ("job move", "job move {waiting} local:1"),
    ("job priority", "job priority {waiting} 5"),
    ("job pause", "job pause {waiting}"),
    ("job resume", "job resume {waiting}"),
    ("job release", "job release {held}"),
    ("job release", "job release {done}"),
    ("job cancel", "job cancel {sleeper}"),
    ("job requeue", "job requeue {bad}"),
    ("job artifacts", "job artifacts {done}"),
    ("job artifacts", "job artifacts {done} --get {tmp}/artifacts"),
    ("job logs", "job logs {done}"),
    ("job pull", "job pull {done} --to {tmp}/pulled"),
    ("job ls", "job ls"),  # full
    ("queue status", "queue status"),
    ("queue nodes", "queue nodes"),
    ("queue drain", "queue drain local"),
    ("queue resume", "queue resume local"),
    ("node add", "node add spare --host 127.0.0.1 --port 9"),
    ("queue ignore", "queue ignore spare"),
    ("queue unignore", "queue unignore spare"),
    ("queue events", "queue events"),
    ("queue lanes", "queue lanes"),
    ("queue lane", "queue lane local:0"),
    ("queue busy", "queue busy local"),
    ("queue forbid-busy-assign", "queue forbid-busy-assign"),
    ("queue allow-busy-assign", "queue allow-busy-assign"),
    ("queue alerts", "queue alerts"),
    ("queue ack", "queue ack --all"),
    ("queue backup", "queue backup"),
    ("queue check", "queue check"),
    ("queue gc", "queue gc"),
    ("queue keeper logs", "queue keeper logs"),
    ("node health", "node health"),
    ("node status", "node status local"),
    ("node bootstrap", "node bootstrap nowhere"),
    ("image ls", "image ls"),
    ("image push", "image push nvq-test/none:1"),
    ("cluster scale", "cluster scale nowhere 1"),
    ("cluster drain", "cluster drain nowhere"),
    ("cluster retry", "cluster retry nowhere"),
    ("report", "report"),
    ("reserve add", "reserve add lab --cards local:1 --end 1h"),
    ("reserve ls", "reserve ls"),
    ("reserve rm", "reserve rm lab"),
    ("skill", "skill"),
    ("skill install", "skill install --dir {tmp}/skills"),
    ("completion", "completion bash"),
    ("schema", "schema job show"),
    ("schema", "schema job frobnicate"),
    ("daemon reload", "daemon reload"),
    ("node stop", "node stop local"),
    ("node start", "node start local"),
    ("node restart", "node restart local"),
    ("job purge", "job purge --dry-run"),
    ("job purge", "job purge --yes"),
    ("daemon stop", "daemon stop"),
    ("daemon stop", "daemon stop"),  # none running
    ("daemon start", "daemon start"),  # after a stop: clears its mark, starts one
]


def strict(schema_doc: dict[str, Any]) -> dict[str, Any]:
    """The schema with every struct closed (`additionalProperties: false`): a document
    with a key its shape does not name fails too. (The printed schemas leave objects
    open, so that a field added later does not break a reader that validates.)"""
    doc: dict[str, Any] = json.loads(json.dumps(schema_doc))
    for definition in doc.get("$defs", {}).values():
        if "properties" in definition:
            definition["additionalProperties"] = False
    return doc


def test_every_commands_documents_validate_against_its_schema(nvq: Nvq, tmp_path: Path) -> None:
    assert {command for command, _ in CASES} == set(SHAPES), "a command of the table has no case"
    nvq.nodes_up()
    done = nvq.submit("--gpus", "0", "--", "echo hi > $NVQ_ARTIFACTS/a.txt")["id"]
    bad = nvq.submit("--gpus", "0", "--", "false")["id"]
    array = nvq.submit("--gpus", "0", "--array", "0-1", "--", "true")["id"]
    nvq.wait(done, bad, array, array + 1)
    sleeper = nvq.submit("--gpus", "0", "--", "sleep", "600")["id"]
    nvq.wait_for(sleeper, lambda j: j["state"] == "running")
    waiting = nvq.submit("--gpus", "1", "--after", str(sleeper), "--", "true")["id"]
    held = nvq.submit("--gpus", "0", "--after", str(bad), "--", "true")["id"]
    nvq.wait_for(held, lambda j: j["state"] == "held")
    names = {"done": done, "bad": bad, "array": array, "sleeper": sleeper,
             "waiting": waiting, "held": held, "tmp": tmp_path, "q": "'"}
    schemas: dict[str, Any] = {}
    seen: dict[str, set[str]] = {}
    for command, line in CASES:
        words = line.format(**names).split()
        cut = words.index("--") if "--" in words else len(words)
        r = nvq.run(*words[:cut], "--json", *words[cut:], timeout=120)
        try:
            doc = json.loads(r.out)
        except ValueError:
            raise AssertionError(f"nvq {line} --json printed no JSON document: {r.out!r} {r.err!r}") from None
        if command not in schemas:
            schemas[command] = json.loads(nvq.ok("schema", *command.split()).out)
        for schema_doc in (schemas[command], strict(schemas[command])):
            errors = list(jsonschema.Draft202012Validator(schema_doc).iter_errors(doc))
            assert not errors, f"nvq {line} --json (exit {r.code}): {errors[0].message}\n{r.out[:2000]}"
        is_error = isinstance(doc, dict) and set(doc) == {"error", "exit_code"}
        assert (r.code != 0) == is_error or command in ("job wait", "queue alerts"), (line, r.code, r.out)
        seen.setdefault(command, set()).add("error" if is_error else "document")
    # every command printed a real document at least once, but the ones that need a
    # part this queue lacks (Slurm, Podman, an SSH node to bootstrap): only their refusal
    refused_only = {"node bootstrap", "image push", "cluster status", "cluster scale",
                    "cluster drain", "cluster retry"}
    assert {c for c, kinds in seen.items() if "document" not in kinds} <= refused_only
