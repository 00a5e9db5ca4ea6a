"""Who may open the page: whoever holds the token. `nvq web` keeps one token in
`$NVQ_HOME/web.token` (0600) and prints it in the URL; the first visit trades it for a
cookie, so the token leaves the address bar and every later request carries the cookie.

The page acts as the OS user who runs `nvq web` (the daemon reads the socket's peer
credentials), so the token belongs to that user: a member of the lab who wants the page
runs their own `nvq web`. Forms that change something carry a CSRF value derived from
the token, and the cookie is SameSite=Strict, so another site cannot post for the
visitor."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

COOKIE = "nvq_web"
TOKEN_FILE = "web.token"


def token_path(root: Path) -> Path:
    """The queue owner's token lives in the queue's home; a member (who cannot write
    there) keeps theirs in their own home, one per queue."""
    if os.access(root, os.W_OK | os.X_OK) or not root.exists():
        return root / TOKEN_FILE
    tag = hashlib.sha256(str(root).encode()).hexdigest()[:12]
    return Path.home() / ".nvq-web" / f"{tag}.token"


def load_or_create_token(root: Path) -> str:
    """The home's token, made (0600) on first use; kept so a bookmarked URL survives a
    restart of `nvq web`."""
    path = token_path(root)
    try:
        token = path.read_text().strip()
        if token:
            return token
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(32)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    tmp.replace(path)
    return token


def new_token(root: Path) -> str:
    """Forget the old token (every open page loses access) and make another."""
    token_path(root).unlink(missing_ok=True)
    return load_or_create_token(root)


def matches(token: str, offered: str | None) -> bool:
    return offered is not None and hmac.compare_digest(token.encode(), offered.encode())


def csrf_value(token: str) -> str:
    """What a form must send back: known to a page served to the token holder only."""
    return hmac.new(token.encode(), b"nvq-web-csrf", hashlib.sha256).hexdigest()
