"""Limits fire, by name from the limits table, with their reason."""

import pytest

import ptc_runner


def test_timeout():
    with pytest.raises(ptc_runner.TimeoutError) as info:
        ptc_runner.run("(loop [] (recur))", limits={"timeout_ms": 50, "max_loop_iterations": 10**15})
    assert info.value.reason == "timeout"


def test_memory():
    with pytest.raises(ptc_runner.MemoryLimitError):
        ptc_runner.run("(vec (range 1000000))", limits={"max_heap_bytes": 1 << 20})


def test_fuel_is_deterministic():
    with pytest.raises(ptc_runner.FuelExhaustedError):
        ptc_runner.run("(reduce + (range 100000))", limits={"max_fuel": 1000})
    assert ptc_runner.run("(reduce + (range 10))", limits={"max_fuel": 1000}).value == 45


def test_loop_limit_by_default():
    with pytest.raises(ptc_runner.LoopLimitError):
        ptc_runner.run("(loop [i 0] (recur (inc i)))")


def test_recursion_limit():
    with pytest.raises(ptc_runner.RecursionLimitError):
        ptc_runner.run("(defn f [n] (+ 1 (f n))) (f 1)", limits={"max_recursion_depth": 100})


def test_tool_call_limit():
    with pytest.raises(ptc_runner.ToolCallLimitError):
        ptc_runner.run(
            "(mapv (fn [i] (tool/ping {})) (range 5))", tools={"ping": lambda: "pong"}, limits={"max_tool_calls": 2}
        )


def test_unknown_limit_lists_the_known_ones():
    with pytest.raises(ValueError, match="timeout_ms"):
        ptc_runner.Engine({"timeout": 5})


def test_out_of_range_limit_says_the_range():
    with pytest.raises(ValueError, match="max_recursion_depth must be between"):
        ptc_runner.Engine({"max_recursion_depth": 0})


def test_engine_reports_its_limits_and_the_table_lists_them():
    engine = ptc_runner.Engine({"timeout_ms": 250, "max_fuel": None})
    assert engine.limits["timeout_ms"] == 250
    assert engine.limits["max_fuel"] is None
    names = {row["name"] for row in ptc_runner.limits_table()}
    assert {"timeout_ms", "max_heap_bytes", "max_fuel"} <= names
