"""The recompile rules, one module each, listed once in :data:`RULES`: the order in which they are
tried for the first change of a recompile (the first whose fix applies wins). Where no code change is
needed or possible, a named kind says what to do in words. Adding a kind is adding a module here (its
kind, its documentation, the fix it writes) and its proof test in tests/test_doctor_recompiles.py; the
whole-frame answers applied after the rule are listed in :data:`..frame.ANSWERS`."""

from __future__ import annotations

from ..base import RecompileRule
from . import (
    aliasing,
    attribute_presence,
    automatic_dynamic,
    carried_value,
    contiguous,
    device_change,
    dtype_change,
    flag_value,
    force_parameter_static_shapes,
    global_state_change,
    identity_change,
    instance_attribute,
    keyword_arguments,
    library_value,
    list_length,
    loop_body,
    mark_dynamic,
    mark_unbacked,
    maybe_mark_dynamic,
    module_int_attribute,
    rank_change,
    requires_grad_change,
    specialized_number,
    tensor_value,
    train_eval,
    type_change,
)

RULES: list[RecompileRule] = [
    force_parameter_static_shapes.RULE,
    maybe_mark_dynamic.RULE,  # before mark_dynamic: a strict mark raises where another frame's size is tied to it
    mark_dynamic.RULE,
    automatic_dynamic.RULE,
    carried_value.RULE,
    mark_unbacked.RULE,
    contiguous.RULE,
    loop_body.RULE,
    tensor_value.RULE,
    module_int_attribute.RULE,
    library_value.RULE,
    specialized_number.RULE,
    # changes that need no code change (or allow none): what to do, in words
    dtype_change.RULE,
    rank_change.RULE,
    requires_grad_change.RULE,
    global_state_change.RULE,
    device_change.RULE,
    type_change.RULE,
    flag_value.RULE,
    list_length.RULE,
    keyword_arguments.RULE,
    train_eval.RULE,
    identity_change.RULE,
    instance_attribute.RULE,  # before attribute_presence: a class's value now the instance's own
    attribute_presence.RULE,
    aliasing.RULE,
]

__all__ = ["RULES"]
