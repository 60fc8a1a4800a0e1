"""Read a failed compile's text (``compilation_metrics``' ``fail_reason``, the
``dynamo_error`` traceback) into the fields a :class:`~ipycompile.report.Failure`
carries, as :mod:`.graph_breaks` does for a graph break::

    Encountered aliasing during higher order op tracing   <- the kind (torch's preamble lines end in ":")
      Explanation: ...
      Hint: ...
      Developer debug context: Input-to-output aliasing detected at nodes l_x_ and l_x_ ...
     For more details about this graph break, please visit: https://.../gb/gb0040.html
    ...
    from user code:
       File "/path/cell.py", line 9, in f
        return scan(body, init, xs)

Pure, and never raises on bad input.
"""

from __future__ import annotations

import re
from typing import Optional

from ...report.model import CompileId, Failure, UserFrame
from .context import read_detail
from .frames import parse_traceback, user_stack_text
from .graph_breaks import debug_context, hinted_settings
from .recompiles import is_recompile_limit

__all__ = ["parse_failure", "user_stack_text", "raised_as"]

#: The errors Dynamo lets go to the caller as they are (``convert_frame._compile``, torch 2.11 to
#: 2.13); any other exception raised while compiling reaches the caller as ``InternalTorchDynamoError``.
_PASSED_ON = {
    "torch._dynamo.exc": ("Unsupported", "UserError", "TorchRuntimeError", "BackendCompilerFailed",
                          "UncapturedHigherOrderOpError", "ShortenTraceback", "ResumePrologueTracingError",
                          "PackageError"),
    "torch.fx.experimental.symbolic_shapes": ("ConstraintViolationError", "GuardOnDataDependentSymNode"),
    "torch.fx.experimental.validator": ("ValidationException", "BisectValidationException"),
    "torch._dynamo.package": ("PackageError",),
    "builtins": ("AssertionError", "IndexError"),
}
INTERNAL_ERROR = "InternalTorchDynamoError"


def raised_as(fail_type: str) -> str:
    """What the user's call received for a compile that failed with ``fail_type`` (torch's
    ``compilation_metrics.fail_type``, the class's name): ``InternalTorchDynamoError`` where
    torch wraps it (an exception class of ``torch._dynamo.exc`` or a builtin that is none of the
    kinds torch passes on), else ``""`` (the same type, or a class this process does not know:
    a trace read elsewhere). Reads only modules torch already imported (a class of torch's found in
    them by its name); never raises."""
    import builtins
    import sys

    def error_class(module) -> Optional[type]:
        c = getattr(module, fail_type, None)
        return c if isinstance(c, type) and issubclass(c, BaseException) else None

    try:
        if not fail_type or fail_type == INTERNAL_ERROR or not fail_type.isidentifier():
            return ""
        cls = error_class(builtins) or error_class(sys.modules.get("torch._dynamo.exc"))
        if cls is None:  # defined elsewhere in torch (AsPythonConstantNotImplementedError: torch._dynamo.variables.base)
            cls = next((c for name, m in list(sys.modules.items()) if name.startswith("torch.")
                        and (c := error_class(m)) is not None and c.__module__.startswith("torch.")), None)
        if cls is None:
            return ""
        passed = tuple(c for mod, names in _PASSED_ON.items() for n in names
                       if isinstance(c := getattr(sys.modules.get(mod), n, None), type))
        return "" if issubclass(cls, passed) else INTERNAL_ERROR
    except Exception:  # noqa: BLE001 - a report must survive any text
        return ""

_EXPLANATION = re.compile(r"^\s*Explanation:\s?(?P<text>.*)$", re.M)
_HINT = re.compile(r"^\s*Hint:\s?(?P<text>.*)$", re.M)
_GB = re.compile(r"/gb/(gb\d+)\.html", re.I)


def parse_failure(compile_id: Optional[CompileId], fail_type: str, message: str, frame: UserFrame,
                  traceback: str = "") -> Failure:
    """A :class:`Failure` with what torch's ``message`` (and ``traceback``) say read into its fields."""
    f = Failure(compile_id, fail_type, message, frame, traceback)
    try:
        f.limit_hit = is_recompile_limit(fail_type, message)
        f.raised_as = raised_as(fail_type)
        text = message or ""
        lines = [ln for ln in text.splitlines() if ln.strip()]
        # torch's preambles end with a colon ("... Got graph break/error:"); the kind is the line after
        f.gb_type = next((ln.strip() for ln in lines if not ln.rstrip().endswith(":") and not ln.startswith(" ")), fail_type)
        gb = _GB.search(text)
        f.gb_code = gb.group(1).upper() if gb else ""
        expl = _EXPLANATION.search(text)
        f.explanation = expl.group("text").strip() if expl else ""
        f.hints = [m.group("text").strip() for m in _HINT.finditer(text)]
        f.hinted_settings = hinted_settings(f.hints)
        f.context = debug_context(text)
        f.said = read_detail(f.context, f.explanation, text)
        tail = user_stack_text(traceback or text) or user_stack_text(text)
        f.user_stack = parse_traceback(tail)
    except Exception:  # noqa: BLE001 - a report must survive any text
        pass
    return f
