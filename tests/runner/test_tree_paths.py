"""One path-safety rule (nvq_runner/tree_paths.py) for every path joined beneath a root:
the rule itself against a model of "stays inside", and each caller holding to it —
submit manifests and artifact trees refuse the same lists with the same words but for
the list's name, `ReadChunks` and `job pull` refuse the same single paths."""

from __future__ import annotations

import posixpath
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nvq.daemon.artifacts.pull import check_paths
from nvq.daemon.core.errors import RequestError
from nvq_runner.artifact_tree import ArtifactTree, TreeEntry, TreeError, check_tree
from nvq_runner.chunk_reads import open_beneath
from nvq_runner.protocol import Entry, Manifest, ManifestError, check_manifest
from nvq_runner.tree_paths import safe_path
from tests.property_budget import examples

SHA = "0" * 64

# (path, is_dir) lists, and the refusal with {what} for the list's name
UNSAFE: list[tuple[list[tuple[str, bool]], str]] = [
    ([("/etc/passwd", False)], "unsafe path in {what}: '/etc/passwd'"),
    ([("a/../../x", False)], "unsafe path in {what}: 'a/../../x'"),
    ([("", False)], "unsafe path in {what}: ''"),
    ([("a//b", False)], "unsafe path in {what}: 'a//b'"),
    ([("./a", False)], "unsafe path in {what}: './a'"),
    ([("a\0b", False)], "unsafe path in {what}: 'a\\x00b'"),
    ([("a", False), ("a", False)], "duplicate path in {what}: 'a'"),
    ([("d/x", False), ("d", True)], "'d/x' comes before its directory in the {what}"),
    ([("f", False), ("f/x", False)], "'f/x' comes before its directory in the {what}"),
]


def _manifest(paths: list[tuple[str, bool]]) -> Manifest:
    return Manifest(entries=[
        Entry(path=p, kind="d" if d else "f", mode=0o755 if d else 0o644, sha256="" if d else SHA)
        for p, d in paths
    ])


def _tree(paths: list[tuple[str, bool]]) -> ArtifactTree:
    return ArtifactTree(entries=[TreeEntry(path=p, kind="d" if d else "f", mode=0o700)
                                 for p, d in paths])


@pytest.mark.parametrize(("paths", "refusal"), UNSAFE)
def test_both_lists_refuse_what_could_write_outside(
    paths: list[tuple[str, bool]], refusal: str
) -> None:
    with pytest.raises(ManifestError) as manifest_refused:
        check_manifest(_manifest(paths))
    assert str(manifest_refused.value) == refusal.format(what="manifest")
    with pytest.raises(TreeError) as tree_refused:
        check_tree(_tree(paths))
    assert str(tree_refused.value) == refusal.format(what="artifacts tree")


def test_a_nested_tree_in_order_passes_both() -> None:
    paths = [("d", True), ("d/e", True), ("d/e/f", False), ("g", False)]
    check_manifest(_manifest(paths))
    check_tree(_tree(paths))


# A path drawn from names that matter: real ones, the dot names, empty parts, a NUL.
_PATHS = st.builds(
    lambda lead, parts: lead + "/".join(parts),
    st.sampled_from(["", "/"]),
    st.lists(st.sampled_from(["a", "b", "..", ".", "", "c\0", "..a"]), max_size=5),
)


@given(_PATHS)
@settings(max_examples=examples(400), deadline=None)
def test_the_rule_keeps_every_path_beneath_its_root(path: str) -> None:
    inside = posixpath.normpath(posixpath.join("/root", path))
    stays = (inside == "/root" or inside.startswith("/root/")) and "\0" not in path
    if safe_path(path, typed=True):
        # Safe as typed: the OS, reading it as written, stays beneath the root; only
        # absolute paths, `..` parts, NULs and the empty path are refused.
        assert stays and path
        assert safe_path(path, typed=True) == (
            path != "" and not path.startswith("/") and ".." not in path.split("/")
        )
    if safe_path(path):
        # Exact: typed-safe, already in normal form, and names something inside.
        assert safe_path(path, typed=True)
        assert posixpath.normpath(path) == path and inside != "/root"
    elif path and stays and posixpath.normpath(path) == path and path != ".":
        pytest.fail(f"{path!r} is exact and inside, yet refused")


SINGLE = ["/etc/passwd", "a/../../x", "..", "", "a\0b"]


@pytest.mark.parametrize("path", SINGLE)
def test_a_read_on_the_wire_and_a_pull_refuse_what_could_leave(
    path: str, tmp_path: Path
) -> None:
    with pytest.raises(OSError, match="not a path inside the artifacts"):
        open_beneath(tmp_path, path)
    with pytest.raises(RequestError, match="give paths inside the job's working directory"):
        check_paths([path])


def test_a_typed_path_may_be_written_loosely_an_exact_one_may_not() -> None:
    for loose in ["./a", "a//b", "a/", "."]:
        check_paths([loose])  # `job pull ./out` works as it always did
        assert not safe_path(loose)
