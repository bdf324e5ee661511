#!/usr/bin/env python3
"""PyTorch reference for gpt2.cpp's LoRA training, in float64 on the stored fp32 values, written from the math:
reference.py's GPT-2 with, on each adapted Conv1D, y += scale * (x @ A^T) @ B^T (two matmuls; A (r, in),
B (out, r) as PEFT stores them, scale = lora_alpha / r, or / sqrt(r) with use_rslora), the base frozen.

  lora_reference.py --model HF_DIR --adapter PEFT_DIR --dump-out FILE [-B 2 -T 16 --seed 0 --steps 5 --lr 1e-3]

The dump (safetensors) holds x, y (I32 (B, T)), logits (B, T, V), loss, grad.<PEFT key> for every adapter
tensor, and `losses`: the loss before each of --steps torch.optim.AdamW updates of the adapter alone on the
same batch (weight decay on every adapter matrix, as gpt2 train --lora decays them; no clipping), with the
optimizer's settings in the metadata: what `gpt2 compare --lora-from` reads.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402
from reference import gpt2_logits, read_hf_model  # noqa: E402

PREFIX = "base_model.model.transformer."


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--adapter", required=True)
    ap.add_argument("--dump-out", required=True)
    ap.add_argument("-B", "--batch", type=int, default=2)
    ap.add_argument("-T", "--tokens", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.999)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    base = {k: v.double() for k, v in read_hf_model(args.model, args).items()}  # frozen
    with open(os.path.join(args.adapter, "adapter_config.json")) as f:
        cfg = json.load(f)
    r, alpha = cfg["r"], cfg["lora_alpha"]
    scale = alpha / math.sqrt(r) if cfg.get("use_rslora") else alpha / r
    tensors, _ = safetensors_io.read(os.path.join(args.adapter, "adapter_model.safetensors"))
    lora = {k: torch.from_numpy(np.array(v, dtype=np.float32)).double().requires_grad_(True)
            for k, v in tensors.items()}

    def adapt(module, x):
        key = PREFIX + module
        if key + ".lora_A.weight" not in lora:
            return 0
        return scale * ((x @ lora[key + ".lora_A.weight"].T) @ lora[key + ".lora_B.weight"].T)

    gen = torch.Generator().manual_seed(args.seed)
    x = torch.randint(0, args.vocab, (args.batch, args.tokens), generator=gen)
    y = torch.randint(0, args.vocab, (args.batch, args.tokens), generator=gen)
    loss_of = lambda logits: torch.nn.functional.cross_entropy(logits.view(-1, args.vocab), y.view(-1))
    logits = gpt2_logits(base, x, args.layers, args.heads, adapt)
    loss = loss_of(logits)
    loss.backward()
    out = {"x": x.int().numpy(), "y": y.int().numpy(), "logits": logits.detach().float().numpy(),
           "loss": np.array([loss.item()], dtype=np.float32)}
    for k, v in lora.items():
        out["grad." + k] = v.grad.float().numpy()
    opt = torch.optim.AdamW(list(lora.values()), lr=args.lr, betas=(args.beta1, args.beta2), eps=args.eps,
                            weight_decay=args.weight_decay)
    losses = []
    for _ in range(args.steps):
        opt.zero_grad()
        step_loss = loss_of(gpt2_logits(base, x, args.layers, args.heads, adapt))
        losses.append(step_loss.item())
        step_loss.backward()
        opt.step()
    out["losses"] = np.array(losses, dtype=np.float32)
    meta = {"lr": args.lr, "beta1": args.beta1, "beta2": args.beta2, "eps": args.eps,
            "weight_decay": args.weight_decay, "dtype": "float64", "torch": torch.__version__}
    safetensors_io.write(args.dump_out, out, meta)
    print(f"reference: loss {loss.item():.6f}, {len(lora)} adapter tensors (r {r}, scale {scale:g}), {args.steps} "
          f"AdamW losses {losses[0]:.6f} .. {losses[-1]:.6f} -> {args.dump_out}")


if __name__ == "__main__":
    main()
