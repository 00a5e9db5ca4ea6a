"""`job forward`'s local side: a listener on this machine whose connections are each
relayed to the job's port, through the daemon's socket or through the queue host's
ssh (`nvq.cli.forward_remote`)."""

from __future__ import annotations

import signal
import socket
import sys
import threading
from typing import Any

from nvq.cli.render.output import emit


def serve_forward(
    listener: socket.socket, where: dict[str, Any], as_json: bool, open_one: Any,
    relay: Any = None,
) -> int:
    """Accept local connections until Ctrl-C; each is relayed by `open_one()`'s stream
    (a daemon connection; with `relay`, whatever `relay(conn, upstream)` pumps)."""
    lport = listener.getsockname()[1]
    doc = {**where, "local_port": lport, "url": f"http://127.0.0.1:{lport}/"}
    emit(doc, as_json, f"forwarding {doc['url']} to port {where['port']} on {where['node']} "
         f"(job {where['job']}); Ctrl-C stops")
    sys.stdout.flush()
    return relay_connections(listener, open_one, relay)


def relay_connections(listener: socket.socket, open_one: Any, relay: Any = None) -> int:
    """Relay each connection to `listener` (see serve_forward) until Ctrl-C, SIGTERM or
    the listener's shutdown."""
    # Ctrl-C or a supervisor's SIGTERM ends it, even where SIGINT came in ignored (a
    # parent that ignores it, such as a script's background job, passes that on).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=_relay_one, args=(conn, open_one, relay), daemon=True).start()
    except KeyboardInterrupt:
        return 0
    except OSError:  # the listener was shut from another thread: what it relays ended
        return 0
    finally:
        listener.close()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _relay_one(conn: socket.socket, open_one: Any, relay: Any) -> None:
    try:
        upstream = open_one()
    except Exception:  # the daemon refused (job ended): drop this connection
        conn.close()
        return
    if relay is not None:
        relay(conn, upstream)
        return
    pump(conn.recv, conn.sendall, conn, upstream)


def pump(read: Any, write: Any, conn: socket.socket | None, upstream: socket.socket) -> None:
    """Local bytes → TermInput frames; the daemon's Chunks → local, until either ends."""
    from nvq import control as c
    from nvq.cli.terminal import send
    from nvq_runner.protocol import FrameReader

    def up() -> None:
        try:
            while data := read(65536):
                send(upstream, c.TermInput(data))
        except OSError:
            pass
        # End of the local side's input: the node's side sees end of input too.
        with_suppress(lambda: upstream.shutdown(socket.SHUT_WR))

    threading.Thread(target=up, daemon=True).start()
    frames = FrameReader()
    try:
        while data := upstream.recv(65536):
            for payload in frames.feed(data):
                reply = c.reply_decoder.decode(payload)
                if isinstance(reply, c.Chunk):
                    write(reply.data)
                elif isinstance(reply, c.Done):
                    return
    except OSError:
        pass
    finally:
        upstream.close()
        if conn is not None:
            # shutdown first: it wakes the reading thread, which close alone does not
            with_suppress(lambda: conn.shutdown(socket.SHUT_RDWR))
            conn.close()


def with_suppress(fn: Any) -> None:
    try:
        fn()
    except OSError:
        pass
