"""Values both ways: Python → context → program → result → Python."""

import pytest

import ptc_runner
from ptc_runner import _native


def test_plain_values_round_trip():
    value = {"a": 1, "b": [1, 2.5, "x", None, True, False], "c": {"nested": {"deep": [[]]}}}
    assert _native.roundtrip(value) == value


def test_tuples_become_lists_and_sets_stay_sets():
    assert _native.roundtrip((1, 2)) == [1, 2]
    assert _native.roundtrip({1, 2, 3}) == {1, 2, 3}
    assert _native.roundtrip(frozenset({"a"})) == {"a"}


def test_bool_is_not_int():
    out = ptc_runner.run("[(boolean? data/t) (int? data/n) (float? data/f)]", {"t": True, "n": 1, "f": 1.0})
    assert out.value == [True, True, True]


def test_keywords_come_back_as_str():
    out = ptc_runner.run("{:status :paid :tags #{:a :b} :items [:x]}")
    assert out.value == {"status": "paid", "tags": {"a", "b"}, "items": ["x"]}
    assert out.printed == "{:items [:x] :status :paid :tags #{:a :b}}"


def test_context_keys_become_data_names_and_flexible_keys_read_them():
    out = ptc_runner.run("(:user-id (first data/users))", {"users": [{"user_id": 7}]})
    assert out.value == 7


def test_vector_map_keys_become_tuples():
    assert ptc_runner.run("{[1 2] :a}").value == {(1, 2): "a"}


def test_functions_come_back_as_printed_text():
    assert isinstance(ptc_runner.run("inc").value, str)


def test_int_beyond_64_bits_is_refused_with_advice():
    with pytest.raises(ValueError, match="64 bits"):
        ptc_runner.run("data/n", {"n": 2**70})


def test_unsupported_type_names_the_type():
    with pytest.raises(TypeError, match="object"):
        ptc_runner.run("data/x", {"x": object()})


def test_self_referencing_list_is_an_error_not_a_crash():
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="nested more than"):
        ptc_runner.run("data/x", {"x": loop})


def test_pydantic_style_models_pass_as_their_dump():
    class Model:
        def model_dump(self):
            return {"id": 3, "name": "x"}

    assert ptc_runner.run("(:name data/m)", {"m": Model()}).value == "x"


def test_context_must_be_a_dict_of_str():
    with pytest.raises(TypeError, match="context keys must be str"):
        ptc_runner.run("1", {1: 2})
    with pytest.raises(TypeError, match="context must be a dict"):
        ptc_runner.run("1", [1])


def test_prints_and_usage():
    out = ptc_runner.run('(println "hello" 1) (println :done) 42')
    assert out.prints == ["hello 1", ":done"]
    assert out.value == 42
    assert set(out.usage) == {"duration_ms", "fuel", "heap_bytes"}
    assert out.usage["fuel"] > 0


def test_return_is_marked():
    out = ptc_runner.run("(return 5) 6")
    assert out.value == 5 and out.returned
    assert out.envelope()["returned"] is True


def test_context_converted_once_serves_many_runs():
    ctx = ptc_runner.Context({"orders": [{"amount": 2}, {"amount": 3}], "k": "v"})
    assert sorted(ctx.keys()) == ["k", "orders"] and len(ctx) == 2
    engine = ptc_runner.Engine()
    program = engine.compile("(reduce + (map :amount data/orders))", context=ctx)
    assert [engine.run(program, ctx).value for _ in range(3)] == [5, 5, 5]
    assert ctx.to_dict() == {"orders": [{"amount": 2}, {"amount": 3}], "k": "v"}


def test_context_from_json_text():
    ctx = ptc_runner.Context.from_json(b'{"xs": [1, 2, 3], "name": "n"}')
    assert ptc_runner.run("(count data/xs)", ctx).value == 3
    with pytest.raises(ValueError, match="must be a JSON object"):
        ptc_runner.Context.from_json("[1, 2]")
    with pytest.raises(ValueError, match="not valid JSON"):
        ptc_runner.Context.from_json("{")
