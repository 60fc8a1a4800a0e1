"""Whose code a file is (``ipycompile.report.owners``): by the layout a report recorded when it
was captured, by path shape for a trace from elsewhere, and the same after a save and a load on
a machine laid out differently. Last, the location tests run from a clone in a folder named
``ipycompile`` under a path with a space."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import torch

import ipycompile
from ipycompile import CompileReport
from ipycompile.capture import layout as layout_module
from ipycompile.capture.layout import current_layout
from ipycompile.report.owners import CodeLayout, Owner, display_path, is_user_code, owner

REPO = Path(__file__).resolve().parents[1]

# a machine laid out unlike this one: a system Python in /usr, torch in dist-packages, the
# user's project in /usr/src/app/ipycompile (a clone of this repository, by its default name)
ELSEWHERE = CodeLayout(
    package_dir=["/usr/src/app/ipycompile/ipycompile/"],
    torch_dir=["/usr/lib/python3/dist-packages/torch/"],
    prefixes=["/usr/"],
    library_dirs=["/usr/lib/python3.10/", "/usr/lib/python3/dist-packages/", "/root/.local/lib/python3.10/site-packages/"],
    generated_dirs=["/var/cache/inductor/"],
)


@pytest.mark.parametrize("filename,expected", [
    ("/usr/src/app/ipycompile/benchmarks/scan_vs_loop.py", Owner.USER),  # a folder named ipycompile
    ("/usr/src/app/ipycompile/ipycompile/run/runner.py", Owner.IPYCOMPILE),
    ("/usr/lib/python3/dist-packages/torch/_dynamo/eval_frame.py", Owner.TORCH),
    ("/usr/lib/python3/dist-packages/transformers/modeling_utils.py", Owner.LIBRARY),
    ("/usr/lib/python3.10/copy.py", Owner.LIBRARY),
    ("/usr/lib64/python3.10/lib-dynload/x.py", Owner.LIBRARY),  # under a prefix's lib folder
    ("/usr/src/app/train.py", Owner.USER),  # under the prefix /usr, but not in its lib folders
    ("/var/cache/inductor/ab/cabc.py", Owner.GENERATED),
    ("/tmp/torchinductor_me/xy/cxy.py", Owner.GENERATED),
    ("<eval_with_key>.3", Owner.GENERATED),
    ("<ipycompile-fp64-2>", Owner.GENERATED),
    ("<ipycompile-cell-2>", Owner.USER),  # a cell run by ipycompile.run_cell
    ("/opt/extra/site-packages/doctorlib/__init__.py", Owner.LIBRARY),  # pip install --target, put on sys.path
    ("<frozen runpy>", Owner.LIBRARY),
    ("<ipython-input-3-abc>", Owner.USER),
    ("/tmp/ipykernel_12/2870.py", Owner.USER),
    ("", Owner.UNKNOWN),
])
def test_a_recorded_layout_decides(filename, expected):
    assert owner(filename, ELSEWHERE) is expected
    assert owner(filename.replace("/", "\\"), ELSEWHERE) is expected  # written on Windows


@pytest.mark.parametrize("filename,expected", [
    ("/home/me/ipycompile/benchmarks/scan_vs_loop.py", Owner.USER),
    ("/home/me/a b/ipycompile/tests/test_doctor_loops.py", Owner.USER),
    ("/home/me/ipycompile/ipycompile/run/runner.py", Owner.IPYCOMPILE),
    ("/opt/venv/lib/python3.12/site-packages/ipycompile/capture/listener.py", Owner.IPYCOMPILE),
    ("/opt/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", Owner.TORCH),
    ("/home/me/pytorch/torch/_dynamo/symbolic_convert.py", Owner.TORCH),  # a source build
    ("C:\\py\\Lib\\site-packages\\torch\\nn\\functional.py", Owner.TORCH),
    ("/usr/local/lib/python3.11/dist-packages/numpy/core/x.py", Owner.LIBRARY),
    ("/usr/lib/python3.11/logging/__init__.py", Owner.LIBRARY),
    ("/tmp/torchinductor_me/xy/cxy.py", Owner.GENERATED),
    ("/work/torch/model.py", Owner.USER),  # a user's folder named torch holds no torch sources
])
def test_without_a_layout_the_shape_of_the_path_decides(filename, expected):
    assert owner(filename) is expected
    assert owner(filename, CodeLayout()) is expected  # an empty layout is no layout


def test_this_process_layout_names_the_real_files():
    here = current_layout()
    assert owner(torch.__file__, here) is Owner.TORCH
    assert owner(torch.nn.Module.__call__.__code__.co_filename, here) is Owner.TORCH
    assert owner(ipycompile.capture.__code__.co_filename, here) is Owner.IPYCOMPILE
    assert owner(os.__file__, here) is Owner.LIBRARY
    assert owner(pytest.__file__, here) is Owner.LIBRARY
    assert owner(__file__, here) is Owner.USER and owner(str(REPO / "benchmarks" / "scan_vs_loop.py"), here) is Owner.USER
    assert is_user_code(__file__, here) and not is_user_code("<frozen os>", here)


def test_display_path_strips_the_recorded_library_dirs():
    assert display_path("/usr/lib/python3/dist-packages/torch/nn/functional.py", ELSEWHERE) == "torch/nn/functional.py"
    assert display_path("/usr/src/app/train.py", ELSEWHERE) == "train.py"
    assert display_path("/opt/x/lib/python3.12/site-packages/transformers/a.py") == "transformers/a.py"


def _loop_in(tmp_path: Path) -> tuple[CompileReport, str]:
    """A real report of a function in ``tmp_path/ipycompile/user.py`` (a folder of that name)."""
    folder = tmp_path / "ipycompile"
    folder.mkdir()
    path = folder / "user.py"
    path.write_text("def f(x):\n    for _ in range(4):\n        x = x.sin() + 1\n    return x\n")
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    torch._dynamo.reset()
    with ipycompile.capture() as cap:
        torch.compile(namespace["f"], backend="eager")(torch.randn(8))
    return cap.report, str(path)


def test_a_saved_report_answers_the_same_after_load_on_a_machine_laid_out_differently(tmp_path, monkeypatch):
    report, user_file = _loop_in(tmp_path)
    assert report.code_layout == CodeLayout(**{**vars(current_layout()), "generated_dirs": report.code_layout.generated_dirs})
    files = {user_file, torch.__file__, ipycompile.capture.__code__.co_filename, os.__file__, "<eval_with_key>.1"}
    before = {f: report.owner(f) for f in files}
    assert before[user_file] is Owner.USER and before[torch.__file__] is Owner.TORCH
    assert before[ipycompile.capture.__code__.co_filename] is Owner.IPYCOMPILE
    assert report.unrolled_loops and report.unrolled_loops[0].filename == user_file
    saved = tmp_path / "report.json"
    report.save(str(saved))

    # this "machine": ipycompile, torch and the interpreter live elsewhere now
    other = tmp_path / "elsewhere"
    monkeypatch.setattr(layout_module, "_PACKAGE_DIR", str(other / "ipycompile"))
    monkeypatch.setattr(sys, "prefix", str(other / "venv"))
    monkeypatch.setattr(sys, "base_prefix", str(other / "python"))
    monkeypatch.setattr(sys, "exec_prefix", str(other / "venv"))
    monkeypatch.setattr(sys, "base_exec_prefix", str(other / "python"))
    monkeypatch.setattr(sysconfig, "get_paths", lambda *a, **k: {"stdlib": str(other / "python" / "lib"),
                                                                   "purelib": str(other / "venv" / "site")})
    monkeypatch.setattr(layout_module, "torch_package_dir", lambda: str(other / "venv" / "site" / "torch"))
    monkeypatch.setattr(layout_module.site, "getsitepackages", lambda: [str(other / "venv" / "site")])
    layout_module._layout.cache_clear()
    try:
        local = current_layout()
        assert local != report.code_layout
        # the local layout would judge the captured files otherwise ...
        assert owner(torch.__file__, local) is Owner.LIBRARY  # a site-packages folder, but not this torch's
        assert owner(os.__file__, local) is Owner.USER
        assert owner(ipycompile.capture.__code__.co_filename, local) is Owner.USER
        loaded = CompileReport.load(str(saved))
        # ... but the loaded report answers by the layout it recorded
        assert loaded.code_layout == report.code_layout
        assert {f: loaded.owner(f) for f in files} == before
        assert loaded.where(torch.__file__, 1) == report.where(torch.__file__, 1) == "torch/__init__.py:1"
    finally:
        layout_module._layout.cache_clear()


def test_a_report_saved_before_layouts_loads_and_judges_by_shape(tmp_path):
    report, user_file = _loop_in(tmp_path)
    old = report.to_dict()
    del old["code_layout"]
    loaded = CompileReport.from_dict(old)
    assert loaded.code_layout is None
    assert loaded.owner(user_file) is Owner.USER  # under a folder named ipycompile: still the user's
    assert loaded.owner("/x/site-packages/torch/_dynamo/eval_frame.py") is Owner.TORCH
    assert str(loaded) == str(report)


def test_a_trace_written_by_a_capture_carries_its_layout_and_torchs_own_trace_has_none(tmp_path):
    from tracefile import gpu_records

    folder = tmp_path / "ipycompile"
    folder.mkdir()
    path = folder / "user.py"
    path.write_text("def f(x):\n    y = x.sin()\n    if y.sum() > 0:\n        return y.cos()\n    return y\n")
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    torch._dynamo.reset()
    with ipycompile.capture(trace_dir=tmp_path / "logs") as cap:
        torch.compile(namespace["f"], backend="eager")(torch.randn(8))
    back = ipycompile.load_trace(cap.trace_path)
    assert back.code_layout == cap.report.code_layout and back.code_layout.recorded
    assert back.graph_breaks[0].frame.filename == str(path) and back.owner(str(path)) is Owner.USER
    assert back.owner(torch.__file__) is Owner.TORCH
    # a log torch wrote alone (here, recorded on an H100 machine) has no layout: path shapes decide
    gpu = ipycompile.build_report(gpu_records("quickstart"))
    assert gpu.code_layout is None
    assert gpu.owner("/usr/local/lib/python3.12/dist-packages/torch/_dynamo/eval_frame.py") is Owner.TORCH


# -- the suite from a clone in a folder named ipycompile, under a path with a space ---------------------

# The tests whose answer depends on where the clone's files are: the layout names them the user's (the
# tests and benchmarks folders of a clone named ipycompile), a loop placed and named in the clone's
# benchmarks/scan_vs_loop.py and in this folder's test file, a failure placed at its function's line.
_LOCATION_TESTS = ["tests/test_owners.py::test_this_process_layout_names_the_real_files",
                   "tests/test_doctor_loops.py::test_chunked_loss_loop_is_found_at_its_for_line_and_grows_with_the_chunks",
                   "tests/test_doctor_loops.py::test_range_loop_is_found_at_its_body_line_and_copies_match_the_count",
                   "tests/test_break_places.py::test_failure_names_the_function_that_holds_its_line"]
_NOT_COPIED = {".git", ".venv", "__pycache__", ".pytest_cache", "build", "dist", "node_modules", ".ipynb_checkpoints"}


def _copy_repo(dest: Path) -> str:
    """The repository's files into ``dest``: the tracked (and untracked, not ignored) files of a git
    checkout (a clone with or without a remote, a worktree), else every file but build outputs."""
    git = shutil.which("git")
    listed = None
    if git:
        done = subprocess.run([git, "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                              capture_output=True)
        if done.returncode == 0 and done.stdout:
            listed = [p for p in done.stdout.decode().split("\0") if p]
    if listed is None:  # not a git checkout (a copy, an unpacked archive)
        shutil.copytree(REPO, dest, ignore=lambda _d, names: [n for n in names if n in _NOT_COPIED or n.endswith(".egg-info")
                                                              or n.startswith(".venv-")])
        return "a copy of the files"
    for rel in listed:
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return "git's file list"


@pytest.mark.slow
def test_location_tests_pass_from_a_clone_named_ipycompile_under_a_path_with_a_space(tmp_path):
    clone = tmp_path / "a b" / "ipycompile"
    how = _copy_repo(clone)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(clone), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    where = subprocess.run([sys.executable, "-c", "import ipycompile; print(ipycompile.__file__)"],
                           cwd=clone, env=env, capture_output=True, text=True)
    assert where.stdout.strip() == str(clone / "ipycompile" / "__init__.py"), (how, where.stdout, where.stderr)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *_LOCATION_TESTS],
                         cwd=clone, env=env, capture_output=True, text=True)
    assert run.returncode == 0, f"copied by {how}\n{run.stdout[-6000:]}\n{run.stderr[-3000:]}"
    assert f"{len(_LOCATION_TESTS)} passed" in run.stdout and "failed" not in run.stdout, run.stdout[-3000:]


@pytest.mark.parametrize("filename, package, expected", [
    ("/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", "distributed", True),
    ("C:\\venv\\Lib\\site-packages\\torch\\optim\\adam.py", "optim", True),
    ("/src/pytorch/torch/optim/sgd.py", "optim", True),
    ("/job/torch/distributedish/x.py", "distributed", False),
    ("/job/train.py", "optim", False),
    ("", "optim", False),
])
def test_in_torch_package_by_the_shape_of_the_path(filename, package, expected):
    from ipycompile.report.owners import in_torch_package

    assert in_torch_package(filename, package) is expected


@pytest.mark.parametrize("filename, expected", [
    ("/venv/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py", "transformers"),
    ("/usr/lib/python3/dist-packages/numpy/core/x.py", "numpy"),
    ("C:\\venv\\Lib\\site-packages\\timm\\layers\\x.py", "timm"),
    ("/job/train.py", ""),
    ("", ""),
])
def test_installed_package_is_the_folder_under_site_packages(filename, expected):
    from ipycompile.report.owners import installed_package

    assert installed_package(filename) == expected
