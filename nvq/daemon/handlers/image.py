"""`nvq image push REF [--nodes …]`: staging an image on nodes ahead of its jobs; and
`nvq image ls`: what each node's runtime store holds.

The client has saved the image into the queue's blob store (nvq/world/images.py,
the same archive a submit stages); each chosen node's runner is asked to load it
(`StageImage`), fetching the chunks its blob cache lacks over its own link exactly
as a job's attempt would, and answers when its store has the image. Nodes are asked
together; the reply says, per node, whether it loaded the image, already had it, or
why it could not."""

from __future__ import annotations

import anyio

from nvq import control as c
from nvq.daemon.core.errors import BadRequest
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.daemon.machines.blobs import blob_store
from nvq.daemon.machines.image_staging import LISTED, STAGED, refusal
from nvq.daemon.machines.node_views import node_views
from nvq.domain.permissions import ANYONE, admin
from nvq_runner import protocol as p
from nvq_runner.protocol import is_hash


@handles(c.ImagePush, may=admin("stage an image on nodes"))
async def image_push(ctx: Context, req: c.ImagePush, user: str) -> c.ImagesPushed:
    state = ctx.state
    if not is_hash(req.image_manifest) or not blob_store(state.home).has(req.image_manifest):
        raise BadRequest("the image's archive is not in the queue's blob store: "
                         "push it from the queue host")
    named = [state.find_node(n) for n in req.nodes] if req.nodes else \
        [n for n in state.nodes.values() if not n.ignored]
    nodes = list({n.name: n for n in named}.values())
    results: dict[str, c.ImageOnNode] = {}

    async def one(node: NodeRuntime) -> None:
        why = refusal(node)
        if why is not None:
            results[node.name] = c.ImageOnNode(node=node.name, error=why)
            return
        runtime = node.config.runtime if node.config and node.config.runtime else ""
        answer = await STAGED.ask(node, lambda r: p.StageImage(
            req=r, image=req.image, image_manifest=req.image_manifest, runtime=runtime,
            image_id=req.image_id))
        if answer is None:
            results[node.name] = c.ImageOnNode(
                node=node.name, error="the node did not answer (its link dropped?)")
            return
        results[node.name] = c.ImageOnNode(
            node=node.name, loaded=answer.loaded, fetched_bytes=answer.fetched_bytes,
            seconds=round(answer.seconds, 3), error=answer.error)

    async with anyio.create_task_group() as tg:
        for node in nodes:
            tg.start_soon(one, node)
    return c.ImagesPushed(image=req.image, image_id=req.image_id, size=req.size,
                          nodes=[results[n.name] for n in nodes])


@handles(c.ImageList, may=ANYONE)
async def image_list(ctx: Context, req: c.ImageList, user: str) -> list[c.NodeCache]:
    """Each node's runtime store, listed now by every node that can say (the others:
    what they said last, or nothing)."""
    async def one(node: NodeRuntime) -> None:
        if refusal(node) is None:
            await LISTED.ask(node, lambda r: p.ListImages(req=r))  # runner_events keeps it

    async with anyio.create_task_group() as tg:
        for node in list(ctx.state.nodes.values()):
            tg.start_soon(one, node)
    return [c.NodeCache(node=v.name, runtime=v.runtime, images=v.images)
            for v in node_views(ctx.state, ctx.machines.pilots)]
