"""The recorded logs of ``tests/inputs/`` against what today's torch writes.

The tests of the doctor's answers read recorded logs (``tests/recorded.py``); this module records
the recipes of ``tests/inputs/recipes.py`` again, live (every recipe but those whose ``truth`` field leaves
them out for their cost: transformers models beyond one Llama cell, the DDP job, the C++ kernels), and checks that the
report of the new log answers as the committed one does: the same compiles, recompile reasons,
guards, changes, graph breaks and failures, at the same lines, with the same words and fixes
(``recorded.answers``). A torch that writes a recipe differently fails here, naming the command
that records the logs again; the tests that read that log then show what the change means.
"""

from __future__ import annotations

import pytest

import recorded


def test_every_recipe_has_a_recorded_log():
    missing = [name for name in recorded.recipes() if not recorded.recorded_versions(name)]
    assert not missing, f"no recorded log for {missing}: run `{recorded.RECORD_COMMAND} --only {' '.join(missing)}`"


@pytest.mark.parametrize("name", [name for name, r in recorded.recipes().items() if r.truth])
def test_torch_still_writes_what_the_recorded_log_holds(name, tmp_path):
    live, path = recorded.record(name, tmp_path)
    committed = recorded.log_path(name)
    now, then = recorded.answers(live), recorded.answers(recorded.report(name))
    again = recorded.answers(recorded._loaded(path))  # the new log, read back as the tests read the committed one
    assert again == now, f"{name}: the log written now does not read back as its live report"
    if now != then:
        diff = [f"{key}: recorded {then[key]!r}\n  now {now[key]!r}" for key in now if now[key] != then[key]]
        pytest.fail(f"torch {recorded.torch_version()} writes recipe {name!r} differently from {committed.name}:\n"
                    + "\n".join(diff) + f"\nrecord the logs again: `{recorded.RECORD_COMMAND} --only {name}` "
                    "(with this torch's venv), then run the tests that read them")
