"""Async runs: awaited on the caller's loop, async tools on that same loop, cancellation."""

import asyncio

import pytest

import ptc_runner


def test_async_tools_run_on_the_callers_loop():
    async def main():
        loop = asyncio.get_running_loop()
        seen = []

        async def where():
            seen.append(asyncio.get_running_loop() is loop)
            await asyncio.sleep(0)
            return len(seen)

        out = await ptc_runner.run_async("[(tool/where {}) (tool/where {})]", tools=[where])
        return out.value, seen

    value, seen = asyncio.run(main())
    assert value == [1, 2]
    assert seen == [True, True]


def test_async_run_raises_and_try_run_async_does_not():
    async def main():
        with pytest.raises(ptc_runner.ParseError):
            await ptc_runner.run_async("(")
        out = await ptc_runner.try_run_async("(")
        return out.reason

    assert asyncio.run(main()) == "parse_error"


def test_many_async_runs_at_once():
    async def main():
        async def slow(x):
            await asyncio.sleep(0.01)
            return x * 2

        outs = await asyncio.gather(
            *(ptc_runner.run_async("(tool/slow {:x data/x})", {"x": i}, tools=[slow]) for i in range(20))
        )
        return [o.value for o in outs]

    assert asyncio.run(main()) == [2 * i for i in range(20)]


def test_cancelling_the_task_cancels_the_run_and_its_tool():
    async def main():
        entered = asyncio.Event()
        cancelled = asyncio.Event()

        async def wait_forever():
            entered.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise

        task = asyncio.ensure_future(
            ptc_runner.run_async("(tool/wait-forever {})", tools=[wait_forever], limits={"timeout_ms": 60000})
        )
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(cancelled.wait(), 30)
        return cancelled.is_set()

    assert asyncio.run(main())


def test_sync_tool_in_async_run():
    async def main():
        return (await ptc_runner.run_async("(tool/inc {:x 1})", tools={"inc": lambda x: x + 1})).value

    assert asyncio.run(main()) == 2
