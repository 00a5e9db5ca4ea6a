"""The daemon's floor plan, checked: `nvq/daemon` is a few wings (packages by concept)
in a one-way order, and a wing imports only the wings below it. Every import counts
here, a function's lazy one and an `if TYPE_CHECKING:` one too: a tie is a tie, even
when it is late (the relay once imported the control server inside a function, which
lifted the whole runner side over the request side). What a lower wing needs from a
higher one it names as a Protocol and is handed by `nvq.daemon.main`.

The file-level rules (no circles, one-way floors across the house) are in
test_house.py; this file holds the wings, and is what docs/DESIGN.md's "Layout"
draws."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DAEMON = ROOT / "nvq" / "daemon"

# Ground floor first. Wings on one floor do not import each other.
FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"core", "ops"}),  # how any change happens; alerts, notifier, backups
    frozenset({"placement", "output", "ssh"}),  # placement; output copies; the transport
    frozenset({"machines"}),  # links, runner events, reassignment, pilots, reload
    frozenset({"artifacts"}),  # artifact trees, their syncs, snapshots, pulls
    frozenset({"handlers"}),  # one request each, and their context
    frozenset({"sessions"}),  # terminals, port forwards, a job's relayed requests
    frozenset({"serve"}),  # the control server
    frozenset({"main"}),  # wires the pieces
)
# Modules directly in nvq/daemon (each is a wing of its own above). Few on purpose: a
# new module goes into the wing of its concept.
TOP_LEVEL = {"__init__", "main", "ops"}
MAX_TOP_LEVEL = 12


def _floor_of(wing: str) -> int:
    return next(i for i, wings in enumerate(FLOORS) if wing in wings)


def _wing(module: str) -> str | None:
    """`nvq.daemon.placement.slots` → "placement"; None outside the daemon's wings."""
    parts = module.split(".")
    if parts[:2] != ["nvq", "daemon"] or len(parts) < 3:
        return None
    return parts[2]


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(DAEMON.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path) -> set[str]:
    """Every module `name` imports, wherever the import statement stands."""
    tree = ast.parse(path.read_text(), str(path))
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - node.level + 1]
                mod = ".".join([*anchor, *(node.module.split(".") if node.module else [])])
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def wing_ties() -> dict[tuple[str, str], set[str]]:
    """(importing wing, imported wing) → "module -> module" lines, across wings."""
    mods = _modules()
    ties: dict[tuple[str, str], set[str]] = {}
    for name, path in mods.items():
        here = _wing(name)
        for target in _imports(name, path):
            while target and target not in mods:
                target = target.rpartition(".")[0]
            there = _wing(target) if target else None
            if here is None or there is None or here == there:
                continue
            ties.setdefault((here, there), set()).add(f"{name} -> {target}")
    return ties


def test_every_daemon_module_is_in_a_wing_on_the_plan() -> None:
    wings = {w for floor in FLOORS for w in floor}
    packages = {p.name for p in DAEMON.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    top = {p.stem for p in DAEMON.glob("*.py")}
    assert packages - wings == set(), "a new wing: give it its floor in FLOORS"
    assert top - TOP_LEVEL == set(), "a module directly in nvq/daemon: put it in its wing"
    assert len(top) <= MAX_TOP_LEVEL


def test_a_wing_imports_only_the_wings_below_it() -> None:
    upward = sorted(
        line
        for (here, there), lines in wing_ties().items()
        if there != "__init__" and _floor_of(there) >= _floor_of(here)
        for line in lines
    )
    assert upward == []


def test_the_check_sees_an_import_up_even_inside_a_function(tmp_path: Path) -> None:
    """The rule reads lazy imports too (the kind that hid the relay's tie)."""
    late = tmp_path / "late.py"
    late.write_text("def f():\n    from nvq.daemon.serve.control_server import serve_relayed\n")
    assert "nvq.daemon.serve.control_server" in _imports("nvq.daemon.sessions.late", late)


def drawing() -> str:
    """The floor plan as the code has it: each wing and the wings it imports, with the
    count of arrows (wing pairs), module ties and those running back up."""
    ties = wing_ties()
    pairs = {k: v for k, v in ties.items() if k[1] in {w for f in FLOORS for w in f}}
    up = [k for k in pairs if _floor_of(k[1]) >= _floor_of(k[0])]
    lines = [
        f"{len(pairs)} arrows between wings ({sum(map(len, pairs.values()))} module ties), "
        f"{len(up)} running back up; {len(list(DAEMON.glob('*.py')))} modules directly in "
        "nvq/daemon"
    ]
    for i, floor in reversed(list(enumerate(FLOORS))):
        for wing in sorted(floor):
            below = sorted({t for (h, t) in pairs if h == wing})
            lines.append(f"floor {i}  {wing:<10} -> {', '.join(below) or '-'}")
    return "\n".join(lines)


if __name__ == "__main__":  # python tests/layout/test_wings.py
    print(drawing())
