"""Figure builders and table shaping of the defense comparison (synthetic rows, no models)."""

from types import SimpleNamespace

import numpy as np
import pytest

from engine.views.comparison import comparison_table, parse_configurations, uses_reindex
from engine.compare import ablation_direction, add_ratios, aggregate_runs, average_ablation_direction
from engine.errors import ConfigError
from engine.plots.defenses import cluster_view, comparison_curves, ratio_bars, tradeoff_scatter


def _row(attack, conf, crr, acc):
    return {
        "attack": attack,
        "configuration": conf,
        "defenses": [d for d in conf.split("+") if d != "none"],
        "crr": crr,
        "retrieved_coverage": crr * 2,
        "repeat_contexts": 1,
        "rouge_contexts": 1,
        "semantic_leak": crr,
        "pii_leaked": 3,
        "rounds": 3,
        "kb_size": 10,
        "blocked": 0,
        "utility_acc": acc,
        "utility_faithfulness": acc,
        "curves": {"crr": [crr / 3, crr / 2, crr], "pii_leaked": [1, 2, 3]},
    }


@pytest.fixture
def rows():
    r = [
        _row("zeng", "none", 0.3, 0.8),
        _row("zeng", "reindex", 0.2, 0.8),
        _row("zeng", "cascade", 0.15, 0.6),
        _row("zeng", "reindex+cascade", 0.1, 0.6),
    ]
    add_ratios(r)
    return r


def test_ablation_direction_per_attack_and_on_the_relative_average(rows):
    assert ablation_direction(rows, "zeng")["holds"] is True
    worm = [
        _row("worm", c, v, 0.8)
        for c, v in (("none", 0.2), ("reindex", 0.2), ("cascade", 0.1), ("reindex+cascade", 0.1))
    ]
    assert ablation_direction(worm, "worm")["holds"] is False
    avg = average_ablation_direction(rows + worm)
    # zeng ratios 1 / .667 / .5 / .333, worm 1 / 1 / .5 / .5 → means 1 / .833 / .5 / .417
    assert avg["attacks"] == 2 and avg["holds"] is True
    assert avg["ratios"] == pytest.approx({"none": 1.0, "reindex": 5 / 6, "cascade": 0.5, "reindex+cascade": 5 / 12})
    silent = [_row("pair", c, 0.0, 0.8) for c in ("none", "reindex", "cascade", "reindex+cascade")]
    assert average_ablation_direction(rows + silent)["attacks"] == 1  # no ratio without an undefended leak
    assert average_ablation_direction(silent)["holds"] is None
    assert average_ablation_direction(rows[:2])["holds"] is None  # configurations missing
    assert avg["not_below_none"] == [] and ablation_direction(rows, "zeng")["not_below_none"] == []
    # the formula only needs the smaller single path below none: a reindexing that leaks more still "holds"
    thief = [
        _row("rag-thief", c, v, 0.8)
        for c, v in (("none", 0.3), ("reindex", 0.7), ("cascade", 0.2), ("reindex+cascade", 0.1))
    ]
    check = ablation_direction(thief, "rag-thief")
    assert check["holds"] is True and check["not_below_none"] == ["reindex"]
    assert average_ablation_direction(thief + worm)["not_below_none"] == ["reindex"]


def test_repeated_runs_aggregate_to_means_with_their_spread():
    a = {
        **_row("worm", "cascade", 0.2, 0.8),
        "seed": 0,
        "run_id": "r0",
        "seconds": {"generation": 10.0},
        "cascade": {"accepted": 3.0, "flops_verifier": 10.0},
    }
    b = {
        **_row("worm", "cascade", 0.4, 0.8),
        "seed": 1,
        "run_id": "r1",
        "seconds": {"generation": 30.0},
        "cascade": {"accepted": 5.0, "flops_verifier": 30.0},
        "pii_leaked": 4,
    }
    b["curves"] = {"crr": [0.1, 0.4], "pii_leaked": [1, 4]}  # stopped a round early
    solo = {**_row("worm", "none", 0.5, 0.9), "seed": 0, "run_id": "r2"}
    rows = aggregate_runs([a, solo, b])
    assert [(r["configuration"], r["n_runs"]) for r in rows] == [("cascade", 2), ("none", 1)]
    m = rows[0]
    assert m["crr"] == pytest.approx(0.3) and m["crr_std"] == pytest.approx(0.1414, abs=1e-4)
    assert m["pii_leaked"] == pytest.approx(3.5) and m["seeds"] == [0, 1] and m["run_ids"] == ["r0", "r1"]
    assert m["curves"]["crr"] == pytest.approx([(0.2 / 3 + 0.1) / 2, (0.1 + 0.4) / 2])
    assert m["seconds"] == {"generation": 20.0} and m["cascade"] == {"accepted": 8.0, "flops_verifier": 40.0}
    assert m["utility_acc"] == 0.8
    assert rows[1]["crr"] == 0.5 and rows[1]["crr_std"] is None and rows[1]["curves"] == solo["curves"]
    add_ratios(rows)
    assert m["crr_ratio"] == pytest.approx(0.6)  # ratio of the means
    table = comparison_table(rows)
    assert {"crr_std", "n_runs"} <= set(table.columns)
    assert "crr_std" not in comparison_table([solo]).columns


def test_curves_one_line_per_configuration(rows):
    fig = comparison_curves(rows, "crr")
    assert [t.name for t in fig.data] == ["none", "reindex", "cascade", "reindex+cascade"]
    assert list(fig.data[0].y) == pytest.approx([0.1, 0.15, 0.3]) and list(fig.data[0].customdata) == [1, 2, 3]
    # four lines with error bars: each a little beside its round, in legend order, so no bar hides another
    shifts = [t.x[0] - 1 for t in fig.data]
    assert shifts == sorted(shifts) and len(set(shifts)) == 4 and all(abs(s) < 0.5 for s in shifts)
    assert all(list(t.x) == pytest.approx([x + t.x[0] - 1 for x in (1, 2, 3)]) for t in fig.data)
    assert "round %{customdata}" in fig.data[0].hovertemplate
    assert fig.layout.xaxis.dtick == 1  # one tick a round: no "1 1 2 2 3 3" from half steps printed as integers
    several = comparison_curves(rows + [_row("worm", "none", 0.1, 0.8)], "pii_leaked")
    assert several.data[-1].name == "none · worm" and list(several.data[-1].y) == [1, 2, 3]
    assert list(several.data[-1].x) == [1, 2, 3], "a count has no bars, so its lines stay on the rounds"


def test_tradeoff_one_labelled_point_per_configuration(rows):
    fig = tradeoff_scatter(rows, "utility_acc", "crr")
    assert len(fig.data) == 4
    t = fig.data[3]
    assert t.text == ("reindex+cascade",) and t.x == (0.6,) and t.y == (0.1,) and "text" in t.mode
    # two configurations on one point (a defense that changed nothing): one readable label names both
    same = [dict(r) for r in rows]
    same[1].update(utility_acc=same[0]["utility_acc"], crr=same[0]["crr"])
    first, second = tradeoff_scatter(same, "utility_acc", "crr").data[:2]
    assert first.text == ("none = reindex",) and "text" in first.mode
    assert second.mode == "markers" and second.name == "reindex" and second.x == first.x
    rows[0]["utility_acc"] = None  # no utility for a row: no point
    assert len(tradeoff_scatter(rows).data) == 3


def test_ratio_bars_and_table(rows):
    fig = ratio_bars(rows, "crr")
    assert len(fig.data) == 1 and list(fig.data[0].y) == pytest.approx([1.0, 2 / 3, 0.5, 1 / 3])
    # 10 chunks: every CRR interval overlaps no protection's, so each bar is a faded "tie", its ratio written on it
    assert list(fig.data[0].text) == ["1×", "0.67× (tie)", "0.5× (tie)", "0.33× (tie)"]
    assert list(fig.data[0].marker.opacity) == [1.0, 0.35, 0.35, 0.35]
    rows[3]["kb_size"] = 100_000  # the same shares of a KB of 100,000 chunks: narrow intervals, apart
    rows[0]["kb_size"] = rows[3]["kb_size"]
    add_ratios(rows)
    assert ratio_bars(rows, "crr").data[0].text[3] == "0.33×", "intervals apart: a finding, drawn solid"
    t = comparison_table(rows)
    assert list(t["configuration"]) == ["none", "reindex", "cascade", "reindex+cascade"]
    assert t.loc[2, "utility_acc_drop"] == pytest.approx(0.2) and "curves" not in t.columns
    assert uses_reindex(rows) and not uses_reindex(rows[:1])


def test_cluster_view_before_and_after():
    rng = np.random.default_rng(0)
    res = SimpleNamespace(
        labels=np.array([0, 0, 1, 1, -1]),
        projection_before=rng.normal(size=(5, 2)),
        projection_after=rng.normal(size=(5, 2)),
        separation_before={"silhouette": 0.1},
        separation_after={"silhouette": 0.5},
    )
    fig = cluster_view(res)
    assert [t.name for t in fig.data] == ["before", "after"]
    assert len(fig.data[1].x) == 5 and fig.data[0].xaxis == "x" and fig.data[1].xaxis == "x2"
    assert "noise" in fig.data[0].text[4]
    assert "0.50" in fig.layout.annotations[1].text


def test_parse_configurations():
    assert parse_configurations(["none", "Reindex + Cascade"], "system-prompt, threshold+intent-block\nnone") == (
        "none",
        "reindex+cascade",
        "system-prompt",
        "threshold+intent-block",
    )
    with pytest.raises(ConfigError, match="unknown defense 'firewall'"):
        parse_configurations(["none"], "firewall+threshold")
    with pytest.raises(ConfigError):
        parse_configurations([], " , ")


def test_long_run_curves_keep_each_configurations_colour_as_the_folder_grows():
    """The CRR-with-intervals figure of a long experiment: one band and one line per run, a running run labelled
    with its progress, and RAGFort's configurations in the same colour whichever of its cells exist yet."""
    from engine.plots.defenses import crr_with_intervals

    def run(conf, recovered, finished=True):
        return {
            "kb": "kb",
            "attack": "rag-thief",
            "configuration": conf,
            "kb_size": 100,
            "rounds": len(recovered),
            "budget": 4,
            "recovered": recovered,
            "finished": finished,
        }

    def colours(runs):
        return {t.legendgroup: t.line.color for t in crr_with_intervals(runs).data if t.mode == "lines"}

    two = colours([run("none", [1, 2, 3, 4]), run("reindex+cascade", [0, 1, 1, 2])])
    four = colours(
        [
            run("cascade", [0, 1], finished=False),
            run("none", [1, 2, 3, 4]),
            run("reindex", [1, 2, 4, 5]),
            run("reindex+cascade", [0, 1, 1, 2]),
            run("threshold", [1, 1, 1, 1]),
        ]
    )
    assert four["none"] == two["none"] and four["reindex+cascade"] == two["reindex+cascade"]
    assert len(set(four.values())) == 5
    fig = crr_with_intervals([run("cascade", [0, 1], finished=False)])
    names = [t.name for t in fig.data if t.mode == "lines"]
    assert names == ["cascade (rag-thief: 2/4, not finished)"] and len(fig.data) == 2  # its band and its line


def test_count_axes_tick_whole_numbers_only():
    """Rounds, queries and ranks are counts: a 1-2-5 step keeps every label on a whole number (Plotly's own ticks
    fall on halves on a short axis, which "d" prints as "1 1 2 2 3"), at most ten of them on a long one."""
    from engine.plots.axes import whole_ticks

    steps = {n: whole_ticks(n)["dtick"] for n in (0, 3, 10, 11, 20, 21, 50, 200, 201, 1000)}
    assert steps == {0: 1, 3: 1, 10: 1, 11: 2, 20: 2, 21: 5, 50: 5, 200: 20, 201: 50, 1000: 100}
    assert all(isinstance(s, int) for s in steps.values()) and whole_ticks(7)["tickformat"] == "d"


def test_the_charts_carry_intervals_and_start_at_zero_so_a_tie_does_not_look_like_a_win(rows):
    """3 against 4 chunks of 361 is a tie (the table says so): the curves and the trade-off draw each point's Wilson
    95% interval from 0 up, and the table gives the utility ACC its interval (5 questions rank nothing)."""
    from engine.metrics.intervals import wilson

    fig = comparison_curves(rows, "crr")
    assert fig.layout.yaxis.rangemode == "tozero"
    last = fig.data[0]  # none: CRR 0.3 of 10 chunks at round 3
    lo, hi = wilson(3, 10)
    assert last.error_y.array[-1] == pytest.approx(hi - 0.3) and last.error_y.arrayminus[-1] == pytest.approx(0.3 - lo)
    assert comparison_curves(rows, "pii_leaked").data[0].error_y.array is None, "a count has no share interval"
    for r in rows:
        r["utility_n_graded"] = 5
    t = tradeoff_scatter(rows, "utility_acc", "crr").data[2]  # cascade: ACC 3/5
    lo, hi = wilson(3, 5)
    assert t.error_x.array[0] == pytest.approx(hi - 0.6) and t.error_x.arrayminus[0] == pytest.approx(0.6 - lo)
    assert t.error_y.array[0] > 0
    table = comparison_table(rows)
    assert list(table.columns)[list(table.columns).index("utility_acc") + 1] == "utility_acc_ci"
    assert table.loc[2, "utility_acc_ci"] == f"[{lo:.2f}, {hi:.2f}]"
    assert table.loc[2, "utility_acc_drop"] == 0.2, "rounded: no 0.20000000000000007 in the table or its CSV"
