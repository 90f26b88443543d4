"""The engine's public API type-checks (mypy over the modules listed in pyproject.toml's [tool.mypy]: configs,
params, registries, events, summaries, the progress/stop protocol). mypy comes with requirements-dev.txt."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_mypy_is_clean_on_the_public_api(tmp_path):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
            "--no-error-summary",
            "--hide-error-context",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
