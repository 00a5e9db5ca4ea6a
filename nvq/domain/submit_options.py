"""The options of `nvq job submit`, each declared once. Pure data.

Each row is one option: its flags, the `SubmitArgs` field (and typer parameter) it
fills, what kind of value it takes, its default and help, the JobSpec field it sets
and how its text is read (a reader named in nvq.cli.flag_values.READERS), and
whether `job edit` may change it later. Everything else is made from this table:

* typer's `job submit` (and `job shell`) signature, nvq.cli.commands.submit;
* the fast path's argv table, nvq.cli.fast_submit;
* `SubmitArgs` and the JobSpec it becomes, nvq.cli.submit_flow;
* `job edit`'s flags (nvq.cli.commands.edit) and what the queue lets an edit change
  (nvq.domain.job_edit);
* the flag a refusal names (nvq.domain.validate); manifest.toml's keys are the
  JobSpec fields (nvq.manifest), read by their type unless the manifest says more.

So an option that sets a plain JobSpec field is a row here and a field in
`JobSpec` and `Job` (nvq.model) and its column (nvq.store.schema).
"""

from __future__ import annotations

import msgspec


class SubmitOption(msgspec.Struct, frozen=True, kw_only=True):
    # `job submit`'s flags as typer takes them: ("--name", "-n"), or one
    # "--on/--off" for a switch that may be left unset.
    flags: tuple[str, ...]
    # Its SubmitArgs field and typer parameter: the first flag as a name, unless given.
    param: str
    # "text", "int", "list" (repeatable), "flag" (given: True), "switch" (the
    # "--on/--off" pair; None when neither is given) or "path"
    kind: str
    default: object = None
    help: str = ""
    # The JobSpec field it sets from its value; "" when it says how to submit (wait,
    # snapshot, ...) rather than what the job asks for.
    field: str = ""
    # How its text becomes the field's value: a name in nvq.cli.flag_values.READERS;
    # "" takes the value as typed.
    read: str = ""
    # `job edit`'s help for it; "" when an edit may not change it.
    edit: str = ""
    # `job edit`'s flags, where they differ from submit's (a flag that edit can unset).
    edit_flags: tuple[str, ...] = ()
    # An edit may change it while the job runs (it changes nothing about where or
    # what runs).
    while_running: bool = False
    # Taken by the typer-free fast path (nvq.cli.fast_submit); the others go to typer.
    fast: bool = True
    hidden: bool = False

    @property
    def flag(self) -> str:
        """The flag a message names (the long one; for a switch, the `on` one)."""
        return self.flags[0].split("/")[0]


def _o(*flags: str, kind: str = "text", **rest: object) -> SubmitOption:
    param = flags[0].split("/")[0].removeprefix("--").replace("-", "_")
    return msgspec.convert({"flags": flags, "kind": kind, "param": param, **rest}, SubmitOption)


# In `nvq job submit --help`'s order.
SUBMIT_OPTIONS: tuple[SubmitOption, ...] = (
    _o("--name", "-n", default="", help="A short label.", field="name",
       edit="A short label.", while_running=True),
    _o("--vram", help="VRAM to reserve on each GPU, e.g. 20GiB; auto: what it reached before.",
       field="vram_mb", read="vram",
       edit="VRAM to reserve on each GPU."),
    _o("--gpus", kind="int", default=1, help="GPUs needed; 0 for a CPU-only job.", field="gpus",
       edit="GPUs needed; 0 for a CPU-only job."),
    _o("--node", help="Pin to a node (prefix match).", field="node",
       edit="Pin to a node (prefix match)."),
    _o("--note", default="", help="What the job is for.", field="note",
       edit="What the job is for.", while_running=True),
    _o("--priority", kind="int", default=0, help="Higher runs first.", field="priority",
       edit="Higher runs first.", while_running=True),
    _o("--timeout", help="Kill it after this long (90, 5m, 2h).", field="timeout",
       read="duration", edit="Kill it after this long."),
    _o("--env", kind="list", default=[], help="KEY=VALUE, repeatable.", field="env", read="env",
       edit="KEY=VALUE (replaces its environment), repeatable."),
    _o("--workdir", help="Directory to run in (on the node).", field="workdir"),
    _o("--tag", kind="list", default=[], help="A tag, repeatable.", field="tags",
       edit="Its tags (replaces them), repeatable.", while_running=True),
    _o("--after", help="Run after these jobs completed: 12,13.", field="after", read="ids"),
    _o("--after-any", help="Run after these jobs ended, however.", field="after_any",
       read="ids"),
    _o("--script", kind="path", help="Use this local file as the command.", fast=False),
    _o("--wait", kind="flag", default=False, help="Block until the job ends."),
    _o("--dry-run", kind="flag", default=False,
       help="Check it, say where it would start now; store nothing.", fast=False),
    _o("--retries", kind="int", default=0, help="Restart it up to N times if it vanishes.",
       field="retries"),
    _o("--notify-on", field="notify_on", read="notify_on",
       help="What its webhooks hear of: start,end,fail,time-limit-80 (default: theirs).",
       edit="What its webhooks hear of: start,end,fail,time-limit-80.", while_running=True),
    _o("--retries-on", default="lost", field="retries_on", read="retries_on",
       help="What --retries restarts: lost (it vanished), oom (host or GPU memory), or both."),
    _o("--cuda", help="Minimum driver CUDA version, e.g. 13.0.", field="cuda",
       edit="Minimum driver CUDA version."),
    _o("--image", help="Run it in this container image (the node's podman/docker).",
       field="image", edit="Run it in this container image.", fast=False),
    _o("--memory", help="Host RAM it needs (and its limit): 32GiB.", field="memory_mb",
       read="size", edit="Host RAM it needs (and its limit)."),
    _o("--lane", help="Append to a GPU's lane: NODE:GPU.", field="lane",
       edit="Move it to the tail of a lane: NODE:GPU."),
    _o("--array", help="One job per index: 0-99[:step][%K]; {} = index.", field="array"),
    _o("--manifest", kind="path", help="Read the job from a manifest.toml.", fast=False),
    _o("--max-runtime", help="On a borrowed node, back to the queue after this long.",
       field="max_runtime", read="duration"),
    _o("--begin", help="Start no earlier than this: 2026-12-02T22:00, or after 2h.",
       field="begin_at", read="begin"),
    _o("--signal", help="Send SIG this long before --timeout ends it: USR1@5m.",
       field="signal", read="signal", edit="Send SIG this long before --timeout ends it: USR1@5m."),
    _o("--no-reassign", kind="flag", default=False, field="no_reassign",
       help="Not safe to run twice: lost (not rerun) if its node dies."),
    _o("--preemptible", kind="flag", default=False, field="preemptible",
       help="A more urgent job may stop it; it waits again to resume.",
       edit="Whether a more urgent job may stop it.",
       edit_flags=("--preemptible/--not-preemptible",)),
    _o("--reservation", help="Run on this reservation's cards, in its window.",
       field="reservation", edit="Run in this reservation ('' for none)."),
    _o("--quiet", kind="flag", default=False, field="quiet",
       help="Only cards with nothing else on them, held whole while it runs."),
    _o("--kill-on-invalid-dep", kind="flag", default=False, field="kill_on_invalid_dep",
       help="Cancel it, rather than hold it, if an --after job ends badly."),
    _o("--email-on-success/--no-email-on-success", kind="switch", field="email_on_success",
       help="E-mail me when it completes."),
    _o("--email-on-failure/--no-email-on-failure", kind="switch", field="email_on_failure",
       help="E-mail me when it ends badly."),
    _o("--no-env", kind="flag", default=False,
       help="Take only --env values, not this shell's environment."),
    _o("--no-snapshot", kind="flag", default=False,
       help="Do not take a copy of this directory with the job."),
    _o("--in-place/--snapshot", kind="switch",
       help="Run in this directory itself (live files; only where it exists)."),
    _o("--setup", help="Build the job's environment once per node ($NVQ_ENV_DIR).",
       field="setup"),
    _o("--setup-files", kind="list", default=[], field="setup_files",
       help="Files whose content keys --setup (pattern, repeatable)."),
    # What a submit forwarded from another machine says of the world it came from.
    _o("--from-cwd", hidden=True, fast=False),
    _o("--from-env", hidden=True, fast=False),
    _o("--from-snapshot", hidden=True, fast=False),
    _o("--json", kind="flag", default=False, help="Print one JSON document.", param="as_json"),
)

# The JobSpec fields `job edit` may change, and those it may change while the job runs:
# a running job keeps its node, cards, process and the deadline its runner enforces;
# what its webhooks hear of may change while it runs (that is when it matters).
EDITABLE_FIELDS = frozenset({"command", *(o.field for o in SUBMIT_OPTIONS if o.edit)})
WHILE_RUNNING = frozenset(o.field for o in SUBMIT_OPTIONS if o.while_running)
# JobSpec field → the option that sets it.
BY_FIELD: dict[str, SubmitOption] = {o.field: o for o in SUBMIT_OPTIONS if o.field}
