"""ptc_runner beside the Python sandboxes, in one Python process.

Run by ``cargo xtask python --bench [--quick]``, which builds ``ptc_runner`` in release
mode, installs pydantic-monty and smolagents into the same venv, and writes the agent
workloads of ``cargo xtask bench`` (the canonical context-fed PTC-Lisp phrasing, the
CPython program answering the same question, the generated context at a tenth of its
size) to ``target/python-bench/manifest.json``.

Each contender runs in this process, with the context handed over as a Python dict:

- ptc_runner: ``Engine.run(source, context)`` (compile + run; the context dict is
  converted on every run), and for the tiny program also a precompiled ``Program``;
- CPython: ``exec`` of the workload's Python program (compiled each time, and for the
  tiny program also a precompiled code object);
- pydantic-monty: ``feed_run`` on one checked-out session (Monty 1.4 runs code in a
  worker process, so each run crosses a process boundary);
- smolagents: ``LocalPythonExecutor`` (an AST-walking interpreter of a Python subset).

Every answer is checked against CPython's. Prints a Markdown section for
``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import statistics
import sys
import time
from typing import Any, Callable

import ptc_runner

TINY_LISP = "(+ 1 2)"
TINY_PY = "1 + 2"

LIMITS = {
    "timeout_ms": 600_000,
    "max_heap_bytes": 16_000_000_000,
    "max_loop_iterations": 1_000_000_000,
    "max_result_bytes": 100_000_000,
}


def per_call_us(fn: Callable[[], Any], budget_s: float, batches: int = 7) -> float:
    """The best of ``batches`` batches' mean time of one call, in microseconds (the best,
    as timeit reports: on a shared machine the others measure the neighbours' load)."""
    fn()
    n = 1
    while True:
        t = time.perf_counter()
        for _ in range(n):
            fn()
        took = time.perf_counter() - t
        if took > budget_s / batches / 4 or n >= 1 << 20:
            break
        n *= 2
    per_batch = max(1, int(n * (budget_s / batches) / max(took, 1e-9)))
    samples = []
    gc.collect()
    for _ in range(batches):
        t = time.perf_counter()
        for _ in range(per_batch):
            fn()
        samples.append((time.perf_counter() - t) / per_batch * 1e6)
    return min(samples)


def timed_ms(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    """Median wall time of ``runs`` calls in milliseconds, and the last answer."""
    samples, answer = [], None
    for _ in range(runs):
        gc.collect()
        t = time.perf_counter()
        answer = fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples), answer


def normalize(v: Any) -> Any:
    """The answer as JSON would carry it (sets as sorted lists, keys as str)."""
    if isinstance(v, dict):
        return {str(k): normalize(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [normalize(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted(normalize(x) for x in v)
    return v


def same(a: Any, b: Any) -> bool:
    a, b = normalize(a), normalize(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


class CPython:
    name = "CPython exec"

    def run(self, code: str, data: Any) -> Any:
        out: list[str] = []
        exec(compile(code, "<workload>", "exec"), {"data": data, "print": lambda *a: out.append(" ".join(map(str, a)))})
        return json.loads("".join(out))


class Monty:
    name = "pydantic-monty"

    def __init__(self) -> None:
        import pydantic_monty

        self.version = pydantic_monty.__version__
        self.pool = pydantic_monty.Monty()
        self.pool.__enter__()
        self.checkout = self.pool.checkout()
        self.session = self.checkout.__enter__()

    def tiny(self) -> Any:
        return self.session.feed_run(TINY_PY)

    def run(self, code: str, data: Any) -> Any:
        out: list[str] = []
        self.session.feed_run(code, inputs={"data": data}, print_callback=lambda stream, text: out.append(text))
        return json.loads("".join(out))

    def close(self) -> None:
        self.checkout.__exit__(None, None, None)
        self.pool.__exit__(None, None, None)


class Smolagents:
    name = "smolagents LocalPythonExecutor"

    def __init__(self) -> None:
        import smolagents
        from smolagents.local_python_executor import LocalPythonExecutor

        self.version = smolagents.__version__
        self.executor = LocalPythonExecutor(additional_authorized_imports=["json", "collections", "re", "math"])
        self.executor.send_tools({})

    def tiny(self) -> Any:
        return self.executor(TINY_PY).output

    def run(self, code: str, data: Any) -> Any:
        self.executor.send_variables({"data": data})
        return json.loads(self.executor(code).logs)


def try_peer(make: Callable[[], Any]) -> tuple[Any, str | None]:
    try:
        return make(), None
    except Exception as e:  # a peer that is missing is reported, not fatal
        return None, f"{type(e).__name__}: {e}"


def fmt_ms(ms: float | None) -> str:
    if ms is None:
        return ""
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("manifest", help="target/python-bench/manifest.json (cargo xtask python --bench)")
    parser.add_argument("--quick", action="store_true", help="one timed run per workload, shorter tiny budget")
    parser.add_argument("--tiny-only", action="store_true", help="only the tiny program")
    args = parser.parse_args()
    runs = 1 if args.quick else 3
    budget = 0.5 if args.quick else 2.0
    manifest = [] if args.tiny_only else json.load(open(args.manifest))

    engine = ptc_runner.Engine(LIMITS)
    cpython = CPython()
    monty, monty_err = try_peer(Monty)
    smol, smol_err = try_peer(Smolagents)

    # the tiny program
    tiny_program = engine.compile(TINY_LISP)
    tiny_code = compile(TINY_PY, "<tiny>", "eval")
    default_engine = ptc_runner.Engine()
    tiny = [
        ("ptc_runner `Engine.run(program)` (compiled once)", per_call_us(lambda: default_engine.run(tiny_program), budget)),
        ("ptc_runner `Engine.run(source)` (compile + run)", per_call_us(lambda: default_engine.run(TINY_LISP), budget)),
        ("ptc_runner `run(source)` (module function)", per_call_us(lambda: ptc_runner.run(TINY_LISP), budget)),
        ("CPython `eval(code)` (compiled once)", per_call_us(lambda: eval(tiny_code), budget)),
        ("CPython `exec(source)` (compile + run)", per_call_us(lambda: exec(TINY_PY), budget)),
    ]
    assert default_engine.run(tiny_program).value == 3

    def in_batch(n: int = 20_000) -> float:
        def loop() -> None:
            for _ in range(n):
                default_engine.run(tiny_program)

        samples = []
        for _ in range(7):
            t = time.perf_counter()
            default_engine.batch(loop)
            samples.append((time.perf_counter() - t) / n * 1e6)
        return min(samples)

    tiny.insert(1, ("ptc_runner `Engine.run(program)` inside `Engine.batch` (no hand-off per run)", in_batch()))
    if monty:
        assert monty.tiny() == 3
        tiny.append((f"pydantic-monty {monty.version} `feed_run(source)`", per_call_us(monty.tiny, budget)))
    if smol:
        assert smol.tiny() == 3
        tiny.append((f"smolagents {smol.version} `LocalPythonExecutor(source)`", per_call_us(smol.tiny, budget)))
    for name, us in tiny:
        print(f"tiny: {name}: {us:.1f} µs", file=sys.stderr)

    # the workloads
    rows = []
    for w in manifest:
        data = json.load(open(w["context"]))
        figures: dict[str, tuple[float | None, str]] = {}
        expected_ms, expected = timed_ms(lambda: cpython.run(w["python"], data), runs)
        figures["cpython"] = (expected_ms, "")

        def ptc() -> Any:
            return engine.run(w["lisp"], data).value

        ptc()
        ptc_ms, answer = timed_ms(ptc, runs)
        figures["ptc"] = (ptc_ms, "" if same(answer, expected) else f"answer differs: {str(answer)[:80]}")
        context = ptc_runner.Context(data)
        once_ms, answer = timed_ms(lambda: engine.run(w["lisp"], context).value, runs)
        figures["ptc_once"] = (once_ms, "" if same(answer, expected) else f"answer differs: {str(answer)[:80]}")
        for key, peer in (("monty", monty), ("smol", smol)):
            if peer is None:
                continue
            try:
                ms, theirs = timed_ms(lambda: peer.run(w["python"], data), 1)
                figures[key] = (ms, "" if same(theirs, expected) else f"answer differs: {str(theirs)[:80]}")
            except Exception as e:
                figures[key] = (None, f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}")
        rows.append((w, figures))
        print(
            f"workload {w['id']}: " + ", ".join(f"{k} {fmt_ms(v[0])} ms {v[1]}" for k, v in figures.items()),
            file=sys.stderr,
        )
    if monty:
        monty.close()

    # the report
    out = []
    out.append("## From Python, in one process (`cargo xtask python --bench`)\n")
    out.append(
        f"- Machine: {os.cpu_count()} CPU(s); load average at the end "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; Python {platform.python_version()}; "
        f"ptc_runner {ptc_runner.__version__} (release build, abi3 wheel built by maturin)"
    )
    out.append(
        "- Every contender runs inside the same CPython process and gets the context as a Python dict: "
        "ptc_runner's `Engine.run` (the GIL released, the program on a pool thread), CPython's own "
        "`exec`, pydantic-monty's `feed_run` on one checked-out session (Monty 1.4 runs code in a worker "
        "process), smolagents' `LocalPythonExecutor` (an AST walker in Python)."
    )
    out.append(
        "- ptc_runner is timed twice per workload: with the context as a dict (converted to PTC-Lisp values "
        "on every run, as a dict is for the peers) and with a `ptc_runner.Context` converted once before the "
        "timed runs. CPython `exec` works on the dict's objects as they are, with no conversion at all.\n"
        "- The workloads are those of the tables above at a tenth of their size, the canonical context-fed "
        "phrasing on the PTC-Lisp side and the CPython program on the others; every answer is checked "
        f"against CPython's. Median of {runs} run(s) (1 for the peers), after one untimed ptc_runner run.\n"
    )
    out.append("A tiny program, microseconds per run (the best of 7 batches of many runs each):\n")
    out.append("| contender | µs per run |")
    out.append("|---|---:|")
    for name, us in tiny:
        out.append(f"| {name} | {us:.1f} |")
    out.append("")
    peers = [("monty", "pydantic-monty ms"), ("smol", "smolagents ms")]
    out.append(
        "| # | workload (data) | ptc_runner ms, dict context | ptc_runner ms, `Context` | CPython exec ms "
        "| ptc / CPython (dict, `Context`) | "
        + " | ".join(h for k, h in peers if (monty if k == "monty" else smol))
        + " |"
    )
    present = [k for k, _ in peers if (monty if k == "monty" else smol)]
    out.append("|---|---|---:|---:|---:|---:|" + "---:|" * len(present))
    notes = []
    for w, f in rows:
        ptc_ms, ptc_note = f["ptc"]
        once_ms, once_note = f["ptc_once"]
        cp_ms, _ = f["cpython"]
        ratio = f"{ptc_ms / cp_ms:.2f}×, {once_ms / cp_ms:.2f}×" if ptc_ms and once_ms and cp_ms else ""
        if once_note:
            notes.append(f"- ptc_runner with a Context on {w['id']}: {once_note}")
        cells = []
        for k in present:
            ms, note = f.get(k, (None, "not run"))
            cells.append(fmt_ms(ms) if not note else "failed" if ms is None else f"{fmt_ms(ms)} (wrong)")
            if note:
                notes.append(f"- {k} on {w['id']}: {note}")
        if ptc_note:
            notes.append(f"- ptc_runner on {w['id']}: {ptc_note}")
        out.append(
            f"| {w['id']} | {w['title']} ({w['data']}) | {fmt_ms(ptc_ms)} | {fmt_ms(once_ms)} | {fmt_ms(cp_ms)} | {ratio} | "
            + " | ".join(cells)
            + " |"
        )
    if monty_err:
        notes.append(f"- pydantic-monty not measured: {monty_err}")
    if smol_err:
        notes.append(f"- smolagents not measured: {smol_err}")
    if notes:
        out.append("")
        out.extend(notes)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
