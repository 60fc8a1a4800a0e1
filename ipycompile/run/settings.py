"""``CompileSettings``: the torch.compile arguments of a run, validated with clear errors.

Every error names the argument, the value and what is allowed, so the magic can
show it as a one-line ``UsageError`` and the Python API as a ``ValueError``.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class SettingsError(ValueError):
    """A bad compile setting: ``argument``, ``value`` and what is allowed are in the message."""

    def __init__(self, argument: str, value: Any, allowed: str) -> None:
        self.argument, self.value, self.allowed = argument, value, allowed
        super().__init__(f"{argument}: {value!r} is not allowed; {allowed}")


@dataclass(frozen=True)
class CompileSettings:
    mode: str = "default"
    backend: Union[str, Callable] = "inductor"
    dynamic: Optional[bool] = None
    fullgraph: bool = False
    options: tuple[tuple[str, Any], ...] = field(default_factory=tuple)  # Inductor options, sorted

    @property
    def backend_name(self) -> str:
        b = self.backend
        return b if isinstance(b, str) else getattr(b, "__name__", type(b).__name__)

    @property
    def uses_inductor(self) -> bool:
        return self.backend == "inductor"

    def inductor_options(self) -> dict[str, Any]:
        """The Inductor options this compile runs with: the mode's (torch's own
        ``list_mode_options``), then the explicit ``options`` over them. The one place
        that decides what a mode turns on (CUDA graphs, autotuning): :meth:`uses_cudagraphs`
        and :attr:`warmup_calls` read it."""
        import torch

        opts = dict(torch._inductor.list_mode_options(self.mode)) if self.mode != "default" else {}
        opts.update(self.options)
        return opts

    def uses_cudagraphs(self) -> bool:
        """Whether calls replay CUDA graphs (and replays may overwrite the outputs): the mode
        (reduce-overhead and max-autotune turn them on) or an explicit ``triton.cudagraphs``
        option, with the inductor backend, where CUDA is available."""
        import torch

        if not self.uses_inductor or not torch.cuda.is_available():
            return False
        return bool(self.inductor_options().get("triton.cudagraphs"))

    @property
    def warmup_calls(self) -> int:
        """Warm-up calls before timing when the user gives none: 3 where CUDA graphs may be on
        (CUDA-graph trees record on a later call than the first), else 1."""
        return 3 if self.uses_inductor and self.inductor_options().get("triton.cudagraphs") else 1

    def compile_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``torch.compile`` (mode folded into options when both are given)."""
        kwargs: dict[str, Any] = {"backend": self.backend, "fullgraph": self.fullgraph, "dynamic": self.dynamic}
        if self.options:
            kwargs["options"] = self.inductor_options()
        elif self.mode != "default":
            kwargs["mode"] = self.mode
        return kwargs

    def key(self) -> tuple:
        return (self.mode, self.backend if isinstance(self.backend, str) else id(self.backend), self.dynamic, self.fullgraph, self.options)


def parse_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with VALUE a Python literal (``True``, ``4``, ``'max'``); bare words are strings."""
    key, sep, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or not key or not raw:
        raise SettingsError("--option", text, "expected KEY=VALUE, e.g. --option max_autotune=True")
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        if not raw.replace("_", "").replace("-", "").replace(".", "").isalnum():
            raise SettingsError("--option", text, "VALUE must be a Python literal (True, 4, 0.5, 'text') or a bare word") from None
        value = raw
    return key, value


def available_backends() -> list[str]:
    import torch

    return sorted(set(torch._dynamo.list_backends(exclude_tags=())) | {"inductor"})


def _check_inductor_option(key: str, value: Any) -> None:
    import torch

    from torch._inductor import config

    names = torch._inductor.list_options()
    if key not in names:
        close = difflib.get_close_matches(key, names, n=3)
        hint = f"did you mean {', '.join(close)}?" if close else "see torch._inductor.list_options()"
        raise SettingsError("--option", key, f"not an Inductor option; {hint}")
    expected = _option_type(config, key)
    if expected is None or _is_instance(value, expected):
        return
    current = config.get_config_copy().get(key)
    if expected is bool:
        allowed = f"{key} takes True or False"
    else:
        allowed = f"{key} takes {_type_name(expected)} (now {current!r}), not {type(value).__name__}"
    raise SettingsError("--option", f"{key}={value!r}", allowed)


def _option_type(config: Any, key: str) -> Any:
    """The type torch checks an Inductor option's value against (``config.get_type``, as
    ``torch.compile``'s ``options=`` does); None where torch's config cannot say."""
    get_type = getattr(config, "get_type", None)
    try:
        return get_type(key) if callable(get_type) else None
    except Exception:
        return None


def _is_instance(value: Any, expected: Any) -> bool:
    """``isinstance`` as torch applies it: a plain class must match (``True`` is no int for a
    bool option, and no int where torch wants an int: bools are refused there too); a union
    (``int | None``) is checked member by member; other generic types are not checked (torch
    does not check them either)."""
    import typing

    origin = typing.get_origin(expected)
    if origin is None:
        if not isinstance(expected, type):
            return True
        if expected is not bool and isinstance(value, bool):
            return False
        return isinstance(value, expected)
    if origin is Union or type(expected).__name__ == "UnionType":
        members = [a for a in typing.get_args(expected)]
        return any(_is_instance(value, type(None) if a is None else a) for a in members)
    return True


def _type_name(expected: Any) -> str:
    import typing

    args = typing.get_args(expected)
    if args:
        return " or ".join(_type_name(a) for a in args)
    return {bool: "True or False", int: "a whole number", float: "a number", str: "a string (e.g. 'text')",
            type(None): "None"}.get(expected, getattr(expected, "__name__", str(expected)))


def make_settings(
    *,
    mode: Optional[str] = None,
    backend: Union[str, Callable, None] = None,
    dynamic: Optional[bool] = None,
    fullgraph: bool = False,
    options: Optional[dict[str, Any]] = None,
) -> CompileSettings:
    """Validate and normalise torch.compile settings; raises :class:`SettingsError`."""
    mode = mode or "default"
    if mode not in MODES:
        raise SettingsError("--mode", mode, f"choose one of {', '.join(MODES)}")
    backend = backend or "inductor"
    if isinstance(backend, str):
        # the default is always there: listing the backends imports each one's module (about a second)
        known = ["inductor"] if backend == "inductor" else available_backends()
        if backend not in known:
            close = difflib.get_close_matches(backend, known, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            import torch

            common = sorted(set(torch._dynamo.list_backends()) | {"inductor"})
            raise SettingsError(
                "--backend", backend, f"use a registered backend such as {', '.join(common)}{hint}; "
                "all: torch._dynamo.list_backends(exclude_tags=())"
            )
    elif not callable(backend):
        raise SettingsError("--backend", backend, "a registered backend name or a callable")
    if dynamic not in (None, True, False):
        raise SettingsError("--dynamic", dynamic, "True, False or None (torch decides)")
    if mode != "default" and backend != "inductor":
        raise SettingsError("--mode", mode, f"modes other than default need the inductor backend, not {backend!r}")
    opts = dict(options or {})
    if opts and backend != "inductor":
        raise SettingsError("--option", ", ".join(opts), f"Inductor options need the inductor backend, not {backend!r}")
    for key, value in opts.items():
        _check_inductor_option(key, value)
    return CompileSettings(mode, backend, dynamic, bool(fullgraph), tuple(sorted(opts.items())))
