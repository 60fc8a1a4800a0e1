"""What a fix does, as data: :class:`Fix`, on :attr:`Suggestion.fix <ipycompile.report.Suggestion.fix>`.

A doctor's rule fills the record (a setting of torch's, a mark on an expression, a statement run on an
input before the call, a compile option, a rewrite of the user's lines, a statement moved out of the
compiled code); the suggestion's ``code`` is the record rendered (:attr:`Fix.code`, the one rendering),
and whoever applies a fix (``--verify-fixes``, the doctor corpus's harness) reads the record, never
the text. Code that is words or a template (``...``) has no record."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional

__all__ = ["Fix", "Setting", "Mark", "Rebind", "Rewrite", "MARK_FUNCTIONS", "REBINDS", "rewrite"]

#: the marks torch offers on a tensor's dimension, and the module each is written from
MARK_FUNCTIONS = {"mark_dynamic": "torch._dynamo", "maybe_mark_dynamic": "torch._dynamo",
                  "mark_unbacked": "torch._dynamo.decorators"}
#: what a statement run on an input before the call makes of it: ``x = x.contiguous()``, ``i = torch.tensor(i)``
REBINDS = {"contiguous": "{0} = {0}.contiguous()", "tensor": "{0} = torch.tensor({0})"}
#: a comment beside a compile option, the magic's way to pass it
_OPTION_NOTES = {("dynamic", "True"): "%%compile --dynamic"}


def _line(code: str, comment: str) -> str:
    return f"{code}  # {comment}" if comment else code


@dataclass
class Setting:
    """``torch._dynamo.config.NAME = VALUE`` (``op`` ``"="``) or ``...NAME.add(VALUE)`` (``op`` ``"add"``);
    ``module`` ``"dynamo"`` or ``"inductor"``; ``value`` is Python source (``"True"``, ``"64"``,
    ``"logging.getLogger('x').info"``), evaluated with the fix's imports where it is applied."""

    module: str
    name: str
    value: str
    op: str = "="
    comment: str = ""  # the words after the statement: "before the first call"

    @property
    def statement(self) -> str:
        target = f"torch._{self.module}.config.{self.name}"
        return f"{target}.add({self.value})" if self.op == "add" else f"{target} = {self.value}"

    @property
    def key(self) -> str:
        """``torch._dynamo.config.capture_scalar_outputs``: the setting's full name."""
        return f"torch._{self.module}.config.{self.name}"


@dataclass
class Mark:
    """``torch._dynamo.mark_dynamic(target, dim)`` (or ``maybe_mark_dynamic``, ``mark_unbacked``) on the tensor
    ``target`` (an expression of the user's names: ``x``, ``batch["ids"]``, ``box_lists[0].tensor``), before the call."""

    function: str  # a key of MARK_FUNCTIONS
    target: str
    dim: int
    comment: str = ""

    @property
    def statement(self) -> str:
        return f"{MARK_FUNCTIONS[self.function]}.{self.function}({self.target}, {self.dim})"


@dataclass
class Rebind:
    """A name of the user's given a new value before the call: ``how`` ``"contiguous"`` (``x = x.contiguous()``)
    or ``"tensor"`` (a number held in a 0-d tensor: ``i = torch.tensor(i)``)."""

    target: str
    how: str  # a key of REBINDS
    comment: str = ""

    @property
    def statement(self) -> str:
        return REBINDS[self.how].format(self.target)


@dataclass
class Rewrite:
    """Lines ``first_line``..``last_line`` (inclusive) of ``filename`` replaced by ``text`` (indented as the
    first line it replaces, where it is applied)."""

    filename: str
    first_line: int
    last_line: int
    text: str

    @property
    def code(self) -> str:
        """The new text, as a suggestion's ``code`` shows it (what ``apply_suggestion`` writes in)."""
        return self.text


@dataclass
class Fix:
    """What a suggestion's code does. Either a :class:`Rewrite` of the user's lines (with ``moved``: the
    statement it takes out of the compiled code, to run before the call), or statements run before the
    first call: ``imports``, ``settings``, ``rebinds``, ``marks`` and ``compile_options``
    (``torch.compile(..., dynamic=True)``: ``{"dynamic": "True"}``, values as Python source), with ``notes``
    (comment lines: an alternative in words) after them. ``lead`` is a comment line above the code;
    ``then`` a second part, written after a blank line (the recompile limit's: first the cause's fix, then a
    higher limit)."""

    settings: list[Setting] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    rebinds: list[Rebind] = field(default_factory=list)
    compile_options: dict[str, str] = field(default_factory=dict)
    rewrite: Optional[Rewrite] = None
    moved: str = ""
    imports: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    lead: str = ""
    then: Optional[Fix] = None

    @property
    def code(self) -> str:
        """The fix as code (what ``Suggestion.code`` shows): the one rendering of the record."""
        if self.rewrite is not None:
            return self.rewrite.text
        lines = [f"# {self.lead}"] if self.lead else []
        lines += self.imports
        lines += [_line(s.statement, s.comment) for s in self.settings]
        lines += [_line(r.statement, r.comment) for r in self.rebinds]
        lines += [_line(m.statement, m.comment) for m in self.marks]
        lines += [_line(f"torch.compile(..., {k}={v})", _OPTION_NOTES.get((k, v), ""))
                  for k, v in self.compile_options.items()]
        lines += [f"# {n}" for n in self.notes]
        text = "\n".join(lines)
        if self.then is not None:
            text = (text + "\n\n" if text else "") + self.then.code
        return text

    def parts(self) -> list[Fix]:
        """This fix and the parts written after it (``then``), in order."""
        return [self, *(self.then.parts() if self.then is not None else [])]

    @property
    def all_settings(self) -> list[Setting]:
        return [s for p in self.parts() for s in p.settings]

    @property
    def all_marks(self) -> list[Mark]:
        return [m for p in self.parts() for m in p.marks]

    @property
    def all_rebinds(self) -> list[Rebind]:
        return [r for p in self.parts() for r in p.rebinds]

    @property
    def all_compile_options(self) -> dict[str, str]:
        return {k: v for p in self.parts() for k, v in p.compile_options.items()}

    @property
    def all_imports(self) -> list[str]:
        return [i for p in self.parts() for i in p.imports]

    def marked(self, *marks: Mark) -> Fix:
        """This fix with ``marks`` added (a copy)."""
        return dataclasses.replace(self, marks=[*self.marks, *marks])


def rewrite(filename: str, first_line: int, last_line: Optional[int], text: str, moved: str = "") -> Fix:
    """A fix that rewrites lines ``first_line``..``last_line`` of ``filename`` as ``text``."""
    return Fix(rewrite=Rewrite(filename, first_line, last_line if last_line is not None else first_line, text),
               moved=moved)
