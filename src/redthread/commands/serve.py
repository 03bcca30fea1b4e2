"""`redthread serve`: run the local web app (redthread/serve/app.py) with uvicorn."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from redthread.errors import RedthreadError


def serve_command(runs: str, host: str, port: int, max_chars: int, device: str, log=print,
                  workers: int | None = None, queue: int | None = None, time_limit: float | None = None) -> None:
    """Serve the app; workers, queue and time_limit bound its model work (None: the app's defaults)."""
    import uvicorn

    from redthread.serve.app import QUEUE, TIME_LIMIT, WORKERS, create_app

    if not 0 <= port <= 65535:
        raise RedthreadError(f"--port must be between 0 and 65535, got {port}")
    if max_chars < 1:
        raise RedthreadError(f"--max-chars must be positive, got {max_chars}")
    runs_dir = Path(runs)
    if runs_dir.exists() and not runs_dir.is_dir():
        raise RedthreadError(f"--runs {runs_dir} is not a folder")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        raise RedthreadError(f"--host {host!r} is not an IP address or 'localhost'") from None
    if not loopback:
        log(f"warning: listening on {host}, not only on this machine: anyone who can reach it can use the app")
    limits = {"workers": WORKERS if workers is None else workers, "queue": QUEUE if queue is None else queue,
              "time_limit": TIME_LIMIT if time_limit is None else time_limit}
    app = create_app(runs_dir, max_chars=max_chars, device=device, **limits)
    log(f"redthread serve: http://{host}:{port}/  (runs from {runs_dir.resolve()}; API docs at /docs; Ctrl-C stops)")
    uvicorn.run(app, host=host, port=port, log_level="warning")
