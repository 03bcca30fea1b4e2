"""`redthread serve`: run the local web app (redthread/serve/app.py) with uvicorn.

On 127.0.0.1 (the default) only this machine can reach the app, and it asks for nothing. On any
other address (`--host 0.0.0.0` for a classroom's network) everyone who can reach the port could
use it, so it requires an access token: the one given with `--token`, else a new random one
(secrets.token_urlsafe), printed on start inside the link to share (`http://<address>:<port>/?token=...`).
"""

from __future__ import annotations

import ipaddress
import secrets
import socket
from pathlib import Path

from redthread.errors import RedthreadError


def serve_command(runs: str, host: str, port: int, max_chars: int, device: str, log=print,
                  workers: int | None = None, queue: int | None = None, time_limit: float | None = None,
                  token: str | None = None, run=None) -> None:
    """Serve the app; workers, queue and time_limit bound its model work (None: the app's defaults).
    token: the access token to require (None: none on loopback, a generated one on any other address).
    run: what serves the app (default uvicorn.run; tests pass their own)."""
    import uvicorn

    from redthread.serve.app import create_app
    from redthread.serve.pool import QUEUE, TIME_LIMIT, WORKERS

    if not 0 <= port <= 65535:
        raise RedthreadError(f"--port must be between 0 and 65535, got {port}")
    if max_chars < 1:
        raise RedthreadError(f"--max-chars must be positive, got {max_chars}")
    runs_dir = Path(runs)
    if runs_dir.exists() and not runs_dir.is_dir():
        raise RedthreadError(f"--runs {runs_dir} is not a folder")
    loopback = is_loopback(host)
    if token is not None and len(token) < 8:
        raise RedthreadError(f"--token must be at least 8 characters (anyone on the network may guess a short one), "
                             f"got {len(token)}")
    if not loopback and token is None:
        token = secrets.token_urlsafe(16)
    limits = {"workers": WORKERS if workers is None else workers, "queue": QUEUE if queue is None else queue,
              "time_limit": TIME_LIMIT if time_limit is None else time_limit}
    app = create_app(runs_dir, max_chars=max_chars, device=device, token=token, **limits)  # checks the token's characters
    link = f"http://{shown_address(host)}:{port}/" + ("" if token is None else f"?token={token}")
    log(f"redthread serve: {link}  (runs from {runs_dir.resolve()}; API docs at /docs; Ctrl-C stops)")
    if token is not None:
        where = "on this machine only" if loopback else f"on {host}: others on the network can reach it"
        log(f"access token required ({where}): share the link above; a request without the token gets 401")
    (run or uvicorn.run)(app, host=host, port=port, log_level="warning")


def is_loopback(host: str) -> bool:
    """Whether an address is this machine only ('localhost', 127.0.0.0/8, ::1)."""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        raise RedthreadError(f"--host {host!r} is not an IP address or 'localhost'") from None


def shown_address(host: str) -> str:
    """The address to put in the link: for 0.0.0.0 or :: (every interface), this machine's address on its
    network, as the system would route to it (a UDP socket's connect sends nothing); else the host itself."""
    if host not in ("0.0.0.0", "::"):
        return f"[{host}]" if ":" in host else host
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))  # any address off this machine; no packet is sent
            return s.getsockname()[0]
    except OSError:  # no network at all: the name others may know it by
        return socket.gethostname()
