"""Metric keys come from the catalog: no string literal equal to a catalog key outside ``engine/metrics/catalog.py``
in the engine, the components or the pages (``MK.CRR``, not ``"crr"``), so renaming or finding a metric is one
place. ``__all__`` lists (function names that happen to equal a key) are exempt."""

import ast
from pathlib import Path

from engine.metrics.catalog import CATALOG, MK

ROOT = Path(__file__).resolve().parents[2]
CATALOG_FILE = ROOT / "engine" / "metrics" / "catalog.py"


def _literal_keys(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exempt: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            exempt.update(id(n) for n in ast.walk(node))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in CATALOG and id(node) not in exempt
    ]


def test_every_catalog_key_has_its_constant():
    names = {v for k, v in vars(MK).items() if k.isupper()}
    assert names == set(CATALOG), "MK and the catalog's entries must name the same keys"


def test_no_literal_metric_key_outside_the_catalog():
    files = [ROOT / "app.py"]
    for folder in ("engine", "components", "pages"):
        files += sorted((ROOT / folder).rglob("*.py"))
    found = [hit for f in files if f != CATALOG_FILE for hit in _literal_keys(f)]
    assert not found, "use engine.metrics.catalog.MK instead of these literals:\n" + "\n".join(found)
