import numpy as np

from engine.analysis import clean_retrieval_similarity, orthogonal_augmentation_pairs, orthogonal_augmentation_table
from engine.analysis.why import why_it_works
from engine.attacks.poisoning import target_text
from engine.config import PoisonConfig
from engine.queries import load_queries


def test_orthogonal_augmentation_measurements(minilm):
    qs = [q.text for q in load_queries("clinic_handbook", limit=20)]
    pii = target_text("pii")
    df = orthogonal_augmentation_pairs(minilm, qs, [pii] * len(qs))
    assert list(df.columns[:4]) == ["q_dot_p", "q_dot_delta", "angle_delta_q", "q_dot_q"]
    assert np.allclose(df["q_dot_q"], 1.0, atol=1e-4)  # MiniLM is normalised
    assert df["angle_delta_q"].between(0, 180).all()
    # the poison keeps most of the query's similarity: f(q)ᵀf(q⊕p) far above f(q)ᵀf(p)
    assert (df["q_dot_qp"] > df["q_dot_p"]).mean() > 0.9
    table = orthogonal_augmentation_table(minilm, qs, {"pii": [pii]})
    assert table.shape == (4, 1) and "±" in table.iloc[0, 0]


def test_clean_retrieval_similarity_shapes(minilm, handbook):
    qv = minilm.encode_queries([q.text for q in load_queries("clinic_handbook", limit=10)])
    dv, _ = minilm.encode_documents(handbook.texts)
    df = clean_retrieval_similarity(minilm, qv, dv, k=5)
    assert len(df) == 10 and df["angle_q_R"].between(0, 90).all()
    assert (df["q_dot_R"] < df["q_dot_q"]).all()


def test_why_it_works_for_a_configuration():
    tables = why_it_works(PoisonConfig(limit=15))
    assert set(tables) == {"table3_orthogonal_augmentation", "table4_clean_retrieval"}
    assert tables["table3_orthogonal_augmentation"].shape == (4, 3)


def test_correlations_match_scipy():
    import pandas as pd
    from scipy import stats

    from engine.analysis import correlate, query_features
    from engine.runs import PoisoningRun

    run = PoisoningRun(PoisonConfig(limit=20, detectors=()))
    run.run()
    df = query_features(run)
    assert len(df) == 20 and df["angle_q_poison"].between(0, 90).all()
    c = correlate(df, "query_words", "poison_rank")
    assert c["n"] == 20
    if df["poison_rank"].nunique() > 1:
        assert abs(c["pearson_r"] - stats.pearsonr(df["query_words"], df["poison_rank"]).statistic) < 1e-12
    const = correlate(pd.DataFrame({"a": [1, 2, 3], "b": [1, 1, 1]}), "a", "b")
    assert const["n"] == 3 and const["pearson_r"] != const["pearson_r"]  # NaN when undefined


def test_correlation_rows_read_as_a_table_undefined_as_a_dash_and_tiny_p_values_as_a_bound():
    import numpy as np
    import pandas as pd

    from engine.analysis.correlations import correlation_rows

    df = pd.DataFrame({"a": np.arange(50), "b": np.arange(50) * 2 + 1, "c": [1] * 50})
    rows = correlation_rows(df, {"a": "length", "c": "constant", "b": "target"}, "b")
    assert [r["feature"] for r in rows] == ["length", "constant"]  # the target is not correlated with itself
    assert rows[0] == {
        "feature": "length",
        "n": 50,
        "Pearson r": "1.000",
        "p (Pearson)": "<0.001",
        "Spearman ρ": "1.000",
        "p (Spearman)": "<0.001",
    }
    assert {rows[1][k] for k in ("Pearson r", "p (Pearson)", "Spearman ρ", "p (Spearman)")} == {"—"}
