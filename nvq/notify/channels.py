"""Delivering one outbox item on one channel. Blocking on purpose: the notifier runs
each delivery in a worker thread, and a failure is an exception whose message is
stored on the item (and shown by `queue status`)."""

from __future__ import annotations

import json
import os
import shutil
import smtplib
import ssl
import subprocess
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path
from typing import Any

from nvq.config import Config, EmailChannel
from nvq.notify.errors import DeliveryError
from nvq.notify.plan import webhook_index
from nvq.notify.text import body, header_text, subject

__all__ = ["DeliveryError", "body", "deliver", "header_text", "subject"]

COMMAND_TIMEOUT = 60.0
SMTP_TIMEOUT = 30.0


def deliver(channel: str, key: str, payload: dict[str, Any], config: Config, home: Path) -> None:
    if channel == "email":
        assert config.notify.email is not None
        send_email(config.notify.email, key, payload)
    elif channel == "command":
        assert config.notify.command
        run_command(config.notify.command, payload)
    elif channel == "file":
        append_line(Path(config.notify.file or home / "alerts.log"), payload)
    elif channel == "desktop":
        desktop(payload)
    elif channel.startswith("webhook") and webhook_index(channel) < len(config.notify.webhooks):
        from nvq.notify.webhook import post

        post(config.notify.webhooks[webhook_index(channel)], key, payload)
    else:
        raise DeliveryError(f"channel {channel} is not configured any more")


def _password(cfg: EmailChannel) -> str | None:
    if cfg.password_file:
        try:
            return Path(cfg.password_file).read_text().strip()
        except OSError as exc:
            raise DeliveryError(f"password_file {cfg.password_file}: {exc.strerror}") from None
    if cfg.password_env:
        value = os.environ.get(cfg.password_env)
        if value is None:
            raise DeliveryError(f"password_env {cfg.password_env} is not set for the daemon")
        return value
    return None


def send_email(cfg: EmailChannel, key: str, payload: dict[str, Any]) -> None:
    msg = EmailMessage()
    msg["From"] = cfg.sender
    msg["To"] = ", ".join(payload["to"])
    msg["Subject"] = subject(payload)
    msg["Date"] = formatdate(localtime=True)
    # The outbox key makes the Message-ID stable: a resend after a crash between
    # sending and recording it is recognisable as the same message.
    msg["Message-ID"] = make_msgid(idstring=key.replace(":", "."), domain="nvq")
    msg.set_content(body(payload))
    port = cfg.port or {"tls": 465, "starttls": 587}.get(cfg.security, 25)
    try:
        smtp: smtplib.SMTP
        if cfg.security == "tls":
            smtp = smtplib.SMTP_SSL(
                cfg.host, port, timeout=SMTP_TIMEOUT, context=ssl.create_default_context()
            )
        else:
            smtp = smtplib.SMTP(cfg.host, port, timeout=SMTP_TIMEOUT)
        with smtp:
            if cfg.security == "starttls":
                smtp.starttls(context=ssl.create_default_context())
            if cfg.user:
                smtp.login(cfg.user, _password(cfg) or "")
            smtp.send_message(msg)
    except (OSError, smtplib.SMTPException) as exc:
        raise DeliveryError(f"SMTP {cfg.host}:{port}: {_one_line(exc)}") from None


def run_command(argv: list[str], payload: dict[str, Any]) -> None:
    try:
        proc = subprocess.run(
            argv,
            input=json.dumps(payload).encode(),
            capture_output=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DeliveryError(f"{argv[0]}: {_one_line(exc)}") from None
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        raise DeliveryError(f"{argv[0]} exited {proc.returncode}" + (f": {err[-1]}" if err else ""))


def append_line(path: Path, payload: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as f:
            f.write(json.dumps(payload, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        raise DeliveryError(f"{path}: {exc.strerror}") from None


def desktop(payload: dict[str, Any]) -> None:
    exe = shutil.which("notify-send")
    if exe is None:
        return  # "where present": a headless queue host simply has no desktop
    urgency = "critical" if payload.get("alert", {}).get("severity") == "error" else "normal"
    try:
        subprocess.run(
            [exe, "-u", urgency, "-a", "nvq", subject(payload), body(payload)],
            capture_output=True,
            timeout=COMMAND_TIMEOUT,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise DeliveryError(f"notify-send: {_one_line(exc)}") from None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
