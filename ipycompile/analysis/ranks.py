"""Where the ranks of a distributed job compiled differently.

:func:`rank_divergence` compares one report per rank (``{rank: CompileReport}``,
e.g. from :func:`ipycompile.load_trace` on a TORCH_TRACE directory) and
returns a :class:`RankDivergence`: plain values with a readable ``str``.

It names what tlparse's all-ranks page flags (compile ids not on every rank,
ranks grouped by their cache hit/miss sequence) and what it leaves to the
reader: which ranks behave alike and which differ, the graph-break sites hit
a different number of times, the recompiles and their reasons on each group
of ranks, the failures, the slowest rank's compile time against the median
(and the compile that makes the difference), and graph breaks at collectives
(``torch.distributed`` calls), which stall every rank when one breaks.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from ..report import CompileReport, GraphBreak
from ..report.owners import in_torch_package
from ..report.report import text_view
from ..report.text import fmt_ranks, plural

__all__ = ["rank_divergence", "RankDivergence", "Presence", "CountDifference", "RankGroup", "CompileTimes", "is_collective_break",
           "short_ranks", "ranks_word", "cid_key"]


def is_collective_break(b: GraphBreak) -> bool:
    """Whether a graph break happened at a ``torch.distributed`` call: its user stack
    reaches into ``torch/distributed/``, or its line or reason names a collective (read by capture:
    ``GraphBreak.names_collective``)."""
    if any(in_torch_package(f.filename or "", "distributed") for f in b.user_stack):
        return True
    return bool(b.names_collective)


@dataclass
class Presence:
    """Something found on some ranks only: compile ids, or one compile of one function."""

    what: str  # "0/1, 3/0" or "local (train.py:12), recompile 1 [1/1]"
    ranks: list[int]  # the ranks that have it
    compile_ids: list[str] = field(default_factory=list)  # its compile ids (on those ranks)

    def describe(self, all_ranks: list[int]) -> str:
        return f"{self.what}: {_where(self.ranks, all_ranks)}"


@dataclass
class CountDifference:
    """Something counted on each rank (a graph-break site) with its count per rank (0: not hit)."""

    what: str
    counts: dict[int, int]

    def describe(self) -> str:
        by_count: dict[int, list[int]] = {}
        for r, n in self.counts.items():
            by_count.setdefault(n, []).append(r)
        if len(by_count) == 1:
            (n,) = by_count
            return f"{self.what}: {n}x on every rank"
        parts = [f"{_times(n)} on {ranks_word(rs)}" for n, rs in sorted(by_count.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
        return f"{self.what}: " + "; ".join(parts)


@dataclass
class RankGroup:
    """Ranks that share one behaviour, and that behaviour in words."""

    ranks: list[int]
    text: str


@dataclass
class CompileTimes:
    """Total compile time per rank (seconds): the slowest rank, and by how much."""

    per_rank: dict[int, float]
    slowest: int
    fastest: int
    median_s: float
    spread_compile: str = ""  # the compile whose time differs most between ranks, e.g. "[0/0] forward"
    spread_times: dict[int, float] = field(default_factory=dict)  # that compile's time on each rank

    @property
    def slowest_s(self) -> float:
        return self.per_rank[self.slowest]

    @property
    def ratio(self) -> float:
        """The slowest rank's time over the median (1.0: no rank is slower than usual)."""
        return self.slowest_s / self.median_s if self.median_s > 0 else 1.0

    def describe(self) -> str:
        if len(self.per_rank) < 2:
            return f"compile time {self.slowest_s:.2f} s"
        text = (
            f"slowest rank {self.slowest}: {self.slowest_s:.2f} s, {self.ratio:.2f}x the median "
            f"({self.median_s:.2f} s, +{self.slowest_s - self.median_s:.2f} s); "
            f"fastest rank {self.fastest}: {self.per_rank[self.fastest]:.2f} s"
        )
        if self.spread_compile and self.spread_times:
            times = self.spread_times
            med = statistics.median(times.values())
            top = max(times, key=times.get)
            text += f"\n  the largest difference is {self.spread_compile}: {times[top]:.2f} s on rank {top}, median {med:.2f} s"
        return text


@dataclass
class RankDivergence:
    """How the ranks' compiles differ; ``str()`` reads as a short text (one screen: the view's,
    ``views/ranks_view.py``)."""

    ranks: list[int]
    behaviours: list[RankGroup] = field(default_factory=list)  # ranks that compiled alike, largest group first
    compiles: list[Presence] = field(default_factory=list)  # compiles (of one function, n-th time) on some ranks only
    compile_ids: list[Presence] = field(default_factory=list)  # compile ids on some ranks only, as tlparse compares them
    graph_breaks: list[CountDifference] = field(default_factory=list)  # sites hit a different number of times
    recompiles: list[RankGroup] = field(default_factory=list)  # ranks grouped by their recompiles (when they differ)
    failures: list[RankGroup] = field(default_factory=list)  # ranks grouped by their failures (when they differ)
    cache: list[RankGroup] = field(default_factory=list)  # ranks grouped by cache hit/miss sequence (when it differs)
    ddp_splits: list[RankGroup] = field(default_factory=list)  # ranks grouped by how DDP split their graphs (when it differs)
    ddp_alike: str = ""  # how DDP split the graphs, when every rank split them alike ("" when DDP split nothing)
    compile_time: Optional[CompileTimes] = None
    collective_breaks: list[CountDifference] = field(default_factory=list)  # graph breaks at collectives, any rank
    unreadable: dict[int, int] = field(default_factory=dict)  # rank -> events its log could not give
    missing: dict[int, str] = field(default_factory=dict)  # ranks a gathered capture did not get, or got from a failed block

    @property
    def diverged(self) -> bool:
        """Whether the ranks compiled differently (compile times aside)."""
        return len(self.behaviours) > 1

    def __str__(self) -> str:
        render = text_view("rank_divergence")  # views/ranks_view.py's, registered by `import ipycompile`
        return render(self) if render is not None else repr(self)

    def __repr__(self) -> str:
        state = f"{len(self.behaviours)} behaviours" if self.diverged else "alike"
        return f"<RankDivergence {len(self.ranks)} ranks, {state}>"

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(repr(self) if cycle else str(self))


#: Rank ranges written out in one place before the rest are counted (a line stays a line at 4,096 ranks).
RANGES_SHOWN = 8


def short_ranks(ranks: list[int]) -> str:
    """:func:`fmt_ranks`, the first :data:`RANGES_SHOWN` ranges and a count of the others."""
    ranges = fmt_ranks(ranks).split(", ")
    if len(ranges) <= RANGES_SHOWN:
        return ", ".join(ranges)
    return f"{', '.join(ranges[:RANGES_SHOWN])}, ... ({len(ranks)} ranks in {len(ranges)} ranges)"


def ranks_word(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {short_ranks(ranks)}"


def _where(have: list[int], all_ranks: list[int]) -> str:
    held = set(have)
    missing = [r for r in all_ranks if r not in held]
    if len(have) <= len(missing):
        return f"only on {ranks_word(have)}"
    return f"on every rank but {short_ranks(missing)}"


def _times(n: int) -> str:
    return "not hit" if n == 0 else f"{n}x"


def _site_text(b: GraphBreak) -> str:
    where = f"{os.path.basename(b.frame.filename) or '?'}:{b.frame.lineno if b.frame.lineno is not None else '?'}"
    fn = f" in {b.frame.function}" if b.frame.function else ""
    code = f" [{b.gb_code}]" if b.gb_code else ""
    line = f" ({b.frame.source_line.strip()})" if b.frame.source_line.strip() else ""
    return f"{where}{fn}: {b.reason}{code}{line}"


def _guard_words(rc: Any) -> str:
    """The first failed guard of a recompile in the user's words, from the guards capture read
    (``Recompile.guards``: the guarded value under the user's name, or described where no name
    of the user's holds it); "" where capture read none (reports from before guards were read)."""
    for g in getattr(rc, "guards", None) or []:
        who = f"`{g.name}`" if getattr(g, "name", "") else getattr(g, "described", "")
        if not who:
            continue
        kind, dim = getattr(g, "kind", ""), getattr(g, "dim", None)
        before, after = getattr(g, "before", ""), getattr(g, "after", "")
        if kind in ("size", "size_0_1", "stride") and dim is not None:
            what = f"{'stride' if kind == 'stride' else 'size'} of dim {dim} of {who}"
        elif kind in ("value", "global", "training", ""):
            what = who
        else:
            what = f"{kind.replace('_', ' ')} of {who}"
        change = f" went {before} -> {after}" if before and after else (f" changed (was {before})" if before else " changed")
        return what + change
    return ""


def _recompile_text(r: CompileReport) -> tuple[Any, str]:
    items = []
    for rc in r.recompiles:
        why = _guard_words(rc) or (rc.reasons[0].splitlines()[0].strip() if rc.reasons else "(no reason given)")
        limit = " (recompile limit hit)" if rc.limit_hit else ""
        items.append(f"[{rc.compile_id}] {rc.function}: {why}{limit}")
    if not items:
        return (), "no recompiles"
    text = f"{len(items)} recompile{'s' if len(items) > 1 else ''}: " + "; ".join(items[:3])
    return tuple(items), text + (f"; ... {len(items) - 3} more" if len(items) > 3 else "")


def _failure_text(r: CompileReport) -> tuple[Any, str]:
    items = []
    for f in r.failures:
        first = f.message.strip().splitlines()[0] if f.message.strip() else ""
        items.append(f"[{f.compile_id}] {f.type}: {first}")
    if not items:
        return (), "no failures"
    return tuple(items), f"{len(items)} failure{'s' if len(items) > 1 else ''}: " + "; ".join(items[:3])


def _cache_text(r: CompileReport) -> tuple[Any, str]:
    seq = tuple((str(c.compile_id), c.cache.fx_graph, c.cache.aot_autograd) for c in r.compiles if c.cache.fx_graph or c.cache.aot_autograd)
    if not seq:
        return (), "no cache lookups"
    parts = []
    for layer, idx in (("fx_graph", 1), ("aot_autograd", 2)):
        statuses = [s[idx] for s in seq if s[idx]]
        if statuses:
            counts = {st: statuses.count(st) for st in sorted(set(statuses))}
            parts.append(f"{layer} " + ", ".join(f"{n} {st}" for st, n in counts.items()))
    return seq, "; ".join(parts)


def _ddp_text(r: CompileReport) -> tuple[Any, str]:
    """How DDP's optimizer split this rank's graphs, comparable across ranks (by function, not compile id)."""
    splits = r.ddp_splits
    if not splits:
        return (), "no DDP splits"
    items = []
    for cid, n in sorted(splits.items()):
        c = r.compile(cid)
        items.append((c.function if c else "", n, str(cid)))
    text = "; ".join(f"[{cid}]{' ' + fn if fn else ''} into {plural(n, 'bucket subgraph')}" for fn, n, cid in items)
    return tuple((fn, n) for fn, n, _ in items), text


def _compile_seconds(r: CompileReport) -> float:
    metrics = [c.entire_frame_compile_s for c in r.compiles if c.entire_frame_compile_s is not None]
    return float(sum(metrics)) if metrics else float(r.compile_time.total_s or 0.0)


def _group(per_rank: dict[int, tuple[Any, str]]) -> list[RankGroup]:
    """Ranks grouped by equal keys, largest group first; [] when all ranks share one key."""
    groups: dict[Any, list[int]] = {}
    texts: dict[Any, str] = {}
    for r, (key, text) in per_rank.items():
        groups.setdefault(key, []).append(r)
        texts[key] = text
    if len(groups) < 2:
        return []
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))
    return [RankGroup(sorted(rs), texts[k]) for k, rs in ordered]


def _reports_of(reports: Mapping[int, CompileReport]) -> dict[int, CompileReport]:
    """The reports to compare: a RankReports (from load_trace) is compared through its
    summaries, read for every rank already, rather than by reading each full log again."""
    summaries = getattr(reports, "summaries", None)
    source = summaries if isinstance(summaries, Mapping) and summaries else reports
    return {int(r): source[r] for r in sorted(source)}


def rank_divergence(reports: Mapping[int, CompileReport]) -> RankDivergence:
    """Compare the reports of a job's ranks (``{rank: report}``); see :class:`RankDivergence`."""
    reps = _reports_of(reports)
    ranks = list(reps)
    out = RankDivergence(ranks=ranks, missing=dict(getattr(reports, "missing", None) or {}))
    if not reps:
        return out

    # compile ids present on some ranks only (tlparse's check), grouped by the set of ranks that have them
    have: dict[str, set[int]] = {}
    for r, rep in reps.items():
        for c in rep.compiles:
            have.setdefault(str(c.compile_id), set()).add(r)
    by_set: dict[frozenset, list[str]] = {}
    for cid, rs in have.items():
        if len(rs) < len(ranks):
            by_set.setdefault(frozenset(rs), []).append(cid)
    out.compile_ids = [
        Presence(", ".join(sorted(cids, key=cid_key)), sorted(rs), sorted(cids, key=cid_key))
        for rs, cids in sorted(by_set.items(), key=lambda kv: sorted(kv[0]))
    ]
    # compiles on some ranks only, matched by what they compile: frame ids count the frames a process
    # compiled, so after one extra frame on a rank every later frame has another id there
    keyed = {r: _keyed_compiles(rep) for r, rep in reps.items()}
    code: dict[tuple, dict[int, str]] = {}
    for r, pairs in keyed.items():
        for key, c in pairs:
            code.setdefault(key, {})[r] = str(c.compile_id)
    out.compiles = [
        Presence(_code_text(key, ids), sorted(ids), sorted(set(ids.values()), key=cid_key))
        for key, ids in code.items()
        if len(ids) < len(ranks)
    ]

    # graph-break sites, with the count on each rank
    sites: dict[tuple, dict[int, int]] = {}
    text: dict[tuple, str] = {}
    collective: set[tuple] = set()
    for r, rep in reps.items():
        for b in rep.graph_breaks:
            sites.setdefault(b.site, {})[r] = sites.get(b.site, {}).get(r, 0) + b.count
            text.setdefault(b.site, _site_text(b))
            if is_collective_break(b):
                collective.add(b.site)
    full = {site: {r: counts.get(r, 0) for r in ranks} for site, counts in sites.items()}
    out.graph_breaks = [CountDifference(text[s], c) for s, c in full.items() if len(set(c.values())) > 1]
    out.collective_breaks = [CountDifference(text[s], full[s]) for s in full if s in collective]

    out.recompiles = _group({r: _recompile_text(rep) for r, rep in reps.items()})
    out.failures = _group({r: _failure_text(rep) for r, rep in reps.items()})
    out.cache = _group({r: _cache_text(rep) for r, rep in reps.items()})
    ddp = {r: _ddp_text(rep) for r, rep in reps.items()}
    out.ddp_splits = _group(ddp)
    if not out.ddp_splits and any(key for key, _ in ddp.values()):
        out.ddp_alike = next(iter(ddp.values()))[1]

    # one behaviour per set of (compile ids, graph-break counts, recompiles, failures, caches)
    def fingerprint(r: int, rep: CompileReport) -> tuple:
        cids = frozenset(key for key, _ in keyed[r])
        breaks = tuple(sorted((text[s], c[r]) for s, c in full.items()))
        return (cids, breaks, _recompile_text(rep)[0], _failure_text(rep)[0], _cache_text(rep)[0], ddp[r][0])

    prints = {r: fingerprint(r, rep) for r, rep in reps.items()}
    groups: dict[tuple, list[int]] = {}
    for r, fp in prints.items():
        groups.setdefault(fp, []).append(r)
    ordered = sorted(groups.values(), key=lambda rs: (-len(rs), rs[0]))
    typical = prints[ordered[0][0]]
    out.behaviours = [RankGroup(rs, _behaviour_text(prints[rs[0]], typical, i == 0, reps[rs[0]])) for i, rs in enumerate(ordered)]

    times = {r: _compile_seconds(rep) for r, rep in reps.items()}
    if any(times.values()):
        slowest = max(times, key=lambda r: (times[r], -r))
        fastest = min(times, key=lambda r: (times[r], r))
        ct = CompileTimes(times, slowest, fastest, float(statistics.median(times.values())))
        ct.spread_compile, ct.spread_times = _largest_spread(keyed)
        out.compile_time = ct

    out.unreadable = {
        r: rep.origin.problem_count for r, rep in reps.items() if rep.origin is not None and rep.origin.problem_count
    }
    return out


def _largest_spread(keyed: dict[int, list[tuple[tuple, Any]]]) -> tuple[str, dict[int, float]]:
    """The compile (made on two ranks or more) whose compile time differs most between ranks."""
    per: dict[tuple, dict[int, float]] = {}
    label: dict[tuple, dict[int, str]] = {}
    for r, pairs in keyed.items():
        for key, c in pairs:
            if c.entire_frame_compile_s is not None:
                per.setdefault(key, {})[r] = c.entire_frame_compile_s
                label.setdefault(key, {})[r] = f"[{c.compile_id}] {c.function}".rstrip()
    best, spread = None, 0.0
    for key, t in per.items():
        if len(t) >= 2:
            d = max(t.values()) - statistics.median(t.values())
            if d > spread:
                best, spread = key, d
    if best is None:
        return "", {}
    times = per[best]
    return label[best][max(times, key=times.get)], times


def _behaviour_text(fp: tuple, typical: tuple, is_typical: bool, rep: CompileReport) -> str:
    cids, breaks, rcs, fails, cache, ddp = fp
    n_breaks = sum(n for _, n in breaks)
    base = (f"{plural(len(cids), 'compile')}, {plural(n_breaks, 'graph break')}, "
            f"{plural(len(rcs), 'recompile')}, {plural(len(fails), 'failure')}")
    if is_typical:
        return base
    diff = []
    extra, missing = sorted(cids - typical[0]), sorted(typical[0] - cids)
    if extra:
        diff.append(f"{plural(len(extra), 'compile')} the others do not make")
    if missing:
        diff.append(f"{plural(len(missing), 'compile')} fewer")
    if breaks != typical[1]:
        diff.append("other graph breaks")
    if rcs != typical[2]:
        diff.append("other recompiles")
    if fails != typical[3]:
        diff.append("other failures")
    if cache != typical[4]:
        diff.append("other cache results")
    if ddp != typical[5]:
        diff.append("other DDP graph splits")
    return base + (" (" + "; ".join(diff) + ")" if diff else "")


def _keyed_compiles(rep: CompileReport) -> list[tuple[tuple, Any]]:
    """Each compile with what it compiled, comparable across ranks: its function and place,
    which compile of its frame it was, and how many such compiles came before it on that rank
    (compile ids are not comparable: they count the frames each process compiled)."""
    seen: dict[tuple, int] = {}
    out = []
    for c in rep.compiles:
        base = (c.function, c.filename, c.first_line, c.compile_id.frame_compile_id, c.compile_id.compiled_autograd_id)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.append((base + (n,), c))
    return out


def _code_text(key: tuple, ids: dict[int, str]) -> str:
    function, filename, line, nth, _, occurrence = key
    where = f" ({os.path.basename(filename)}:{line})" if filename else ""
    again = (f", recompile {nth}" if nth else "") + (f", #{occurrence + 1} of its kind" if occurrence else "")
    shown = sorted(set(ids.values()), key=cid_key)
    return f"{function or '?'}{where}{again} [{', '.join(shown[:3])}{' ...' if len(shown) > 3 else ''}]"


def cid_key(text: str) -> tuple:
    nums = [int(x) for x in "".join(c if c.isdecimal() else " " for c in text).split()]
    return (text.startswith("!"), nums)
