"""The command line's help lists what is registered, from the registries (never a hand-written list that drifts),
and building the parser imports no plugin."""

import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import build_parser
from engine.cli.common import REGISTRIES, registered

REPO = Path(__file__).resolve().parents[2]
# subcommand -> the registries its help must list in full
EXPECTED = {
    "extract": ("extraction-attacks", "defenses", "retrievers"),
    "compare": ("extraction-attacks", "defenses"),
    "utility": ("defenses", "retrievers"),
    "poison": ("poisoning-attacks", "detectors", "defenses", "retrievers"),
    "sweep": ("retrievers", "detectors"),
    "audit": ("targets", "extraction-attacks", "poisoning-attacks"),
}


def _help(command: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return " ".join(sub.choices[command].format_help().split())  # argparse wraps; join the lines


@pytest.mark.parametrize("command", sorted(EXPECTED))
def test_help_lists_every_registered_name(command):
    text = _help(command)
    for kind in EXPECTED[command]:
        names = registered(kind)
        assert names, kind
        assert ", ".join(names) in text.replace("- ", "-"), f"{command} --help does not list every {kind}: {names}"


def test_every_registry_kind_resolves():
    for kind in REGISTRIES:
        assert registered(kind)


def test_building_the_parser_imports_no_plugin():
    code = (
        "import sys; from engine.cli import build_parser; build_parser(); "
        "loaded = [m for m in ('engine.defenses', 'engine.attacks.extraction', 'engine.attacks.poisoning', "
        "'engine.detectors', 'engine.embedders', 'engine.targets', 'torch') if m in sys.modules]; "
        "assert not loaded, loaded"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert p.returncode == 0, p.stderr[-2000:]
