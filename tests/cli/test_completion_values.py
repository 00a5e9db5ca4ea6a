"""The shell's completion offers job ids (live ones first), node names and lane names
from the running daemon, as bash asks for them (`nvq completion bash`'s protocol);
and `nvq --version`, `nvq --help` grouped with the global options."""

from __future__ import annotations

from tests.cluster import Nvq


def _offered(nvq: Nvq, line: str) -> list[str]:
    words = line.split(" ")
    env = {**nvq.env, "_NVQ_COMPLETE": "bash_complete", "COMP_WORDS": line,
           "COMP_CWORD": str(len(words) - 1)}
    saved, nvq.env = nvq.env, env
    try:
        out = nvq.ok().out
    finally:
        nvq.env = saved
    return [row.split(",", 1)[1] for row in out.splitlines() if "," in row]


def test_job_ids_live_first_then_node_and_lane_names(nvq: Nvq) -> None:
    done = nvq.submit("--gpus", "0", "--", "true")["id"]
    nvq.wait(done)
    running = nvq.submit("--gpus", "0", "--", "sleep", "600")["id"]
    nvq.wait_for(running, lambda j: j["state"] == "running")
    offered = _offered(nvq, "nvq job show ")
    assert offered[:2] == [str(running), str(done)], offered
    assert _offered(nvq, "nvq job cancel ")[:1] == [str(running)]
    assert _offered(nvq, "nvq queue drain ") == ["local"]
    assert _offered(nvq, "nvq queue lane lo") == ["local:0", "local:1"]
    assert _offered(nvq, f"nvq job logs {running}9") == []
    nvq.ok("job", "cancel", str(running))


def test_version_and_grouped_help(nvq: Nvq) -> None:
    version = nvq.ok("--version").out
    assert version.startswith("nvq ") and version.strip().split()[1][0].isdigit()
    text = nvq.ok("--help").out
    for heading in ("Global options:", "Jobs:", "Queue:", "Nodes:", "Admin:", "  --json", "  NVQ_HOME"):
        assert f"\n{heading}" in text, heading
