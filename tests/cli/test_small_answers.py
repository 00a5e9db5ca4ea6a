"""Small honest answers: a lane on a card the node does not have is an error, and a
mistyped command gets one suggestion."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cluster import Nvq


def test_a_lane_on_a_missing_card_is_an_error(nvq: Nvq) -> None:
    nvq.nodes_up()
    r = nvq.run("queue", "lane", "local:7")
    assert r.code == 2  # bad input (README's exit code table)
    assert r.err == "nvq: lane local:7: node local has no GPU 7 (GPUs: 0, 1)\n"
    assert nvq.json("queue", "lane", "local:1")["jobs"] == []


def test_a_mistyped_command_is_suggested_once(nvq: Nvq) -> None:
    r = nvq.run("jbo")
    assert r.code == 2 and r.err == "nvq: No such command 'jbo'. Did you mean 'job'?\n"
    r = nvq.run("job", "sbumit")
    assert r.err == "nvq: No such command 'sbumit'. Did you mean 'submit'?\n"


def test_results_of_several_jobs_a_finished_array_and_a_submit_behind_a_failure(
    nvq: Nvq,
) -> None:
    first = nvq.submit("--gpus", "0", "--", 'echo \'{"loss": 0.5}\' > "$NVQ_JOB_DIR/result.json"')
    second = nvq.submit("--gpus", "0", "--", "true")
    arr = nvq.submit("--gpus", "0", "--array", "0-1", "--", "true")
    failed = nvq.submit("--gpus", "0", "--", "false")
    nvq.wait(first["id"], second["id"], failed["id"], arr["id"], arr["id"] + 1)

    out = nvq.ok("job", "result", str(first["id"]), str(second["id"])).out
    assert out == f'{first["id"]}\t{{"loss":0.5}}\n{second["id"]}\t(no result)\n'
    docs = nvq.json("job", "result", str(first["id"]), str(second["id"]))
    assert docs == {"results": [{"id": first["id"], "result": {"loss": 0.5}},
                                {"id": second["id"], "result": None}]}
    bad = nvq.run("job", "result", str(first["id"]), str(second["id"]), "--set", "{}")
    assert bad.code == 2 and "give one id" in bad.err

    cancel = nvq.ok("job", "cancel", "--array", str(arr["id"]))
    assert cancel.out == f"array {arr['id']}: nothing to cancel, every member has ended\n"

    held = nvq.ok("job", "submit", "--gpus", "0", "--after", str(failed["id"]), "--", "true")
    assert f"held: job {failed['id']} failed" in held.out
    assert "nvq job release" in held.out


def test_events_print_alike_with_and_without_follow(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--", "exit 3")
    nvq.wait(job["id"])
    table = nvq.ok("queue", "events").out.splitlines()
    assert table[0].split() == ["ID", "TIME", "KIND", "JOB", "NODE", "DATA"]
    assert not any("=None" in line for line in table)  # no empty fields
    last = table[-1]
    follower = subprocess.Popen(
        [sys.executable, "-m", "nvq", "queue", "events", "--follow"], env=nvq.env,
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert follower.stdout is not None
        followed = [follower.stdout.readline().rstrip("\n")]
        while followed[-1] != last:
            followed.append(follower.stdout.readline().rstrip("\n"))
            assert followed[-1], "the follower ended"
    finally:
        follower.kill()
        follower.wait()
    assert followed == table


def test_lane_help_lists_its_actions(nvq: Nvq) -> None:
    text = nvq.ok("queue", "lane", "--help").out
    for action in ("move ID --to head|N", "move ID --before ID2", "swap ID1 ID2", "skip",
                   "assign ID", "pause", "resume"):
        assert action in text


def test_shell_completion_completes_commands_and_options(nvq: Nvq) -> None:
    nvq_bin = Path(sys.executable).parent
    script = nvq.ok("completion", "bash").out
    env = {**nvq.env, "PATH": f"{nvq_bin}:{nvq.env['PATH']}"}
    ask = (
        'eval "$NVQ_SCRIPT"\n'
        "COMP_WORDS=(nvq job lo); COMP_CWORD=2; _nvq_completion nvq; echo \"${COMPREPLY[@]}\"\n"
        "COMPREPLY=(); COMP_WORDS=(nvq job logs --st); COMP_CWORD=3; _nvq_completion nvq\n"
        'echo "${COMPREPLY[@]}"\n'
    )
    got = subprocess.run(["bash", "-c", ask], env={**env, "NVQ_SCRIPT": script},
                         capture_output=True, text=True, timeout=60)
    assert got.stdout.splitlines() == ["logs", "--stdout --stderr --streams"], got.stderr
    assert "#compdef nvq" in nvq.ok("completion", "zsh").out
    assert "complete --no-files --command nvq" in nvq.ok("completion", "fish").out
    bad = nvq.run("completion", "tcsh")
    assert bad.code == 2 and bad.err == "nvq: no completion for 'tcsh': give bash, zsh or fish\n"
