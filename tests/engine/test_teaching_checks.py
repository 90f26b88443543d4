"""Teaching level 3's check reads like a sentence a student can act on: numbers as the page shows them, the PII
counts that decide a tie shown beside CRR, and the ACC change with its sign (defended − undefended)."""

from engine.analysis.teaching import check_level3, metric_text
from engine.metrics.catalog import MK


def _row(conf: str, crr: float, pii: int, acc: float) -> dict:
    return {"configuration": conf, MK.CRR: crr, MK.PII_LEAKED: pii, MK.UTILITY_ACC: acc}


def test_a_defense_that_leaks_as_much_says_so_in_a_sentence_with_readable_numbers():
    res = check_level3([_row("none", 0.00831025, 4, 0.6666667), _row("system-prompt", 0.00831025, 3, 1.0)])
    assert not res["met"] and res["decided_by"] == "CRR"
    assert res["reason"] == "The defended system leaked as much as the undefended one (CRR 0.008 vs 0.008)."
    m = res["metrics"]
    assert m["PII items (undefended)"] == 4 and m["PII items (defended)"] == 3
    assert metric_text("ACC change", m["ACC change"]) == "+0.33"  # the defended system answered better
    assert metric_text("CRR (defended)", m["CRR (defended)"]) == "0.008"
    assert metric_text("PII items (defended)", m["PII items (defended)"]) == "3"


def test_without_a_recovered_chunk_the_pii_count_decides_and_a_utility_cost_is_negative():
    res = check_level3([_row("none", 0.0, 5, 1.0), _row("intent-block", 0.0, 0, 0.3333333)])
    assert res["decided_by"] == "PII items leaked" and not res["met"]
    assert res["reason"] == "ACC dropped by 0.67, more than the tolerance 0.34."
    assert metric_text("ACC change", res["metrics"]["ACC change"]) == "-0.67"
    met = check_level3([_row("none", 0.0, 5, 1.0), _row("threshold", 0.0, 1, 1.0)])
    assert met["met"] and met["reason"] == ""
    assert metric_text("ACC change", -0.0) == metric_text("ACC change", -0.001) == "0.00"  # never "-0.00"


def test_level_four_is_met_only_by_finding_the_deployment_without_a_filter():
    """A right guess about a deployment that filters says so and sends the player on; a wrong guess says what
    the log would show under the guessed filter (one sentence, no double negative); naming the unfiltered one
    meets the goal."""
    import pytest

    from engine.analysis.teaching import check_level4, run_level3
    from engine.errors import ConfigError

    found = check_level4([], "none", "none")
    assert found["met"] and found["identified"] and found["mode"] == "none" and found["reason"] == ""
    right = check_level4([], "after", "after")
    assert not right["met"] and right["identified"] and "elsewhere" in right["reason"]
    wrong = check_level4([], "none", "inside")
    assert not wrong["met"] and not wrong["identified"] and wrong["mode"] is None
    assert wrong["reason"].startswith("Not this one: with no filter at all, other tenants' chunks reach the context")
    assert "not filter not" not in wrong["reason"]
    for nothing in ([], ["none"]):  # checked before anything runs
        with pytest.raises(ConfigError, match="choose at least one defense"):
            run_level3(nothing)
