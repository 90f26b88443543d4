import pytest

from engine.config import PoisonConfig
from engine.errors import ConfigError, UnknownNameError
from engine.params import Params, param
from engine.registry import Registry


class Demo(Params):
    n: int = param(3, min=1, max=10, help="n")
    mode: str = param("a", choices=("a", "b"), help="mode")
    xs: tuple[float, ...] = param((0.1,), help="xs")


def test_params_validate_types_bounds_choices():
    assert Demo().n == 3
    assert Demo(xs="0.5, 0.7").xs == (0.5, 0.7)
    with pytest.raises(ConfigError, match="n: 0 is below the minimum 1"):
        Demo(n=0)
    with pytest.raises(ConfigError, match="expected an integer"):
        Demo(n="three")
    assert Demo(n="4").n == 4
    with pytest.raises(ConfigError, match="'c' is not one of a, b"):
        Demo(mode="c")


def test_from_dict_names_unknown_key():
    with pytest.raises(ConfigError, match="unknown parameter 'colour'"):
        Demo.from_dict({"colour": 1}, where="demo")


def test_params_are_frozen_and_roundtrip():
    d = Demo(n=4)
    with pytest.raises(Exception):
        d.n = 5
    assert Demo.from_dict(d.to_dict()) == d
    assert d.replace(n=5).n == 5


def test_registry_unknown_name_lists_choices():
    reg = Registry("thing")

    @reg.register("one")
    class One:
        """One thing. Source: nowhere."""

        Params = Demo

        def __init__(self, params):
            self.params = params

    assert reg.create("one", {"n": 2}).params.n == 2
    with pytest.raises(UnknownNameError, match="unknown thing 'two' \\(choose from: one\\)"):
        reg.get("two")


def test_poison_config_cross_field_check():
    with pytest.raises(ConfigError, match="chunk_overlap"):
        PoisonConfig(chunk_size=32, chunk_overlap=32)
