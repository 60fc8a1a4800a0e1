"""How fast, and in how much memory, does ipycompile read large TORCH_TRACE logs, next to tlparse?

Builds its inputs from the committed H100 logs in ``tests/data/gpu-h100/`` (a
training loop with graph breaks and recompiles, a max-autotune and a
reduce-overhead run), so anyone can repeat it from a clean clone:

* large logs (``--sizes``, default 10 50 100 200 400 MB): renumbered copies of the
  three logs one after the other (each copy's frame ids shifted in the envelopes,
  compilation metrics, chromium events and recompile reasons), as if one long job
  had compiled many frames. One log of the largest size is written; each smaller
  one is its prefix, cut at a copy boundary;
* rank directories (``--ranks``, default 8 64 512): one log per rank, each
  ``--copies-per-rank`` copies of the training log with ``rank`` set; rank 3
  compiles an extra frame, rank 5's compiles take twice as long.

Then, ``--reps`` rounds (default 5); in each round every measurement runs once, in
its own process (wall time; peak RSS from ``wait4``, i.e. ``RUSAGE_CHILDREN`` of
that one child), ours and tlparse's alternating, so that load from other work on
the machine falls on both alike:

* the first summary: ``python -m ipycompile report LOG`` against ``tlparse --plain-text``;
* the full report: ``report LOG --full`` (every event parsed, the summary printed);
* the full report with its HTML page: ``report LOG -o page.html`` against ``tlparse``
  (its HTML output);
* with ``--workers N ...``, the summary and the full report with its page again with their reading
  processes forced to N (``report LOG --workers N``, ``report LOG -o page.html --workers N``: 1 reads
  in one process, 2 or more in spans), beside the default (which starts them only on idle CPUs, and
  for the page only from :func:`~ipycompile.capture.chunks.span_count`'s size), each against tlparse's
  same output (memory: the peak PSS summed over every process of the command, the span readers included);
* CPU per MB on one core (``cpu``): ``report LOG``, ``report LOG --full``, ``tlparse --plain-text``
  and ``tlparse`` (HTML), each pinned to one core (``taskset -c 0`` where there is one), their
  user + system time; the CPU per MB is the slope of the medians between the sizes (the fixed
  start drops out), and the ratios of the slopes are ours over tlparse's. Target (issue 38): at
  most 0.5x tlparse's;
* all ranks of a directory: ``report DIR -o page.html`` against ``tlparse --all-ranks-html``;
* the page (``page``): for each large log, the page ``report LOG -o page.html`` writes (and the
  ``--baseline``'s), opened from ``file://`` in Chromium (Debian's, ``/usr/bin/chromium``, headless,
  through Playwright, a fresh context each time, ``--reps`` times): its size on disk (the HTML and
  the folder of parts beside it), its elements at load, the navigation's ``domContentLoaded`` and
  ``load`` ends and the first contentful paint (ms from the navigation's start), and, for ours, the
  slowest tab to build once clicked (ms to its first frame after its part is in place). Target (issue
  38): the first screen readable within 1 s for the 280 MB log (first contentful paint and load);
* start-up (``--startup-mb``, default 1 MB: the training log's first events): the text summary
  ``report LOG`` and ``report LOG --json FILE`` against ``tlparse --plain-text``, with
  ``python -c pass`` (the interpreter's own start) and ``python -c 'import ipycompile'``
  beside them, wall and CPU time (user + system); and the page of that log, ``report LOG -o
  page.html`` against ``tlparse`` (its HTML output). The
  package is byte-compiled first, as ``pip install`` leaves it, so that no run pays for
  compiling our source (this machine sets PYTHONDONTWRITEBYTECODE: without it, every run
  would).

Reports the median and range of each, the ratios of the medians, the growth with
size and ranks (time and memory per MB / per rank), and the load average around
the run. Targets (issue 38), each checked in ``met``: the text summary of a 1 MB log in
under 0.5 s; the full report with its page at most 0.3x tlparse's time and 0.15x its memory
at every size from 10 MB, and never slower than tlparse from 1 MB (the start-up's page);
a rank directory at most 0.3x tlparse's time and memory.
Each run of this checkout's code is given ``report --timings`` (a few lines on stderr): its
stages' medians land beside its figures (``stages``), and each missed target gets the profile
that says why (``why_missed``: our time by stage, start, imports, reading, summary, page, or
our memory by process, against the budget the target leaves).
Writes ``benchmarks/results/trace_load-<host>[-<label>].json``.

    python benchmarks/trace_load.py [--sizes 50 100 200 400] [--ranks 8 64 512] [--reps 5]
                                    [--copies-per-rank 1] [--startup-mb 1] [--label after] [--keep DIR]
                                    [--workers 1 2]
                                    [--groups summary full full_html page cpu ranks startup]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
DATA = ROOT / "tests" / "data" / "gpu-h100"
sys.path.insert(0, str(ROOT))

from ipycompile.capture.tracefile import format_record, glog_prefix, iter_records  # noqa: E402

WORKLOADS = ("quickstart", "max_autotune", "reduce_overhead")
GROUPS = ("summary", "full", "full_html", "page", "cpu", "ranks", "startup")
#: the groups that read the large logs (--sizes)
LARGE_GROUPS = ("summary", "full", "full_html", "page", "cpu")
#: the ``cpu`` group's commands: (label, ours or tlparse, flags)
CPU_RUNS = (("ipycompile report LOG", "ours", ()), ("ipycompile report LOG --full", "ours", ("--full",)),
            ("tlparse --plain-text", "tlparse", ("--plain-text",)), ("tlparse (HTML)", "tlparse", ()))
#: the ratios of CPU per MB the ``cpu`` group reports: (ours, tlparse's)
CPU_PAIRS = (("ipycompile report LOG", "tlparse --plain-text"), ("ipycompile report LOG --full", "tlparse --plain-text"),
             ("ipycompile report LOG --full", "tlparse (HTML)"))


def one_core() -> list[str]:
    """The prefix that pins a command to one core (``taskset -c 0``), or none where there is no taskset."""
    return ["taskset", "-c", "0"] if shutil.which("taskset") else []
_CID_FIELD = re.compile(r'("compile_id": ")(!\d+/)?(\d+)/(\d+)')
_CID_LINE = re.compile(r"^(\d+)/(\d+)", re.M)


def source_records(workload: str) -> list[tuple[dict, "str | None"]]:
    """The events of one recorded log, as (metadata, payload)."""
    return [(r.metadata, r.payload) for r in iter_records(DATA / f"{workload}.log.gz")]


def frames_in(records) -> int:
    return 1 + max((m.get("frame_id", 0) for m, _ in records), default=0)


def shifted(records, offset: int, *, rank: "int | None" = None, time_scale: float = 1.0):
    """The records with every frame id moved by ``offset`` (fresh compile ids), ``rank`` set,
    and chromium durations stretched by ``time_scale``."""
    def cid(m: "re.Match[str]") -> str:
        return f"{m.group(1)}{m.group(2) or ''}{int(m.group(3)) + offset}/{m.group(4)}"

    for meta, payload in records:
        meta = {k: v for k, v in meta.items() if k != "has_payload"}
        if rank is not None and "str" not in meta:
            meta["rank"] = rank
        if "frame_id" in meta:
            meta["frame_id"] += offset
        for key in ("compilation_metrics", "bwd_compilation_metrics"):
            body = meta.get(key)
            if isinstance(body, dict) and isinstance(body.get("compile_id"), str):
                meta[key] = {**body, "compile_id": _CID_FIELD.sub(cid, f'"compile_id": "{body["compile_id"]}')[15:]}
                if time_scale != 1.0 and isinstance(body.get("entire_frame_compile_time_s"), (int, float)):
                    meta[key]["entire_frame_compile_time_s"] = body["entire_frame_compile_time_s"] * time_scale
        if payload is not None:
            if "chromium_event" in meta:
                payload = _CID_FIELD.sub(cid, payload)
                if time_scale != 1.0:
                    payload = _stretch(payload, time_scale)
            elif meta.get("artifact", {}).get("name") == "recompile_reasons":
                payload = _CID_LINE.sub(lambda m: f"{int(m.group(1)) + offset}/{m.group(2)}", payload)
        yield meta, payload


def _stretch(payload: str, scale: float) -> str:
    try:
        ev = json.loads(payload)
    except ValueError:
        return payload
    if isinstance(ev, dict) and isinstance(ev.get("ts"), (int, float)):
        ev["ts"] = ev["ts"] * scale
        return json.dumps(ev, indent=0)
    return payload


class Clock:
    """Glog prefixes with a steadily advancing time, as one process would write them."""

    def __init__(self, pid: int = 4242) -> None:
        self.t = 1_763_000_000.0
        self.pid = pid

    def prefix(self) -> str:
        self.t += 0.000137
        return glog_prefix(self.t, self.pid, "torch/_dynamo/utils.py", 2126)


def write_log(path: Path, chunks, marks: "list[int] | None" = None) -> int:
    """Write record chunks into one log; returns its size. ``marks``, when given,
    receives the byte offset after each chunk."""
    clock = Clock()
    with open(path, "wb") as f:
        for records in chunks:
            for meta, payload in records:
                f.write(format_record(meta, payload, prefix=clock.prefix()).encode("utf-8"))
                f.write(b"\n")
            if marks is not None:
                marks.append(f.tell())
    return path.stat().st_size


def build_large(path: Path, mb: int) -> tuple[int, int, list[int]]:
    """A ``mb`` MB log of renumbered copies of the three recorded logs; returns (size,
    copies, the byte offset after each copy)."""
    sources = [source_records(w) for w in WORKLOADS]
    one = sum(len(format_record(m, p)) + 1 for recs in sources for m, p in recs)
    copies = max(1, round(mb * 1e6 / one))

    def chunks():
        offset = 0
        for _ in range(copies):
            copy = []
            for recs in sources:
                copy.extend(shifted(recs, offset))
                offset += frames_in(recs)
            yield copy

    marks: list[int] = []
    return write_log(path, chunks(), marks), copies, marks


def build_startup(path: Path, mb: float) -> int:
    """A log of about ``mb`` MB: the first events of the recorded training log, cut at an
    event (the compiles it holds are whole up to the last one); returns its size."""
    recs = []
    size = 0
    prefix = len(Clock().prefix()) + 1
    for meta, payload in source_records("quickstart"):
        meta = {k: v for k, v in meta.items() if k != "has_payload"}
        n = prefix + len(format_record(meta, payload)) + 1
        if recs and size + n > mb * 1e6:
            break
        recs.append((meta, payload))
        size += n
    return write_log(path, [recs])


def byte_compile(*packages: Path) -> None:
    """Write the ``.pyc`` files of ``packages`` (as ``pip install`` does), so that timed
    start-ups read bytecode instead of compiling the source every run."""
    import compileall

    for pkg in packages:
        if pkg.is_dir():
            compileall.compile_dir(str(pkg), quiet=1)


def prefix_log(src: Path, dest: Path, marks: list[int], mb: int) -> int:
    """``dest``: the first copies of ``src`` (cut at the copy boundary nearest ``mb`` MB)."""
    end = min(marks, key=lambda m: abs(m - mb * 1e6))
    with open(src, "rb") as fin, open(dest, "wb") as fout:
        left = end
        while left:
            block = fin.read(min(left, 1 << 22))
            fout.write(block)
            left -= len(block)
    return end


def build_ranks(directory: Path, ranks: int, copies: int) -> list[int]:
    """A directory of rank logs (``dedicated_log_torch_trace_rank_<r>_<x>.log``) plus two
    unrelated files; returns the sizes of the rank logs."""
    directory.mkdir(parents=True, exist_ok=True)
    train = source_records("quickstart")
    extra = source_records("max_autotune")
    step = frames_in(train)
    sizes = []
    for r in range(ranks):
        def chunks(r=r):
            for i in range(copies):
                yield shifted(train, i * step, rank=r, time_scale=2.0 if r == 5 else 1.0)
            if r == 3:
                yield shifted(extra, copies * step, rank=r)

        sizes.append(write_log(directory / f"dedicated_log_torch_trace_rank_{r}_bench{r:04d}.log", chunks()))
    (directory / "README.txt").write_text("benchmark rank logs\n")
    (directory / "launcher.out").write_text("job finished\n")
    return sizes


# -- timing, each measurement in its own process -------------------------------------
# A small launcher (Python without site, no imports of ours): it forks and execs the
# measured command and reports RUSAGE_CHILDREN. The benchmark's own process is not the
# parent, because a forked child's peak RSS starts at its parent's size.
LAUNCH = r"""
import json, os, resource, sys, threading, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
peak = [0]
done = threading.Event()

def tree(p):
    out = [p]
    try:
        for t in os.listdir(f"/proc/{p}/task"):
            with open(f"/proc/{p}/task/{t}/children") as f:
                for c in f.read().split():
                    out += tree(int(c))
    except OSError:
        pass
    return out

def pss_sum():
    total = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, StopIteration, ValueError):
            pass
    return total

def sample():
    while not done.wait(0.05):
        peak[0] = max(peak[0], pss_sum())

threading.Thread(target=sample, daemon=True).start()
_, status = os.waitpid(pid, 0)
done.set()
wall = time.perf_counter() - t0
u = resource.getrusage(resource.RUSAGE_CHILDREN)
os.write(int(sys.argv[1]), json.dumps({"code": os.waitstatus_to_exitcode(status), "wall_s": wall, "peak_rss_mb": u.ru_maxrss / 1024,
                        "peak_pss_sum_mb": peak[0] / 1024, "user_s": u.ru_utime, "sys_s": u.ru_stime}).encode())
"""


def timed(cmd: list[str], **kwargs) -> dict:
    """Run ``cmd`` in its own process: its wall time, its peak RSS and CPU times
    (``RUSAGE_CHILDREN`` of a small launcher that runs only it). For a command that
    starts worker processes, the peak RSS is that of the largest single process."""
    r, w = os.pipe()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-S", "-c", LAUNCH, str(w), *cmd], stdout=out, stderr=err,
                                pass_fds=(w,), **kwargs)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            data = f.read()
        proc.wait()
        res = json.loads(data) if data else {"code": proc.returncode}
        err.seek(0)
        if res["code"] != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({res['code']}): {err.read().decode()[-2000:]}")
        res.pop("code")
        if "--timings" in cmd:  # where the time went, stage by stage: the last line `timings: {json}`
            err.seek(max(0, os.fstat(err.fileno()).st_size - 8192))
            lines = [ln for ln in err.read().decode(errors="replace").splitlines() if ln.startswith("timings: {")]
            if lines:
                res["timings"] = json.loads(lines[-1][len("timings: "):])
        return res


def tlparse_exe() -> str:
    return shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")


@functools.cache
def neutral_dir() -> str:
    """An empty folder to run our commands in: ``python -m``/``-c`` put the current folder
    first on sys.path, so run from the checkout they would import its ipycompile, not
    ``code``'s (a --baseline would time this checkout twice)."""
    return tempfile.mkdtemp(prefix="ipycompile-bench-cwd-")


def ours(target: Path, out: Path, *flags: str, code: Path = ROOT, pin: "list[str]" = ()) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code)}
    # this checkout's runs say where their time went (`--timings`, a few lines on stderr; a baseline may not know it)
    timings = ("--timings",) if code == ROOT else ()
    try:
        return timed([*pin, sys.executable, "-m", "ipycompile", "report", str(target), *flags, *timings], env=env,
                     cwd=neutral_dir())
    finally:
        shutil.rmtree(out, ignore_errors=True)


def imported(code: Path) -> dict:
    """``python -c 'import ipycompile'``: the package's own start-up."""
    return timed([sys.executable, "-c", "import ipycompile"], env={**os.environ, "PYTHONPATH": str(code)},
                 cwd=neutral_dir())


def tlparse(target: Path, out: Path, *flags: str, pin: "list[str]" = ()) -> dict:
    try:
        return timed([*pin, tlparse_exe(), str(target), "-o", str(out), "--overwrite", "--no-browser", *flags])
    finally:
        shutil.rmtree(out, ignore_errors=True)


def tlparse_version() -> str:
    return subprocess.run([tlparse_exe(), "--version"], capture_output=True, text=True).stdout.strip()


def _usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def host_name() -> str:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    words = re.sub(r"[^a-z0-9]+", "-", cpu.lower()).strip("-").split("-")
    return "cpu-" + "-".join(words[:3]) if words and words[0] else "cpu"


def stats(rows: list[dict]) -> dict:
    out = {}
    for key in ("wall_s", "peak_rss_mb", "peak_pss_sum_mb", "user_s", "sys_s", "cpu_s"):
        vals = sorted(r[key] if key != "cpu_s" else r["user_s"] + r["sys_s"] for r in rows
                      if key in r or (key == "cpu_s" and "user_s" in r))
        if not vals:
            continue
        n = len(vals)
        med = vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2
        out[key] = {"median": round(med, 3), "min": round(vals[0], 3), "max": round(vals[-1], 3)}
    return out


def _median(vals: list) -> "float | None":
    vals = sorted(vals)
    n = len(vals)
    return None if not n else round(vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2, 4)


def stage_medians(rows: list[dict]) -> dict:
    """Our runs' ``--timings`` over the rounds, stage by stage (start, imports, reading, summary, page, ...):
    the medians of wall time, this process's CPU and the CPU of the processes it started; and the
    medians of this process's peak RSS and of its largest other process's."""
    by: dict = {}
    for r in rows:
        for st in r.get("timings", {}).get("stages", []):
            by.setdefault(st["stage"], []).append(st)
    if not by:
        return {}
    out: dict = {stage: {k: _median([x[k] for x in sts if x.get(k) is not None])
                         for k in ("wall_s", "cpu_s", "other_processes_cpu_s")} for stage, sts in by.items()}
    for k in ("peak_rss_mb", "largest_other_process_rss_mb"):
        out[k] = _median([r["timings"][k] for r in rows if k in r.get("timings", {})])
    return out


def why_missed(ours_row: dict, theirs_row: dict, target: float, what: str) -> dict:
    """Where a missed target's time or memory went: our run's stages (``--timings``) against the
    budget the target leaves (``target`` times tlparse's median), and how much of that budget the fixed
    start (the interpreter, its imports and ours: the ``start`` and ``imports`` stages) takes alone."""
    stages = ours_row.get("stages") or {}
    if what == "time":
        budget = target * theirs_row["wall_s"]["median"]
        fixed = sum((stages.get(s) or {}).get("wall_s") or 0.0 for s in ("start", "imports"))
        out = {"ours_s": ours_row["wall_s"]["median"], "tlparse_s": theirs_row["wall_s"]["median"],
               "budget_s": round(budget, 4), "fixed_start_s": round(fixed, 4)}
    else:
        budget = target * _memory(theirs_row)
        out = {"ours_mb": round(_memory(ours_row), 1), "tlparse_mb": round(_memory(theirs_row), 1),
               "budget_mb": round(budget, 1), "this_process_peak_rss_mb": stages.get("peak_rss_mb"),
               "largest_other_process_rss_mb": stages.get("largest_other_process_rss_mb")}
    if stages:
        out["stages"] = {k: v for k, v in stages.items() if isinstance(v, dict)}
    if what == "time" and stages and budget > 0:
        out["fixed_start_share_of_budget"] = round(fixed / budget, 3)
    return out


def _memory(row: dict) -> float:
    """A command's peak memory: the larger of its largest process's peak RSS and the peak sum of
    its processes' PSS (sampled every 50 ms, so it can miss a short peak the RSS catches)."""
    return max(row["peak_rss_mb"]["median"], row.get("peak_pss_sum_mb", {}).get("median", 0.0))


def slope(points: list[tuple[float, float]]) -> dict:
    """Least-squares line through (x, y); with the largest relative residual, a check of linearity."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    a = my - b * mx
    worst = max((abs(y - (a + b * x)) / y for x, y in points if y), default=0.0)
    return {"per_unit": round(b, 5), "intercept": round(a, 3), "worst_relative_residual": round(worst, 3)}


# -- the page in a browser ------------------------------------------------------------
#: What the page's navigation and paint entries say, and its elements, once it has loaded.
_PAGE_FACTS = """async () => {
  for (let i = 0; i < 600 && !performance.getEntriesByName('first-contentful-paint').length; i++)
    await new Promise(r => setTimeout(r, 10));
  const n = performance.getEntriesByType('navigation')[0], paint = {};
  for (const e of performance.getEntriesByType('paint')) paint[e.name] = e.startTime;
  return {dcl_ms: n.domContentLoadedEventEnd, load_ms: n.loadEventEnd, fcp_ms: paint['first-contentful-paint'],
          elements: document.getElementsByTagName('*').length};
}"""
#: Each tab clicked in turn: ms until its part is in place and a frame has been drawn after it.
_TAB_TIMES = """async () => {
  const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r)));
  const out = {};
  for (const b of document.querySelectorAll('[role=tablist] > [role=tab]')) {
    const panel = document.getElementById(b.getAttribute('aria-controls')), t0 = performance.now();
    b.click();
    while (panel.querySelector(':scope > [data-ipyc-c]')) await frame();
    await frame();
    out[b.dataset.tab] = performance.now() - t0;
  }
  return out;
}"""


def _browser_helpers():
    import importlib.util

    spec = importlib.util.spec_from_file_location("browser_helpers", ROOT / "tests" / "browser_helpers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def page_on_disk(page: Path) -> dict:
    """The page's size: its HTML and the folder of parts beside it (``page_files``), if any."""
    folder = page.with_name(page.stem + "_files")
    files = sorted(folder.iterdir()) if folder.is_dir() else []
    return {"html_mb": round(page.stat().st_size / 1e6, 3), "side_files": len(files),
            "disk_mb": round((page.stat().st_size + sum(f.stat().st_size for f in files)) / 1e6, 3)}


def page_in_browser(browser, page: Path, tabs: bool) -> dict:
    """One opening of ``page`` from file:// in a fresh context: :data:`_PAGE_FACTS`, and with
    ``tabs`` the slowest tab to build (:data:`_TAB_TIMES`)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, offline=True)
    try:
        p = context.new_page()
        p.goto(page.as_uri(), wait_until="load", timeout=300_000)
        facts = p.evaluate(_PAGE_FACTS)
        if tabs:
            times = p.evaluate(_TAB_TIMES)
            slowest = max(times, key=times.get)
            facts.update(slowest_tab_ms=times[slowest], slowest_tab=slowest)
        return facts
    finally:
        context.close()


def page_stats(rows: list[dict]) -> dict:
    out = {}
    for key in ("dcl_ms", "fcp_ms", "load_ms", "elements", "slowest_tab_ms"):
        vals = sorted(r[key] for r in rows if r.get(key) is not None)
        if vals:
            n = len(vals)
            med = vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2
            out[key] = {"median": round(med, 1), "min": round(vals[0], 1), "max": round(vals[-1], 1)}
    if any("slowest_tab" in r for r in rows):
        out["slowest_tab"] = sorted({r["slowest_tab"] for r in rows if "slowest_tab" in r})
    return out


def measure_pages(args, logs: dict, work: Path) -> dict:
    """The ``page`` group: each log's page (ours, and the baseline's) written once, then opened
    ``--reps`` times in Chromium, ours and the baseline's alternating."""
    helpers = _browser_helpers()
    pages: dict = {}
    for mb, path in logs.items():
        made = {}
        for label, code in [("ipycompile report LOG -o page.html", ROOT)] + (
                [("baseline: ipycompile report LOG -o page.html", Path(args.baseline).resolve())] if args.baseline else []):
            folder = work / "pages" / f"{mb}-{'baseline' if code != ROOT else 'ours'}"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            ours(path, work / "out", "-o", str(folder / "page.html"), code=code)
            made[label] = folder / "page.html"
        runs: dict = {label: [] for label in made}
        with helpers.chromium() as browser:
            for rep in range(args.reps):
                for label, page in (made.items() if rep % 2 == 0 else reversed(made.items())):
                    runs[label].append(page_in_browser(browser, page, tabs=not label.startswith("baseline")))
        pages[str(mb)] = {label: {**page_on_disk(made[label]), **page_stats(rows), "runs": rows}
                          for label, rows in runs.items()}
        for label, row in pages[str(mb)].items():
            print(f"page {mb:>5} {label:48s} {row['disk_mb']:7.1f} MB on disk ({row['side_files']} side files), "
                  f"{row['elements']['median']:.0f} elements, fcp {row['fcp_ms']['median']:.0f} ms, "
                  f"dcl {row['dcl_ms']['median']:.0f} ms, load {row['load_ms']['median']:.0f} ms"
                  + (f", slowest tab {row['slowest_tab_ms']['median']:.0f} ms" if "slowest_tab_ms" in row else ""), flush=True)
        for folder in (work / "pages").iterdir():
            shutil.rmtree(folder, ignore_errors=True)
    return pages


def write_results(args, logs: dict, dirs: dict, runs: dict, loads: list, rounds: int, quiet: bool = False,
                  startup: "Path | None" = None, pages: "dict | None" = None) -> None:
    """Medians, ranges, ratios and growth of the rounds so far, printed and written as JSON."""
    results: dict = {}
    for (group, key, label), rows in runs.items():
        stages = stage_medians(rows)
        results.setdefault(group, {}).setdefault(str(key), {})[label] = {
            **stats(rows), **({"stages": stages} if stages else {}), "runs": rows}
    ratios: dict = {}
    pairs = [("summary", "ipycompile report LOG", "tlparse --plain-text"),
             ("full_html", "ipycompile report LOG -o page.html", "tlparse (HTML)"),
             ("ranks", "ipycompile report DIR -o page.html", "tlparse --all-ranks-html"),
             ("startup", "ipycompile report LOG", "tlparse --plain-text"),
             ("startup_page", "ipycompile report LOG -o page.html", "tlparse (HTML)")]
    if args.baseline:
        pairs += [(g, "baseline: " + a, b) for g, a, b in pairs]
    pairs += [("summary", f"ipycompile report LOG --workers {n}", "tlparse --plain-text") for n in args.workers]
    pairs += [("full_html", f"ipycompile report LOG -o page.html --workers {n}", "tlparse (HTML)") for n in args.workers]
    for group, mine, theirs in pairs:
        for key, by in results.get(group, {}).items():
            if mine not in by or theirs not in by:
                continue
            a, b = by[mine], by[theirs]
            who = "baseline" if mine.startswith("baseline") else mine[mine.index("--workers"):] if "--workers" in mine else "ours"
            ratios.setdefault(group, {}).setdefault(key, {})[who] = {
                "time": round(a["wall_s"]["median"] / b["wall_s"]["median"], 3),
                "user_cpu": round(a["user_s"]["median"] / max(b["user_s"]["median"], 1e-9), 3),
                # every process of the command (a forked reader, rank workers), by PSS: a page two
                # processes share counts half to each
                "memory": round(_memory(a) / _memory(b), 3),
                "memory_largest_process": round(a["peak_rss_mb"]["median"] / b["peak_rss_mb"]["median"], 3),
            }
    sizes_mb = {mb: logs[mb].stat().st_size / 1e6 for mb in logs}
    growth: dict = {}
    for group, axis in (("summary", sizes_mb), ("full", sizes_mb), ("full_html", sizes_mb),
                        ("ranks", {n: n for n in dirs})):
        labels = {lab for by in results.get(group, {}).values() for lab in by}
        for lab in labels:
            pts_t = [(axis[int(k)], by[lab]["wall_s"]["median"]) for k, by in results[group].items() if lab in by]
            pts_m = [(axis[int(k)], by[lab]["peak_rss_mb"]["median"]) for k, by in results[group].items() if lab in by]
            if len(pts_t) >= 2:
                growth.setdefault(group, {})[lab] = {"seconds": slope(pts_t), "peak_rss_mb": slope(pts_m)}
    # label -> seconds per MB on one core, the slope between the sizes: of CPU (user + system), and of
    # user time alone (tlparse's system time, writing its output files, swings with the machine's load)
    cpu_per_mb: dict = {}
    user_per_mb: dict = {}
    for lab in {lab for by in results.get("cpu", {}).values() for lab in by}:
        for field, into in (("cpu_s", cpu_per_mb), ("user_s", user_per_mb)):
            pts = [(sizes_mb[int(k)], by[lab][field]["median"]) for k, by in results["cpu"].items() if lab in by]
            if len(pts) >= 2:
                into[lab] = slope(pts)
    cpu_ratios: dict = {}
    user_ratios: dict = {}
    for mine, theirs in CPU_PAIRS:
        for prefix in ("", "baseline: ") if args.baseline else ("",):
            for fits, into in ((cpu_per_mb, cpu_ratios), (user_per_mb, user_ratios)):
                a, b = fits.get(prefix + mine), fits.get(theirs)
                if a and b and b["per_unit"] > 0:
                    into[f"{prefix}{mine} / {theirs}"] = round(a["per_unit"] / b["per_unit"], 3)
    met = {}
    why: dict = {}  # missed target -> where the time or memory went (why_missed)

    def check(name: str, ok: bool, group: str, key, mine: str, theirs: str, target: float, what: str) -> None:
        met[name] = ok
        by = results.get(group, {}).get(str(key), {})
        if not ok and mine in by and theirs in by:
            why[name] = why_missed(by[mine], by[theirs], target, what)

    for pair in (f"{CPU_PAIRS[0][0]} / {CPU_PAIRS[0][1]}", f"{CPU_PAIRS[1][0]} / {CPU_PAIRS[1][1]}"):
        if pair in cpu_ratios:
            met[f"CPU per MB on one core <= 0.5x tlparse's ({pair})"] = cpu_ratios[pair] <= 0.5
    for key, by in ratios.get("summary", {}).items():
        if "ours" in by:
            check(f"summary <= 0.3x tlparse --plain-text's time ({key} MB, {_usable_cpus()} cores)", by["ours"]["time"] <= 0.3,
                  "summary", key, "ipycompile report LOG", "tlparse --plain-text", 0.3, "time")
    for key, by in results.get("startup", {}).items():
        row = by.get("ipycompile report LOG")
        if row:
            met[f"start-up: the text summary of a {key} MB log in under 0.5 s (median wall time)"] = row["wall_s"]["median"] < 0.5
            met[f"start-up: the text summary of a {key} MB log in under 0.5 s of CPU (median user + system)"] = \
                row["cpu_s"]["median"] < 0.5
    for key, by in ratios.get("full_html", {}).items():
        r = by.get("ours")
        if r and float(key) >= 10:
            full = ("full_html", key, "ipycompile report LOG -o page.html", "tlparse (HTML)")
            check(f"full report + HTML <= 0.3x tlparse's time ({key} MB)", r["time"] <= 0.3, *full, 0.3, "time")
            check(f"full report + HTML <= 0.15x tlparse's memory ({key} MB)", r["memory"] <= 0.15, *full, 0.15, "memory")
        if r:
            check(f"full report + HTML no slower than tlparse ({key} MB)", r["time"] <= 1.0,
                  "full_html", key, "ipycompile report LOG -o page.html", "tlparse (HTML)", 1.0, "time")
    for key, by in ratios.get("startup_page", {}).items():
        if by.get("ours"):
            check(f"the page of a {key} MB log no slower than tlparse's", by["ours"]["time"] <= 1.0,
                  "startup_page", key, "ipycompile report LOG -o page.html", "tlparse (HTML)", 1.0, "time")
    for key, by in ratios.get("ranks", {}).items():
        r = by.get("ours")
        if r:
            ranks = ("ranks", key, "ipycompile report DIR -o page.html", "tlparse --all-ranks-html")
            check(f"{key} ranks: <= 0.3x tlparse's time", r["time"] <= 0.3, *ranks, 0.3, "time")
            check(f"{key} ranks: <= 0.3x tlparse's memory", r["memory"] <= 0.3, *ranks, 0.3, "memory")
    for key, by in (pages or {}).items():
        row = by.get("ipycompile report LOG -o page.html")
        if row:
            met[f"page: first contentful paint and load within 1 s in Chromium ({key} MB log, medians)"] = \
                max(row["fcp_ms"]["median"], row["load_ms"]["median"]) <= 1000

    if quiet:
        print(json.dumps(ratios), flush=True)
    for group, by_key in ({} if quiet else results).items():
        for key, by in by_key.items():
            for lab, row in by.items():
                w, m = row["wall_s"], row["peak_rss_mb"]
                pss = row.get("peak_pss_sum_mb")
                cpu = row.get("cpu_s")
                print(f"{group:10s} {key:>5s} {lab:48s} {w['median']:7.2f} s [{w['min']:.2f}-{w['max']:.2f}] "
                      + (f"cpu {cpu['median']:5.2f} s [{cpu['min']:.2f}-{cpu['max']:.2f}] " if cpu else "")
                      + f"{m['median']:7.0f} MB [{m['min']:.0f}-{m['max']:.0f}]"
                      + (f" all processes {pss['median']:.0f} MB" if pss else ""))
    print("ratios (ours / tlparse, medians):", json.dumps(ratios))
    for key, by in ratios.get("summary", {}).items():
        for who, r_ in by.items():
            print(f"  summary {key} MB ({who}): {r_['time']:.2f}x tlparse --plain-text's time, {r_['memory']:.2f}x its memory")
    for lab, fit in sorted(cpu_per_mb.items()):
        print(f"  CPU per MB, one core: {lab:48s} {fit['per_unit'] * 1000:6.2f} ms/MB (fixed {fit['intercept']:.2f} s), "
              f"user alone {user_per_mb[lab]['per_unit'] * 1000:6.2f} ms/MB")
    for pair, x in cpu_ratios.items():
        print(f"  CPU per MB ratio: {pair}: {x:.2f}x (user time alone {user_ratios.get(pair, float('nan')):.2f}x)")
    for k, ok in met.items():
        print(f"  {'met ' if ok else 'MISSED'} {k}")
        w = why.get(k)
        if w and "budget_s" in w:
            parts = ", ".join(f"{st} {v['wall_s']:.2f}" for st, v in w.get("stages", {}).items() if v.get("wall_s") is not None)
            print(f"         ours {w['ours_s']:.2f} s against a budget of {w['budget_s']:.2f} s; "
                  + (f"the start and imports alone {w['fixed_start_s']:.2f} s; by stage (s wall): {parts}" if parts else ""))
        elif w:
            print(f"         ours {w['ours_mb']:.0f} MB against a budget of {w['budget_mb']:.0f} MB; this process's peak "
                  f"{w.get('this_process_peak_rss_mb')} MB, the largest other's {w.get('largest_other_process_rss_mb')} MB")

    result = {
        "benchmark": "trace_load",
        "label": args.label,
        "host": host_name(),
        "cpus": os.cpu_count(),
        # the CPUs the run may use (taskset, a cpuset): the measured commands inherit it
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": platform.python_version(),
        "tlparse": tlparse_version(),
        "baseline": args.baseline_name or args.baseline,
        "commit": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                 capture_output=True, text=True).stdout.strip(),
        "args": vars(args),
        "rounds_done": rounds,
        "method": (f"{args.reps} rounds; in each, every measurement once in its own process, ours and tlparse's "
                   "alternating (the round's order reversed every other round), on a machine shared with other "
                   "work: see load_average_1m (taken after each round). Median [min-max] of wall time and of peak RSS "
                   "(RUSAGE_CHILDREN of a small launcher that runs only the measured command; for a command with "
                   "worker processes, the largest single process), and of the peak sum of the PSS of the "
                   "command's processes (sampled every 50 ms; a forked reader or rank workers included). The "
                   "memory ratio is of the larger of the two. cpu_s: the command's user + system time "
                   "(RUSAGE_CHILDREN), less sensitive to the load than its wall time."),
        "load_average_1m": [round(x[0], 2) for x in loads],
        "log_mb": {str(k): round(v, 1) for k, v in sizes_mb.items()},
        "startup_log_mb": round(startup.stat().st_size / 1e6, 3) if startup is not None else None,
        "bytecode": ("ipycompile byte-compiled before the rounds (as pip install leaves it); the runs read it"
                     if startup is not None else None),
        "results": results,
        "page": pages or {},
        "page_method": ("each page written once by `report LOG -o page.html` (and by the baseline's code), then opened "
                        "--reps times from file:// in a fresh context of one headless Chromium (/usr/bin/chromium, "
                        "Playwright), ours and the baseline's alternating: disk_mb the HTML and its folder of parts; "
                        "elements at the load event; dcl_ms, load_ms the navigation's domContentLoaded and load ends, "
                        "fcp_ms the first contentful paint, ms from the navigation's start; slowest_tab_ms: each tab "
                        "clicked in turn, ms to the first frame after its part is in place, the slowest (medians, "
                        "min, max)") if pages else None,
        "ratios_ours_over_tlparse": ratios,
        "growth": growth,
        "cpu_per_mb": {"pinned": " ".join(one_core()) or "not pinned (no taskset)", "seconds_per_mb": cpu_per_mb,
                       "ratios_ours_over_tlparse": cpu_ratios, "user_seconds_per_mb": user_per_mb,
                       "user_ratios_ours_over_tlparse": user_ratios},
        "met": met,
        # for each missed target, where our time or memory went (the stages of `report --timings`, medians)
        # against the budget the target leaves: the profile that says why it was missed
        "why_missed": why,
    }
    res_dir = HERE / "results"
    res_dir.mkdir(exist_ok=True)
    dest = res_dir / f"trace_load-{result['host']}{'-' + args.label if args.label else ''}.json"
    dest.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nwrote {dest.relative_to(ROOT)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 100, 200, 400], help="log sizes in MB (default: %(default)s)")
    ap.add_argument("--ranks", type=int, nargs="*", default=[8, 64, 512], help="rank counts (default: %(default)s)")
    ap.add_argument("--copies-per-rank", type=int, default=1, help="training-log copies per rank (default: %(default)s)")
    ap.add_argument("--reps", type=int, default=5, help="interleaved rounds (default: %(default)s)")
    ap.add_argument("--startup-mb", type=float, default=1.0,
                    help="size of the log of the start-up measurement, in MB (default: %(default)s)")
    ap.add_argument("--groups", nargs="+", default=list(GROUPS), choices=GROUPS,
                    help="which measurements to run (default: all): summary, full, full_html, page, cpu, ranks, startup")
    ap.add_argument("--baseline", default=None, metavar="DIR",
                    help="also time the ipycompile of this checkout (e.g. an earlier commit's `git archive`), "
                         "in the same rounds, as 'baseline: ...' (the full report with HTML, the summary, the cpu group, the start-up, the ranks)")
    ap.add_argument("--baseline-name", default="", help="what the baseline is (e.g. its commit), for the JSON")
    ap.add_argument("--workers", type=int, nargs="*", default=[], metavar="N",
                    help="also time the summary and the page with their reading processes forced to N "
                         "(`report LOG [-o page.html] --workers N`; 1: one process), as "
                         "'ipycompile report LOG [-o page.html] --workers N'")
    ap.add_argument("--label", default="", help="suffix of the results file (e.g. before, after)")
    ap.add_argument("--keep", default=None, metavar="DIR", help="build the traces in DIR and keep them (reused if there)")
    args = ap.parse_args()

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ipycompile-trace-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        sizes = sorted(set(args.sizes)) if set(args.groups) & set(LARGE_GROUPS) else []
        logs = {}
        if sizes:
            biggest = work / f"large_{sizes[-1]}.log"
            marks_file = work / "marks.json"
            if biggest.exists() and marks_file.exists():
                marks = json.loads(marks_file.read_text())
            else:
                _, _, marks = build_large(biggest, sizes[-1])
                marks_file.write_text(json.dumps(marks))
            for mb in sizes:
                path = work / f"large_{mb}.log"
                if not path.exists():
                    prefix_log(biggest, path, marks, mb)
                logs[mb] = path
        startup = None
        if "startup" in args.groups:
            startup = work / f"startup_{args.startup_mb:g}.log"
            if not startup.exists():
                build_startup(startup, args.startup_mb)
        # every group: the package's bytecode written first, as `pip install` leaves it (a machine that sets
        # PYTHONDONTWRITEBYTECODE, or a fresh copy, would compile our source in every timed process)
        byte_compile(ROOT / "ipycompile", *([Path(args.baseline) / "ipycompile"] if args.baseline else []))
        dirs = {}
        for n in sorted(set(args.ranks)) if "ranks" in args.groups else ():
            d = work / f"ranks_{n}"
            if not d.exists():
                build_ranks(d, n, args.copies_per_rank)
            dirs[n] = d
        print(f"built inputs in {time.perf_counter() - t0:.0f} s", flush=True)

        out = work / "out"
        page = work / "page.html"
        plan = []  # (group, key, label, runner) in the order of one round: ours then tlparse's, alternating
        for mb, path in logs.items():
            plan += [
                ("summary", mb, "ipycompile report LOG", lambda p=path: ours(p, out)),
                ("summary", mb, "tlparse --plain-text", lambda p=path: tlparse(p, out, "--plain-text")),
                ("full", mb, "ipycompile report LOG --full", lambda p=path: ours(p, out, "--full")),
                ("full_html", mb, "ipycompile report LOG -o page.html", lambda p=path: ours(p, out, "-o", str(page))),
                ("full_html", mb, "tlparse (HTML)", lambda p=path: tlparse(p, out)),
            ]
            plan += [("summary", mb, f"ipycompile report LOG --workers {n}",
                      lambda p=path, n=n: ours(p, out, "--workers", str(n))) for n in args.workers]
            plan += [("full_html", mb, f"ipycompile report LOG -o page.html --workers {n}",
                      lambda p=path, n=n: ours(p, out, "-o", str(page), "--workers", str(n))) for n in args.workers]
        pin = one_core()
        for mb, path in logs.items():
            for label, who, flags in CPU_RUNS:
                run = (lambda p=path, f=flags: ours(p, out, *f, pin=pin)) if who == "ours" else \
                    (lambda p=path, f=flags: tlparse(p, out, *f, pin=pin))
                plan.append(("cpu", mb, label, run))
        if args.baseline:
            base = Path(args.baseline).resolve()
            for mb, path in logs.items():
                plan += [
                    ("full_html", mb, "baseline: ipycompile report LOG -o page.html",
                     lambda p=path: ours(p, out, "-o", str(page), code=base)),
                    ("summary", mb, "baseline: ipycompile report LOG", lambda p=path: ours(p, out, code=base)),
                    *[("cpu", mb, "baseline: " + label, lambda p=path, f=flags: ours(p, out, *f, code=base, pin=pin))
                      for label, who, flags in CPU_RUNS if who == "ours"],
                ]
        for n, d in dirs.items():
            plan += [
                ("ranks", n, "ipycompile report DIR -o page.html", lambda d=d: ours(d, out, "-o", str(page))),
                ("ranks", n, "tlparse --all-ranks-html", lambda d=d: tlparse(d, out, "--all-ranks-html")),
            ]
            if args.baseline:
                plan += [("ranks", n, "baseline: ipycompile report DIR -o page.html",
                          lambda d=d, base=Path(args.baseline).resolve(): ours(d, out, "-o", str(page), code=base))]
        if startup is not None:
            key = f"{args.startup_mb:g}"
            answer = work / "startup.json"
            plan += [
                ("startup", key, "ipycompile report LOG", lambda: ours(startup, out)),
                ("startup", key, "tlparse --plain-text", lambda: tlparse(startup, out, "--plain-text")),
                ("startup", key, "ipycompile report LOG --json FILE", lambda: ours(startup, answer, "--json", str(answer))),
                ("startup", key, "python -c pass", lambda: timed([sys.executable, "-c", "pass"])),
                ("startup", key, "python -c 'import ipycompile'", lambda: imported(ROOT)),
                ("startup_page", key, "ipycompile report LOG -o page.html", lambda: ours(startup, out, "-o", str(page))),
                ("startup_page", key, "tlparse (HTML)", lambda: tlparse(startup, out)),
            ]
            if args.baseline:
                base = Path(args.baseline).resolve()
                plan += [("startup", key, "baseline: ipycompile report LOG", lambda: ours(startup, out, code=base)),
                         ("startup", key, "baseline: python -c 'import ipycompile'", lambda: imported(base)),
                         ("startup_page", key, "baseline: ipycompile report LOG -o page.html",
                          lambda: ours(startup, out, "-o", str(page), code=base))]
        plan = [step for step in plan if step[0] in args.groups or (step[0] == "startup_page" and "startup" in args.groups)]
        runs: dict[tuple, list[dict]] = {}
        loads = [os.getloadavg()]
        pages = measure_pages(args, logs, work) if "page" in args.groups else None
        if not plan:  # the page alone
            write_results(args, logs, dirs, runs, loads + [os.getloadavg()], 0, startup=startup, pages=pages)
        for rep in range(args.reps if plan else 0):
            order = plan if rep % 2 == 0 else plan[::-1]  # alternate the order too
            for group, key, label, run in order:
                runs.setdefault((group, key, label), []).append(run())
            loads.append(os.getloadavg())
            print(f"round {rep + 1}/{args.reps} done, load {loads[-1][0]:.1f}", flush=True)
            # written after every round: a run cut short keeps the rounds it finished
            write_results(args, logs, dirs, runs, loads, rep + 1, quiet=rep + 1 < args.reps, startup=startup, pages=pages)
        page.unlink(missing_ok=True)
        shutil.rmtree(work / "page_files", ignore_errors=True)  # a large page's parts
    finally:
        shutil.rmtree(neutral_dir(), ignore_errors=True)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
