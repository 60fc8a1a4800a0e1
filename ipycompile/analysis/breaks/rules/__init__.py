"""The break rules, one module each, listed once in :data:`RULES`: the order in which
they are tried (the first whose fix holds in the user's code wins). Adding a kind is
adding a module here (its kind, its documentation, when it applies, the fix it writes)
and its proof test in tests/test_doctor_breaks.py."""

from __future__ import annotations

from ..base import Rule
from . import (
    branch_in_library,
    class_outside,
    compiled_optimizer,
    compiler_disable,
    ddp_wrapper,
    no_meta_kernel,
    generator_mutation,
    raised_exception,
    generator_outside,
    iterator_input,
    reconstruction,
    register_fake,
    remove_graph_break,
    remove_unused,
    skipped_function,
    sort_tensors,
    torch_equal,
    torch_hint,
    capture_dynamic_output_shape_ops,
    capture_scalar_outputs,
    custom_op,
    hop_clone,
    hop_match_structure,
    hop_return_value,
    ignore_logging_functions,
    internal_error,
    keep_tensor,
    maybe_mark_dynamic,
    move_out,
    numpy_to_torch,
    remove_print,
    reorderable_logging_functions,
    requires_grad_inside,
    tensor_clone,
    torch_cond,
    torch_where,
    trace_autograd_ops,
    with_outside,
    invalid_arguments,
    random_branch,
    hook_registration,
    thread_lock,
)

RULES: list[Rule] = [
    ddp_wrapper.RULE,  # first: DDP's own wrapper breaks match other rules' patterns (a skipped function)
    compiled_optimizer.RULE,  # before any rule that would move or delete `opt.step()`
    remove_graph_break.RULE,
    register_fake.RULE,
    hop_clone.RULE,
    hop_return_value.RULE,
    hop_match_structure.RULE,
    branch_in_library.RULE,
    # before torch.where / torch.cond: a condition on a Python `random` value is a Python bool without
    # torch.compile, which `torch.where` does not take
    random_branch.RULE,
    torch_where.RULE,
    torch_cond.RULE,
    remove_unused.RULE,
    keep_tensor.RULE,
    capture_scalar_outputs.RULE,
    capture_dynamic_output_shape_ops.RULE,
    ignore_logging_functions.RULE,
    reorderable_logging_functions.RULE,
    remove_print.RULE,
    trace_autograd_ops.RULE,
    tensor_clone.RULE,
    numpy_to_torch.RULE,
    thread_lock.RULE,  # before with_outside: a lock is not moved out by a rewrite
    hook_registration.RULE,
    with_outside.RULE,
    compiler_disable.RULE,  # before move_out: the decorator called inside the code is no call to move
    move_out.RULE,
    custom_op.RULE,
    # breaks no code change of ours removes: what to do, in words
    internal_error.RULE,
    no_meta_kernel.RULE,
    torch_equal.RULE,
    requires_grad_inside.RULE,
    sort_tensors.RULE,
    class_outside.RULE,
    iterator_input.RULE,
    generator_outside.RULE,
    skipped_function.RULE,
    reconstruction.RULE,
    raised_exception.RULE,
    invalid_arguments.RULE,
    generator_mutation.RULE,
    maybe_mark_dynamic.RULE,
    torch_hint.RULE,  # last: torch's own hint, unverified, where no rule could check a fix
]

__all__ = ["RULES"]
