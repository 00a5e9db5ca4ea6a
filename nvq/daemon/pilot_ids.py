"""The Slurm job ids of the pilots this queue submitted, per cluster, in
`$NVQ_HOME/pilots.json` (0600): a restarted daemon adopts them, and never touches a
job of the same name it did not submit."""

from __future__ import annotations

import json
import os
from pathlib import Path


class PilotIds:
    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, list[str]]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(k): [str(i) for i in v] for k, v in data.items() if isinstance(v, list)}

    def add(self, cluster: str, job_id: str) -> None:
        ids = self.load()
        if job_id not in ids.setdefault(cluster, []):
            ids[cluster].append(job_id)
            self._write(ids)

    def forget(self, cluster: str, job_id: str) -> None:
        ids = self.load()
        if job_id in ids.get(cluster, []):
            ids[cluster].remove(job_id)
            self._write(ids)

    def _write(self, ids: dict[str, list[str]]) -> None:
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({k: v for k, v in ids.items() if v}, f)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(self.path)
