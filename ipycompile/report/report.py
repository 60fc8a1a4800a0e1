"""``CompileReport``: everything one capture saw, as plain data."""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass, field
from typing import Any, Optional

from .model import (
    Autotune,
    Compile,
    CompileId,
    CompileTime,
    ControlFlowNode,
    CudaGraphs,
    DumpedFile,
    EagerComparison,
    EagerDifference,
    EagerRun,
    Failure,
    FixVerification,
    Graph,
    GraphBreak,
    GuardSet,
    Kernel,
    Profile,
    RawArtifact,
    Recompile,
    ShapeGuard,
    OpSchema,
    SourceSpan,
    Stats,
    TorchWarning,
    TraceOrigin,
    UnrolledLoop,
    UserFrame,
)
from .model import unreadable_marked
from .owners import CodeLayout, Owner, display_path, owner
from .files import refuse_input, write_atomic
from .serialize import ReportFormatError, loads, report_from_dict, to_jsonable, unjsonable_field
from .text import capped_lines, one_line, short_name

#: 3: the eager comparison's output check one record (``EagerComparison.check``); 2: Profile made of
#: records (settings, first_call, steady, ...); 1: flat
SCHEMA_VERSION = 3

#: Views register here, so the report never imports a view: ``ipycompile`` (the
#: package) registers its HTML view when it is imported, and any view may add its own.
_renderers: list = []  # render(report) -> {mimetype: data}, for notebook display
_html_writers: list = []  # write(report, path) -> path, for CompileReport.to_html
_text_renderers: list = []  # render(report, hints) -> str, for str(report) and report.summary(): the view as text
#: Capture registers here what it reads from torch's text at load time, for a report saved before a record
#: was kept (``ipycompile.capture`` registers it when imported): ``fill(report)``, run by :meth:`CompileReport.from_dict`
_load_fills: list = []


def register_renderer(render) -> None:
    """Register ``render(report) -> {mimetype: data}`` as the notebook display of reports
    (the last one registered is used)."""
    if render not in _renderers:
        _renderers.append(render)


def register_html_writer(write) -> None:
    """Register ``write(report, path) -> path``, what :meth:`CompileReport.to_html` calls."""
    if write not in _html_writers:
        _html_writers.append(write)


#: A saved report larger than this is refused before it is read (reports of large models are tens of MB).
MAX_REPORT_BYTES = 256 << 20


_JSON_STARTS = frozenset(bytes([c]) for c in b'{["-0123456789tfnIN')


def _read_report_file(name: str) -> bytes:
    """The bytes of a saved report, checked before they are read (see :meth:`CompileReport.load`)."""
    st = os.stat(name)  # FileNotFoundError etc. name the path
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory (a saved report is a JSON file)", name)
    if not stat.S_ISREG(st.st_mode):
        raise ReportFormatError(f"{name}: not a regular file (a pipe, a socket or a device): a saved report is a JSON file")
    if st.st_size > MAX_REPORT_BYTES:
        raise ReportFormatError(f"{name}: {st.st_size:,} bytes, larger than a saved report may be "
                                f"({MAX_REPORT_BYTES >> 20} MiB): not read")
    with open(name, "rb") as f:
        head = f.read(4096)
        start = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")[:1]
        if start not in _JSON_STARTS and (start or len(head) == 4096):  # refused before the rest is read
            raise ReportFormatError(f"{name}: not a report: the text is not JSON (it starts with {head[:16]!r})")
        return head + f.read()


#: Text views of the doctor's other results, by name (``"rank_divergence"``: ``str(RankDivergence)``), filled by the
#: views (``views.install``) so that the doctor formats no view and imports none
_text_views: dict = {}


def register_text_view(name: str, render) -> None:
    """Register ``render(value) -> str`` as the text of the doctor's result ``name``."""
    _text_views[name] = render


def text_view(name: str):
    """The text view registered for ``name``; None when none is."""
    return _text_views.get(name)


def register_load_fill(fill) -> None:
    """Register ``fill(report)``, run on each report :meth:`CompileReport.from_dict` loads: capture's
    readers fill the records a report saved by an older version lacks (read from the torch text it keeps)."""
    if fill not in _load_fills:
        _load_fills.append(fill)


def register_text_renderer(render) -> None:
    """Register ``render(report, hints=None) -> str`` as ``str(report)`` and
    :meth:`CompileReport.summary` (the last one registered is used). ``hints``, when given,
    words where the rest is for where the text is shown (the command line's options)."""
    if render not in _text_renderers:
        _text_renderers.append(render)



@dataclass
class CompileReport:
    """What torch.compile did while a capture was open.

    ``compiles`` has one entry per compile id; ``graphs``, ``kernels``,
    ``guards`` and ``control_flow`` are keyed back to it through ``compile_id``.
    """

    compiles: list[Compile] = field(default_factory=list)
    graphs: list[Graph] = field(default_factory=list)
    graph_breaks: list[GraphBreak] = field(default_factory=list)
    recompiles: list[Recompile] = field(default_factory=list)
    guards: list[GuardSet] = field(default_factory=list)
    #: the guards torch added on symbolic sizes while compiling each version, in order (capture reads
    #: ``guard_added_fast``): what the traced code asked of a dynamic size, and where
    shape_guards: list[ShapeGuard] = field(default_factory=list)
    kernels: list[Kernel] = field(default_factory=list)
    control_flow: list[ControlFlowNode] = field(default_factory=list)
    compile_time: CompileTime = field(default_factory=CompileTime)
    failures: list[Failure] = field(default_factory=list)
    unrolled_loops: list[UnrolledLoop] = field(default_factory=list)  # from the doctor
    torch_warnings: list[TorchWarning] = field(default_factory=list)  # torch's Python warnings, read by capture
    #: how the compiled results differ from eager's, from the doctor (analysis/semantics.py): shown first
    eager_differences: list[EagerDifference] = field(default_factory=list)
    #: torch compiled nothing, or ran most of the user's code eagerly, from the doctor (analysis/eager_run.py): shown first
    eager_run: Optional[EagerRun] = None
    #: Dynamo ran compiled code from its cache while the capture was open (capture's hook: torch logs no such call)
    ran_cached_code: bool = False
    #: Dynamo held compiled graphs when the capture opened (code compiled earlier, which may have run: see
    #: ``ran_cached_code``); None where unknown (a log torch wrote alone)
    graphs_before: Optional[bool] = None
    autotuning: list[Autotune] = field(default_factory=list)  # max-autotune's choices, per op
    cudagraphs: list[CudaGraphs] = field(default_factory=list)  # CUDA graphs per compile
    #: files of generated code torch wrote whole into its trace (``dump_file``: an FX GraphModule's
    #: ``<eval_with_key>.N`` that Dynamo traced), in the order torch wrote them
    dumped_files: list[DumpedFile] = field(default_factory=list)
    artifacts: list[RawArtifact] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)
    torch_version: str = ""
    profile: Optional[Profile] = None  # set when the report comes from a profiled run (%%compile)
    sources: dict[str, str] = field(default_factory=dict)  # filename -> how to show it, e.g. "In [7]"
    # set when this run compiled nothing and reused compiled code: the run that compiled it ("run 3, In [5]");
    # compiles, graphs, breaks, recompiles, kernels, ... are then that run's, diagnosed, with this run's profile
    reused_from: str = ""
    source_context: list[SourceSpan] = field(default_factory=list)  # code around breaks and failures, at capture
    #: the schemas of the custom operators the breaks and failures name, read from torch's registry at capture
    op_schemas: list[OpSchema] = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION
    origin: Optional[TraceOrigin] = None  # set when read from a TORCH_TRACE log (ipycompile.load_trace); None: captured here
    # where code lived where this was captured (whose code a file is: report.owners); None: judged by path shape
    code_layout: Optional[CodeLayout] = None
    # torch._dynamo.config's global recompile limits ("recompile_limit", "accumulated_recompile_limit") while
    # the capture was open (read when it opened and when it closed; one that changed meanwhile is left out);
    # empty where unknown (a log torch wrote alone). A limit in effect that differs was set for the function.
    recompile_limits: dict[str, int] = field(default_factory=dict)
    # set by --verify-fixes (ipycompile.run.verify): what verifying the fixes on the user's cell covered
    fix_verification: Optional[FixVerification] = None
    # torch's own log lines about graph breaks and recompiles that %%compile kept out of the cell's output
    # (the report shows both; ipycompile.run.quiet), in order: the raw log, one click away in the views
    torch_log: list[str] = field(default_factory=list)
    #: each FX node's user line, by node name, read by capture from the graphs' ``# File:`` comments when the
    #: report was built (the first graph that names a node wins: Dynamo's, then post-grad, then AOT's); what
    #: names the allocations of a memory timeline made in generated code. None: a report saved before it was kept
    node_lines: Optional[dict[str, UserFrame]] = None

    # -- queries --------------------------------------------------------
    def owner(self, filename: str) -> Owner:
        """Whose code ``filename`` is (the user's, torch's, ipycompile's, another library's,
        generated), as the machine that captured this report laid code out."""
        return owner(filename, self.code_layout)

    @property
    def compiled_nothing(self) -> bool:
        """True when torch compiled nothing while the capture was open
        (compiled code was reused, or nothing was compiled at all). A report with
        :attr:`reused_from` compiled nothing: what it holds was compiled by an earlier run."""
        return bool(self.reused_from) or (not self.compiles and not self.failures)

    @property
    def ran_without_compiling(self) -> list[Compile]:
        """Frames torch gave up on and ran as plain Python (a break it could not handle, e.g. in a
        loop): torch and tlparse count them among failures (``fail_type`` set), but the code ran."""
        return [c for c in self.compiles if c.status == "skipped" and c.fail_type]

    @property
    def graph_break_count(self) -> int:
        """Graph breaks hit, counting repeats at one site."""
        return sum(b.count for b in self.graph_breaks)

    @property
    def ddp_splits(self) -> dict[CompileId, int]:
        """Compiles whose graph DDP's optimizer split at gradient-bucket boundaries, with the
        number of bucket subgraphs each became. These are not graph breaks: Dynamo captured one
        graph and DDP compiled it in pieces, so each bucket's all-reduce can start during backward."""
        out: dict[CompileId, int] = {}
        for g in self.graphs:
            if g.stage == "ddp_bucket":
                out[g.compile_id] = out.get(g.compile_id, 0) + 1
        return out

    def shared_callers(self, b: GraphBreak) -> list:
        """The user's lines that reach break ``b`` where torch stopped in the user's own function
        called from several of them (three ``Foo().attr = x`` lines reaching ``__setattr__``'s
        ``graph_break()``): its ``callers`` in the user's code, when there are two or more; else []."""
        if b.reached_from is not None:
            return []
        frames = [c for c in b.callers if c.filename and self.owner(c.filename) is Owner.USER]
        return frames if len(frames) >= 2 else []

    def compile(self, compile_id: "CompileId | str") -> Optional[Compile]:
        cid = CompileId.parse(compile_id) if isinstance(compile_id, str) else compile_id
        return next((c for c in self.compiles if c.compile_id == cid), None)

    def graphs_for(self, compile_id: "CompileId | str", stage: Optional[str] = None) -> list[Graph]:
        cid = CompileId.parse(compile_id) if isinstance(compile_id, str) else compile_id
        return [g for g in self.graphs if g.compile_id == cid and (stage is None or g.stage == stage)]

    def kernels_for(self, compile_id: "CompileId | str") -> list[Kernel]:
        cid = CompileId.parse(compile_id) if isinstance(compile_id, str) else compile_id
        return [k for k in self.kernels if k.compile_id == cid]

    # -- serialisation --------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CompileReport":
        """The report of :meth:`to_dict`'s form, every field checked against the model:
        :class:`~ipycompile.report.serialize.ReportFormatError` (a ``ValueError``) names
        the first field that does not fit, and what was expected. A report of an older schema
        is converted to this one first (schema 1: a flat ``Profile``, :meth:`Profile.from_v1`;
        schema 2: the output check's fields in ``EagerComparison``, :meth:`EagerComparison.from_v2`)."""
        version = data.get("schema_version") if isinstance(data, dict) else None
        if type(version) is int and version < SCHEMA_VERSION and isinstance(data.get("profile"), dict):
            profile = Profile.from_v1(data["profile"]) if version < 2 else data["profile"]
            if isinstance(profile.get("eager"), dict):
                profile = {**profile, "eager": EagerComparison.from_v2(profile["eager"])}
            data = {**data, "profile": profile, "schema_version": SCHEMA_VERSION}
        report = report_from_dict(cls, data, SCHEMA_VERSION)
        for fill in _load_fills:
            fill(report)
        return report

    def to_json(self, **kwargs: Any) -> str:
        """The report as standard JSON (no ``Infinity``/``NaN`` tokens: non-finite floats are saved
        as the strings ``"Infinity"``, ``"-Infinity"``, ``"NaN"`` and read back as floats)."""
        try:
            return json.dumps(self.to_dict(), allow_nan=False, **kwargs)
        except ReportFormatError as exc:
            raise ReportFormatError(f"{unjsonable_field(self)}: {exc}") from None

    @classmethod
    def from_json(cls, text: "str | bytes") -> "CompileReport":
        try:
            data = loads(text)
        except ValueError as exc:
            raise ReportFormatError(f"not a report: the text is not JSON ({exc})") from None
        return cls.from_dict(data)

    def save(self, path: "str | os.PathLike[str]") -> None:
        """Write the report as JSON to ``path``: serialised first, then written to a temporary file
        beside it and renamed over ``path`` (:func:`~ipycompile.report.files.atomic_writer`), so that
        a failure leaves an earlier file as it was. The trace log the report was read from is never
        overwritten (:class:`~ipycompile.report.files.OutputIsInputError`)."""
        text = self.to_json()
        refuse_input(path, self._inputs(), "the report's path")
        write_atomic(path, text)

    def _inputs(self) -> list[str]:
        """The files this report was read from (its trace log), which no output may overwrite."""
        return [self.origin.path] if self.origin is not None and self.origin.path else []

    @classmethod
    def load(cls, path: "str | os.PathLike[str]") -> "CompileReport":
        """The report saved at ``path``; ``ValueError`` naming the file (and the field) when it is not one.

        The file is checked before it is read: a path that is not a regular file (a directory,
        a FIFO, a device) is refused at once, as is one whose first bytes are not a JSON object
        or that is larger than :data:`MAX_REPORT_BYTES`."""
        name = os.fspath(path)
        text = _read_report_file(name)
        try:
            return cls.from_json(text)
        except ValueError as exc:
            raise ReportFormatError(f"{name}: {exc}") from None

    def op_schema(self, name: str, overload: str = "") -> Optional[OpSchema]:
        """The schema capture kept for the custom operator ``name`` ("mylib::op"), of ``overload``
        where one was named (else the default overload's); None where none was kept."""
        found = [s for s in self.op_schemas if s.name == name]
        want = "" if overload in ("", "default") else overload
        return next((s for s in found if s.overload == want), found[0] if found and not want else None)

    def where(self, filename: str, lineno: Optional[int] = None) -> str:
        """A place as the user knows it: ``In [7], line 3`` for notebook cells,
        ``transformers/modeling_utils.py:4635`` for installed packages and the standard
        library (the path it is imported by), ``file.py:3`` otherwise."""
        label = self.sources.get(filename)
        if label:
            return f"{label}, line {lineno}" if lineno is not None else label
        name = short_name(one_line(display_path(filename, self.code_layout))) if filename else "?"
        return f"{name}:{lineno}" if lineno is not None else name

    def cell_number(self, filename: str) -> Optional[int]:
        """The execution count of the notebook cell ``filename`` is (``In [7]`` -> 7), else None."""
        import re

        m = re.fullmatch(r"In \[(\d+)\]", self.sources.get(filename, ""))
        return int(m.group(1)) if m else None

    def readable(self, text: str) -> str:
        """``text`` (e.g. a recompile reason) with torch's file references to notebook cells,
        often cut to their last characters (``mp/ipykernel_1/35815.py:12``), written as the
        user knows them (``In [7], line 12``)."""
        import re

        cells = [(path, label) for path, label in self.sources.items() if path and label]
        if not cells or not text:
            return text

        def swap(m: "re.Match[str]") -> str:
            path = m.group("path")
            label = next((lb for p, lb in cells if p.endswith(path) and len(path) >= 8), None)
            return f"{label}, line {m.group('line')}" if label else m.group(0)

        return re.sub(r"(?P<path>[\w./\\-]+\.py):(?P<line>\d+)", swap, text)

    # -- display --------------------------------------------------------
    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        """Notebook display: the first screen as text always; HTML from the registered view (see ipycompile.views)."""
        with unreadable_marked():  # a payload its log no longer holds is marked, not raised
            text = capped_lines(str(self), where="print(report) shows it whole")
            bundle = {"text/plain": text}  # a 1 MB reason must not make a 1 MB output
            if _renderers:
                bundle.update(_renderers[-1](self))
        return bundle

    def to_html(self, path: str) -> str:
        """Write this report as a standalone HTML page with every detail (the notebook
        output is a compact version of it). Returns ``path``. A large page is written with
        a folder beside it, ``NAME_files``, of the parts built as they are opened: keep
        them together (docs/trace-files.md, "The page of a large log").

        The page holds the model's code (graphs, kernels, source lines): share it
        as you would share the code.
        """
        import warnings

        if not _html_writers:
            raise RuntimeError("no HTML view is registered: `import ipycompile` registers one")
        refuse_input(path, self._inputs(), "the HTML page's path")  # before the warning: a refused page is not shared
        warnings.warn(
            f"{path}: the HTML report contains your model's code (captured graphs, generated kernels, "
            "source lines); share it as you would share the code",
            UserWarning,
            stacklevel=2,
        )
        with unreadable_marked():  # a payload its log no longer holds is marked, not raised
            return _html_writers[-1](self, path)

    # -- text -----------------------------------------------------------
    def summary(self, hints: Any = None) -> str:
        """The whole report as plain text (control characters escaped): the first screen (what
        to fix, ranked, then the headline numbers), then every tab of the report's view as
        text. The registered text view renders it (:mod:`ipycompile.views.plain_text`); ``hints``
        words where the rest is for where it is shown (``ipycompile.views.plain_text.CLI_HINTS``)."""
        if not _text_renderers:
            return repr(self) + " (no text view is registered: `import ipycompile` registers one)"
        return _text_renderers[-1](self, hints) if hints is not None else _text_renderers[-1](self)

    def __str__(self) -> str:
        """:meth:`summary`: the first screen, then everything else, as text."""
        try:
            return self.summary()
        except Exception as exc:  # a view that cannot render must not lose the report
            return f"{self!r} (the text view failed: {type(exc).__name__}: {exc})"

    def __repr__(self) -> str:
        return (
            f"<CompileReport compiles={len(self.compiles)} "
            f"graphs={sum(1 for g in self.graphs if g.stage == 'dynamo')} "
            f"graph_breaks={self.graph_break_count} recompiles={len(self.recompiles)} "
            f"kernels={len(self.kernels)} failures={len(self.failures)}>"
        )
