"""The doctor against its corpus: captured, located, a specific answer, a proven fix.

Runs the cases of ``tests/doctor_corpus`` in two parts, reported separately and
together: ``pytorch-tests`` (user functions transcribed from pytorch/pytorch's Dynamo
tests) and ``real-code`` (real users' repros from GitHub issues, transformers models
called as users call them); and, only when asked (``--part held_out``), the ``held_out``
part, which the doctor is measured on and never tuned on (forum and blog questions, and
torch_geometric, kornia, torchmetrics, einops, torchdiffeq, gpytorch and e3nn called as
their users call them: issue 40), written to a file of its own
(``doctor_coverage-held_out-cpu-torch-2.13.0.json`` with ``--per-torch``), with its own
targets (>= 90 % specific, no wrong answer, no crash: an exception inside the doctor, counted
from the report's ``doctor:`` errors; a case whose library is not installed is skipped); backend ``eager`` unless a case says otherwise; under
``ipycompile.capture()`` while torch's own ``graph_breaks`` / ``recompiles`` log
records are collected (see ``tests/doctor_corpus/harness.py`` for what each column
means and how a fix is applied), then prints

* per case: torch's break and recompile counts, the report's, captured, located, the
  answers' kinds and each fix's verdict;
* per GB code / recompile kind: how many items, how many got a specific answer (a
  ``Suggestion.kind`` other than ``unknown``), the kinds given, fixes proven / wrong /
  unchecked, and the cases left without an answer or given a wrong one;
* the totals against the targets (issues 20 and 27), per part and together: captured and
  located for every case, a specific answer for >= 85 % of cases (every break and
  recompile of the case), no wrong answer (a fix that does not remove the problem with the
  same outputs, or an answer one of the checks of ``doctor_corpus.checks`` rejects: torch's
  guard names, library code, a false claim about eager, ...), every code or setting fix
  proven; the wrong answers by class.

Writes ``benchmarks/results/doctor_coverage-cpu.json`` (every figure, every case) and, with
``--findings``, a Markdown list of the wrong and unanswered cases by class. ``--per-torch``
names the file after the torch that ran (``doctor_coverage-cpu-torch-2.14.1.json``), so that
each version's results are kept side by side; ``--diff A.json B.json`` runs no case and
writes the differences between two result files (each case's torch counts and answers: a GB
code torch renamed, an answer or a verdict that changed, a case that is in one only) to
``doctor_coverage-diff-torch-A-vs-B.json`` (or ``--out``), and prints them.

    python benchmarks/doctor_coverage.py [--part real-code] [--module misc,generator] [--case NAME,...]
        [--no-fixes] [--merge] [--per-torch] [--out PATH] [--findings PATH]
    python benchmarks/doctor_coverage.py --diff RESULTS_A.json RESULTS_B.json [--out PATH]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import torch  # noqa: E402

import doctor_corpus  # noqa: E402
from doctor_corpus import harness  # noqa: E402

TARGET_SPECIFIC = 0.85
#: the held-out part's targets (issue 40): at least 90 % specific, no wrong answer, no crash
TARGET_SPECIFIC_BY_PART = {"held_out": 0.90}


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100.0 * n / d:.0f} %)" if d else "0/0"


def summarize(results: list[harness.Result], target: float = TARGET_SPECIFIC) -> dict:
    live = [r for r in results if not r.error and r.breaks_or_recompiles]
    skipped = {r.case: r.skipped for r in results if r.skipped}
    crashes = {r.case: r.doctor_errors for r in results if getattr(r, "doctor_errors", None)}  # inside the doctor
    gone = [r.case for r in results if not r.error and not r.skipped and not r.breaks_or_recompiles]
    errors = {r.case: r.error for r in results if r.error}
    items = [(r, it) for r in live for it in r.items]
    specific_cases = [r for r in live if r.items and all(it.specific for it in r.items)]
    wrong = [(r.case, it.what, it.code, it.kind, it.fix_detail) for r, it in items if it.fix == "wrong"]
    wrong_by_class = collections.Counter(it.wrong_class or "fix" for _, it in items if it.fix == "wrong")
    code_fixes = [it for _, it in items if it.fix in ("proven", "wrong", "unchecked", "inapplicable")]
    per_code: dict = collections.OrderedDict()
    for r, it in sorted(items, key=lambda p: (p[1].what, p[1].code)):
        k = per_code.setdefault(f"{it.what} {it.code}", {
            "items": 0, "specific": 0, "kinds": collections.Counter(), "proven": 0, "wrong": 0, "inapplicable": 0, "unchecked": 0,
            "cases_without_answer": [], "cases_wrong": [], "cases_captured": 0, "cases_located": 0, "cases": []})
        k["items"] += 1
        k["specific"] += it.specific
        k["kinds"][it.kind] += 1
        if it.fix in ("proven", "wrong", "inapplicable", "unchecked"):
            k[it.fix] += 1
        if not it.specific and r.case not in k["cases_without_answer"]:
            k["cases_without_answer"].append(r.case)
        if it.fix == "wrong" and r.case not in k["cases_wrong"]:
            k["cases_wrong"].append(r.case)
        if r.case not in k["cases"]:
            k["cases"].append(r.case)
            k["cases_captured"] += r.captured
            k["cases_located"] += r.located
    for k in per_code.values():
        k["kinds"] = dict(k["kinds"].most_common())
    return {
        "cases": len(live),
        "captured": sum(r.captured for r in live),
        "located": sum(r.located for r in live),
        "specific_cases": len(specific_cases),
        "specific_fraction": len(specific_cases) / len(live) if live else 0.0,
        "specific_target": target,
        "items": len(items),
        "specific_items": sum(it.specific for _, it in items),
        "fixes_proven": sum(it.fix == "proven" for _, it in items),
        "fixes_wrong": len(wrong),
        "fixes_unchecked": sum(it.fix == "unchecked" for _, it in items),
        "fixes_inapplicable": sum(it.fix == "inapplicable" for _, it in items),
        "inapplicable": [(r.case, it.what, it.code, it.kind, it.fix_detail) for r, it in items if it.fix == "inapplicable"],
        "wrong": wrong,
        "wrong_cases": len({c for c, *_ in wrong}),
        "wrong_by_class": dict(wrong_by_class.most_common()),
        "code_fixes": len(code_fixes),
        "code_fixes_proven_fraction": (sum(it.fix == "proven" for it in code_fixes) / len(code_fixes)) if code_fixes else 1.0,
        "without_answer": sorted({f"{it.what} {it.code}" for _, it in items if not it.specific}),
        "not_captured": [r.case for r in live if not r.captured],
        "not_located": {r.case: r.located_detail for r in live if not r.located},
        "no_longer_breaks": gone,
        "skipped": skipped,
        "crashes": crashes,
        "errors": errors,
        "per_code": per_code,
        "targets": {
            "captured_all": all(r.captured for r in live),
            "located_all": all(r.located for r in live),
            f"specific_{round(target * 100)}": (len(specific_cases) / len(live) if live else 0.0) >= target,
            "no_crash": not errors and not crashes,
            "no_wrong": not wrong,
            "every_fix_proven": all(it.fix == "proven" for it in code_fixes),
        },
    }


def print_cases(results: list[harness.Result]) -> None:
    print(f"{'case':58} {'torch':>10} {'report':>10} cap loc  answers (code=kind:fix)")
    for r in results:
        if r.error:
            print(f"{r.case:58} ERROR {r.error.splitlines()[0][:80]}")
            continue
        if r.skipped:
            print(f"{r.case:58} SKIPPED: {r.skipped}")
            continue
        if not r.breaks_or_recompiles:
            print(f"{r.case:58} no break or recompile on torch {torch.__version__}")
            continue
        answers = ", ".join(f"{it.code}={it.kind}" + (f":{it.fix}" if it.fix != "none" else "") for it in r.items)
        err = f"{r.torch_errors}e" if r.torch_errors else "  "
        print(f"{r.case:58} {r.torch_breaks:>3}b {r.torch_recompiles:>2}r{err} {r.report_breaks:>3}b {r.report_recompiles:>2}r"
              f"{(str(r.report_failures) + 'e') if r.torch_errors else '  '} "
              f"{'yes' if r.captured else 'NO ':3} {'yes' if r.located else 'NO ':3}  {answers}")


def print_summary(s: dict) -> None:
    print()
    print(f"{'GB code / recompile kind':34} {'items':>5} {'specific':>8} {'proven':>6} {'wrong':>5} {'inapp':>5} {'unchk':>5}  kinds given")
    for code, k in s["per_code"].items():
        kinds = ", ".join(f"{n}x{c}" for n, c in k["kinds"].items())
        print(f"{code:34} {k['items']:>5} {k['specific']:>8} {k['proven']:>6} {k['wrong']:>5} {k['inapplicable']:>5} {k['unchecked']:>5}  {kinds}")
    print()
    n = s["cases"]
    print(f"cases with a break or recompile: {n}  (no longer breaking on torch {torch.__version__}: {len(s['no_longer_breaks'])}; "
          f"could not run: {len(s['errors'])}; skipped: {len(s.get('skipped', {}))})")
    print(f"captured:         {_pct(s['captured'], n)}   target: all")
    print(f"located:          {_pct(s['located'], n)}   target: all")
    print(f"specific answer:  {_pct(s['specific_cases'], n)} of cases (every item specific); "
          f"{_pct(s['specific_items'], s['items'])} of items   target: >= {s.get('specific_target', TARGET_SPECIFIC):.0%} of cases")
    print(f"fixes: {s['fixes_proven']} proven, {s['fixes_wrong']} wrong, {s['fixes_inapplicable']} inapplicable "
          f"(mark a local the caller cannot reach), {s['fixes_unchecked']} not applied by the harness   target: 0 wrong, every fix proven")
    print(f"wrong answers by class: {s['wrong_by_class'] or 'none'} ({s['wrong_cases']} case(s))")
    print(f"crashes: {len(s.get('crashes', {}))} case(s) where the doctor raised, {len(s['errors'])} that could not run   target: none")
    for case, errs in s.get("crashes", {}).items():
        print(f"  CRASH {case}: {errs[0][:200]}")
    for case, what, code, kind, why in s["wrong"]:
        print(f"  WRONG {case}: {what} {code} -> {kind}: {why}")
    for case, what, code, kind, why in s["inapplicable"]:
        print(f"  INAPPLICABLE {case}: {what} {code} -> {kind}: {why}")
    for case, why in s["not_located"].items():
        print(f"  NOT LOCATED {case}: {why}")
    for case in s["not_captured"]:
        print(f"  NOT CAPTURED {case}")


def _result(d: dict) -> harness.Result:
    """A saved case back as a :class:`harness.Result` (for ``--merge``)."""
    d = dict(d)
    items = [harness.Item(**it) for it in d.pop("items", [])]
    known = {f.name for f in dataclasses.fields(harness.Result)}
    r = harness.Result(**{k: v for k, v in d.items() if k in known})
    r.items = items
    return r


def findings(results: list) -> str:
    """The wrong answers by class, then the cases without a specific answer, as Markdown."""
    out = ["# Doctor findings on the corpus (generated by benchmarks/doctor_coverage.py --findings)", ""]
    by_class: dict = collections.defaultdict(list)
    for r in results:
        for it in r.items:
            if it.fix == "wrong":
                by_class[it.wrong_class or "fix"].append((r, it))
    for cls, pairs in sorted(by_class.items(), key=lambda p: -len(p[1])):
        out.append(f"## wrong: {cls} ({len(pairs)} answer(s), {len({r.case for r, _ in pairs})} case(s))")
        for r, it in pairs:
            out.append(f"- `{r.case}` ({r.source}): {it.what} {it.code} -> `{it.kind}` \"{it.title}\": {it.fix_detail}")
        out.append("")
    out.append("## no specific answer")
    for r in results:
        for it in r.items:
            if not it.specific and it.what != "semantics":
                out.append(f"- `{r.case}` ({r.source}): {it.what} {it.code} -> `{it.kind}`")
    out.append("")
    return "\n".join(out)


def torch_release(version: str) -> str:
    """``"2.14.1"`` for ``"2.14.1+cu130"``: the release a result file is named after."""
    return version.split("+", 1)[0]


#: what a case's result says apart from its answers, compared by --diff
_CASE_FIELDS = ("torch_breaks", "torch_recompiles", "torch_errors", "report_breaks", "report_recompiles",
                "report_failures", "captured", "located", "same_as_eager", "error", "user_error")


def _answers(case: dict) -> list[str]:
    """A case's answers, one line each: ``break GB0811 at 4: iterator_input [proven]``, sorted."""
    out = []
    for it in case.get("items", []):
        at = f" at {it['line']}" if it.get("line") is not None else ""
        wrong = f" ({it['wrong_class']})" if it.get("fix") == "wrong" and it.get("wrong_class") else ""
        out.append(f"{it['what']} {it['code']}{at}: {it['kind']} [{it.get('fix', 'none')}{wrong}]")
    return sorted(out)


def _codes(case: dict, what: str) -> list[str]:
    return sorted(it["code"] for it in case.get("items", []) if it["what"] == what)


def diff_results(a: dict, b: dict) -> dict:
    """The differences between two result files of this benchmark (``a``, ``b``: their JSON),
    case by case: torch's and the report's counts, and the answers (each as :func:`_answers`
    writes it), with the GB codes torch gave the same case's breaks where they differ."""
    cases_a = {c["case"]: c for c in a.get("cases", [])}
    cases_b = {c["case"]: c for c in b.get("cases", [])}
    changed = []
    for name in [n for n in cases_a if n in cases_b]:
        ca, cb = cases_a[name], cases_b[name]
        notes = [f"{f}: {ca.get(f)!r} -> {cb.get(f)!r}" for f in _CASE_FIELDS if ca.get(f) != cb.get(f)]
        if _codes(ca, "break") != _codes(cb, "break"):
            notes.append(f"break codes: {', '.join(_codes(ca, 'break')) or 'none'} -> {', '.join(_codes(cb, 'break')) or 'none'}")
        ans_a, ans_b = _answers(ca), _answers(cb)
        if ans_a != ans_b:
            notes.append("answers differ")
        if notes:
            changed.append({"case": name, "module": ca.get("module", ""), "differences": notes,
                            "answers_a": ans_a, "answers_b": ans_b,
                            "only_a": [x for x in ans_a if x not in ans_b], "only_b": [x for x in ans_b if x not in ans_a]})

    def side(d: dict, path: str) -> dict:
        s = d.get("summary", {})
        return {"file": path, "torch": d.get("torch", ""), "date": d.get("date", ""), "cases": len(d.get("cases", [])),
                "modules": d.get("modules", []), "fixes_applied": d.get("fixes_applied"),
                "summary": {k: s.get(k) for k in sorted(s) if not isinstance(s.get(k), (dict, list))}}

    return {
        "a": side(a, a.get("_path", "")),
        "b": side(b, b.get("_path", "")),
        "cases_compared": sum(1 for n in cases_a if n in cases_b),
        "cases_changed": len(changed),
        "only_in_a": sorted(n for n in cases_a if n not in cases_b),
        "only_in_b": sorted(n for n in cases_b if n not in cases_a),
        "changed": changed,
    }


def print_diff(d: dict) -> None:
    a, b = d["a"], d["b"]
    print(f"a: torch {a['torch']} ({a['file']}, {a['cases']} cases)\nb: torch {b['torch']} ({b['file']}, {b['cases']} cases)")
    print(f"{d['cases_compared']} cases in both, {d['cases_changed']} changed; "
          f"{len(d['only_in_a'])} only in a, {len(d['only_in_b'])} only in b")
    for c in d["changed"]:
        print(f"\n{c['case']}")
        for n in c["differences"]:
            print(f"  {n}")
        for x in c["only_a"]:
            print(f"  - {x}")
        for x in c["only_b"]:
            print(f"  + {x}")
    for k in sorted(set(a["summary"]) | set(b["summary"])):
        if a["summary"].get(k) != b["summary"].get(k):
            print(f"summary {k}: {a['summary'].get(k)!r} -> {b['summary'].get(k)!r}")


def _diff_main(paths: list[str], out: str) -> int:
    files = []
    for p in paths:
        d = json.loads(Path(p).read_text())
        d["_path"] = os.path.relpath(p)
        files.append(d)
    d = diff_results(*files)
    print_diff(d)
    path = Path(out or ROOT / "benchmarks" / "results" / (
        f"doctor_coverage-diff-torch-{torch_release(files[0].get('torch', 'a'))}-vs-{torch_release(files[1].get('torch', 'b'))}.json"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(d, indent=1, default=str) + "\n")
    print(f"\nwrote {os.path.relpath(path)}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", default="", help="one part of the corpus: " + ", ".join(doctor_corpus.PARTS)
                    + " (default: pytorch-tests and real-code; the held_out part runs only when named)")
    ap.add_argument("--module", default="", help="comma-separated corpus modules (default: those of the two tuned parts): "
                    + ", ".join(doctor_corpus.MODULES + doctor_corpus.REAL_MODULES + doctor_corpus.HELD_OUT_MODULES))
    ap.add_argument("--merge", action="store_true", help="keep the other cases of --out, replacing the ones run now")
    ap.add_argument("--findings", default="", help="also write the wrong and unanswered cases, by class, as Markdown")
    ap.add_argument("--combine", default="", help="comma-separated result JSON files to join and summarise again, "
                    "without running any case (later files win for a case run in several)")
    ap.add_argument("--case", default="", help="comma-separated case names")
    ap.add_argument("--no-fixes", action="store_true", help="do not apply the fixes")
    ap.add_argument("--per-torch", action="store_true", help="name the result file after the torch that runs it "
                    "(doctor_coverage-cpu-torch-2.14.1.json), so each version's results are kept")
    ap.add_argument("--diff", nargs=2, metavar=("A.json", "B.json"), help="run no case: write the differences "
                    "between two result files (e.g. of two torch versions), case by case")
    ap.add_argument("--out", default="", help="the result file (default benchmarks/results/doctor_coverage-cpu.json; "
                    "with --diff, doctor_coverage-diff-torch-A-vs-B.json)")
    args = ap.parse_args(argv)
    if args.diff:
        return _diff_main(args.diff, args.out)
    results_dir = ROOT / "benchmarks" / "results"
    held = "-held_out" if args.part == "held_out" else ""  # the held-out part's results are kept in a file of their own
    args.out = args.out or str(results_dir / (f"doctor_coverage{held}-cpu-torch-{torch_release(torch.__version__)}.json"
                                              if args.per_torch else f"doctor_coverage{held}-cpu.json"))
    every = doctor_corpus.MODULES + doctor_corpus.REAL_MODULES + doctor_corpus.HELD_OUT_MODULES
    tuned = doctor_corpus.MODULES + doctor_corpus.REAL_MODULES  # the default run: the held-out part only when asked
    if args.part and args.part not in doctor_corpus.PARTS:
        ap.error(f"--part: no part {args.part}; there are {', '.join(doctor_corpus.PARTS)}")
    modules = [m for m in args.module.split(",") if m] or list(doctor_corpus.PARTS[args.part] if args.part else tuned)
    unknown = [m for m in modules if m not in every]
    if unknown:
        ap.error(f"--module: no corpus module {', '.join(unknown)}; there are {', '.join(every)}")
    cases = doctor_corpus.load(modules)
    if args.case:
        names = set(args.case.split(","))
        cases = [c for c in cases if c.name in names or c.id in names]
        if not cases:
            ap.error(f"--case: no case named {args.case}")
    t0 = time.perf_counter()
    results = []
    if args.combine:
        joined: dict = {}
        for f in args.combine.split(","):
            for d in json.loads(Path(f).read_text())["cases"]:
                joined[d["case"]] = _result(d)
        known = {c.id for c in doctor_corpus.load(list(every))}
        results = [r for r in joined.values() if r.case in known]  # cases since removed from the corpus are dropped
        cases = []
        modules = sorted({r.module for r in results}, key=lambda m: every.index(m) if m in every else 99)
    for c in cases:
        results.append(harness.run_case(c, fixes=not args.no_fixes))
        print(f"  [{len(results)}/{len(cases)}] {c.id} {results[-1].seconds:.1f}s", file=sys.stderr, flush=True)
    path = Path(args.out)
    if args.merge and path.exists():
        ran = {r.case for r in results}
        old = [_result(d) for d in json.loads(path.read_text())["cases"] if d["case"] not in ran]
        results = old + results
        modules = sorted({r.module for r in results}, key=lambda m: every.index(m) if m in every else 99)
    print_cases(results)
    parts = {name: [r for r in results if r.module in mods] for name, mods in doctor_corpus.PARTS.items()}
    summaries = {name: summarize(rs, TARGET_SPECIFIC_BY_PART.get(name, TARGET_SPECIFIC)) for name, rs in parts.items() if rs}
    s = summarize(results, TARGET_SPECIFIC_BY_PART.get(args.part, TARGET_SPECIFIC))
    for name, ps in summaries.items():
        print(f"\n===== part {name} =====")
        print_summary(ps)
    print(f"\n===== {'all the parts run' if len(summaries) > 1 else 'together'} =====")
    print_summary(s)
    if args.findings:
        Path(args.findings).write_text(findings(results))
        print(f"wrote {args.findings}")
    out = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.processor() or platform.machine(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "seconds": round(time.perf_counter() - t0, 1),
        "modules": modules,
        "fixes_applied": not args.no_fixes,
        "summary": s,
        "parts": summaries,
        "cases": [r.to_json() for r in results],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, default=str) + "\n")
    print(f"\nwrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
