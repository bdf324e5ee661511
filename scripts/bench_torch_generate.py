#!/usr/bin/env python3
"""Decode speed of PyTorch (CPU, fp32) on the 124M geometry with a KV cache, for `make bench`: a 64-token
prompt in one pass, then 64 greedy single-token steps, each attending over cached keys and values.
Prints `torch decode <tok/s> tok/s`. The model is our own from the math, as in reference.py.
Threads: run_bench (tests/bench_torch.cpp) runs it under `python3 -u` with OMP_NUM_THREADS=1 and
OPENBLAS_NUM_THREADS=<its threads>, PyTorch's fastest setting on this 2-core machine (16.9 tok/s against 6.2
with torch's default of 2 intra-op threads, whose spinning competes with OpenBLAS's own threads)."""
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as R  # noqa: E402


def step(p, ids, pos0, cache, L, NH):
    """Forward of `ids` at positions pos0.. appending to cache[l] = (k, v); returns last logits."""
    T = ids.shape[1]
    C = p["wte.weight"].shape[1]
    h = p["wte.weight"][ids] + p["wpe.weight"][pos0:pos0 + T]
    for l in range(L):
        q = f"h.{l}."
        a = R.layernorm(h, p[q + "ln_1.weight"], p[q + "ln_1.bias"])
        qkv = a @ p[q + "attn.c_attn.weight"] + p[q + "attn.c_attn.bias"]
        qh, kh, vh = (t.view(1, T, NH, C // NH).transpose(1, 2) for t in qkv.split(C, dim=2))
        if cache[l] is not None:
            kh, vh = torch.cat([cache[l][0], kh], 2), torch.cat([cache[l][1], vh], 2)
        cache[l] = (kh, vh)
        att = (qh @ kh.transpose(-2, -1)) / math.sqrt(C // NH)
        if T > 1:
            att = att.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool)), float("-inf"))
        y = (torch.softmax(att, -1) @ vh).transpose(1, 2).reshape(1, T, C)
        h = h + y @ p[q + "attn.c_proj.weight"] + p[q + "attn.c_proj.bias"]
        m = R.layernorm(h, p[q + "ln_2.weight"], p[q + "ln_2.bias"])
        h = h + R.gelu_tanh(m @ p[q + "mlp.c_fc.weight"] + p[q + "mlp.c_fc.bias"]) @ p[q + "mlp.c_proj.weight"] + \
            p[q + "mlp.c_proj.bias"]
    h = R.layernorm(h[:, -1:], p["ln_f.weight"], p["ln_f.bias"])
    return (h @ p["wte.weight"].T)[0, -1]


def main():
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1)))

    class A:
        layers, heads, channels, vocab, seq_len = 12, 12, 768, 50257, 1024
    p = R.random_model(A, torch.Generator().manual_seed(1))
    prompt = torch.tensor([[(i * 7919) % 50257 for i in range(64)]])
    rates = []
    with torch.no_grad():
        for rep in range(4):
            cache = [None] * A.layers
            logits = step(p, prompt, 0, cache, A.layers, A.heads)
            t0 = time.time()
            for i in range(64):
                tok = torch.argmax(logits).view(1, 1)
                logits = step(p, tok, 64 + i, cache, A.layers, A.heads)
            if rep:
                rates.append(64 / (time.time() - t0))
    rates.sort()
    print(f"torch decode {rates[len(rates) // 2]:.1f} tok/s (torch {torch.__version__}, {torch.get_num_threads()} threads)")


if __name__ == "__main__":
    main()
