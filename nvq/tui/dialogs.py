"""The modal questions the UI asks: a yes/no before anything destructive, and a line
of text (a job's note)."""

from __future__ import annotations

import codecs

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Log

from nvq.client import ClientError
from nvq.client.asynchronous import AsyncClient

CSS = """
ConfirmScreen, TextScreen { align: center middle; }
#dialog {
    width: 64; height: auto; padding: 1 2;
    border: thick $accent; background: $surface;
}
#dialog Horizontal { height: auto; margin-top: 1; }
#dialog Button { margin-right: 2; }
"""


class ConfirmScreen(ModalScreen[bool]):
    """ "Cancel job 12?" — y/Enter on Yes confirms, n/Escape refuses."""

    DEFAULT_CSS = CSS
    BINDINGS = [  # noqa: RUF012 (Textual's own class attribute)
        Binding("y", "answer(True)", "yes"),
        Binding("n,escape", "answer(False)", "no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(self.question), id="question")  # literal: it names a job
            with Horizontal():
                yield Button("Yes (y)", id="yes", variant="error")
                yield Button("No (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()  # the safe answer is the default

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class TextScreen(ModalScreen[str | None]):
    """One line of text; Enter keeps it, Escape drops it (None)."""

    DEFAULT_CSS = CSS
    BINDINGS = [Binding("escape", "drop", "cancel")]  # noqa: RUF012

    def __init__(self, prompt: str, value: str = "") -> None:
        super().__init__()
        self.prompt = prompt
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(self.prompt))
            yield Input(value=self.value, id="text")

    def on_mount(self) -> None:
        self.query_one("#text", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_drop(self) -> None:
        self.dismiss(None)


class LogScreen(ModalScreen[None]):
    """A job's whole log, both streams in the order written and marked (`out| `,
    `err| `), following while it runs; Escape or q goes back."""

    BINDINGS = [  # noqa: RUF012
        Binding("escape,q", "app.pop_screen", "back"),
    ]

    def __init__(self, client: AsyncClient, job_id: int) -> None:
        super().__init__()
        self.client = client
        self.job_id = job_id

    def compose(self) -> ComposeResult:
        yield Label(Text(f"job {self.job_id}: its whole log (Escape: back)"))
        yield Log(id="whole-log", max_lines=None)

    def on_mount(self) -> None:
        self.run_worker(self._read(), exit_on_error=False)

    async def _read(self) -> None:
        log = self.query_one("#whole-log", Log)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            async for chunk in self.client.logs(
                self.job_id, lines=-1, follow=True, stream="both", marks=True
            ):
                log.write(decoder.decode(chunk))
        except ClientError as exc:
            log.write_line(f"[{exc}]")
