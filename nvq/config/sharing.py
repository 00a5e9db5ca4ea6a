"""Sharing a lab: the fair-share keys of `[queue]`, `[limits]`, and what a
`[users.NAME]` table says about that user's share and limits."""

from __future__ import annotations

from typing import Any

import msgspec

from nvq.config.fields import Convert, FieldReader
from nvq.config.types import Limits, LimitsConfig
from nvq.values import MAX_INT, MIN_INT

LIMIT_KEYS = (
    "max_running_gpus",
    "max_running_jobs",
    "max_queued_jobs",
    "max_gpu_hours",
    "max_preempt_priority",
)
SHARE_KEYS = {"share", *LIMIT_KEYS}


def queue_fields(r: FieldReader) -> dict[str, Convert]:
    return {
        "fair_share": r.boolean,
        "fair_share_halflife": r.duration,
        "fair_share_by": lambda v, k: r.choice(v, k, ("user", "submitter")),
        "preempt": r.boolean,
        "share_cards": r.boolean,
    }


def limit_values(r: FieldReader, table: dict[str, Any], where: str) -> dict[str, Any]:
    """The limit keys present in `table`, checked."""
    out: dict[str, Any] = {}
    for key in LIMIT_KEYS:
        if key not in table:
            continue
        if key == "max_gpu_hours":
            out[key] = r.positive_number(table[key], f"{where}.{key}")
        elif key == "max_preempt_priority":  # priorities may be negative
            out[key] = r.integer(table[key], f"{where}.{key}", MIN_INT, MAX_INT)
        else:
            out[key] = r.integer(table[key], f"{where}.{key}", 0)
    return out


def read_limits(r: FieldReader, value: Any) -> LimitsConfig:
    table = r.table(value, "limits", {*LIMIT_KEYS, "exempt_admins"})
    exempt = False
    if "exempt_admins" in table:
        exempt = r.boolean(table["exempt_admins"], "limits.exempt_admins")
    return LimitsConfig(defaults=Limits(**limit_values(r, table, "limits")), exempt_admins=exempt)


def user_sharing(
    r: FieldReader, table: dict[str, Any], name: str, defaults: Limits
) -> dict[str, Any]:
    """`share` and the limits of one `[users.NAME]` table, as UserConfig fields: its
    limits are the `[limits]` defaults with the keys it gives replaced."""
    out: dict[str, Any] = {"limits": defaults}
    if "share" in table:
        out["share"] = r.positive_number(table["share"], f"users.{name}.share")
    given = limit_values(r, table, f"users.{name}")
    if given:
        out["limits"] = msgspec.structs.replace(defaults, **given)
    return out
