"""Run configurations are declared once: every field of a run's configuration (extract, poison, sweep, compare,
membership, audit, utility, analyze) is an option of its command (derived from the field,
engine/cli/config_options.py), every option of those commands is a field or one of the few command-only options
named here, and the options read into the config as typed."""

import argparse
import dataclasses

import pytest

from engine.cli import build_parser
from engine.cli.audit import audit_config
from engine.cli.config_options import option_flag
from engine.cli.extraction import COMPARE_VARIES, extraction_values
from engine.cli.poisoning import poison_values
from engine.config import (
    AnalyzeConfig,
    AuditConfig,
    ComparisonConfig,
    ExtractionConfig,
    MembershipConfig,
    PoisonConfig,
    SweepConfig,
    UtilityConfig,
)
from engine.executors import ExecutorConfig
from engine.errors import ConfigError

SHARED = {"--help", "--data-dir", "--json", "--quiet", "--out"}
# config fields that are no option of their command, each with the reason
NOT_OPTIONS = {"compare": {"base": "the cells' shared ExtractionConfig: its fields are options themselves (below)"}}
# command -> (its config, the options that are not config fields, each with the reason it is not one)
COMMANDS = {
    "extract": (
        ExtractionConfig,
        {
            "--api-base": "a server URL merged into the generator's parameters",
            "--resume": "continues a recorded run: its config comes from the folder",
        },
    ),
    "poison": (
        PoisonConfig,
        {
            "--api-base": "a server URL merged into the generator's parameters",
            "--beta": 'short for --detector-params \'{"mahalanobis": {"beta": B}}\'',
            "--beta-sweep": "an analysis after the run, not part of it",
        },
    ),
    "sweep": (
        SweepConfig,
        {
            "--preset": "the config's starting values",
            "--overwrite": "what to do with another sweep's folder, not a setting of this one",
            **{
                f"--{f.name.replace('_', '-')}": "where cells run (ExecutorConfig)"
                for f in dataclasses.fields(ExecutorConfig)
            },
        },
    ),
    "compare": (
        ComparisonConfig,
        {
            "--preset": "the config's starting values",
            "--api-base": "a server URL merged into the generator's parameters",
            **{
                option_flag(f.name): "base.<field>: every cell's ExtractionConfig"
                for f in dataclasses.fields(ExtractionConfig)
                if f.name not in COMPARE_VARIES
            },
            "--overwrite": "what to do with another comparison's folder",
            **{
                f"--{f.name.replace('_', '-')}": "where cells run (ExecutorConfig)"
                for f in dataclasses.fields(ExecutorConfig)
            },
        },
    ),
    "membership": (
        MembershipConfig,
        {
            "--preset": "the config's starting values",
            "--api-base": "a server URL merged into the generator's parameters",
            "--resume": "continues a recorded run: its config comes from the folder",
        },
    ),
    "utility": (UtilityConfig, {"--api-base": "a server URL merged into the generator's parameters"}),
    "analyze": (AnalyzeConfig, {"--save": "where the tables go, not a setting of the analysis"}),
    "audit": (
        AuditConfig,
        {
            "--preset": "the config's starting values",
            "--only": "which cells of the battery run",
            "--baseline": "a report to compare with, not a setting of the audit",
            "--new-only": "how the gate reads the baseline, not a setting of the audit",
        },
    ),
}


def _sub(command: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return sub.choices[command]


def _long_flags(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The first long flag of each option (aliases such as --attacks for --extraction-attacks count once)."""
    out = {}
    for a in parser._actions:
        longs = [o for o in a.option_strings if o.startswith("--")]
        if longs:
            out[longs[0]] = a
    return out


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_field_is_an_option_and_every_option_a_field(command):
    cls, extra = COMMANDS[command]
    flags = _long_flags(_sub(command))
    fields = {option_flag(f.name) for f in dataclasses.fields(cls) if f.name not in NOT_OPTIONS.get(command, {})}
    assert fields - set(flags) == set(), f"{command}: config fields without an option"
    assert set(flags) - fields - SHARED - set(extra) == set(), f"{command}: options that are no config field"
    for f in dataclasses.fields(cls):  # the option writes the field of the same name
        if f.name != "data_dir" and f.name not in NOT_OPTIONS.get(command, {}):
            assert flags[option_flag(f.name)].dest == f.name


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_option_help_comes_from_the_field(command):
    cls, _ = COMMANDS[command]
    flags = _long_flags(_sub(command))
    for f in cls.describe():
        if f["name"] == "data_dir" or f["name"] in NOT_OPTIONS.get(command, {}):
            continue
        text = flags[option_flag(f["name"])].help
        assert text, f"{command} {option_flag(f['name'])} has no help"
        if f.get("registry"):
            assert f"{{registered:{f['registry']}}}" in text or f["name"] in ("generator", "judge")


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_extract_options_read_as_typed():
    cfg = ExtractionConfig.from_dict(
        extraction_values(
            _args(
                "extract",
                "--top-k",
                "7",
                "--defenses",
                "threshold,summarize",
                "--chunk-size",
                "none",
                "--crr-tau",
                "0.4",
                "--generator",
                "local:smollm2-135m",
                "--generator-params",
                '{"temperature": 0.5}',
                "--defense-params",
                '{"threshold": {"threshold": 0.3}}',
                "--attacker-llm",
                "none",
            )
        )
    )
    assert cfg.top_k == 7 and cfg.defenses == ("threshold", "summarize") and cfg.chunk_size is None
    assert cfg.crr_tau == 0.4 and cfg.attacker_llm == ""
    assert dict(cfg.generator_params) == {"model": "smollm2-135m", "temperature": 0.5}
    assert dict(cfg.defense_params) == {"threshold": {"threshold": 0.3}}


def test_extract_defaults_are_the_configs_but_the_attacker_model():
    cfg = ExtractionConfig.from_dict(extraction_values(_args("extract")))
    default = ExtractionConfig()
    for f in dataclasses.fields(ExtractionConfig):
        if f.name not in ("attacker_llm_params", "generator_params"):
            assert getattr(cfg, f.name) == getattr(default, f.name), f.name
    assert cfg.attacker_llm == "local" and dict(cfg.attacker_llm_params) == {"model": "smollm2-135m"}
    assert not cfg.generator_params


def test_poison_options_read_as_typed():
    cfg = PoisonConfig.from_dict(
        poison_values(
            _args(
                "poison",
                "--chunk-size",
                "0",
                "--detectors",
                "none",
                "--beta",
                "0.05",
                "--detector-params",
                '{"mahalanobis": {"folds": 3}}',
                "--generate",
                "--judge",
                "local:smollm2-135m",
                "--limit",
                "4",
            )
        )
    )
    assert cfg.chunk_size is None and cfg.detectors == () and cfg.limit == 4 and cfg.generate
    assert dict(cfg.detector_params) == {"mahalanobis": {"folds": 3, "beta": 0.05}}
    assert cfg.judge == "local" and dict(cfg.judge_params) == {"model": "smollm2-135m"}
    assert PoisonConfig.from_dict(poison_values(_args("poison"))) == PoisonConfig()


def test_audit_options_over_the_preset_and_the_old_spellings():
    cfg = audit_config(
        _args("audit", "--preset", "audit-quick", "--attacks", "zeng", "--poisoning", "none", "--rounds", "2")
    )
    assert cfg.extraction_attacks == ("zeng",) and cfg.poisoning_attacks == () and cfg.rounds == 2
    same = audit_config(
        _args(
            "audit",
            "--preset",
            "audit-quick",
            "--extraction-attacks",
            "zeng",
            "--poisoning-attacks",
            "none",
            "--rounds",
            "2",
        )
    )
    assert same == cfg


@pytest.mark.parametrize(
    "argv, needle",
    [
        (("extract", "--generator-params", "{nope"), "--generator-params is not valid JSON"),
        (("extract", "--defense-params", "[1, 2]"), "--defense-params must be a JSON object"),
        (("extract", "--top-k", "0"), "top_k: 0 is below the minimum 1"),
        (("poison", "--anchor-fraction", "nan"), "anchor_fraction: expected a finite number"),
    ],
)
def test_bad_values_name_the_option_or_field(argv, needle):
    with pytest.raises(ConfigError, match=needle.replace("[", r"\[")):
        args = _args(*argv)
        values = extraction_values(args) if argv[0] == "extract" else poison_values(args)
        (ExtractionConfig if argv[0] == "extract" else PoisonConfig).from_dict(values)


def test_a_bad_number_is_refused_by_the_parser():
    with pytest.raises(SystemExit):
        _args("extract", "--rounds", "ten")


def test_the_pipeline_page_bounds_k_as_a_poisoning_run_does():
    from engine.pipeline import PipelineConfig

    bound = {f["name"]: f for f in PipelineConfig.describe()}["top_k"]
    assert bound["max"] == {f["name"]: f for f in PoisonConfig.describe()}["top_k"]["max"]


def test_every_extraction_field_has_a_place_in_the_lab():
    """The lab's own widgets, its generated "More settings" and the pages that set the rest cover every field:
    a field added to ExtractionConfig appears in the lab without a page edit."""
    from components.extraction_settings import ELSEWHERE, LAB_FIELDS, more_fields, settings_from_config

    names = [f.name for f in dataclasses.fields(ExtractionConfig)]
    assert sorted(LAB_FIELDS + more_fields() + ELSEWHERE) == sorted(names)
    cfg = ExtractionConfig(crr_tau=0.3, chunk_size=256, retriever="mpnet", attacker_llm="")
    from components.extraction import build_config

    back = build_config(settings_from_config(cfg), "")
    for name in more_fields():
        assert getattr(back, name) == getattr(cfg, name), name


def test_every_poisoning_field_has_a_place_in_the_app():
    """The pipeline page, the poisoning lab's own widgets, its generated "More settings" and the deployment
    cover every PoisonConfig field; the lab's settings make the config they came from."""
    from components.poisoning_settings import (
        ELSEWHERE,
        LAB_FIELDS,
        PIPELINE_FIELDS,
        build_poison_config,
        more_fields,
        more_from_config,
    )

    names = [f.name for f in dataclasses.fields(PoisonConfig)]
    assert sorted(PIPELINE_FIELDS + LAB_FIELDS + more_fields() + ELSEWHERE) == sorted(names)
    cfg = PoisonConfig(anchor_k=7, anchor_fraction=0.4, max_tokens=64, detectors=("mahalanobis",))
    pipeline = {k: getattr(cfg, k) for k in PIPELINE_FIELDS}
    lab = {k: getattr(cfg, k) for k in LAB_FIELDS} | {"more": more_from_config(cfg), "gen_model": "qwen2.5-0.5b"}
    back = build_poison_config(pipeline, lab, "", "qwen2.5-0.5b")
    for name in more_fields() + PIPELINE_FIELDS:
        assert getattr(back, name) == getattr(cfg, name), name


def test_sweep_and_compare_options_read_as_typed():
    from engine.cli.extraction import compare_config
    from engine.cli.poisoning import sweep_config

    cfg, _ = sweep_config(_args("sweep", "--retrievers", "minilm,bm25", "--k", "1", "--chunk-size", "none"))
    assert cfg.retrievers == ("minilm", "bm25") and cfg.k == 1 and cfg.chunk_size is None
    cfg, _ = compare_config(_args("compare", "--configurations", "none,reindex+cascade", "--utility-limit", "none",
                                  "--rounds", "3"))  # fmt: skip
    assert cfg.configurations == ("none", "reindex+cascade") and cfg.utility_limit is None
    assert cfg.base["rounds"] == 3 and cfg.attacks == ("rag-thief",)
    cfg, _ = compare_config(_args("compare", "--configurations", "none"))
    assert cfg.configurations == ("none",)  # the no-defense configuration, not an empty grid
    cfg, _ = compare_config(_args("compare"))
    assert cfg.configurations == ("none", "threshold", "system-prompt")  # the command's quick default grid
    cfg, _ = compare_config(_args("compare", "--preset", "ragfort-healthcaremagic", "--repeats", "2"))
    assert cfg.repeats == 2 and "reindex+cascade" in cfg.configurations  # the preset's grid, the option on top


def test_compare_takes_every_base_field_as_an_option():
    """Every ExtractionConfig field but the ones a comparison varies is an option of ``compare`` that sets every
    cell's base, over a preset's; a generator spec naming the preset's generator keeps its other parameters."""
    from engine.cli.extraction import compare_config

    flags = _long_flags(_sub("compare"))
    for f in dataclasses.fields(ExtractionConfig):
        if f.name not in COMPARE_VARIES:
            assert flags[option_flag(f.name)].dest == f.name
    cfg, _ = compare_config(_args("compare", "--preset", "ragfort-paper-scale", "--max-tokens", "32",
                                  "--answer-budget", "fixed", "--generator", "local:qwen2.5-0.5b", "--top-k", "2",
                                  "--attacker-llm-params", '{"max_tokens": 16}'))  # fmt: skip
    b = cfg.base
    assert (b["max_tokens"], b["answer_budget"], b["top_k"]) == (32, "fixed", 2)
    assert b["generator"] == "local" and b["generator_params"] == {"model": "qwen2.5-0.5b", "n_ctx": 4096}
    assert b["attacker_llm_params"] == {"max_tokens": 16}  # a mapping given replaces the preset's
    assert b["rounds"] == 200 and cfg.kbs == ("healthcaremagic", "enron")  # the rest is the preset's
    cfg, _ = compare_config(_args("compare", "--generator", "openai/gpt-4o-mini", "--api-base", "http://h:8000/v1"))
    assert cfg.base["generator"] != "local" and cfg.base["generator_params"]["api_base"] == "http://h:8000/v1"
    assert cfg.base["kb"] == "clinic_records" and cfg.base["rounds"] == 10  # the command's defaults
    with pytest.raises(ConfigError, match="max_tokens"):
        compare_config(_args("compare", "--max-tokens", "0"))
