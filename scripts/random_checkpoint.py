"""Writes a GPT-2 checkpoint of random weights in HuggingFace's layout (config.json + model.safetensors), at
one of the four published sizes or any geometry: what scripts/xl_finetune.sh fine-tunes, since the real
weights cannot be downloaded everywhere. Weights are GPT-2's init (N(0, 0.02), the residual projections
N(0, 0.02 / sqrt(2L))), LayerNorm weights 1 and biases 0. The file is written tensor by tensor (a 1.56B
model never sits in memory twice), to a temporary name renamed at the end.

    /usr/bin/python3 scripts/random_checkpoint.py --size gpt2-xl --out data/gpt2-xl-random
"""
import argparse
import json
import math
import os
import struct
import sys

try:
    import numpy as np
except ImportError:
    sys.exit(f"error: numpy not found ({sys.executable}): expected a Python with numpy (Debian: apt-get install "
             "python3-numpy); without Python, ./gpt2 train --layers 12 --heads 12 --channels 768 --seq-len 1024 "
             "--steps 0 --out DIR writes a random 124M checkpoint too")

SIZES = {"gpt2": (12, 12, 768), "gpt2-medium": (24, 16, 1024), "gpt2-large": (36, 20, 1280),
         "gpt2-xl": (48, 25, 1600)}


def tensors(L, C, V, maxT):
    """(HF name, shape, init) in HuggingFace's order; init is a std or the constant 1.0 / 0.0."""
    out = [("wte.weight", (V, C), 0.02), ("wpe.weight", (maxT, C), 0.02)]
    proj = 0.02 / math.sqrt(2 * L)
    for l in range(L):
        p = f"h.{l}."
        out += [(p + "ln_1.weight", (C,), 1.0), (p + "ln_1.bias", (C,), 0.0),
                (p + "attn.c_attn.weight", (C, 3 * C), 0.02), (p + "attn.c_attn.bias", (3 * C,), 0.0),
                (p + "attn.c_proj.weight", (C, C), proj), (p + "attn.c_proj.bias", (C,), 0.0),
                (p + "ln_2.weight", (C,), 1.0), (p + "ln_2.bias", (C,), 0.0),
                (p + "mlp.c_fc.weight", (C, 4 * C), 0.02), (p + "mlp.c_fc.bias", (4 * C,), 0.0),
                (p + "mlp.c_proj.weight", (4 * C, C), proj), (p + "mlp.c_proj.bias", (C,), 0.0)]
    return out + [("ln_f.weight", (C,), 1.0), ("ln_f.bias", (C,), 0.0)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=sorted(SIZES), help="a published geometry (else --layers, --heads, --channels)")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--channels", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, help="directory to create (config.json, model.safetensors)")
    args = ap.parse_args()
    L, NH, C = SIZES[args.size] if args.size else (args.layers, args.heads, args.channels)
    table = tensors(L, C, args.vocab, args.seq_len)
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, _ in table:
        n = 4 * math.prod(shape)
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "model.safetensors")
    tmp = f"{path}.tmp.{os.getpid()}"
    rng = np.random.default_rng(args.seed)
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, shape, init in table:
            if init in (0.0, 1.0):
                t = np.full(shape, init, dtype=np.float32)
            else:
                t = rng.standard_normal(shape, dtype=np.float32)
                t *= np.float32(init)
            f.write(t.astype("<f4", copy=False).tobytes())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
              "layer_norm_epsilon": 1e-05, "n_ctx": args.seq_len, "n_positions": args.seq_len, "n_embd": C,
              "n_head": NH, "n_layer": L, "vocab_size": args.vocab}
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    params = sum(math.prod(s) for _, s, _ in table)
    print(f"wrote {path}: {L} layers, {NH} heads, {C} channels, {params / 1e6:.1f}M parameters, "
          f"{(offset + len(text) + 8) / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
