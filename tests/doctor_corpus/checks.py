"""The classes of wrong answer seen on real users' code (issue 27, part 2), as checks.

Each check reads one answer of the doctor (a break's, a recompile's or a failure's
``Suggestion``) beside what the case is (its own source file, what eager did) and
returns why the answer is wrong, or ``""``. The harness (:mod:`doctor_corpus.harness`)
runs them on every answer and counts an answer a check rejects as **wrong**, whatever
its fix proves; the checks that need the case run again (a claim about eager, settings
proven together, ``dynamic=True`` on a size that goes 1 -> 2) live in the harness and
use these helpers.

Classes (:data:`CLASSES`): ``guard_names`` (torch's guard sources and internal names
instead of the user's), ``library_code`` (advice to change code the user does not own),
``eager_claim`` (says eager raises the same when it does not), ``rewrite`` (a rewrite that
does not apply, compile, or keep the outputs), ``removes_work`` (a rewrite that leaves the
compiled function doing nothing), ``settings_together`` (settings that work alone but not
together), ``sizes_0_1`` (``dynamic=True`` / ``mark_dynamic`` on a size that goes 1 -> 2),
``seed_order`` ("before or after" for a seed), ``silent_change`` (compiled outputs differ
from eager's and no answer says so), ``fix`` (a fix that does not remove the problem).
"""

from __future__ import annotations

import ast
import builtins
import re
from typing import Iterable, Optional

CLASSES = ("guard_names", "library_code", "eager_claim", "rewrite", "removes_work", "settings_together",
           "sizes_0_1", "seed_order", "silent_change", "fix")

# torch's guard sources and the names of its own frames, never a name in the user's source
_GUARD_SOURCE = re.compile(
    r"\bL\[['\"]|\bG\[['\"]|___\w+|__resume_frame_values|\btorch_dynamo_resume_in_\w+|"
    r"(?<![\w.])args\[\d+\]|(?<![\w.])kwargs\[['\"]|\b_modules\[['\"]|\b_parameters\[['\"]")
# torch's wrapper functions, when an answer names them as the user's function
_WRAPPERS = ("inner", "wrapped_func", "wrapper", "_fn", "compile_wrapper", "_wrapped_call_impl", "_call_impl")
_WRAPPER_NAMED = re.compile(r"`(?P<name>" + "|".join(_WRAPPERS) + r")(?:\(\))?`|\bfunction (?P<name2>"
                            + "|".join(_WRAPPERS) + r")\b")

#: kinds whose fix is a change of the code at the break's line (not a setting, not words)
CODE_AT_LINE = {
    "torch.where", "torch.cond", "keep_tensor", "remove_print", "tensor_clone", "numpy_to_torch", "move_out",
    "with_outside", "hop_clone", "hop_return_value", "hop_match_structure", "remove_graph_break", "remove_unused",
    "iterator_input", "generator_outside", "class_outside", "sort_tensors", "torch_equal", "generator_mutation",
    "loop_body", "tensor_value", "contiguous",
}

_EAGER_CLAIM = re.compile(r"raises? the same without torch\.compile|same (?:error|exception) (?:without|in eager)|"
                          r"eager(?:ly)? (?:also |too )?raises|raises? (?:it )?(?:in|under) eager too", re.I)
_SAYS_DIFFERS = re.compile(r"differ\w* from eager|eager\w* (?:gives|returns|computes) (?:a )?different|"
                           r"not (?:the same|what) (?:as )?eager|results? (?:will |may |can )?(?:differ|change)|"
                           r"ignor\w+ (?:the |its |your )?(?:\w+ )?cache|wrong (?:numbers|results)|semantics", re.I)


def torch_words(answer) -> list[str]:
    """What torch itself said about a break, recompile or failure (quoted by the doctor, not its own words)."""
    out: list[str] = []
    for attr in ("reason", "explanation_torch", "detail", "message", "limit_message", "context"):
        v = getattr(answer, attr, "")
        if isinstance(v, str) and v:
            out.extend(ln.strip() for ln in v.splitlines() if ln.strip())
    for attr in ("hints", "reasons"):
        out.extend(h.strip() for h in getattr(answer, attr, []) or [] if isinstance(h, str) and h.strip())
    if hasattr(answer, "gb_code"):  # a GraphBreak's explanation is torch's
        out.extend(ln.strip() for ln in (answer.explanation or "").splitlines() if ln.strip())
    for ch in getattr(answer, "changes", []) or []:
        out.extend(x for x in (ch.reason, ch.failed_guard, ch.new_guard) if x)
    return sorted(set(out), key=len, reverse=True)


def _doctor_text(s, answer) -> str:
    """The suggestion's title and explanation with torch's own words (quoted) taken out."""
    text = f"{s.title}\n{s.explanation}"
    for w in torch_words(answer):
        if len(w) > 12:
            text = text.replace(w, " ")
    return text


def _words(source: str) -> set:
    return set(re.findall(r"[A-Za-z_]\w*", source))


def guard_names(s, answer, user_source: str) -> str:
    """A guard source (``L['x']``, ``args[0]``, ``___stack0``) or a torch wrapper's name (``inner``)
    in the answer's title, explanation or code, where the user's source has no such name."""
    if s is None:
        return ""
    found = []
    for where, text in (("text", _doctor_text(s, answer)), ("code", s.code or "")):
        for m in _GUARD_SOURCE.finditer(text):
            found.append(f"{m.group(0)!r} in its {where}")
        for m in _WRAPPER_NAMED.finditer(text):
            name = m.group("name") or m.group("name2")
            if name not in _words(user_source):
                found.append(f"torch's wrapper `{name}` in its {where}")
    subject_text = getattr(answer, "explanation", "") if not hasattr(answer, "gb_code") else ""
    for m in _GUARD_SOURCE.finditer(subject_text or ""):
        found.append(f"{m.group(0)!r} in the recompile's explanation")
    for ch in getattr(answer, "changes", []) or []:
        for x in (ch.subject, ch.text):
            for m in _GUARD_SOURCE.finditer(x or ""):
                found.append(f"{m.group(0)!r} in a change's subject/words")
    return ("names torch's internals, not the user's code: " + "; ".join(dict.fromkeys(found))) if found else ""


def _code_names(code: str) -> Optional[set]:
    """The names the snippet reads without defining them (None where it does not parse)."""
    lines = [ln for ln in code.splitlines() if not re.match(r"^\s*%", ln)]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return None
    defined, used = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (defined if isinstance(node.ctx, ast.Store) else used).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
    return used - defined - set(dir(builtins)) - {"torch"}


def library_code(s, answer, kind: str, user_file: str, user_source: str) -> str:
    """Advice whose code to change is not the user's: a rewrite of a library's file, a snippet naming
    what the user's source does not have (``mark_dynamic(past_key_values, 2)``), or a code change at a
    break whose line is in a library (unless the answer is a setting or torch's own words)."""
    if s is None:
        return ""
    if s.first_line is not None and s.filename and s.filename != user_file:
        return f"rewrites {s.filename}:{s.first_line}, a file the user does not own"
    code = s.code or ""
    if code and s.first_line is None:
        names = _code_names(code)
        missing = sorted(n for n in (names or ()) if n not in _words(user_source))
        if missing:
            return f"its code names {', '.join(missing)}, which the user's source does not have"
    frame = getattr(answer, "frame", None)
    if kind in CODE_AT_LINE and frame is not None and frame.filename and frame.filename != user_file \
            and not (s.first_line is not None and s.filename == user_file):
        return f"`{kind}` advice for code at {frame.filename}:{frame.lineno}, which the user does not own"
    return ""


def eager_claim(s, answer, eager_error: str) -> str:
    """"Raises the same without torch.compile" where eager raised nothing."""
    if s is None or eager_error:
        return ""
    m = _EAGER_CLAIM.search(_doctor_text(s, answer))
    return f"says {m.group(0)!r}, but the case runs without torch.compile with no exception" if m else ""


def seed_order(s, answer) -> str:
    """A seed moved "before or after" the compiled call: moved after, the random outputs change."""
    if s is None:
        return ""
    text = _doctor_text(s, answer) + "\n" + (s.code or "")
    if "manual_seed" in text and re.search(r"before or after|after or before", text, re.I):
        return "leaves the seed's place open ('before or after'): moved after, the random outputs change"
    return ""


# what does no work of the function's own: output, and an explicit graph break (torch.compiler.graph_break
# / torch._dynamo.graph_break splits the graph and computes nothing: removing it is the fix, not lost work)
_NO_WORK = re.compile(r"^\s*(?:(?:print|warnings\.warn|logging\.\w+|logger\.\w+|log\.\w+|pass)\b"
                      r"|(?:torch\.(?:_dynamo|compiler)\.)?graph_break\()")


def removes_work(rewritten_module: str, first_line: int, replaced: str = "") -> str:
    """The function holding ``first_line`` in the rewritten text does nothing any more, where the
    lines it replaced (``replaced``) did work (not only a print, a warning or a log call)."""
    if replaced and all(_NO_WORK.match(ln) or not ln.strip() or ln.strip().startswith("#") for ln in replaced.splitlines()):
        return ""
    try:
        tree = ast.parse(rewritten_module)
    except SyntaxError as exc:
        return f"the rewritten file does not parse: {exc.msg} (line {exc.lineno})"
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= first_line <= (node.end_lineno or 0):
            if best is None or node.lineno > best.lineno:
                best = node
    if best is None:
        return ""
    body = [st for st in best.body if not isinstance(st, ast.Pass)
            and not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))]
    return "" if body else f"the rewrite leaves `{best.name}` doing nothing (its work removed, not fixed)"


def says_outputs_differ(answers: Iterable) -> bool:
    """Whether an answer says the compiled results differ from eager's (title or explanation); the
    report's own findings (``CompileReport.eager_differences``) are answers with a title of their own."""
    for a in answers:
        s = getattr(a, "suggestion", None)
        texts = [getattr(a, "explanation", "") if not hasattr(a, "gb_code") else "", getattr(a, "title", "")]
        if s is not None:
            texts += [s.title, s.explanation]
        if any(_SAYS_DIFFERS.search(t or "") for t in texts):
            return True
    return False


def dynamic_fix(code: str) -> bool:
    """Whether a fix's code is ``torch.compile(..., dynamic=True)`` (or ``%%compile --dynamic``) alone."""
    lines = [ln.strip() for ln in code.splitlines() if ln.strip()]
    active = [ln for ln in lines if not ln.startswith("#")]
    mentioned = any(re.search(r"dynamic=True|--dynamic", ln) for ln in lines)
    return mentioned and all(re.search(r"torch\.compile\(.*dynamic=True", ln) or ln.startswith("%%compile") for ln in active)
