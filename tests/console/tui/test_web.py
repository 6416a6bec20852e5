"""`specconsole web` for real: the CLI process, its per-tab console, Chromium, Playwright.

How the page is read: textual-serve draws the terminal with xterm.js on a canvas, so the
DOM has no text. A screenshot comparison would depend on fonts, GPU/canvas fallbacks and
theme colours. Instead an init script captures the xterm `Terminal` object as it is built
(textual.js keeps it in a closure) and the test reads `terminal.buffer.active`, xterm's
public buffer API: the exact cells xterm paints from. The screenshot is still taken, but
only to check that the canvas is not blank. If a textual-serve update renames the field
the hook watches, the test fails saying so, rather than passing on a blank page.

Only loopback traffic: Chromium's resolver maps every name but localhost to nothing, and
the page's requests are checked to stay on 127.0.0.1.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.console.tui.conftest_web import (
    LocalEngine,
    free_port,
    local_engine,
    process_group,
    require_chromium,
    wait_for_port,
)

__all__ = ["local_engine"]  # the fixture, imported for pytest

TOKEN = "browser-test-token-0123456789abcdef"

# xterm's public `Terminal` sets `_addonManager` in its constructor; a setter on
# Object.prototype sees that first assignment and keeps the terminal for the test.
CAPTURE_XTERM = """
window.__xterms = [];
Object.defineProperty(Object.prototype, '_addonManager', {
  configurable: true,
  get() { return undefined; },
  set(value) {
    Object.defineProperty(this, '_addonManager',
      {value, writable: true, configurable: true, enumerable: false});
    if (this.buffer && this.buffer.active !== undefined) window.__xterms.push(this);
  },
});
"""

READ_SCREEN = """() => {
  const term = window.__xterms[0];
  if (!term) return null;
  const buf = term.buffer.active;
  const rows = [];
  for (let y = 0; y < term.rows; y++) {
    const line = buf.getLine(buf.viewportY + y);
    rows.push(line ? line.translateToString(true) : '');
  }
  return {cols: term.cols, rows: term.rows, text: rows.join('\\n')};
}"""


def _dashboard(text: str) -> bool:
    return all(part in text for part in ("decode tok/s", "key flags", "last requests"))


def _wait_screen(page: Any, what: str, test: Any, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    screen = None
    while time.monotonic() < deadline:
        screen = page.evaluate(READ_SCREEN)
        if screen and test(screen["text"]):
            return screen["text"]
        page.wait_for_timeout(200)
    pytest.fail(f"the browser never showed {what}; xterm had:\n{screen}", pytrace=False)


@pytest.fixture
def browser() -> Iterator[Any]:
    chromium = require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=chromium,
            args=[
                # Names other than localhost resolve to nothing: no traffic leaves loopback.
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
            ],
        )
        try:
            yield b
        finally:
            b.close()


def _serve(engine: LocalEngine, tmp_path: Path, *extra: str) -> tuple[int, Any]:
    port = free_port()
    argv = [sys.executable, "-m", "console.cli", "web", "local", "--port", str(port), *extra]
    return port, process_group(argv, engine.env, tmp_path / "web.log")


def _open_console(browser: Any, url: str, size: tuple[int, int] = (1400, 900)) -> tuple[Any, dict]:
    """Open `url`, wait for the dashboard in xterm's buffer; (page, screen)."""
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    off_loopback: list[str] = []
    page.on(
        "request",
        lambda r: (
            None
            if re.match(r"(https?|wss?)://(127\.0\.0\.1|localhost)[:/]", r.url)
            else off_loopback.append(r.url)
        ),
    )
    page.add_init_script(CAPTURE_XTERM)
    page.goto(url)
    deadline = time.monotonic() + 90
    screen: dict | None = None
    while time.monotonic() < deadline:
        screen = page.evaluate(READ_SCREEN)
        if screen and _dashboard(screen["text"]):
            break
        page.wait_for_timeout(250)
    else:
        if page.evaluate("window.__xterms.length") == 0:
            pytest.fail("no xterm Terminal was captured: has textual-serve's xterm changed?")
        pytest.fail(f"the browser never showed the dashboard; xterm had:\n{screen}")
    assert off_loopback == [], f"the page asked for non-loopback URLs: {off_loopback}"
    return page, screen


def test_browser_shows_the_dashboard(
    browser: Any, local_engine: LocalEngine, tmp_path: Path
) -> None:
    port, server = _serve(local_engine, tmp_path)
    with server as proc:
        wait_for_port(port, 60, proc)
        page, screen = _open_console(browser, f"http://127.0.0.1:{port}/")
        text = screen["text"]
        assert re.match(rf"\s*local\s+builtin\s+\w+.*port {local_engine.port}", text)
        _wait_screen(page, "the stopped engine", lambda t: "STOPPED" in t)
        # xterm fitted the viewport: a wide page gives a wide terminal.
        assert screen["cols"] > 100 and screen["rows"] > 30

        # The page gives the terminal keyboard focus, so the app knows it has focus (its
        # footer lists the keys) and keys typed reach it without a click: `l` opens the
        # log view, `d` comes back to the dashboard.
        footer = re.compile(r"d Dashboard\s+s Service\s+l Logs")
        _wait_screen(page, "the dashboard's keys", lambda t: footer.search(t), timeout=30)
        page.keyboard.press("l")
        _wait_screen(page, "the log view", lambda t: "Filter" in t and "decode tok/s" not in t)
        page.keyboard.press("d")
        _wait_screen(
            page,
            "the dashboard with its keys",
            lambda t: _dashboard(t) and footer.search(t),
        )

        # What was painted is not blank: the canvas has more than a couple of colours.
        shot = tmp_path / "web.png"
        page.screenshot(path=str(shot))
        assert _distinct_colors(shot) > 4
        page.close()
    assert proc.returncode is not None


def _distinct_colors(png: Path) -> int:
    """Count colours in a PNG without an image library (stdlib zlib, 8-bit RGB/RGBA)."""
    import struct
    import zlib

    data = png.read_bytes()
    pos, chunks, header = 8, [], b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, color_type = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and color_type in (2, 6), (depth, color_type)
    bpp = 3 if color_type == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * bpp
    colors: set[bytes] = set()
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        if y % 8 == 0:
            colors.update(bytes(line[x : x + 3]) for x in range(0, stride, bpp * 4))
        prev = line
    return len(colors)


def test_token_guards_a_wildcard_bind(
    browser: Any, local_engine: LocalEngine, tmp_path: Path
) -> None:
    # Bound to 0.0.0.0 (not loopback, so the token is required), reached only via 127.0.0.1.
    port, server = _serve(local_engine, tmp_path, "--bind", "0.0.0.0", "--token", TOKEN)
    with server as proc:
        wait_for_port(port, 60, proc)
        base = f"http://127.0.0.1:{port}"
        assert _status(f"{base}/") == 401
        assert _status(f"{base}/static/js/textual.js") == 401
        assert _websocket_status(port, "/ws") == 401
        assert _websocket_status(port, f"/ws?token={TOKEN}x") == 401
        assert _websocket_status(port, f"/ws?token={TOKEN}") == 101

        # Without the token the browser gets the login page and no console.
        page = browser.new_page()
        response = page.goto(f"{base}/")
        assert response is not None and response.status == 401
        assert page.locator("input[name=token]").count() == 1
        page.close()

        # With it once in the URL: a cookie, a clean address bar, and the console.
        page, screen = _open_console(browser, f"{base}/?token={TOKEN}")
        assert TOKEN not in page.url
        cookies = {c["name"]: c for c in page.context.cookies()}
        assert cookies["specconsole_web"]["httpOnly"] is True
        assert _dashboard(screen["text"])
        page.close()


def test_wildcard_bind_without_token_prints_a_generated_one(
    local_engine: LocalEngine, tmp_path: Path
) -> None:
    port, server = _serve(local_engine, tmp_path, "--bind", "0.0.0.0")
    with server as proc:
        wait_for_port(port, 60, proc)
        log = (tmp_path / "web.log").read_text()
        tokens = re.findall(r"\?token=([A-Za-z0-9_-]+)", log)
        assert len(tokens) == 1 and len(tokens[0]) >= 40, log
        assert "printed only here" in log
        assert _status(f"http://127.0.0.1:{port}/") == 401
        assert _status(f"http://127.0.0.1:{port}/?token={tokens[0]}") == 303


def _status(url: str) -> int:
    """The status of a GET, redirects not followed."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""))
        return conn.getresponse().status
    finally:
        conn.close()


def _websocket_status(port: int, path: str) -> int:
    """The status of a websocket handshake; a 101 is closed again at once."""
    import socket

    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: Upgrade\r\n"
        "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(request.encode())
        status_line = s.recv(4096).split(b"\r\n", 1)[0].decode()
    return int(status_line.split()[1])


def test_stopping_the_server_ends_its_sessions(
    browser: Any, local_engine: LocalEngine, tmp_path: Path
) -> None:
    port, server = _serve(local_engine, tmp_path)
    with server as proc:
        wait_for_port(port, 60, proc)
        page, _ = _open_console(browser, f"http://127.0.0.1:{port}/")
        sessions = _children(proc.pid)
        assert any("connect" in c for c in sessions), sessions
        proc.terminate()  # SIGTERM to the server only: it must end the tab's console itself
        proc.wait(30)
        deadline = time.monotonic() + 20
        while _children_of_group(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _children_of_group(proc.pid) == []
        page.close()


def _children(pid: int) -> list[str]:
    out = subprocess.run(
        ["ps", "-o", "args=", "--ppid", str(pid)], capture_output=True, text=True
    ).stdout
    found = out.splitlines()
    for line in subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True
    ).stdout.split():
        found += _children(int(line))
    return found


def _children_of_group(pgid: int) -> list[str]:
    out = subprocess.run(
        ["ps", "-o", "pid=,args=", "-s", str(pgid)], capture_output=True, text=True
    ).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]
