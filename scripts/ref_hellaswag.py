#!/usr/bin/env python3
"""PyTorch reference for `gpt2 eval --hellaswag`: HellaSwag scored completion-style, as llm.c's
dev/data/hellaswag.py defines it, in float64 on the exact fp32 weights of a HuggingFace-layout model.

Each candidate is the ids of ctx followed by the ids of " " + ending; its losses are the cross-entropies of
the ending's tokens (each predicted from the position before it), summed (acc) and averaged (acc_norm); the
prediction is the candidate with the lowest loss (the first on a tie). Every candidate runs alone through
scripts/reference.py's forward, unpadded and unbatched, so nothing here shares the C++ batching.

Token ids come from `gpt2 tokenize --ids` (--gpt2, --tokenizer): this checks the scoring, not the BPE,
which tests/ref_tokenizer.sh checks against its own oracle.

  --ref-out FILE     the reference's scores (JSON lines as gpt2 writes them); --ref-in FILE reads them back
  --expect-out FILE  the three lines gpt2 prints (examples, acc, acc_norm), from the reference's choices
  --check FILE       compare gpt2's --hellaswag-scores output: every choice must agree and every loss must be
                     within --tol of the reference, as max |ours - ref| / max |ref|; exit 1 otherwise
The fixture must be meaningful: each example's best and second-best loss differ by more than fp32 rounding
(1e-6 relative, about 8 ulps), and acc and acc_norm choose differently on at least one example (exit 1 otherwise).
"""
import argparse
import json
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402


def token_ids(gpt2, tokenizer, text):
    out = subprocess.run([gpt2, "tokenize", "--ids", "--tokenizer", tokenizer, "-"], input=text.encode("utf-8"),
                         capture_output=True, check=True)
    return [int(t) for t in out.stdout.split()]


def score(p, args, ctx, endings):
    """(summed losses, mean losses) of the 4 candidates."""
    sums, means = [], []
    for ids in endings:
        tokens = torch.tensor([ctx + ids])
        logits = reference.gpt2_logits(p, tokens, args.layers, args.heads)[0]
        losses = torch.nn.functional.cross_entropy(logits[:-1], tokens[0, 1:], reduction="none")
        ending = losses[len(ctx) - 1:]  # token len(ctx)+k is predicted at position len(ctx)+k-1
        assert len(ending) == len(ids)
        sums.append(ending.sum().item())
        means.append(ending.mean().item())
    return sums, means


def argmin(v):
    return min(range(len(v)), key=lambda j: (v[j], j))


def gap(v):
    """Distance from the lowest value to the next, relative to the lowest."""
    s = sorted(v)
    return (s[1] - s[0]) / abs(s[0])


def reference_scores(args):
    params = reference.read_hf_model(args.model, args)
    p = {k: v.to(torch.float64) for k, v in params.items()}
    ref = []
    with torch.no_grad(), open(args.data, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            ex = json.loads(line)
            ctx = token_ids(args.gpt2, args.tokenizer, ex["ctx"])
            endings = [token_ids(args.gpt2, args.tokenizer, " " + e) for e in ex["endings"]]
            sums, means = score(p, args, ctx, endings)
            ref.append({"line": line_no, "label": ex["label"], "sum": sums, "mean": means, "pred": argmin(sums),
                        "pred_norm": argmin(means)})
    return ref


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="HuggingFace-layout model directory")
    ap.add_argument("--data", help="HellaSwag JSONL")
    ap.add_argument("--gpt2", default="./gpt2", help="binary whose `tokenize --ids` gives the token ids")
    ap.add_argument("--tokenizer", help="tokenizer directory for --gpt2")
    ap.add_argument("--ref-out", help="write the reference's scores here (JSON lines, the layout gpt2 writes)")
    ap.add_argument("--ref-in", help="read the reference's scores from an earlier --ref-out instead of computing")
    ap.add_argument("--expect-out", help="write the lines gpt2 eval --hellaswag should print")
    ap.add_argument("--check", help="gpt2's --hellaswag-scores file to compare")
    ap.add_argument("--tol", type=float, default=1e-5)
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)

    if args.ref_in:
        with open(args.ref_in) as f:
            ref = [json.loads(line) for line in f]
    else:
        if not (args.model and args.data and args.tokenizer):
            ap.error("--model, --data and --tokenizer are needed unless --ref-in is given")
        ref = reference_scores(args)
        if args.ref_out:
            with open(args.ref_out, "w") as f:
                f.writelines(json.dumps(r) + "\n" for r in ref)

    n = len(ref)
    correct = sum(r["pred"] == r["label"] for r in ref)
    correct_norm = sum(r["pred_norm"] == r["label"] for r in ref)
    differ = sum(r["pred"] != r["pred_norm"] for r in ref)
    min_gap = min(min(gap(r["sum"]), gap(r["mean"])) for r in ref)
    print(f"reference: {n} examples, acc {correct}/{n}, acc_norm {correct_norm}/{n}; acc and acc_norm choose "
          f"differently on {differ}; smallest relative gap between the best two losses {min_gap:.2e}")
    if min_gap < 1e-6:  # about 8 fp32 ulps: closer than that, rounding alone may flip a choice
        sys.exit(f"error: a best and second-best loss are {min_gap:.2e} apart, within fp32 noise: "
                 "the fixture cannot tell right from wrong; change it")
    if differ == 0:
        sys.exit("error: acc and acc_norm choose the same ending everywhere: the fixture cannot tell sum from mean")
    if args.expect_out:
        with open(args.expect_out, "w") as f:
            f.write(f"hellaswag {n} examples\n")
            f.write(f"acc {correct / n:.4f} ({correct}/{n})\n")
            f.write(f"acc_norm {correct_norm / n:.4f} ({correct_norm}/{n})\n")
    if not args.check:
        return
    with open(args.check) as f:
        ours = [json.loads(line) for line in f]
    ok = len(ours) == n
    if not ok:
        print(f"FAIL {args.check} has {len(ours)} examples, the reference {n}")
    for key in ("sum", "mean"):
        if not ok:
            break
        diff = max(abs(a - b) for o, r in zip(ours, ref) for a, b in zip(o[key], r[key]))
        scale = max(abs(b) for r in ref for b in r[key])
        rel = diff / scale
        pred = "pred" if key == "sum" else "pred_norm"
        agree = sum(o[pred] == r[pred] and o["line"] == r["line"] for o, r in zip(ours, ref))
        print(f"{key} losses: max |ours - ref| / max |ref| = {rel:.2e} (tol {args.tol:g}); "
              f"{pred} agrees on {agree}/{n}")
        ok = ok and rel <= args.tol and agree == n
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
