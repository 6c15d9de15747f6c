"""Type stubs of the native module (``crates/ptc-python/src``)."""

from typing import Any, Awaitable, Callable, Mapping, Sequence, Union

__version__: str

_ToolsArg = Union[Mapping[str, Union[Callable[..., Any], "Tool"]], Sequence[Union[Callable[..., Any], "Tool"]], None]
_LimitsArg = Union[Mapping[str, Union[int, None]], None]

class Cancel:
    """A cancel handle: ``cancel()`` from any thread stops the runs given it."""

    def __init__(self) -> None: ...
    def cancel(self) -> None: ...
    @property
    def cancelled(self) -> bool: ...

class Tool:
    """A Python function offered to programs as ``tool/<name>``."""

    def __init__(
        self,
        func: Callable[..., Any],
        name: str | None = None,
        signature: str | None = None,
        description: str | None = None,
    ) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def signature(self) -> str | None: ...
    @property
    def description(self) -> str: ...
    @property
    def func(self) -> Callable[..., Any]: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

class Program:
    """A parsed and analyzed program (``Engine.compile``)."""

    @property
    def defined_names(self) -> list[str]: ...
    @property
    def source(self) -> str: ...

class Outcome:
    """How a run ended."""

    @property
    def ok(self) -> bool: ...
    @property
    def status(self) -> str: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def message(self) -> str | None: ...
    @property
    def line(self) -> int | None: ...
    @property
    def column(self) -> int | None: ...
    @property
    def value(self) -> Any: ...
    @property
    def printed(self) -> str: ...
    @property
    def returned(self) -> bool: ...
    @property
    def prints(self) -> list[str]: ...
    @property
    def tool_calls(self) -> list[dict[str, Any]]: ...
    @property
    def usage(self) -> dict[str, Any]: ...
    def envelope(self) -> dict[str, Any]: ...
    def raise_for_error(self) -> Any: ...

class Engine:
    """Runs programs under one set of limits on a pool of threads."""

    def __init__(self, limits: _LimitsArg = None, threads: int | None = None) -> None: ...
    @property
    def limits(self) -> dict[str, int | None]: ...
    def compile(
        self, source: str, tools: _ToolsArg = None, context: Mapping[str, Any] | Sequence[str] | None = None
    ) -> Program: ...
    def run(
        self,
        program: str | Program,
        context: Mapping[str, Any] | None = None,
        tools: _ToolsArg = None,
        signature: str | None = None,
        cancel: Cancel | None = None,
    ) -> Outcome: ...
    def try_run(
        self,
        program: str | Program,
        context: Mapping[str, Any] | None = None,
        tools: _ToolsArg = None,
        signature: str | None = None,
        cancel: Cancel | None = None,
    ) -> Outcome: ...
    def run_async(
        self,
        program: str | Program,
        context: Mapping[str, Any] | None = None,
        tools: _ToolsArg = None,
        signature: str | None = None,
        cancel: Cancel | None = None,
    ) -> Awaitable[Outcome]: ...
    def try_run_async(
        self,
        program: str | Program,
        context: Mapping[str, Any] | None = None,
        tools: _ToolsArg = None,
        signature: str | None = None,
        cancel: Cancel | None = None,
    ) -> Awaitable[Outcome]: ...

class SubAgent:
    def __init__(self, prompt: str, **options: Any) -> None: ...
    def run(self, llm: Callable[[dict], Any], cancel: Cancel | None = None) -> dict[str, Any]: ...
    def run_async(self, llm: Callable[[dict], Any], cancel: Cancel | None = None) -> Awaitable[dict[str, Any]]: ...

def limits_table() -> list[dict[str, Any]]: ...
def roundtrip(value: Any) -> Any: ...
