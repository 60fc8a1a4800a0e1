"""The user's code as the report kept it (``CompileReport.source_context``), parsed.

Pure: reads only the report. A report without kept source (a trace file, a saved
report of old) still gives the one line torch recorded for each frame.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, Optional

if TYPE_CHECKING:  # pragma: no cover
    from ..report import CompileReport

__all__ = ["Sources", "Parsed", "indent_of", "apply_suggestion"]

def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _blank_magics(line: str) -> str:
    return "" if line.lstrip().startswith(("%", "!")) else line


@dataclass
class Parsed:
    """One kept span of a file, parsed: ``tree`` has the file's own line numbers."""

    filename: str
    first_line: int
    lines: list[str]  # the span's lines as kept (original indentation)
    tree: ast.Module
    text: str  # what was parsed (dedented, magics blanked; line N of the file is line N here)
    dedent: int  # columns removed from every line
    module: str = ""
    parents: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node

    @property
    def last_line(self) -> int:
        return self.first_line + len(self.lines) - 1

    def line(self, n: int) -> str:
        i = n - self.first_line
        return self.lines[i] if 0 <= i < len(self.lines) else ""

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.text, node) or ast.unparse(node)

    def statements_at(self, n: int) -> list[ast.stmt]:
        """The statements whose first line is ``n``, or that span ``n``, innermost last."""
        out = [s for s in ast.walk(self.tree) if isinstance(s, ast.stmt) and s.lineno <= n <= (s.end_lineno or s.lineno)]
        return sorted(out, key=lambda s: (s.lineno, -(s.end_lineno or s.lineno)))

    def innermost_statement(self, n: int) -> Optional[ast.stmt]:
        stmts = [s for s in self.statements_at(n) if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        # the innermost: the one starting last, and of those the shortest
        return max(stmts, key=lambda s: (s.lineno, -(s.end_lineno or s.lineno))) if stmts else None

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parents:
            node = self.parents[node]
            yield node

    def scope_of(self, node: ast.AST) -> ast.AST:
        """The function (or module) whose body holds ``node``."""
        for a in self.ancestors(node):
            if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return a
        return self.tree

    def functions(self, name: str) -> list[ast.FunctionDef]:
        return [n for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]

    def source_lines(self, first: int, last: int) -> list[str]:
        return [self.line(n) for n in range(first, last + 1)]

    def block_text(self, stmts: list[ast.stmt]) -> str:
        """The source of consecutive statements, dedented to column 0."""
        if not stmts:
            return ""
        first, last = _first_line(stmts[0]), stmts[-1].end_lineno or stmts[-1].lineno
        return textwrap.dedent("\n".join(self.source_lines(first, last))).strip("\n")


def _first_line(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)])


class Sources:
    """Every kept span of a report, by file."""

    def __init__(self, report: "CompileReport") -> None:
        self._spans: dict[str, list] = {}
        for s in getattr(report, "source_context", None) or []:
            self._spans.setdefault(s.filename, []).append(s)
        self._parsed: dict[tuple[str, int], Optional[Parsed]] = {}

    def line(self, filename: str, n: Optional[int], fallback: str = "") -> str:
        for s in self._spans.get(filename, []):
            if n is not None and s.first_line <= n <= s.last_line:
                return s.lines[n - s.first_line]
        return fallback

    def module(self, filename: str) -> str:
        return next((s.module for s in self._spans.get(filename, []) if s.module), "")

    def parsed(self, filename: str, n: Optional[int], line: str = "") -> Optional[Parsed]:
        """The kept span of ``filename`` holding line ``n``, parsed; without one, ``line``
        (the one line torch recorded) when it is a whole statement; else None."""
        if n is None:
            return None
        for s in self._spans.get(filename, []):
            if s.first_line <= n <= s.last_line:
                key = (filename, s.first_line)
                if key not in self._parsed:
                    self._parsed[key] = _parse(s)
                return self._parsed[key]
        if line.strip():
            from ..report.model import SourceSpan

            key = (filename, -n)
            if key not in self._parsed:
                self._parsed[key] = _parse(SourceSpan(filename, n, [line.strip()]))
            return self._parsed[key]
        return None

    def find_def(self, filename: str, name: str, before: Optional[int] = None) -> Optional[tuple[Parsed, ast.FunctionDef]]:
        """The ``def name`` of ``filename`` the report kept: the last one before line ``before``."""
        found = [(p, d) for p in self.parsed_spans(filename) for d in p.functions(name)]
        if not found:
            return None
        if before is not None:
            found = [fd for fd in found if fd[1].lineno <= before] or found
        return max(found, key=lambda fd: fd[1].lineno)

    def parsed_spans(self, filename: str) -> list[Parsed]:
        out = []
        for s in self._spans.get(filename, []):
            p = self.parsed(filename, s.first_line)
            if p is not None:
                out.append(p)
        return out


def _parse(span) -> Optional[Parsed]:
    lines = [_blank_magics(ln) for ln in span.lines]
    body = textwrap.dedent("\n".join(lines))
    first = next((ln for ln in lines if ln.strip()), "")
    dedent = len(indent_of(first)) - len(indent_of(textwrap.dedent(first))) if first else 0
    text = "\n" * (span.first_line - 1) + body
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    return Parsed(span.filename, span.first_line, list(span.lines), tree, text, dedent, span.module)


def apply_suggestion(text: str, suggestion) -> str:
    """``text`` (the source of the suggestion's file: a cell, a script) with the lines the
    suggestion (or a fix's :class:`~ipycompile.report.Rewrite`) rewrites replaced by its code, indented like the first line it replaces:
    what a user does by hand. ``text`` unchanged when the suggestion rewrites no lines."""
    if not suggestion or suggestion.first_line is None or suggestion.last_line is None:
        return text
    lines = text.split("\n")
    first, last = suggestion.first_line, suggestion.last_line
    pad = indent_of(lines[first - 1]) if 0 < first <= len(lines) else ""
    new = [pad + ln if ln.strip() else "" for ln in suggestion.code.split("\n")]
    return "\n".join(lines[: first - 1] + new + lines[last:])
