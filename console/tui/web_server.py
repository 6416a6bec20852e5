"""Browser mode: the same Textual console, served over HTTP by textual-serve.

Why it is built this way:

* Each browser session runs `specconsole connect HOST` as its own process (textual-serve's
  model), so the browser gets exactly the terminal app, with no second UI to keep in step.
  textual-serve starts that command through a shell, so the argv is joined with
  `shlex.join`, never formatted by hand.
* Whoever reaches the page can restart a GPU service. Off loopback, every route (the page,
  the static files, downloads and the websocket) answers 401 unless the request carries
  the access token: as `?token=` once (then kept as an HttpOnly cookie), typed on the small
  login page, or as an `Authorization: Bearer` header for scripts.
* On loopback no token is needed, but two browser attacks still reach 127.0.0.1: another
  site opening a websocket to it (websockets ignore CORS) and DNS rebinding (an attacker's
  name resolving to 127.0.0.1). So the websocket must come from this server's own origin,
  and on a loopback bind the Host header must name a loopback address.
* The page is our own small template instead of textual-serve's: it loads no web fonts
  from the internet (consoles often run on air-gapped networks) and builds the websocket
  URL from the address the browser used, so a `0.0.0.0` bind works from any interface.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import html
import ipaddress
import secrets
import shlex
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from aiohttp import web
from textual_serve.server import Server

COOKIE = "specconsole_web"
TOKEN_QUERY = "token"
MIN_TOKEN_LENGTH = 16
DEFAULT_PORT = 8000
DEFAULT_BIND = "127.0.0.1"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def is_loopback(bind: str) -> bool:
    """True when `bind` only listens on this machine (127.0.0.0/8, ::1, `localhost`)."""
    if bind.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(bind.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost: treat as reachable from outside


def connect_command(host: str, *, accept_new_host_key: bool = False) -> str:
    """The shell command each browser session runs: this interpreter's `connect HOST`."""
    argv = [sys.executable, "-m", "console.cli", "connect", host]
    if accept_new_host_key:
        argv.append("--accept-new-host-key")
    return shlex.join(argv)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def check_token(token: str) -> str:
    """A user-chosen token must not be guessable in a few tries."""
    if len(token) < MIN_TOKEN_LENGTH or token != token.strip():
        raise ValueError(
            f"The access token must be at least {MIN_TOKEN_LENGTH} characters without "
            "surrounding spaces; omit --token to have one generated."
        )
    return token


@dataclass(frozen=True)
class WebAccess:
    """Who may use the page: `token` None means anyone who can reach the bind address."""

    bind: str
    token: str | None

    @property
    def cookie_value(self) -> str:
        # The cookie carries a digest, so a leaked cookie jar does not reveal the token.
        assert self.token is not None
        return hmac.new(self.token.encode(), b"specconsole-web-session", hashlib.sha256).hexdigest()

    def token_ok(self, given: str | None) -> bool:
        if self.token is None:
            return True
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def authorized(self, request: web.Request) -> bool:
        if self.token is None:
            return True
        cookie = request.cookies.get(COOKIE)
        if cookie is not None and hmac.compare_digest(cookie, self.cookie_value):
            return True
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer ") and self.token_ok(auth[len("Bearer ") :]):
            return True
        return self.token_ok(request.query.get(TOKEN_QUERY))

    def set_cookie(self, response: web.StreamResponse) -> None:
        response.set_cookie(COOKIE, self.cookie_value, httponly=True, samesite="Strict", path="/")


def _host_is_loopback(request: web.Request) -> bool:
    name = request.url.host or ""
    return is_loopback(name)


def _same_origin(request: web.Request) -> bool:
    origin = request.headers.get("Origin")
    if origin is None:
        return True  # not a browser: cross-site websocket hijacking needs one
    return origin in (f"http://{request.host}", f"https://{request.host}")


def access_middleware(access: WebAccess) -> Callable[[web.Request, Handler], Awaitable]:
    """The one gate in front of every route textual-serve has, and the login route."""

    @web.middleware
    async def gate(request: web.Request, handler: Handler) -> web.StreamResponse:
        if is_loopback(access.bind) and not _host_is_loopback(request):
            return web.Response(status=421, text="This console only answers to localhost.\n")
        if request.path == "/login":
            return await _login(request, access)
        if not access.authorized(request):
            if request.path == "/" and request.method == "GET":
                return _login_page(status=401)
            return web.Response(status=401, text="401: an access token is required.\n")
        if request.path == "/ws" and not _same_origin(request):
            return web.Response(status=403, text="403: cross-origin websocket refused.\n")
        if access.token is not None and TOKEN_QUERY in request.query and request.path != "/ws":
            # The token came in the URL once: move it into a cookie and out of the address bar.
            query = {k: v for k, v in request.query.items() if k != TOKEN_QUERY}
            location = request.path + (f"?{urlencode(query)}" if query else "")
            response = _see_other(location)
            access.set_cookie(response)
            return response
        response = await handler(request)
        if access.token is not None and COOKIE not in request.cookies and not response.prepared:
            access.set_cookie(response)  # came with a Bearer header (a websocket is prepared)
        return response

    return gate


async def _login(request: web.Request, access: WebAccess) -> web.StreamResponse:
    if access.token is None:
        return _see_other("/")
    if request.method != "POST":
        return _login_page(status=401)
    form = await request.post()
    given = form.get(TOKEN_QUERY)
    if not isinstance(given, str) or not access.token_ok(given):
        return _login_page(status=401, wrong=True)
    response = _see_other("/")
    access.set_cookie(response)
    return response


def _see_other(location: str) -> web.Response:
    return web.Response(status=303, headers={"Location": location, "Cache-Control": "no-store"})


_LOGIN_HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>specconsole: access token</title>
<style>
body {{ background: #0c181f; color: #e8eef2; font: 16px monospace; display: flex;
       align-items: center; justify-content: center; height: 100vh; margin: 0; }}
form {{ background: #12232d; padding: 32px; }}
input {{ font: inherit; padding: 6px; width: 28em; }}
p.wrong {{ color: #ff8a80; }}
</style></head>
<body><form method="post" action="/login">
<p>This console can restart services. Enter the access token printed when
<code>specconsole web</code> started.</p>{wrong}
<p><input type="password" name="token" autofocus autocomplete="off"></p>
<p><button type="submit">Open the console</button></p>
</form></body></html>
"""


def _login_page(*, status: int, wrong: bool = False) -> web.Response:
    note = '\n<p class="wrong">That token is not right.</p>' if wrong else ""
    return web.Response(
        status=status,
        content_type="text/html",
        text=_LOGIN_HTML.format(wrong=note),
        headers={"Cache-Control": "no-store"},
    )


_INDEX_HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<link rel="stylesheet" href="/static/css/xterm.css">
<script src="/static/js/textual.js"></script>
<style>
body {{ background: #0c181f; margin: 0; }}
.notice {{ position: absolute; inset: 0; display: flex; align-items: center;
          justify-content: center; color: #e8eef2; font: 16px monospace; }}
body.-first-byte .starting {{ display: none; }}
.ended {{ display: none; }}
body.-closed .ended {{ display: flex; background: #0c181f; z-index: 10; }}
body .textual-terminal {{ opacity: 0; }}
body.-first-byte .textual-terminal {{ opacity: 1; }}
</style></head>
<body>
<div class="notice starting">Starting {title}...</div>
<div class="notice ended">Session ended. Reload the page to start a new one.</div>
<div id="terminal" class="textual-terminal" data-session-websocket-url="{ws_url}"
     data-font-size="{font_size}"></div>
<script>
// Give the terminal keyboard focus once the app runs, as a terminal window has: keys
// then work without a click, and the app knows it has focus (Textual's footer lists keys
// only then). Textual's web driver marks the app blurred just after its first output, so
// a focus sent at once can arrive before that and be undone; half a second later it sticks.
new MutationObserver((changes, observer) => {{
  if (!document.body.classList.contains("-first-byte")) return;
  observer.disconnect();
  setTimeout(() => {{
    const input = document.querySelector(".xterm-helper-textarea");
    if (input) input.focus();
  }}, 500);
}}).observe(document.body, {{attributes: true, attributeFilter: ["class"]}});
</script>
</body></html>
"""


class ConsoleServer(Server):
    """textual-serve's server with our page, our access gate, and no banner or rich logging.

    Only textual-serve's public handlers (`handle_websocket`, `handle_download`) and its
    static files are reused.
    """

    def __init__(self, command: str, access: WebAccess, *, port: int, title: str) -> None:
        super().__init__(command, host=access.bind, port=port, title=title)
        self.access = access
        self._sessions: set[asyncio.Task] = set()  # one per open tab (its websocket handler)

    def make_app(self) -> web.Application:
        app = web.Application(middlewares=[access_middleware(self.access)])
        app.add_routes(
            [
                web.get("/", self.handle_console_page, name="index"),
                web.get("/ws", self.handle_websocket, name="websocket"),
                web.get("/download/{key}", self.handle_download, name="download"),
                web.route("*", "/login", self.handle_login, name="login"),
                web.static("/static", Path(self.statics_path), name="static"),
            ]
        )
        app.on_shutdown.append(self.end_sessions)
        return app

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        task = asyncio.current_task()
        if task is not None:
            self._sessions.add(task)
        try:
            return await super().handle_websocket(request)
        finally:
            self._sessions.discard(task)  # type: ignore[arg-type]

    async def end_sessions(self, _app: web.Application) -> None:
        # A tab's handler runs while the browser keeps its websocket open, and on shutdown
        # aiohttp waits for it: Ctrl-C took 24 s with one tab open. Cancelled, the handler
        # closes the websocket and tells its console to quit (textual-serve waits for it).
        for task in list(self._sessions):
            task.cancel()

    async def handle_login(self, request: web.Request) -> web.StreamResponse:
        return await _login(request, self.access)  # reached only through the gate

    async def handle_console_page(self, request: web.Request) -> web.Response:
        try:
            font_size = max(6, min(48, int(request.query.get("fontsize", "16"))))
        except ValueError:
            font_size = 16
        scheme = "wss" if request.secure else "ws"
        return web.Response(
            content_type="text/html",
            text=_INDEX_HTML.format(
                title=html.escape(self.title),
                ws_url=html.escape(f"{scheme}://{request.host}/ws"),
                font_size=font_size,
            ),
            headers={"Cache-Control": "no-store"},
        )


def display_urls(access: WebAccess, port: int) -> list[str]:
    """The addresses to print; a wildcard bind is shown as this machine's name."""
    if access.bind in ("0.0.0.0", "::", ""):
        hosts = [socket.gethostname()]
    else:
        hosts = [f"[{access.bind}]" if ":" in access.bind else access.bind]
    suffix = f"/?{urlencode({TOKEN_QUERY: access.token})}" if access.token else "/"
    return [f"http://{h}:{port}{suffix}" for h in hosts]


async def serve(
    host: str,
    *,
    port: int = DEFAULT_PORT,
    bind: str = DEFAULT_BIND,
    token: str | None = None,
    accept_new_host_key: bool = False,
    out: Callable[[str], None] = print,
) -> None:
    """Serve `specconsole connect HOST` until SIGINT/SIGTERM; sessions end with the server."""
    generated = False
    if token is not None:
        check_token(token)
    elif not is_loopback(bind):
        token, generated = new_token(), True
    access = WebAccess(bind=bind, token=token)
    server = ConsoleServer(
        connect_command(host, accept_new_host_key=accept_new_host_key),
        access,
        port=port,
        title=f"specconsole: {host}",
    )
    runner = web.AppRunner(server.make_app(), access_log=None, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, bind, port)
        try:
            await site.start()
        except OSError as exc:
            raise OSError(f"Cannot listen on {bind}:{port} ({exc.strerror or exc}).") from None
        out(f"specconsole web: serving the console for {host!r} on {bind}:{port}")
        for url in display_urls(access, port):
            out(f"  open {url}")
        if generated:
            out("  (this access token was generated now and is printed only here)")
        if not is_loopback(bind):
            out(
                "  plain HTTP: anyone on the path can read the token; prefer an SSH tunnel "
                "to a loopback bind, or a TLS proxy in front"
            )
        sys.stdout.flush()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(sig)
    finally:
        # Closing the runner closes each websocket; textual-serve then tells each session's
        # app to quit and waits for it.
        await runner.cleanup()
