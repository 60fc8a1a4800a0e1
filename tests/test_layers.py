"""The architecture, checked on the source: the folders are the layers, and each imports only
the layers below it (report at the bottom; capture and analysis on it; views on analysis; the
run layer on capture and analysis; the magics and the command line on top). See
docs/architecture.md, whose table of layers tests/test_docs.py checks against ALLOWED."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "ipycompile"

#: layer -> the layers it may import (itself included)
ALLOWED = {
    "report": {"report"},
    "capture": {"capture", "report"},
    "analysis": {"analysis", "report"},
    "views": {"views", "analysis", "report"},
    "run": {"run", "capture", "analysis", "report"},
    "magics": {"magics", "run", "views", "analysis", "capture", "report"},
    "cli": {"cli", "run", "views", "analysis", "capture", "report"},
}
#: modules the report layer must never import, not even lazily: it loads anywhere
REPORT_FORBIDDEN = {"torch", "IPython", "ipywidgets", "matplotlib", "pandas"}


def modules():
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def layer_of(path: Path) -> str:
    rel = path.relative_to(PKG)
    return rel.parts[0] if len(rel.parts) > 1 else ""


def imported_layers(path: Path, root: Path = PKG) -> set[tuple[str, int]]:
    """(layer or top-level module, line) of every ipycompile import in ``path``, lazy ones too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = path.relative_to(root).parts[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(here[: len(here) - (node.level - 1)]) if node.level > 1 else list(here)
                parts = base + (node.module.split(".") if node.module else [])
                if not parts:  # `from .. import x` at the package root: x is the layer
                    parts = [node.names[0].name]
            elif node.module and node.module.split(".")[0] == "ipycompile":
                parts = node.module.split(".")[1:] or [node.names[0].name]
            else:
                continue
            out.add((parts[0], node.lineno))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("ipycompile."):
                    out.add((a.name.split(".")[1], node.lineno))
                elif a.name == "ipycompile":  # the package root: every layer, whatever it is used for
                    out.add(("ipycompile", node.lineno))
    return out


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imported_modules(path: Path) -> set[str]:
    """The ipycompile modules ``path`` imports (lazy ones too), by their dotted names."""
    names = {module_name(p) for p in modules()}
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                target = ".".join(parts[: len(parts) - node.level + 1]) + (f".{node.module}" if node.module else "")
            else:
                target = node.module or ""
            for a in node.names:
                out.add(f"{target}.{a.name}" if f"{target}.{a.name}" in names else target)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return {m for m in out if m in names and m != module_name(path)}


def test_the_folders_are_the_layers():
    entries = {p.name for p in PKG.iterdir() if p.name != "__pycache__"}
    assert entries - set(ALLOWED) <= {"__init__.py", "__main__.py"}, entries - set(ALLOWED)
    assert {"capture", "report", "analysis", "views", "run", "magics"} <= entries


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_imports_point_down_only(path):
    layer = layer_of(path)
    if not layer:  # the package's __init__ / __main__ compose the layers
        return
    bad = [(target, line) for target, line in imported_layers(path) if target not in ALLOWED[layer]]
    assert not bad, f"{path.relative_to(PKG)} ({layer}) imports up or across: {bad}"


@pytest.mark.parametrize("path", [p for p in modules() if layer_of(p) == "report"], ids=lambda p: p.name)
def test_the_report_imports_no_torch_ipython_or_view(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}
    assert not names & REPORT_FORBIDDEN, names & REPORT_FORBIDDEN


def test_the_checker_sees_an_upward_import(tmp_path):
    """The rule above is only worth something if it catches a violation."""
    root = tmp_path / "ipycompile"
    fake = root / "report" / "probe.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("def f():\n    from ..views.html import save_html\n    import ipycompile.run.cell\n")
    assert imported_layers(fake, root) == {("views", 2), ("run", 3)}


def test_no_two_modules_import_each_other():
    """A module that needs part of another that needs it back shares a third module (``capture/logfile.py``
    for the reader and the read-ahead process, ``analysis/errors.py`` for the doctor and its passes); a
    package's ``__init__`` composing its modules is not a circle."""
    graph = {module_name(p): imported_modules(p) for p in modules() if p.name != "__init__.py"}
    circles = sorted({tuple(sorted((a, b))) for a, targets in graph.items() for b in targets
                      if a in graph.get(b, ())})
    assert not circles, circles


#: The layers above capture that may use regular expressions, each over text that is not torch's (issue 39
#: section 3: torch's text is read in ``capture/``, once, into records; the doctor, the run layer and the views
#: read records). Keep this list short: a new entry names the text its patterns read and why it is not torch's.
REGEX_ALLOWED = {
    # an input's expression in the user's names (``self.scale``, ``holder['k']``)
    "analysis/recompiles/reading.py",
    # whether a guarded value capture recorded is an int literal
    "analysis/recompiles/frame.py",
    # the name of the user's function, made an identifier for the custom op the fix defines
    "analysis/breaks/rules/custom_op.py",
    # a ``logging.info(`` call in the user's source line
    "analysis/breaks/rules/reorderable_logging_functions.py",
    # the user's ``if`` line
    "analysis/breaks/rules/torch_cond.py",
    # a version check in the library source the report keeps (``is_torch_greater_or_equal``), and the shape of a
    # module path built from the user's names
    "analysis/breaks/levers.py",
    # the user's argument naming a run (``%compile_history 3``)
    "run/history_log.py",
    # the operating system's ``/proc/self/status``
    "run/memory.py",
    # our own saved tags of a sweep's devices and dtypes (``torch.device('cuda')``)
    "run/sweeps.py",
    # our own text: the paths of a state snapshot (``m[attr[w]]``), shown as an expression; a fix is read from
    # its record (``Suggestion.fix``), never from its code
    "run/verify.py",
    # syntax highlighting and excerpts of code the page shows (a lexer: no meaning read)
    "views/html.py",
    # our own page's placeholders, ids and links, found in the HTML we rendered (no text of torch's)
    "views/page_files.py",
}
#: the layers over capture whose modules are checked
REGEX_CHECKED = ("analysis", "run", "views")


def regex_uses(path: Path) -> list[int]:
    """The lines of ``path`` that import the ``re`` module (``import re``, ``import re as x``,
    ``from re import ...``), lazy imports too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Import) and any(a.name == "re" for a in n.names)]
    lines += [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "re" and not n.level]
    return sorted(lines)


def test_torchs_text_is_read_in_capture_only():
    """No module of the doctor, the run layer or the views uses a regular expression (the tool every reader
    of torch's text here was written with), but those of :data:`REGEX_ALLOWED`; and each of those still does
    (an entry no longer needed is removed)."""
    found = {str(p.relative_to(PKG)): regex_uses(p) for p in modules() if layer_of(p) in REGEX_CHECKED}
    users = {m for m, lines in found.items() if lines}
    unexpected = {m: found[m] for m in sorted(users - REGEX_ALLOWED)}
    assert not unexpected, (f"regular expressions outside capture/ (lines {unexpected}): read torch's text in "
                            "capture/parse/ into a record, or add the module to REGEX_ALLOWED with why its text is not torch's")
    assert not REGEX_ALLOWED - users, f"allowed but no longer used: {sorted(REGEX_ALLOWED - users)}"


def test_the_regex_checker_sees_every_form(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import re\nimport os, re as rx\ndef f():\n    from re import compile\n    import ree\n")
    assert regex_uses(probe) == [1, 2, 4]
