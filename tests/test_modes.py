"""A mode that did nothing says so, and why (issue 29 §2): max-autotune on a CPU matmul
without freezing autotunes nothing; with freezing=True torch does autotune it."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import ipycompile
from ipycompile.analysis.modes import mode_note


@pytest.fixture(scope="module")
def unfrozen():
    lin, x = torch.nn.Linear(128, 256).eval(), torch.randn(64, 128)
    with torch.no_grad():
        return ipycompile.run_cell("lin(x)", {"lin": lin, "x": x}, mode="max-autotune", fresh=True, runs=2,
                                   record=False).report


def test_max_autotune_on_a_cpu_matmul_without_freezing_says_it_tuned_nothing(unfrozen):
    r = unfrozen
    assert not r.autotuning and any(k.backend == "extern" and k.name.endswith("mm") for k in r.kernels)
    note = mode_note(r)
    assert note and "autotuned nothing" in note and "freezing=True" in note and "is_module_buffer" in note
    assert note in r.profile.notes and note in str(r)


def test_the_note_holds_only_where_its_conditions_do(unfrozen):
    r = unfrozen
    p = r.profile
    frozen = dataclasses.replace(p.settings, config={**p.settings.config, "inductor.freezing": "True"})
    on_gpu = dataclasses.replace(p.settings, device="NVIDIA H100 80GB HBM3")
    default = dataclasses.replace(p.settings, mode="default")
    for settings in (frozen, on_gpu, default):
        other = dataclasses.replace(r, profile=dataclasses.replace(p, settings=settings))
        assert mode_note(other) is None
    no_mm = dataclasses.replace(r, kernels=[k for k in r.kernels if k.backend != "extern"])
    assert mode_note(no_mm) is None
    assert mode_note(r) is not None  # the report itself is untouched


def test_torchs_rule_freezing_makes_max_autotune_tune_a_cpu_linear():
    """torch 2.13's rule, checked: the same Linear under freezing=True (in inference) is
    autotuned, ATen's kernel against the C++ GEMM template, and no note is given."""
    lin, x = torch.nn.Linear(128, 256).eval(), torch.randn(64, 128)
    with torch.no_grad(), torch._inductor.config.patch(freezing=True):
        r = ipycompile.run_cell("lin(x)", {"lin": lin, "x": x}, mode="max-autotune", fresh=True, runs=2,
                                record=False).report
    template = [k for k in r.kernels if k.backend == "cpp" and k.kind == "template"]
    assert r.autotuning or template
    assert r.profile.settings.config.get("inductor.freezing") == "True"
    assert mode_note(r) is None and not any("autotuned nothing" in n for n in r.profile.notes)
