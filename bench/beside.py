"""Another checkout of nvq to run a bench against, beside this one: a directory, or a
git revision exported once into `bench/.beside/<commit>/` (git-ignored) with its own
virtual environment (`make install` there), kept for the next run.

A bench that runs "beside" starts one process of itself per tree and round with that
tree's interpreter and `NVQ_BENCH_TREE` pointing at it (`common.py` then imports the
harness and nvq from there), in alternating order, so the machine's drift touches
both trees alike.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
STORE = HERE / ".beside"


def checkout(tree: str) -> Path:
    """The root of `tree` with a made virtual environment: a directory as given, or a
    git revision of this repository exported once under `bench/.beside/`."""
    path = Path(tree)
    if not path.is_dir():
        sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", f"{tree}^{{commit}}"],
                             check=True, capture_output=True, text=True).stdout.strip()
        path = STORE / sha
        if not path.is_dir():
            partial = STORE / f"{sha}.partial"
            partial.mkdir(parents=True, exist_ok=True)
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", sha],
                                     check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(partial)], input=archive, check=True)
            partial.rename(path)
    if not (path / ".venv" / ".installed-stamp").exists():
        subprocess.run(["make", "-C", str(path), "install"], check=True,
                       stdout=sys.stderr)
    return path.resolve()


def python_of(root: Path) -> Path:
    return root / ".venv" / "bin" / "python"


def run_in(root: Path, script: Path, argv: list[str], *, tmpdir: str | None) -> dict[str, object]:
    """`script argv` with `root`'s interpreter and nvq; its last stdout line, decoded."""
    env = {**os.environ, "NVQ_BENCH_TREE": str(root)}
    if tmpdir is not None:
        env["TMPDIR"] = tmpdir
    out = subprocess.run([str(python_of(root)), str(script), *argv], env=env, check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def alternate(script: Path, argv: list[str], trees: dict[str, Path], rounds: int,
              tmpdir: str | None) -> dict[str, list[dict[str, object]]]:
    """Every tree once per round, the order turned round each round (A B, B A, …)."""
    names = list(trees)
    runs: dict[str, list[dict[str, object]]] = {name: [] for name in names}
    for i in range(rounds):
        for name in names if i % 2 == 0 else names[::-1]:
            doc = run_in(trees[name], script, argv, tmpdir=tmpdir)
            print(json.dumps({"round": i, "tree": name, **doc}), file=sys.stderr, flush=True)
            runs[name].append(doc)
    return runs


def main() -> None:
    """`beside.py TREE [--rounds N] [--dir DIR] -- SCRIPT ARGS…`: any bench script run
    alternately with this tree and TREE; one JSON line with every run of each."""
    import argparse

    ap = argparse.ArgumentParser(usage="beside.py TREE [--rounds N] [--dir DIR] -- SCRIPT ARGS...")
    ap.add_argument("tree")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir")
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        ap.error("name a bench script after --")
    cut = argv.index("--")
    args, script = ap.parse_args(argv[:cut]), argv[cut + 1:]
    trees = {"this": ROOT, "beside": checkout(args.tree)}
    runs = alternate(HERE / script[0], script[1:], trees, args.rounds, args.dir)
    print(json.dumps({"bench": "beside", "script": script, "tree": args.tree,
                      "dir": args.dir, "rounds": args.rounds, **runs}), flush=True)


if __name__ == "__main__":
    main()
