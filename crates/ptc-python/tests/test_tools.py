"""Python functions as tools: keyword arguments in, plain values out, signatures checked."""

import asyncio
import threading

import pytest

import ptc_runner
from ptc_runner import Tool


def test_arguments_arrive_as_keywords_with_underscores():
    seen = {}

    def search(query, max_results=2):
        seen.update(query=query, max_results=max_results)
        return [f"{query} #{i}" for i in range(max_results)]

    out = ptc_runner.run('(count (tool/search {:query "rust" :max-results 3}))', tools=[search])
    assert out.value == 3
    assert seen == {"query": "rust", "max_results": 3}
    call = out.tool_calls[0]
    assert call["name"] == "search"
    assert call["args"] == {"query": "rust", "max_results": 3}
    assert call["result"] == ["rust #0", "rust #1", "rust #2"]
    assert call["duration_ms"] >= 0


def test_dict_of_tools_names_them():
    out = ptc_runner.run("(tool/double {:x 4})", tools={"double": lambda x: 2 * x})
    assert out.value == 8


def test_exception_becomes_tool_error():
    def broken(**_):
        raise ValueError("the database is down")

    with pytest.raises(ptc_runner.ToolError) as info:
        ptc_runner.run("(tool/broken {})", tools=[broken])
    assert "ValueError: the database is down" in info.value.message
    call = info.value.outcome.tool_calls[0]
    assert call["error"]["reason"] == "tool_error"


def test_unknown_tool_is_refused_before_running():
    with pytest.raises(ptc_runner.UnknownToolError):
        ptc_runner.run("(tool/nothing {})", tools={"other": lambda: 1})


def test_signature_coerces_arguments():
    price = Tool(lambda sku, qty: qty * 10, name="price", signature="(sku :string, qty :int) -> :int")
    out = ptc_runner.run('(tool/price {:sku "A-1" :qty "3"})', tools=[price])
    # the function got qty as an int ("3" * 10 would be a str)
    assert out.value == 30


def test_signature_refuses_bad_arguments_without_calling():
    called = []
    price = Tool(lambda sku, qty: called.append(1), name="price", signature="(sku :string, qty :int) -> :int")
    with pytest.raises(ptc_runner.InvalidToolArgsError, match="qty"):
        ptc_runner.run('(tool/price {:sku "A-1" :qty "many"})', tools=[price])
    assert called == []


def test_signature_checks_the_result():
    bad = Tool(lambda: "not a number", name="count_rows", signature="() -> :int")
    with pytest.raises(ptc_runner.ToolError, match="does not match its signature"):
        ptc_runner.run("(tool/count-rows {})", tools=[bad])


def test_invalid_tool_signature_is_reported_at_once():
    with pytest.raises(ValueError, match="invalid signature"):
        Tool(lambda: 1, name="t", signature="(x :int -> :int")


def test_tool_takes_name_and_description_from_the_function():
    def lookup(order_id: int) -> str:
        """Finds the customer of an order.

        More text."""
        return "c"

    t = Tool(lookup)
    assert t.name == "lookup"
    assert t.description == "Finds the customer of an order."
    assert t(order_id=1) == "c"


def test_tool_result_of_unsupported_type_is_a_tool_error():
    with pytest.raises(ptc_runner.ToolError, match="result of tool/weird"):
        ptc_runner.run("(tool/weird {})", tools={"weird": lambda: object()})


def test_async_tool_in_a_sync_run():
    async def fetch(id):
        await asyncio.sleep(0)
        return {"id": id, "name": f"user {id}"}

    assert ptc_runner.run("(:name (tool/fetch {:id 7}))", tools=[fetch]).value == "user 7"


def test_async_tool_exception_is_a_tool_error():
    async def boom():
        raise KeyError("missing")

    with pytest.raises(ptc_runner.ToolError, match="KeyError"):
        ptc_runner.run("(tool/boom {})", tools=[boom])


def test_async_tool_past_the_deadline_ends_in_timeout():
    never = threading.Event()

    async def hang():
        await asyncio.sleep(3600)

    with pytest.raises(ptc_runner.TimeoutError):
        ptc_runner.run("(tool/hang {})", tools=[hang], limits={"timeout_ms": 100})
    assert not never.is_set()


def test_compiled_program_keeps_its_tools():
    engine = ptc_runner.Engine()
    program = engine.compile("(tool/add {:a data/a :b 1})", tools={"add": lambda a, b: a + b}, context=["a"])
    assert [engine.run(program, {"a": i}).value for i in range(3)] == [1, 2, 3]
    assert engine.run(program, {"a": 1}, tools={"add": lambda a, b: a - b}).value == 0
