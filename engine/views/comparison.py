"""Defense comparison, shaped for display: parse configuration sets, tables, saved comparisons on disk.

UI-agnostic (no Streamlit): the app's comparison page and teaching mode call these; the
numbers themselves come from :func:`engine.compare.run_comparison`.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd

from ..metrics.intervals import accuracy_interval, fmt_interval

from ..config import defense_set
from ..errors import ConfigError
from ..metrics.catalog import LEAKAGE, MK, STAGE, UTILITY, labels
from ..saved import comparisons_dir

PRESET_CONFIGURATIONS = (
    "none",
    "threshold",
    "system-prompt",
    "intent-block",
    "summarize",
    "reindex",
    "cascade",
    "reindex+cascade",
)
QUICK_CONFIGURATIONS = ("none", "system-prompt")  # the page's default: no protection beside the cheapest defense
LEAK_METRICS = labels(LEAKAGE)
UTILITY_METRICS = labels(UTILITY)
STAGE_METRICS = labels(STAGE)


def normalise_configuration(text: str) -> str:
    """'Reindex + cascade' → 'reindex+cascade'; '' or 'none' → 'none' (names are checked by the caller)."""
    names = defense_set(text.strip().lower())
    return "+".join(dict.fromkeys(names)) if names else "none"


def parse_configurations(selected: Iterable[str], custom: str = "") -> tuple[str, ...]:
    """Preset configurations plus custom '+'-joined sets (comma- or line-separated), validated.

    Raises ConfigError naming the first unknown defense and listing the known ones.
    """
    from ..defenses import DEFENSES

    out: list[str] = []
    for raw in [*selected, *re.split(r"[,;\n]", custom or "")]:
        if not raw.strip():
            continue
        conf = normalise_configuration(raw)
        for d in defense_set(conf):
            if d not in DEFENSES:
                raise ConfigError(
                    f"unknown defense {d!r} in configuration {raw.strip()!r} "
                    f"(known: none, {', '.join(DEFENSES.names())})"
                )
        if conf not in out:
            out.append(conf)
    if not out:
        raise ConfigError("choose at least one defense configuration (e.g. none)")
    return tuple(out)


def comparison_table(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Final metrics per (kb, attack, configuration), leakage by stage, ratios to no protection and the
    ACC drop; with repeated runs (seeds) the means, their standard deviations and the number of runs; with a
    membership attack, the configuration's membership AUROC and its interval right after CRR's; with a task
    (``task_limit``), the task ACC, its interval and drop after the utility."""
    repeated = any(r.get("n_runs", 1) > 1 for r in rows)
    several_kbs = len({r.get("kb") for r in rows}) > 1
    cols = [
        *(("kb",) if several_kbs else ()),
        "attack",
        "configuration",
        *LEAK_METRICS,
        *(k for k in STAGE_METRICS if k != MK.EE_RETRIEVAL),  # = retrieved_coverage, already a column
        *(f"{k}_ratio" for k in LEAK_METRICS),
        *((f"{k}_std" for k in LEAK_METRICS) if repeated else ()),
        *(("n_runs",) if repeated else ()),
        MK.UTILITY_ACC,
        MK.UTILITY_FAITHFULNESS,
        "utility_acc_drop",
        "blocked",
        "rounds",
        "kb_size",
    ]
    if not rows:
        return pd.DataFrame(columns=cols)
    df = pd.DataFrame([{c: r.get(c) for c in cols} for r in rows])
    if any(r.get(MK.CRR_CI) for r in rows):  # after CRR: its 95% interval and whether it differs from none
        at = list(df.columns).index(MK.CRR) + 1 if MK.CRR in df.columns else len(df.columns)
        df.insert(at, MK.CRR_CI, [fmt_interval(r.get(MK.CRR_CI), 4) for r in rows])
        df.insert(at + 1, MK.CRR_VS_NONE, [r.get(MK.CRR_VS_NONE) or "" for r in rows])
    if any(r.get(MK.MEMBERSHIP_AUROC) is not None for r in rows):  # beside CRR's: copying vs membership
        at = list(df.columns).index(MK.CRR_VS_NONE) + 1 if MK.CRR_VS_NONE in df.columns else len(df.columns)
        df.insert(at, MK.MEMBERSHIP_AUROC, [r.get(MK.MEMBERSHIP_AUROC) for r in rows])
        df.insert(at + 1, "membership_auroc_ci", [fmt_interval(r.get("membership_auroc_ci"), 2) for r in rows])
    if MK.UTILITY_ACC in df.columns:  # its Wilson interval: 5 questions cannot rank two configurations
        df.insert(
            list(df.columns).index(MK.UTILITY_ACC) + 1,
            "utility_acc_ci",
            [fmt_interval(accuracy_interval(r), 2) if r.get(MK.UTILITY_ACC) is not None else None for r in rows],
        )
    if "utility_acc_drop" in df.columns:  # 0.8 − 0.6 is 0.2, not 0.20000000000000007, in the table and its CSV
        df["utility_acc_drop"] = pd.to_numeric(df["utility_acc_drop"], errors="coerce").round(6)
    if any(r.get(MK.TASK_ACC) is not None for r in rows):  # the KB's own task, after the handbook's utility
        at = list(df.columns).index("utility_acc_drop") + 1 if "utility_acc_drop" in df.columns else len(df.columns)
        df.insert(at, MK.TASK_ACC, [r.get(MK.TASK_ACC) for r in rows])
        df.insert(at + 1, "task_acc_ci", [fmt_interval(r.get("task_acc_ci"), 2) for r in rows])
        df.insert(at + 2, "task_acc_drop", [r.get("task_acc_drop") for r in rows])
    return df.dropna(axis=1, how="all").reset_index(drop=True)


def new_comparison_dir(owner: str | None = None) -> Path:
    """A new timestamped folder for a comparison (created now), under the owner's comparisons dir."""
    d = comparisons_dir(owner) / (time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6])
    d.mkdir(parents=True, exist_ok=True)
    return d


def load_comparison(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(config dict, rows) of a saved comparison.json."""
    path = Path(path)
    if path.is_dir():
        path = path / "comparison.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"cannot read the comparison {path}: {e}") from None
    if not isinstance(data, dict) or "rows" not in data:
        raise ConfigError(f"{path} is not a saved comparison")
    rows, config = data["rows"], data.get("config") or {}
    if not isinstance(rows, list) or not isinstance(config, dict):
        raise ConfigError(f"{path} is damaged: its rows are not a list or its config is not an object")
    for i, row in enumerate(rows, 1):  # what the results view draws from; a damaged row is named, never a traceback
        missing = [k for k in ("attack", "configuration", MK.CRR) if not isinstance(row, dict) or k not in row]
        if missing:
            raise ConfigError(
                f"{path} is damaged: row {i} has no {missing[0]!r} (the runs themselves are kept under "
                f"{path.parent / 'runs'})"
            )
    return dict(config), list(rows)


def supports_adaptive(attack: str) -> bool:
    """Whether an extraction attack has the ``adaptive`` parameter (knows the active defenses and adapts)."""
    import dataclasses

    from ..attacks.extraction import EXTRACTION_ATTACKS

    if attack not in EXTRACTION_ATTACKS:
        return False
    return "adaptive" in {f.name for f in dataclasses.fields(EXTRACTION_ATTACKS.get(attack).Params)}


def uses_reindex(rows: Sequence[dict[str, Any]]) -> bool:
    """Whether any row's configuration includes ``reindex``."""
    return any("reindex" in (r.get("defenses") or defense_set(r.get("configuration", ""))) for r in rows)
