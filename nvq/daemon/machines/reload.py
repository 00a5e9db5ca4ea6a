"""`nvq daemon reload` and SIGHUP: re-read config.toml and apply what changed
(`nvq.config.changes` decides; this applies it). A config that does not load is
refused with its one line and the running one kept. Nodes added get a link; a node
whose connection changed is reconnected; a node removed is drained at once and,
once its running jobs have ended, its runner is stopped and it is forgotten."""

from __future__ import annotations

import logging
from pathlib import Path

import msgspec

from nvq import control as c
from nvq.config import ConfigError, load_config
from nvq.config.changes import diff
from nvq.daemon.core.errors import RequestError
from nvq.daemon.core.held import locked
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.daemon.machines.links import Links
from nvq.daemon.machines.runner_stop import stop_runner
from nvq.daemon.ops import Ops
from nvq.daemon.placement.inputs import PilotNodes
from nvq.daemon.placement.memory import Memory
from nvq.model import NewEvent, Tx
from nvq_runner import protocol as p

log = logging.getLogger("nvq.daemon")


class Reloader:
    def __init__(
        self, state: State, ops: Ops, links: Links, home: Path, memory: Memory,
        pilots: PilotNodes | None = None,
    ) -> None:
        self.state = state
        self.ops = ops
        self.links = links
        self.home = home
        self.memory = memory  # placement's: a retired node's slot is forgotten
        self.pilots = pilots
        # The last reload's changes that need a restart (`queue status` names them
        # until this daemon stops).
        self.needs_restart: list[str] = []

    async def reload(self) -> c.Reloaded:
        try:
            new = load_config(self.home)
        except ConfigError as exc:
            raise RequestError(f"not reloaded, the running config is kept: {exc}") from None
        state = self.state
        async with locked(state) as held:
            changes = diff(state.config, new)
            config = changes.config
            state.config = self.ops.config = self.ops.notifier.config = config
            state.usage.config = config
            for nc in [*changes.updated, *changes.reconnect]:
                node = state.nodes[nc.name]
                node.config, node.allow = nc, nc.gpus
            for nc in changes.reconnect:
                scope = state.nodes[nc.name].link_scope
                if scope is not None:
                    scope.cancel()  # the link opens again, with the new config
            for nc in changes.added:
                old = state.nodes.get(nc.name)
                if old is not None and old.removed:  # removed, then back before it went
                    old.config, old.allow, old.removed = nc, nc.gpus, False
                    rec = (await state.store.nodes()).get(nc.name)
                    old.drained = rec.drained if rec is not None else False
                    continue
                node = NodeRuntime(name=nc.name, config=nc, allow=nc.gpus)
                await self._restore(node)
                state.nodes[nc.name] = node
                self.links.start(node)
            for name in changes.removed:
                node = state.nodes[name]
                node.removed = node.drained = True
                self.links.tg.start_soon(self._retire, node)
            state.mirror_cards()
            if self.pilots is not None:
                self.pilots.reconfigure(config.clusters)
            self.needs_restart = list(changes.refused)
            if changes.applied or changes.refused:
                data = {"applied": changes.applied, "refused": changes.refused}
                await held.commit(Tx(events=[NewEvent("config_reloaded", None, None, data)]))
            state.notify()
        state.kick()
        for line in changes.applied:
            log.info("reload: %s", line)
        for line in changes.refused:
            log.warning("reload: %s", line)
        return c.Reloaded(applied=changes.applied, refused=changes.refused)

    async def _restore(self, node: NodeRuntime) -> None:
        """What queue.db kept of a node added again (its journal position, flags)."""
        rec = (await self.state.store.nodes()).get(node.name)
        if rec is None:
            return
        node.journal_id, node.applied_seq = rec.journal_id, rec.applied_seq
        node.drained, node.ignored, node.last_seen = rec.drained, rec.ignored, rec.last_seen
        if rec.facts:
            try:
                node.hello = msgspec.convert(rec.facts, p.Hello)
            except msgspec.ValidationError:
                node.hello = None

    async def _retire(self, node: NodeRuntime) -> None:
        """A removed node: once its jobs have ended, stop its runner and forget it."""
        state = self.state
        while node.removed and state.jobs_on(node.name):
            changed = state.changed
            await changed.wait()
        if not node.removed:
            return  # added back meanwhile
        try:
            if node.hello is not None:
                await stop_runner(state.config, self.home, node)
        except Exception as exc:  # unreachable: its runner stays, idle; said once
            log.warning("node %s removed: its runner was not stopped: %s", node.name, exc)
        async with locked(state):
            if not node.removed:
                return
            self.links.stop(node.name)
            state.nodes.pop(node.name, None)
            self.memory.slot_cache.pop(node.name, None)
            state.notify()
        log.info("node %s removed from config.toml: idle, forgotten", node.name)
