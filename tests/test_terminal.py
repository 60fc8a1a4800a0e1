"""%%compile in the IPython terminal app (what ``import ipycompile`` alone loads: tests/test_startup.py).

The terminal session is fed on stdin, as a user would type it: with stdin not a
TTY the terminal app reads cells with its simple prompt, so each line is its own
cell and a cell magic runs when a blank line ends it. (A ``.ipy`` file or ``-c``
is run as a single cell, where ``%%compile`` could only be the first line.)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

# Two blank lines end the cell magic: the simple prompt drops the trailing
# newline of the joined lines, so one blank line alone does not complete it.
SESSION = """\
%load_ext ipycompile
import torch
%%compile --backend eager --runs 2
y = torch.ones(4)
if y.sum() > 0:
    y = y * 3
z = y + 1
z.sum()


import ipycompile
row = ipycompile.history().iloc[-1]
print("history:", len(ipycompile.history()), row["execution_count"], row["backend"], row["runs"], row["graph_breaks"], row["status"])
exit
"""


def _env(tmp_path) -> dict[str, str]:
    env = dict(os.environ)
    env["IPYTHONDIR"] = str(tmp_path / "ipython")  # no user profile, history database or startup files
    env.pop("TORCH_LOGS", None)
    env.pop("TORCH_TRACE", None)
    return env


def _terminal(tmp_path, session: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "IPython", "--no-banner", "--quick", "--colors=NoColor"],
        input=session, capture_output=True, text=True, cwd=tmp_path, env=_env(tmp_path), timeout=300,
    )


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> subprocess.CompletedProcess:
    """SESSION, typed into one terminal app: its output here, what it prints at exit in the test of the exit."""
    return _terminal(tmp_path_factory.mktemp("terminal"), SESSION)


def test_compile_magic_in_the_terminal_app(session):
    proc = session
    out = proc.stdout
    assert proc.returncode == 0, (out, proc.stderr)
    assert "UsageError" not in out and "Traceback" not in out, out
    # the report is displayed as its text/plain summary; no HTML in a terminal
    assert "ipycompile: what to fix (1" in out and "<div" not in out, out
    assert "1 graph break" in out
    assert "In [3], line 3" in out and "if y.sum() > 0:" in out, out
    # the doctor's fix, written against the cell (torch's hints are in its explanation and the HTML view)
    assert "To try (high confidence): Replace the branch at In [3], line 3 with torch.where" in out, out  # a terminal verifies only when asked
    assert "| y = torch.where(y.sum() > 0, y * 3, y)" in out, out
    assert re.search(r"run time .* per call \(IQR .*, 2 calls in 2 blocks of 1 after \d+ warm-up\)", out), out
    assert "settings: mode=default backend=eager" in out
    # the final expression is Out[3], after the report
    assert out.index("ipycompile: what to fix (1") < out.index("\nGraph breaks (1)") < out.index("Out[3]: tensor(16.)")
    # the run is in the history: 1 run, In [3], eager, 2 timed runs, 1 graph break
    assert "history: 1 3 eager 2 1 ok" in out, out


# -- what a session prints at exit -------------------------------------------------------
# The same graph break (SESSION's cell), compiled by hand and by %%compile. Why torch prints "Exception
# ignored ... KeyError: '__builtins_dict___N'" at the exit of an IPython session that
# compiled code with a graph break (torch 2.13, IPython 9): Dynamo's ContinueExecutionCache
# keeps the compiled function's code and its resume function's code alive for the rest of
# the process (each is the weak key of an entry whose value holds the other), so their
# compiled code, and the CleanupHooks that delete Dynamo's helper names from the
# function's globals, are freed only at interpreter shutdown; the terminal app clears the
# namespace before that (``_atexit_once`` -> ``reset``), and the hook's ``del scope[name]``
# finds the name gone (``torch.compiler.reset()`` before ``exit`` leaves the same hooks
# pending: the message is torch's). Nothing runs between the terminal's last prompt and that clear, so
# ipycompile cannot let go of the code while the names are there; it adds nothing of its own.
PLAIN_BREAK = """\
import torch
def f():
    y = torch.ones(4)
    if y.sum() > 0:
        y = y * 3
    z = y + 1
    return z.sum()


g = torch.compile(f, backend="eager")
g()
exit
"""
MAGIC_NO_BREAK = """\
%load_ext ipycompile
import torch
x = torch.ones(3)
%%compile --backend eager --runs 1 --warmup 0
y = x + 1
z = y * 2
z.sum()


exit
"""


def _exit_stderr(proc: subprocess.CompletedProcess, value: str) -> str:
    assert proc.returncode == 0 and value in proc.stdout, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stdout, proc.stdout
    # the run's one line of what it took (its progress line, on a pipe) is the run's, not the exit's
    stderr = re.sub(r"(?m)^ipycompile: took [^\n]*\n", "", proc.stderr)
    return re.sub(r"0x[0-9a-f]+", "0x…", stderr)


def test_a_graph_break_compiled_by_the_magic_exits_as_plain_torch_compile_does(session, tmp_path):
    import torch

    plain = _exit_stderr(_terminal(tmp_path, PLAIN_BREAK), "tensor(16.)")
    magic = _exit_stderr(session, "tensor(16.)")
    assert magic == plain, (magic, plain)  # %%compile prints nothing at exit that plain torch.compile does not
    if torch.__version__.startswith("2.13"):  # what torch itself prints (see above)
        assert "KeyError: '__builtins_dict___" in plain and "torch/_dynamo/utils.py" in plain, plain
    no_break = _exit_stderr(_terminal(tmp_path, MAGIC_NO_BREAK), "tensor(12.)")
    assert no_break == "", no_break
