"""CLI start-up: wall time of one `nvq` call as a fresh process, against a running
daemon on the local node, beside the floor under it.

Timed, round-robin so that a drift of the machine's speed touches all alike:
  python_pass      `python -c pass`: the interpreter's start (site included)
  import_msgspec   `python -c "import msgspec"`: what every typed call needs (the
                   plain-wire reads below do without it)
  one figure per read command, each a fresh `nvq` process (READS below: `job show`
  bare and `--json`, `job ls` (bare, `--limit 5`, `--state S --since 2h`), `job why`,
  `job logs` (bare and `-n 200`), `job artifacts`, `job result`,
  `queue status|nodes|alerts|lanes|lane|events`, `node status|health`, `image ls`),
  through whichever path `nvq` takes
  for that argv (the fast path for these shapes)
  job_show_typer   `nvq job show ID --json` through typer (NVQ_CLI_TYPER=1)
  queue_nodes_typer  `nvq queue nodes --json` through typer

`imports_ms` splits `nvq job show ID --json`'s import time (python -X importtime, the
median of the runs, self times summed) by top-level package: where the time goes.

Each figure: p50 and min of the wall time, and p50 of the CPU time (user + system).
`--beside DIR` times DIR's read commands in the same round robin (under `beside`):
the before and after of a change on a machine whose load drifts.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import compileall
import resource
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from common import ROOT, emit, machine, queue


def nvq_argv() -> list[str]:
    """The console script people run, when installed beside this Python."""
    script = Path(sys.executable).with_name("nvq")
    return [str(script)] if script.exists() else [sys.executable, "-m", "nvq"]


def reads(job: str) -> dict[str, list[str]]:
    """Every read command, by the name its figure has: a one-job queue (start-up, not
    listing), the job completed, no alert open (`queue alerts` exits 0)."""
    return {
        "job_show_json": ["job", "show", job, "--json"],
        "job_show": ["job", "show", job],
        "job_ls_json": ["job", "ls", "--json"],
        "job_why_json": ["job", "why", job, "--json"],
        "job_logs": ["job", "logs", job],
        "job_logs_n": ["job", "logs", job, "-n", "200"],
        "job_ls_limit_json": ["job", "ls", "--limit", "5", "--json"],
        "job_artifacts_json": ["job", "artifacts", job, "--json"],
        "job_result_json": ["job", "result", job, "--json"],
        "job_ls_filtered_json": ["job", "ls", "--state", "completed", "--since", "2h", "--json"],
        "queue_status": ["queue", "status", "--json"],
        "queue_nodes_json": ["queue", "nodes", "--json"],
        "queue_alerts_json": ["queue", "alerts", "--json"],
        "queue_lanes_json": ["queue", "lanes", "--json"],
        "queue_lane_json": ["queue", "lane", "local:0", "--json"],
        "queue_events_json": ["queue", "events", "--json"],
        "node_status_json": ["node", "status", "local", "--json"],
        "node_health_json": ["node", "health", "--json"],
        "image_ls_json": ["image", "ls", "--json"],
    }


def timed_round_robin(
    commands: dict[str, tuple[list[str], dict[str, str]]], runs: int
) -> dict[str, dict[str, float]]:
    """Wall time, and the CPU time (user + system) the process used: on a shared,
    busy machine the wall time waits for a core, the CPU time much less."""
    times: dict[str, list[float]] = defaultdict(list)
    cpu: dict[str, list[float]] = defaultdict(list)
    for argv, env in commands.values():  # one warm-up each: page cache, pyc files
        subprocess.run(argv, env=env, capture_output=True, check=True)
    for _ in range(runs):
        for name, (argv, env) in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            proc = subprocess.run(argv, env=env, capture_output=True)
            times[name].append((time.perf_counter() - t) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            cpu[name].append(used * 1000)
            if proc.returncode != 0:
                raise SystemExit(f"{name} exited {proc.returncode}: {proc.stderr.decode()}")
    return {
        name: {
            "p50_ms": round(statistics.median(ms), 1),
            "min_ms": round(min(ms), 1),
            "cpu_p50_ms": round(statistics.median(cpu[name]), 1),
        }
        for name, ms in times.items()
    }


def import_split(argv: list[str], env: dict[str, str], runs: int) -> dict[str, float]:
    """Median self import time per top-level package, in ms."""
    per_run: list[dict[str, float]] = []
    for _ in range(runs):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", *argv], env=env, capture_output=True, text=True
        )
        split: dict[str, float] = defaultdict(float)
        for line in proc.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            _, self_us, _, name = (part.strip() for part in line.replace(":", "|", 1).split("|"))
            top = name.split(".")[0]
            key = top if top in ("nvq", "nvq_runner", "msgspec", "typing_extensions") else (
                top if top in ("typer", "click", "rich") else "stdlib"
            )
            split[key] += int(self_us) / 1000
        per_run.append(split)
    keys = sorted({k for run in per_run for k in run})
    return {k: round(statistics.median(run.get(k, 0.0) for run in per_run), 1) for k in keys}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument(
        "--tree",
        type=Path,
        help="time the CLI of another checkout (its nvq/ and nvq_runner/; PYTHONPATH) "
        "against this one's daemon: the figures before a change",
    )
    ap.add_argument(
        "--beside",
        type=Path,
        help="time another checkout's read commands in the same round robin as this "
        "one's (under `beside`, with the same names): before and after a change, "
        "touched alike by a busy machine's drift",
    )
    args = ap.parse_args()
    # Bytecode as an installed nvq has it: no call in the timings compiles a module.
    for tree in {args.tree or ROOT, args.beside or ROOT}:
        for package in ("nvq", "nvq_runner"):
            compileall.compile_dir(tree / package, quiet=1)
    doc: dict[str, object] = {"bench": "cli_startup", "machine": machine()}
    with queue("local") as nvq:
        job = str(nvq.submit("--", "true")["id"])
        nvq.wait_for(int(job), lambda j: j["state"] == "completed")
        env = {k: v for k, v in nvq.env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        if args.tree is not None:
            env["PYTHONPATH"] = str(args.tree.resolve())
            doc["tree"] = str(args.tree)
        typer_env = {**env, "NVQ_CLI_TYPER": "1"}
        cli = nvq_argv()
        py = [sys.executable]
        commands = {
            "python_pass": ([*py, "-c", "pass"], env),
            "import_msgspec": ([*py, "-c", "import msgspec"], env),
            **{name: ([*cli, *argv], env) for name, argv in reads(job).items()},
            "job_show_typer": ([*cli, "job", "show", job, "--json"], typer_env),
            "queue_nodes_typer": ([*cli, "queue", "nodes", "--json"], typer_env),
        }
        if args.beside is not None:
            beside_env = {**env, "PYTHONPATH": str(args.beside.resolve())}
            commands.update({
                f"beside:{name}": ([*cli, *argv], beside_env)
                for name, argv in reads(job).items()
            })
        figures = timed_round_robin(commands, args.runs)
        doc.update({k: v for k, v in figures.items() if not k.startswith("beside:")})
        if args.beside is not None:
            doc["beside"] = {
                "tree": str(args.beside),
                **{k.removeprefix("beside:"): v for k, v in figures.items()
                   if k.startswith("beside:")},
            }
        show = ["-m", "nvq", "job", "show", job, "--json"]
        doc["imports_ms"] = {
            "fast": import_split(show, env, max(3, args.runs // 5)),
            "typer": import_split(show, typer_env, max(3, args.runs // 5)),
        }
    emit(doc)


if __name__ == "__main__":
    main()
