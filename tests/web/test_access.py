"""Who gets in: only the token's holder, and only its own forms change anything."""

from __future__ import annotations

import stat
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from nvq.web import access
from tests.cluster import Nvq
from tests.web.conftest import Web


def _status(url: str, *, data: bytes | None = None, headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(url, data=data, headers=headers or {})
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=20) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return exc.code


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def test_the_token_file_is_private_and_kept(tmp_path: Path) -> None:
    token = access.load_or_create_token(tmp_path)
    path = access.token_path(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert access.load_or_create_token(tmp_path) == token
    assert access.new_token(tmp_path) != token


def test_the_url_carries_the_token_from_the_file(nvq: Nvq, web: Web) -> None:
    token = access.token_path(nvq.home).read_text().strip()
    assert web.url == f"{web.base}/?token={token}"


@pytest.mark.parametrize("path", ["/", "/nodes", "/jobs/1", "/live", "/live.js"])
def test_a_request_without_the_token_is_refused(web: Web, path: str) -> None:
    assert _status(web.base + path) == 401
    assert _status(web.base + path + "?token=not-it") == 403


def test_a_browser_without_the_token_sees_no_jobs(nvq: Nvq, web: Web, browser: Any) -> None:
    nvq.submit("--name", "secret-run", "--gpus", "0", "--", "true")
    context = browser.new_context()
    try:
        page = context.new_page()
        reply = page.goto(web.base + "/")
        assert reply is not None and reply.status == 401
        assert "secret-run" not in page.content()
    finally:
        context.close()


def test_changes_need_the_cookie_and_the_pages_own_form(nvq: Nvq, web: Web) -> None:
    job = nvq.submit("--", "sleep", "300")
    token = web.url.split("token=", 1)[1]
    cookie = {"Cookie": f"{access.COOKIE}={token}"}
    form = f"csrf={access.csrf_value(token)}".encode()
    pause = f"{web.base}/jobs/{job['id']}/pause"
    assert _status(pause, data=form) == 401  # no cookie
    assert _status(pause, data=b"csrf=guess", headers=cookie) == 403
    elsewhere = {**cookie, "Origin": "http://evil.example"}
    assert _status(pause, data=form, headers=elsewhere) == 403
    assert nvq.show(job["id"])["state"] != "paused"
    assert _status(pause, data=form, headers=cookie) == 303
    assert nvq.show(job["id"])["state"] == "paused"


def test_a_job_that_does_not_exist_is_not_found(web: Web) -> None:
    token = web.url.split("token=", 1)[1]
    assert _status(f"{web.base}/jobs/9999", headers={"Cookie": f"{access.COOKIE}={token}"}) == 404
