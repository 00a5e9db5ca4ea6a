"""Which environment variables are secrets to hide when shown, and hiding them. Kept
apart from nvq.world.environment: `job show` renders with it on the CLI's plain path,
which must not import what capturing and merging environments need."""

from __future__ import annotations

import functools

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "KEY")
MASK = "***"


@functools.lru_cache(maxsize=4096)  # the same few names, job after job
def is_secret(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def masked(env: Mapping[str, str]) -> dict[str, str]:
    """The environment as shown to people: values of secret-looking names hidden."""
    if not any(map(is_secret, env)):
        return dict(env)
    return {k: MASK if is_secret(k) else v for k, v in env.items()}
