"""config.toml → `Config`: every key checked, every error one line naming the file
and the key (see `nvq.config` for the format)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import msgspec

from nvq.config.clusters import parse_clusters
from nvq.config.fields import Convert, FieldReader
from nvq.config.jumps import one_hop, resolve
from nvq.config.lease import lease_problem, no_room
from nvq.config.sharing import SHARE_KEYS, queue_fields, read_limits, user_sharing
from nvq.config.submit import read_submit
from nvq.config.types import (
    WEBHOOK_EVENTS,
    WEBHOOK_FORMATS,
    BackupConfig,
    ClusterConfig,
    Config,
    ConfigError,
    EmailChannel,
    Limits,
    NodeConfig,
    NotifyConfig,
    QueueConfig,
    RemoteConfig,
    UserConfig,
    WebhookChannel,
)
from nvq.values import show


def load_config(home: Path) -> Config:
    """Read `home/config.toml`; a missing file means all defaults."""
    path = home / "config.toml"
    stamp = file_stamp(path)  # before reading: a write in between reads as a change
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Config(path=path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {_toml_error(str(exc))}") from exc
    return msgspec.structs.replace(parse_config(data, path), read_stamp=stamp)


def file_stamp(path: Path | None) -> tuple[int, int] | None:
    """What tells that config.toml changed since it was read (`queue status`): (mtime
    ns, size)."""
    try:
        st = path.stat() if path is not None else None
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size) if st is not None else None


def parse_config(data: dict[str, Any], path: Path) -> Config:
    """Validate parsed TOML; raise `ConfigError` on the first problem found."""
    return _Parser(path).config(data)


def _toml_error(message: str) -> str:
    # tomllib (3.11) puts the position in the message: "Invalid value (at line 3, column 9)".
    match = re.fullmatch(r"(.*) \(at line (\d+), column (\d+)\)", message)
    if match:
        return f"line {match.group(2)}, column {match.group(3)}: invalid TOML: {match.group(1)}"
    return f"invalid TOML: {message}"


class _Parser(FieldReader):
    """The sections of config.toml, each from its table; `[[clusters]]` and `[submit]`
    have modules of their own."""

    def config(self, data: dict[str, Any]) -> Config:
        top = self.table(
            data,
            "",
            {"queue", "nodes", "remote", "notify", "users", "clusters", "submit", "limits"},
        )
        queue_raw = top.get("queue", {})
        backup = BackupConfig()
        if isinstance(queue_raw, dict) and "backup" in queue_raw:
            queue_raw = dict(queue_raw)
            backup = self.backup(queue_raw.pop("backup"))
        queue = self.queue(queue_raw)
        nodes = self.nodes(top.get("nodes", []), queue)
        remote = self.remote(top["remote"]) if "remote" in top else None
        limits = read_limits(self, top.get("limits", {}))
        return Config(
            path=self.path,
            queue=queue,
            nodes=nodes,
            remote=remote,
            backup=backup,
            notify=self.notify(top.get("notify", {})),
            users=self.users(top.get("users", {}), limits.defaults),
            limits=limits,
            clusters=self.clusters(top.get("clusters", []), queue, nodes),
            submit=read_submit(self, top.get("submit", {})),
        )

    def clusters(
        self, value: Any, queue: QueueConfig, nodes: list[NodeConfig]
    ) -> list[ClusterConfig]:
        taken = [n.name for n in nodes] + ([queue.local_node_name] if queue.local_node else [])
        return parse_clusters(value, self.path, taken)

    def queue(self, value: Any) -> QueueConfig:
        fields: dict[str, Convert] = {
            "local_node": self.boolean,
            "local_node_name": self.name,
            "local_home": self.string,
            "local_gpus": self.gpu_list,
            "local_env": self.env,
            "headroom": self.size,
            "max_cpu_jobs_per_node": lambda v, k: self.integer(v, k, 0),
            "kill_grace": self.delay,  # 0: SIGKILL straight away
            "node_grace": self.duration,
            "lease": self.lease,
            "max_downtime": self.duration,
            "ssh_keepalive": self.duration,
            "ssh_connect_timeout": self.duration,
            "admins": self.string_list,
            "members_group": self.group,
            "members_read": lambda v, k: self.choice(v, k, ("metadata", "all")),
            "backup_dirs": lambda v, k: [
                self.path_value(item, f"{k}[{i}]") for i, item in enumerate(self.string_list(v, k))
            ],
            "starvation_after": self.delay,  # 0: reserve as soon as the head cannot start
            "interactive_idle": self.delay,  # 0: idle sessions are never released
            "interactive_grace": self.delay,
            "interactive_keep": lambda v, k: self.choice(v, k, ("anyone", "admins")),
            "artifact_sync": self.duration,
            "artifacts_quota": self.size,
            "busy_idle": self.duration,
            "max_result": self.bytes_size,
            "max_log_size": self.bytes_size,
            "max_log_tail": self.bytes_size,
            **queue_fields(self),
        }
        table = self.table(value, "queue", set(fields))
        out = {key: fields[key](item, f"queue.{key}") for key, item in table.items()}
        if "headroom" in out:
            out["headroom_mb"] = out.pop("headroom")
        if "artifacts_quota" in out:
            out["artifacts_quota_mb"] = out.pop("artifacts_quota")
        queue = QueueConfig(**out)
        problem = (lease_problem(queue.lease, queue.node_grace, queue.kill_grace) if queue.lease
                   else None if queue.lease == 0 else no_room(queue.node_grace, queue.kill_grace))
        if problem is not None:  # lease "off" (0) opts out, and says so
            raise self.fail("queue.lease" if queue.lease else "queue.node_grace", problem)
        return queue

    def lease(self, value: Any, key: str) -> float:
        """A duration, or "off" (0.0): runners never stop jobs on their own."""
        if value == "off":
            return 0.0
        return self.duration(value, key)

    def nodes(self, value: Any, queue: QueueConfig) -> list[NodeConfig]:
        if not isinstance(value, list):
            raise self.fail("nodes", f"expected [[nodes]] tables, got {show(value)}")
        fields: dict[str, Convert] = {
            "name": self.name,
            "host": self.string,
            "port": lambda v, k: self.integer(v, k, 1, 65535),
            "user": self.string,
            "identity": self.path_value,
            "known_hosts": self.path_value,
            "home": self.string,  # a path on the node: ~ is expanded there, not here
            "python": self.string,
            "gpus": self.gpu_list,
            "env": self.env,
            "owner": self.string,
            "shared": self.shared_dirs,
            "setup": self.string,
            "cache_size": self.bytes_size,
            "lazy_artifacts": self.boolean,
            "runtime": self.runtime,
            "jump": self.string,
        }
        seen: dict[str, int] = {}
        nodes = []
        for i, item in enumerate(value):
            prefix = f"nodes[{i}]"
            table = self.table(item, prefix, set(fields))
            for required in ("name", "host"):
                if required not in table:
                    raise self.fail(f"{prefix}.{required}", "missing (every node needs one)")
            out = {key: fields[key](v, f"{prefix}.{key}") for key, v in table.items()}
            name = out["name"]
            if name in seen:
                raise self.fail(
                    f"{prefix}.name", f"{show(name)} is already the name of nodes[{seen[name]}]"
                )
            if queue.local_node and name == queue.local_node_name:
                raise self.fail(
                    f"{prefix}.name",
                    f"{show(name)} is the local node's name (queue.local_node_name); "
                    "pick another or set queue.local_node = false",
                )
            seen[name] = i
            nodes.append(NodeConfig(**out))
        try:
            return resolve(nodes)
        except ValueError as exc:
            bad = next((i for i, n in enumerate(nodes) if n.jump and n.jump in str(exc)), 0)
            raise self.fail(f"nodes[{bad}].jump", str(exc)) from None

    def runtime(self, value: Any, key: str) -> str:
        runtimes = ("podman", "docker", "apptainer")
        text = self.string(value, key)
        if text not in runtimes:
            raise self.fail(key, f"{show(text)} is not one of {', '.join(runtimes)}")
        return text

    def shared_dirs(self, value: Any, key: str) -> list[str]:
        dirs = self.string_list(value, key)
        for item in dirs:
            if not item.startswith("/"):
                raise self.fail(key, f"{show(item)} is not an absolute path")
        return [item.rstrip("/") or "/" for item in dirs]

    def remote_jump(self, value: Any, key: str) -> str:
        try:
            return one_hop(self.string(value, key))
        except ValueError as exc:
            raise self.fail(key, str(exc)) from None

    def remote(self, value: Any) -> RemoteConfig:
        fields: dict[str, Convert] = {
            "host": self.string,
            "port": lambda v, k: self.integer(v, k, 1, 65535),
            "user": self.string,
            "identity": self.path_value,
            "known_hosts": self.path_value,
            "nvq": self.string,
            "home": self.string,
            "jump": self.remote_jump,
            "keep_connection": self.delay,
        }
        table = self.table(value, "remote", set(fields))
        if "host" not in table:
            raise self.fail("remote.host", "missing (the queue host to forward commands to)")
        return RemoteConfig(**{key: fields[key](v, f"remote.{key}") for key, v in table.items()})

    # -- operating the queue: backups, notifications, users ------------------------

    def backup(self, value: Any) -> BackupConfig:
        fields: dict[str, Convert] = {
            "enabled": self.boolean,
            "interval_hours": self.positive_number,
            "keep": lambda v, k: self.integer(v, k, 1),
            "directory": self.path_value,
        }
        table = self.table(value, "queue.backup", set(fields))
        return BackupConfig(
            **{key: fields[key](v, f"queue.backup.{key}") for key, v in table.items()}
        )

    def email_address(self, value: Any, key: str) -> str:
        text = self.string(value, key)
        if "@" not in text or any(c.isspace() for c in text):
            raise self.fail(key, f"expected an e-mail address, got {show(text)}")
        return text

    def addresses(self, value: Any, key: str) -> list[str]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list):
            raise self.fail(key, f"expected an address or a list of them, got {show(value)}")
        return [self.email_address(item, f"{key}[{i}]") for i, item in enumerate(items)]

    def notify(self, value: Any) -> NotifyConfig:
        table = self.table(
            value,
            "notify",
            {
                "email",
                "command",
                "file",
                "desktop",
                "webhook",
                "severity",
                "email_on_success",
                "email_on_failure",
                "retry_initial",
                "retry_max",
            },
        )
        out: dict[str, Any] = {}
        for key in ("email_on_success", "email_on_failure"):
            if key in table:
                out[key] = self.boolean(table[key], f"notify.{key}")
        for key in ("retry_initial", "retry_max"):
            if key in table:
                out[key] = self.duration(table[key], f"notify.{key}")
        initial = out.get("retry_initial", NotifyConfig().retry_initial)
        if out.get("retry_max", initial) < initial:
            raise self.fail("notify.retry_max", f"less than notify.retry_initial ({initial:g}s)")
        if "severity" in table:
            out["severity"] = self.choice(
                table["severity"], "notify.severity", ("info", "warning", "error")
            )
        if "email" in table:
            out["email"] = self.email(table["email"])
        if "command" in table:
            cmd = self.table(table["command"], "notify.command", {"run"})
            if "run" not in cmd:
                raise self.fail("notify.command.run", "missing (the program to run, as a list)")
            run = cmd["run"]
            if isinstance(run, str):
                run = [run]
            out["command"] = self.string_list(run, "notify.command.run")
            if not out["command"]:
                raise self.fail("notify.command.run", "expected at least the program")
        if "file" in table:
            f = self.table(table["file"], "notify.file", {"enabled", "path"})
            if self.boolean(f.get("enabled", True), "notify.file.enabled"):
                out["file"] = self.path_value(f["path"], "notify.file.path") if "path" in f else ""
        if "desktop" in table:
            d = self.table(table["desktop"], "notify.desktop", {"enabled"})
            out["desktop"] = self.boolean(d.get("enabled", True), "notify.desktop.enabled")
        if "webhook" in table:
            hooks = table["webhook"]
            items = hooks if isinstance(hooks, list) else [hooks]
            out["webhooks"] = [
                self.webhook(item, "notify.webhook" + (f"[{i}]" if isinstance(hooks, list) else ""))
                for i, item in enumerate(items)
            ]
        return NotifyConfig(**out)

    def webhook(self, value: Any, key: str) -> WebhookChannel:
        table = self.table(value, key, {"url", "format", "events", "users", "headers", "timeout"})
        if "url" not in table:
            raise self.fail(f"{key}.url", "missing (where to send)")
        url = self.string(table["url"], f"{key}.url")
        if not url.startswith(("http://", "https://")):
            raise self.fail(f"{key}.url", f"expected an http:// or https:// URL, got {url!r}")
        out: dict[str, Any] = {"url": url}
        if "format" in table:
            out["format"] = self.choice(table["format"], f"{key}.format", WEBHOOK_FORMATS)
        if "events" in table:
            events = self.string_list(table["events"], f"{key}.events")
            for i, ev in enumerate(events):
                self.choice(ev, f"{key}.events[{i}]", WEBHOOK_EVENTS)
            out["events"] = events
        if "users" in table:
            out["users"] = self.string_list(table["users"], f"{key}.users")
        if "headers" in table:
            out["headers"] = self.headers(table["headers"], f"{key}.headers")
        if "timeout" in table:
            out["timeout"] = self.duration(table["timeout"], f"{key}.timeout")
        return WebhookChannel(**out)

    def email(self, value: Any) -> EmailChannel:
        fields: dict[str, Convert] = {
            "host": self.string,
            "port": lambda v, k: self.integer(v, k, 1, 65535),
            "security": lambda v, k: self.choice(v, k, ("starttls", "tls", "none")),
            "user": self.string,
            "password_file": self.path_value,
            "password_env": self.string,
            "from": self.email_address,
            "to": self.addresses,
            "alerts": self.boolean,
        }
        table = self.table(value, "notify.email", set(fields))
        for required in ("host", "from"):
            if required not in table:
                raise self.fail(f"notify.email.{required}", "missing (e-mail needs it)")
        out = {key: fields[key](v, f"notify.email.{key}") for key, v in table.items()}
        if "password_file" in out and "password_env" in out:
            raise self.fail("notify.email.password_env", "give password_file or password_env")
        out["sender"] = out.pop("from")
        return EmailChannel(**out)

    def headers(self, value: Any, key: str) -> dict[str, str]:
        if not isinstance(value, dict):
            raise self.fail(key, f"expected a table of header names to strings, got {show(value)}")
        for name, item in value.items():
            if not re.fullmatch(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+", name):
                raise self.fail(f"{key}.{name}", "not a valid HTTP header name")
            if not isinstance(item, str) or "\r" in item or "\n" in item:
                raise self.fail(f"{key}.{name}", "expected a string on one line")
        return dict(value)

    def users(self, value: Any, limits: Limits) -> dict[str, UserConfig]:
        if not isinstance(value, dict):
            raise self.fail("users", f"expected [users.NAME] tables, got {show(value)}")
        out: dict[str, UserConfig] = {}
        for name, item in value.items():
            table = self.table(item, f"users.{name}", {"email", *SHARE_KEYS})
            email = (
                self.email_address(table["email"], f"users.{name}.email")
                if "email" in table
                else None
            )
            out[name] = UserConfig(email=email, **user_sharing(self, table, name, limits))
        return out
