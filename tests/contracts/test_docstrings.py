"""Every public definition of engine/ and components/ says what it does: each public function, class, method and
property defined there has a docstring, its own or the one of the base-class method it overrides (a nested
``Params`` dataclass is described by its fields' help instead)."""

import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _modules(top: str) -> list[str]:
    out = []
    for p in sorted((ROOT / top).rglob("*.py")):
        if p.name == "__main__.py":
            continue
        out.append(".".join(p.relative_to(ROOT).with_suffix("").parts).replace(".__init__", ""))
    return out


def _doc_of(cls: type, name: str) -> str | None:
    """The docstring of ``cls.name``, inherited from the first base that defines it when it has none."""
    for klass in cls.__mro__:
        member = vars(klass).get(name)
        if member is None:
            continue
        target = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
        if inspect.getdoc(target):
            return inspect.getdoc(target)
    return None


def _undocumented(module_name: str) -> list[str]:
    mod = importlib.import_module(module_name)
    missing = []
    for name, obj in vars(mod).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module_name:
            continue
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if not inspect.getdoc(obj):
            missing.append(f"{module_name}.{name}")
        if inspect.isclass(obj):
            for m, member in vars(obj).items():
                if m.startswith("_") or m == "Params":
                    continue
                fn = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
                if (inspect.isfunction(fn) or isinstance(member, property)) and not _doc_of(obj, m):
                    missing.append(f"{module_name}.{name}.{m}")
    return missing


@pytest.mark.parametrize("top", ["engine", "components"])
def test_every_public_definition_has_a_docstring(top):
    missing = [m for name in _modules(top) for m in _undocumented(name)]
    assert missing == [], f"public definitions without a docstring: {missing}"
