"""Saved comparisons and runs, listed and opened without running anything: a damaged record is listed with why (its
folder of runs is not forgotten), opening it is one clear error, and no shape of file breaks a list."""

import json

import pytest

from engine.errors import ConfigError
from engine.saved import comparison_state, list_comparisons, list_runs
from engine.views.comparison import load_comparison

GOOD = {
    "config": {"base": {"kb": "clinic_records"}, "attacks": ["zeng"], "configurations": ["none", "system-prompt"]},
    "rows": [{"attack": "zeng", "configuration": "none", "crr": 0.1}],
    "runs": [{"attack": "zeng", "configuration": "none"}],
    "complete": False,
}


@pytest.mark.parametrize(
    "content",
    ["[]", '{"config": null, "rows": []}', json.dumps({**GOOD, "config": {**GOOD["config"], "repeats": "two"}}), "{"],
)
def test_a_damaged_record_is_listed_with_why_beside_the_good_ones(tmp_path, content):
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "comparison.json").write_text(json.dumps(GOOD))
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "comparison.json").write_text(content)
    listed = {c["id"]: c for c in list_comparisons(tmp_path)}
    assert comparison_state(listed["good"]) == " · unfinished (1 of 2 runs)"
    if content == '{"config": null, "rows": []}':  # no settings, but a record: listed as it is
        assert not listed["bad"].get("damaged")
    elif "repeats" in content:  # readable rows, settings this version refuses: Open shows it, Resume says why
        assert comparison_state(listed["bad"]) == " · unfinished (1 of ? runs)"
        from engine.config import ComparisonConfig

        conf, rows = load_comparison(tmp_path / "bad")
        with pytest.raises(ConfigError, match="repeats"):
            ComparisonConfig.from_dict(conf)
    else:
        assert listed["bad"]["damaged"] and comparison_state(listed["bad"]) == " · damaged: Open says why"
        with pytest.raises(ConfigError):
            load_comparison(tmp_path / "bad")


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"attack": "zeng", "configuration": "none"}], "row 1 has no 'crr'"),
        ({"attack": "zeng"}, "rows are not a list"),
        (["text"], "row 1 has no 'attack'"),
    ],
)
def test_opening_a_record_with_damaged_rows_is_one_clear_error(tmp_path, rows, message):
    (tmp_path / "comparison.json").write_text(json.dumps({**GOOD, "rows": rows}))
    with pytest.raises(ConfigError, match=message):
        load_comparison(tmp_path)


def test_a_run_with_a_damaged_summary_or_first_line_does_not_break_the_list(tmp_path):
    run = tmp_path / "r1"
    run.mkdir()
    first = {"kind": "run_started", "config": {"kb": "clinic_records"}, "manifest": {"kind": "membership"}}
    (run / "events.jsonl").write_text(json.dumps(first) + "\n")
    (run / "summary.json").write_text("[]")
    (tmp_path / "r2").mkdir()
    (tmp_path / "r2" / "events.jsonl").write_text(json.dumps({"config": [], "manifest": "x"}) + "\n")
    (row,) = list_runs(tmp_path)
    assert row["run_id"] == "r1" and row["kind"] == "membership" and "auroc" not in row
