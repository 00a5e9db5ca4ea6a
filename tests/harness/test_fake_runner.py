"""The scripted fake runner speaks the real framing: a daemon-side reader built from
`nvq_runner.protocol` understands it, and it understands the daemon's frames."""

from __future__ import annotations

import anyio

from nvq_runner import protocol as p
from tests.fakes.aio import run
from tests.fakes.runner import FakeRunner, PipeEnd, byte_pipe


class DaemonSide:
    """The daemon's half of a connection, reduced to framing: what `link._pump` does."""

    def __init__(self, channel: PipeEnd) -> None:
        self.channel = channel
        self.frames = p.FrameReader()
        self.buffered: list[p.RunnerMsg] = []

    async def next(self) -> p.RunnerMsg:
        with anyio.fail_after(60):  # only a hung test: a loaded machine is slow
            while not self.buffered:
                data = await self.channel.receive()
                self.buffered += [p.decode_runner_payload(x) for x in self.frames.feed(data)]
        return self.buffered.pop(0)

    async def send(self, msg: p.DaemonMsg) -> None:
        await self.channel.send(p.encode_frame(msg))


def start(job_id: int, attempt: int = 1) -> p.Start:
    return p.Start(job_id=job_id, attempt=attempt, node="local", name="", command="true", gpus=[0])


def test_greets_with_hello_and_a_sample() -> None:
    async def main() -> None:
        async with FakeRunner(hostname="box", journal_id="j-7") as runner:
            daemon = DaemonSide(await runner.open())
            hello = await daemon.next()
            assert isinstance(hello, p.Hello)
            assert (hello.hostname, hello.journal_id, hello.journal_head) == ("box", "j-7", 0)
            assert [g.total_mb for g in hello.gpus] == [24 * 1024, 24 * 1024]
            sample = await daemon.next()
            assert isinstance(sample, p.Sample)
            assert [g.used_mb for g in sample.gpus] == [0, 0]

    run(main)


def test_frames_split_into_pieces_reassemble() -> None:
    async def main() -> None:
        async with FakeRunner(chunk=3, exits={5: 2}) as runner:
            daemon = DaemonSide(await runner.open())
            assert isinstance(await daemon.next(), p.Hello)
            assert isinstance(await daemon.next(), p.Sample)
            await daemon.send(start(5))
            started, exited = await daemon.next(), await daemon.next()
            assert isinstance(started, p.JobStarted) and started.seq == 1
            assert isinstance(exited, p.JobExited)
            assert (exited.seq, exited.job_id, exited.exit_code) == (2, 5, 2)

    run(main)


def test_start_is_answered_once_per_attempt_and_recorded() -> None:
    async def main() -> None:
        async with FakeRunner() as runner:
            daemon = DaemonSide(await runner.open())
            await daemon.next(), await daemon.next()
            await daemon.send(start(1))
            await daemon.send(start(1))  # again: idempotent
            await daemon.send(start(1, attempt=2))
            await runner.until(lambda: len(runner.received) == 3)
            assert [type(m) for m in runner.received] == [p.Start] * 3
            assert [(e.job_id, e.attempt, e.seq) for e in runner.journal] == [(1, 1, 1), (1, 2, 2)]
            assert sorted(runner.active) == [(1, 1), (1, 2)]

    run(main)


def test_unacked_events_replay_after_a_reconnect() -> None:
    async def main() -> None:
        async with FakeRunner() as runner:
            daemon = DaemonSide(await runner.open())
            await daemon.next(), await daemon.next()
            await daemon.send(start(1))
            await daemon.send(start(2))
            assert isinstance(await daemon.next(), p.JobStarted)
            assert isinstance(await daemon.next(), p.JobStarted)
            await daemon.send(p.Ack(1))
            await runner.until(lambda: runner.acked == 1)
            await runner.drop()
            runner.exit(2, 1)  # while no daemon listens: journaled only

            again = DaemonSide(await runner.open())
            hello = await again.next()
            assert isinstance(hello, p.Hello) and hello.journal_head == 3
            assert [(a.job_id, a.attempt) for a in hello.active] == [(1, 1)]
            replayed = [await again.next(), await again.next()]
            assert [(type(e), getattr(e, "seq", None)) for e in replayed] == [
                (p.JobStarted, 2),
                (p.JobExited, 3),
            ]
            assert runner.connections == 2

    run(main)


def test_kill_ends_an_attempt_and_lost_acks_keep_events() -> None:
    async def main() -> None:
        async with FakeRunner() as runner:
            runner.take_acks = False
            daemon = DaemonSide(await runner.open())
            await daemon.next(), await daemon.next()
            await daemon.send(start(3))
            await daemon.next()
            await daemon.send(p.Kill(3, 1))
            killed = await daemon.next()
            assert isinstance(killed, p.JobExited)
            assert (killed.reason, killed.exit_code, killed.signal) == ("killed", 143, 15)
            await daemon.send(p.Kill(9, 1))  # never started here
            lost = await daemon.next()
            assert isinstance(lost, p.JobLost) and lost.job_id == 9
            await daemon.send(p.Ack(3))
            await runner.until(lambda: len(runner.of_type(p.Ack)) == 1)
            assert [e.seq for e in runner.unacked] == [1, 2, 3]

    run(main)


def test_an_unreachable_runner_refuses_to_open() -> None:
    async def main() -> None:
        async with FakeRunner(hostname="gone") as runner:
            runner.reachable = False
            try:
                await runner.open()
            except OSError as exc:
                assert "gone" in str(exc)
            else:
                raise AssertionError("open succeeded")

    run(main)


def test_pipe_end_of_stream_when_the_peer_closes() -> None:
    async def main() -> None:
        a, b = byte_pipe()
        await a.send(b"x")
        await a.aclose()
        assert await b.receive() == b"x"
        try:
            await b.receive()
        except anyio.EndOfStream:
            return
        raise AssertionError("no EndOfStream")

    run(main)
