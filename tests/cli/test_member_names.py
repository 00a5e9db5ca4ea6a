"""An array member is named `7[3]` where a person reads about it (`job show`, `job
logs`), and a submit the daemon could not check yet says which node it waits for."""

from __future__ import annotations

from tests.cluster import Nvq


def test_show_and_logs_name_the_member(nvq: Nvq) -> None:
    doc = nvq.submit("--gpus", "0", "--array", "0-2", "--", "echo {}")
    array, member = doc["id"], doc["ids"][1]
    code, _ = nvq.wait(*doc["ids"])
    assert code == 0
    shown = nvq.ok("job", "show", f"{array}[1]").out
    assert shown.splitlines()[0].startswith(f"job {member} ({array}[1])  ")
    logs = nvq.ok("job", "logs", f"{array}[1]")
    assert (logs.out, logs.err) == ("1\n", f"==> job {member} ({array}[1]) <==\n")
    as_json = nvq.json("job", "logs", str(member))
    assert (as_json["member"], as_json["text"]) == (f"{array}[1]", "1\n")
    plain = nvq.submit("--gpus", "0", "--", "echo solo")
    nvq.wait(plain["id"])
    solo = nvq.ok("job", "logs", str(plain["id"]))
    assert (solo.out, solo.err) == ("solo\n", "")
    assert "member" not in nvq.json("job", "logs", str(plain["id"]))


def test_a_submit_the_daemon_could_not_check_says_so(nvq: Nvq) -> None:
    # `ghost` is configured but never answers: it never reports its cards.
    nvq.write_config(
        '[queue]\nlocal_node = true\nssh_connect_timeout = "1s"\n\n'
        '[[nodes]]\nname = "ghost"\nhost = "127.0.0.1"\nport = 1\n'
    )
    nvq.nodes_up()  # local: ghost never comes up
    r = nvq.ok("job", "submit", "--gpus", "0", "--", "true")
    assert r.out.endswith(
        "; accepted while node ghost has not reported (whether any node can run it is "
        "checked when it does)\n"
    )
    doc = nvq.submit("--gpus", "0", "--", "true")
    assert doc["unreported"] == ["ghost"]
    pinned = nvq.submit("--gpus", "0", "--node", "local", "--", "true")
    assert "unreported" not in pinned  # every node it may go to has reported
