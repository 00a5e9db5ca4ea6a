"""A job's world over `[remote]`: the snapshot, directory and environment are taken on
the machine where the command was typed (the "laptop") and travel through a real sshd
to the queue host; `job pull` brings the job's files back to the laptop."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.cli.test_job_world import TRAIN, logs, make_project
from tests.cli.test_remote import pair  # noqa: F401 - the fixture
from tests.cluster import Nvq


def host_objects(host: Nvq) -> set[str]:
    objects = host.home / "blobs" / "objects"
    return {p.parent.name + p.name for p in objects.rglob("*") if p.is_file()}


def test_a_forwarded_submit_takes_the_typing_machines_snapshot(
    pair: tuple[Nvq, Nvq],  # noqa: F811
) -> None:
    host, laptop = pair
    assert laptop.cwd is not None
    project = make_project(laptop.cwd)
    laptop.env["VIRTUAL_ENV"] = str(project / ".venv")
    blocker = laptop.submit("--gpus", "0", "--no-snapshot", "--", "sleep 600")
    job = laptop.submit("--gpus", "0", "--after-any", str(blocker["id"]), "--",
                        sys.executable, "train.py")
    (project / "config.yaml").write_text("lr: 99\n")  # edited while the job waits
    laptop.ok("job", "cancel", str(blocker["id"]))
    code, (done,) = laptop.wait(job["id"])
    assert code == 0, done
    out = logs(laptop, job["id"])
    assert "config: lr: 0.1" in out
    assert out.split("cwd: ", 1)[1].splitlines()[0].endswith("/work")
    assert f"venv: {project / '.venv'}" in out
    shown = laptop.show(job["id"])
    assert shown["cwd"] == str(project) and shown["manifest_id"]
    # taken on the laptop (its stat cache), stored on the queue host
    assert (laptop.home / "blobs" / "statcache").is_file()
    assert not (laptop.home / "blobs" / "objects").exists()
    stored = host_objects(host)
    assert shown["manifest_id"] in stored
    # .gitignore'd data and the venv stayed behind: train.py, config.yaml, .gitignore
    assert len(stored) == 4

    # Again, with config.yaml as edited: one new file and one new manifest cross.
    again = laptop.submit("--gpus", "0", "--", sys.executable, "train.py")
    assert laptop.wait(again["id"])[0] == 0
    assert "config: lr: 99" in logs(laptop, again["id"])
    assert len(host_objects(host) - stored) == 2

    # The job's outputs come back to the laptop, through the queue host.
    back = laptop.cwd.parent / "back"
    doc = laptop.json("job", "pull", str(again["id"]), "--to", str(back))
    assert doc["paths"] == ["artifacts", "work"] and doc["node"] == "local"
    assert (back / "work" / "out.txt").read_text() == "written by the job\n"
    assert (back / "work" / "train.py").read_text() == TRAIN
    assert not (host.home / "pulls").exists() or not any((host.home / "pulls").iterdir())
    one = laptop.ok("job", "pull", str(again["id"]), "out.txt", "--to", str(back / "one"))
    assert one.out.startswith("pulled out.txt of job")
    assert [p.name for p in (back / "one").iterdir()] == ["out.txt"]


def test_forwarded_refusals_are_one_line_and_change_nothing(
    pair: tuple[Nvq, Nvq],  # noqa: F811
    tmp_path: Path,
) -> None:
    host, laptop = pair
    assert laptop.cwd is not None
    (laptop.cwd / "big.bin").write_bytes(b"x" * (2 << 20))
    laptop.write_config(laptop.home.joinpath("config.toml").read_text()
                        + '\n[submit]\nmax_snapshot = "1MiB"\n')
    r = laptop.run("job", "submit", "--gpus", "0", "--", "true")
    assert r.code == 2 and r.out == ""
    assert r.err.startswith("nvq: the snapshot of ") and "big.bin" in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert host.json("job", "ls")["jobs"] == []

    gone = laptop.run("job", "pull", "999", "--to", str(tmp_path / "x"))
    assert gone.code == 2 and "999" in gone.err and not (tmp_path / "x").exists()
    as_json = laptop.run("job", "pull", "999", "--json", "--to", str(tmp_path / "x"))
    assert as_json.code == 2 and '"error"' in as_json.out
