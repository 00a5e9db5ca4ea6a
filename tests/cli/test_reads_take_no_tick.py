"""One list of the read commands (nvq.cli.fast.READS): every one of them takes
`--no-tick` (the reference skill's "a pure database read") and answers as without
it, whichever door parses its argv; a command that acts does not take it."""

from __future__ import annotations

from nvq.cli.fast import COMMANDS, READS, TYPER_READS
from tests.cluster import Nvq


def test_the_fast_reads_and_the_typer_reads_are_the_one_list() -> None:
    assert frozenset(COMMANDS) | TYPER_READS == READS
    assert not TYPER_READS & set(COMMANDS)


def test_every_read_takes_no_tick(nvq: Nvq) -> None:
    nvq.nodes_up()
    job = nvq.submit("--gpus", "0", "--", "true")["id"]
    assert nvq.wait(job)[0] == 0
    argument = {("job", "show"): [str(job)], ("job", "result"): [str(job)],
                ("job", "why"): [str(job)], ("job", "logs"): [str(job)],
                ("job", "artifacts"): [str(job)], ("job", "wait"): [str(job)],
                ("queue", "lane"): ["local:0"], ("node", "status"): ["local"]}
    for read in sorted(READS):
        args = [*read, *argument.get(read, [])]
        plain = nvq.run(*args, "--json")
        ticked = nvq.run(*args, "--no-tick", "--json")
        assert (ticked.code, ticked.err) == (plain.code, plain.err), read
    acts = nvq.run("job", "cancel", str(job), "--no-tick")
    assert acts.code == 2 and "--no-tick" in acts.err
