"""Which of the playground's defenses to switch on against a finding, and what they did where we measured them.

Each recommendation names a defense of :data:`engine.defenses.DEFENSES` and, where this repository holds a
comparison of it against no defense (the committed ``results/`` folders), the effect measured there, read from
those files when the report is written — never a number typed here. Where no comparison exists, the
recommendation says so. The measured setting is not the audited system: the effect is a pointer to what to
try (and to re-audit), not a prediction.
"""

from __future__ import annotations

import json
from typing import Any

from ..metrics.intervals import overlap
from ..paths import REPO_ROOT
from ..metrics.catalog import MK

RESULTS = REPO_ROOT / "results"


def _load(rel: str) -> Any:
    try:
        return json.loads((RESULTS / rel).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _crr_pair(rel: str, attack: str, conf: str) -> str | None:
    d = _load(rel)
    if not d:
        return None
    rows = {(r.get("attack"), r.get("configuration")): r for r in d.get("rows", [])}
    base, got = rows.get((attack, "none")), rows.get((attack, conf))
    if not base or not got:
        return None
    verdict = (
        "interval below no defense's"
        if got[MK.CRR_CI][1] < base[MK.CRR_CI][0]
        else "not distinguishable from no defense"
        if overlap(got[MK.CRR_CI], base[MK.CRR_CI])
        else "higher"
    )
    ratio = f", {got[MK.CRR] / base[MK.CRR]:.2f}× no defense" if base.get(MK.CRR) else ""
    return (
        f"{attack}: CRR {base[MK.CRR]:.3f} → {got[MK.CRR]:.3f}{ratio} ({verdict}); PII items "
        f"{base.get(MK.PII_LEAKED, 0)} → {got.get(MK.PII_LEAKED, 0)}; blocked {got.get('blocked', 0)}/"
        f"{got.get('rounds', 0)} queries — {got.get('kb', '')}, {got.get('rounds', 0)} rounds (results/{rel})"
    )


def _poison_pair(attack: str, defense: str) -> str | None:
    plain, defended = (
        _load(f"poisoning-defenses/{attack}-generate-none.json"),
        _load(f"poisoning-defenses/{attack}-{defense}.json"),
    )
    if not plain or not defended:
        return None
    if defended.get(MK.ASR_GENERATION) is not None and plain.get(MK.ASR_GENERATION) is not None:
        return (
            f"{attack}: answers repeating the poison {plain['generation_successes']}/{plain['n_generated']} → "
            f"{defended['generation_successes']}/{defended['n_generated']} (BioASQ × PubMedQA, Qwen2.5-0.5B; "
            f"results/poisoning-defenses)"
        )
    dd = defended.get("defenses") or {}
    if "asr_defended" in dd:
        return (
            f"{attack}: poison reaching the top-5 {defended['asr']['5']:.2f} → {dd['asr_defended']:.2f}, clean "
            f"chunks removed (FPR) {dd.get('fpr', 0):.2f} (BioASQ × PubMedQA; results/poisoning-defenses)"
        )
    return None


def _detector(attack: str) -> str | None:
    d = _load(f"poisoning-defenses/{attack}-perplexity.json")
    m = ((d or {}).get("detectors") or {}).get("mahalanobis")
    if not m:
        return None
    return (
        f"{attack}: poisons flagged (TPR) {m['tpr']:.2f} at FPR {m['fpr']:.2f}, β = {m.get('beta')} "
        f"(BioASQ × PubMedQA × MiniLM; results/poisoning-defenses)"
    )


def recommend(family: str, attack: str) -> list[dict[str, str]]:
    """``[{"defense", "what", "measured"}]`` for a finding of ``family`` / ``attack``."""
    none = "not measured here"
    if family == "extraction":
        out = []
        if attack in ("zeng", "rag-thief", "worm"):
            out.append(
                {
                    "defense": "intent-block",
                    "what": "refuse queries that ask to repeat or dump the context (query stage)",
                    "measured": _crr_pair("benign-extraction/comparison.json", attack, "intent-block") or none,
                }
            )
        else:
            out.append(
                {
                    "defense": "intent-block",
                    "what": "does NOT stop this attack: its queries look benign",
                    "measured": _crr_pair("benign-extraction-code-claim/comparison.json", attack, "intent-block")
                    or _crr_pair("benign-extraction/comparison.json", attack, "intent-block")
                    or none,
                }
            )
        ragfort = [
            _crr_pair("ragfort-paper-scale-hcm/comparison.json", a, "reindex+cascade") for a in ("rag-thief", "worm")
        ]
        out.append(
            {
                "defense": "reindex+cascade",
                "what": "RAGFort: contrastive reindexing and constrained cascade "
                "generation (the answer may not copy the retrieved text verbatim)",
                "measured": "; ".join(r for r in ragfort if r) or none,
            }
        )
        out.append(
            {
                "defense": "threshold",
                "what": "drop retrieved chunks below a similarity threshold, so "
                "off-topic extraction queries reach less of the knowledge base",
                "measured": none,
            }
        )
        return out
    if attack == "jamming":
        return [
            {
                "defense": "isolate-aggregate",
                "what": "answer from each retrieved chunk alone and aggregate, so "
                "one blocker document cannot veto the answer",
                "measured": none,
            },
            {
                "defense": "mahalanobis (detector, at ingestion)",
                "what": "flag documents far from the knowledge base's embeddings before they are indexed",
                "measured": none,
            },
        ]
    return [
        {
            "defense": "isolate-aggregate",
            "what": "answer from each retrieved chunk alone and aggregate (RobustRAG)",
            "measured": _poison_pair("universal" if attack != "camouflaged" else attack, "isolate-aggregate") or none,
        },
        {
            "defense": "mahalanobis (detector, at ingestion)",
            "what": "Mahalanobis distance over a shrinkage "
            "covariance of the knowledge base's embeddings, threshold = 95th percentile of anchor scores "
            "(universal-poisoning paper §5)",
            "measured": _detector("universal" if attack != "camouflaged" else attack) or none,
        },
        {
            "defense": "trustrag-cluster",
            "what": "remove clusters of near-duplicate retrieved chunks (works "
            "against several similar poisons; a lone poison forms no cluster)",
            "measured": _poison_pair("universal" if attack != "camouflaged" else attack, "trustrag-cluster") or none,
        },
    ]
