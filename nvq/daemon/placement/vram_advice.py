"""A submit's `--vram` against what the same command reached before
(nvq.domain.vram_history): `--vram auto` resolved to a size, or a warning for a
reservation below the command's peak. Reads the store only for GPU jobs that give
`--vram` (or `auto`)."""

from __future__ import annotations

import msgspec

from nvq.daemon.core.errors import BadRequest, RequestError
from nvq.daemon.core.state import State
from nvq.domain import vram_history as vh
from nvq.model import JobSpec
from nvq.store import vram_peaks


async def advise(state: State, spec: JobSpec) -> tuple[JobSpec, str | None]:
    """`spec` with `--vram auto` resolved, and the line its submit says about it."""
    if spec.vram_mb == vh.VRAM_AUTO and spec.gpus == 0:
        raise BadRequest("--vram auto: a job with --gpus 0 reserves no GPU memory")
    if spec.gpus == 0 or spec.vram_mb == 0:
        return spec, None
    command = spec.command
    reached = await state.store.sync(lambda conn: vram_peaks.reached(conn, command))
    if spec.vram_mb == vh.VRAM_AUTO:
        if reached is None:
            raise RequestError(vh.NO_HISTORY)
        sized = msgspec.structs.replace(spec, vram_mb=vh.auto_vram(reached))
        return sized, vh.auto_note(reached)
    return spec, vh.below_note(spec.vram_mb, reached)
