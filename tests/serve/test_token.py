"""A room of fifty: `redthread serve` on an address others can reach requires an access token (401 without it, the
page's link with ?token= sets a cookie for the page's own calls); loopback keeps working without one. Every test
connects on loopback only: through the app object (TestClient), or to a server bound to 0.0.0.0 via 127.0.0.1."""

import threading
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from redthread.commands.serve import serve_command
from redthread.errors import RedthreadError
from redthread.serve.app import create_app
from tests.tiny import save_tiny_run

TEXT = "to be or not to be"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    save_tiny_run(root / "tiny", TEXT + "\n")
    return root


def started(runs, host, token=None):
    """serve_command's app and what it said on start, with uvicorn.run replaced by a catch."""
    lines, served = [], {}
    serve_command(str(runs), host, 8123, 100, "cpu", log=lines.append, token=token,
                  run=lambda app, host, port, log_level: served.update(app=app, host=host))
    assert served["host"] == host
    return served["app"], lines


def test_a_non_loopback_bind_generates_a_token_and_says_so(runs):
    app, lines = started(runs, "0.0.0.0")
    link = lines[0].split()[2]
    assert "?token=" in link and link.startswith("http://") and ":8123/" in link
    token = link.split("?token=")[1]
    assert len(token) >= 20  # secrets.token_urlsafe(16)
    assert len(lines) == 2 and lines[1].startswith("access token required") and "401" in lines[1]
    with TestClient(app) as client:
        for path in ("/", "/api/models", "/docs", "/openapi.json"):
            r = client.get(path)
            assert r.status_code == 401 and "access token" in r.json()["error"] and "\n" not in r.json()["error"]
        r = client.post("/api/next", json={"model": "tiny", "text": TEXT})
        assert r.status_code == 401
        assert client.get(f"/?token={token}x").status_code == 401  # a wrong token
        assert client.get("/api/models", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        page = client.get(f"/?token={token}")  # the link: the page, and a cookie for its own API calls
        assert page.status_code == 200 and "redthread" in page.text
        assert "HttpOnly" in page.headers["set-cookie"] and "SameSite=Strict" in page.headers["set-cookie"]
        assert client.get("/api/models").status_code == 200  # the cookie carries it now
        assert client.post("/api/next", json={"model": "tiny", "text": TEXT}).status_code == 200


def test_a_given_token_is_the_one_required(runs):
    app, lines = started(runs, "192.168.1.20", token="classroom-42")
    assert "http://192.168.1.20:8123/?token=classroom-42" in lines[0]
    client = TestClient(app)
    assert client.get("/api/models").status_code == 401
    assert client.get("/api/models?token=classroom-42").status_code == 200


def test_loopback_needs_no_token(runs):
    app, lines = started(runs, "127.0.0.1")
    assert "token" not in " ".join(lines) and len(lines) == 1
    client = TestClient(app)
    assert client.get("/").status_code == 200 and client.get("/api/models").status_code == 200


@pytest.mark.parametrize("token, message", [("short", "at least 8 characters"),
                                            ("has a space", "printable ASCII without spaces")])
def test_bad_tokens_get_one_line_errors(runs, token, message):
    with pytest.raises(RedthreadError, match=message):
        started(runs, "0.0.0.0", token=token)


def test_a_server_bound_to_every_interface_refuses_a_request_without_the_token(runs):
    """The real thing: uvicorn on 0.0.0.0 (port 0: a free one), asked on 127.0.0.1 only."""
    import uvicorn

    config = uvicorn.Config(create_app(runs, token="s3cret-token"), host="0.0.0.0", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        base = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
        assert httpx.get(f"{base}/api/models", timeout=10).status_code == 401
        with httpx.Client(base_url=base, timeout=10) as client:
            assert client.get("/?token=s3cret-token").status_code == 200
            assert client.get("/api/models").status_code == 200  # the cookie the link set
    finally:
        server.should_exit = True
        thread.join(timeout=10)
