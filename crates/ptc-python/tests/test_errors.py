"""Failures: exceptions named after the reason, and the non-raising envelope."""

import pytest

import ptc_runner


def test_parse_error_has_line_and_column():
    with pytest.raises(ptc_runner.ParseError) as info:
        ptc_runner.run("(+ 1 2)\n  (foo")
    e = info.value
    assert e.reason == "parse_error"
    assert (e.line, e.column) == (2, 3)
    assert "never closed" in e.message
    assert isinstance(e, ptc_runner.AnalysisError) and isinstance(e, ptc_runner.PtcError)


def test_unbound_var_is_an_analysis_error():
    with pytest.raises(ptc_runner.UnboundVarError):
        ptc_runner.run("(frobnicate 1)")


def test_type_error_is_ptc_runner_type_error():
    with pytest.raises(ptc_runner.TypeError) as info:
        ptc_runner.run('(+ 1 "a")')
    assert info.value.reason == "type_error"


def test_fail_carries_its_value():
    with pytest.raises(ptc_runner.ProgramFailed) as info:
        ptc_runner.run('(println "before") (fail {:reason :not-found :id 3})')
    assert info.value.value == {"reason": "not-found", "id": 3}
    assert info.value.outcome.prints == ["before"]


def test_signature_mismatch_is_a_validation_error():
    assert ptc_runner.run("{:count 3}", signature="{count :int}").value == {"count": 3}
    with pytest.raises(ptc_runner.ValidationError, match="count"):
        ptc_runner.run('{:count "three"}', signature="{count :int}")


def test_bad_signature_is_a_value_error():
    with pytest.raises(ValueError, match="invalid signature"):
        ptc_runner.run("1", signature="{count :nonsense")


def test_try_run_returns_the_envelope_of_ptc_eval():
    out = ptc_runner.try_run("(+ 1\n (/ 1 0)")
    assert not out.ok
    assert out.reason == "parse_error"
    env = out.envelope()
    assert env["status"] == "error" and env["reason"] == "parse_error"
    assert {"message", "line", "column", "prints", "tool_calls", "usage"} <= set(env)
    out = ptc_runner.try_run("(/ 1 0)")
    assert out.reason == "arithmetic_error" and out.value is None
    with pytest.raises(ptc_runner.ArithmeticError):
        out.raise_for_error()
    ok = ptc_runner.try_run("(+ 1 2)")
    assert ok.ok and ok.envelope() == {
        "status": "ok",
        "result": "3",
        "value": 3,
        "prints": [],
        "tool_calls": [],
        "usage": ok.usage,
    }
    assert ok.raise_for_error() == 3


def test_every_reason_has_its_class():
    for reason, cls in ptc_runner.ERRORS.items():
        assert cls.reason == reason
        assert issubclass(cls, ptc_runner.PtcError)
    assert issubclass(ptc_runner.TimeoutError, ptc_runner.LimitError)
    assert issubclass(ptc_runner.MemoryLimitError, ptc_runner.LimitError)
    assert ptc_runner.ERRORS["memory_exceeded"] is ptc_runner.MemoryLimitError
