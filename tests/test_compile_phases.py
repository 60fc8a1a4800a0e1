"""Compile time by phase (capture/phases.py): each instant of the chromium spans is charged to
the innermost mapped span open then, nothing twice. The heap that finds the innermost span is
checked against the definition, a scan of every open span, on random span sets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ipycompile.capture.phases import _exclusive_by_phase, phase_of

NAMES = ["dynamo", "aot_collect_metadata", "inductor_codegen", "compile_file", "backend_compile",
         "async_compile.wait", "gc", "not_a_phase", "compile_attempt_0"]


def by_definition(spans):
    """The innermost open span by a scan of them all: the deepest, then the latest started, then
    the first opened; a span opens at its start and closes at its end, ends before starts at one time."""
    bounds = []
    for i, s in enumerate(spans):
        if phase_of(s["name"]) is not None:
            bounds += [(s["start_us"], 1, i), (s["start_us"] + s["dur_us"], 0, i)]
    bounds.sort()
    active, totals, covered, last = [], {}, 0.0, None
    for t, is_start, i in bounds:
        if last is not None and active and t > last:
            inner = max(active, key=lambda j: (spans[j]["depth"], spans[j]["start_us"]))
            phase = phase_of(spans[inner]["name"])
            totals[phase] = totals.get(phase, 0.0) + (t - last)
            covered += t - last
        if is_start:
            active.append(i)
        elif i in active:
            active.remove(i)
        last = t
    return totals, covered


span = st.fixed_dictionaries({
    "name": st.sampled_from(NAMES),
    "start_us": st.integers(0, 40).map(float),
    "dur_us": st.sampled_from([0.0, 1.0, 2.0, 5.0, 10.0, 30.0]),
    "depth": st.integers(0, 3),
})


@settings(max_examples=300, deadline=None)
@given(spans=st.lists(span, max_size=40))
def test_each_instant_goes_to_the_innermost_open_span(spans):
    assert _exclusive_by_phase(spans) == by_definition(spans)


def test_nested_spans_charge_the_inner_phase_and_cover_the_outer_once():
    spans = [{"name": "dynamo", "start_us": 0.0, "dur_us": 10.0, "depth": 0},
             {"name": "aot_collect_metadata", "start_us": 2.0, "dur_us": 3.0, "depth": 1},
             {"name": "not_a_phase", "start_us": 6.0, "dur_us": 1.0, "depth": 2}]
    assert _exclusive_by_phase(spans) == ({"AOTAutograd": 3.0, "Other": 7.0}, 10.0)
