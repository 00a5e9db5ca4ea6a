"""What a transition's events owe the webhooks (nvq.notify.plan), pure: each moment
told as it was, whatever else the same batch committed."""

from __future__ import annotations

import msgspec

from nvq.config import Config, WebhookChannel
from nvq.config.types import NotifyConfig
from nvq.domain.request import record_of
from nvq.model import Job, JobState, NewEvent
from nvq.notify.plan import plan
from nvq.notify.text import subject


def test_a_start_and_an_end_in_one_batch_are_each_told_as_they_were() -> None:
    # a short job: its start and its end reached the daemon in one batch, so the
    # record the batch left is the ended one
    ended = record_of(Job(
        id=7, name="good", state=JobState.COMPLETED, command="true", user="alice",
        submitter="alice", created_at=1.0, node="n0", attempt=1, exit_code=0,
        started_at=2.0, ended_at=2.5, reason="exit", stderr_tail="",
    ))
    hook = WebhookChannel(url="http://127.0.0.1:9/ntfy", format="ntfy", events=["start", "end"])
    config = Config(notify=NotifyConfig(webhooks=[hook]))
    events = [NewEvent("job_started", 7, "n0", {"attempt": 1}),
              NewEvent("job_completed", 7, "n0", {"attempt": 1})]
    items = plan([], events, {7: ended}, config, now=3.0)
    told = {item.payload["moment"]: item.payload for item in items}
    assert set(told) == {"started", "completed"}
    assert subject(told["started"]) == "[nvq] job 7 (good) running"
    assert subject(told["completed"]) == "[nvq] job 7 (good) completed"
    start = told["started"]["job"]
    assert (start["exit_code"], start["ended_at"], start["started_at"]) == (None, None, 2.0)
    assert told["completed"]["job"]["exit_code"] == 0
    # and the items are distinct, each delivered once
    assert len({item.key for item in items}) == 2
    assert msgspec.json.encode([i.payload for i in items])  # plain data, as stored
