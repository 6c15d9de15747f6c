"""The GIL is released while a program runs; many Python threads run at once."""

import threading
from concurrent.futures import ThreadPoolExecutor

import ptc_runner


def test_runs_from_many_threads_overlap():
    n = 6
    barrier = threading.Barrier(n, timeout=30)

    def meet():
        # every run must be inside this tool at the same time to pass the barrier
        return barrier.wait()

    engine = ptc_runner.Engine(threads=n)
    program = engine.compile("(+ data/i (tool/meet {}) 0)", tools=[meet], context=["i"])
    with ThreadPoolExecutor(n) as pool:
        results = list(pool.map(lambda i: engine.run(program, {"i": i * 100}).value, range(n)))
    assert sorted(r - (r % 100) for r in results) == [i * 100 for i in range(n)]


def test_gil_is_released_while_the_program_computes():
    started = threading.Event()
    cancel = ptc_runner.Cancel()
    result = {}

    def run():
        result["out"] = ptc_runner.try_run(
            "(tool/started {}) (loop [] (recur))",
            tools={"started": started.set},
            limits={"timeout_ms": 20000, "max_loop_iterations": 10**15},
            cancel=cancel,
        )

    t = threading.Thread(target=run)
    t.start()
    assert started.wait(30)
    # this thread needs the GIL to get here and to call cancel(): if the spinning run
    # held it, the run would end in its 20 s timeout instead of cancelled
    cancel.cancel()
    t.join(60)
    assert result["out"].reason == "cancelled"
    assert cancel.cancelled


def test_one_engine_and_program_from_many_threads():
    engine = ptc_runner.Engine()
    program = engine.compile("(reduce + (map inc data/xs))", context=["xs"])

    def work(i):
        return [engine.run(program, {"xs": list(range(i))}).value for _ in range(50)]

    with ThreadPoolExecutor(8) as pool:
        for i, values in enumerate(pool.map(work, range(16))):
            assert values == [sum(range(1, i + 1))] * 50


def test_batch_runs_inline_on_a_pool_thread():
    engine = ptc_runner.Engine()
    program = engine.compile("(* 2 data/x)", context=["x"])
    caller = threading.get_ident()

    def many():
        return threading.get_ident(), [engine.run(program, {"x": i}).value for i in range(100)]

    ident, values = engine.batch(many)
    assert ident != caller
    assert values == [2 * i for i in range(100)]


def test_batch_passes_exceptions_through():
    engine = ptc_runner.Engine()

    def fails():
        engine.run("(")

    try:
        engine.batch(fails)
    except ptc_runner.ParseError:
        pass
    else:
        raise AssertionError("the ParseError raised inside the batch was lost")
