"""ptc_runner: run PTC-Lisp programs and agents in-process.

PTC-Lisp is the small, sandboxed Clojure subset that an LLM writes to call tools and
compute over their results (programmatic tool calling). This package embeds the Rust
engine of ``ptc``: every run has limits (time, memory, fuel, loop and recursion depth,
tool calls), results come back as plain Python values, tools are plain Python
functions (sync or ``async def``), and failures are exceptions named after their
reason::

    import ptc_runner

    out = ptc_runner.run(
        "(->> data/orders (filter #(= (:status %) \\"paid\\")) (map :amount) (reduce +))",
        context={"orders": [{"status": "paid", "amount": 120}, {"status": "open", "amount": 80}]},
    )
    assert out.value == 120

See ``docs/python.md`` in the repository for the whole API.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence, Union

from . import _errors, _native
from ._agent import AgentError, Fail, Llm, LlmError, Step, SubAgent
from ._errors import (
    ERRORS,
    AnalysisError,
    ArithmeticError,
    ArityError,
    CancelledError,
    ConfigError,
    DestructureError,
    FuelExhaustedError,
    InvalidFormError,
    InvalidPlaceholderError,
    InvalidToolArgsError,
    LimitError,
    LoopLimitError,
    MemoryLimitError,
    NotCallableError,
    OutputTooLargeError,
    ParallelCapacityError,
    ParseError,
    PmapError,
    ProgramFailed,
    ProgramTooLargeError,
    PtcError,
    RecursionLimitError,
    RuntimeError,
    SymbolLimitError,
    TimeoutError,
    ToolCallLimitError,
    ToolError,
    TypeError,
    UnboundVarError,
    UnknownToolError,
    UnsupportedMethodError,
    ValidationError,
)
from ._native import Cancel, Context, Engine, Outcome, Program, Tool, limits_table

__version__: str = _native.__version__

Tools = Union[Mapping[str, Union[Callable[..., Any], Tool]], Sequence[Union[Callable[..., Any], Tool]], None]
"""Tools of a run: ``{"name": function}``, or a list of functions (named by
``__name__``) and :class:`Tool` objects."""

_default_engine = Engine()


def _engine(limits: Mapping[str, int | None] | None) -> Engine:
    return _default_engine if limits is None else Engine(limits)


def run(
    program: str | Program,
    context: Mapping[str, Any] | Context | None = None,
    tools: Tools = None,
    limits: Mapping[str, int | None] | None = None,
    signature: str | None = None,
    *,
    cancel: Cancel | None = None,
) -> Outcome:
    """Runs ``program`` and returns its :class:`Outcome` (``value``, ``prints``,
    ``tool_calls``, ``usage``); a failure raises the :class:`PtcError` subclass named
    after its reason. ``limits`` is a dict of the limits table's names
    (``{"timeout_ms": 500}``); ``signature`` checks the result
    (``"{total :int}"``; a mismatch is :class:`ValidationError`)."""
    return _engine(limits).run(program, context, tools, signature, cancel)


def try_run(
    program: str | Program,
    context: Mapping[str, Any] | Context | None = None,
    tools: Tools = None,
    limits: Mapping[str, int | None] | None = None,
    signature: str | None = None,
    *,
    cancel: Cancel | None = None,
) -> Outcome:
    """:func:`run` that never raises for the program's failures: check ``ok``,
    ``reason``, ``message``, ``line``, ``column``, or take ``envelope()`` (the dict
    ``ptc eval --output json`` prints)."""
    return _engine(limits).try_run(program, context, tools, signature, cancel)


async def run_async(
    program: str | Program,
    context: Mapping[str, Any] | Context | None = None,
    tools: Tools = None,
    limits: Mapping[str, int | None] | None = None,
    signature: str | None = None,
    *,
    cancel: Cancel | None = None,
) -> Outcome:
    """:func:`run` awaited on the running loop; ``async def`` tools are awaited on this
    loop, and cancelling the awaiting task cancels the run."""
    return await _engine(limits).run_async(program, context, tools, signature, cancel)


async def try_run_async(
    program: str | Program,
    context: Mapping[str, Any] | Context | None = None,
    tools: Tools = None,
    limits: Mapping[str, int | None] | None = None,
    signature: str | None = None,
    *,
    cancel: Cancel | None = None,
) -> Outcome:
    """:func:`try_run` awaited on the running loop."""
    return await _engine(limits).try_run_async(program, context, tools, signature, cancel)


__all__ = [
    "run",
    "try_run",
    "run_async",
    "try_run_async",
    "Engine",
    "Program",
    "Outcome",
    "Cancel",
    "Context",
    "Tool",
    "Tools",
    "limits_table",
    "SubAgent",
    "Step",
    "Fail",
    "Llm",
    "LlmError",
    "AgentError",
    "__version__",
]
# every exception class and ERRORS, as _errors lists them (error_for is internal)
__all__ += [name for name in _errors.__all__ if name != "error_for"]
