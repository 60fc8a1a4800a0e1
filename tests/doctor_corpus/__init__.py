"""Graph breaks and recompiles for the doctor, in two parts.

* ``pytorch-tests`` (:data:`MODULES`): user functions transcribed from PyTorch's own tests;
* ``real-code`` (:data:`REAL_MODULES`, modules named ``real_*``): real users' code that does
  not come from PyTorch's test suite: minimal repros users posted in GitHub issues of
  pytorch/pytorch and of the libraries they compile (each case names the issue), and
  library model code (transformers models from tiny configs, random weights, nothing
  downloaded) called the way people call it;
* ``held_out`` (:data:`HELD_OUT_MODULES`): families the doctor was not tuned on (forum and
  blog questions, and libraries called as their users call them: torch_geometric, kornia,
  torchmetrics, einops, torchdiffeq, gpytorch, e3nn). A measurement, not a tuning set: the
  suite does not run its cases (``benchmarks/doctor_coverage.py --part held_out`` does), and
  a case whose library is not installed (``pip install -e .[corpus]``) is skipped with the reason.

:attr:`Case.part` tells them apart.

Each module holds the cases of one PyTorch test file (``misc.py`` for
``test/dynamo/test_misc.py``, ...). A case is a function decorated with
:func:`case`: it names the test it comes from, builds the user function exactly as
the test wrote it, and returns it with its calls::

    @case("test/dynamo/test_misc.py::MiscTests::test_data_dependent_branch")
    def data_dependent_branch():
        def fn(x):
            if x.sum() > 0:  # BREAK
                return x + 1
            return x - 1
        return fn, [(torch.ones(3),)]

``calls`` is a list; each item is a tuple of positional arguments, or a callable
``call(compiled_fn)`` for a call that does more (change a global, switch a module to
``eval()``, pass keywords). Several calls make recompiles. A ``# BREAK`` comment on
a line says a graph break is expected there (the user's line torch should blame);
nothing else is asserted in the case: the counts are torch's own, measured when the
case runs (:mod:`doctor_corpus.harness`).

The case's function (``fn`` in the example) is what ``torch.compile`` wraps, with
``backend`` (default ``"eager"``: the doctor reads Dynamo, not Inductor) and
``compile_kwargs``.

Origin and licence: the user functions are short excerpts transcribed from PyTorch's
test suite (https://github.com/pytorch/pytorch, ``test/dynamo`` and ``test/inductor``),
each naming the test it comes from. PyTorch is distributed under a BSD-3-Clause licence
(Copyright (c) 2016- Facebook, Inc. and its contributors; see PyTorch's LICENSE and
NOTICE files); these excerpts are used here, as test inputs, under that licence.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
from typing import Any, Callable

#: The modules of the corpus, in order (one per PyTorch test file).
MODULES = (
    "error_messages",
    "misc",
    "recompiles",
    "ctx_manager",
    "generator",
    "reorder_logs",
    "exceptions",
    "functions",
    "higher_order_ops",
    "repros",
    "nested_graph_breaks",
    "inductor_models",
)

#: The real-code part: users' repros from GitHub issues and library models called as users call them.
REAL_MODULES = (
    "real_pytorch_issues",
    "real_pytorch_recompiles",
    "real_library_issues",
    "real_transformers",
    "real_training",
    "real_library_code",
    "real_heldout",
)

#: The held-out part: families the doctor is measured on, never tuned on (issue 40, part 3).
HELD_OUT_MODULES = ("held_out",)

#: The parts of the corpus, by name.
PARTS = {"pytorch-tests": MODULES, "real-code": REAL_MODULES, "held_out": HELD_OUT_MODULES}


@dataclass
class Case:
    """One user function from a PyTorch test, its inputs and how it is called."""

    name: str
    source: str  # "test/dynamo/test_misc.py::MiscTests::test_name"
    make: Callable[[], tuple[Callable, list]]
    backend: str = "eager"
    compile_kwargs: dict = field(default_factory=dict)
    note: str = ""  # what differs from the test, or what torch 2.13 does with it
    module: str = ""  # the corpus module ("misc")
    config: dict = field(default_factory=dict)  # torch._dynamo.config settings the test patches
    requires: tuple = ()  # the importable modules the case's code needs (a library it calls)

    @property
    def id(self) -> str:
        return f"{self.module}::{self.name}"

    @property
    def part(self) -> str:
        """The part of :data:`PARTS` the case's module is in (``"pytorch-tests"`` by default)."""
        return next((p for p, mods in PARTS.items() if self.module in mods), "pytorch-tests")

    @property
    def missing(self) -> list[str]:
        """The modules of :attr:`requires` that cannot be imported here (the case is skipped for them)."""
        return [m for m in self.requires if importlib.util.find_spec(m) is None]


def case(source: str, *, backend: str = "eager", note: str = "", config: "dict | None" = None,
         requires: "tuple[str, ...]" = (), **compile_kwargs: Any):
    """Register the decorated function as a :class:`Case` (it returns ``(fn, calls)``).
    ``config``: the ``torch._dynamo.config`` settings the test patches; ``requires``: the
    libraries its code imports (the case is skipped where one is missing); ``compile_kwargs``
    go to ``torch.compile``."""

    def register(make: Callable[[], tuple[Callable, list]]) -> Case:
        mod = make.__module__.rsplit(".", 1)[-1]
        return Case(make.__name__, source, make, backend, dict(compile_kwargs), note, mod, dict(config or {}),
                    tuple(requires))

    return register


def cases_in(namespace: dict, module: str = "") -> list[Case]:
    """The cases defined in a module's namespace, in source order."""
    out = [v for v in namespace.values() if isinstance(v, Case)]
    for c in out:
        if module:
            c.module = module
    return sorted(out, key=lambda c: c.make.__code__.co_firstlineno)


def load(modules: "tuple[str, ...] | list[str]" = MODULES) -> list[Case]:
    """Every case of ``modules`` (default: the PyTorch-tests part; :func:`load_part` for a part by name)."""
    out: list[Case] = []
    for name in modules:
        try:
            mod = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{name}":
                continue
            raise
        out.extend(cases_in(vars(mod), name))
    return out


def load_part(part: str) -> list[Case]:
    """Every case of one part (``"pytorch-tests"``, ``"real-code"`` or ``"held_out"``)."""
    if part not in PARTS:
        raise ValueError(f"no corpus part {part!r}; there are {', '.join(PARTS)}")
    return load(PARTS[part])
