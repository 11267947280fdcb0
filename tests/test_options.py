"""Typed options (``cltr.options``): declaration, validation of every supported type, the
JSON record, and refusal of what cannot be an option."""

import dataclasses
import math

import pytest

from cltr.options import Options, option


@dataclasses.dataclass(frozen=True)
class Example(Options):
    flag: bool = option(False, "A switch.")
    count: int = option(3, "A count.", low=1)
    rate: float = option(0.5, "A rate in [0, 1).", low=0, high=1, high_open=True)
    scale: float | None = option(None, "A positive scale, or none.", low=0, low_open=True)
    kind: str = option("a", "One of a, b.", choices=("a", "b"))
    sizes: tuple[int, ...] = option(
        (2, 4), "Sizes, 'a,b'.", low=1, parse=lambda text: [int(p) for p in text.split(",")]
    )
    weights: tuple[float, ...] | None = option(None, "Weights.")


def test_defaults_and_round_trip():
    default = Example.from_dict({})
    assert default == Example() and default.sizes == (2, 4)
    record = default.to_dict()
    assert record == {
        "flag": False,
        "count": 3,
        "rate": 0.5,
        "scale": None,
        "kind": "a",
        "sizes": [2, 4],
        "weights": None,
    }
    assert Example.from_dict(record) == default  # JSON-able and back
    changed = default.replace(count=7, sizes=[1])
    assert changed.count == 7 and changed.sizes == (1,) and default.count == 3
    assert [f.name for f in Example.option_fields()] == list(record)
    assert {f.name: f.cli_name for f in Example.option_fields()}["scale"] == "--scale"


def test_values_are_converted_as_declared():
    values = Example.from_dict(
        {"flag": True, "count": 5.0, "rate": 0, "scale": 2, "kind": "b", "sizes": "3,5", "weights": [1, 0.5]}
    )
    assert values.count == 5 and isinstance(values.count, int)
    assert values.rate == 0.0 and isinstance(values.rate, float) and values.scale == 2.0
    assert values.sizes == (3, 5) and values.weights == (1.0, 0.5)


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("flag", 1, r"flag must be true or false, found 1"),
        ("count", 2.5, r"count must be an integer >= 1, found 2.5"),
        ("count", "3", r"count must be an integer >= 1, found '3'"),
        ("count", True, r"count must be an integer >= 1, found True"),
        ("count", 0, r"count must be an integer >= 1, found 0"),
        ("count", None, r"count must be an integer >= 1, found None"),
        ("rate", 1.0, r"rate must be a finite number >= 0 and < 1, found 1.0"),
        ("rate", -0.1, r"rate must be a finite number >= 0 and < 1, found -0.1"),
        ("rate", math.nan, r"rate must be a finite number >= 0 and < 1, found nan"),
        ("rate", math.inf, r"rate must be a finite number >= 0 and < 1, found inf"),
        ("scale", 0, r"scale must be a finite number > 0 \(or none\), found 0"),
        ("kind", "c", r"kind must be one of a, b, found 'c'"),
        ("kind", 1, r"kind must be one of a, b, found 1"),
        ("sizes", 3, r"sizes must be a list of integers >= 1, found 3"),
        ("sizes", [1, 0], r"sizes must be a list of integers >= 1, found \[1, 0\]"),
        ("sizes", "1,x", r"sizes: invalid literal for int\(\)"),
        ("weights", ["a"], r"weights must be a list of finite numbers \(or none\), found \['a'\]"),
        ("weights", [math.nan], r"weights must be a list of finite numbers \(or none\), found \[nan\]"),
    ],
)
def test_type_and_range_errors_say_what_must_hold_and_what_was_found(name, value, message):
    with pytest.raises(ValueError, match=r"^my options: " + message):
        Example.from_dict({name: value}, where="my options")


def test_unknown_names_are_refused_with_the_valid_ones():
    with pytest.raises(
        ValueError,
        match=r"unknown option 'cuont' \(did you mean 'count'\?\); "
        r"valid: flag, count, rate, scale, kind, sizes, weights",
    ):
        Example.from_dict({"cuont": 3})
    with pytest.raises(ValueError, match=r"unknown options 'colour', 'cuont' \(did you mean 'count'\?\)"):
        Example.from_dict({"cuont": 3, "colour": "red"})


def test_undeclared_or_unsupported_fields_are_refused():
    @dataclasses.dataclass(frozen=True)
    class Bare(Options):
        plain: int = 3

    with pytest.raises(TypeError, match=r"Bare.plain must be declared with cltr.options.option"):
        Bare.option_fields()

    @dataclasses.dataclass(frozen=True)
    class Odd(Options):
        mapping: dict = option(None, "Not supported.")

    with pytest.raises(TypeError, match="Odd.mapping: unsupported option type"):
        Odd.option_fields()

    @dataclasses.dataclass(frozen=True)
    class Pair(Options):
        pair: tuple[int, int] = option((1, 2), "A fixed-length tuple.")

    with pytest.raises(TypeError, match=r"Pair.pair: sequence options are tuple\[T, ...\]"):
        Pair.option_fields()


def _even_text(text: str) -> str:
    if not text.isdigit() or int(text) % 2:
        raise ValueError(f"{text!r} is not an even number")
    return text


@dataclasses.dataclass(frozen=True)
class Checked(Options):
    size: str = option("2", "An even number, as text.", parse=_even_text)


def test_the_parse_of_a_str_option_checks_it():
    assert Checked.from_dict({"size": "4"}).size == "4"
    with pytest.raises(ValueError, match="here: size: '3' is not an even number"):
        Checked.from_dict({"size": "3"}, where="here")
    with pytest.raises(ValueError, match="size must be a string, found 4"):
        Checked.from_dict({"size": 4})


def test_narrowed_declares_the_named_fields_anew_and_leaves_the_rest_and_the_base():
    narrow = Example.narrowed("Narrow", kind={"choices": ("a",), "help": "Only a."}, count={"default": 5})
    assert issubclass(narrow, Example) and narrow.__name__ == "Narrow" and narrow.__module__ == Example.__module__
    fields = {f.name: f for f in narrow.option_fields()}
    assert fields["kind"].spec.allowed() == ("a",) and fields["kind"].spec.text() == "Only a."
    assert fields["count"].default == 5 and fields["count"].spec.low == Example.option_fields()[1].spec.low
    assert [f.name for f in narrow.option_fields()] == [f.name for f in Example.option_fields()]
    assert narrow.from_dict({}).count == 5 and Example.from_dict({}).count == 3
    with pytest.raises(ValueError, match="kind must be one of a, found 'b'"):
        narrow.from_dict({"kind": "b"})
    assert Example.from_dict({"kind": "b"}).kind == "b"
