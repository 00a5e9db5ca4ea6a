"""The two tables of the UI: jobs (rows changed one by one as events arrive) and the
nodes' cards. Keys pressed on a table act on its selected row; the app does the work."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from nvq.model import Job, NodeView
from nvq.tui.gpu_bar import node_rows
from nvq.tui.jobs_view import COLUMNS, JobsView, order_key, row


class JobsTable(DataTable[str]):
    """One row per job, keyed by its id."""

    BINDINGS = [  # noqa: RUF012 (Textual's own class attribute)
        Binding("c", "app.job('cancel')", "cancel"),
        Binding("p", "app.job('pause')", "pause"),
        Binding("r", "app.job('resume')", "resume"),
        Binding("R", "app.job('requeue')", "requeue"),
        Binding("plus,equals_sign", "app.job('priority_up')", "prio+"),
        Binding("minus", "app.job('priority_down')", "prio-"),
        Binding("left_square_bracket", "app.job('lane_up')", "lane↑"),
        Binding("right_square_bracket", "app.job('lane_down')", "lane↓"),
        Binding("n", "app.job('note')", "note"),
    ]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.view = JobsView()

    def on_mount(self) -> None:
        for name in COLUMNS:
            self.add_column(name, key=name)

    def selected_id(self) -> int | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return int(key.value) if key.value is not None else None

    def show_all(self, jobs: list[Job]) -> None:
        """Fill the table from scratch: at start and when the filter changes."""
        keep = self.selected_id()
        self.clear()
        for job in jobs:
            self.add_row(*row(job), key=str(job.id))
        self._restore(keep)

    def load(self, jobs: list[Job]) -> None:
        self.show_all(self.view.load(jobs))

    def set_filter(self, text: str) -> None:
        self.show_all(self.view.set_filter(text))

    def apply(self, jobs: list[Job], gone: list[int]) -> None:
        """Fold a batch of changed jobs in, touching only their rows."""
        keep = self.selected_id()
        changes = self.view.apply(jobs, gone)
        for id in changes.removed:
            if str(id) in self.rows:
                self.remove_row(str(id))
        for job in changes.updated:
            for name, value in zip(COLUMNS, row(job), strict=True):
                self.update_cell(str(job.id), name, value)
        for job in changes.added:
            self.add_row(*row(job), key=str(job.id))
        if changes.reorder:
            jobs_by_id = self.view.jobs
            self.sort("ID", key=lambda id_cell: order_key(jobs_by_id[int(id_cell)]))
        if changes.removed or changes.reorder:
            self._restore(keep)

    def _restore(self, id: int | None) -> None:
        """Keep the cursor on the job it was on, wherever the job's row went."""
        if id is not None and str(id) in self.rows:
            self.move_cursor(row=self.get_row_index(str(id)), animate=False)


class NodesTable(DataTable[str | Text]):
    """One row per card (a node without cards: one row), with its memory bar."""

    BINDINGS = [  # noqa: RUF012
        Binding("d", "app.node('drain')", "drain node"),
        Binding("r", "app.node('resume')", "resume node"),
    ]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", **kwargs)  # type: ignore[arg-type]

    def on_mount(self) -> None:
        for name in ("NODE", "GPU", "MEMORY", "FREE", "UTIL", "JOBS"):
            self.add_column(name, key=name)

    def selected_node(self) -> str | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return key.value.rpartition(":")[0] if key.value else None

    def show(self, nodes: list[NodeView]) -> None:
        """A handful of rows: redrawn whole whenever a node or its cards change."""
        keep = self.cursor_row
        self.clear()
        for key, cells in node_rows(nodes):
            self.add_row(*cells, key=key)
        if self.row_count:
            self.move_cursor(row=min(keep, self.row_count - 1), animate=False)
