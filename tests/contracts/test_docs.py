"""The documentation: the site builds in strict mode (no broken link, anchor or missing page), generated pages are
current, and the README's quick start and page list match the site's home page."""

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_generated_cli_reference_is_current():
    from engine.cli.reference import cli_reference

    committed = (REPO / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    assert committed == cli_reference(), "docs/reference/cli.md is stale: run .venv/bin/python scripts/gen_docs.py"


def test_the_generated_target_reference_is_current():
    from engine.cli.reference import targets_reference

    committed = (REPO / "docs" / "reference" / "targets.md").read_text(encoding="utf-8")
    assert committed == targets_reference(), "docs/reference/targets.md is stale: run scripts/gen_docs.py"
    assert "| `answer_path` | `answer` |" in committed and '`{"question": "{query}"}`' in committed


def test_the_reference_lists_every_subcommand_and_registered_plugin():
    from engine.attacks.extraction import EXTRACTION_ATTACKS
    from engine.cli import build_parser
    from engine.defenses import DEFENSES

    text = (REPO / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name in sub.choices:
        assert f"## `{name}`" in text
    extract = text[text.index("## `extract`") : text.index("## `utility`")]
    for name in [*EXTRACTION_ATTACKS.names(), *DEFENSES.names()]:
        assert name in extract, name


def test_the_site_builds_strict(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
    assert list((tmp_path / "site" / "_repo" / "results").rglob("*.png")), "the results figures are copied"


def _commands(text: str) -> list[str]:
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "no quick-start block"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_readme_and_site_home_agree():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    home = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    assert _commands(readme) == _commands(home) == ["bash scripts/app.sh", "bash scripts/test.sh"]
    in_readme = re.findall(r"^\| \[[^]]+\]\(docs/([a-z/-]+\.md)\)", readme, re.M)  # the page tables
    in_home = re.findall(r"^\| \[[^]]+\]\(([a-z/-]+\.md)\)", home, re.M)
    assert in_readme and in_readme == in_home
    pages = {str(p.relative_to(REPO / "docs")) for p in (REPO / "docs").rglob("*.md")} - {"index.md"}
    assert set(in_readme) == pages, "every page is linked from the README and the site's home"


def test_the_readmes_membership_table_is_the_committed_experiment():
    """The README's membership block is generated from the committed table folder, never typed: regenerate it
    (``python -m engine.membership_table results/membership-table --write README.md``) whenever a cell ends."""
    from engine.membership_table import BEGIN, END, readme_markdown

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert block == readme_markdown(REPO / "results" / "membership-table").strip(), (
        "README's membership table is stale: regenerate it with engine.membership_table --write README.md"
    )
    assert "| clinic_records | direct | none | 200 + 200 |" in block


def test_the_readmes_ragfort_tables_are_the_committed_experiments():
    """The README's RAGFort tables are generated from the committed long experiment, never typed: regenerate them
    (``python -m engine.analysis.ragfort_tables results/ragfort-paper-scale-hcm --write README.md``) whenever the
    folder's results change."""
    from engine.analysis.ragfort_tables import BEGIN, END, ragfort_markdown

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert block == ragfort_markdown(REPO / "results" / "ragfort-paper-scale-hcm").strip(), (
        "README's RAGFort tables are stale: regenerate them with engine.analysis.ragfort_tables --write README.md"
    )
    assert "| RAGFort (reindex + cascade) |" in block and "paper (Qwen-14B / HealthCare)" in block
