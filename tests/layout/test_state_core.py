"""`State` is the committed core: what it holds is declared in its own `__init__`,
and no other module sets an attribute on it. A feature's memory lives with the
feature (placement's is `placement.Memory`), and what a commit hands on is named
once, by `nvq.daemon.main`, through `State.follow`."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATE = ROOT / "nvq" / "daemon" / "core" / "state.py"
# A reload replaces the config whole (machines/reload.py, and `cluster` edits that
# rewrite config.toml): the one attribute swapped from outside, on purpose.
SWAPPED = {"config"}
MAX_ATTRIBUTES = 22  # 39 before placement's memory, the contention tallies and the store gaps left


def _state_targets(tree: ast.AST) -> list[tuple[int, str]]:
    """`state.X = …`, `self.state.X = …`, `held.state.X = …` (plain or augmented)."""
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            # the attribute itself, not what it holds (`state.nodes[n] = …` changes the
            # mirror through its own door)
            for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                if not isinstance(t, ast.Attribute):
                    continue
                owner = t.value
                if (isinstance(owner, ast.Name) and owner.id == "state") or (
                    isinstance(owner, ast.Attribute) and owner.attr == "state"
                ):
                    found.append((t.lineno, t.attr))
    return found


def test_nothing_sets_an_attribute_on_state_from_outside() -> None:
    outside = []
    for path in sorted((ROOT / "nvq").rglob("*.py")):
        if path == STATE:
            continue
        tree = ast.parse(path.read_text(), str(path))
        outside += [
            f"{path.relative_to(ROOT)}:{line} state.{attr}"
            for line, attr in _state_targets(tree)
            if attr not in SWAPPED
        ]
    assert outside == []


def test_state_init_holds_the_committed_core_only() -> None:
    tree = ast.parse(STATE.read_text())
    cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "State")
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    names = {
        t.attr
        for n in ast.walk(init)
        for t in (n.targets if isinstance(n, ast.Assign) else [getattr(n, "target", None)])
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    }
    placement = {"pending_cache", "slot_cache", "placement_stats", "lane_blocked", "reservation",
                 "preempt_holds", "pass_facts", "fair_share", "starves_at", "begins_at"}
    assert names & placement == set()
    assert len(names) <= MAX_ATTRIBUTES, sorted(names)
