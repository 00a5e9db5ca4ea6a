"""config.toml: [notify], [users.NAME] and [queue.backup], and their one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nvq.config import (
    BackupConfig,
    ConfigError,
    EmailChannel,
    NotifyConfig,
    UserConfig,
    load_config,
)

GOOD = """
[queue]
local_node = true

[queue.backup]
enabled = true
interval_hours = 6
keep = 10
directory = "~/nvq-backups"

[notify]
severity = "info"
email_on_failure = true
retry_initial = "30s"

[notify.email]
host = "smtp.lab"
port = 465
security = "tls"
user = "nvq"
password_file = "~/.nvq/smtp-password"
from = "nvq@lab"
to = ["ops@lab", "me@lab"]

[notify.command]
run = ["/usr/local/bin/page-me", "--quiet"]

[notify.file]

[notify.desktop]
enabled = true

[users.alice]
email = "alice@lab"
"""


def load(tmp_path: Path, text: str) -> Any:
    (tmp_path / "config.toml").write_text(text)
    return load_config(tmp_path)


def test_a_complete_ops_config(tmp_path: Path) -> None:
    cfg = load(tmp_path, GOOD)
    home = str(Path.home())
    assert cfg.backup == BackupConfig(
        enabled=True, interval_hours=6.0, keep=10, directory=f"{home}/nvq-backups"
    )
    assert cfg.notify == NotifyConfig(
        email=EmailChannel(
            host="smtp.lab",
            port=465,
            security="tls",
            user="nvq",
            password_file=f"{home}/.nvq/smtp-password",
            sender="nvq@lab",
            to=["ops@lab", "me@lab"],
        ),
        command=["/usr/local/bin/page-me", "--quiet"],
        file="",
        desktop=True,
        severity="info",
        email_on_failure=True,
        retry_initial=30.0,
    )
    assert cfg.users == {"alice": UserConfig(email="alice@lab")}
    assert (
        load(tmp_path, "").notify == NotifyConfig() and load(tmp_path, "").backup == BackupConfig()
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[queue.backup]\nkeep = 0\n", "queue.backup.keep: expected an integer >= 1, got 0"),
        ("[queue.backup]\nevery = 1\n", "queue.backup.every: unknown key"),
        (
            "[queue.backup]\ninterval_hours = -1\n",
            "queue.backup.interval_hours: expected a positive number, got -1",
        ),
        ("[notify]\nsms = 1\n", "notify.sms: unknown key"),
        (
            '[notify]\nseverity = "loud"\n',
            'notify.severity: expected one of info, warning, error, got "loud"',
        ),
        ('[notify.email]\nfrom = "a@b"\n', "notify.email.host: missing (e-mail needs it)"),
        (
            '[notify.email]\nhost = "h"\nfrom = "a@b"\nsecurity = "ssl"\n',
            'notify.email.security: expected one of starttls, tls, none, got "ssl"',
        ),
        (
            '[notify.email]\nhost = "h"\nfrom = "nobody"\n',
            'notify.email.from: expected an e-mail address, got "nobody"',
        ),
        (
            '[notify.email]\nhost = "h"\nfrom = "a@b"\nto = ["x@y", 3]\n',
            "notify.email.to[1]: expected a non-empty string, got 3",
        ),
        (
            '[notify.email]\nhost = "h"\nfrom = "a@b"\npassword_file = "f"\npassword_env = "E"\n',
            "notify.email.password_env: give password_file or password_env",
        ),
        ("[notify.command]\n", "notify.command.run: missing"),
        (
            '[notify.file]\nenabled = "yes"\n',
            'notify.file.enabled: expected true or false, got "yes"',
        ),
        ('[users.bob]\nmail = "b@x"\n', "users.bob.mail: unknown key"),
        ('[users.bob]\nemail = "bob"\n', 'users.bob.email: expected an e-mail address, got "bob"'),
    ],
)
def test_ops_config_errors_name_file_and_key(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(ConfigError) as err:
        load(tmp_path, text)
    message = str(err.value)
    assert message.startswith(f"{tmp_path / 'config.toml'}: {problem}"), message
    assert "\n" not in message
