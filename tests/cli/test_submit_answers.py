"""`nvq job submit` answers honestly at once: a stray word before `--`, an e-mail
nobody can send, and a job no node could ever run are errors at submit (exit 2), and
a duration may be spelt out when quoted."""

from __future__ import annotations

from tests.cluster import Nvq


def test_a_stray_word_before_dashes_is_named_not_run(nvq: Nvq) -> None:
    r = nvq.run("job", "submit", "--timeout", "5", "minutes", "--", "echo", "hi")
    assert r.code == 2
    assert r.err.strip() == (
        "nvq: unexpected 'minutes' before --; did you mean --timeout '5 minutes' or 5m?"
    )
    r = nvq.run("job", "submit", "--name", "my", "sweep", "--", "true")
    assert r.code == 2 and r.err.strip() == (
        "nvq: unexpected 'sweep' before --; did you mean --name 'my sweep'?"
    )
    assert nvq.json("job", "ls")["jobs"] == []


def test_dashes_inside_the_command_are_the_commands_own(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--", "echo", "a", "--", "b")
    code, (done,) = nvq.wait(job["id"])
    assert code == 0 and done["command"] == "echo a -- b"


def test_a_quoted_duration_may_be_spelt_out(nvq: Nvq) -> None:
    for text, seconds in [("5 minutes", 300), ("1 hour", 3600), ("2h30m", 9000)]:
        job = nvq.submit("--gpus", "0", "--timeout", text, "--", "true")
        assert job["timeout"] == seconds, text


def test_mail_without_a_mail_channel_is_an_error(nvq: Nvq) -> None:
    for flag in ("--email-on-success", "--email-on-failure"):
        r = nvq.run("job", "submit", "--gpus", "0", flag, "--", "true")
        assert r.code == 2 and "no [notify.email] in config.toml" in r.err, r.err
        assert r.err.startswith(f"nvq: {flag}: ")
    assert nvq.json("job", "ls")["jobs"] == []


def _node_up(nvq: Nvq) -> None:
    nvq.nodes_up()


def test_a_job_no_node_could_ever_run_is_refused_with_the_reason(nvq: Nvq) -> None:
    _node_up(nvq)  # until then the node might hold anything, and the job is accepted
    r = nvq.run("job", "submit", "--gpus", "3", "--", "true")
    assert r.code == 2
    assert r.err.strip() == (
        "nvq: no node can ever run this job: needs 3 GPUs; the most on any node is 2"
    )
    r = nvq.run("job", "submit", "--node", "nowhere", "--", "true")
    assert r.code == 2 and "--node 'nowhere' matches no node" in r.err
    assert nvq.json("job", "ls")["jobs"] == []


def test_a_submit_answers_without_the_captured_environment(nvq: Nvq) -> None:
    """As lists do: `env_captured` is null in `job submit --json` (single, --wait), and
    `job show --json` has it."""
    nvq.env["SUBMIT_SHELL_VAR"] = "from-the-shell"
    job = nvq.submit("--gpus", "0", "--", "true")
    waited = nvq.submit("--gpus", "0", "--wait", "--", "true")
    assert job["env_captured"] is None and waited["env_captured"] is None
    assert waited["state"] == "completed"
    assert nvq.show(job["id"])["env_captured"]["SUBMIT_SHELL_VAR"] == "from-the-shell"
