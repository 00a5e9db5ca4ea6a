"""The artifacts wing's door for a runner's messages: a manifest or a tree it was asked
for, a chunk of a file, a job asking for its artifacts to be synced now. The runner
side (`nvq.daemon.machines.runner_events`) hands them here without knowing the wing."""

from __future__ import annotations

from nvq.daemon.artifacts.artifact_syncs import ArtifactSyncs
from nvq.daemon.artifacts.artifacts import Artifacts
from nvq.daemon.core.nodes import NodeRuntime
from nvq_runner import protocol as p


class ArtifactMessages:
    def __init__(self, artifacts: Artifacts, syncs: ArtifactSyncs) -> None:
        self.artifacts = artifacts
        self.syncs = syncs

    def on_manifest(self, msg: p.ArtifactsManifest) -> None:
        self.artifacts.on_manifest(msg)

    def on_tree(self, msg: p.ArtifactsTreeReply) -> None:
        self.artifacts.chunked.on_reply(msg)

    def on_chunk(self, msg: p.ChunkBytes) -> None:
        self.artifacts.chunked.link_reads.on_reply(msg)

    def on_sync_wanted(self, node: NodeRuntime, msg: p.SyncWanted) -> None:
        self.syncs.sync_now(node, msg.job_id, msg.attempt)
