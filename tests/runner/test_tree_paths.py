"""One path-safety rule for submit manifests and artifact trees: each refuses the same
lists, with the same words but for the name of the list."""

from __future__ import annotations

import pytest

from nvq_runner.artifact_tree import ArtifactTree, TreeEntry, TreeError, check_tree
from nvq_runner.protocol import Entry, Manifest, ManifestError, check_manifest

SHA = "0" * 64

# (path, is_dir) lists, and the refusal with {what} for the list's name
UNSAFE: list[tuple[list[tuple[str, bool]], str]] = [
    ([("/etc/passwd", False)], "unsafe path in {what}: '/etc/passwd'"),
    ([("a/../../x", False)], "unsafe path in {what}: 'a/../../x'"),
    ([("", False)], "unsafe path in {what}: ''"),
    ([("a//b", False)], "unsafe path in {what}: 'a//b'"),
    ([("./a", False)], "unsafe path in {what}: './a'"),
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
