"""The command-line reference as Markdown, generated from the parser (``docs/reference/cli.md``).

Every subcommand's options come from the run configurations' declarations (:mod:`engine.cli.config_options`) and
a few command-only arguments; this walks the built parser, so the page lists exactly what ``--help`` shows, with the
registered plugin names filled in. ``python -m engine.cli.reference`` prints it; ``scripts/gen_docs.py`` writes it;
``tests/contracts/test_docs.py`` fails when the committed page is stale.
"""

from __future__ import annotations

import argparse
from typing import Iterator

from .common import RegistryHelpFormatter

HEADER = """# CLI reference

Generated from the run configurations by `python scripts/gen_docs.py` — do not edit by hand. Every option of a
run is a field of its configuration (the same name as the YAML key of a preset and the JSON field of a saved run,
with `-` for `_`); lists are comma-separated, mappings JSON or `@FILE`, optional numbers take `none`, switches
come as `--name` / `--no-name`. How to use them: [Command line](../cli.md).
"""


def _cell(text: str) -> str:
    """Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _value(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.choices:
        return " \\| ".join(f"`{c}`" for c in action.choices)
    if action.metavar:
        return f"`{action.metavar}`"
    kind = getattr(action.type, "__name__", None) if action.type else None
    return {"int": "integer", "float": "number"}.get(kind or "", "text")


def _default(action: argparse.Action) -> str:
    d = action.default
    if d is None or d is argparse.SUPPRESS or action.nargs == 0 or d == "":
        return ""
    return f"`{d}`"


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def cli_reference() -> str:
    """The whole reference page (Markdown)."""
    from . import build_parser

    parser = build_parser()
    out = [HEADER]
    for name, summary, sub in _subcommands(parser):
        fmt = RegistryHelpFormatter(prog=f"python -m engine {name}")
        out.append(f"## `{name}`\n\n{_cell(summary)}.\n" if summary else f"## `{name}`\n")
        positionals = [a for a in sub._actions if not a.option_strings]
        usage = " ".join([f"python -m engine {name}", *(a.dest.upper() for a in positionals), "[options]"])
        out.append(f"```\n{usage}\n```\n")
        rows = ["| Option | Value | What it sets |", "|---|---|---|"]
        for a in sub._actions:
            if isinstance(a, argparse._HelpAction) or a.help is argparse.SUPPRESS:
                continue
            flags = ", ".join(f"`{o}`" for o in a.option_strings) if a.option_strings else f"`{a.dest.upper()}`"
            text = fmt._expand_help(a) if a.help else ""
            if _default(a) and "(default:" not in text:
                text += f" (default: {_default(a)})"
            rows.append(f"| {flags} | {_value(a)} | {_cell(text)} |")
        out.append("\n".join(rows) + "\n")
    return "\n".join(out)


if __name__ == "__main__":
    print(cli_reference(), end="")


TARGETS_HEADER = """# Audit targets' parameters

Generated from the targets' declarations by `python scripts/gen_docs.py` — do not edit by hand. What
`--target-params` (JSON or `@FILE`), a preset's `target_params:` and the Audit page's target fields take, per
target, with its default. How to audit with them: [Audit your own RAG](../audit.md).
"""


def _html(text: str) -> str:
    """Prose for a Markdown page: ``<model>`` shown, not read as an HTML tag (only ``<`` opens one: ``->`` stays
    readable in the raw file); reST double backticks as code."""
    return text.replace("<", "&lt;").replace("``", "`")


def targets_reference() -> str:
    """Every audit target's parameters with their defaults and help (``docs/reference/targets.md``), and the JSON
    path syntax the HTTP targets read answers and contexts with."""
    import json
    from inspect import cleandoc

    from ..targets import TARGETS
    from ..targets import json_path

    out = [TARGETS_HEADER]
    for name in TARGETS.names():
        cls = TARGETS.get(name)
        doc = cleandoc(cls.__doc__ or "").split("\n\n")[0]
        out.append(f"## `{name}`\n\n{_html(_cell(doc))}\n")
        rows = ["| Parameter | Default | What it sets |", "|---|---|---|"]
        for f in cls.Params.describe():
            d = f["default"]
            default = "" if d in (None, "", (), []) else f"`{json.dumps(d) if not isinstance(d, str) else d}`"
            text = f["help"] + (f" (one of: {', '.join(map(str, f['choices']))})" if f.get("choices") else "")
            rows.append(f"| `{f['name']}` | {_cell(default)} | {_html(_cell(text))} |")
        out.append("\n".join(rows) + "\n")
    syntax = cleandoc(json_path.__doc__ or "").split("\n\n")[1]
    out.append(
        "## JSON paths (`answer_path`, `contexts_path`, `ingest_ids_path`)\n\n"
        + " ".join(syntax.split()).replace("``", "`")
        + "\n"
    )
    return "\n".join(out)
