"""A bounded pool for the app's model work: `workers` requests at once, `queue` more waiting; past
that a request gets a 503 with Retry-After at once, and one that takes longer than `time_limit`
seconds gets a 504 (its work finishes in the background, holding its place, so the pool stays bounded).
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from redthread.errors import InvalidValue
from redthread.serve.errors import ServeError

WORKERS, QUEUE, TIME_LIMIT = 2, 16, 60.0  # the pool's defaults: requests at once, waiting, seconds each
RETRY_AFTER = 2  # seconds a client told "busy" should wait


class ModelPool:
    """Runs model work in `workers` threads with at most `queue` more requests waiting; a full pool
    answers 503 at once, and a request waits at most `time_limit` seconds for its answer (504).

    A thread cannot be stopped: work past its time limit finishes in the background and keeps its
    place until then, so the pool's bound holds (new requests get 503 rather than piling up).
    """

    def __init__(self, workers: int, queue: int, time_limit: float):
        if workers < 1 or queue < 0 or not time_limit > 0:
            raise InvalidValue(f"the model pool needs workers >= 1, queue >= 0 and a time limit > 0, "
                                 f"got {workers}, {queue}, {time_limit}")
        self.workers, self.queue, self.time_limit = workers, queue, time_limit
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="redthread-serve")
        self.places = threading.BoundedSemaphore(workers + queue)

    async def run(self, work):
        """The result of work(), run in the pool."""
        if not self.places.acquire(blocking=False):
            raise ServeError(503, f"the server is busy ({self.workers} requests running, {self.queue} waiting): "
                                  f"try again in {RETRY_AFTER} s", headers={"Retry-After": str(RETRY_AFTER)})
        try:
            future = self.executor.submit(_no_stop_iteration, work)
        except BaseException:
            self.places.release()
            raise
        future.add_done_callback(lambda _: self.places.release())
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), self.time_limit)
        except asyncio.TimeoutError:  # the wrapped future was cancelled: work that had not started never will
            raise ServeError(504, f"the request took longer than the limit of {self.time_limit:g} s: "
                                  "try a shorter text (the server goes on with other requests)") from None


def _no_stop_iteration(work):
    """work(), with a StopIteration it lets out turned into a RuntimeError: a future cannot carry a
    StopIteration to asyncio (TypeError "StopIteration interacts badly with generators"), and the request
    would wait out its whole time limit instead of getting an answer."""
    try:
        return work()
    except StopIteration as e:
        raise RuntimeError(f"StopIteration escaped the model's work: {e!r}") from e
