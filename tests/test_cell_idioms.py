"""A ``%%compile`` cell behaves like a plain cell: each idiom run both ways in a real IPython shell.

Each case is (setup, cell, probe): the setup runs as a plain cell, then the cell (plain, or under
``%%compile``, which calls it several times: first call, warm-up, timed runs), then the probe, a
plain expression over what the cell left. The cell's result (or its exception's type) and the
probe's value must be the same both ways.
"""

from __future__ import annotations

import re

import pytest
import torch
from IPython.utils.capture import capture_output

MAGIC = "%%compile --backend eager --runs 2 --quiet\n"

IDIOMS = {
    "try_except_name_error": ("", "try:\n    n_a\nexcept NameError:\n    n_a = 0\nn_a += 1\nn_a", "n_a"),
    "name_in_globals_before_assigning": ("", "if 'n_b' not in globals():\n    n_b = 10\nn_b = n_b + 1\nn_b", "n_b"),
    "seen_in_globals_then_assigned": ("", "seen_c = 'v_c' in globals()\nv_c = 1\nseen_c", "(seen_c, v_c)"),
    "augmented_assignment_of_a_notebook_name": ("c_d = 5", "c_d += 1\nc_d", "c_d"),
    "augmented_assignment_of_a_new_name_fails": ("", "m_e = 1\nnew_e += 1", "('new_e' in globals(), m_e)"),
    "global_statement_in_a_nested_def": (
        "", "def bump_f():\n    global g_f\n    g_f = g_f + 1 if 'g_f' in globals() else 1\nbump_f()\ng_f", "g_f"),
    "global_statement_at_top_level": ("", "global g_g\ng_g = 3\ng_g", "g_g"),
    "del_a_notebook_name": ("d_h = 1", "e_h = d_h * 2\ndel d_h\n'd_h' in globals()", "('d_h' in globals(), e_h)"),
    "del_then_read_fails": ("", "k_i = 1\ndel k_i\nk_i", "'k_i' in globals()"),
    "comprehensions_over_cell_names": (
        "", "xs_j = [1, 2, 3]\nk_j = 10\nys_j = [x * k_j for x in xs_j]\n{x: x * k_j for x in xs_j}",
        "(ys_j, 'x' in globals())"),
    "lambda_sees_the_global_later": ("", "base_k = 2\nf_k = lambda v: v * base_k\nbase_k = 3\nf_k(5)",
                                     "(f_k(1), base_k)"),
    "closure_over_a_def_argument": (
        "", "def make_l(k):\n    def inner(v):\n        return v + k\n    return inner\nadd_l = make_l(4)\nadd_l(1)",
        "(add_l(2), add_l.__qualname__, make_l.__qualname__)"),
    "imports": ("", "import math as m_m\nfrom collections import OrderedDict as OD_m\nm_m.sqrt(16) + len(OD_m(a=1))",
                "(m_m.__name__, OD_m.__name__)"),
    "dunder_name": ("", "name_n = __name__\nname_n", "name_n"),
    "class_definition": (
        "", "class P_o:\n    scale = 3\n    def f(self, v):\n        return v * self.scale\nP_o().f(2)",
        "(P_o.__qualname__, P_o.f.__qualname__, P_o.__module__, repr(P_o).startswith(\"<class '__main__.P_o'\"))"),
    "a_def_is_named_as_at_top_level": ("", "def sq_p(v):\n    return v * v\nsq_p.__qualname__",
                                       "(repr(sq_p).split(' at ')[0], sq_p(3))"),
    "walrus": ("", "if (w_q := 7) > 5:\n    r_q = w_q * 2\nr_q", "(w_q, r_q)"),
    "walrus_in_a_comprehension": ("", "vals_r = [y_r := i * 2 for i in range(3)]\ny_r", "(vals_r, y_r)"),
    "locals_at_top_level": ("a_s = 1", "b_s = 2\nsorted(k for k in locals() if k.endswith('_s'))", "b_s"),
    "vars_and_dir_at_top_level": ("a_t = 1", "b_t = 2\n('a_t' in vars(), 'b_t' in dir())", "b_t"),
    "locals_in_a_nested_def_are_its_own": ("", "def f_u(a):\n    b = 2\n    return sorted(locals())\nf_u(1)", "1"),
    "last_expression_is_the_value": ("", "x_v = 1\nx_v + 1", "x_v"),
    "no_last_expression_no_value": ("", "x_w = 1\ny_w = x_w + 1", "y_w"),
    "name_read_before_it_is_defined_fails": ("", "u_x = 1\nundefined_x + 1", "('u_x' in globals(), 'undefined_x' in globals())"),
    "loop_variable_after_the_loop": ("", "for i_y in range(3):\n    last_y = i_y\n(i_y, last_y)", "(i_y, last_y)"),
    "while_counter": ("", "k_z = 0\nwhile k_z < 5:\n    k_z += 1\nk_z", "k_z"),
    "exception_name_is_unbound_after_except": (
        "", "try:\n    1 / 0\nexcept ZeroDivisionError as e_0:\n    msg_0 = str(e_0)\nmsg_0", "(msg_0, 'e_0' in globals())"),
    "tensors": ("", "t_1 = torch.ones(3)\nt_1 = t_1 * 2 + 1\nt_1.sum()", "t_1"),
    "tensor_counter_of_a_notebook_name": ("s_2 = torch.zeros(2)", "s_2 = s_2 + 1\ns_2", "s_2"),
    "graph_break_between_assignments": (
        "", "a_3 = torch.ones(2)\nprint('between')\nb_3 = a_3 * 3\nb_3", "(a_3, b_3)"),
}


def _plain(value):
    """A value as comparable data (tensors as lists)."""
    if isinstance(value, torch.Tensor):
        return ("tensor", value.tolist())
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _names(*texts: str) -> set[str]:
    return {w for t in texts for w in re.findall(r"\b[A-Za-z_]\w*_[A-Za-z0-9]\b", t)}


def _run_both_ways(ip, setup: str, cell: str, probe: str, magic: str):
    outcome = []
    for head in ("", magic):
        for name in _names(setup, cell, probe):  # each way starts from the same namespace
            ip.user_ns.pop(name, None)
        with capture_output():
            if setup:
                assert ip.run_cell(setup).error_in_exec is None
            res = ip.run_cell(head + cell)
            err = res.error_in_exec
            after = ip.run_cell(probe)
        assert after.error_in_exec is None, (head, after.error_in_exec)
        outcome.append((type(err).__name__ if err is not None else _plain(res.result), _plain(after.result)))
    return outcome


@pytest.mark.parametrize("idiom", sorted(IDIOMS))
def test_a_compiled_cell_does_what_the_plain_cell_does(ip, idiom):
    setup, cell, probe = IDIOMS[idiom]
    plain, compiled = _run_both_ways(ip, setup, cell, probe, MAGIC)
    assert compiled == plain, f"{idiom}: plain {plain}, %%compile {compiled}"


def test_a_cell_reading_a_name_before_assigning_it_still_compiles_on_its_next_run(ip):
    import ipycompile

    ip.user_ns.pop("acc_c", None)
    cell = MAGIC + "try:\n    acc_c\nexcept NameError:\n    acc_c = torch.zeros(2)\nacc_c = acc_c + 1\nacc_c"
    with capture_output():
        first = ip.run_cell(cell)
        second = ip.run_cell(cell)
    assert first.error_in_exec is None and second.error_in_exec is None
    assert first.result.tolist() == [1.0, 1.0] and second.result.tolist() == [2.0, 2.0]
    assert ipycompile.history()["report"].iloc[-1].graphs  # with acc_c defined, Dynamo compiles the cell
