"""What a process prints at exit after ``%%compile``, against plain torch in the same kind of process.

torch 2.13 registers a weakref callback per compiled frame that deletes the frame's builtins dict
(``__builtins_dict___N``) from its globals; at interpreter exit that callback can run after the
entry is gone, and Python prints ``Exception ignored in: ... KeyError: '__builtins_dict___N'``.
That is torch's: a plain ``torch.compile`` of the same code in a real IPython shell prints it too.
``%%compile`` must print no more of them than plain torch compiling the same cell's code does, and
nothing else at exit.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent("""
    import sys
    from IPython.testing.globalipapp import start_ipython
    ip = start_ipython()
    ip.run_cell("import torch\\ndef f(x):\\n    y = x * 2\\n    print('a graph break')\\n    return y + 1\\nx = torch.ones(3)")
    if sys.argv[1] == "plain":  # the cell's code compiled as a function, as %%compile compiles a cell
        res = ip.run_cell("@torch.compile(backend='eager')\\ndef cell():\\n    return f(x)\\nout = cell()")
    else:
        ip.run_line_magic("load_ext", "ipycompile")
        res = ip.run_cell("%%compile --backend eager --runs 1\\nout = f(x)")
    assert res.error_in_exec is None, res.error_in_exec
    assert ip.user_ns["out"].tolist() == [3.0, 3.0, 3.0]
    print("END OF CELLS", flush=True)
""")


def _exit_output(mode: str) -> tuple[str, list[str]]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "END OF CELLS" in out.stdout
    # what the process printed once it began to exit: from the first 'Exception ignored' on stderr
    # (the cells' own output, ipycompile's status line among it, comes before)
    at_exit = out.stderr[out.stderr.find("Exception ignored"):] if "Exception ignored" in out.stderr else ""
    return at_exit, re.findall(r"KeyError: '(__builtins_dict___\d+)'", at_exit)


@pytest.mark.slow
def test_compile_magic_prints_at_exit_no_more_than_plain_torch_in_the_same_kind_of_process():
    plain_text, plain = _exit_output("plain")
    ours_text, ours = _exit_output("magic")
    assert len(ours) <= len(plain), (ours_text, plain_text)
    # whatever else is printed at exit is torch's same message, nothing of ipycompile's: no frame in its package,
    # no word of it outside the frames' paths (the checkout or its venv may sit in a folder named ipycompile)
    package = str(ROOT / "ipycompile") + os.sep
    assert not [f for f in re.findall(r'File "([^"]+)"', ours_text) if f.startswith(package)], ours_text
    assert "ipycompile" not in re.sub(r'File "[^"]+"', "", ours_text), ours_text
    other = [ln for ln in ours_text.splitlines() if ln.strip() and not re.search(
        r"Exception ignored|Traceback|File \"|\^|self\.|hook\(\)|del self|KeyError: '__builtins_dict___", ln)]
    assert not other, other
