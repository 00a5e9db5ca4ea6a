"""`--notify-on start,end,fail,time-limit-80`: which of a job's moments its webhooks
are told of, instead of each webhook's own `events`. Pure parsing."""

from __future__ import annotations

# start: it started; end: it ended (any way); fail: it ended badly; time-limit-80: it
# has run 80 % of its --timeout (Slurm's TIME_LIMIT_80).
JOB_MOMENTS = ("start", "end", "fail", "time-limit-80")

# The event the daemon records when a running job reaches 80 % of its --timeout.
TIME_LIMIT_80 = "job_time_limit_80"


def parse_notify_on(text: str) -> list[str]:
    """`"start,fail"` → ["start", "fail"]; raises ValueError naming the bad word."""
    words = [w.strip() for w in text.split(",") if w.strip()]
    if not words:
        raise ValueError("--notify-on: give one or more of " + ", ".join(JOB_MOMENTS))
    for word in words:
        if word not in JOB_MOMENTS:
            raise ValueError(
                f"--notify-on: {word!r} is not one of " + ", ".join(JOB_MOMENTS)
            )
    return list(dict.fromkeys(words))
