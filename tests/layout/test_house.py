"""The shape of the source tree, checked: data flows one way (runner → daemon → store
→ client → front ends), pure decisions import only the model, and no import circles."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("nvq", "nvq_runner")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _top_level_imports(name: str, path: Path, known: set[str]) -> Iterator[str]:
    """Modules imported when `name` is imported: module level only (a function's own
    lazy import and `if TYPE_CHECKING:` blocks run later or never)."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - node.level + 1]
                mod = ".".join([*anchor, *(node.module.split(".") if node.module else [])])
            else:
                mod = node.module or ""
            targets = [mod]
            targets += [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in known]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


@functools.cache  # one parse of the tree serves every check (they only read it)
def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {name: set(_top_level_imports(name, path, known)) for name, path in mods.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            # A package's __init__ importing its own submodules is its face, not a circle.
            if w.startswith(v + "."):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles() -> None:
    assert _circles(_graph()) == []


def test_the_runner_imports_nothing_from_nvq() -> None:
    graph = _graph()
    bad = {
        m: sorted(t for t in ts if t.split(".")[0] == "nvq")
        for m, ts in graph.items()
        if m.startswith("nvq_runner")
    }
    assert {m: ts for m, ts in bad.items() if ts} == {}


def test_pure_decisions_import_only_the_model() -> None:
    allowed = ("nvq.model", "nvq.values", "nvq.domain", "nvq.errors", "nvq_runner.protocol")
    graph = _graph()
    bad = {
        m: sorted(t for t in ts if not t.startswith(allowed) and t != "nvq")
        for m, ts in graph.items()
        if m.startswith("nvq.domain")
    }
    assert {m: ts for m, ts in bad.items() if ts} == {}


def test_lower_floors_do_not_import_upper_ones() -> None:
    # model/values → domain → store → daemon → client → cli/front ends
    upper = {
        "nvq.model": ("nvq.domain", "nvq.store", "nvq.daemon", "nvq.client", "nvq.cli"),
        "nvq.store": ("nvq.daemon", "nvq.client", "nvq.cli"),
        "nvq.daemon": ("nvq.client", "nvq.cli"),
        "nvq.client": ("nvq.cli", "nvq.daemon"),
    }
    graph = _graph()
    bad = []
    for mod, targets in graph.items():
        for floor, above in upper.items():
            if mod == floor or mod.startswith(floor + "."):
                bad += [
                    f"{mod} -> {t}"
                    for t in targets
                    if any(t == a or t.startswith(a + ".") for a in above)
                ]
    assert bad == []


# One concept a file, not a line cap: a file says one thing, however long that takes.
# A file over ~600 lines is where a second concept hides, so each one names here the
# one concept it holds (and leaves when it gets under: the test keeps it there).
MAX_LINES = 600
CONCEPT_OF_A_LONG_FILE: dict[str, str] = {
    # Every message of both directions, their unions, the snapshot manifest and the
    # framing, so that a message cannot be left out of its union or its export
    # (tests/runner/test_protocol_contract.py).
    "nvq_runner/protocol.py": "the runner ⇄ daemon wire contract",
    # Its inputs and outputs, the pass, and the per-request profile that is the pass's
    # memory of what failed; a new constraint touches all three at once.
    "nvq/domain/placement.py": "pure placement",
}


def test_a_file_over_600_lines_names_its_one_concept() -> None:
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for pkg in PACKAGES
        for path in sorted((ROOT / pkg).rglob("*.py"))
    }
    over = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert {n: lines for n, lines in over.items() if n not in CONCEPT_OF_A_LONG_FILE} == {}
    # A named file that got under the limit leaves the list: it must stay under.
    assert sorted(set(CONCEPT_OF_A_LONG_FILE) - set(over)) == []
