"""Requests only a running job's own `nvq` sends (over its `$NVQ_SOCKET`,
nvq_runner/job_cli.py); members of `Request` (requests.py) like the rest."""

from __future__ import annotations

import msgspec


class SubmitFromJob(msgspec.Struct, tag="submit_from_job", frozen=True):
    """`nvq job submit ARGV` typed inside job `id` (over its `$NVQ_SOCKET`): the queue
    parses `argv` with the CLI's own parser (nvq.cli.submit_argv). `cwd`: where it was
    typed, on the job's node; `subdir`: the same place inside the job's working copy
    ("" its top; None: outside it). Answered with the document `job submit --json`
    prints: the job, the array, or (--dry-run) the preview."""

    argv: list[str]
    id: int  # the calling job (its owner's rights: the permission table's `owner`)
    cwd: str
    subdir: str | None = None
