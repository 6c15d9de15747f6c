"""The exceptions of ``ptc_runner``: one class per reason a run can end with.

Every failure of a program is a :class:`PtcError` whose class is named after its
reason (``timeout`` → :class:`TimeoutError`, ``memory_exceeded`` →
:class:`MemoryLimitError`, ``parse_error`` → :class:`ParseError`...). The limits share
the base :class:`LimitError`; the analysis errors (found before anything runs)
:class:`AnalysisError`. Each carries ``reason``, ``message``, ``line`` and ``column``
(1-based, when known) and the whole ``outcome`` (prints and tool calls up to the
failure).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "PtcError",
    "AnalysisError",
    "LimitError",
    "ConfigError",
    "ParseError",
    "InvalidFormError",
    "InvalidPlaceholderError",
    "UnboundVarError",
    "UnknownToolError",
    "ArityError",
    "TypeError",
    "ArithmeticError",
    "NotCallableError",
    "DestructureError",
    "UnsupportedMethodError",
    "RuntimeError",
    "ToolError",
    "InvalidToolArgsError",
    "ToolCallLimitError",
    "LoopLimitError",
    "RecursionLimitError",
    "TimeoutError",
    "FuelExhaustedError",
    "MemoryLimitError",
    "ProgramTooLargeError",
    "SymbolLimitError",
    "OutputTooLargeError",
    "PmapError",
    "ParallelCapacityError",
    "CancelledError",
    "ProgramFailed",
    "ValidationError",
    "ERRORS",
    "error_for",
]


class PtcError(Exception):
    """A program failed. ``reason`` is the stable snake_case name (``timeout``,
    ``parse_error``...), ``message`` says what went wrong and what to write instead."""

    reason: str = "error"

    def __init__(
        self,
        message: str,
        *,
        reason: str | None = None,
        line: int | None = None,
        column: int | None = None,
        outcome: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if reason is not None:
            self.reason = reason
        self.line = line
        self.column = column
        self.outcome = outcome

    def __str__(self) -> str:
        where = f" (line {self.line}, column {self.column})" if self.line is not None else ""
        return f"{self.reason}: {self.message}{where}"


class ConfigError(ValueError):
    """An option of an agent (or a signature, a limit) is wrong; nothing ran."""


class AnalysisError(PtcError):
    """The program was refused before it ran (it does not parse or analyze)."""


class LimitError(PtcError):
    """The program hit one of its limits (see ``ptc_runner.limits_table()``)."""


class ParseError(AnalysisError):
    reason = "parse_error"


class InvalidFormError(AnalysisError):
    reason = "invalid_form"


class InvalidPlaceholderError(AnalysisError):
    reason = "invalid_placeholder"


class UnboundVarError(AnalysisError):
    reason = "unbound_var"


class UnknownToolError(AnalysisError):
    reason = "unknown_tool"


class ArityError(PtcError):
    reason = "arity_error"


class TypeError(PtcError):  # noqa: A001 - named after the reason, like the others
    reason = "type_error"


class ArithmeticError(PtcError):  # noqa: A001
    reason = "arithmetic_error"


class NotCallableError(PtcError):
    reason = "not_callable"


class DestructureError(PtcError):
    reason = "destructure_error"


class UnsupportedMethodError(PtcError):
    reason = "unsupported_method"


class RuntimeError(PtcError):  # noqa: A001
    reason = "runtime_error"


class ToolError(PtcError):
    """A tool call failed and the program did not handle it."""

    reason = "tool_error"


class InvalidToolArgsError(ToolError):
    reason = "invalid_tool_args"


class ToolCallLimitError(LimitError):
    reason = "tool_call_limit_exceeded"


class LoopLimitError(LimitError):
    reason = "loop_limit_exceeded"


class RecursionLimitError(LimitError):
    reason = "recursion_limit_exceeded"


class TimeoutError(LimitError):  # noqa: A001
    reason = "timeout"


class FuelExhaustedError(LimitError):
    reason = "fuel_exhausted"


class MemoryLimitError(LimitError):
    reason = "memory_exceeded"


class ProgramTooLargeError(LimitError):
    reason = "program_too_large"


class SymbolLimitError(LimitError):
    reason = "symbol_limit_exceeded"


class OutputTooLargeError(LimitError):
    reason = "output_too_large"


class PmapError(PtcError):
    reason = "pmap_error"


class ParallelCapacityError(LimitError):
    reason = "parallel_capacity_exceeded"


class CancelledError(PtcError):
    reason = "cancelled"


class ProgramFailed(PtcError):
    """The program called ``(fail v)``; ``value`` is ``v`` as a Python value."""

    reason = "fail"

    @property
    def value(self) -> Any:
        return None if self.outcome is None else self.outcome.value


class ValidationError(PtcError):
    """The result does not match the signature the run was given."""

    reason = "validation_error"


ERRORS: dict[str, type[PtcError]] = {
    cls.reason: cls
    for cls in [
        ParseError,
        InvalidFormError,
        InvalidPlaceholderError,
        UnboundVarError,
        UnknownToolError,
        ArityError,
        TypeError,
        ArithmeticError,
        NotCallableError,
        DestructureError,
        UnsupportedMethodError,
        RuntimeError,
        ToolError,
        InvalidToolArgsError,
        ToolCallLimitError,
        LoopLimitError,
        RecursionLimitError,
        TimeoutError,
        FuelExhaustedError,
        MemoryLimitError,
        ProgramTooLargeError,
        SymbolLimitError,
        OutputTooLargeError,
        PmapError,
        ParallelCapacityError,
        CancelledError,
        ProgramFailed,
        ValidationError,
    ]
}
"""Reason → exception class."""


def error_for(outcome: Any) -> PtcError:
    """The exception for a failed ``Outcome`` (a reason this version does not know
    becomes a plain :class:`PtcError` with that reason)."""
    cls = ERRORS.get(outcome.reason, PtcError)
    return cls(
        outcome.message or "",
        reason=outcome.reason,
        line=outcome.line,
        column=outcome.column,
        outcome=outcome,
    )
