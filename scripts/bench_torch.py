#!/usr/bin/env python3
"""The training step of tests/bench_train.cpp in PyTorch, for `make bench`'s ratio: GPT-2 124M with
random weights, one forward + backward + clip_grad_norm_ + AdamW step per iteration, fp32, on the same
threads. Prints one line per shape, `torch 124M B=4 T=64: 3512 ms/step (median of 10)`; with --autocast the
forward runs under torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's bf16 mixed precision (fp32 weights
and optimizer), and the lines read `torch bf16 124M ...`. Not a reference for numerics (scripts/reference.py
is); written from the math like it, no nn.Module zoo.
usage: bench_torch.py [--threads N] [--steps N] [--warmup N] [--autocast] [BxT ...]   (default shapes 4x64 8x256 1x1024)
run_bench (tests/bench_torch.cpp) runs it under `python3 -u`, so each line shows as soon as it is printed.
"""
import argparse
import math
import statistics
import time

import torch
import torch.nn.functional as F


def build(L=12, C=768, V=50257, maxT=1024, gen=None):
    def w(*shape, std=0.02):
        return (torch.randn(*shape, generator=gen) * std).requires_grad_()

    def z(*shape, value=0.0):
        return torch.full(shape, value).requires_grad_()

    p = {"wte": w(V, C), "wpe": w(maxT, C), "lnfw": z(C, value=1.0), "lnfb": z(C)}
    for l in range(L):
        p.update({f"{l}.ln1w": z(C, value=1.0), f"{l}.ln1b": z(C), f"{l}.qkvw": w(3 * C, C), f"{l}.qkvb": z(3 * C),
                  f"{l}.projw": w(C, C, std=0.02 / math.sqrt(2 * L)), f"{l}.projb": z(C),
                  f"{l}.ln2w": z(C, value=1.0), f"{l}.ln2b": z(C), f"{l}.fcw": w(4 * C, C), f"{l}.fcb": z(4 * C),
                  f"{l}.fcprojw": w(C, 4 * C, std=0.02 / math.sqrt(2 * L)), f"{l}.fcprojb": z(C)})
    return p


def loss_fn(p, x, y, L=12, NH=12):
    B, T = x.shape
    C = p["wte"].shape[1]
    h = p["wte"][x] + p["wpe"][:T]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for l in range(L):
        a = F.layer_norm(h, (C,), p[f"{l}.ln1w"], p[f"{l}.ln1b"])
        q, k, v = F.linear(a, p[f"{l}.qkvw"], p[f"{l}.qkvb"]).split(C, dim=2)
        q, k, v = (t.view(B, T, NH, C // NH).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // NH)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y_att = (att @ v).transpose(1, 2).reshape(B, T, C)
        h = h + F.linear(y_att, p[f"{l}.projw"], p[f"{l}.projb"])
        m = F.layer_norm(h, (C,), p[f"{l}.ln2w"], p[f"{l}.ln2b"])
        m = F.gelu(F.linear(m, p[f"{l}.fcw"], p[f"{l}.fcb"]), approximate="tanh")
        h = h + F.linear(m, p[f"{l}.fcprojw"], p[f"{l}.fcprojb"])
    h = F.layer_norm(h, (C,), p["lnfw"], p["lnfb"])
    logits = F.linear(h, p["wte"])  # tied lm_head
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0, help="0: torch's default")
    ap.add_argument("--steps", type=int, default=10, help="steps timed (the median is printed)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first (AdamW allocates its state)")
    ap.add_argument("--autocast", action="store_true", help="bf16 autocast for the forward")
    ap.add_argument("shapes", nargs="*", default=["4x64", "8x256", "1x1024"])
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(1)
    p = build(gen=gen)
    decay = [t for n, t in p.items() if t.dim() == 2]
    no_decay = [t for n, t in p.items() if t.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-4)
    for shape in args.shapes:
        B, T = (int(s) for s in shape.split("x"))
        x = torch.randint(0, 50257, (B, T), generator=gen)
        y = torch.randint(0, 50257, (B, T), generator=gen)
        times = []
        for step in range(args.warmup + args.steps):
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=False)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.autocast):
                loss = loss_fn(p, x, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(p.values(), 1.0)
            opt.step()
            if step >= args.warmup:
                times.append(time.perf_counter() - t0)
        kind = "torch bf16" if args.autocast else "torch"
        print(f"{kind} 124M B={B} T={T}: {statistics.median(times) * 1e3:.0f} ms/step "
              f"(median of {args.steps}, {torch.get_num_threads()} threads)", flush=True)


if __name__ == "__main__":
    main()
