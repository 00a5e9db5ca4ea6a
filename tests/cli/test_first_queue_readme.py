"""The README's "Your first queue", followed as written: its fake-card file and its
config (the node's address, user, key and known_hosts swapped for a harness sshd
node's; its state kept in the test's directory), then each of its commands, in order,
through the real CLI. The node's runner is installed by the daemon, as on a fresh node."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from tests.cluster import make_nvq

README = Path(__file__).resolve().parents[2] / "README.md"


def section() -> str:
    text = README.read_text()
    start = text.index("## Your first queue\n")
    return text[start : text.index("\n## ", start + 1)]


def blocks(text: str, lang: str) -> list[str]:
    found = re.findall(rf"^( *)```{lang}\n(.*?)^\1```", text, flags=re.S | re.M)
    return ["\n".join(line[len(indent):] for line in body.splitlines())
            for indent, body in found]


def commands(script: str) -> list[list[str]]:
    """Each `nvq ...` call of the shell block, `a && b` as two, comments dropped."""
    calls: list[list[str]] = []
    for line in script.splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            calls.append(words[:cut])
            words = words[cut + 1 :]
    return calls


def test_the_readme_gets_a_job_running_on_an_sshd_node(tmp_path: Path, sshd_nodes: Any) -> None:
    (node,) = sshd_nodes(1)
    text = section()
    gpus, config = blocks(text, "toml")
    fake = tmp_path / "fake-gpus.toml"
    fake.write_text(gpus)
    config = config.replace("/home/me/fake-gpus.toml", str(fake))
    config = config.replace('"gpu1.lab"', f'"{node.host}"').replace("port = 22", f"port = {node.port}")
    config = config.replace('user = "me"', f'user = "{node.user}"')
    config = config.replace('"~/.ssh/id_ed25519"', f'"{node.identity}"')
    config = config.replace('"~/.ssh/known_hosts"', f'"{node.known_hosts}"')
    # the node's state in this test's directory, not in the real ~/.nvq of its user
    config = config.replace('home = "~/.nvq"', f'home = "{node.home}/.nvq"')
    assert f'home = "{node.home}/.nvq"' in config
    nvq = make_nvq(tmp_path / "q", gpus=None)
    nvq.write_config(config)
    loaded = False
    try:
        for words in commands(blocks(text, "sh")[1]):
            assert words[0] == "nvq", words
            args = [w.replace("~/.nvq", f"{node.home}/.nvq") for w in words[1:]]
            r = nvq.run(*args, timeout=300)
            assert r.code == 0, (words, r)
            if args[:2] == ["queue", "nodes"]:
                assert "gpu1" in r.out, r.out
                if loaded:  # what the README says it shows, once the node was sampled
                    while "3.91GiB/80GiB" not in r.out:
                        r = nvq.run(*args)
            if "nvq_runner.fakeload" in " ".join(args):
                loaded = True
            if args[:2] == ["job", "logs"]:
                assert r.out.startswith("card 0 on "), r.out
    finally:
        nvq.shutdown()
