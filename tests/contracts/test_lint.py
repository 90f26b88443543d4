"""The tree stays clean under the linter and the formatter configured in pyproject.toml (ruff: pycodestyle E/W and
pyflakes F, lines within 120 characters; ``ruff format``). ruff comes with requirements-dev.txt, which the test
script installs."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_ruff_check_is_clean():
    p = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]


def test_ruff_format_is_clean():
    p = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "."],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, "run: python -m ruff format .\n" + p.stdout[-4000:] + p.stderr[-2000:]
