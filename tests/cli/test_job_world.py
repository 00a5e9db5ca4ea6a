"""A job's world through the real CLI on the local node: the submit directory's
snapshot, the captured environment, and how `job show` reports them."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.cluster import Nvq

TRAIN = """\
import os, pathlib
print("config:", pathlib.Path("config.yaml").read_text().strip())
print("cwd:", os.getcwd())
print("venv:", os.environ.get("VIRTUAL_ENV"))
pathlib.Path("out.txt").write_text("written by the job\\n")
"""


def make_project(root: Path) -> Path:
    (root / "config.yaml").write_text("lr: 0.1\n")
    (root / "train.py").write_text(TRAIN)
    (root / ".gitignore").write_text("data/\n")
    (root / "data").mkdir()
    (root / "data" / "big.bin").write_bytes(b"x" * 1000)
    venv = root / ".venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return root


def logs(nvq: Nvq, job_id: int) -> str:
    return nvq.ok("job", "logs", str(job_id), "-n", "-1").out


def test_relative_script_runs_the_code_as_it_was_at_submit(nvq: Nvq) -> None:
    assert nvq.cwd is not None
    project = make_project(nvq.cwd)
    nvq.env["VIRTUAL_ENV"] = str(project / ".venv")
    blocker = nvq.submit("--gpus", "0", "--no-snapshot", "--", "sleep 600")
    job = nvq.submit("--gpus", "0", "--after-any", str(blocker["id"]), "--",
                     sys.executable, "train.py")
    (project / "config.yaml").write_text("lr: 99\n")  # edited while the job waits
    nvq.ok("job", "cancel", str(blocker["id"]))
    code, (done,) = nvq.wait(job["id"])
    assert code == 0, done
    out = logs(nvq, job["id"])
    assert "config: lr: 0.1" in out
    work = Path(out.split("cwd: ", 1)[1].splitlines()[0])
    assert work.name == "work" and (work / "out.txt").read_text() == "written by the job\n"
    assert not (work / "data").exists() and not (work / ".venv").exists()
    assert f"venv: {project / '.venv'}" in out  # the local node gets the shell's env
    shown = nvq.show(job["id"])
    assert shown["cwd"] == str(project) and shown["manifest_id"]
    assert shown["env_captured"]["VIRTUAL_ENV"] == str(project / ".venv")


def test_secrets_are_hidden_unless_revealed(nvq: Nvq) -> None:
    nvq.env["HF_TOKEN"] = "hf_abc"
    job = nvq.submit("--gpus", "0", "--env", "DB_PASSWORD=pw", "--env", "MODE=fast", "--",
                     "true")
    shown = nvq.show(job["id"])
    assert shown["env_captured"]["HF_TOKEN"] == "***"
    assert shown["env"] == {"DB_PASSWORD": "***", "MODE": "fast"}
    revealed = nvq.json("job", "show", str(job["id"]), "--reveal")
    assert revealed["env_captured"]["HF_TOKEN"] == "hf_abc"
    text = nvq.ok("job", "show", str(job["id"])).out
    assert "HF_TOKEN" not in text and "MODE=fast" not in text  # counted, not listed
    assert f"from --env (`nvq job show {job['id']} --env` lists them)" in text
    listed = nvq.ok("job", "show", str(job["id"]), "--env").out
    assert "HF_TOKEN=***" in listed and "hf_abc" not in listed and "MODE=fast" in listed


def test_show_leads_with_where_how_it_ended_and_what_happened(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--", "echo step; echo 'Err''or: no data' >&2; exit 4")
    assert nvq.wait(job["id"])[0] == 1
    text = nvq.ok("job", "show", str(job["id"])).out
    order = ["[failed]", "  where ", "  exit code   4", "  stderr tail:", "Error: no data",
             "  attempts:", "  events:", "  submitter ", "  environment "]
    at = [text.index(mark) for mark in order]
    assert at == sorted(at), text


def test_no_env_takes_only_explicit_values(nvq: Nvq) -> None:
    nvq.env["SOME_SETTING"] = "from-shell"
    job = nvq.submit("--gpus", "0", "--no-env", "--env", "ONLY=this", "--",
                     'echo "[$SOME_SETTING] [$ONLY]"')
    code, _ = nvq.wait(job["id"])
    assert code == 0
    assert nvq.show(job["id"])["env_captured"] == {}
    assert "[from-shell]" not in logs(nvq, job["id"])
    assert "[this]" in logs(nvq, job["id"])


def test_explicit_env_wins_over_the_shell(nvq: Nvq) -> None:
    nvq.env["MODE"] = "shell"
    job = nvq.submit("--gpus", "0", "--env", "MODE=cli", "--", 'echo "mode=$MODE"')
    assert nvq.wait(job["id"])[0] == 0
    assert "mode=cli" in logs(nvq, job["id"])


def test_an_oversized_snapshot_is_refused_naming_the_largest_entries(nvq: Nvq) -> None:
    assert nvq.cwd is not None
    nvq.write_config('[submit]\nmax_snapshot = "1MiB"\n')
    (nvq.cwd / "weights").mkdir()
    (nvq.cwd / "weights" / "model.pt").write_bytes(b"\0" * (2 << 20))
    (nvq.cwd / "train.py").write_text("print(1)\n")
    r = nvq.run("job", "submit", "--gpus", "0", "--", "true")
    assert r.code == 2
    assert "the snapshot of" in r.err and "weights/ (2.0 MiB)" in r.err
    assert "--no-snapshot" in r.err
    assert nvq.run("job", "submit", "--gpus", "0", "--no-snapshot", "--", "true").code == 0


def test_a_sweep_stores_its_code_once(nvq: Nvq) -> None:
    assert nvq.cwd is not None
    make_project(nvq.cwd)
    ids = [nvq.submit("--gpus", "0", "--", "true")["id"] for _ in range(3)]
    manifests = {nvq.show(i)["manifest_id"] for i in ids}
    assert len(manifests) == 1
    objects = [p for p in (nvq.home / "blobs").rglob("*") if p.is_file()
               and len(p.parent.name) == 2 and p.parent.parent.name == "objects"]
    # config.yaml, train.py, .gitignore and the manifest: no copy per job
    assert len(objects) == 4


def test_in_place_runs_in_the_live_directory(nvq: Nvq) -> None:
    assert nvq.cwd is not None
    project = make_project(nvq.cwd)
    blocker = nvq.submit("--gpus", "0", "--no-snapshot", "--", "sleep 600")
    job = nvq.submit("--gpus", "0", "--in-place", "--after-any", str(blocker["id"]), "--",
                     sys.executable, "train.py")
    (project / "config.yaml").write_text("lr: live\n")
    nvq.ok("job", "cancel", str(blocker["id"]))
    assert nvq.wait(job["id"])[0] == 0
    assert "config: lr: live" in logs(nvq, job["id"])
    assert (project / "out.txt").read_text() == "written by the job\n"
    shown = nvq.show(job["id"])
    assert shown["in_place"] is True and shown["manifest_id"] is None


def test_in_place_from_config_and_a_vanished_directory(nvq: Nvq) -> None:
    assert nvq.cwd is not None
    nvq.write_config("[submit]\nin_place = true\n")
    project, gone = nvq.cwd, nvq.cwd / "scratch"
    gone.mkdir()
    blocker = nvq.submit("--gpus", "0", "--snapshot", "--", "sleep 600")
    assert blocker["in_place"] is False
    nvq.cwd = gone
    job = nvq.submit("--gpus", "0", "--after-any", str(blocker["id"]), "--", "pwd")
    assert job["in_place"] is True
    nvq.cwd = project
    gone.rmdir()
    nvq.ok("job", "cancel", str(blocker["id"]))
    code, (done,) = nvq.wait(job["id"])
    assert code == 1 and done["state"] == "failed", done
    assert "sees its directory" in (done["reason"] or "")


def test_pull_brings_back_outputs_and_artifacts(nvq: Nvq, tmp_path: Path) -> None:
    assert nvq.cwd is not None
    make_project(nvq.cwd)
    job = nvq.submit("--gpus", "0", "--",
                     f"{sys.executable} train.py && echo ckpt > $NVQ_ARTIFACTS/model.ckpt")
    assert nvq.wait(job["id"])[0] == 0
    doc = nvq.json("job", "pull", str(job["id"]), "--to", str(tmp_path / "back"))
    assert doc["paths"] == ["artifacts", "work"]
    back = tmp_path / "back"
    assert (back / "work" / "out.txt").read_text() == "written by the job\n"
    assert (back / "work" / "train.py").read_text() == TRAIN
    assert (back / "artifacts" / "model.ckpt").read_text() == "ckpt\n"
    (back / "work" / "train.py").write_text("edited after pull\n")  # ours to change
    one = nvq.ok("job", "pull", str(job["id"]), "out.txt", "--to", str(tmp_path / "one"))
    assert "pulled out.txt" in one.out
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == ["out.txt"]
    again = nvq.run("job", "pull", str(job["id"]), "--to", str(back))
    assert again.code == 1 and "already exists" in again.err


def test_nvq_state_inside_the_submit_directory_is_not_snapshotted(nvq: Nvq) -> None:
    # Typed one level up: the queue's own home (`nvq/`) is under the submit directory,
    # and so is another queue's home, known only by its database.
    above = nvq.home.parent
    (above / "old-queue").mkdir()
    (above / "old-queue" / "queue.db").write_bytes(b"")
    (above / "old-queue" / "notes.txt").write_text("state\n")
    (above / "keep.txt").write_text("code\n")
    nvq.cwd = above
    job = nvq.submit("--gpus", "0", "--", "ls -A")
    code, _ = nvq.wait(job["id"])
    assert code == 0
    listed = logs(nvq, job["id"]).split()
    assert "keep.txt" in listed and "project" in listed
    assert nvq.home.name not in listed and "old-queue" not in listed


def test_show_lists_the_files_the_job_wrote(nvq: Nvq) -> None:
    assert nvq.cwd is not None
    make_project(nvq.cwd)
    job = nvq.submit("--gpus", "0", "--",
                     f"{sys.executable} train.py && mkdir -p res && printf 12345 > "
                     "res/metrics.txt && echo 'lr: 0.2' > new && mv new config.yaml")
    assert nvq.wait(job["id"])[0] == 0
    written = nvq.show(job["id"])["written"]
    assert [(f["path"], f["size"]) for f in written] == [
        ("config.yaml", 8), ("out.txt", 19), ("res/metrics.txt", 5)]
    assert all(f["mtime"] >= job["created_at"] for f in written)
    text = nvq.ok("job", "show", str(job["id"])).out
    assert "written     3 file(s) in its working copy" in text
    assert "res/metrics.txt" in text and "train.py" not in text.split("written", 1)[1]
    # a job without a working copy lists nothing
    plain = nvq.submit("--gpus", "0", "--no-snapshot", "--", "true")
    assert nvq.wait(plain["id"])[0] == 0
    assert nvq.show(plain["id"])["written"] == []
