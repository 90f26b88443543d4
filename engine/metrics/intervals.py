"""Confidence intervals of the rates the playground reports (ASR@K, TPR, FPR, CRR, PII share).

Wilson's score interval (Wilson 1927; the interval Brown, Cai and DasGupta 2001 recommend for a binomial
proportion): unlike the normal approximation it stays inside [0, 1] and does not collapse to a point at
0/n or n/n, which small playground runs hit often. 95% by default.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion k/n; (0, 0) when n is 0."""
    if n <= 0:
        return 0.0, 0.0
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    lo = 0.0 if k <= 0 else max(0.0, c - h)  # exact at the ends (no 1e-18 from rounding)
    hi = 1.0 if k >= n else min(1.0, c + h)
    return lo, hi


def overlap(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool:
    """Whether two intervals overlap (then the two rates are not distinguishable at this sample size)."""
    if not a or not b:
        return True
    return a[0] <= b[1] and b[0] <= a[1]


def fmt_interval(ci: tuple[float, float] | None, digits: int = 2) -> str:
    """``[0.84, 0.98]`` (empty when there is no interval)."""
    return f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else ""


def share_interval(row: Mapping[str, Any], value: float | None) -> tuple[float, float] | None:
    """Wilson's 95% interval of a share of the KB's chunks (CRR, coverage) from its value and the row's KB size
    (pooled over its runs, as ``crr_ci``), or None without a KB size."""
    n = int(row.get("kb_size") or 0) * int(row.get("n_runs") or 1)
    if value is None or n <= 0:
        return None
    return wilson(int(round(float(value) * n)), n)


def accuracy_interval(row: Mapping[str, Any], prefix: str = "utility") -> tuple[float, float] | None:
    """Wilson's 95% interval of a row's ACC (``utility_acc``: correct ÷ graded questions), or None."""
    if row.get(f"{prefix}_acc_ci"):
        lo, hi = row[f"{prefix}_acc_ci"]
        return float(lo), float(hi)
    acc, n = row.get(f"{prefix}_acc"), int(row.get(f"{prefix}_n_graded") or row.get(f"{prefix}_n") or 0)
    return wilson(int(round(float(acc) * n)), n) if acc is not None and n > 0 else None
