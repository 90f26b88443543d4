"""A comparison with a membership attack: per configuration, the membership AUROC beside CRR (real models, a real
Chroma store), kept in comparison.json, read back typed, shown in the table, and not re-run on resume."""

import json

from engine.compare import run_comparison
from engine.config import ComparisonConfig
from engine.metrics.catalog import MK
from engine.views.comparison import comparison_table


def test_membership_auroc_beside_crr_per_configuration(tmp_path, monkeypatch):
    cfg = ComparisonConfig(
        base={
            "rounds": 1,
            "max_tokens": 32,
            "answer_budget": "fixed",  # what is recorded and resumed is the point here, not what an answer copies
            "attacker_llm": "",
            "generator_params": {"model": "smollm2-135m"},
            "top_k": 2,
        },
        configurations=("none", "detect-and-hide"),
        attacks=("zeng",),
        utility_limit=1,
        membership_attack="direct",
        membership_records=2,
    )
    assert cfg.membership_config("none").max_tokens == 32  # the same answer length as the extraction's system
    rows = run_comparison(cfg, out_dir=tmp_path)
    assert [r.configuration for r in rows] == ["none", "detect-and-hide"]
    for r in rows:
        m = r.membership
        assert m["attack"] == "direct" and m["decisions"] == 4 and m["queries"] == 4
        assert 0.0 <= m["auroc"] <= 1.0 and m["auroc_ci"][0] <= m["auroc"] <= m["auroc_ci"][1]
        assert r[MK.MEMBERSHIP_AUROC] == m["auroc"]  # flat, as comparison.json holds it
    saved = json.loads((tmp_path / "comparison.json").read_text())
    assert saved["config"]["membership_attack"] == "direct"
    assert all(run[MK.MEMBERSHIP_AUROC] is not None for run in saved["runs"])
    table = comparison_table([r.to_dict() for r in rows])
    cols = list(table.columns)
    assert cols.index(MK.MEMBERSHIP_AUROC) == cols.index(MK.CRR_VS_NONE) + 1
    # resumed: every cell and every configuration's membership is recorded, nothing runs again
    import engine.compare as compare

    def no_rerun(*a, **k):
        raise AssertionError("membership re-run on resume")

    monkeypatch.setattr(compare, "membership_of", no_rerun)
    again = run_comparison(cfg, out_dir=tmp_path)
    assert [r.membership for r in again] == [r.membership for r in rows]
    assert "membership_attack" not in ComparisonConfig().to_dict()  # the record of comparisons without it
