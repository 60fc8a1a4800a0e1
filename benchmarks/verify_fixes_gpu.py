"""``--verify-fixes`` on a compiled transformers model (the GPU machine; runs on CPU too).

A tiny Llama (random weights, nothing downloaded) decodes greedily, one token per call of a
cell, as people write a generation loop in a notebook::

    logits = model(input_ids=ids).logits
    next_tok = logits[:, -1].argmax(-1, keepdim=True)
    ids = torch.cat([ids, next_tok], dim=1)        # the sequence grows: a recompile on its length
    eos_at = torch.nonzero(ids[0] == EOS)          # a graph break (a data-dependent output shape)

``run_cell(..., verify_fixes=True)`` (no IPython) runs the cell compiled, diagnoses it and tries
each suggested fix on the cell in a scratch compile of the same cell on copies of the same
inputs. The script prints each break and recompile with its fix and the check beside it,
what the verification covered, and proves that the user's state was left as it was: the
model's parameters and the sequence bit for bit, the random state, torch's config, and the
user's compiled cell (one more call compiles nothing). Writes the figures as JSON with
``--out``.

    python benchmarks/verify_fixes_gpu.py [--device cuda] [--backend inductor] [--budget 300] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import ipycompile  # noqa: E402
from ipycompile.run.runner import run_cell  # noqa: E402
from ipycompile.run.session import SESSION  # noqa: E402

CELL = """logits = model(input_ids=ids).logits
next_tok = logits[:, -1].argmax(-1, keepdim=True)
ids = torch.cat([ids, next_tok], dim=1)
eos_at = torch.nonzero(ids[0] == EOS)
"""


def tiny_llama(device: str):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    return LlamaForCausalLM(config).to(device).eval()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--backend", default="inductor", help="torch.compile backend (default: inductor)")
    ap.add_argument("--budget", type=float, default=300.0, help="verify_budget_s (default: 300)")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args(argv)

    model = tiny_llama(args.device)
    ns = {"torch": torch, "model": model, "ids": torch.randint(0, 128, (1, 8), device=args.device), "EOS": 2}
    with torch.no_grad():
        t0 = time.perf_counter()
        run = run_cell(CELL, ns, backend=args.backend, runs=3, warmup=2, record=False)  # the user's run
        user_s = time.perf_counter() - t0
        # the state verification must leave as it was: taken after the user's run, compared after verifying
        params = {k: v.detach().clone() for k, v in model.state_dict().items()}
        ids, rng = ns["ids"].clone(), torch.get_rng_state()
        cuda_rng = torch.cuda.get_rng_state_all() if args.device.startswith("cuda") else None
        config = torch._dynamo.config.get_config_copy()
        names = {k: id(v) for k, v in ns.items()}
        t0 = time.perf_counter()
        # the same cell again, reusing the compiled code, now with its fixes verified
        run = run_cell(CELL, ns, backend=args.backend, runs=1, warmup=0, record=False, verify_fixes=True,
                       verify_budget_s=args.budget)
        verify_s = time.perf_counter() - t0
    report = run.report
    # the second run itself ran the cell (more tokens, nothing random): the sequence must be the model's greedy
    # continuation of the one before it, token for token, as the user's untouched model gives it uncompiled
    with torch.no_grad():
        ref = ids
        for _ in range(ns["ids"].shape[1] - ids.shape[1]):
            ref = torch.cat([ref, model(input_ids=ref).logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    unchanged = {
        "parameters bit for bit": all(torch.equal(model.state_dict()[k], v) for k, v in params.items()),
        "sequence: the greedy continuation, token for token": torch.equal(ns["ids"], ref),
        "random state": torch.equal(torch.get_rng_state(), rng)
        and (cuda_rng is None or all(torch.equal(a, b) for a, b in zip(torch.cuda.get_rng_state_all(), cuda_rng))),
        "config": torch._dynamo.config.get_config_copy() == config,
        "names": {k: id(v) for k, v in ns.items()}.keys() == names.keys(),
    }
    cf, compiled = next((v for k, v in SESSION.compiled._cells.items() if k[0] == CELL), (None, None))
    with torch.no_grad(), ipycompile.capture() as cap:
        compiled()
    unchanged["one more call compiles nothing"] = len(cap.report.compiles) == 0

    rows = []
    print(f"torch {torch.__version__}, {args.device}, backend {args.backend}; the user's run {user_s:.1f} s, "
          f"the run with --verify-fixes {verify_s:.1f} s")
    for kind, items in (("break", report.graph_breaks), ("recompile", report.recompiles), ("failure", report.failures)):
        for x in items:
            s = x.suggestion
            what = getattr(x, "reason", "") or "; ".join(getattr(x, "reasons", [])[:1]) or getattr(x, "type", "")
            what = " ".join(str(what).split())[:120]
            check = s.check if s is not None else None
            row = {"item": kind, "what": what, "fix_kind": str(s.kind) if s else "",
                   "fix": (s.code or "").strip().splitlines()[0] if s and s.code else "",
                   "check": check.text if check else "", "status": str(check.status) if check else "",
                   "max_abs_diff": check.max_abs_diff if check else None, "torch_says": check.torch_says if check else "",
                   "seconds": check.seconds if check else None}
            rows.append(row)
            print(f"\n{kind}: {what}\n  fix ({row['fix_kind']}): {row['fix']}\n  {row['check'] or '(no check)'}")
            if row["torch_says"]:
                print(f"  torch, with the fix applied: {row['torch_says']}")
    v = report.fix_verification
    print(f"\n{v.text if v else 'no verification record'}\n{v.isolation if v else ''}")
    for t in v.together if v else ():
        print(f"settings together ({', '.join(t.together)}): {t.text}")
    print("\nthe user's state afterwards: " + ", ".join(f"{k}: {'yes' if ok else 'NO'}" for k, ok in unchanged.items()))
    result = {
        "torch": torch.__version__, "device": args.device,
        "device_name": torch.cuda.get_device_name() if args.device.startswith("cuda") else platform.processor(),
        "backend": args.backend, "budget_s": args.budget, "user_run_s": user_s, "verify_run_s": verify_s,
        "items": rows, "verification": v.text if v else "", "isolation": v.isolation if v else "",
        "compiles": v.compiles if v else 0, "spent_s": v.spent_s if v else 0.0,
        "together": [t.text for t in v.together] if v else [], "unchanged": unchanged,
    }
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
        print(f"written to {args.out}")
    ok = all(unchanged.values()) and any(r["status"] for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
