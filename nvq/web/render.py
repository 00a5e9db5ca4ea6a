"""The Jinja2 environment the pages are rendered with (templates beside this file,
HTML-escaped), and the helpers the templates call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from nvq.web import pages

HERE = Path(__file__).parent
STATIC = HERE / "static"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(
        clock=pages.clock,
        duration=pages.duration,
        gib=pages.gib,
        size=pages.size,
        gpu_bar=pages.gpu_bar,
        where=pages.where,
    )
    return env


def page(env: jinja2.Environment, body: str, *, fragment: bool, **context: Any) -> str:
    """The whole page, or only its live part (what the script swaps in on an event)."""
    template = env.get_template(body if fragment else "page.html")
    return template.render(body=body, **context)
