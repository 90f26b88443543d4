"""The engine's import graph: no cycle between its packages, and no package imports a layer above its own
(the layers of docs/architecture.md). Lazy imports inside functions count too."""

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "engine"
# bottom to top; a package may import its own layer and the ones below
LAYERS = [
    {
        "errors",
        "params",
        "paths",
        "files",
        "secrets",
        "registry",
        "types",
        "events",
        "progress",
        "devices",
        "folder_lock",
        "file_lock",
        "attacker_states",
        "retry",
        "cpu_share",
        "capabilities",
    },
    {"corpora", "dialog_task", "queries", "embedders", "detectors", "generators", "metrics", "summaries"}
    | {"canaries", "tenancy"},
    {"store", "defenses", "attacks", "rag"},
    {"config", "targets", "runs", "pipeline", "jobs", "executors", "views", "saved"},
    {"compare", "compare_task", "sweep", "membership_table", "analysis", "plots", "report", "audit"},
    {"cli", "__main__", "__init__"},
]


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def import_graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in ENGINE.rglob("*.py"):
        rel = path.with_suffix("").relative_to(ENGINE.parent).parts
        name = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
        here = list(rel[:-1]) if rel[-1] == "__init__" else list(rel[:-1])
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                targets = [target]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for t in targets:
                if t.split(".")[0] != "engine":
                    continue
                a, b = _package(name), _package(t)
                if a != b:
                    edges.setdefault(a, set()).add(b)
    return edges


def _layer(pkg: str) -> int:
    for i, layer in enumerate(LAYERS):
        if pkg in layer:
            return i
    raise AssertionError(f"engine/{pkg} is in no layer: add it to LAYERS (and to docs/architecture.md)")


def test_every_engine_package_has_a_layer():
    for p in ENGINE.iterdir():
        if p.name.startswith(("_", ".")) and p.name not in ("__init__.py", "__main__.py"):
            continue
        if p.is_dir() or p.suffix == ".py":
            _layer(p.stem)


def test_no_package_imports_a_layer_above_its_own():
    upward = [(a, b) for a, bs in import_graph().items() for b in bs if _layer(b) > _layer(a)]
    assert upward == [], f"upward imports: {upward}"


def cycles(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every pair of nodes of ``edges`` that reach each other (sorted pairs)."""

    def reach(a: str) -> set[str]:
        seen, todo = set(), [a]
        while todo:
            for b in edges.get(todo.pop(), ()):
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        return seen

    return sorted({tuple(sorted((a, b))) for a, bs in edges.items() for b in bs if a in reach(b)})


def test_no_cycle_between_packages():
    found = cycles(import_graph())
    assert found == [], f"import cycles between packages: {found}"


# -------------------------------------------------------------- the whole tree: app -> pages -> components -> engine
ROOT = ENGINE.parent
TREE_LAYERS = ["engine", "components", "pages", "app"]  # bottom to top


def _modules_imported(path: Path, package: list[str]) -> set[str]:
    """Every module ``path`` imports (absolute names; lazy imports inside functions included)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - (node.level - 1)] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)  # ``from components import state``
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def tree_graph() -> dict[str, set[str]]:
    """Module-level import graph of app.py, pages/, components/ and engine/ (their own modules only)."""
    files = [
        ROOT / "app.py",
        *sorted((ROOT / "pages").glob("*.py")),
        *sorted((ROOT / "components").glob("*.py")),
        *sorted(ENGINE.rglob("*.py")),
    ]
    names = {}
    for f in files:
        parts = list(f.with_suffix("").relative_to(ROOT).parts)
        names[f] = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    known = set(names.values())
    graph = {}
    for f, name in names.items():
        package = list(f.with_suffix("").relative_to(ROOT).parts[:-1])
        graph[name] = {m for m in _modules_imported(f, package) if m in known and m != name}
    return graph


def _tree_layer(module: str) -> int:
    return TREE_LAYERS.index(module.split(".")[0])


def test_no_module_imports_a_layer_above_its_own_in_the_whole_tree():
    upward = sorted((a, b) for a, bs in tree_graph().items() for b in bs if _tree_layer(b) > _tree_layer(a))
    assert upward == [], f"upward imports (app -> pages -> components -> engine): {upward}"


def test_pages_import_no_other_page():
    across = sorted(
        (a, b) for a, bs in tree_graph().items() for b in bs if a.startswith("pages.") and b.startswith("pages.")
    )
    assert across == [], f"a page imports another page: {across}"


def test_no_import_cycle_between_app_modules():
    """No cycle among the modules of pages/ and components/ (the engine's packages have their own test)."""
    graph = {
        a: {b for b in bs if not b.startswith("engine")} for a, bs in tree_graph().items() if not a.startswith("engine")
    }
    found = cycles(graph)
    assert found == [], f"import cycles: {found}"


def _quoted_names(kinds: tuple[str, ...]) -> list[str]:
    """Quoted names of the given plugin kinds in pages/ and components/ (a dict key such as ``rep["threshold"]``
    is a field of a record, not a plugin, and does not count)."""
    from engine.registry import registered

    names = {n for k in kinds for n in registered(k)}
    found = []
    for path in [*sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "components").glob("*.py"))]:
        tree = ast.parse(path.read_text())
        keys = {id(n.slice) for n in ast.walk(tree) if isinstance(n, ast.Subscript)}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value in names
                and id(node) not in keys
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
    return found


def test_pages_and_components_name_no_plugin():
    """Lists and branches in the UI come from the plugins' declarations (``offline_retrievers``, a generator's
    ``packaged_models`` / ``hosted``, a defense's ``token_report``), never from a quoted name: a retriever,
    generator, defense, attack or detector named in pages/ or components/ fails; defaults a page preselects are
    the engine's named defaults (e.g. ``QUICK_CONFIGURATIONS``, ``LEVEL3_DEFENSES``, ``PAPER_DETECTORS``)."""
    found = _quoted_names(
        (
            "retrievers",
            "generators",
            "defenses",
            "extraction-attacks",
            "poisoning-attacks",
            "membership-attacks",
            "detectors",
        )
    )
    assert found == [], f"plugin names written in the UI: {found}"
