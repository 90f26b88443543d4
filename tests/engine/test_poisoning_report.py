"""The results page's poisoning tables come from one command over the saved runs (engine.analysis.poisoning_report)."""

import json

import pandas as pd

from engine.analysis.paper_tables import QUERY_SETS, TARGETS
from engine.analysis.poisoning_report import main, report, table1_markdown


def _cells(retriever, value, **extra):
    return [
        {
            "corpus": "bioasq",
            "retriever": retriever,
            "query_set": q,
            "target": t,
            "asr@1": value - 0.05,
            "asr@2": value,
            "asr@5": 1.0,
            "n_queries": 300,
            "variants": 3,
            "poisons_over_window": 0,
            **extra,
        }
        for q in QUERY_SETS
        for t in TARGETS
    ]


def test_table1_rows_per_query_set_with_our_retrievers_then_the_papers():
    cells = pd.DataFrame(_cells("bm25", 0.9) + _cells("minilm", 0.8))
    md = table1_markdown(cells, 2).splitlines()
    assert md[0] == (
        "| query set | ours · MiniLM | ours · BM25 | paper · MedCPT | paper · Specter | paper · Contriever |"
    )  # dense first, in the preset's order
    assert md[2].startswith("| MMLU | 0.80 × 5 | 0.90 × 5 | 0.74 / 0.75 / 0.71 / 0.73 / 0.73 |")
    assert md[-1].startswith("| mean (lowest) | 0.80 (0.80,") and "0.76 (0.58, BioASQ × MS-MARCO)" in md[-1]
    top1 = table1_markdown(cells, 1).splitlines()  # Table 7: the paper's top-1 rows
    assert top1[2].startswith("| MMLU | 0.75 × 5 | 0.85 × 5 | 0.72 / 0.74 / 0.71 / 0.73 / 0.71 |")


def test_the_report_reads_every_saved_reproduction_and_says_what_is_missing(tmp_path, capsys):
    (tmp_path / "table1-bioasq").mkdir()
    pd.DataFrame(_cells("mpnet", 0.95)).to_csv(tmp_path / "table1-bioasq" / "sweep_cells.csv", index=False)
    det = tmp_path / "detection-bioasq-mpnet"
    det.mkdir()
    pd.DataFrame(
        _cells(
            "mpnet",
            0.9,
            mahalanobis_tpr=0.5,
            mahalanobis_fpr=0.1,
            mahalanobis_auroc=0.8,
            l2_tpr=0.05,
            l2_fpr=0.05,
            l2_auroc=0.5,
            question_tokens=40,
            target_embedded=1.0,
        )
    ).to_csv(det / "sweep_cells.csv", index=False)
    (tmp_path / "table8" / "mpnet").mkdir(parents=True)
    (tmp_path / "table8" / "mpnet" / "pubmedqa.json").write_text(
        json.dumps(
            {
                "retriever": "mpnet",
                "queries": "mirage:pubmedqa",
                "target": "pii",
                "detectors": {},
                "beta_sweep": [{"beta": 0.01, "tpr": 0.8, "fpr": 0.05, "auroc": 0.9, "n_anchors": 700}],
            }
        )
    )
    md = report(tmp_path)
    assert "| MMLU | 0.95 × 5 |" in md
    assert "| mpnet | PubMedQA | 700 | 0.80 / 0.05 | 0.01 (0.80) |  |" in md
    assert (
        "| mpnet | MMLU | 0.1 | 40 | 1.0 | 0.50 (0.90) |" in md
        and "| mpnet | MMLU | 0.05 | 40 | 1.0 | 0.05 (0.90) |" in md
    )
    assert "### Tables 3–4\n\n(no saved runs:" in md and "--save" in md
    assert main([str(tmp_path), "--k", "1"]) == 0 and "Table 7: top-1 success" in capsys.readouterr().out
