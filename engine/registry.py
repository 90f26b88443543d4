"""One small generic registry for every plugin kind (retrievers, attacks, detectors ...).

Plugins register explicitly with ``@REGISTRY.register("name")``; nothing is looked up by
dotted-string import. Every plugin class has a nested ``Params`` dataclass and a docstring
whose first line describes it and which cites its source.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Generic, Mapping, Protocol, TypeVar

from .errors import UnknownNameError
from .params import Params


class Plugin(Protocol):
    """What every registered class has: a ``name`` (set on registration) and a nested ``Params`` dataclass."""

    name: ClassVar[str]
    Params: ClassVar[type[Params]]

    def __init__(self, params: Any) -> None: ...


T = TypeVar("T", bound=Plugin)


class Registry(Generic[T]):
    """Name → plugin class for one plugin kind; ``kind`` names the kind in error messages."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, type[T]] = {}

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        """Class decorator registering a plugin under ``name`` (and setting its ``name``); refuses duplicates and
        classes without a nested ``Params`` or a docstring."""

        def deco(cls: type[T]) -> type[T]:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            if not (isinstance(getattr(cls, "Params", None), type) and issubclass(cls.Params, Params)):
                raise TypeError(f"{cls.__name__} needs a nested Params dataclass")
            if not (cls.__doc__ or "").strip():
                raise TypeError(f"{cls.__name__} needs a docstring")
            cls.name = name
            self._items[name] = cls
            return cls

        return deco

    def unregister(self, name: str) -> None:
        """Remove a plugin (a test's throwaway plugin, or one a user loaded and no longer wants)."""
        self._items.pop(name, None)

    def names(self) -> list[str]:
        """Registered names, sorted (what the UI lists and errors suggest)."""
        return sorted(self._items)

    def __contains__(self, name: str) -> bool:
        return name in self._items

    def get(self, name: str) -> type[T]:
        """The class registered as ``name``; an unknown name raises UnknownNameError listing the known ones."""
        try:
            return self._items[name]
        except KeyError:
            raise UnknownNameError(f"unknown {self.kind} {name!r} (choose from: {', '.join(self.names())})") from None

    def create(self, name: str, params: Params | Mapping[str, Any] | None = None) -> T:
        """An instance of plugin ``name``; ``params`` is a ready ``Params`` or a mapping validated against the
        class's ``Params`` (None: defaults)."""
        cls = self.get(name)
        if not isinstance(params, Params):
            params = cls.Params.from_dict(params, where=f"{self.kind} {name}")
        return cls(params)

    def describe(self, name: str) -> str:
        """The first line of the plugin's docstring: its one-line description in ``list`` and the UI."""
        return (self.get(name).__doc__ or "").strip().splitlines()[0]

    def source(self, name: str) -> str:
        """The citation in the plugin's docstring (its ``Source:`` paragraph, up to the end of its first
        sentence that names a venue or section), or '' when it cites none."""
        import re

        doc = " ".join((self.get(name).__doc__ or "").split())
        m = re.search(r"Source[s]?:\s*(.+?)(?:(?<![\d§])\.\s+[A-Z][a-z]+\b(?! et al)|$)", doc)
        return m.group(1).strip().rstrip(".") if m else ""


# Every plugin kind by the name the CLI's help, the config fields (``param(registry=...)``) and the forms use,
# with the module and attribute of its registry: importing a registry imports its plugins, so a caller that only
# names a kind (a parser being built) imports nothing until the names are asked for.
REGISTRIES = {
    "defenses": ("engine.defenses", "DEFENSES"),
    "extraction-attacks": ("engine.attacks.extraction", "EXTRACTION_ATTACKS"),
    "poisoning-attacks": ("engine.attacks.poisoning", "POISONING_ATTACKS"),
    "membership-attacks": ("engine.attacks.membership", "MEMBERSHIP_ATTACKS"),
    "detectors": ("engine.detectors", "DETECTORS"),
    "retrievers": ("engine.embedders", "RETRIEVERS"),
    "targets": ("engine.targets", "TARGETS"),
    "generators": ("engine.generators", "GENERATORS"),
}


def registered(kind: str) -> list[str]:
    """The names registered under ``kind`` (a key of :data:`REGISTRIES`)."""
    import importlib

    module, attr = REGISTRIES[kind]
    return list(getattr(importlib.import_module(module), attr).names())
