"""Two ASGI middlewares that guard the app before a request reaches it: the access token a server
that others can reach asks for (AccessToken), and the limit on a request body's size (BodyLimit)."""

from __future__ import annotations

import secrets

from fastapi import Request
from starlette.exceptions import HTTPException

from redthread.serve.errors import error_answer


class AccessToken:
    """ASGI middleware: every request must carry the server's access token, as `?token=` in the URL (the link
    printed on start; the answer then sets a cookie, so the page's own API calls carry it), as that cookie, or
    as an `Authorization: Bearer` header (scripts). Anything else gets a 401 at once."""

    COOKIE = "redthread_token"

    def __init__(self, app, token: str):
        self.app, self.token = app, token

    def matches(self, given: str | None) -> bool:
        return given is not None and secrets.compare_digest(given.encode("utf-8", "backslashreplace"),
                                                            self.token.encode("utf-8"))

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request = Request(scope)
        auth = request.headers.get("authorization", "")
        in_url = request.query_params.get("token")
        if self.matches(in_url):
            cookie = (f"{self.COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict").encode("latin-1")

            async def with_cookie(message):
                if message["type"] == "http.response.start":
                    message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie)]}
                await send(message)

            return await self.app(scope, receive, with_cookie)
        if self.matches(request.cookies.get(self.COOKIE)) or self.matches(auth.removeprefix("Bearer ") if auth else None):
            return await self.app(scope, receive, send)
        await error_answer(401, "this server needs its access token: open the link it printed when it started "
                                "(http://…/?token=…), or send the header Authorization: Bearer <token>",
                           {"WWW-Authenticate": "Bearer"})(scope, receive, send)


class BodyLimit:
    """ASGI middleware: a request body over `limit` bytes gets a 413 before it is read into memory."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers", ())).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.limit:
            return await self.refuse(scope, receive, send)
        received = 0

        async def counted():
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:  # a body longer than it said (or chunked without a length)
                raise HTTPException(413, self.message())
            return message

        await self.app(scope, counted, send)

    def message(self) -> str:
        return f"the request body is over the limit of {self.limit / 2**20:g} MiB"

    async def refuse(self, scope, receive, send):
        await error_answer(413, self.message())(scope, receive, send)
