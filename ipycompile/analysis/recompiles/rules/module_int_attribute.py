"""The recompile rule ``module_int_attribute``: an int attribute of a module changes: allow_unspec_int_on_nn_module."""

from __future__ import annotations

from typing import Optional

from ....report.model import Kind, Suggestion
from ..reading import Reason, value_kind
from ..lines import needs_the_int, only_in_arithmetic
from ..words import shown
from ..base import answer, dynamo_setting, RecompileRule


def fix(r: Reason, dynamic_after: bool) -> Optional[Suggestion]:
    """An int attribute of an nn.Module changes (torch keeps them static: its HINT names the setting).
    ``allow_unspec_int_on_nn_module`` makes such an int a symbol (torch 2.13: ``is_int_specialization_case``
    no longer specialises it; ``dynamic=True`` does not change that test) only where the code needs no
    value: used as an index into a Python container, a loop count or a branch, it is specialised again and
    each value still compiles. The setting is offered only where the line torch quoted uses the int in
    arithmetic alone (``x * self.scale``); an index, a ``range`` or a condition gets words."""
    g, ch = r.guard, r.change
    if not (ch.kind == "value" and value_kind(ch.before) == "int" and "allow_unspec_int_on_nn_module" in g.note):
        return None
    use, what = needs_the_int(r)
    if use or not only_in_arithmetic(r):
        how = (f"`{r.code.strip()}` needs its value (`{use}`: {what})" if use
               else f"`{r.code.strip()}` uses it other than in arithmetic")
        return answer(Kind.MODULE_INT_ATTRIBUTE, f"each value of the int attribute {shown(r)} of a module is a compiled version",
                      f"torch treats int attributes of an nn.Module as constants (each value is a version of its own), "
                      f"and {how}. `torch._dynamo.config.allow_unspec_int_on_nn_module = True`, torch's hint, makes such "
                      "an int a symbol only where the code needs no value: "
                      + ("an index into a Python container (a ModuleList, a list), a loop count or a branch makes torch "
                       "specialise it again, so each value still compiles; " if use else
                       "it is not shown to remove these recompiles here; ")
                      + "`dynamic=True` does not change how module ints are treated. Nothing to fix while the values "
                      "are few: each value compiles once and later calls reuse its version. Torch keeps at most "
                      "`torch._dynamo.config.recompile_limit` versions per function (8 by default): with more values "
                      "than that, the calls past it run eagerly (uncompiled); then raise the limit to the number of "
                      "values, or move what depends on the value out of the compiled code (compile each selected "
                      "module on its own).")
    return answer(Kind.MODULE_INT_ATTRIBUTE, f"the int attribute {shown(r)} of a module changes: let torch treat it as a symbol",
                  "torch treats int attributes of an nn.Module as constants (each value is a version), whatever "
                  "`dynamic=` says. `torch._dynamo.config.allow_unspec_int_on_nn_module = True` (torch's own hint) makes "
                  "them symbols like any other int: after the usual specialisation of 0 and 1, one version serves "
                  "every value.",
                  dynamo_setting("allow_unspec_int_on_nn_module", "True"))


RULE = RecompileRule(Kind.MODULE_INT_ATTRIBUTE, "an int attribute of a module changes: allow_unspec_int_on_nn_module",
                     fix)
