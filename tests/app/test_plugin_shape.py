"""One shape for every plugin: a plugin registered in one file (plus its registration line) shows up with its
parameters on every page where its kind appears, with no page edit. Throwaway plugins of each kind are
registered for this test only, then found through AppTest by their widgets."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.attacks.extraction import EXTRACTION_ATTACKS, ExtractionAgent
from engine.attacks.poisoning import POISONING_ATTACKS
from engine.attacks.poisoning.base import PoisoningAttack
from engine.defenses import DEFENSES
from engine.defenses.base import Defense
from engine.detectors import DETECTORS
from engine.detectors.base import Detector
from engine.generators import GENERATORS
from engine.generators.base import Generator
from engine.params import Params, param
from engine.targets import TARGETS
from engine.targets.base import Target

REPO = Path(__file__).resolve().parents[2]


class ThrowawayPoisoning(PoisoningAttack):
    """A test-only poisoning attack. Source: this test."""

    class Params(Params):
        zz_poison_knob: int = param(7, min=1, max=9, help="Throwaway poisoning knob")


class ThrowawayDetector(Detector):
    """A test-only detector. Source: this test."""

    class Params(Detector.Params):
        zz_detector_knob: float = param(0.25, min=0.0, max=1.0, help="Throwaway detector knob")


class ThrowawayDefense(Defense):
    """A test-only defense. Source: this test."""

    stage = "retrieval"

    class Params(Params):
        zz_defense_knob: int = param(3, min=1, max=10, help="Throwaway defense knob")

    def filter(self, query, chunks, ctx):
        return list(chunks), self.action("passed")


class ThrowawayAgent(ExtractionAgent):
    """A test-only extraction attack. Source: this test."""

    class Params(ExtractionAgent.Params):
        zz_agent_knob: str = param("hello", help="Throwaway agent knob")


class ThrowawayGenerator(Generator):
    """A test-only generator. Source: this test."""

    class Params(Params):
        zz_generator_knob: bool = param(True, help="Throwaway generator knob")


class ThrowawayTarget(Target):
    """A test-only audit target. Source: this test."""

    class Params(Params):
        zz_target_knob: int = param(3, min=1, max=9, help="Throwaway target knob")


PLUGINS = [
    (POISONING_ATTACKS, "zz-poison", ThrowawayPoisoning),
    (DETECTORS, "zz-detector", ThrowawayDetector),
    (DEFENSES, "zz-defense", ThrowawayDefense),
    (EXTRACTION_ATTACKS, "zz-agent", ThrowawayAgent),
    (GENERATORS, "zz-generator", ThrowawayGenerator),
    (TARGETS, "zz-target", ThrowawayTarget),
]


@pytest.fixture
def throwaway_plugins():
    for registry, name, cls in PLUGINS:
        registry.register(name)(cls)
    try:
        yield
    finally:
        for registry, name, _ in PLUGINS:
            registry.unregister(name)


def page(path: str) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.run()
    at.switch_page(path).run()
    assert not at.exception, at.exception
    return at


def offers(widget, name: str) -> bool:
    """Whether a select widget offers ``name`` (options may be 'name — description')."""
    return any(str(o) == name or str(o).startswith(f"{name} — ") for o in widget.options)


def labels(at: AppTest) -> set[str]:
    return {
        w.label
        for kind in ("number_input", "text_input", "text_area", "checkbox", "selectbox", "toggle", "multiselect")
        for w in getattr(at, kind)
    }


def test_a_plugin_of_each_kind_appears_with_its_parameters_on_every_page(throwaway_plugins):
    # poisoning lab: the attack is offered, and its parameter appears once chosen; the detector's too
    at = page("pages/poisoning_lab.py")
    attack = next(s for s in at.selectbox if s.label == "Attack")
    assert offers(attack, "zz-poison")
    attack.set_value("zz-poison").run()
    assert not at.exception and "Zz poison knob" in labels(at)
    assert offers(next(m for m in at.multiselect if m.label == "Detectors"), "zz-detector")
    assert "Zz detector knob" in labels(at)
    # extraction lab: the attack, the defense (toggle and parameters), the generator (option and parameters)
    at = page("pages/extraction_lab.py")
    attack = next(s for s in at.selectbox if s.label == "Attack")
    assert offers(attack, "zz-agent")
    attack.set_value("zz-agent").run()
    assert not at.exception
    found = labels(at)
    assert {"Zz agent knob", "zz-defense", "Zz defense knob"} <= found
    generator = next(s for s in at.selectbox if s.label == "Generator")
    assert offers(generator, "zz-generator") and "Zz generator knob" not in found  # its form once it is chosen
    generator.set_value("zz-generator").run()
    assert not at.exception and "Zz generator knob" in labels(at)
    # defense comparison: the attack and the defense's parameters
    at = page("pages/defense_comparison.py")
    assert offers(next(m for m in at.multiselect if m.label == "Attacks"), "zz-agent")
    assert "Zz defense knob" in labels(at)


def test_a_target_added_by_the_recipe_appears_in_the_cli_presets_and_the_audit_page(
    throwaway_plugins, tmp_path, capsys
):
    import json

    from engine.audit import Audit
    from engine.cli import main
    from engine.config import load_preset
    from engine.errors import ConfigError

    # the command line lists it
    assert main(["list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert "zz-target" in listed["audit_targets"] and listed["sources"]["audit_targets"]["zz-target"]
    # a preset names it with its parameters, validated when the audit starts
    preset = tmp_path / "zz.yaml"
    preset.write_text(
        "kind: audit\ntarget: zz-target\ntarget_params: {zz_target_knob: 5}\n"
        "extraction_attacks: [zeng]\npoisoning_attacks: []\n"
    )
    kind, cfg, _ = load_preset(str(preset))
    assert kind == "audit" and cfg.target == "zz-target"
    Audit(cfg, tmp_path / "out")
    with pytest.raises(ConfigError, match="zz_target_knob: 50 is above the maximum 9"):
        Audit(cfg.replace(target_params={"zz_target_knob": 50}), tmp_path / "out")
    # the Audit page offers it, with its parameter
    at = page("pages/audit.py")
    kinds = at.selectbox(key="audit_kind")
    assert offers(kinds, "zz-target") or "zz-target" in kinds.options
    kinds.set_value("zz-target").run()
    assert not at.exception and "Zz target knob" in labels(at)
