"""CLI start-up: wall time of one `nvq` call as a fresh process, against a running
daemon on the local node, beside the floor under it.

Timed, round-robin so that a drift of the machine's speed touches all alike:
  python_pass      `python -c pass`: the interpreter's start (site included)
  import_msgspec   `python -c "import msgspec"`: what every typed call needs (the
                   plain-wire reads below do without it)
  job_show_json    `nvq job show ID --json` (the read fast path, plain wire)
  job_show         `nvq job show ID` (plain wire)
  job_ls_json      `nvq job ls --json` (a one-job queue: start-up, not listing)
  queue_status     `nvq queue status --json`
  job_show_typer   `nvq job show ID --json` through typer (NVQ_CLI_TYPER=1)
  job_why_json     `nvq job why ID --json`: a command typer runs

`imports_ms` splits `nvq job show ID --json`'s import time (python -X importtime, the
median of the runs, self times summed) by top-level package: where the time goes.

Each figure: p50 and min of the wall time, and p50 of the CPU time (user + system).

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
    args = ap.parse_args()
    # Bytecode as an installed nvq has it: no call in the timings compiles a module.
    for package in ("nvq", "nvq_runner"):
        compileall.compile_dir((args.tree or ROOT) / package, quiet=1)
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
            "job_show_json": ([*cli, "job", "show", job, "--json"], env),
            "job_show": ([*cli, "job", "show", job], env),
            "job_ls_json": ([*cli, "job", "ls", "--json"], env),
            "queue_status": ([*cli, "queue", "status", "--json"], env),
            "job_show_typer": ([*cli, "job", "show", job, "--json"], typer_env),
            "job_why_json": ([*cli, "job", "why", job, "--json"], env),
        }
        doc.update(timed_round_robin(commands, args.runs))
        show = ["-m", "nvq", "job", "show", job, "--json"]
        doc["imports_ms"] = {
            "fast": import_split(show, env, max(3, args.runs // 5)),
            "typer": import_split(show, typer_env, max(3, args.runs // 5)),
        }
    emit(doc)


if __name__ == "__main__":
    main()
