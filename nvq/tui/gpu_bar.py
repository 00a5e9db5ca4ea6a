"""A GPU's memory as one bar: foreign use, the queue's use, reserved but not yet used,
free; and the rows of the nodes panel. Pure: NodeView in, Rich text out."""

from __future__ import annotations

from rich.text import Text

from nvq.cli.render.queue import unreachable_label
from nvq.model import GpuView, NodeView
from nvq.values import format_mib

# (glyph, style) per share, in the order they fill the bar from the left
FOREIGN = ("█", "red")
QUEUE = ("█", "green")
RESERVED = ("▒", "yellow")
FREE = ("░", "grey42")


def shares(gpu: GpuView) -> tuple[int, int, int, int]:
    """MiB of foreign use, queue use, reserved beyond the queue's use, and free. The
    daemon's `reserved_mb` counts reservations that the queue's actual use partly fills,
    so only the unfilled rest is drawn as reserved."""
    total = max(gpu.mem_total_mb, 0)
    foreign = min(max(gpu.external_mem_mb, 0), total)
    queue = min(max(gpu.queue_mem_mb, 0), total - foreign)
    reserved = min(max(gpu.reserved_mb - gpu.queue_mem_mb, 0), total - foreign - queue)
    return foreign, queue, reserved, total - foreign - queue - reserved


def cells(parts: tuple[int, ...], total: int, width: int) -> list[int]:
    """Split `width` cells among `parts` (which add up to `total`), rounding so that
    any non-zero share shows at least one cell while the bar keeps its width."""
    if total <= 0:
        return [0] * (len(parts) - 1) + [width]
    counts = [round(width * p / total) for p in parts]
    for i, p in enumerate(parts):
        if p > 0 and counts[i] == 0:
            counts[i] = 1
    while sum(counts) > width:
        i = max(range(len(counts)), key=lambda k: counts[k])
        counts[i] -= 1
    counts[-1] += width - sum(counts)
    return counts


def gpu_bar(gpu: GpuView, width: int = 24) -> Text:
    parts = shares(gpu)
    bar = Text()
    for n, (glyph, style) in zip(
        cells(parts, sum(parts), width), (FOREIGN, QUEUE, RESERVED, FREE), strict=True
    ):
        bar.append(glyph * n, style=style)
    return bar


def util(gpu: GpuView) -> str:
    return "-" if gpu.util_percent is None else f"{gpu.util_percent}%"


def gpu_row(node: NodeView, gpu: GpuView) -> tuple[str | Text, ...]:
    """NODE, GPU, the bar, free of total, utilisation, jobs on the card."""
    return (
        node.name,
        f"{gpu.index} ({gpu.reservation})" if gpu.reservation else str(gpu.index),
        gpu_bar(gpu),
        # "13.5GiB/24GiB" read as used of total: the words say which it is
        f"{format_mib(max(gpu.free_mb, 0))} of {format_mib(gpu.mem_total_mb)}",
        util(gpu),
        ",".join(map(str, gpu.jobs)) or "-",
    )


def node_row(node: NodeView) -> tuple[str | Text, ...]:
    """A node without GPUs (or down, with none reported): its state in the bar's place."""
    state = (unreachable_label(node) or node.state) + (f" ({node.error})" if node.error else "")
    return (
        node.name,
        "-",
        Text(state, style="bold red" if node.state == "down" else ""),
        "",
        "",
        "",
    )


def node_rows(nodes: list[NodeView]) -> list[tuple[str, tuple[str | Text, ...]]]:
    """(row key, cells) for every GPU of every node; the key names the node and card."""
    out: list[tuple[str, tuple[str | Text, ...]]] = []
    for node in nodes:
        shown = unreachable_label(node) or node.state
        label = node.name if node.state == "up" else f"{node.name} [{shown}]"
        if not node.gpus:
            out.append((f"{node.name}:-", node_row(node)))
        for gpu in node.gpus:
            cells_ = gpu_row(node, gpu)
            out.append((f"{node.name}:{gpu.index}", (label, *cells_[1:])))
    return out


LEGEND = Text.assemble(
    (FOREIGN[0], FOREIGN[1]),
    " foreign  ",
    (QUEUE[0], QUEUE[1]),
    " queue  ",
    (RESERVED[0], RESERVED[1]),
    " reserved  ",
    (FREE[0], FREE[1]),
    " free",
)
