"""The CI examples in examples/ci/ stay true: every `python -m engine …` command in them parses with the engine's
own command line (an option renamed or removed would break a user's pipeline silently), and each uploads or
publishes the JUnit report the audit writes."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from engine.cli import build_parser

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples" / "ci").glob("*.yml"))


def engine_commands(text: str) -> list[list[str]]:
    """The argument lists of the `-m engine` commands in a CI file's shell lines (continuations joined)."""
    # $BASELINE expands to the --baseline option where a baseline exists (the examples' bootstrap)
    joined = text.replace("\\\n", " ").replace("$BASELINE", "--baseline ../audit/baseline/report.json")
    out = []
    for line in joined.splitlines():
        if line.lstrip().startswith("#"):
            continue
        m = re.search(r"-m engine (.*)$", line)
        if m:
            out.append(shlex.split(m.group(1).split("#")[0]))
    return out


def gitlab_script_commands(doc: dict) -> list[list[str]]:
    """GitLab folds a multi-line plain scalar into one line; the YAML parser gives the command as GitLab runs it."""
    out = []
    for job in doc.values():
        if isinstance(job, dict):
            for key in ("script", "after_script", "before_script"):
                for line in job.get(key) or []:
                    out += engine_commands(str(line))
    return out


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_engine_command_of_a_ci_example_parses(path: Path):
    text = path.read_text()
    doc = yaml.safe_load(text)  # valid YAML: a CI refuses the whole file otherwise
    commands = gitlab_script_commands(doc) if "gitlab" in path.name else engine_commands(text)
    assert any(c[:1] == ["audit"] for c in commands), f"{path.name}: no audit command found"
    parser = build_parser()
    for argv in commands:
        try:
            parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"{path.name}: `python -m engine {shlex.join(argv)}` does not parse")
    assert "report.junit.xml" in text, f"{path.name}: the JUnit report is not published"


def test_there_is_a_ci_example_for_github_and_for_gitlab():
    assert {p.name for p in EXAMPLES} >= {"rag-audit.github-actions.yml", "rag-audit.gitlab-ci.yml"}
