"""The plain wire: the same socket and frames, the request sent as JSON (its first
byte is `{`, which no msgpack request starts with) and every reply frame answered
as JSON, with secret-looking environment values already hidden.

It exists for the CLI's commonest reads (nvq.cli.fast), which then need nothing but
the standard library: importing msgspec and the typed replies costs a CLI call more
than the interpreter's own start. `want="json"` asks for the answer as `--json`
prints it (so the bytes are the ones the typed path prints); `want="data"` for the
plain data, to render as text."""

from __future__ import annotations

from typing import Literal

import msgspec

from nvq.control.requests import Request


class PlainRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    request: Request
    want: Literal["data", "json"] = "data"


plain_request_decoder = msgspec.json.Decoder(PlainRequest)
plain_encoder = msgspec.json.Encoder()
