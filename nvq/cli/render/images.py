"""`nvq image push` and `nvq image ls` as text."""

from __future__ import annotations

from nvq.cli.render.table import safe, table

TYPE_CHECKING = False
if TYPE_CHECKING:  # `image ls` renders here on the fast path, where typing costs
    from nvq import control as c


def mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def pushed_text(doc: c.ImagesPushed) -> str:
    lines = []
    for n in doc.nodes:
        if n.error:
            lines.append(f"{n.node}: failed: {safe(n.error)}")
        elif n.loaded:
            lines.append(f"{n.node}: loaded ({mib(n.fetched_bytes)} sent, {n.seconds:.1f}s)")
        else:
            lines.append(f"{n.node}: already there")
    failed = sum(1 for n in doc.nodes if n.error)
    loaded = sum(1 for n in doc.nodes if n.loaded)
    lines.append(f"{safe(doc.image)} (sha256:{doc.image_id[:12]}, {mib(doc.size)}): "
                 f"loaded on {loaded}, already on {len(doc.nodes) - loaded - failed}, "
                 f"failed on {failed} of {len(doc.nodes)} node(s)")
    return "\n".join(lines)


def images_text(doc: list[c.NodeCache]) -> str:
    rows = []
    for n in doc:
        if n.runtime == "":
            rows.append([n.node, "-", "(no container runtime)", "", ""])
        elif n.images is None:
            rows.append([n.node, n.runtime or "-", "(not reported: not connected?)", "", ""])
        elif not n.images:
            rows.append([n.node, n.runtime or "-", "(none)", "", ""])
        rows += [[n.node, n.runtime or "-", safe(i.ref) or "<none>", i.id[:12], mib(i.size)]
                 for i in n.images or []]
    return table(["NODE", "RUNTIME", "IMAGE", "ID", "SIZE"], rows)
