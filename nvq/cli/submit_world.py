"""`job submit`'s side of a job's world: this shell's directory and environment, and
the snapshot, turned into JobSpec fields (see nvq.world.submission).

A submit forwarded over `[remote]` arrives with the directory and environment of the
machine where it was typed (`--from-cwd`, `--from-env`, added by nvq.remote), and the
id of the snapshot taken there (`--from-snapshot`), whose blobs were sent ahead.
"""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path
from typing import Any

import msgspec

from nvq.cli.flag_values import CliError
from nvq.config import ConfigError, SubmitConfig, load_config
from nvq.home import default_root, owns_home
from nvq.world.submission import SnapshotError, WorldOptions, submission_world

__all__ = ["WorldOptions", "decode_env", "encode_env", "submit_world"]


# what a member's image job relies on (README, "Sharing a lab")
MEMBER_IMAGE = ("a member's image is not carried from the queue host: the node must have "
                "{ref} or pull it (an admin stages it with `nvq image push {ref}`)")


def encode_env(env: dict[str, str]) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode(env)).decode()


def decode_env(text: str) -> dict[str, str]:
    try:
        return msgspec.json.decode(base64.urlsafe_b64decode(text), type=dict[str, str])
    except (ValueError, msgspec.DecodeError):
        raise CliError("--from-env: not an environment nvq encoded", 2) from None


def submit_world(
    options: WorldOptions, from_cwd: str | None, from_env: str | None,
    from_snapshot: str | None = None,
) -> dict[str, Any]:
    root = default_root()
    member = not owns_home(root)
    if member:
        # A member of a shared queue reads neither the owner's config nor their blob
        # store: the daemon answers with `[submit]`, and stores the snapshot.
        from nvq.client import Client

        config = Client().submit_settings()
    else:
        try:
            config = load_config(root).submit
        except ConfigError as exc:
            raise CliError(str(exc), 2) from None
    if from_cwd is not None:
        # forwarded: what was taken where the command was typed
        forwarded = options if options.no_snapshot or options.in_place else WorldOptions(
            options.no_env, True, options.in_place, options.workdir)
        fields = submission_world(
            cwd=Path(from_cwd), environ=decode_env(from_env) if from_env else {},
            config=config, options=forwarded, home=root,
        )
        if from_snapshot and not fields["in_place"]:
            fields["manifest_id"] = from_snapshot  # the daemon checks its blobs are here
        return fields
    try:
        cwd = Path.cwd()
    except OSError as exc:
        raise CliError(f"cannot read the current directory: {exc.strerror}", 2) from None
    try:
        if member:
            return _through_daemon(cwd, config, options, root)
        return submission_world(
            cwd=cwd, environ=os.environ, config=config, options=options, home=root,
            notice=lambda line: print(line, file=sys.stderr),
        )
    except SnapshotError as exc:
        raise CliError(str(exc), 2) from None


def _through_daemon(
    cwd: Path, config: SubmitConfig, options: WorldOptions, root: Path,
) -> dict[str, Any]:
    """A member's world: the same fields as the owner's, the snapshot stored by the
    daemon (nvq.world.through_daemon)."""
    from nvq.client import Client
    from nvq.world.through_daemon import send_snapshot

    fields = submission_world(
        cwd=cwd, environ=os.environ, config=config,
        options=WorldOptions(options.no_env, True, options.in_place, options.workdir),
        home=root,
    )
    wanted = not (fields["in_place"] or options.no_snapshot or options.workdir is not None)
    if wanted:
        fields["manifest_id"] = send_snapshot(Client(), cwd, root, config)
    return fields


def staged_image(ref: str) -> tuple[str, str] | None:
    """`ref` as this host's runtime saves it, in the queue's blob store (see
    nvq.world.images), or None: no runtime or no such image here (the node must then
    have or pull it), or a store this user cannot write.

    A member's image is never staged, and their submit says so in one line: their
    runtime's image would have to cross the daemon's socket, gigabytes past
    `max_snapshot` into the owner's disk, and the daemon saving it from the owner's
    runtime would let any member stage what only an admin may (`image push`)."""
    from nvq.world.blobs import BlobStore
    from nvq.world.images import stage_image
    from nvq.world.submission import blob_root

    root = default_root()
    if not owns_home(root):
        print(f"nvq: note: {MEMBER_IMAGE.format(ref=ref)}", file=sys.stderr)
        return None
    try:
        return stage_image(ref, root, BlobStore(blob_root(root)))
    except OSError:
        return None
