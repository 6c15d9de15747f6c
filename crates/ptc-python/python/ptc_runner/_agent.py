"""``SubAgent``: the agent loop with any Python callable as the model.

The options, the ``Step`` and the failure reasons are those of the Rust API
(``ptc_subagent``); option names follow the agent files of ``ptc run --agent``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping, Sequence, Union

from . import _native
from ._native import Cancel, Tool

LlmAnswer = Union[str, Mapping[str, Any]]
"""What a model returns: the answer's text, or a dict with ``content``, optional
``tool_calls`` (``[{"id", "name", "args"}]``), ``usage`` (``{"input", "output"}``
tokens) and ``model``."""

Llm = Callable[[dict], Union[LlmAnswer, Awaitable[LlmAnswer]]]
"""A model: takes the request dict (``system``, ``messages``, ``turn``, ``tools``,
``options``) and returns the answer, directly or from an ``async def``."""


class LlmError(Exception):
    """Raise from a model to classify a failure: ``kind`` is one of ``rate_limit``,
    ``timeout``, ``server_error`` (retried by the loop), ``client_error``,
    ``config_error``, ``answer_too_large`` or ``unknown``."""

    def __init__(self, message: str, kind: str = "unknown") -> None:
        super().__init__(message)
        self.kind = kind


class AgentError(Exception):
    """A mission failed (from :meth:`Step.raise_for_error`): ``reason`` is the
    step's failure reason (``max_turns_exceeded``, ``llm_error``,
    ``mission_timeout``, ``cancelled``, or the program's own ``(fail {:reason ...})``)."""

    def __init__(self, step: "Step") -> None:
        fail = step.fail
        reason = fail.reason if fail else "error"
        message = fail.message if fail else "the mission failed"
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
        self.step = step


@dataclass(frozen=True)
class Fail:
    """Why a mission failed."""

    reason: str
    message: str
    op: str | None = None
    details: Any = None


@dataclass(frozen=True)
class Step:
    """What a mission produced: ``status`` (``"ok"``/``"error"``), the
    ``return_value`` (a plain Python value) or ``fail``, the definitions left in
    ``memory``, ``usage`` (turns, requests, tokens, ``duration_ms``, ``cost_usd``) and
    every ``turn`` (program, result, prints, tool calls, feedback). ``raw`` holds the
    whole step as the Rust API serialises it."""

    status: str
    return_value: Any
    fail: Fail | None
    memory: dict[str, Any]
    usage: dict[str, Any]
    turns: list[dict[str, Any]]
    name: str | None = None
    signature: str | None = None
    warnings: list[str] = field(default_factory=list)
    children: list[dict[str, Any]] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def raise_for_error(self) -> Any:
        """Returns ``return_value``, or raises :class:`AgentError` when the mission failed."""
        if not self.ok:
            raise AgentError(self)
        return self.return_value

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Step":
        f = d.get("fail")
        return cls(
            status=d.get("status", "error"),
            return_value=d.get("return"),
            fail=Fail(f["reason"], f["message"], f.get("op"), f.get("details")) if f else None,
            memory=d.get("memory") or {},
            usage=d.get("usage") or {},
            turns=d.get("turns") or [],
            name=d.get("name"),
            signature=d.get("signature"),
            warnings=d.get("warnings") or [],
            children=d.get("children") or [],
            raw=d,
        )


class SubAgent:
    """A mission for a model: ``prompt`` (``{{key}}`` placeholders read the context),
    the ``signature`` its answer must match, ``tools`` (functions, sync or async, or
    :class:`Tool`), ``context`` (each key becomes ``data/<key>``) and the options of the
    Rust builder. Every option is checked here (``ConfigError``), not at the first run.

    ``run(llm)`` drives the loop with ``llm`` as the model and returns the
    :class:`Step`; ``await run_async(llm)`` does the same on the running event loop.
    """

    def __init__(
        self,
        prompt: str,
        *,
        signature: str | None = None,
        tools: Mapping[str, Callable[..., Any] | Tool] | Sequence[Callable[..., Any] | Tool] | None = None,
        context: Mapping[str, Any] | None = None,
        context_signature: str | None = None,
        name: str | None = None,
        description: str | None = None,
        mode: str | None = None,
        max_turns: int | None = None,
        retry_turns: int | None = None,
        timeout_ms: int | None = None,
        mission_timeout_ms: int | None = None,
        max_tool_calls: int | None = None,
        signature_validation: str | None = None,
        max_consecutive_failures: int | None = None,
        max_cost_usd: float | None = None,
        system_prompt: str | Mapping[str, str] | None = None,
        multiple_code_blocks: str | None = None,
        memory_limit: int | None = None,
        memory_strategy: str | None = None,
        limits: Mapping[str, int | None] | None = None,
    ) -> None:
        self._agent = _native.SubAgent(
            prompt,
            signature=signature,
            tools=tools,
            context=context,
            context_signature=context_signature,
            name=name,
            description=description,
            mode=mode,
            max_turns=max_turns,
            retry_turns=retry_turns,
            timeout_ms=timeout_ms,
            mission_timeout_ms=mission_timeout_ms,
            max_tool_calls=max_tool_calls,
            signature_validation=signature_validation,
            max_consecutive_failures=max_consecutive_failures,
            max_cost_usd=max_cost_usd,
            system_prompt=system_prompt,
            multiple_code_blocks=multiple_code_blocks,
            memory_limit=memory_limit,
            memory_strategy=memory_strategy,
            limits=limits,
        )
        self.prompt = prompt
        self.signature = signature

    def run(self, llm: Llm, *, cancel: Cancel | None = None) -> Step:
        """Runs the mission (the GIL is released while it runs)."""
        return Step.from_dict(self._agent.run(llm, cancel))

    async def run_async(self, llm: Llm, *, cancel: Cancel | None = None) -> Step:
        """Runs the mission; an async model and async tools are awaited on this loop.
        Cancelling the awaiting task cancels the mission."""
        return Step.from_dict(await self._agent.run_async(llm, cancel))

    def __repr__(self) -> str:
        return f"SubAgent({self.prompt[:60]!r}, signature={self.signature!r})"
