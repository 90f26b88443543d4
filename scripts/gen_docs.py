"""Write the generated documentation pages (``docs/reference/cli.md`` from the run configurations,
``docs/reference/targets.md`` from the audit targets' parameters).

Run after changing a configuration or a command-line option: ``.venv/bin/python scripts/gen_docs.py``;
tests/contracts/test_docs.py fails while a committed page differs from what this writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.cli.reference import cli_reference, targets_reference  # noqa: E402

GENERATED = {
    REPO / "docs" / "reference" / "cli.md": cli_reference,
    REPO / "docs" / "reference" / "targets.md": targets_reference,
}

if __name__ == "__main__":
    for path, make in GENERATED.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(make(), encoding="utf-8")
        print(f"wrote {path.relative_to(REPO)}")
