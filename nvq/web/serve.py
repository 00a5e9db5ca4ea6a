"""Run the page: bind the port (0 picks a free one), print the URL with its token as
the first line (the way Jupyter does, so a script can read it), and serve until
interrupted. Starlette and uvicorn are imported here, only when a page is served."""

from __future__ import annotations

import json
import os
import pwd
import socket
import sys
from pathlib import Path

from nvq.errors import UserError
from nvq.web import access
from nvq.web.pages import Visitor

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787


class ListenError(UserError):
    """The address cannot be listened on (taken, not this machine's, not allowed)."""


def visitor_for(root: Path) -> Visitor:
    """The user `nvq web` runs as (the daemon sees that user on the socket) and the
    queue's admins, to show only the buttons the daemon would honour."""
    from nvq.config import ConfigError, load_config

    user = pwd.getpwuid(os.getuid()).pw_name
    try:
        admins = frozenset(load_config(root).queue.admins)
    except ConfigError:
        admins = frozenset()
    return Visitor(user, admins)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, token: str) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


def serve(
    root: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, as_json: bool = False
) -> int:
    token = access.load_or_create_token(root)  # before the imports: a refusal is quick
    import uvicorn

    from nvq.web.app import build

    try:
        sock = bind(host, port)
    except OSError as exc:
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    url = url_of(sock, token)
    if as_json:
        doc = {"url": url, "port": sock.getsockname()[1], "pid": os.getpid()}
        print(json.dumps(doc), flush=True)
    else:
        print(url, flush=True)
        print(f"the token is kept in {access.token_path(root)}", file=sys.stderr, flush=True)
    app = build(root, token, visitor_for(root))
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
    return 0
