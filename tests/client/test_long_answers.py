"""An answer longer than a frame (every job of a million-job queue) crosses the control
socket as consecutive frames the client joins: split and joined here byte by byte,
then end to end through the daemon's control server with a part size lowered so that
a few hundred jobs span many frames, read by the typed client and the plain wire."""

from __future__ import annotations

import random
from pathlib import Path

import anyio
import pytest

from nvq import control as c
from nvq.client.asynchronous import AsyncClient
from nvq.client.plain import ask
from nvq.daemon.serve import control_server
from nvq.home import Home
from nvq_runner.protocol import MAX_FRAME, FrameError, FrameReader, split_frames
from tests.fakes import daemon as fake


def test_a_long_message_is_split_and_joined_whatever_the_reads() -> None:
    rng = random.Random(7)
    messages = [rng.randbytes(n) for n in (0, 1, 99, 100, 101, 1000, 5)]
    wire = b"".join(split_frames(m, part=100) for m in messages)
    reader, out = FrameReader(max_message=None), []
    i = 0
    while i < len(wire):
        step = rng.randint(1, 70)
        out += reader.feed(wire[i : i + step])
        i += step
    assert out == messages


def test_a_reader_of_requests_keeps_its_bound() -> None:
    wire = split_frames(b"x" * (MAX_FRAME + 10), part=MAX_FRAME // 2)
    with pytest.raises(FrameError, match="over the"):
        FrameReader().feed(wire)


def test_every_job_crosses_in_many_frames(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(control_server, "REPLY_PART", 4096)
    root = tmp_path / "home"

    async def main() -> None:
        async with fake.running_daemon(root, {}) as state:
            for i in range(300):
                # local never connects here (no runner): every job stays pending
                await fake.submit(state, name=f"job-{i}", gpus=0, note="n" * 200, node="local")
            ctx = fake._contexts[id(state)]
            async with anyio.create_task_group() as tg:
                await tg.start(control_server.serve_control, ctx, Home(root).socket)
                window = c.JobWindow(all=True)
                async with AsyncClient(root, autostart=False) as q:
                    page = await q.job_window(window)
                assert [j.name for j in page.jobs] == [f"job-{i}" for i in range(300)]
                # what crossed: dozens of frames, each but the last marked CONTINUED
                sent = control_server._frame(c.Done(data=page.jobs))
                assert len(sent) > 20 * 4096 and sent[0] & 0x80
                text, code = await anyio.to_thread.run_sync(
                    ask, Home(root).socket, {"type": "ls_window", "all": True}, "json"
                )
                assert code == 0 and text.count('"name": "job-') == 300
                tg.cancel_scope.cancel()

    anyio.run(main)
