"""MkDocs hook: the pages link the repository's committed results (``../results/...``, right on GitHub too);
the site copies those files in and points the links at the copies."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(\.\./results/([^)\s]+)\)")
PREFIX = "_repo/results/"


def on_files(files, config):
    """Every committed file the pages link under ``results/`` becomes a site file under ``_repo/results/``."""
    for page in Path(config["docs_dir"]).rglob("*.md"):
        for rel in LINK.findall(page.read_text(encoding="utf-8")):
            src = REPO / "results" / rel
            if src.is_file() and files.get_file_from_path(PREFIX + rel) is None:
                files.append(File.generated(config, PREFIX + rel, abs_src_path=str(src)))
    return files


def on_page_markdown(markdown, page, config, files):
    """``../results/X`` → the copy's path relative to this page."""
    up = posixpath.relpath(PREFIX, posixpath.dirname(page.file.src_uri) or ".")
    return LINK.sub(lambda m: f"]({up}/{m.group(1)})", markdown)
