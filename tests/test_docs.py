"""The documentation checked against the package: the README's options table against the
options as they are declared (``OPTION_NAMES``, and the ``%%compile`` flags that spell them)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

#: the magic's own flags, which are not run options: a sweep, where the report goes, showing nothing
MAGIC_ONLY = {"sweep", "output", "quiet"}
#: run options a Python call may give but the magic sets itself: a magic run is always recorded, and
#: its fixes are tried after the report shows (``options`` is ``--option KEY=VALUE``)
NOT_FLAGS = {"record", "verify_later"}


def table_rows(text: str, header: str) -> list[list[str]]:
    """The rows of the markdown table whose header line is ``header``, as lists of cells."""
    lines = text.splitlines()
    start = lines.index(header) + 2  # the header, then the |---| line
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


def documented_flags(text: str) -> list[str]:
    """The flags the README's ``%%compile`` options table documents, in order (``--dynamic`` /
    ``--no-dynamic`` is two)."""
    rows = table_rows(text, "| option | meaning | default |")
    assert rows, "the README has no %%compile options table"
    return [flag for row in rows for flag in re.findall(r"`(-{1,2}[a-z][a-z-]*)", row[0])]


def magic_flags() -> dict[str, str]:
    """``%%compile``'s flags, each with the name its parser gives it."""
    from ipycompile.magics.compile_magic import CompileMagics

    return {s: a.dest for a in CompileMagics.compile.parser._actions for s in a.option_strings if s not in ("-h", "--help")}


def test_the_readmes_options_table_lists_exactly_the_run_options():
    from ipycompile.run.options import OPTION_NAMES

    flags, declared = documented_flags(README.read_text(encoding="utf-8")), magic_flags()
    assert len(flags) == len(set(flags)), [f for f in flags if flags.count(f) > 1]
    assert set(flags) == set(declared), {"documented, not a flag": sorted(set(flags) - set(declared)),
                                         "a flag not documented": sorted(set(declared) - set(flags))}
    names = {{"option": "options"}.get(declared[f], declared[f]) for f in flags} - MAGIC_ONLY
    assert names == set(OPTION_NAMES) - NOT_FLAGS, {"documented, not an option": sorted(names - set(OPTION_NAMES)),
                                                    "an option not documented": sorted(set(OPTION_NAMES) - NOT_FLAGS - names)}


def test_the_table_check_sees_a_missing_and_an_unknown_flag():
    """The check above is only worth something if it fails on a table that drifted."""
    text = README.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `--fresh` |"))
    drifted = documented_flags(text.replace(row, row.replace("`--fresh`", "`--frseh`")))
    assert "--fresh" not in drifted and "--frseh" in drifted and set(drifted) != set(magic_flags())


def test_the_readme_keeps_the_two_commands_ci_runs():
    """The developers' guide: the README's two commands set up and run the quickstart and the tests, and
    ``.ci/run`` calls that test command."""
    text = README.read_text(encoding="utf-8")
    assert re.search(r"^make demo +# set up \.venv, then run the quickstart notebook", text, re.M)
    assert re.search(r"^make test +# set up \.venv, then run the test suite", text, re.M)
    assert re.search(r"^make test$", (ROOT / ".ci" / "run").read_text(encoding="utf-8"), re.M)


def test_the_readmes_links_to_docs_exist():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(((?:docs|tutorials)/[^)#]+)", text)
    assert links and all((ROOT / link).exists() for link in links), [l for l in links if not (ROOT / l).exists()]
    assert {p.name for p in (ROOT / "docs").glob("*.md")} <= {Path(link).name for link in links}


# -- docs/architecture.md ---------------------------------------------------------------------------

ARCHITECTURE = ROOT / "docs" / "architecture.md"
PKG = ROOT / "ipycompile"
#: ``register_*`` functions that fill no registry of ours
NOT_REGISTRIES = {"register_source": "puts a cell's text in Python's own linecache"}


def test_the_architecture_lists_every_layer_with_the_imports_the_test_allows():
    from test_layers import ALLOWED

    rows = table_rows(ARCHITECTURE.read_text(encoding="utf-8"), "| layer | may import | what it holds |")
    layers = {row[0].strip("`"): {n.strip() for n in row[1].split(",")} for row in rows}
    folders = {p.name for p in PKG.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert set(layers) == folders, {"listed, not a folder": set(layers) - folders, "not listed": folders - set(layers)}
    assert layers == ALLOWED, {k: (layers.get(k), ALLOWED.get(k)) for k in set(layers) | set(ALLOWED)
                               if layers.get(k) != ALLOWED.get(k)}
    for row in rows:  # every module or folder a layer's row names is there
        named = re.findall(r"`([\w/]+(?:\.py|/))`", row[2])
        missing = [n for n in named if not (PKG / row[0].strip("`") / n).exists()]
        assert named and not missing, (row[0], missing)


def registries() -> list[str]:
    rows = table_rows(ARCHITECTURE.read_text(encoding="utf-8"), "| registry | what registers there | filled by |")
    assert rows, "docs/architecture.md has no registries table"
    return [row[0].strip("`") for row in rows]


def test_the_registries_the_architecture_names_are_in_the_package():
    import importlib

    missing = []
    for name in registries():
        module, _, attr = name.rpartition(".")
        if not hasattr(importlib.import_module(f"ipycompile.{module}"), attr):
            missing.append(name)
    assert not missing, missing


def test_every_register_function_fills_a_registry_the_architecture_names():
    """A ``register_*`` function of the package writes into a registry: the table names its module's."""
    import ast

    listed = {name.rpartition(".")[0] for name in registries()}
    unlisted = []
    for path in PKG.rglob("*.py"):
        module = ".".join(path.relative_to(PKG).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("register_") \
                    and node.name not in NOT_REGISTRIES and module not in listed:
                unlisted.append(f"{module}.{node.name}")
    assert not unlisted, unlisted
