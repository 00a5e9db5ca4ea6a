"""Human-readable text for the CLI's results. `--json` output never passes through
here: it is the reply itself (see output.emit)."""
