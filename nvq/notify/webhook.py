"""Webhooks: one outbox item POSTed (Matrix: PUT) to an HTTP endpoint in the body its
service expects. Blocking, like every channel: the notifier runs it in a thread, and
a failure (no answer, a status other than 2xx) is a `DeliveryError`, retried with the
outbox's backoff.

* ``json``: the item's payload as it is (``type`` "alert" or "job", and the document).
* ``slack``: ``{"text": ...}`` (Slack incoming webhooks, Mattermost, Discord's /slack).
* ``matrix``: ``{"msgtype": "m.text", "body": ...}`` PUT to ``<url>/<txn>``: the url is
  ``.../rooms/<room>/send/m.room.message``; the transaction id is the outbox key, so
  a resend after a crash is the same event to the homeserver.
* ``ntfy``: the text as the body, the subject in ``Title``, failures at high priority.

Every request carries ``Idempotency-Key: <outbox key>`` for endpoints that use it."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from nvq.config import WebhookChannel
from nvq.notify.errors import DeliveryError
from nvq.notify.text import body, subject

BAD = ("failed", "timeout", "lost", "unschedulable")


def request_for(hook: WebhookChannel, key: str, payload: dict[str, Any]) -> urllib.request.Request:
    """The HTTP request for one item (pure but for building the object)."""
    headers = {"User-Agent": "nvq", "Idempotency-Key": key}
    url, method = hook.url, "POST"
    text = subject(payload) + "\n" + body(payload)
    if hook.format == "slack":
        data = json.dumps({"text": text}).encode()
        headers["Content-Type"] = "application/json"
    elif hook.format == "matrix":
        data = json.dumps({"msgtype": "m.text", "body": text}).encode()
        headers["Content-Type"] = "application/json"
        txn = re.sub(r"[^A-Za-z0-9._~-]", "_", key)
        url, method = url.rstrip("/") + "/" + urllib.parse.quote(txn), "PUT"
    elif hook.format == "ntfy":
        data = body(payload).encode()
        headers["Content-Type"] = "text/plain; charset=utf-8"
        headers["Title"] = subject(payload)
        if _is_bad(payload):
            headers["Priority"] = "high"
            headers["Tags"] = "warning"
    else:
        data = json.dumps(payload, sort_keys=True).encode()
        headers["Content-Type"] = "application/json"
    headers.update(hook.headers)
    return urllib.request.Request(url, data=data, headers=headers, method=method)


def _is_bad(payload: dict[str, Any]) -> bool:
    if payload.get("type") == "alert":
        return bool(payload["alert"].get("severity") == "error")
    return str(payload.get("job", {}).get("state")) in BAD


def post(hook: WebhookChannel, key: str, payload: dict[str, Any]) -> None:
    req = request_for(hook, key, payload)
    where = urllib.parse.urlsplit(hook.url).netloc
    try:
        with urllib.request.urlopen(req, timeout=hook.timeout) as resp:
            resp.read(65536)
    except urllib.error.HTTPError as exc:
        said = exc.read(300).decode(errors="replace").strip().splitlines()
        raise DeliveryError(
            f"webhook {where}: HTTP {exc.code}" + (f": {said[0]}" if said else "")
        ) from None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DeliveryError(f"webhook {where}: {reason}") from None
