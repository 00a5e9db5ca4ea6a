"""The two tables of the UI: jobs (rows changed one by one as events arrive) and the
nodes' cards. Keys pressed on a table act on its selected row; the app does the work."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

from nvq.cli.render.jobs import runtime
from nvq.model import Job, JobState, NodeView
from nvq.tui.gpu_bar import node_rows
from nvq.tui.jobs_view import COLUMNS, JobsView, away_at, order_key, row, state_cell

try:  # DataTable's row index (see JobsTable._take_order)
    from textual._two_way_dict import TwoWayDict
except ImportError:  # a Textual that moved it: the table sorts instead
    TwoWayDict = None  # type: ignore[assignment,misc]


def cells(
    job: Job, away: Mapping[str, float] | None = None, now: float | None = None
) -> tuple[Text, ...]:
    """A job's row as literal text: DataTable reads a plain string as Rich markup, and
    names, notes and reasons are what users typed (`[reverse]AB[/]CD` is a name)."""
    return tuple(Text(value) for value in row(job, away, now))


class JobsTable(DataTable[Text]):
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
        self._row_keys: dict[int, RowKey] = {}

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
        away = self.view.away
        self._row_keys = {
            job.id: self.add_row(*cells(job, away), key=str(job.id)) for job in jobs
        }
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
            if self._row_keys.pop(id, None) is not None:
                self.remove_row(str(id))
        away = self.view.away
        for job in changes.updated:
            for name, value in zip(COLUMNS, cells(job, away), strict=True):
                self.update_cell(str(job.id), name, value)
        for job in changes.added:
            self._row_keys[job.id] = self.add_row(*cells(job, away), key=str(job.id))
        if changes.reorder:
            self._take_order(changes.moved_from)
        if changes.removed or changes.reorder:
            self._restore(keep)

    def tick(self, now: float) -> None:
        """Count the runtime of the running jobs whose rows are on screen to `now`
        (and the countdown of those out of reach): rows scrolled away wait for their
        turn, so 10,000 rows cost what 40 do."""
        first = int(self.scroll_offset.y)
        jobs, away = self.view.jobs, self.view.away
        for line in self.ordered_rows[first : first + self.size.height + 1]:
            job = jobs.get(int(str(line.key.value)))
            if job is not None and job.state is JobState.RUNNING:
                self.update_cell(line.key, "RUNTIME", Text(runtime(job, now)))
                if away_at(job, away) is not None:
                    self.update_cell(line.key, "STATE", Text(state_cell(job, away, now)))

    def set_away(self, away: dict[str, float], now: float) -> None:
        """Nodes out of reach → their reassign moment (read with the nodes): the
        running jobs of a node that left or came back are redrawn."""
        before, self.view.away = self.view.away, away
        if before == away:
            return
        moved = {n for n in before.keys() | away.keys() if before.get(n) != away.get(n)}
        for job in self.view.jobs.values():
            if job.state is JobState.RUNNING and job.node in moved and job.id in self._row_keys:
                self.update_cell(str(job.id), "STATE", Text(state_cell(job, away, now)))

    def _take_order(self, start: int) -> None:
        """Lay the rows out in the view's order, from position `start` on. DataTable
        can only append rows, or sort all of them through a Python key per row (a
        tenth of a second per change at 10,000 rows); the view keeps its order sorted
        already, so only the table's row index from `start` on is rewritten. Textual
        keeps that index in a private attribute: where it is not there, sort."""
        locations = getattr(self, "_row_locations", None)
        if TwoWayDict is None or not isinstance(locations, TwoWayDict):
            jobs = self.view.jobs
            self.sort("ID", key=lambda id_cell: order_key(jobs[int(str(id_cell))]))
            return
        keys = self._row_keys
        for i, (_, id) in enumerate(self.view.order[start:], start):
            locations[keys[id]] = i
        self._update_count += 1
        self.refresh()

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
