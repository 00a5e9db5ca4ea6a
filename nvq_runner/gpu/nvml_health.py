"""Card health from NVML (pynvml): Xid events, volatile double-bit ECC errors, retired
pages or remapped rows pending, a card that is gone. It gathers `CardEvidence`;
`health.faults` judges it; a call that never returns is `gpu/watch.py`'s to notice
(each card is read from its own thread). Every call is guarded: a driver that
lacks one (no ECC on a consumer card) costs that piece of evidence only."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pynvml

from .health import CardEvidence

log = logging.getLogger(__name__)

class NvmlHealth:
    def __init__(self, handles: list[Any]) -> None:
        self._handles = handles
        # Sticky per card: an Xid is an event, and a lost card does not come back.
        self.evidence = [CardEvidence() for _ in handles]
        self._events: Any = None
        self._draining = threading.Lock()  # one card's thread drains for all
        try:
            self._events = pynvml.nvmlEventSetCreate()
            for h in handles:
                pynvml.nvmlDeviceRegisterEvents(
                    h, pynvml.nvmlEventTypeXidCriticalError, self._events
                )
        except pynvml.NVMLError as exc:
            log.info("NVML Xid events unavailable: %s", exc)

    def _xids(self) -> None:
        """Drain the pending Xid events without waiting."""
        if self._events is None or not self._draining.acquire(blocking=False):
            return
        try:
            self._drain()
        finally:
            self._draining.release()

    def _drain(self) -> None:
        while True:
            try:
                data = pynvml.nvmlEventSetWait_v2(self._events, 0)
            except pynvml.NVMLError:
                return  # NVML_ERROR_TIMEOUT: none pending (or events broke: none)
            index = next(
                (i for i, h in enumerate(self._handles) if h == data.device), None
            )
            if index is not None:
                self.evidence[index].xids.append(int(data.eventData))

    def read(self, index: int) -> CardEvidence:
        """The evidence on card `index`, refreshed."""
        ev = self.evidence[index]
        h = self._handles[index]
        self._xids()
        try:
            ev.ecc_dbe = int(
                pynvml.nvmlDeviceGetTotalEccErrors(
                    h, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC
                )
            )
        except pynvml.NVMLError_GpuIsLost:
            ev.lost = True
        except pynvml.NVMLError:
            pass  # no ECC on this card
        pending = False
        try:
            pending = (
                pynvml.nvmlDeviceGetRetiredPagesPendingStatus(h) == pynvml.NVML_FEATURE_ENABLED
            )
        except pynvml.NVMLError:
            pass  # Ampere and later remap rows instead
        try:
            _, _, is_pending, failed = pynvml.nvmlDeviceGetRemappedRows(h)
            pending = pending or bool(is_pending) or bool(failed)
        except pynvml.NVMLError:
            pass
        ev.retired_pending = pending
        return ev

    def close(self) -> None:
        if self._events is not None:
            try:
                pynvml.nvmlEventSetFree(self._events)
            except pynvml.NVMLError:
                pass
