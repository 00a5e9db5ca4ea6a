"""`nvq web` over `[remote]`: the page is served on the queue host (`nvq web --port 0`
there, as the user this machine logs in as, so it acts with that user's rights, as
every forwarded command does) and reached through a port on this machine: each
connection to it is relayed to the page's port on the queue host by `ssh -W` over the
shared connection (a channel on it, no new login). The URL printed is this machine's,
with the page's token. Ctrl-C here ends the page there (its stdin ends:
nvq.cli.hangup); the page ending there ends this command with its status."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from typing import Any
from urllib.parse import parse_qs, urlsplit

from nvq.cli.forward_remote import _relay_process
from nvq.cli.params import CliError
from nvq.cli.port_relay import relay_connections
from nvq.config import RemoteConfig, load_config
from nvq.home import default_root
from nvq.remote import (
    SSH_UNREACHABLE,
    connect_options,
    hang_up,
    remote_command,
    shared_connection,
    ssh_argv,
)
from nvq.remote_share import share_options
from nvq.web.serve import bind, url_of


def serve_through_queue_host(host: str, port: int, new_token: bool, as_json: bool) -> int:
    home = default_root()
    cfg = load_config(home).remote
    if cfg is None:
        raise CliError("web --over-remote: this machine has no [remote] section", 2)
    try:
        listener = bind(host, port)  # first: a port taken here touches nothing there
    except OSError as exc:
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    control = shared_connection(cfg, home)
    argv = ["web", "--port", "0", "--json", *(["--new-token"] if new_token else [])]
    command = remote_command(cfg, argv, os.environ.get("NVQ_SUBMITTER"), hangup=True)
    try:
        # a session of its own: a Ctrl-C here stops this command, which then ends the
        # page by closing its stdin (ssh killed by the same Ctrl-C would look like the
        # page failing)
        page = subprocess.Popen(ssh_argv(cfg, command, stdin=True, control=control),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                start_new_session=True)
    except FileNotFoundError:
        listener.close()
        raise CliError("[remote] needs the ssh client, and none is installed", 2) from None
    assert page.stdout is not None
    try:
        there = _first_document(page.stdout.readline())
    except BaseException:
        hang_up(page)
        listener.close()
        raise
    if there is None or "error" in there:
        listener.close()
        return _refused(page, there, as_json, cfg)
    token = parse_qs(urlsplit(there["url"]).query).get("token", [""])[0]
    url = url_of(listener, token)
    if as_json:
        print(json.dumps({"url": url, "port": listener.getsockname()[1], "pid": os.getpid()}),
              flush=True)
    else:
        print(url, flush=True)
        print(f"the page is served on {cfg.host} and reached through this machine; "
              "Ctrl-C stops it", file=sys.stderr, flush=True)
    relay = ["ssh", "-T", *(share_options(control) if control else []), *connect_options(cfg),
             "-W", f"127.0.0.1:{there['port']}", cfg.host]
    ended: list[int] = []

    def watch() -> None:  # the page ended there: so does this command
        ended.append(page.wait())
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)

    threading.Thread(target=watch, daemon=True).start()
    relay_connections(listener, lambda: subprocess.Popen(
        relay, stdin=subprocess.PIPE, stdout=subprocess.PIPE), relay=_relay_process)
    if ended:
        return ended[0]
    hang_up(page)
    page.wait()
    return 0


def _first_document(line: bytes) -> dict[str, Any] | None:
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _refused(page: subprocess.Popen[bytes], there: dict[str, Any] | None, as_json: bool,
             cfg: RemoteConfig) -> int:
    """The page did not start there: its error (already on stderr, or its --json
    document) is what this command says."""
    if page.stdin is not None:
        page.stdin.close()
    code = page.wait()
    if there is not None:
        if as_json:
            print(json.dumps(there), flush=True)
        else:
            print(f"nvq: {there['error']}", file=sys.stderr, flush=True)
        return int(there.get("exit_code", code or 1))
    if code == SSH_UNREACHABLE:
        print(f"nvq: cannot reach the queue host {cfg.host} over ssh", file=sys.stderr)
    return code or 1
