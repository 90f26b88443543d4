"""The sweep's cells table: short headers, '—' where a retriever has no value (BM25's token columns read a grey
'None' before), a column with one value in every cell left out; the frame itself keeps the engine's names."""

from streamlit.testing.v1 import AppTest


def _table() -> None:
    import numpy as np
    import pandas as pd

    from components.sweep_table import sweep_cells_table

    base = {"corpus": "clinic_handbook", "query_set": "clinic_handbook", "target": "pii", "n_queries": 5}
    sweep_cells_table(
        pd.DataFrame(
            [
                {
                    **base,
                    "retriever": "minilm",
                    "asr@1": 0.8,
                    "asr@5": 1.0,
                    "variants": 1,
                    "question_tokens": 12.5,
                    "target_embedded": 0.91234,
                    "mahalanobis_tpr": 0.75,
                    "poisons_over_window": 0,
                },
                {
                    **base,
                    "retriever": "bm25",
                    "asr@1": 0.6,
                    "asr@5": 0.8,
                    "variants": 1,
                    "question_tokens": np.nan,
                    "target_embedded": np.nan,
                    "mahalanobis_tpr": 0.5,
                    "poisons_over_window": 0,
                },
            ]
        )
    )


def test_the_cells_table_reads_dash_for_what_bm25_has_not_and_short_headers():
    at = AppTest.from_function(_table).run()
    assert not at.exception
    shown = at.dataframe[0]
    assert "variants" not in shown.value.columns and {"asr@1", "question_tokens"} <= set(shown.value.columns)
    # the dense-only columns are text in the data itself (a number column's empty cell is drawn "None" whatever
    # the Styler says): "—" for BM25, a token count without decimals
    by = shown.value.set_index("retriever")
    assert by.loc["bm25", "question_tokens"] == "—" and by.loc["bm25", "target_embedded"] == "—"
    assert by.loc["minilm", "question_tokens"] == "12.5" and by.loc["minilm", "target_embedded"] == "0.912"
    display = shown.proto.arrow_data.styler.display_values
    assert "—".encode() in display and b"0.912" in display and b"None" not in display
    for header in ('"ASR@1"', '"question tokens"', '"target read"', '"mahalanobis TPR"', '"over window"'):
        assert header in shown.proto.columns, shown.proto.columns
