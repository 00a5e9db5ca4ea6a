"""The read commands without typer, when argv has a plain shape: `nvq GROUP COMMAND`,
then at most the one argument the command takes (a job id of ASCII digits, or a
name), its on/off flags, its number options (`-n 200`: the option, then a number
of ASCII digits), its word options (`--user ana`: a plain word, as a name is) and
`--json`, each once, in any order; nothing else.

Importing typer and click and building the command tree costs a CLI call more than
the interpreter's own start; a read that a script runs in a loop should cost little
more than the socket exchange. Every read command has one body (nvq.cli.reads: its
request and its one renderer) that its typer command calls too, so this path only
parses argv. Anything else (`--opt=value`, `7[3]`, `--help`, `--`, a malformed id,
a repeated flag or option) goes to typer, which prints what it always printed.
tests/cli/test_fast_path.py runs both for the same argv and compares every byte.
NVQ_CLI_TYPER=1 turns this path off (the test uses it to run the typer command)."""

from __future__ import annotations

import os

JSON = "--json"

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing itself costs the calls this module exists to make cheap
    from collections.abc import Callable
    from typing import Any


class FastCommand:
    __slots__ = ("arg", "body", "flags")

    def __init__(self, body: Callable[..., int], arg: list[Any], flags: dict[str, Any]) -> None:
        self.body = body
        self.arg = arg  # the positional argument, when the command takes one
        self.flags = flags

    def run(self, as_json: bool) -> int:
        """The exit status; a refusal prints its one line, as the typer path does."""
        from nvq.cli.failure import guarded

        return guarded(lambda: self.body(*self.arg, as_json, **self.flags), as_json)


def _reads(name: str) -> Callable[..., int]:
    def body(*args: Any, **kwargs: Any) -> int:
        from nvq.cli import reads

        result: int = getattr(reads, name)(*args, **kwargs)
        return result

    return body


# The argument a command takes: none, one job id, one name, or an optional name.
NONE, ID, NAME, OPTIONAL_NAME = "none", "id", "name", "name?"

# (group, command) → (its body, its argument, its flags: option → the body's keyword)
COMMANDS: dict[tuple[str, str], tuple[Callable[..., int], str, dict[str, str]]] = {
    ("job", "show"): (_reads("job_show"), ID, {}),
    ("job", "ls"): (_reads("job_ls"), NONE, {
        "--all": "every", "--held": "held", "--active": "active", "--mine": "mine"}),
    ("job", "result"): (_reads("job_result"), ID, {}),
    ("job", "why"): (_reads("job_why"), ID, {}),
    ("job", "logs"): (_reads("job_logs"), ID, {
        "-f": "follow", "--follow": "follow", "--stdout": "stdout", "--stderr": "stderr",
        "--setup": "setup", "--streams": "streams", "--raw": "raw",
    }),
    ("job", "artifacts"): (_reads("job_artifacts"), ID, {}),
    ("queue", "status"): (_reads("queue_status"), NONE, {}),
    ("queue", "nodes"): (
        _reads("queue_nodes"), NONE, {"--procs": "procs", "--include-ignored": "include_ignored"}
    ),
    ("queue", "alerts"): (_reads("queue_alerts"), NONE, {"--detail": "detail", "--all": "show_all"}),
    ("queue", "lanes"): (_reads("queue_lanes"), NONE, {}),
    ("queue", "lane"): (_reads("queue_lane"), NAME, {}),
    ("queue", "events"): (_reads("queue_events"), NONE, {}),
    ("node", "status"): (_reads("node_status"), NAME, {}),
    ("node", "health"): (_reads("node_health"), OPTIONAL_NAME, {}),
    ("cluster", "status"): (_reads("cluster_status"), OPTIONAL_NAME, {}),
    ("reserve", "ls"): (_reads("reserve_ls"), NONE, {}),
    ("image", "ls"): (_reads("image_ls"), NONE, {}),
}

# Reads whose argv typer parses (no plain shape): reads all the same.
TYPER_READS = frozenset({("job", "wait")})
# Every command that only reads, the one list: each takes `--no-tick` (nvq.cli.main),
# and the MCP server runs them observing (nvq.agents.mcp_server).
READS = frozenset(COMMANDS) | TYPER_READS


# (group, command) → its options that take a whole number: option → the body's keyword
NUMBERS: dict[tuple[str, str], dict[str, str]] = {
    ("job", "logs"): {"-n": "lines", "--lines": "lines", "--attempt": "attempt"},
    ("job", "ls"): {"--limit": "limit", "--array": "array"},
}

# (group, command) → its options that take a word: option → the body's keyword
WORDS: dict[tuple[str, str], dict[str, str]] = {
    ("job", "ls"): {"--state": "state", "--user": "user", "--tag": "tag", "--since": "since"},
}


def _plain_int(arg: str) -> int | None:
    """`7` or `-1`, ASCII digits only (what else click would take is typer's)."""
    digits = arg[1:] if arg.startswith("-") else arg
    if digits.isascii() and digits.isdigit():
        return int(arg)
    return None


def _plain_id(arg: str) -> int | None:
    # ASCII digits only: click's int() would take "+7", " 7", "7_0" and "٧", and say
    # its own words about what it refuses; those go to typer.
    if arg.isascii() and arg.isdigit():
        return int(arg)
    return None


def _plain_name(arg: str) -> str | None:
    # what click takes as the argument itself: not an option, not `--`; printable
    # ASCII, so that no terminal or locale question arises that typer would answer
    if arg and not arg.startswith("-") and arg.isascii() and arg.isprintable():
        return arg
    return None


def fast_command(args: list[str]) -> FastCommand | None:
    """The command here that answers `nvq ARGS`, or None: typer's to run."""
    if len(args) < 2 or os.environ.get("NVQ_CLI_TYPER"):
        return None
    entry = COMMANDS.get((args[0], args[1]))
    if entry is None:
        return None
    body, takes, options = entry
    numbers = NUMBERS.get((args[0], args[1]), {})
    texts = WORDS.get((args[0], args[1]), {})
    rest: list[str] = []
    flags: dict[str, Any] = {}
    words = iter(args[2:])
    for word in words:
        if word in numbers:
            number = _plain_int(next(words, ""))
            if number is None or numbers[word] in flags:  # no number, or twice: typer's
                return None
            flags[numbers[word]] = number
        elif word in texts:
            text = _plain_name(next(words, ""))
            if text is None or texts[word] in flags:  # no word, or twice: typer's
                return None
            flags[texts[word]] = text
        else:
            rest.append(word)
    if len(set(rest)) != len(rest):  # a repeated flag or argument: typer's
        return None
    for word in rest:
        if word in options:
            if options[word] in flags:  # `-f --follow`: typer's
                return None
            flags[options[word]] = True
    positional = [a for a in rest if a != JSON and a not in options]
    if takes == NONE:
        return FastCommand(body, [], flags) if not positional else None
    if len(positional) > 1 or (not positional and takes != OPTIONAL_NAME):
        return None
    if not positional:
        return FastCommand(body, [None], flags)
    value: int | str | None = (
        _plain_id(positional[0]) if takes == ID else _plain_name(positional[0])
    )
    return FastCommand(body, [value], flags) if value is not None else None
