"""The `[submit]` table: how `nvq job submit` captures a job's world on this host
(which variables to leave out, the snapshot's size limit, in-place runs)."""

from __future__ import annotations

from typing import Any

from nvq.config.fields import Convert, FieldReader
from nvq.config.types import SubmitConfig


def read_submit(r: FieldReader, value: Any) -> SubmitConfig:
    fields: dict[str, Convert] = {
        "env_exclude": r.string_list,
        "max_snapshot": r.size,
        "in_place": r.boolean,
    }
    table = r.table(value, "submit", set(fields))
    out = {key: fields[key](item, f"submit.{key}") for key, item in table.items()}
    if "max_snapshot" in out:
        out["max_snapshot"] = out["max_snapshot"] * 1024 * 1024
    return SubmitConfig(**out)
