"""`nvq queue`: the queue on one screen. Nodes with their cards' memory, the event
stream, the jobs (filtered), the selected job's output following live, and keys that
act on the selected job or node. Everything goes through the async client: the job list
is read once, then each event batch refetches only the jobs it names."""

from __future__ import annotations

import asyncio
import codecs
import time
from collections.abc import Awaitable, Callable

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, Input, Log, Static

from nvq.cli.render.events import kind_text
from nvq.cli.render.jobs import job_where, runtime
from nvq.client import ClientError
from nvq.client.asynchronous import AsyncClient
from nvq.model import Event, Job
from nvq.tui import actions
from nvq.tui.dialogs import ConfirmScreen, LogScreen, TextScreen
from nvq.tui.feed import Batch, changed_jobs, event_stream, initial_jobs
from nvq.tui.gpu_bar import LEGEND
from nvq.tui.jobs_view import RECENT_KEPT, waiting_reason
from nvq.tui.latest import latest_event_id
from nvq.tui.liveness import progress_changes
from nvq.tui.tables import JobsTable, NodesTable

CSS = """
#top { height: 30%; max-height: 14; }
#nodes { width: 3fr; }
#events { width: 2fr; border-left: solid $accent; }
#filter { height: 3; }
#jobs { height: 1fr; min-height: 5; }
#detail { height: auto; max-height: 3; background: $boost; }
#logs { height: 25%; border-top: solid $accent; }
#status { height: 1; }
/* No scrollbars in the main panes: a thumb on a track of nearly the pane's colour
   shows, in 256-colour terminals (tmux), as stray eighth-block glyphs mid-screen
   (issue 39). The panes still scroll (keys, wheel); Enter opens the whole log. */
#nodes, #events, #jobs, #logs { scrollbar-size: 0 0; }
"""
EVENT_LINES = 500
LOG_LINES = 2000
TAIL_LINES = 200
RECONNECT_PAUSE = 1.0
LIVE_FILTER_JOBS = 2000
# Runtimes are counted here from each job's start, once a second, for the rows on
# screen; progress lines live in the daemon's memory (samples are not events), read
# this often with `ProgressLines` (a few bytes a running job).
TICK = 1.0
PROGRESS_EVERY = 5.0


def event_line(event: Event) -> str:
    stamp = time.strftime("%H:%M:%S", time.localtime(event.time))
    subject = " ".join(
        s for s in (f"job {event.job_id}" if event.job_id else "", event.node or "") if s
    )
    return f"{stamp} {kind_text(event.kind)} {subject}".rstrip()


def detail_line(job: Job, why: str | None, now: float | None = None) -> str:
    said = waiting_reason(job) or why or job.progress or job.reason or ""
    ran = f" {runtime(job, now)}" if job.started_at is not None else ""
    head = f"job {job.id} {job.name} [{job.state}] {job_where(job)}{ran}"
    note = f"  note: {job.note}" if job.note else ""
    image = f"  image: {job.image}" if job.image else ""
    return f"{head}  {said}{image}{note}".rstrip()


class QueueApp(App[None]):
    TITLE = "nvq queue"
    CSS = CSS
    BINDINGS = [  # noqa: RUF012 (Textual's own class attribute)
        Binding("q", "quit", "quit"),
        Binding("slash", "focus('filter')", "filter"),
        Binding("escape", "focus('jobs')", "jobs", show=False),
        Binding("N", "focus('nodes')", "nodes"),
    ]

    def __init__(
        self, client: AsyncClient | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        super().__init__()
        self.client = client or AsyncClient()
        self.clock = clock  # what runtimes are counted to (a test moves it)
        self.status_text = ""
        self.loaded = asyncio.Event()  # the first job list is on screen
        self._batch = Batch()
        self._wake = asyncio.Event()
        self._following: int | None = None

    # ------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        with Horizontal(id="top"):
            yield NodesTable(id="nodes")
            yield Log(id="events", max_lines=EVENT_LINES)
        yield Input(placeholder="filter: state:running user:NAME tag:T words   (/)", id="filter")
        yield JobsTable(id="jobs")
        yield Static("", id="detail")
        yield Log(id="logs", max_lines=LOG_LINES)
        yield Static(LEGEND, id="status")
        yield Footer()

    @property
    def jobs_table(self) -> JobsTable:
        # The main screen's, also while a dialog is on top (a timer or a worker may ask)
        return self.screen_stack[0].query_one("#jobs", JobsTable)

    @property
    def nodes_table(self) -> NodesTable:
        return self.screen_stack[0].query_one("#nodes", NodesTable)

    def _shown(self) -> bool:
        """Whether the main screen is up: not yet, or no more, while the app starts or
        ends (a timer may fire then)."""
        return bool(self.screen_stack) and self.screen_stack[0].is_mounted

    def say(self, text: str, *, error: bool = False) -> None:
        """A line in the status bar (and a toast): action results and daemon errors."""
        self.status_text = text
        # Text, not markup: a daemon's message or a job name may hold "[...]"
        self.query_one("#status", Static).update(Text(text, style="bold red" if error else ""))
        self.notify(text, severity="error" if error else "information", timeout=4, markup=False)

    # ------------------------------------------------------------ start and feed

    def on_mount(self) -> None:
        self.jobs_table.focus()
        self.run_worker(self._start(), group="feed", exit_on_error=False)
        self.run_worker(self._flush_forever(), group="flush", exit_on_error=False)
        self.set_interval(TICK, self.tick)
        self.set_interval(PROGRESS_EVERY, self._read_progress)

    def tick(self) -> None:
        """Move what moves on its own: the runtime of running jobs on screen, and the
        selected job's header."""
        if not self._shown():
            return
        now = self.clock()
        self.jobs_table.tick(now)
        job = self.jobs_table.view.jobs.get(self._following or -1)
        if job is not None and job.state.value == "running":
            self.query_one("#detail", Static).update(Text(detail_line(job, None, now)))

    def _read_progress(self) -> None:
        if self.loaded.is_set():
            self.run_worker(self._progress(), group="progress", exclusive=True,
                            exit_on_error=False)

    async def _progress(self) -> None:
        try:
            lines = await self.client.progress_lines()
        except ClientError:
            return  # the event stream says so; the next read tries again
        changed = progress_changes(self.jobs_table.view.jobs, lines)
        if changed:
            self.jobs_table.apply(changed, [])
            self.tick()
        # A link that drops raises no event: the nodes are read on this beat too.
        try:
            await self._read_nodes()
        except ClientError:
            return

    async def _start(self) -> None:
        while True:
            try:
                # the position first: whatever happens after it is replayed onto the list
                since = await latest_event_id(self.client)
                await self._read_nodes()
                self.jobs_table.load(await initial_jobs(self.client, RECENT_KEPT))
                for event in await self.client.events(max(0, since - 30)):
                    self.query_one("#events", Log).write_line(event_line(event))
                break
            except ClientError as exc:
                self.say(f"{exc} (retrying)", error=True)
                await asyncio.sleep(RECONNECT_PAUSE)
        self.loaded.set()
        await self._follow_events(since)

    async def _follow_events(self, since: int) -> None:
        while True:
            try:
                async for event in event_stream(self.client, since):
                    since = max(since, event.id)
                    self._batch.add(event)
                    self._wake.set()
            except Exception as exc:  # the stream must outlive any one failure
                self.say(f"event stream: {exc} (reconnecting)", error=True)
            await asyncio.sleep(RECONNECT_PAUSE)

    async def _flush_forever(self) -> None:
        """Apply what arrived since the last pass; events arriving during a pass wait
        for the next one, so a burst costs a few passes, not one per event."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._batch = self._batch, Batch()
            try:
                await self._apply(batch)
            except Exception as exc:  # shown; the next batch refetches what it names
                self.say(str(exc), error=True)

    async def _apply(self, batch: Batch) -> None:
        events = self.query_one("#events", Log)
        for event in batch.events:
            events.write_line(event_line(event))
        if batch.all_jobs:
            self.jobs_table.load(await initial_jobs(self.client, RECENT_KEPT))
        elif batch.job_ids:
            jobs, gone = await changed_jobs(self.client, batch.job_ids)
            self.jobs_table.apply(jobs, gone)
            for job in jobs:
                if job.id == self._following:
                    self.query_one("#detail", Static).update(Text(detail_line(job, None)))
        # Every batch: the cards' figures come from samples, which are not events, so
        # any activity is the moment to redraw the few node rows.
        await self._read_nodes()

    async def _read_nodes(self) -> None:
        """The node rows, and which nodes are out of reach until when: the moment
        `job ls --json`'s `unreachable` map and `job show` give (nvq.daemon.machines.unreachable),
        which the jobs panel counts down to."""
        nodes = await self.client.nodes()
        if not self._shown():
            return
        self.nodes_table.show(nodes)
        away = {n.name: n.grace_ends_at for n in nodes if n.grace_ends_at is not None}
        self.jobs_table.set_away(away, self.clock())

    # ------------------------------------------------------------ selection and logs

    @on(DataTable.RowHighlighted, "#jobs")
    def _job_highlighted(self, message: DataTable.RowHighlighted) -> None:
        id = self.jobs_table.selected_id()
        if id is None or id == self._following:
            return
        self._following = id
        self.run_worker(self._follow_logs(id), group="logs", exclusive=True, exit_on_error=False)

    async def _show_detail(self, id: int) -> None:
        doc = await self.client.show(id)
        self.query_one("#detail", Static).update(Text(detail_line(doc, doc.why)))

    async def _follow_logs(self, id: int) -> None:
        log = self.query_one("#logs", Log)
        log.clear()
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            await self._show_detail(id)
            async for chunk in self.client.logs(
                id, lines=TAIL_LINES, follow=True, stream="both", marks=True
            ):
                log.write(decoder.decode(chunk))
        except ClientError as exc:
            log.write_line(f"[{exc}]")

    @on(DataTable.RowSelected, "#jobs")
    def _job_selected(self, message: DataTable.RowSelected) -> None:
        """Enter: the selected job's whole log, both streams marked, on a screen of its
        own (Escape goes back)."""
        id = self.jobs_table.selected_id()
        if id is not None:
            self.push_screen(LogScreen(self.client, id))

    @on(Input.Changed, "#filter")
    def _filter_changed(self, message: Input.Changed) -> None:
        # a filter rebuilds the table: per key while it is small, else on Enter
        if len(self.jobs_table.view.jobs) <= LIVE_FILTER_JOBS:
            self.jobs_table.set_filter(message.value)

    @on(Input.Submitted, "#filter")
    def _filter_done(self, message: Input.Submitted) -> None:
        self.jobs_table.set_filter(message.value)
        self.jobs_table.focus()

    # ------------------------------------------------------------ actions

    def selected_job(self) -> Job | None:
        id = self.jobs_table.selected_id()
        return None if id is None else self.jobs_table.view.jobs.get(id)

    def action_job(self, name: str) -> None:
        job = self.selected_job()
        if job is None:
            self.say("no job selected", error=True)
            return
        if name == "note":
            self.push_screen(
                TextScreen(f"Note for job {job.id} (empty clears it):", job.note),
                lambda text: (
                    None
                    if text is None
                    else self._act(actions.note(self.client, job, text), f"job {job.id} noted")
                ),
            )
            return
        act = actions.JOB_ACTIONS[name]
        question = act.ask(job)
        said = f"job {job.id} {act.said}"
        if question is None:
            self._act(act.run(self.client, job), said)
            return
        self.push_screen(
            ConfirmScreen(question),
            lambda yes: self._act(act.run(self.client, job), said) if yes else None,
        )

    def action_node(self, name: str) -> None:
        node = self.nodes_table.selected_node()
        if node is None:
            self.say("no node selected", error=True)
            return
        if name == "drain":
            self.push_screen(
                ConfirmScreen(f"Drain node {node}? Nothing new is placed on it."),
                lambda yes: (
                    self._act(actions.node_flag(self.client, node, name), "") if yes else None
                ),
            )
        else:
            self._act(actions.node_flag(self.client, node, name), "")

    def _act(self, call: Awaitable[object], said: str) -> None:
        self.run_worker(self._run_action(call, said), group="actions", exit_on_error=False)

    async def _run_action(self, call: Awaitable[object], said: str) -> None:
        try:
            result = await call
        except ClientError as exc:
            self.say(str(exc), error=True)
            return
        self.say(said or str(result))
