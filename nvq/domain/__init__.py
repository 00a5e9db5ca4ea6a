"""Pure decisions: no I/O, no clock (callers pass `now`), importing only the model."""
