"""The app's error answers: every one is {"error": "one line"} with its status; the mistakes a person can make
from the app's page (a text too long, empty or with characters the model has never seen) also carry the line in
Chinese, {"error_zh": ...}, which the page shows in its 中文 view.

A client's mistake is a 4xx naming it (ServeError, or the request's validation); a bug of the server
is a 500 that names no more than the exception's type, the traceback going to the server's log.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from redthread.errors import RedthreadError

log = logging.getLogger("redthread.serve")


class ServeError(Exception):
    """An answer to a bad request: its status and one line saying what is wrong."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None, message_zh: str | None = None):
        super().__init__(message)
        self.status, self.message, self.headers, self.message_zh = status, message, headers, message_zh


def one_line(message: object) -> str:
    """The message as one line of valid UTF-8, whatever it quotes (an error answer is read by a person)."""
    text = " ".join(line.strip() for line in str(message).splitlines() if line.strip())
    return text.encode("utf-8", "backslashreplace").decode("utf-8") or "error"


def error_answer(status: int, message: object, headers: dict[str, str] | None = None,
                 message_zh: str | None = None) -> JSONResponse:
    body = {"error": one_line(message)}
    if message_zh is not None:
        body["error_zh"] = one_line(message_zh)
    return JSONResponse(body, status_code=status, headers=headers)


def add_error_handlers(app: FastAPI) -> None:
    """Every error answer is {"error": "one line"}: the client's mistakes 4xx, the server's own bugs a
    500 that names no more than the exception's type (the traceback goes to the server's log)."""

    @app.exception_handler(ServeError)
    async def serve_error(request: Request, exc: ServeError):
        return error_answer(exc.status, exc.message, exc.headers, exc.message_zh)

    @app.exception_handler(RedthreadError)
    async def redthread_error(request: Request, exc: RedthreadError):
        return error_answer(422, exc)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError):
        first = (exc.errors() or [{}])[0]
        if first.get("type") == "json_invalid":
            return error_answer(422, f"the body is not valid JSON: {first.get('ctx', {}).get('error', 'cannot parse it')}")
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "request"
        return error_answer(422, f"{where}: {first.get('msg', 'invalid')}")

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException):
        return error_answer(exc.status_code, f"{exc.detail} ({request.method} {request.url.path})", exc.headers)

    @app.exception_handler(Exception)
    async def server_bug(request: Request, exc: Exception):
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return error_answer(500, f"internal error ({type(exc).__name__}): a bug in redthread serve; "
                                 "the details are in the server's log")
