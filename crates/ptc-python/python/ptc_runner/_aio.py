"""asyncio glue for the native module: awaiting tools and models from pool threads.

The engine runs programs on its own threads. An ``async def`` tool (or model) called
there is scheduled on an event loop with ``run_coroutine_threadsafe``: the caller's loop
when the run was started by an async ``run``, otherwise one background loop that the
package starts on first use. Async runs settle their future on the caller's loop with
``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Awaitable

_background: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    global _background
    with _lock:
        if _background is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="ptc-runner-async", daemon=True)
            thread.start()
            _background = loop
        return _background


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def submit(awaitable: Awaitable[Any], loop: asyncio.AbstractEventLoop) -> concurrent.futures.Future[Any]:
    """Schedules ``awaitable`` on ``loop`` (from another thread)."""
    return asyncio.run_coroutine_threadsafe(_await(awaitable), loop)


def submit_own_loop(awaitable: Awaitable[Any]) -> concurrent.futures.Future[Any]:
    """Schedules ``awaitable`` on the package's background loop."""
    return submit(awaitable, _background_loop())


def wait(future: concurrent.futures.Future[Any], timeout: float) -> tuple[str, Any]:
    """``("ok", value)``, ``("timeout", None)`` or ``("cancelled", None)``; raises what
    the coroutine raised."""
    try:
        return ("ok", future.result(timeout=max(timeout, 0.0)))
    except concurrent.futures.CancelledError:
        return ("cancelled", None)
    except concurrent.futures.TimeoutError:
        if future.cancel() or future.cancelled():
            return ("timeout", None)
        if future.done():
            return ("ok", future.result())
        return ("timeout", None)


def settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    """Sets an async run's result (called on its loop)."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


def cancel_with(future: asyncio.Future[Any], cancel: Any) -> None:
    """Cancels the run (through ``cancel``) when its awaiting task gives up."""

    def done(f: asyncio.Future[Any]) -> None:
        if f.cancelled():
            cancel.cancel()

    future.add_done_callback(done)
