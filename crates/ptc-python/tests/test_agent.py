"""SubAgent with a scripted Python model, sync and async."""

import asyncio

import pytest

import ptc_runner


def scripted(*answers):
    """A model that answers from a list and records the requests it got."""
    requests = []

    def model(request):
        requests.append(request)
        return answers[len(requests) - 1]

    model.requests = requests
    return model


def block(code):
    return f"```clojure\n{code}\n```"


def orders(customer):
    return [{"id": 1, "customer": customer, "amount": 12.5}, {"id": 2, "customer": customer, "amount": 7.25}]


def make_agent(**options):
    return ptc_runner.SubAgent(
        "How many orders does {{customer}} have, and what do they total?",
        signature="{count :int, total :float}",
        context={"customer": "acme"},
        tools=[ptc_runner.Tool(orders, signature="(customer :string) -> [{id :int, amount :float}]")],
        **options,
    )


def test_agent_with_a_sync_model():
    model = scripted(
        block("(def os (tool/orders {:customer data/customer}))\n(println (count os))"),
        {"content": block("(return {:count (count os) :total (reduce + (map :amount os))})"),
         "usage": {"input": 100, "output": 20}},
    )
    step = make_agent().run(model)
    assert step.ok, step.fail
    assert step.return_value == {"count": 2, "total": 19.75}
    assert step.usage["turns"] == 2
    assert step.usage["input_tokens"] == 100
    assert step.turns[0]["prints"] == ["2"]
    assert step.turns[0]["tool_calls"][0]["name"] == "orders"
    # the request is the Rust API's LlmRequest as a dict
    first = model.requests[0]
    assert {"system", "messages", "turn"} <= set(first)
    assert first["turn"] == 1 and first["messages"][0]["role"] == "user"
    assert "acme" in first["messages"][0]["content"] or "customer" in first["messages"][0]["content"]


def test_agent_with_an_async_model_and_async_tool():
    async def main():
        loop = asyncio.get_running_loop()
        on_loop = []

        async def model(request):
            on_loop.append(asyncio.get_running_loop() is loop)
            await asyncio.sleep(0)
            if request["turn"] == 1:
                return block("(return {:count (count (tool/fetch {})) :total 1.5})")
            return block("(return {:count 0 :total 0.0})")

        async def fetch():
            on_loop.append(asyncio.get_running_loop() is loop)
            return [1, 2, 3]

        agent = ptc_runner.SubAgent("Count", signature="{count :int, total :float}", tools=[fetch])
        step = await agent.run_async(model)
        return step, on_loop

    step, on_loop = asyncio.run(main())
    assert step.ok, step.fail
    assert step.return_value == {"count": 3, "total": 1.5}
    assert on_loop == [True, True]


def test_max_turns_is_a_failure_reason():
    model = scripted(*[block("(+ 1 1)")] * 5)
    step = make_agent(max_turns=2).run(model)
    assert not step.ok
    assert step.fail.reason == "max_turns_exceeded"
    with pytest.raises(ptc_runner.AgentError) as info:
        step.raise_for_error()
    assert info.value.reason == "max_turns_exceeded"


def test_model_exception_is_an_llm_error():
    def model(request):
        raise ConnectionError("no route to host")

    step = make_agent().run(model)
    assert step.fail.reason == "llm_error"
    assert "ConnectionError: no route to host" in step.fail.message


def test_model_error_kind_is_honoured():
    calls = []

    def model(request):
        calls.append(1)
        raise ptc_runner.LlmError("bad request", kind="client_error")

    step = make_agent().run(model)
    assert step.fail.reason == "llm_error"
    assert len(calls) == 1  # a client error is not retried


def test_program_fail_reason_reaches_the_step():
    model = scripted(block("(fail {:reason :not_found :message \"no such customer\"})"))
    step = make_agent().run(model)
    assert step.fail.reason == "not_found"


def test_bad_options_raise_config_error():
    with pytest.raises(ptc_runner.ConfigError):
        ptc_runner.SubAgent("x", signature="{count :nonsense")
    with pytest.raises(ValueError, match="mode"):
        ptc_runner.SubAgent("x", mode="poetry")


def test_cancelled_mission():
    cancel = ptc_runner.Cancel()
    cancel.cancel()
    step = make_agent().run(scripted(block("1")), cancel=cancel)
    assert step.fail.reason == "cancelled"
