"""Delivering alerts and job outcomes: `plan` decides what is owed (pure, committed
with the transition), `channels` delivers one item, `notifier` is the daemon's task
that drains the outbox."""
