"""`nvq web`: the Jobs page in a browser, served by a process of its own."""

from __future__ import annotations

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError
from nvq.home import default_root
from nvq.remote import WEB_FLAG

on_web = typer.Typer()  # attached as the `web` command in nvq.cli.commands


@on_web.command("web")
def web(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8787, "--port", help="Port to listen on (0: any free one)."),
    new_token: bool = typer.Option(False, "--new-token", help="Replace the token first."),
    over_remote: bool = typer.Option(False, WEB_FLAG, hidden=True),
    as_json: bool = JsonOpt,
) -> int:
    """Serve the Jobs page in a browser.

    The first line printed is the page's URL with its access token (kept 0600 in
    $NVQ_HOME/web.token); the page acts as the user who runs this command."""
    from nvq.web import access
    from nvq.web.serve import ListenError, serve

    if over_remote:  # the page is the queue host's, its port tunnelled here
        from nvq.cli.web_remote import serve_through_queue_host

        return serve_through_queue_host(host, port, new_token, as_json)
    root = default_root()
    try:
        if new_token:
            access.new_token(root)
        return serve(root, host, port, as_json=as_json)
    except ListenError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:  # the token's directory: not writable, no home directory
        where = exc.filename or access.token_path(root)
        raise CliError(f"cannot keep the page's token in {where}: {exc.strerror}") from None
