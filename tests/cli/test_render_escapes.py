"""What a submitter typed reaches another user's terminal only escaped."""

from __future__ import annotations

from nvq.cli.render.table import clip, safe


def test_control_characters_are_escaped_and_text_kept() -> None:
    assert safe("a\x1b[31mred\nline\t\x07") == "a\\x1b[31mred\\nline\\t\\x07"
    assert safe("plain ünïcode ✓") == "plain ünïcode ✓"
    assert safe("\u202eevil") == "\\u202eevil"  # right-to-left override
    assert clip("x\ny", 10) == "x\\ny"
