"""Every read command's one body: the request it sends and the one renderer of its
answer (text; `--json` prints the answer's document). The typer command (in
nvq.cli.commands, the module of its family) calls it after click has parsed the
options; nvq.cli.fast calls it for a plain argv without loading typer. Nothing here
imports typer, click or msgspec: the answer comes as nvq.cli.reading shapes it.

A renderer loads only when the text is printed (`--json` prints the daemon's own
text and needs none). Each returns the command's exit status; a refusal, the daemon's or its own (bad
input), raises ClientError, whose one line the caller prints."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing itself costs the calls this module exists to make cheap
    from typing import Any, Literal


def job_show(job_id: int, as_json: bool, *, logs: int = 0, env: bool = False,
             reveal: bool = False) -> int:
    from nvq.cli.reading import answer

    def text(doc: Any) -> str:
        from nvq.cli.render.jobs import job_detail

        return job_detail(doc, env=env)

    if reveal:  # the plain wire hides secrets whatever is asked: --reveal is typed
        from nvq.cli.render.output import emit
        from nvq.client.sync import Client

        shown = Client().show(job_id, logs=logs, reveal=True)
        emit(shown, as_json, None if as_json else text(shown), reveal=True)
        return 0
    answer({"type": "show", "id": job_id, "logs": logs, "reveal": False}, as_json, text)
    return 0


def job_window(request: dict[str, Any], as_json: bool) -> int:
    """`job ls` (without --active): the window the flags made (`nvq.cli.job_window`)."""
    from nvq.cli.reading import answer

    def text(page: Any) -> str:
        from nvq.cli.render.jobs import window_text

        return window_text(page)

    answer({"type": "ls_window", **request}, as_json, text)
    return 0


def job_ls(as_json: bool, *, limit: int | None = None, every: bool = False,
           array: int | None = None, state: str | None = None, held: bool = False,
           active: bool = False, user: str | None = None, tag: str | None = None,
           since: str | None = None, mine: bool = False) -> int:
    """`job ls` with the window's options given once each (a repeated --state is
    typer's command)."""
    from nvq.cli.job_window import window_request

    window = window_request(states=[state] if state is not None else None, held=held, user=user,
                            mine=mine, tag=tag, array=array, since=since, limit=limit, every=every,
                            active=active)
    return job_window(window, as_json)


def job_result(job_id: int, as_json: bool) -> int:
    """One job's result.json payload (`--set`, `--array` and several ids: typer's)."""
    from nvq.cli.reading import answer

    def text(value: Any) -> str:
        from nvq.cli.render.results import result_text

        return result_text(value)

    answer({"type": "result", "id": job_id, "set_json": None}, as_json, text)
    return 0


def job_logs(
    job_id: int, as_json: bool, *, lines: int = 50, follow: bool = False, stdout: bool = False,
    stderr: bool = False, setup: bool = False, streams: bool = False, raw: bool = False,
    attempt: int | None = None,
) -> int:
    """`job logs ID`: its last `lines` (-1: all), stdout and stderr in the order
    written unless one stream is asked for (nvq.cli.logs_output streams it)."""
    if stdout + stderr + setup > 1:
        from nvq.client.errors import ClientError

        raise ClientError("give one of --stdout, --stderr, --setup", 2)
    from nvq.cli.logs_output import print_logs

    stream: Literal["stdout", "stderr", "setup", "both"] = (
        "setup" if setup else "stderr" if stderr else "stdout" if stdout else "both"
    )
    print_logs(job_id, lines=lines, follow=follow, stream=stream, attempt=attempt,
               as_json=as_json, marks=streams, raw=raw)
    return 0


def job_artifacts(job_id: int, as_json: bool) -> int:
    """`job artifacts ID` without --get: the list of what is stored (the typer command
    copies them with --get)."""
    from nvq.cli.reading import answer

    def text(doc: Any) -> str:
        from nvq.cli.render.ops import files_table

        return files_table(doc)

    answer({"type": "job_artifacts", "id": job_id}, as_json, text)
    return 0


def job_why(job_id: int, as_json: bool) -> int:
    from nvq.cli.reading import answer

    def text(report: Any) -> str:
        from nvq.cli.render.why import why_text

        return why_text(report)

    answer({"type": "why", "id": job_id}, as_json, text)
    return 0


def queue_status(as_json: bool) -> int:
    from nvq.cli.reading import answer

    def text(doc: Any) -> str:
        from nvq.cli.render.queue import status_text

        return status_text(doc)

    answer({"type": "status"}, as_json, text)
    return 0


def queue_nodes(as_json: bool, *, procs: bool = False, include_ignored: bool = False) -> int:
    from nvq.cli.reading import answer

    def text(nodes: Any) -> str:
        from nvq.cli.render.queue import nodes_table

        if not nodes and not include_ignored:
            # An empty table would read as "no nodes at all".
            return ("no nodes to show: none is configured, or each is stopped or ignored "
                    "(`--include-ignored` shows those)")
        return nodes_table(nodes, procs)

    answer({"type": "nodes", "procs": procs, "include_ignored": include_ignored}, as_json, text)
    return 0


def queue_alerts(as_json: bool, *, detail: bool = False, show_all: bool = False) -> int:
    """Exit 1 while any alert is unacknowledged."""
    from nvq.cli.reading import answer

    def text(shown: Any) -> str:
        from nvq.cli.render.ops import alerts_table

        return alerts_table(shown, detail) if shown else "no open alerts"

    _, code = answer({"type": "alerts", "include_acked": show_all}, as_json, text)
    return code


def queue_lanes(as_json: bool) -> int:
    from nvq.cli.reading import answer

    def text(docs: Any) -> str:
        from nvq.cli.render.ops import lane_line

        return "\n".join(map(lane_line, docs)) or "(no GPUs)"

    answer({"type": "lanes"}, as_json, text)
    return 0


def queue_lane(lane: str, as_json: bool) -> int:
    """One lane shown (an action is a change: typer's, through the typed client)."""
    from nvq.cli.reading import answer

    def text(doc: Any) -> str:
        from nvq.cli.render.ops import lane_detail

        return lane_detail(doc)

    answer({"type": "lane", "lane": lane}, as_json, text)
    return 0


def queue_events(as_json: bool, *, since: int = 0, limit: int | None = None,
                 job: int | None = None) -> int:
    from nvq.cli.event_pages import print_events

    print_events(since, limit, job, as_json)
    return 0


def cluster_status(name: str | None, as_json: bool) -> int:
    from nvq.cli.reading import answer

    def text(views: Any) -> str:
        from nvq.cli.render.clusters import clusters_text

        return clusters_text(views)

    answer({"type": "cluster_status", "name": name}, as_json, text)
    return 0


def reserve_ls(as_json: bool) -> int:
    from nvq.cli.reading import answer

    def text(found: Any) -> str:
        from nvq.cli.render.reservations import line

        return "\n".join(line(r) for r in found) if found else "no reservations"

    answer({"type": "reserve_ls"}, as_json, text)
    return 0


def image_ls(as_json: bool) -> int:
    from nvq.cli.reading import answer

    def text(doc: Any) -> str:
        from nvq.cli.render.images import images_text

        return images_text(doc)

    answer({"type": "image_list"}, as_json, text)
    return 0


def node_status(node: str, as_json: bool) -> int:
    from nvq.cli.reading import answer

    def text(doc: Any) -> str:
        from nvq.cli.render.ops import runner_text

        return runner_text(doc)

    answer({"type": "node_status", "node": node}, as_json, text)
    return 0


def node_health(node: str | None, as_json: bool) -> int:
    """Each card's health, from the node views (the document is made here)."""
    from nvq.cli.reading import ask, print_json
    from nvq.cli.render.health import card_health, health_text

    views, _ = ask({"type": "nodes", "procs": False, "include_ignored": True}, "data")
    if node is not None:
        chosen = [v for v in views if v.name == node] or [
            v for v in views if v.name.startswith(node)]
        if len(chosen) != 1:
            from nvq.client.errors import ClientError

            names = ", ".join(v.name for v in chosen or views) or "none"
            raise ClientError(f"no single node named {node!r} (nodes: {names})", 2)
        views = chosen
    cards = card_health(views)
    if as_json:
        print_json({"cards": cards})
    else:
        print(health_text(cards))
    return 0
