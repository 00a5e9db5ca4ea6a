"""`nvq project test` removes its temporary job directory when the run ends, unless
`--keep`, and then says where it is."""

from __future__ import annotations

from pathlib import Path

from tests.cluster import Nvq


def test_the_job_directory_goes_unless_kept(nvq: Nvq, tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    nvq.env["TMPDIR"] = str(scratch)
    manifest = tmp_path / "manifest.toml"
    manifest.write_text('[job]\ncommand = "echo \'{\\"ok\\": 1}\' > $NVQ_JOB_DIR/result.json"\n')
    r = nvq.run("project", "test", "--manifest", str(manifest))
    assert r.code == 0 and list(scratch.iterdir()) == []
    doc = nvq.run("project", "test", "--manifest", str(manifest), "--json").json()
    assert doc["job_dir"] is None and list(scratch.iterdir()) == []
    kept = nvq.run("project", "test", "--manifest", str(manifest), "--keep")
    (job_dir,) = scratch.iterdir()
    assert kept.code == 0 and kept.err == f"kept its job directory: {job_dir}\n"
    assert (job_dir / "result.json").read_text() == '{"ok": 1}\n'
