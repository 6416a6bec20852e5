"""The access gate of `specconsole web`, in process: token, cookie, login page, origin.

These use aiohttp's own test server on 127.0.0.1 with the real `ConsoleServer` app; no
request here is authorized for `/ws` with a same origin, so no console process starts.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from aiohttp.test_utils import TestClient, TestServer

from console.tui import web_server as web

TOKEN = "s3cret-token-for-the-tests-0123456789"
WS_HEADERS = {
    "Connection": "Upgrade",
    "Upgrade": "websocket",
    "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
}


async def _client(bind: str, token: str | None) -> TestClient:
    server = web.ConsoleServer(
        "false", web.WebAccess(bind=bind, token=token), port=0, title="specconsole: t"
    )
    client = TestClient(TestServer(server.make_app(), host="127.0.0.1"))
    await client.start_server()
    return client


@pytest_asyncio.fixture
async def guarded() -> AsyncIterator[TestClient]:
    """Bound off loopback (the rule is about the bind address), reached via 127.0.0.1."""
    client = await _client("0.0.0.0", TOKEN)
    try:
        yield client
    finally:
        await client.close()


@pytest_asyncio.fixture
async def loopback() -> AsyncIterator[TestClient]:
    client = await _client("127.0.0.1", None)
    try:
        yield client
    finally:
        await client.close()


@pytest.mark.parametrize(
    "path", ["/", "/ws", "/static/js/textual.js", "/static/css/xterm.css", "/download/x", "/x"]
)
async def test_every_route_is_401_without_the_token(guarded: TestClient, path: str) -> None:
    headers = WS_HEADERS if path == "/ws" else {}
    resp = await guarded.get(path, headers=headers, allow_redirects=False)
    assert resp.status == 401
    body = await resp.text()
    assert "textual" not in body.lower()  # nothing of the app leaks into the refusal
    assert "set-cookie" not in resp.headers


async def test_the_401_page_is_a_login_form(guarded: TestClient) -> None:
    resp = await guarded.get("/")
    assert resp.status == 401
    page = await resp.text()
    assert '<form method="post" action="/login">' in page
    assert 'type="password" name="token"' in page


async def test_wrong_token_is_401(guarded: TestClient) -> None:
    resp = await guarded.get("/", params={"token": TOKEN + "x"}, allow_redirects=False)
    assert resp.status == 401
    resp = await guarded.get("/", headers={"Authorization": "Bearer nope"})
    assert resp.status == 401
    guarded.session.cookie_jar.update_cookies({web.COOKIE: "0" * 64})
    resp = await guarded.get("/static/js/textual.js")
    assert resp.status == 401


async def test_query_token_once_becomes_an_httponly_cookie(guarded: TestClient) -> None:
    resp = await guarded.get("/", params={"token": TOKEN, "fontsize": "14"}, allow_redirects=False)
    assert resp.status == 303
    assert resp.headers["Location"] == "/?fontsize=14"  # the token leaves the address bar
    cookie = resp.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert TOKEN not in cookie  # the cookie holds a digest, not the token

    page = await guarded.get("/?fontsize=14")  # the client kept the cookie
    assert page.status == 200
    text = await page.text()
    assert f'data-session-websocket-url="ws://127.0.0.1:{guarded.port}/ws"' in text
    assert 'data-font-size="14"' in text
    assert "googleapis" not in text  # no request leaves for the internet
    static = await guarded.get("/static/js/textual.js")
    assert static.status == 200


async def test_login_form_sets_the_cookie(guarded: TestClient) -> None:
    wrong = await guarded.post("/login", data={"token": "guess"}, allow_redirects=False)
    assert wrong.status == 401
    assert "not right" in await wrong.text()
    resp = await guarded.post("/login", data={"token": TOKEN}, allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"] == "/"
    assert (await guarded.get("/")).status == 200


async def test_bearer_header_works_for_scripts(guarded: TestClient) -> None:
    resp = await guarded.get("/static/css/xterm.css", headers={"Authorization": f"Bearer {TOKEN}"})
    assert resp.status == 200
    assert web.COOKIE in resp.cookies  # a browser that came with the header stays in


async def test_loopback_needs_no_token(loopback: TestClient) -> None:
    resp = await loopback.get("/")
    assert resp.status == 200
    assert "set-cookie" not in resp.headers


async def test_loopback_refuses_foreign_host_header(loopback: TestClient) -> None:
    # DNS rebinding: a page on attacker.example whose name now resolves to 127.0.0.1.
    resp = await loopback.get("/", headers={"Host": "attacker.example"})
    assert resp.status == 421
    ok = await loopback.get("/", headers={"Host": f"localhost:{loopback.port}"})
    assert ok.status == 200


async def test_cross_origin_websocket_is_refused(loopback: TestClient) -> None:
    # Websockets ignore CORS: any site could otherwise drive a console on 127.0.0.1.
    resp = await loopback.get("/ws", headers={**WS_HEADERS, "Origin": "http://attacker.example"})
    assert resp.status == 403


def test_is_loopback() -> None:
    assert web.is_loopback("127.0.0.1")
    assert web.is_loopback("127.0.0.2")
    assert web.is_loopback("::1")
    assert web.is_loopback("[::1]")
    assert web.is_loopback("localhost")
    assert not web.is_loopback("0.0.0.0")
    assert not web.is_loopback("::")
    assert not web.is_loopback("192.0.2.1")
    assert not web.is_loopback("gpu-box.internal")


def test_connect_command_is_a_quoted_argv() -> None:
    command = web.connect_command("gpu1", accept_new_host_key=True)
    assert shlex.split(command) == [
        sys.executable,
        "-m",
        "console.cli",
        "connect",
        "gpu1",
        "--accept-new-host-key",
    ]
    hostile = "a b;touch /tmp/x'$(id)"
    assert shlex.split(web.connect_command(hostile))[-1] == hostile


def test_short_tokens_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 16"):
        web.check_token("short")
    assert web.check_token(TOKEN) == TOKEN
    assert len(web.new_token()) >= 40


def test_cli_refuses_a_short_token_in_one_sentence() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "console.cli", "web", "local", "--token", "abc", "--port", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and "at least 16 characters" in out.stderr


def test_parser_and_bench_group_load_without_textual() -> None:
    code = (
        "import argparse, sys\n"
        "from console.commands import bench, web\n"
        "from console.commands.base import Parser\n"
        "p = Parser(prog='x'); sub = p.add_subparsers(dest='c', parser_class=Parser)\n"
        "web.register(sub, lambda n, h: sub.add_parser(n))\n"
        "bench.register(sub, lambda n, h: sub.add_parser(n))\n"
        "assert p.parse_args(['bench', 'tui', '--json']).json\n"
        "assert p.parse_args(['bench', 'fidelity', 'local']).bench_what == 'fidelity'\n"
        "assert p.parse_args(['bench', 'verdict']).bench_what == 'verdict'\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'textual_serve')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_missing_browser_or_tmux_fails_in_ci_and_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.console.tui.conftest_web import require

    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        require(False, "chromium")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        require(False, "chromium")
    require(True, "chromium")  # present: nothing happens
