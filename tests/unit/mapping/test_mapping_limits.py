"""The mapping engine's limits (issue 27): expression length and nesting when a spec is built,
the size of every value an expression builds and of the mapped body while it runs, and its
run time. The issue's memory bomb is stopped after kilobytes, not after 120 MB."""

import itertools
import json
import tracemalloc
from typing import Any

import pytest
from pydantic import ValidationError

from hub.domain.expression_limits import MappingLimits
from hub.domain.failure import ErrorClass
from hub.domain.mapping_spec import MAX_BODY_BYTES, MAX_EXPRESSION_LENGTH, MAX_EXPRESSION_NESTING
from hub.domain.tenancy import MessageTypeConfig
from hub.mapping import MappingSpec, MappingTooLarge, apply_mapping
from tests.mapping_bomb import BOMB, BOMB_PAYLOAD


def spec_of(path: str, **settings: Any) -> MappingSpec:
    return MappingSpec.model_validate({"output": {"value": {"path": path}}, **settings})


def refusal(build: Any) -> dict[str, Any]:
    with pytest.raises(ValidationError) as raised:
        build()
    [error] = raised.value.errors()
    return dict(error)


def under_limits(spec: MappingSpec, payload: Any, **options: Any) -> Any:
    """The mapped body of a run under the size limits, on a clock that stands still (as in
    `too_large`): a loaded machine must not make a large but allowed mapping a time refusal."""
    options.setdefault("timer", lambda: 0.0)
    return apply_mapping(spec, payload, **options)


def too_large(spec: MappingSpec, payload: Any, **options: Any) -> MappingTooLarge:
    """The size limit a run goes over. Its clock stands still unless the test gives one: a
    loaded machine must not turn a size refusal into a time one (2 s is the default budget)."""
    options.setdefault("timer", lambda: 0.0)
    with pytest.raises(MappingTooLarge) as raised:
        apply_mapping(spec, payload, **options)
    assert raised.value.code == "mapping_too_large"
    assert raised.value.http_status == 422
    assert raised.value.error_class is ErrorClass.SYNTAX
    return raised.value


class TestExpressionLimits:
    def test_the_bomb_itself_is_short_and_shallow_enough_to_be_saved(self) -> None:
        # What stops it is the size of what it builds, below: a smaller payload or fewer stages
        # make the same bomb, so no length or nesting bound could.
        assert len(BOMB) == 172
        assert spec_of(BOMB).output["value"].path == BOMB  # type: ignore[union-attr]

    def test_an_expression_one_character_over_the_length_limit_is_refused(self) -> None:
        at_limit = "a" * MAX_EXPRESSION_LENGTH
        assert spec_of(at_limit)
        error = refusal(lambda: spec_of(at_limit + "a"))
        assert error["type"] == "mapping_too_large"
        assert f"longer than {MAX_EXPRESSION_LENGTH} characters" in error["msg"]
        assert error["loc"][:2] == ("output", "value")

    def test_an_expression_one_level_over_the_nesting_limit_is_refused(self) -> None:
        # Every "!" is one level of the parse tree; the field it applies to is the last.
        at_limit = "!" * (MAX_EXPRESSION_NESTING - 1) + "a"
        assert spec_of(at_limit)
        error = refusal(lambda: spec_of("!" + at_limit))
        assert error["type"] == "mapping_too_large"
        assert f"nests deeper than {MAX_EXPRESSION_NESTING} levels" in error["msg"]

    def test_nesting_too_deep_for_the_parser_itself_is_the_same_refusal(self) -> None:
        error = refusal(lambda: spec_of("!" * 900 + "a"))
        assert error["type"] == "mapping_too_large"

    @pytest.mark.parametrize("nested", ["[" * 40 + "a" + "]" * 40, " | ".join(["@"] * 40), "each"])
    def test_each_paths_and_business_keys_have_the_same_limits(self, nested: str) -> None:
        deep = "[" * 40 + "a" + "]" * 40 if nested == "each" else nested
        each = {"output": {"lines": {"each": deep, "template": {"sku": {"path": "sku"}}}}}
        assert refusal(lambda: MappingSpec.model_validate(each))["type"] == "mapping_too_large"
        key = refusal(lambda: MessageTypeConfig(duplicate_key_fields=(deep,)))
        assert (key["type"], key["loc"]) == ("mapping_too_large", ("duplicate_key_fields",))

    def test_braces_in_a_refused_expression_are_shown_as_written(self) -> None:
        error = refusal(lambda: spec_of("{a: b}." * 200 + "c"))
        assert "{a: b}" in error["msg"]


class TestWhatAnExpressionBuilds:
    def test_the_issues_bomb_is_stopped_after_kilobytes_naming_the_expression(self) -> None:
        spec = spec_of(BOMB)
        tracemalloc.start()
        try:
            error = too_large(spec, BOMB_PAYLOAD)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()

        assert peak < 2 * 1024 * 1024  # unbounded: a 120 MB body and 380 MB of RSS
        assert error.details == {
            "field": "value",
            "expression": BOMB,
            "limit": "intermediate_bytes",
            "maximum": MAX_BODY_BYTES,
        }
        assert error.message.startswith(f"field 'value': path '{BOMB[:60]}...' builds a value over")
        assert "x" * 10 not in error.message  # never the payload

    def test_amplifying_each_item_inside_map_is_stopped_by_the_expressions_total(self) -> None:
        # Each item's string stays under the limit; together they would be 2,000 of them.
        amplify = " | ".join(["[@,@]"] * 13 + ["to_string(@)"])
        spec = spec_of(f"map(&({amplify}), items)")
        tracemalloc.start()
        try:
            error = too_large(spec, {"items": list(range(2000))})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert error.limit == "intermediate_bytes"
        assert peak < 8 * 1024 * 1024

    def test_join_is_refused_before_it_writes_a_separator_times_many_items(self) -> None:
        payload = {"separator": "s" * 100_000, "items": [""] * 1000}  # joined: 100 MB
        tracemalloc.start()
        try:
            error = too_large(spec_of("join(separator, items)"), payload)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert error.details["expression"] == "join(separator, items)"
        assert peak < 2 * 1024 * 1024

    def test_what_an_expression_only_selects_is_free(self) -> None:
        # The payload is over the size limit; picking parts of it builds nothing.
        payload = {"lines": [{"sku": f"A-{i}", "text": "t" * 100} for i in range(3000)], "po": "PO-1"}
        assert len(json.dumps(payload)) > MAX_BODY_BYTES
        spec = MappingSpec.model_validate(
            {
                "output": {
                    "po": {"path": "po"},
                    "count": {"path": "length(lines)"},
                    "last": {"path": "lines[-1].sku"},
                }
            }
        )
        assert json.loads(under_limits(spec, payload).body) == {
            "po": "PO-1",
            "count": 3000,
            "last": "A-2999",
        }

    def test_a_projection_of_built_objects_under_the_limit_is_mapped(self) -> None:
        payload = {"lines": [{"sku": f"A-{i}", "qty": i} for i in range(2000)]}
        spec = spec_of("lines[*].{item: sku, amount: qty}")
        lines = json.loads(under_limits(spec, payload).body)["value"]
        assert lines[1999] == {"item": "A-1999", "amount": 1999}

    def test_a_value_just_over_the_limit_is_refused_and_just_under_it_is_not(self) -> None:
        limits = MappingLimits(max_body_bytes=1000)
        spec = spec_of("to_string(text)")
        # to_string of a string is the string (1 + quotes); the body adds {"value":...}.
        assert under_limits(spec, {"text": "a" * 980}, limits=limits)
        error = too_large(spec_of("[text]"), {"text": "a" * 1000}, limits=limits)
        assert (error.limit, error.details["maximum"]) == ("intermediate_bytes", 1000)


class TestTheMappedBody:
    def test_a_body_over_the_limit_is_refused_while_it_is_rendered(self) -> None:
        payload = {"lines": [{"text": "t" * 1000} for _ in range(300)]}  # 300 KB of selections
        spec = MappingSpec.model_validate(
            {"output": {"lines": {"each": "lines", "template": {"text": {"path": "text"}}}}}
        )
        error = too_large(spec, payload)
        assert error.limit == "body_bytes"
        assert error.details["field"].startswith("lines[2")  # stopped at about the 260th line
        assert error.details["maximum"] == MAX_BODY_BYTES

    def test_a_spec_may_declare_a_smaller_maximum_for_its_body(self) -> None:
        spec = spec_of("text", max_body_bytes=100)
        assert under_limits(spec, {"text": "a" * 80}).body == b'{"value":"' + b"a" * 80 + b'"}'
        error = too_large(spec, {"text": "a" * 100})
        assert (error.limit, error.details["maximum"]) == ("body_bytes", 100)
        assert spec_of("text").model_dump().keys() == {"output", "output_format", "xml_root", "xml_namespace"}
        assert refusal(lambda: spec_of("text", max_body_bytes=MAX_BODY_BYTES + 1))["loc"] == (
            "max_body_bytes",
        )

    def test_the_serialized_xml_is_measured_exactly(self) -> None:
        # Tags cost more than JSON keys: the estimate passes, the written body does not.
        spec = MappingSpec.model_validate(
            {
                "output_format": "xml",
                "xml_root": "order",
                "max_body_bytes": 90,
                "output": {"number": {"path": "n"}, "currency": {"path": "c"}},
            }
        )
        error = too_large(spec, {"n": "1" * 40, "c": "BRL"})
        assert error.details == {"field": None, "expression": None, "limit": "body_bytes", "maximum": 90}


class TestRunTime:
    def test_a_run_past_its_deadline_stops_naming_where_it_was(self) -> None:
        ticks = itertools.count()  # every look at the clock is a second later
        spec = MappingSpec.model_validate({"output": {"a": {"path": "a"}, "b": {"path": "sort(keys(@))"}}})
        error = too_large(
            spec, {"a": 1, "b": 2}, limits=MappingLimits(max_seconds=4), timer=lambda: float(next(ticks))
        )
        assert (error.limit, error.details["maximum"]) == ("seconds", 4)
        assert error.details["field"] == "b"
        assert "mapping ran longer than 4 s" in error.message

    def test_a_run_within_its_time_is_mapped(self) -> None:
        spec = MappingSpec.model_validate({"output": {"a": {"path": "a"}, "b": {"path": "sort(keys(@))"}}})
        mapped = apply_mapping(spec, {"a": 1, "b": 2}, limits=MappingLimits(max_seconds=4), timer=lambda: 0.0)
        assert json.loads(mapped.body) == {"a": 1, "b": ["a", "b"]}
