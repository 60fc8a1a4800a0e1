"""The report model: plain dataclasses describing what one capture saw.

No UI code and no torch import here: a saved report loads anywhere.
Every class round-trips through ``to_dict`` / ``from_dict`` (see
:mod:`ipycompile.report.serialize`).
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from .fix import Fix, Mark, Rebind, Rewrite, Setting

try:
    from enum import StrEnum
except ImportError:  # Python 3.10

    class StrEnum(str, enum.Enum):  # type: ignore[no-redef]
        def __str__(self) -> str:
            return str(self.value)

__all__ = [
    "Fix",
    "Setting",
    "Mark",
    "Rebind",
    "Rewrite",
    "CompileId",
    "KeptState",
    "KernelCode",
    "CppGemm",
    "CppLoops",
    "UserFrame",
    "CacheStatus",
    "Compile",
    "Graph",
    "FxNode",
    "LazyText",
    "TextField",
    "is_lazy",
    "Suggestion",
    "FixStatus",
    "FixCheck",
    "FixVerification",
    "Kind",
    "Confidence",
    "SourceSpan",
    "OpArgument",
    "OpSchema",
    "GraphBreak",
    "TorchDetail",
    "UnrolledLoop",
    "TorchWarning",
    "EagerDifference",
    "EagerRun",
    "Recompile",
    "GuardChange",
    "GuardSet",
    "GuardEntry",
    "FailedGuard",
    "SizeSymbol",
    "ShapeGuard",
    "GUARD_KINDS",
    "GUARD_ORIGINS",
    "Kernel",
    "Subgraph",
    "ControlFlowNode",
    "CompileTime",
    "Phase",
    "Failure",
    "RawArtifact",
    "DumpedFile",
    "Stats",
    "EagerComparison",
    "DeviceBusy",
    "OutputCheck",
    "OUTPUT_CHECK_FIELDS_V2",
    "KernelLaunch",
    "KernelTime",
    "RooflineShares",
    "Profile",
    "RunSettings",
    "FirstCall",
    "SteadyState",
    "Memory",
    "KernelTimes",
    "PROFILE_FIELDS_V1",
    "TraceOrigin",
    "AutotuneChoice",
    "Autotune",
    "AutotuneGroup",
    "group_autotuning",
    "CudaGraphs",
    "MemoryAllocation",
    "MemoryTimeline",
    "STATUSES",
    "GRAPH_STAGES",
    "KERNEL_BACKENDS",
    "COLLECTIVE_KINDS",
    "collective_kind",
    "KERNEL_KINDS",
    "OTHER_DEVICE_TIME",
    "OTHER_CAUSES",
    "OTHER_CPU_TIME",
]

_CID = re.compile(r"^(?:!(?P<ca>\d+)/)?(?P<frame>\d+)/(?P<compile>\d+)(?:_(?P<attempt>\d+))?$")


@dataclass(frozen=True, order=True)
class CompileId:
    """Torch's compile id: ``frame/compile`` ("0/1"), ``!ca/frame/compile`` for
    compiled autograd. One string form keys everything in a report."""

    frame_id: int
    frame_compile_id: int
    compiled_autograd_id: Optional[int] = None

    def __str__(self) -> str:
        base = f"{self.frame_id}/{self.frame_compile_id}"
        if self.compiled_autograd_id is not None:
            return f"!{self.compiled_autograd_id}/{base}"
        return base

    @classmethod
    def parse(cls, text: str) -> "CompileId":
        """Parse ``"0/1"``, ``"!2/0/1"`` or ``"0/1_1"`` (the attempt is dropped)."""
        m = _CID.match(text.strip().strip("[]"))
        if not m:
            raise ValueError(f"not a compile id: {text!r} (expected 'frame/compile', e.g. '0/1')")
        ca = m.group("ca")
        return cls(int(m.group("frame")), int(m.group("compile")), int(ca) if ca is not None else None)


@dataclass
class UserFrame:
    """A place in the user's code."""

    filename: str = ""
    lineno: Optional[int] = None
    function: str = ""
    source_line: str = ""

    def __str__(self) -> str:
        where = f"{self.filename}:{self.lineno}" if self.lineno is not None else self.filename
        return f"{where} in {self.function}" if self.function else where


@dataclass
class CacheStatus:
    """``hit`` | ``miss`` | ``bypass`` | ``""`` (not seen) for each cache layer."""

    fx_graph: str = ""
    aot_autograd: str = ""
    fx_graph_bypass_reason: str = ""
    aot_autograd_bypass_reason: str = ""


STATUSES = ("ok", "failed", "graph break", "skipped", "recompile limit")


@dataclass
class Compile:
    """One Dynamo frame compile (one compile id)."""

    compile_id: CompileId
    function: str = ""
    filename: str = ""
    first_line: Optional[int] = None
    status: str = "ok"  # one of STATUSES
    attempt: int = 0  # the last attempt torch made (> 0 when it restarted the analysis)
    restart_reasons: list[str] = field(default_factory=list)
    cache: CacheStatus = field(default_factory=CacheStatus)
    guard_count: Optional[int] = None
    graph_op_count: Optional[int] = None
    graph_node_count: Optional[int] = None
    graph_input_count: Optional[int] = None
    fail_type: str = ""
    fail_reason: str = ""
    is_recompile: bool = False
    # times from compilation_metrics, seconds
    entire_frame_compile_s: Optional[float] = None
    backend_compile_s: Optional[float] = None
    inductor_compile_s: Optional[float] = None
    code_gen_s: Optional[float] = None
    dynamo_before_restart_s: Optional[float] = None
    start_time: Optional[float] = None
    stack: list[UserFrame] = field(default_factory=list)  # where torch entered the frame
    metrics: dict[str, Any] = field(default_factory=dict)  # every other compilation_metrics field
    # symbols torch made for this compile: its source ("L['k']", "L['x'].size()[0]") -> the value it saw
    symbols: dict[str, str] = field(default_factory=dict)
    #: the same symbols with their names (``s81``) and what each stands for (a size of an input, an int)
    size_symbols: list["SizeSymbol"] = field(default_factory=list)
    #: for a frame Dynamo made of the code after a graph break (``torch_dynamo_resume_in_f_at_7``):
    #: the user's function it continues (``f``), read by capture; "" for an ordinary frame
    resumes: str = ""

    @property
    def user_function(self) -> str:
        """The user's function this compile ran: ``f`` for ``f`` and for the code of ``f`` after a break."""
        return self.resumes or self.function


GRAPH_STAGES = (
    "dynamo",
    "aot_forward",
    "aot_backward",
    "aot_inference",
    "aot_joint",
    "pre_grad",
    "post_grad",
    "ddp_split",
    "ddp_bucket",
)


@dataclass(frozen=True)
class LazyText:
    """Text the report keeps in the file it was read from until a view asks for it: a bulky
    payload of a TORCH_TRACE log (a graph's code, a guard tree, a raw artifact), by its place
    in the log. ``source`` (the reader's, ``capture.tracefile.PayloadFile``) reads it:
    ``source.text(self)``, checked against ``md5``. The field holding it (a :class:`TextField`)
    answers with the text each time it is asked and never keeps it, so a report of a large
    log holds the payloads' places, not their text; saving the report reads them in (its
    JSON is the same as an eagerly read report's)."""

    source: Any
    offset: int  # where the payload's first line starts in the log (its tab)
    length: int  # its bytes in the log, tabs and newlines included
    md5: str  # what torch wrote for it (``has_payload``)

    def read(self) -> str:
        if not _MARK_UNREADABLE.get():
            return self.source.text(self)
        try:
            return self.source.text(self)
        except ValueError as exc:  # the log was cut short or rewritten since it was read
            return f"{UNREADABLE_MARK} {exc}]"


#: What a view shows in place of a payload that can no longer be read from its log (inside
#: :func:`unreadable_marked`), followed by the reason and a ``]``.
UNREADABLE_MARK = "[not shown: this text is no longer in the log it was read from:"
_MARK_UNREADABLE: "contextvars.ContextVar[bool]" = contextvars.ContextVar("ipycompile_mark_unreadable", default=False)


@contextlib.contextmanager
def unreadable_marked():
    """Within the block, a :class:`LazyText` whose log was cut short or rewritten since it was read
    reads as :data:`UNREADABLE_MARK` and the reason, instead of raising: a notebook's display of the
    report still shows everything else. Saving a report, or the command line, reads strictly."""
    token = _MARK_UNREADABLE.set(True)
    try:
        yield
    finally:
        _MARK_UNREADABLE.reset(token)


class TextField:
    """A text field of a dataclass that may hold a :class:`LazyText`: getting the field reads
    the text (each time: it is not kept), setting it takes text or a ``LazyText``."""

    def __init__(self, default: Optional[str] = "") -> None:
        self.default = default

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Optional[type] = None) -> Any:
        if obj is None:
            return self.default  # the dataclass field's default
        value = obj.__dict__.get(self.name, self.default)
        return value.read() if type(value) is LazyText else value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.name] = value


def is_lazy(obj: Any, name: str) -> bool:
    """Whether ``obj``'s text field ``name`` is still in its file (a :class:`LazyText`), not read in."""
    return type(vars(obj).get(name)) is LazyText


@dataclass
class FxNode:
    """One op node of a printed graph's outermost ``forward``, as capture read it
    (``capture/parse/fx.py``): ``mm: "f32[8, 4][4, 1]cpu" = torch.mm(a, b)`` under the
    ``# File:`` comment of its place."""

    name: str
    type: str = ""  # the annotation, "f32[8, 4][4, 1]cpu" ("" where torch printed none)
    expr: str = ""  # the right-hand side, without the ``;  x = None`` clean-up
    place: int = -1  # index into ``Graph.places`` of the source place torch printed above it; -1: none
    shape_key: str = ""  # ``expr`` with the graph's names as % and numbers as #: what a loop's copies share
    reads: list[str] = field(default_factory=list)  # the identifiers ``expr`` reads, in order


@dataclass
class Graph:
    """One FX graph as torch printed it, at one stage of one compile. For a Dynamo graph,
    capture also reads its op nodes (``nodes``), the source places they come from
    (``places``) and its inputs, each with the container of numbered layers it belongs to
    (``layer_inputs``: ``l_self_modules_layers_modules_3_...`` -> ``self.layers``; "" for others)."""

    compile_id: CompileId
    stage: str  # one of GRAPH_STAGES (or the artifact name for other graphs)
    code: str = TextField("")  # type: ignore[assignment]  # may stay in the log until asked for (LazyText)
    op_count: int = 0
    name: str = ""  # a graph's own name where torch gives one (a DDP bucket's submodule: "submod_0")
    nodes: list[FxNode] = field(default_factory=list)
    places: list[UserFrame] = field(default_factory=list)
    layer_inputs: dict[str, str] = field(default_factory=dict)
    #: the collective ops the graph calls, in order (``_c10d_functional.all_reduce_.default``;
    #: :func:`collective_kind` names each), read by capture from the printed graph
    collectives: list[str] = field(default_factory=list)

    def place_of(self, node: FxNode) -> UserFrame:
        """The source place torch printed above ``node`` (an empty frame where none)."""
        return self.places[node.place] if 0 <= node.place < len(self.places) else UserFrame()

    def collective_counts(self) -> dict[str, int]:
        """How many of each collective the graph calls, by :func:`collective_kind`, in the
        order first called (``{"all_reduce": 1, "all_gather": 1, "wait": 2}``)."""
        out: dict[str, int] = {}
        for op in self.collectives:
            kind = collective_kind(op) or op
            out[kind] = out.get(kind, 0) + 1
        return out


class Confidence(StrEnum):
    """How sure the doctor is of a :class:`Suggestion`; saved as its string."""

    HIGH = "high"  # a rewrite proven by a test for this kind of problem
    MEDIUM = "medium"  # the usual fix, which may need adapting
    LOW = "low"  # a direction, or no specific fix


class Kind(StrEnum):
    """What the doctor recognised (``Suggestion.kind``); saved as its string.

    Each break kind is documented by the rule that writes it
    (:data:`ipycompile.analysis.breaks.KINDS`, derived from the rules), each recompile
    kind by :data:`ipycompile.analysis.recompiles.SUGGESTION_KINDS`. A report saved by
    another version may hold a kind this one does not know: it loads as a plain string."""

    # graph breaks and failures
    TORCH_WHERE = "torch.where"
    TORCH_COND = "torch.cond"
    BRANCH_IN_LIBRARY = "branch_in_library"
    KEEP_TENSOR = "keep_tensor"
    CAPTURE_SCALAR_OUTPUTS = "capture_scalar_outputs"
    CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS = "capture_dynamic_output_shape_ops"
    REORDERABLE_LOGGING_FUNCTIONS = "reorderable_logging_functions"
    REMOVE_PRINT = "remove_print"
    IGNORE_LOGGING_FUNCTIONS = "ignore_logging_functions"
    TENSOR_CLONE = "tensor_clone"
    NUMPY_TO_TORCH = "numpy_to_torch"
    CUSTOM_OP = "custom_op"
    MOVE_OUT = "move_out"
    WITH_OUTSIDE = "with_outside"
    TRACE_AUTOGRAD_OPS = "trace_autograd_ops"
    HOP_CLONE = "hop_clone"
    HOP_RETURN_VALUE = "hop_return_value"
    HOP_MATCH_STRUCTURE = "hop_match_structure"
    REMOVE_GRAPH_BREAK = "remove_graph_break"
    REMOVE_UNUSED = "remove_unused"
    REGISTER_FAKE = "register_fake"
    COMPILED_OPTIMIZER = "compiled_optimizer"
    TORCH_HINT = "torch_hint"
    LIBRARY_CODE = "library_code"
    LIBRARY_SWITCH = "library_switch"  # a switch of the user's call under which the library code that breaks runs
    NO_LEVER = "no_lever"  # a break in library code with no answer: where it is, and the levers that always exist
    # breaks no code change of ours removes: what to do, in words
    INTERNAL_ERROR = "internal_error"
    COMPILER_DISABLE = "compiler_disable"
    DDP_WRAPPER = "ddp_wrapper"
    NO_META_KERNEL = "no_meta_kernel"
    TORCH_EQUAL = "torch_equal"
    REQUIRES_GRAD_INSIDE = "requires_grad_inside"
    SORT_TENSORS = "sort_tensors"
    CLASS_OUTSIDE = "class_outside"
    ITERATOR_INPUT = "iterator_input"
    GENERATOR_OUTSIDE = "generator_outside"
    SKIPPED_FUNCTION = "skipped_function"
    RECONSTRUCTION = "reconstruction"
    RAISED_EXCEPTION = "raised_exception"
    GENERATOR_MUTATION = "generator_mutation"
    MAYBE_MARK_DYNAMIC = "maybe_mark_dynamic"
    INVALID_ARGUMENTS = "invalid_arguments"
    RANDOM_BRANCH = "random_branch"
    HOOK_REGISTRATION = "hook_registration"
    THREAD_LOCK = "thread_lock"
    # the run compiled nothing, or ran mostly eagerly (analysis/eager_run.py)
    COMPILE_INNER_MODULE = "compile_inner_module"
    NOTHING_COMPILED = "nothing_compiled"
    # recompiles
    MARK_DYNAMIC = "mark_dynamic"
    MARK_UNBACKED = "mark_unbacked"
    CONTIGUOUS = "contiguous"
    TENSOR_VALUE = "tensor_value"
    LOOP_BODY = "loop_body"
    RECOMPILE_LIMIT = "recompile_limit"
    FORCE_PARAMETER_STATIC_SHAPES = "force_parameter_static_shapes"
    # recompiles that need no code change (or none is possible): what to do, in words
    DTYPE_CHANGE = "dtype_change"
    RANK_CHANGE = "rank_change"
    REQUIRES_GRAD_CHANGE = "requires_grad_change"
    GLOBAL_STATE_CHANGE = "global_state_change"
    DEVICE_CHANGE = "device_change"
    TYPE_CHANGE = "type_change"
    FLAG_VALUE = "flag_value"
    LIST_LENGTH = "list_length"
    TRAIN_EVAL = "train_eval"
    IDENTITY_CHANGE = "identity_change"
    ALIASING = "aliasing"
    SPECIALIZED_NUMBER = "specialized_number"
    AUTOMATIC_DYNAMIC = "automatic_dynamic"
    CARRIED_VALUE = "carried_value"
    LIBRARY_VALUE = "library_value"
    MODULE_INT_ATTRIBUTE = "module_int_attribute"
    PER_LAYER = "per_layer"
    SIZE_CONDITION = "size_condition"
    KEYWORD_ARGUMENTS = "keyword_arguments"
    ATTRIBUTE_PRESENCE = "attribute_presence"
    # neither: torch's own words, no specific fix
    UNKNOWN = "unknown"


class FixStatus(StrEnum):
    """What trying a suggested fix on the user's own cell showed (:class:`FixCheck`); saved as its string."""

    VERIFIED = "verified"  # applied in a scratch compile: the problem is gone, nothing new broke, outputs equal
    FAILED = "failed"  # applied: the problem stayed, something new broke, or outputs changed; the fix is withdrawn
    NOT_VERIFIED = "not verified"  # not tried (the reason says why: library code, state that cannot be copied, budget)


@dataclass
class FixCheck:
    """A suggested fix tried on the user's own cell (``%%compile --verify-fixes``, made by
    :mod:`ipycompile.run.verify`): the fix applied in a scratch compile of the same cell on
    copies of the same inputs, and what came of it. ``applied`` lists what was applied
    (a setting, "lines 2-5 of the cell rewritten", a mark on a copy of an input);
    ``max_abs_diff`` the largest difference between the fixed cell's outputs (its value,
    the names it assigns, the state of what it changes) and the unfixed cell's run eagerly;
    ``torch_says`` torch's own words where the fix failed (the break or error that stayed);
    ``seconds`` the time it took; ``together`` the settings' keys when several were applied at once."""

    status: FixStatus
    reason: str = ""
    applied: list[str] = field(default_factory=list)
    max_abs_diff: Optional[float] = None
    torch_says: str = ""
    seconds: float = 0.0
    together: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The check in plain words, as shown beside the fix."""
        if self.status == FixStatus.VERIFIED:
            return f"verified on your cell: {self.reason}"
        if self.status == FixStatus.FAILED:
            return f"withdrawn, tried on your cell: {self.reason}"
        return f"not verified: {self.reason}"


@dataclass
class FixVerification:
    """What ``--verify-fixes`` covered for one report: its time budget and the time spent, the
    scratch compiles made and the calls of the cell in each, how the user's compiled code was
    kept apart, the checks of several settings applied together (each fix's own check is
    ``Suggestion.check``), and, where nothing could be verified, why (``not_verified``)."""

    budget_s: float
    spent_s: float = 0.0
    compiles: int = 0
    calls: int = 0
    fixes: int = 0  # distinct fixes with code to apply
    tried: int = 0  # of them, tried within the budget
    together: list[FixCheck] = field(default_factory=list)
    isolation: str = ""
    not_verified: str = ""
    #: True while the fixes are being tried (a notebook's report is shown first, then updated in place)
    pending: bool = False

    @property
    def text(self) -> str:
        """One line: what was covered, in how long."""
        if self.pending:
            return f"trying the fixes on this cell (a scratch compile, up to {self.budget_s:g} s): this report updates"
        if self.not_verified:
            return f"fixes not verified on this cell: {self.not_verified}"
        if not self.fixes:
            return "--verify-fixes: no suggested fix with code to try on this cell"
        return (f"fixes verified on this cell: {self.tried} of {self.fixes} tried in {self.compiles} scratch "
                f"compile(s) of {self.calls} call(s) each, {self.spent_s:.1f} s of a {self.budget_s:g} s budget")


@dataclass
class Suggestion:
    """What to change, from the doctor (:mod:`ipycompile.analysis`): a title, why,
    a code snippet written against the user's own source and names, and how sure
    the doctor is (``"high"``: a rewrite proven by a test for this kind of problem;
    ``"medium"``: the usual fix, which may need adapting; ``"low"``: a direction)."""

    title: str
    explanation: str = ""
    code: str = ""
    confidence: Confidence = Confidence.MEDIUM
    kind: Kind | str = ""  # what the doctor recognised (a Kind; "" in reports saved before recompiles had one)
    # when ``code`` rewrites the user's own lines: the file and the lines (inclusive) it replaces
    filename: str = ""
    first_line: Optional[int] = None
    last_line: Optional[int] = None
    # set by ``--verify-fixes`` (:mod:`ipycompile.run.verify`): this fix tried on the user's own cell
    check: Optional[FixCheck] = None
    # a setting's code the doctor did not give: it removes this break alone, but is unproven together with
    # another setting the report gives as code; ``--verify-fixes`` tries it, and gives it as ``code`` once the
    # settings are verified together on the user's cell
    unproven_code: str = ""
    # what the code does, as data (:mod:`ipycompile.report.fix`): what ``--verify-fixes`` applies; None for code
    # that is words or a template, and in reports saved before fixes were records
    fix: Optional[Fix] = None

    @classmethod
    def of(cls, title: str, explanation: str, fix: Fix, confidence: Confidence = Confidence.MEDIUM,
           kind: "Kind | str" = "") -> "Suggestion":
        """A suggestion whose code is ``fix`` rendered (and, for a rewrite, whose lines are the rewrite's)."""
        r = fix.rewrite
        return cls(title, explanation, fix.code, confidence, kind, r.filename if r else "",
                   r.first_line if r else None, r.last_line if r else None, fix=fix)

    @property
    def standing(self) -> str:
        """How a view presents it: ``"verified"`` (tried on the user's cell: the problem went, outputs
        equal), ``"withdrawn"`` (tried: it did not), ``"to try"`` (code that was not tried on this
        cell: never shown as a fix), ``"advice"`` (words without code to try), ``"unknown"`` (no fix known)."""
        if self.kind == "unknown":
            return "unknown"
        status = self.check.status if self.check is not None else None
        if status == FixStatus.VERIFIED:
            return "verified"
        if status == FixStatus.FAILED:
            return "withdrawn"
        return "to try" if self.code.strip() else "advice"


@dataclass
class SourceSpan:
    """Lines of a file as they were when the report was captured (the code around a
    break or failure), so that a saved report is diagnosed the same way anywhere.
    ``module`` is the module that holds the code when known (``"__main__"``,
    ``"transformers.modeling_utils"``)."""

    filename: str
    first_line: int
    lines: list[str] = field(default_factory=list)
    module: str = ""

    @property
    def last_line(self) -> int:
        return self.first_line + len(self.lines) - 1


@dataclass
class OpArgument:
    """One argument of an operator's schema, as the schema writes it."""

    name: str  # "x", "alpha"
    type: str  # "Tensor", "Tensor?", "Tensor[]", "int", "SymInt[]", "float", "bool", "str", "Scalar"
    default: Optional[str] = None  # its default as the schema writes it ("1.0", "None"); None: it has none
    kwarg_only: bool = False  # after ``*`` in the schema
    mutated: bool = False  # written by the op (``Tensor(a!)``)


@dataclass
class OpSchema:
    """A custom operator's signature, read by capture from torch's operator registry while the op
    was known (``torch.ops.ns.op.overload._schema``): what the doctor writes a ``register_fake``
    from, argument by argument and result by result. Plain data: the doctor never imports torch."""

    name: str  # "mylib::op"
    overload: str = ""  # "" for the default overload
    arguments: list[OpArgument] = field(default_factory=list)
    returns: list[str] = field(default_factory=list)  # the results' types: ["Tensor"], ["Tensor[]"], ["Tensor", "int"]
    text: str = ""  # the schema as torch writes it: "mylib::op(Tensor x, int k) -> Tensor[]"


@dataclass
class TorchDetail:
    """What torch's words about a break or failure name, read by capture
    (``capture/parse/context.py``) from its developer debug context, explanation and text:
    what the doctor's rules read instead of the text. Empty fields: torch did not say."""

    callee_module: str = ""  # a function torch skips: "torch.random"
    callee_qualname: str = ""  # ... and its qualified name: "manual_seed", "Adam.step"
    builtin: str = ""  # a builtin torch could not trace: "getpid"
    numpy_function: str = ""  # a NumPy function torch could not trace: "digitize"
    prints: bool = False  # the call was ``print``
    print_types: list[str] = field(default_factory=list)  # what it printed, as torch names it: "TensorVariable"
    print_kwargs: Optional[bool] = None  # whether the print had keyword arguments (None: not said)
    logger_class: str = ""  # a logging call: "Logger", "RootLogger"
    logger_name: str = ""  # "transformers.modeling_utils"
    logger_level: str = ""
    logger_method: str = ""  # "warning_once"
    logger_message: str = ""  # its constant message, where torch shows one
    raised_type: str = ""  # an exception raised while tracing: "TypeError"
    raised_args: str = ""  # ... and its arguments as torch printed them
    aten_op: str = ""  # the first ATen op named: "nonzero"
    operator: str = ""  # the first operator named, as torch wrote it: "aten.linalg_lstsq.default", "mylib::op"
    function: str = ""  # a function torch names as ``<function name at 0x...>``: "helper"
    aliasing: str = ""  # "Input-to-output" / "Output-to-output" aliasing in a higher-order op
    aliased_nodes: list[str] = field(default_factory=list)
    marked_source: str = ""  # a dimension marked dynamic that the code specialised: the tensor ("x")
    marked_dim: Optional[int] = None
    marked_value: str = ""  # ... the constant it was specialised to
    fake_op: str = ""  # a custom op without a working fake: "mylib::op"
    fake_args: list[str] = field(default_factory=list)  # its arguments as torch printed them
    fake_kwargs: str = ""
    fake_missing: bool = False  # no fake at all (else: a fake that raises)
    fake_overload: str = ""  # the op's overload torch named ("default"), where it did
    iterator_type: str = ""  # a builtin iterator torch cannot step through: "list_iterator"
    #: a special method implemented in C that torch has no model of (torch 2.14's GB9493): the method
    #: ("__iter__") and the type it belongs to ("dict_items")
    c_method: str = ""
    c_method_type: str = ""
    #: a function torch would have inlined but skips (GB0008): its qualified name and its own name, as torch
    #: wrote them ("set_grad_enabled.__enter__", "__enter__": torch 2.14 entering a context manager made outside)
    inline_skipped_qualname: str = ""
    inline_skipped_name: str = ""
    # a TypeError torch's fake run of a call raised (GB0112): the function, the argument, what it takes, what it got
    type_error_function: str = ""  # "cos", "full"
    type_error_argument: str = ""  # "input", "fill_value"
    type_error_expected: str = ""  # "Tensor", "Number"
    type_error_given: str = ""  # the type the fake call passed: "int", "FakeTensor"
    type_error_message: str = ""  # the TypeError's message: "cos(): argument 'input' (position 1) must be ..."
    #: the places of Python ``random`` values a data-dependent branch's condition is computed from
    #: (torch: ``random_value_0: graph input``), with the line that drew each
    branch_random: list[UserFrame] = field(default_factory=list)
    context_manager: str = ""  # a context manager torch cannot enter, as torch names its type: "lock"
    setattr_type: str = ""  # a class whose attribute torch cannot set: "torch.utils.hooks.RemovableHandle"
    setattr_name: str = ""  # ... and the attribute: "next_id"


@dataclass
class GraphBreak:
    """One graph-break site; ``count`` says how often it was hit.

    ``frame`` is the user's own line that led to the break (a notebook cell line,
    a script); ``break_frame`` is where Dynamo stopped (often inside a library),
    empty when torch did not say. ``suggestion`` is filled by the doctor."""

    reason: str  # one line
    gb_code: str = ""  # e.g. "GB0170"
    gb_type: str = ""  # torch's short name for the break kind
    explanation: str = ""
    hints: list[str] = field(default_factory=list)
    hints_from_registry: bool = False
    frame: UserFrame = field(default_factory=UserFrame)
    user_stack: list[UserFrame] = field(default_factory=list)
    compile_id: Optional[CompileId] = None  # the first compile that hit it
    compile_ids: list[CompileId] = field(default_factory=list)  # every compile that hit it
    count: int = 1
    detail: str = ""  # the whole text torch gave
    break_frame: UserFrame = field(default_factory=UserFrame)  # where Dynamo stopped
    context: str = ""  # torch's "Developer debug context" (what Dynamo was tracing: a call, its arguments)
    #: the lines that called the function torch stopped in, one per distinct caller over all hits
    #: (one break inside a shared function is reached from several lines of the user's code)
    callers: list[UserFrame] = field(default_factory=list)
    suggestion: Optional[Suggestion] = None
    #: the settings torch's hints name, as code ("torch._dynamo.config.capture_scalar_outputs = True"), read by capture
    hinted_settings: list[str] = field(default_factory=list)
    said: TorchDetail = field(default_factory=TorchDetail)  # what torch's words name, read by capture
    #: its line, torch's reason or break kind names a ``torch.distributed`` collective (``dist.all_reduce(``,
    #: ``ProcessGroup``, ``barrier``), read by capture; None: a report saved before it was read
    names_collective: Optional[bool] = None

    @property
    def stop(self) -> UserFrame:
        """Where the break stopped: the line Dynamo was tracing when it gave up (``break_frame``,
        often inside a library), else the user's own line (``frame``); with the function and
        source line torch printed for that place in its traceback when ``break_frame`` lacks
        them (torch's header names only file and line). The one answer to "where did this break
        stop": every rule and view asks this."""
        f = self.break_frame if self.break_frame.filename else self.frame
        if f.function and f.source_line:
            return f
        same = [u for u in [*self.user_stack, self.frame] if (u.filename, u.lineno) == (f.filename, f.lineno)]
        return UserFrame(f.filename, f.lineno, f.function or next((u.function for u in same if u.function), ""),
                         f.source_line or next((u.source_line for u in same if u.source_line), ""))

    @property
    def reached_from(self) -> Optional[UserFrame]:
        """The user's own line that led to the break when that is another place than where it
        stopped (a call of library code that breaks inside), else None."""
        stop = self.stop
        if self.frame.filename and (self.frame.filename, self.frame.lineno) != (stop.filename, stop.lineno):
            return self.frame
        return None

    @property
    def site(self) -> tuple:
        """The de-duplication key: where Dynamo stopped (:attr:`stop`), the user's line that led
        there, and the kind of break."""
        stop = self.stop
        return (stop.filename, stop.lineno, self.frame.filename, self.frame.lineno, self.gb_code or self.reason)


@dataclass
class Recompile:
    """A compile that happened because guards of earlier ones failed."""

    compile_id: CompileId
    function: str = ""
    filename: str = ""
    reasons: list[str] = field(default_factory=list)  # e.g. "tensor 'x' size mismatch at index 0. expected 8, actual 16"
    failed_compile_ids: list[CompileId] = field(default_factory=list)  # the compiles whose guards failed
    limit_hit: bool = False  # torch hit the recompile limit and fell back to eager
    limit_message: str = ""
    # with limit_hit: which limit ("recompile_limit", "accumulated_recompile_limit") and its value in
    # effect for this function (a torch.compile(recompile_limit=...) overrides the global setting), as torch said
    limit_type: str = ""
    limit: Optional[int] = None
    explanation: str = ""  # plain words from the doctor: which input changed how
    suggestion: Optional[Suggestion] = None
    changes: list["GuardChange"] = field(default_factory=list)  # from the doctor: one per reason
    #: each reason, read by capture (``capture/parse/guards.py``): what was guarded, how it changed, and
    #: the guarded value under the user's own name. Empty in reports saved before guards were read.
    guards: list["FailedGuard"] = field(default_factory=list)
    #: the line of the user's code whose call compiled again (empty when a library made the call, or
    #: the stack is unknown), and the frame that made the call when it is not the user's (a library's)
    call_site: UserFrame = field(default_factory=UserFrame)
    caller: UserFrame = field(default_factory=UserFrame)
    #: the caller calls an object of a ``for`` loop (``for layer in self.layers: x = layer(x)``): the
    #: container it loops over (``self.layers``), "" otherwise; each call may be another module of the stack
    loop_over: str = ""
    #: the compiled code as the user's call names it where torch's frame is its own wrapper (``model``
    #: for ``cm = torch.compile(model)``, whose frame torch calls ``inner``); "" where ``function`` is it
    target: str = ""
    #: where ``function`` is torch's resume function (the code after a graph break, compiled as a frame of its
    #: own): the function it continues, as the source names it (``scatter`` for ``torch_dynamo_resume_in_scatter_at_48``)
    resumes: str = ""

    @property
    def shown_function(self) -> str:
        """The function to name to the user: ``target``, else the function the frame continues, else torch's
        frame name."""
        return self.target or self.resumes or self.function


@dataclass
class SizeSymbol:
    """A size (or int) torch made a symbol of while compiling one version (``create_symbol``), read by
    capture (``capture/parse/shape_guards.py``): the symbol (``s81``), what it stands for (``kind``
    ``"size"``, ``"stride"``, ``"int"``; ``path`` as :attr:`FailedGuard.path` and :attr:`GuardEntry.path`
    write it, ``args[1]``; ``dim`` for a size or stride) and the value torch saw."""

    symbol: str
    kind: str = ""
    path: str = ""
    dim: Optional[int] = None
    value: Optional[int] = None


@dataclass
class ShapeGuard:
    """A guard torch added on symbolic sizes while compiling one version (``guard_added_fast``), read by
    capture: what the traced code asked of a size (``expr`` as torch printed it, ``s81 >= 8``), the same
    as a tree (``tree``: ``["ge", ["sym", "s81"], ["num", 8]]``; None for an expression of no known form),
    where it was asked (``place``: the innermost frame of the traced code, a library's line for library
    code) and the symbols it reads, with what each stands for. A version is reused only by calls whose
    sizes meet every such guard of it."""

    compile_id: CompileId
    expr: str = ""
    tree: Any = None
    place: UserFrame = field(default_factory=UserFrame)
    symbols: list[SizeSymbol] = field(default_factory=list)

    def holds(self, values: dict[str, int]) -> Optional[bool]:
        """Whether the guard holds for the sizes ``values`` (symbol -> int); None where the tree is unknown
        or reads a symbol ``values`` lacks."""
        try:
            out = _evaluate(self.tree, values, 0)
        except (_NoValue, ArithmeticError, TypeError, ValueError, IndexError, OverflowError, RecursionError):
            return None
        return out if isinstance(out, bool) else None

    @property
    def pinned(self) -> Optional[tuple[str, int]]:
        """``(symbol, value)`` where the guard pins one symbol to one value (``Eq(s12, 7)``: torch specialised
        the size, as for a ``range(n)`` or a size the code needs as a Python int); None otherwise."""
        t = self.tree
        if not (isinstance(t, list) and len(t) == 3 and t[0] == "eq"):
            return None
        for a, b in ((t[1], t[2]), (t[2], t[1])):
            if isinstance(a, list) and isinstance(b, list) and a[:1] == ["sym"] and b[:1] == ["num"]:
                return str(a[1]), int(b[1])
        return None

    def render(self, names: dict[str, str]) -> str:
        """The guard as code in the user's terms: each symbol by ``names`` (``s81`` -> ``x.shape[1]``), a
        comparison of a negated side turned round (``-s81 > -7`` reads ``x.shape[1] < 7``); ``expr`` where
        the tree is unknown."""
        try:
            return _render(_turned(self.tree), names, 0) if self.tree is not None else self.expr
        except (KeyError, IndexError, TypeError, ValueError, RecursionError):
            return self.expr


class _NoValue(Exception):
    pass


_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
_SIGN = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_INFIX = {"add": ("+", 1), "sub": ("-", 1), "mul": ("*", 2), "floordiv": ("//", 2), "mod": ("%", 2), "div": ("/", 2),
          "pow": ("**", 3)}


def _evaluate(t: Any, values: dict[str, int], depth: int) -> Any:
    from fractions import Fraction

    if depth > 60 or not isinstance(t, list) or not t:
        raise ValueError(t)
    op, args = t[0], t[1:]
    if op == "sym":
        if args[0] not in values:
            raise _NoValue(args[0])
        return Fraction(int(values[args[0]]))
    if op == "num":
        return Fraction(int(args[0]))
    if op == "bool":
        return bool(args[0])
    a = [_evaluate(x, values, depth + 1) for x in args]
    if op in _SIGN:
        x, y = a
        return {"lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y, "eq": x == y, "ne": x != y}[op]
    if op in ("and", "or", "not"):
        if not all(isinstance(x, bool) for x in a):
            raise TypeError(op)
        return all(a) if op == "and" else any(a) if op == "or" else not a[0]
    if any(isinstance(x, bool) for x in a):
        raise TypeError(op)
    if op == "add":
        return sum(a, Fraction(0))
    if op == "mul":
        out = Fraction(1)
        for x in a:
            out *= x
        return out
    if op == "sub":
        return a[0] - a[1]
    if op == "neg":
        return -a[0]
    if op == "floordiv":
        return Fraction(a[0] // a[1])
    if op == "ceildiv":
        return Fraction(-(-a[0] // a[1]))
    if op == "mod":
        return a[0] % a[1]
    if op == "div":
        return a[0] / a[1]
    if op == "pow":
        if a[1].denominator != 1 or abs(a[1]) > 64:
            raise ValueError(op)
        return a[0] ** int(a[1])
    if op == "max":
        return max(a)
    if op == "min":
        return min(a)
    if op == "abs":
        return abs(a[0])
    raise ValueError(op)


def _turned(t: Any) -> Any:
    """``-a > -7`` as ``a < 7``: a comparison of a negated side with a number reads the other way round."""
    if isinstance(t, list) and len(t) == 3 and t[0] in _FLIP:
        a, b = t[1], t[2]
        inner = a[1] if isinstance(a, list) and a[:1] == ["neg"] else (
            a[2] if isinstance(a, list) and len(a) == 3 and a[:2] == ["mul", ["num", -1]] else None)
        if inner is not None and isinstance(b, list) and b[:1] == ["num"]:
            return [_FLIP[t[0]], inner, ["num", -int(b[1])]]
    return t


def _render(t: Any, names: dict[str, str], prec: int) -> str:
    op, args = t[0], t[1:]
    if op == "sym":
        return names.get(args[0], args[0])
    if op in ("num", "bool"):
        return str(args[0])
    if op == "neg":
        return "-" + _render(args[0], names, 3)
    if op in _SIGN:
        return _wrap(f"{_render(args[0], names, 1)} {_SIGN[op]} {_render(args[1], names, 1)}", prec > 0)
    if op in ("and", "or"):
        return _wrap(f" {op} ".join(_render(a, names, 1) for a in args), prec > 0)
    if op == "not":
        return "not " + _render(args[0], names, 1)
    if op in _INFIX:
        sign, p = _INFIX[op]
        # `(a // 8) * (b // 8)`: a quotient or remainder inside a product keeps its parentheses, for the reader
        text = f" {sign} ".join(_render(a, names, p + (1 if i or (op == "mul" and a[0] in ("floordiv", "mod", "div")) else 0))
                                for i, a in enumerate(args))
        return _wrap(text, prec > p)
    return f"{op}({', '.join(_render(a, names, 0) for a in args)})"


def _wrap(text: str, yes: bool) -> str:
    return f"({text})" if yes else text


#: What a failed guard was about (``FailedGuard.kind``, ``GuardChange.kind``).
GUARD_KINDS = (
    "size",  # a tensor's size in one dimension
    "size_0_1",  # a size that is, or was, 0 or 1, which torch specialises
    "stride",
    "rank",
    "dtype",
    "requires_grad",
    "device",
    "dispatch_keys",
    "type",  # the input's Python type
    "value",  # a Python value (int, float, bool, str, ...) the code read
    "global",  # a global variable's value
    "training",  # a module's training flag
    "length",  # a list's or tuple's length
    "keywords",  # the call passed keyword arguments, or none (torch's `not kwargs`)
    "identity",  # a different object (function, module, ...) where torch guards on identity
    "global_state",  # torch's global state (grad mode, autocast, ...)
    "symbolic",  # a condition on dynamic sizes
    "aliasing",  # two inputs are now the same tensor (or no longer)
    "attribute",  # an object gained or lost an attribute the code asks for (hasattr / getattr with a default)
    "other",
)

#: Where a guarded value comes from, for the user (``FailedGuard.origin``).
GUARD_ORIGINS = (
    "argument",  # an argument of the compiled call, named as the user's call passes it
    "module",  # the compiled module (or an attribute of it), named as the user's code spells it
    "global",  # a global variable
    "closure",  # a variable a compiled function closes over
    "carried",  # a value torch carries across a graph break (made inside the compiled code)
    "library",  # passed by a library's call, which no line of the user's can mark
    "state",  # torch's global state (grad mode, ...)
    "",  # unknown
)


@dataclass
class FailedGuard:
    """One failed guard of a recompile, read by capture from torch's reason.

    ``source`` is torch's guard source as torch wrote it (``L['args'][0]``,
    ``fn._modules['0'].training``, ``___stack0``); ``path`` the same in one readable
    form (``args[0]``, ``fn[0].training``) that the guards of :class:`GuardEntry` share;
    ``name`` the value as the user's code names it (``batch`` for the first argument of
    ``cm(batch)``, ``model[0].training``), ``""`` when no code of the user's names it;
    ``origin`` one of :data:`GUARD_ORIGINS`."""

    kind: str  # one of GUARD_KINDS
    source: str = ""
    path: str = ""
    name: str = ""
    origin: str = ""
    #: where ``name`` is empty: the value in the user's terms ("the first argument of `cm(...)` at cell.py:12",
    #: "a value torch carries across the graph break at line 38 of `g` (`s = x.sum().item()`)")
    described: str = ""
    #: with origin "carried": the user's line of the graph break the value was carried across (``s = x.sum().item()``)
    carried_from: str = ""
    dim: Optional[int] = None
    numpy: bool = False  # the value is a NumPy array torch reads as a tensor (``___from_numpy(...)``)
    before: str = ""  # the value the failed compile was made for, as torch said ("8", "float32", "True")
    after: str = ""  # the value that came, where the reason says it
    code: str = ""  # the line torch quoted beside the guard
    where: str = ""  # torch's place for that line ("mp/x.py:21 in g")
    note: str = ""  # torch's note after the place (a HINT, the 0/1-specialisation text)
    parameter: bool = False  # torch says the tensor is an nn.Parameter (force_parameter_static_shapes)
    closure_of: str = ""  # the function that closes over the value (torch's HINT names the variable)
    #: the value the new compile saw when torch made the guarded value a symbol there (it became dynamic)
    symbol: str = ""
    failed_compile_id: Optional[CompileId] = None
    reason: str = ""  # torch's words (the reason's first line, spaces collapsed)

    @property
    def carried(self) -> bool:
        """A value made inside compiled code and carried across a graph break: no line of the
        user's can mark it, and what the next version compiles to is unknown."""
        return self.origin == "carried"


@dataclass
class GuardEntry:
    """One guard of a compile's guard tree, read by capture: its type (``TENSOR_MATCH``,
    ``EQUALS_MATCH``, ``LENGTH_CHECK``, ``ID_MATCH``, ``GLOBAL_STATE``, ...), torch's expression,
    and what the doctor compares between two compiles: the guarded value's ``path`` (as
    :attr:`FailedGuard.path`), a tensor's sizes and strides (``None``: dynamic), the value
    an ``==`` guard wants, a tensor guard's type (``Parameter``), the range of a
    dynamic size (``2 <= x.size()[0]``, ``2 <= x.size()[1] <= 16``) and the sizes a shape guard
    compares (``x.size()[1] != 16``)."""

    type: str
    expr: str = ""
    path: str = ""
    name: str = ""  # a tensor guard's value as the user's call names it (as FailedGuard.name), where known
    sizes: list[Optional[int]] = field(default_factory=list)
    strides: list[Optional[int]] = field(default_factory=list)
    value: str = ""  # the right side of ``SRC == value`` (not a length); "None" for ``SRC is None``
    tensor_type: str = ""
    dim: Optional[int] = None  # with lower_bound: the dimension it bounds
    lower_bound: Optional[int] = None
    length: Optional[int] = None  # ``len(SRC) == n``: the length it wants
    #: with lower_bound: the upper bound of the range (``2 <= x.size()[1] <= 16``: code compared the size with 16;
    #: a lower bound above 2, ``481 <= x.size()[0]``, says so too)
    upper_bound: Optional[int] = None
    #: the sizes a guard of torch's shape environment relates to something other than a range (``x.size()[1] != 16``,
    #: ``x.size()[0] == 2*y.size()[1]``): the code compared them. Each as ``PATH.size()[DIM]`` (``idx.size()[1]``)
    compared_sizes: list[str] = field(default_factory=list)
    #: that guard with each size in the readable form (``idx.size()[1] != 16``; ``2 <= idx.size()[1] <= 16``)
    readable: str = ""

    def compares_size(self, path: str, dim: int) -> bool:
        """Whether this guard says the compiled code compared dim ``dim`` of ``path``'s size with something
        (an upper bound, ``!=``, another size), beyond the lower bound every dynamic size has."""
        if self.path == path and self.dim == dim and (self.upper_bound is not None
                                                      or (self.lower_bound is not None and self.lower_bound > 2)):
            return True  # a range the code's comparisons made (2 is the lower bound of every dynamic size)
        return f"{path}.size()[{dim}]" in self.compared_sizes


@dataclass
class GuardChange:
    """One failed guard of a recompile, read by the doctor: what changed, how.

    ``kind`` is one of :data:`GUARD_KINDS`; ``subject`` the input as the
    user names it (``x``, ``the global SCALE``, ``self.drop.training``);
    ``before`` / ``after`` the value the failed compile was made for and the one
    that came (empty when torch did not say); ``failed_guard`` the guard of the
    failed compile (``failed_compile_id``) and ``new_guard`` the new compile's
    guard on the same input, as torch printed them."""

    kind: str
    subject: str = ""
    before: str = ""
    after: str = ""
    dim: Optional[int] = None
    failed_compile_id: Optional[CompileId] = None
    failed_guard: str = ""
    new_guard: str = ""
    text: str = ""  # plain words: "size of dim 0 of x went 8 -> 16"
    reason: str = ""  # torch's words (the reason's first line)


@dataclass
class GuardSet:
    """A compile's guards: torch's tree as printed, and each guard read (``entries``; empty in
    reports saved before guards were read)."""

    compile_id: CompileId
    count: int = 0
    tree: str = TextField("")  # type: ignore[assignment]  # may stay in the log until asked for (LazyText)
    entries: list[GuardEntry] = field(default_factory=list)


KERNEL_BACKENDS = ("triton", "cpp", "extern")
KERNEL_KINDS = ("pointwise", "reduction", "persistent_reduction", "template", "foreach", "extern", "other")


#: What :func:`collective_kind` answers besides "" (not a collective).
COLLECTIVE_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv", "wait")
_COLLECTIVE_NAMESPACES = ("_c10d_functional.", "_c10d_functional_autograd.", "c10d.", "c10d::", "_c10d_functional::")
_NCCL_KERNEL = re.compile(r"^nccl(?:Dev)?Kernel_([A-Za-z]+)")
_COLLECTIVE_WORDS = (("allreduce", "all_reduce"), ("allgather", "all_gather"), ("reducescatter", "reduce_scatter"),
                     ("alltoall", "all_to_all"), ("broadcast", "broadcast"), ("sendrecv", "send_recv"),
                     ("send", "send_recv"), ("recv", "send_recv"), ("wait", "wait"))


def collective_kind(name: str) -> str:
    """The collective a kernel or op is, by its name, one of :data:`COLLECTIVE_KINDS`; "" for
    anything else: Inductor's extern calls to torch's collectives
    (``_c10d_functional.all_reduce_.default`` -> ``all_reduce``,
    ``_c10d_functional.wait_tensor.default`` -> ``wait``) and NCCL's device kernels
    (``ncclDevKernel_AllGather_RING_LL`` -> ``all_gather``). A Triton kernel that fuses the
    copy into a collective's buffer (``triton_poi_fused_all_reduce_relu_0``) is compute, not one."""
    m = _NCCL_KERNEL.match(name)
    if m:
        word = m.group(1).lower()
    elif name.startswith(_COLLECTIVE_NAMESPACES):
        word = re.split(r"[.:]+", name)[1].replace("_", "").lower() if re.split(r"[.:]+", name)[1:] else ""
    else:
        return ""
    for prefix, kind in _COLLECTIVE_WORDS:
        if word.startswith(prefix):
            return kind
    return ""


@dataclass
class CppGemm:
    """A C++ GEMM template (max-autotune's ``CppGemmTemplate`` / ``CppBmmTemplate``) as its source
    declares it, read by capture (``capture/parse/kernel_code.py``): ``sizes`` ``M``, ``N``, ``K``
    and a batched one's ``B`` (None for a symbol: dynamic shapes), the pointer parameters of its
    ``kernel(...)`` with their C types (``{"X": "bfloat16"}``), and ``per_batch_record``: its
    record-function opens in each batch's GEMM (a launch there is one GEMM)."""

    sizes: dict[str, Optional[int]] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    per_batch_record: bool = False


@dataclass
class CppLoops:
    """A C++ kernel's pointer parameters (name -> C type) and the elements each one's accesses touch
    (the product of the loop ranges an access uses), read by capture; ``dynamic``: a loop bound is a
    size symbol, no elements counted."""

    params: dict[str, str] = field(default_factory=dict)
    elements: dict[str, int] = field(default_factory=dict)
    dynamic: bool = False


@dataclass
class KernelCode:
    """What capture read of a kernel's source for its costs (``capture/parse/kernel_code.py``; the
    doctor's :mod:`ipycompile.analysis.kernel_costs` reads it): a Triton kernel's argument names
    (``in_ptr0``, ``out_ptr0``, ``in_out_ptr0``, ``xnumel``), a Triton matmul template's ``M``,
    ``N``, ``K`` ([] when not declared as numbers), torch's own estimate from its ``inductor_meta``
    (bytes, FLOPs; None when absent), the record-functions a C++ kernel opens, and a C++ kernel's
    GEMM template sizes or loops."""

    args: list[str] = field(default_factory=list)
    template_mnk: list[int] = field(default_factory=list)
    meta_bytes: Optional[float] = None
    meta_flops: Optional[float] = None
    records: list[str] = field(default_factory=list)
    gemm: Optional[CppGemm] = None
    loops: Optional[CppLoops] = None


@dataclass
class Kernel:
    """One kernel Inductor generated (or an extern call it launches)."""

    name: str
    backend: str  # one of KERNEL_BACKENDS
    kind: str  # one of KERNEL_KINDS
    aten_ops: list[str] = field(default_factory=list)
    source: str = ""
    compile_id: Optional[CompileId] = None
    launches: int = 0  # how often call() launches it
    source_nodes: list[str] = field(default_factory=list)  # the FX nodes it comes from
    graph_stage: str = ""  # "forward", "backward", "inference" when known
    info: dict[str, Any] = field(default_factory=dict)  # e.g. Triton compile time and chosen config
    # the user's source lines it computes (its FX nodes' recorded stack; see capture/parse/provenance.py)
    user_lines: list[UserFrame] = field(default_factory=list)
    user_lines_from: str = ""  # "provenance" | "nodes" | "ops" (approximate: matched by ATen op) | ""
    # each launch site's arguments read from the wrapper code (shapes, dtypes), as record_shapes gives
    # them: what costs a launch the profiler records no shapes for (CUDA-graph replays); capture/parse/launches.py
    static_launches: list["KernelLaunch"] = field(default_factory=list)
    #: what its source says of its costs, read by capture (None: a report saved before it was read;
    #: capture reads it when the report is loaded)
    code: Optional[KernelCode] = None

    @property
    def collective(self) -> str:
        """The collective this extern call runs (:func:`collective_kind`), "" for compute."""
        return collective_kind(self.name) if self.backend == "extern" else ""


@dataclass
class Subgraph:
    name: str
    code: str = ""
    op_count: int = 0
    role: str = ""  # e.g. "true_fn", "false_fn", "cond_fn", "body_fn", "combine_fn"


@dataclass
class ControlFlowNode:
    """A higher-order op in a Dynamo graph, with its subgraphs and nested ops."""

    op: str  # "cond", "while_loop", "scan", "map", "associative_scan", "invoke_subgraph", ...
    compile_id: Optional[CompileId] = None
    node_name: str = ""
    operands: str = ""  # a summary of the operands
    subgraphs: list[Subgraph] = field(default_factory=list)
    children: list["ControlFlowNode"] = field(default_factory=list)
    source_line: str = ""  # the user code line when torch recorded it
    # Set when the user called the operator but torch traced it into plain ops (no
    # higher-order op in the graph), e.g. associative_scan(combine_mode="generic"):
    # how many ops of the graph came from that call.
    inlined_ops: Optional[int] = None
    filename: str = ""  # where the call is, for inlined calls
    lineno: Optional[int] = None


@dataclass
class Phase:
    name: str
    seconds: float


@dataclass
class CompileTime:
    """Where compile time went, from chromium events and compilation_metrics."""

    total_s: float = 0.0
    phases: list[Phase] = field(default_factory=list)  # ordered, top-level phases
    by_compile: dict[str, float] = field(default_factory=dict)  # compile id -> seconds
    events: list[dict[str, Any]] = field(default_factory=list)  # raw timeline: name, compile_id, start_us, dur_us, depth

    def phase(self, name: str) -> float:
        return sum(p.seconds for p in self.phases if p.name == name)


@dataclass
class Failure:
    """A compile that failed. ``message`` and ``traceback`` are torch's text; the fields
    after them are what capture read from it (as for a :class:`GraphBreak`): the break
    kind ("Encountered aliasing during higher order op tracing"), its ``GBxxxx`` code,
    explanation, hints, developer context, and the user's frames, outermost first."""

    compile_id: Optional[CompileId]
    type: str
    message: str
    frame: UserFrame = field(default_factory=UserFrame)
    traceback: str = ""
    suggestion: Optional[Suggestion] = None
    gb_type: str = ""
    gb_code: str = ""
    explanation: str = ""
    hints: list[str] = field(default_factory=list)
    context: str = ""
    user_stack: list[UserFrame] = field(default_factory=list)
    #: the settings torch's hints name, as code, read by capture (as for a GraphBreak)
    hinted_settings: list[str] = field(default_factory=list)
    said: TorchDetail = field(default_factory=TorchDetail)  # what torch's words name, read by capture

    #: torch hit the recompile limit here (capture decides it once: ``capture.parse.recompiles.
    #: is_recompile_limit``); the recompile doctor explains it, not the break doctor
    limit_hit: bool = False
    #: the exception the user's call received where it is not ``type``: torch re-raises an error
    #: that is not one of its own kinds as ``InternalTorchDynamoError`` (an error inside Dynamo);
    #: decided by capture (``capture.parse.failures.raised_as``), "" where it is ``type`` or unknown
    raised_as: str = ""
    #: the exception was raised by torch's own code (the innermost frame of torch's traceback is
    #: torch's), not by the user's code or a library it calls; decided by capture (the builder)
    raised_by_torch: bool = False

    @property
    def stop(self) -> UserFrame:
        """Where the failed compile stopped: the innermost frame of the user stack torch printed,
        else :attr:`frame`."""
        return self.user_stack[-1] if self.user_stack else self.frame


#: Fewest copies of a segment reported as an unrolled loop (two could be one helper called twice
#: on purpose): the doctor's threshold (analysis/loops.py), and capture's, which reads the source
#: of a loop over layers only for a graph that reads this many numbered children of one container.
MIN_REPEATS = 3


@dataclass
class UnrolledLoop:
    """A Python loop Dynamo unrolled: ``repeats`` structurally identical segments of one
    graph (compile ``compile_id``), tied to the user's line ``filename:lineno``."""

    filename: str
    lineno: Optional[int]
    repeats: int
    ops_in_loop: int
    ops_total: int
    compile_id: Optional[CompileId] = None
    source_line: str = ""
    suggestion: Optional[Suggestion] = None


@dataclass
class TorchWarning:
    """A Python warning torch issued while the capture was open (``warnings.warn`` in torch's
    own code, heard by capture as it was shown: :mod:`ipycompile.capture.hooks`), read by
    capture (``capture/parse/warnings.py``). ``kind`` names what the warning is about when
    capture knows it (:data:`WARNING_KINDS`), else ``""``; ``frame`` is the user's place the
    warning names (its file, line, function and source line), empty when it names none.
    Torch shows most of its warnings once per process (``torch._dynamo.utils.warn_once``):
    a later capture of the same code does not hear it again."""

    message: str
    category: str = ""  # "UserWarning"
    kind: str = ""
    frame: UserFrame = field(default_factory=UserFrame)
    compile_id: Optional[CompileId] = None
    count: int = 1


#: What a :class:`TorchWarning` is about, where capture recognised it.
WARNING_KINDS = (
    "lru_cache_traced",  # Dynamo traced through a functools.lru_cache / cache wrapper, ignoring the cache
)


@dataclass
class EagerDifference:
    """A way the compiled code's results differ, or may differ, from eager's, recognised by
    the doctor (:mod:`ipycompile.analysis.semantics`) from what torch did or said: shown
    first, before any break or recompile. ``kind`` is one of
    :data:`ipycompile.analysis.semantics.KINDS`; ``frame`` the user's line and function
    it is about; ``torch_says`` torch's own words where torch said something."""

    kind: str
    title: str
    explanation: str = ""
    frame: UserFrame = field(default_factory=UserFrame)
    torch_says: str = ""
    suggestion: Optional[Suggestion] = None


@dataclass
class EagerRun:
    """Torch compiled nothing of the run, or ran most of the user's code eagerly, recognised by the
    doctor (:mod:`ipycompile.analysis.eager_run`) from the report's records (compile ids with no
    graph, their breaks and skip reasons, the frames torch ran without compiling): shown before
    anything else. ``kind`` is ``"nothing"`` (no graph compiled) or ``"mostly"`` (most of the
    user's functions ran eagerly); ``wrapper`` what torch stopped in (``"ddp"``, ``"fsdp"``,
    ``"disable"``, ``"skipped"``, ``""``); ``frame`` where torch gave up (the line it was
    tracing), ``user_line`` the user's line that led there; ``reason`` torch's words and
    ``gb_code`` its break code; ``graphs`` the graphs compiled, ``frames`` the frames torch
    entered, ``eager`` / ``compiled`` the user's functions (or calls) that ran eagerly / compiled."""

    kind: str
    title: str
    explanation: str = ""
    wrapper: str = ""
    frame: UserFrame = field(default_factory=UserFrame)
    user_line: UserFrame = field(default_factory=UserFrame)
    reason: str = ""
    gb_code: str = ""
    compile_id: Optional[CompileId] = None
    graphs: int = 0
    frames: int = 0
    eager: list[str] = field(default_factory=list)
    compiled: list[str] = field(default_factory=list)
    suggestion: Optional[Suggestion] = None
    #: no graph compiled in this run, but Dynamo ran code from its cache while it held graphs compiled
    #: before: those may have run (the answer says "in this run", not that the model ran eagerly)
    cached: bool = False


@dataclass
class RawArtifact:
    """An event the builder did not interpret; kept, never dropped."""

    kind: str
    compile_id: Optional[CompileId] = None
    metadata: dict[str, Any] = field(default_factory=dict)
    payload: Optional[str] = TextField(None)  # type: ignore[assignment]  # may stay in the log (LazyText)


@dataclass
class DumpedFile:
    """A file of code torch wrote whole into its trace (a ``dump_file`` event): the source of
    code made at run time that Dynamo traced, such as an FX GraphModule's ``<eval_with_key>.N``
    (``torch.fx.symbolic_trace``, e3nn's generated code), which exists in no file on disk.
    ``name`` is the file name torch gave it (the name frames and graphs' ``# File:`` comments
    use), ``code`` its text (tlparse's ``dump_file/`` page), ``compile_id`` the compile that
    traced it first (torch dumps each file once per process)."""

    name: str
    code: str = TextField("")  # type: ignore[assignment]  # may stay in the log until asked for (LazyText)
    compile_id: Optional[CompileId] = None


@dataclass
class Stats:
    records: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)  # every event kind seen, with counts
    unknown: dict[str, int] = field(default_factory=dict)  # kinds kept as raw artifacts
    parse_errors: dict[str, int] = field(default_factory=dict)  # handler failures by kind
    errors: list[str] = field(default_factory=list)  # first few handler errors, for a bug report


@dataclass
class DeviceBusy:
    """How much of each call the GPU works (ipycompile.run.busy): the calls' device activity
    from the profiler (CUPTI), against the run time of the same calls measured next to it:
    plain blocks (no profiler, at least 10 ms each) alternate with the profiled ones (plain,
    profiled, plain, profiled, plain); ``run_s`` is the plain blocks' median time per call, ``busy_s`` the
    profiled blocks' median busy time per call. (Reports saved before this judged it against
    the steady state's run time, measured earlier; ``run_times_s`` is empty in them.)"""

    busy_s: float = 0.0  # device activity per call (kernels, copies, fills; overlaps counted once)
    run_s: float = 0.0  # the run time per call it is judged against: the median of run_times_s
    share: float = 0.0  # busy_s / run_s, at most 1
    verdict: str = ""  # "device-bound" | "host-bound" | "in between"
    advice: str = ""  # what to try (reduce-overhead), or what remains on the host under CUDA graphs
    kernels_per_call: float = 0.0  # device activities per call
    calls: int = 0  # calls profiled
    host_ops: list[str] = field(default_factory=list)  # the largest top-level host operations per call
    run_times_s: list[float] = field(default_factory=list)  # the plain blocks beside the profiled ones, per call
    run_block_calls: int = 0  # calls in each plain block
    busy_times_s: list[float] = field(default_factory=list)  # the profiled blocks' busy time, per call

    @property
    def text(self) -> str:
        ms = lambda s: f"{s * 1e6:.1f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms"  # noqa: E731
        idle = f", the GPU idle {1 - self.share:.0%} of each call" if self.verdict != "device-bound" else ""
        return f"GPU busy {ms(self.busy_s)} of each {ms(self.run_s)} call ({self.share:.0%}): {self.verdict}{idle}"


@dataclass
class OutputCheck:
    """The verdict on the compiled outputs against eager's (:func:`ipycompile.run.accuracy.check_outputs`),
    and how it was reached."""

    match: bool
    method: str  # "equal" | "close" | "fp64 reference" | "dtype tolerances" | "structure"
    max_abs_diff: Optional[float] = None
    compiled_error: Optional[float] = None  # RMSE against float64 (worst leaf), fp64 method
    eager_error: Optional[float] = None  # eager's RMSE against float64 on that leaf
    allowed_error: Optional[float] = None  # the bound compiled_error was held to
    message: str = ""
    leaves: list[str] = field(default_factory=list)  # one line per tensor compared


#: schema 2's EagerComparison fields that are :class:`OutputCheck`'s now (schema 3): name -> OutputCheck field
OUTPUT_CHECK_FIELDS_V2 = {"outputs_match": "match", "check_method": "method", "max_abs_diff": "max_abs_diff",
                          "compiled_error": "compiled_error", "eager_error": "eager_error",
                          "allowed_error": "allowed_error", "message": "message", "check_details": "leaves"}


@dataclass
class EagerComparison:
    """The same cell run uncompiled, measured the same way; ``check`` is its outputs against the
    compiled run's."""

    run_times_s: list[float] = field(default_factory=list)
    run_median_s: Optional[float] = None
    peak_device_bytes: Optional[int] = None
    peak_host_bytes: Optional[int] = None
    speedup: Optional[float] = None  # the median over pairs of eager block / compiled block (ABBA order)
    speedup_ci95: list[float] = field(default_factory=list)  # its 95 % interval [low, high] (order statistics)
    pairs: int = 0  # pairs of blocks (one compiled, one eager) the speedup is the median of
    compiled_run_median_s: Optional[float] = None  # the compiled side's median in those pairs
    block_calls: list[int] = field(default_factory=list)  # calls per block in those pairs: [compiled, eager]
    memory_ratio: Optional[float] = None  # compiled steady-state peak / eager peak (device when known, else host)
    break_even_calls: Optional[int] = None  # calls after which compiling paid for itself; None: never
    check: Optional[OutputCheck] = None  # the outputs against the compiled run's (None: not compared)
    device_median_s: Optional[float] = None  # device time of eager, same method as the compiled side
    latency_median_s: Optional[float] = None
    busy: Optional[DeviceBusy] = None  # how much of each eager call the GPU works (CUDA)
    # when compiled is slower beyond doubt and both sides' busy time is known: on the host or on the GPU, and by how much
    why_slower: str = ""

    @staticmethod
    def from_v2(flat: dict[str, Any]) -> dict[str, Any]:
        """A schema-2 comparison's JSON (the output check's fields beside the timings) as this
        schema's (the check one record, ``check``); None where the outputs were not compared."""
        out = {k: v for k, v in flat.items() if k not in OUTPUT_CHECK_FIELDS_V2}
        check = {OUTPUT_CHECK_FIELDS_V2[k]: v for k, v in flat.items() if k in OUTPUT_CHECK_FIELDS_V2}
        if check.get("match") is not None:
            out["check"] = {"method": "", **check}
        return out


OTHER_DEVICE_TIME = "other device time"  # the KernelTime of device time in no kernel of the report
#: What the other device time was (``KernelTime.parts`` of the :data:`OTHER_DEVICE_TIME` entry)
OTHER_CAUSES = {
    "eager": "kernels of eager code (outside the compiled graphs)",
    "copies": "memory copies and sets (a CUDA graph's input copies among them)",
    "replay": "library kernels (cuBLAS, cuDNN) in CUDA-graph replays that no single extern kernel of the report launches",
    "library": "library kernels in compiled code that no extern kernel of the report launches",
}
OTHER_CPU_TIME = "other CPU time"  # the KernelTime of CPU time in no kernel (wrapper, guards, eager code)


@dataclass
class KernelLaunch:
    """What the profiler recorded of the op that launched a kernel (``record_shapes``): its
    name (``triton_poi_fused_0``, ``aten::mm``, ``aten::convolution``), its inputs' shapes and
    dtypes as the profiler writes them (``[512, 1024]``, ``c10::Half``; ``[]`` and ``Scalar``
    for a number), its concrete non-tensor inputs (``"[2, 2]"``), and how many launches had
    exactly these. The bytes and FLOPs a launch costs are computed from it by
    :mod:`ipycompile.analysis.kernel_costs`."""

    op: str
    shapes: list[Any] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    concrete: list[Any] = field(default_factory=list)
    count: int = 0


@dataclass
class KernelTime:
    """Time the profiled steady-state calls spent in one kernel (``--profile-kernels``).

    ``name`` is what the profiler saw: a kernel's name, an extern kernel
    (``extern_kernels.mm``, for the library kernels its op launched), or the
    time matched to no kernel (:data:`OTHER_DEVICE_TIME` / :data:`OTHER_CPU_TIME`).
    """

    name: str
    kernel: str = ""  # the report kernel it matched ("" when none, e.g. the other-time entry)
    compile_id: Optional[CompileId] = None  # that kernel's compile (else the compiled region's, when known)
    graph_stage: str = ""  # that kernel's graph_stage (else "forward" / "backward" when known)
    total_s: float = 0.0  # over all profiled calls
    per_call_s: float = 0.0  # per call of the cell: total_s / profiled calls
    calls: int = 0  # kernel launches (calls, on CPU) seen in the profiled calls
    share: float = 0.0  # of the profiled device time (CUDA) or CPU time of the calls
    launches: list[KernelLaunch] = field(default_factory=list)  # the launching ops' inputs, distinct ones counted
    # the other-time entry's seconds (over all profiled calls) by what they were: OTHER_CAUSES' words
    parts: dict[str, float] = field(default_factory=dict)

    @property
    def collective(self) -> str:
        """The collective this time was spent in (an NCCL kernel, or the extern collective call it
        matched: :func:`collective_kind`), "" for compute and the other time."""
        return collective_kind(self.kernel) or collective_kind(self.name)


@dataclass
class RooflineShares:
    """Where the profiled kernel time of a call goes against the device's roofs
    (:func:`ipycompile.analysis.roofline.roofline`): written by the run layer after
    ``--profile-kernels``, printed by the text summary."""

    device: str = ""
    peak_known: bool = False  # the device is in the peak table (else no verdicts)
    busy_s: float = 0.0  # the kernels' time per call (the GPU's busy time, from the profiler)
    near_roof_s: float = 0.0  # in kernels within 70 % of the roof that bounds them
    memory_far_s: float = 0.0  # memory-bound kernels further from their roof
    compute_far_s: float = 0.0  # compute-bound kernels further from their roof
    latency_s: float = 0.0  # latency-bound: too short to approach either roof
    unknown_s: float = 0.0  # kernels with no estimate of bytes (or no peak)
    # The GPU's idle time per call while the host runs Python, guards and launches: the run
    # time per call less the GPU busy time of the busy-time phase (``Profile.busy``: ``run_s -
    # busy_s``, at least 0); None without that phase.
    host_gap_s: Optional[float] = None
    run_s: Optional[float] = None  # the run time per call the host gap is taken against


@dataclass
class RunSettings:
    """What a run was asked for, and where it ran."""

    mode: str = "default"
    backend: str = ""
    dynamic: Optional[bool] = None
    fullgraph: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    config: dict[str, str] = field(default_factory=dict)  # torch config not at its default: "inductor.freezing" -> "True"
    observe: bool = False
    fresh: bool = False
    label: str = ""
    params: dict[str, Any] = field(default_factory=dict)  # sweep parameters of this point (name -> value)
    torch_version: str = ""
    device: str = ""


@dataclass
class FirstCall:
    """The first call: compile and one run, synchronised."""

    compile_s: Optional[float] = None  # its wall time net of the capture's trace logging
    compile_wall_s: Optional[float] = None  # its wall time (compile_s + trace_logging_s)
    trace_logging_s: Optional[float] = None  # torch-measured structured-logging time in it: the capture's cost
    one_time_s: Optional[float] = None  # process start-up paid before it, not in compile_s
    peak_device_bytes: Optional[int] = None
    peak_host_bytes: Optional[int] = None


@dataclass
class SteadyState:
    """The calls after warm-up: run time (blocks of calls back to back, the median over blocks),
    latency (single synchronised calls), device time (CUDA events), the GPU's busy time."""

    run_times_s: list[float] = field(default_factory=list)  # one per block: its time over its calls
    run_median_s: Optional[float] = None
    run_iqr_s: Optional[float] = None
    run_min_s: Optional[float] = None
    run_max_s: Optional[float] = None
    runs: int = 0
    warmup: int = 0
    auto_runs: bool = False
    run_block_calls: int = 0  # calls per timed block
    run_dropped_blocks: int = 0  # blocks re-run because torch compiled or recorded a CUDA graph in them
    timing_method: str = ""  # how run time, device time and latency were measured, in words
    latency_times_s: list[float] = field(default_factory=list)
    latency_median_s: Optional[float] = None
    device_times_s: list[float] = field(default_factory=list)  # CUDA events per call (do_bench's method)
    device_median_s: Optional[float] = None
    recorded_in_timing: dict[str, int] = field(default_factory=dict)  # compiles / CUDA-graph recordings while timing
    busy: Optional[DeviceBusy] = None  # how much of each call the GPU works, with a verdict (CUDA)
    peak_device_bytes: Optional[int] = None
    peak_host_bytes: Optional[int] = None


@dataclass
class Memory:
    """How host memory was measured, and the allocator's timelines (``--memory-timeline``)."""

    host_method: str = ""  # "vmhwm" | "sampling" | "unavailable"
    # the whole process's RSS just before the cell ran (its first call): the peaks' baseline
    host_before_bytes: Optional[int] = None
    timelines: list["MemoryTimeline"] = field(default_factory=list)


@dataclass
class KernelTimes:
    """``--profile-kernels``: time of the profiled steady-state calls, kernel by kernel."""

    times: list[KernelTime] = field(default_factory=list)  # longest first
    device: str = ""  # what they measure: "cuda" (device time) or "cpu" (CPU time)
    calls: int = 0  # calls run under the profiler


#: the flat names a Profile had up to schema 1, and where each lives now: (record, field)
PROFILE_FIELDS_V1 = {
    **{name: ("settings", name) for name in ("mode", "backend", "dynamic", "fullgraph", "options", "config",
                                             "observe", "fresh", "label", "params", "torch_version", "device")},
    **{name: ("first_call", name) for name in ("compile_s", "compile_wall_s", "trace_logging_s", "one_time_s")},
    "peak_device_bytes_compile": ("first_call", "peak_device_bytes"),
    "peak_host_bytes_compile": ("first_call", "peak_host_bytes"),
    **{name: ("steady", name) for name in ("run_times_s", "run_median_s", "run_iqr_s", "run_min_s", "run_max_s", "runs",
                                           "warmup", "auto_runs", "run_block_calls", "run_dropped_blocks",
                                           "timing_method", "latency_times_s", "latency_median_s", "device_times_s",
                                           "device_median_s", "recorded_in_timing", "busy")},
    "peak_device_bytes_run": ("steady", "peak_device_bytes"),
    "peak_host_bytes_run": ("steady", "peak_host_bytes"),
    "host_memory_method": ("memory", "host_method"),
    "memory_timelines": ("memory", "timelines"),
    "kernel_times": ("kernels", "times"),
    "kernel_times_device": ("kernels", "device"),
    "kernel_times_calls": ("kernels", "calls"),
}


@dataclass
class KeptState:
    """What a run put back after the calls that only measured the cell (warm-up, timing, eager):
    ``restored``, the objects the first call changed in place and the measuring calls changed again
    (a training step's ``model``, ``opt``), now as the first call left them; ``not_restored``, what
    the cell changes in place that nothing could put back (``log`` (list, .append), a file written)."""

    restored: list[str] = field(default_factory=list)
    not_restored: list[str] = field(default_factory=list)
    calls: int = 0  # the cell's calls after the first


@dataclass
class Profile:
    """What one run cost, as small records, each filled by the phase that measured it: the
    settings, the first call, the steady state with its timings, memory, the eager
    comparison, kernel times, and notes. The flat names of schema 1 (``run_median_s``,
    ``peak_device_bytes_compile``, ...) exist only in :meth:`from_v1`, which reads a saved
    schema-1 profile into the records (:data:`PROFILE_FIELDS_V1` says where each now lives)."""

    settings: RunSettings = field(default_factory=RunSettings)
    first_call: FirstCall = field(default_factory=FirstCall)
    steady: SteadyState = field(default_factory=SteadyState)
    memory: Memory = field(default_factory=Memory)
    eager: Optional[EagerComparison] = None
    kernels: KernelTimes = field(default_factory=KernelTimes)
    caches: dict[str, str] = field(default_factory=dict)  # layer -> hit / miss / bypass / reused / fresh
    reused_compiled_code: bool = False
    report_build_s: Optional[float] = None  # building this report from the trace, after the run
    notes: list[str] = field(default_factory=list)
    noise: list[str] = field(default_factory=list)  # figures whose spread is large, each with why (empty: quiet)
    roofline: Optional[RooflineShares] = None  # with --profile-kernels: the kernel time against the roofs
    error: str = ""  # the user's exception, when the cell raised
    kept: Optional[KeptState] = None  # the state put back after the measuring calls (run/state.py)

    def noisy(self, figure: str) -> str:
        """Why ``figure`` ("run time", "speedup vs eager", "eager run time", "GPU busy share",
        "eager GPU busy share") is noisy, or ""."""
        return next((n for n in self.noise if n.startswith(figure + ":")), "")

    @property
    def peak_device_bytes(self) -> Optional[int]:
        vals = [v for v in (self.first_call.peak_device_bytes, self.steady.peak_device_bytes) if v is not None]
        return max(vals) if vals else None

    @property
    def peak_host_bytes(self) -> Optional[int]:
        vals = [v for v in (self.first_call.peak_host_bytes, self.steady.peak_host_bytes) if v is not None]
        return max(vals) if vals else None

    def host_added_bytes(self, peak: Optional[int]) -> Optional[int]:
        """What the cell itself added to the process's host memory at ``peak`` (a peak RSS of
        one of its phases): that peak over the RSS just before the cell ran. None where either
        is unknown (reports before this field, no /proc)."""
        before = self.memory.host_before_bytes
        return None if peak is None or before is None else max(0, peak - before)

    @property
    def peak_host_added_bytes(self) -> Optional[int]:
        """The cell's own host-memory peak: its highest peak RSS over the process's RSS before it."""
        return self.host_added_bytes(self.peak_host_bytes)

    @staticmethod
    def from_v1(flat: dict[str, Any]) -> dict[str, Any]:
        """A schema-1 profile's JSON (flat names) as this schema's (records)."""
        out: dict[str, Any] = {}
        for name, value in flat.items():
            if name in PROFILE_FIELDS_V1:
                record, attr = PROFILE_FIELDS_V1[name]
                out.setdefault(record, {})[attr] = value
            else:
                out[name] = value
        return out




@dataclass
class TraceOrigin:
    """Where a report read from a TORCH_TRACE log came from.

    A report captured in this process has none (``CompileReport.origin is None``).
    One with an origin was recorded by another process, perhaps on another
    machine: its file names are the ones torch saw there, and a local file of
    the same name need not hold the code torch compiled.
    """

    path: str = ""  # the log file read
    rank: Optional[int] = None  # torch.distributed rank of the process that wrote it, when known
    pid: Optional[int] = None  # that process's id (from torch's line prefix)
    size_bytes: int = 0
    lines: int = 0  # lines read
    records: int = 0  # trace events read
    skipped_lines: int = 0  # lines of events that could not be read (see problems)
    problem_count: int = 0  # events that could not be read
    problems: list[str] = field(default_factory=list)  # the first few: "line 12: the JSON envelope is cut off ..."
    summary: bool = False  # a first, quick pass: bulky payloads (later graphs, generated code, guards) not read
    unread: dict[str, int] = field(default_factory=dict)  # with summary: event kinds not read, with counts


@dataclass
class AutotuneChoice:
    """One candidate max-autotune benchmarked for an op."""

    name: str  # torch's choice name: "triton_mm_11", "mm" (the extern kernel), ...
    kind: str = ""  # "triton" | "extern" | other choice types torch names
    time_ms: Optional[float] = None  # benchmarked time (inf: failed)
    description: str = ""  # its configuration (block sizes, stages, warps)


@dataclass
class Autotune:
    """One op max-autotune chose a kernel for (``mm``, ``addmm``, ``convolution``, ...)."""

    op: str
    compile_id: Optional[CompileId] = None
    shape: str = ""  # the inputs, as torch writes them: "512x4096, 512x1024, 1024x4096"
    dtypes: str = ""
    num_choices: Optional[int] = None
    num_triton_choices: Optional[int] = None
    winner: str = ""
    winner_kind: str = ""
    winner_desc: str = ""
    winner_ms: Optional[float] = None
    extern_ms: Optional[float] = None  # the library (cuBLAS) choice, when torch benchmarked one
    runner_up: str = ""
    runner_up_ms: Optional[float] = None
    best_triton: str = ""  # when the winner is not Triton: the best Triton choice
    best_triton_ms: Optional[float] = None
    precompile_s: Optional[float] = None  # compiling the candidates
    benchmark_s: Optional[float] = None  # benchmarking them
    failed: list[str] = field(default_factory=list)  # candidates that failed, with torch's reason
    choices: list[AutotuneChoice] = field(default_factory=list)  # every candidate, fastest first (live runs)
    kernel: str = ""  # the report kernel it became, when that is unambiguous
    source: str = ""  # "trace" (chromium events) and/or "feedback" (torch's autotune feedback hook)
    cached: bool = False  # torch took the timings from its autotune cache (an earlier site of these shapes, or disk)

    @property
    def tuning_s(self) -> float:
        return (self.precompile_s or 0.0) + (self.benchmark_s or 0.0)

    @property
    def best_triton_time_ms(self) -> Optional[float]:
        """The best Triton choice's time: the winner's when Triton won."""
        return self.winner_ms if self.winner_kind == "triton" else self.best_triton_ms


@dataclass
class AutotuneGroup:
    """The sites of one op with the same input shapes and dtypes (a model's repeated layers):
    what :func:`group_autotuning` makes of :attr:`CompileReport.autotuning`."""

    op: str
    shape: str
    dtypes: str
    sites: list[Autotune] = field(default_factory=list)

    @property
    def first(self) -> Autotune:
        """The site that was benchmarked (else the first): its choices stand for the group."""
        return next((a for a in self.sites if not a.cached and a.winner), self.sites[0])

    @property
    def cached(self) -> int:
        return sum(a.cached for a in self.sites)

    @property
    def winners(self) -> list[str]:
        """The distinct winning choices, in order: one when every site agrees. Torch numbers the
        candidates of each site anew (``triton_mm_11``, ``triton_mm_29``), so a choice is its
        name less that number, and its configuration."""
        seen: list[str] = []
        for a in self.sites:
            w = re.sub(r"_\d+$", "", a.winner) + (f" ({a.winner_desc})" if a.winner_desc else "")
            if a.winner and w not in seen:
                seen.append(w)
        return seen

    @property
    def tuning_s(self) -> float:
        return sum(a.tuning_s for a in self.sites)


def group_autotuning(autotunes: list[Autotune]) -> list[AutotuneGroup]:
    """Group autotuned sites by op, input shapes and dtypes, in order of first appearance.
    A site whose shapes are unknown (a cached site replayed from a trace file) stays alone."""
    groups: dict[tuple, AutotuneGroup] = {}
    for i, a in enumerate(autotunes):
        key = (a.op, a.shape, a.dtypes) if a.shape else (a.op, "", "", i)
        groups.setdefault(key, AutotuneGroup(a.op, a.shape, a.dtypes)).sites.append(a)
    return list(groups.values())


@dataclass
class CudaGraphs:
    """What CUDA graphs did for one compile (reduce-overhead, max-autotune)."""

    compile_id: Optional[CompileId] = None
    status: str = ""  # "recorded" | "skipped" | "not recorded" (enabled, but no call recorded)
    reason: str = ""  # torch's words when skipped, first line
    culprit: str = ""  # the input or op torch names, or the user line it points at
    culprit_frame: UserFrame = field(default_factory=UserFrame)  # the user's line torch's message points at
    detail: str = ""  # torch's whole message
    recordings: int = 0  # CUDA graphs recorded (one per function and input shape)
    rerecordings: int = 0  # recordings beyond the first of each function (new shapes, failed checks)
    functions: dict[str, int] = field(default_factory=dict)  # recordings per function (torch's names)
    rerecord_reasons: list[str] = field(default_factory=list)
    recording_s: float = 0.0  # time spent recording
    notes: list[str] = field(default_factory=list)  # torch's other warnings about this compile's CUDA graphs


@dataclass
class MemoryAllocation:
    """A block live at the peak of a memory timeline."""

    size_bytes: int
    frame: UserFrame = field(default_factory=UserFrame)  # the user's line that made it
    where: str = ""  # the innermost frame: generated code's line, or a library function
    source_nodes: list[str] = field(default_factory=list)  # FX nodes of generated code that uses it
    stack: list[UserFrame] = field(default_factory=list)  # innermost first (trimmed)
    from_nodes: bool = False  # frame found through source_nodes (the report's graphs)


@dataclass
class MemoryTimeline:
    """Allocated CUDA memory over one call, from the caching allocator's own history."""

    label: str  # "compiling call" | "steady-state call"
    times_us: list[float] = field(default_factory=list)  # from the first event (event index when torch gives no time)
    allocated_bytes: list[int] = field(default_factory=list)
    baseline_bytes: int = 0  # allocated before the call
    peak_bytes: int = 0
    peak_time_us: float = 0.0
    end_bytes: int = 0
    allocations: int = 0
    live_at_peak: int = 0
    top_at_peak: list[MemoryAllocation] = field(default_factory=list)  # largest first
    time_unit: str = "us"  # "us" | "event"
    truncated: bool = False  # the allocator's history hit its entry limit
    allocator_peak_bytes: Optional[int] = None  # torch.cuda.max_memory_allocated() over the same call: a check on peak_bytes
