"""A LoRA adapter directory for GPT-2 as HuggingFace's PEFT saves one, written without PEFT (which Debian does not
package), and a float64 merge of one into its base to check `gpt2 export --merge-lora` against.

  peft_adapter.py make OUT --base HF_DIR --r 4 --alpha 8 --targets c_attn,c_proj [--rslora] [--dtype f32|f16|bf16]
      [--seed 1] [--b-std 0.1]
  peft_adapter.py merge-check BASE_HF_DIR ADAPTER_DIR MERGED_HF_DIR [--bar 1e-6]

make: adapter_config.json is every key of PEFT's LoraConfig as PeftModel.save_pretrained writes it (dataclass
asdict, runtime_config dropped; json.dumps(indent=2, sort_keys=True), no final newline; inference_mode true);
adapter_model.safetensors has PEFT's key names (base_model.model.transformer.h.N.attn.c_attn.lora_A.weight),
A (r, in) initialized as PEFT does (kaiming_uniform_ with a=sqrt(5): U(-1/sqrt(in), 1/sqrt(in))), B (out, r)
drawn N(0, b_std) instead of PEFT's zeros (a trained adapter; zeros would hide a swap of A and B), metadata
{"format": "pt"}, tensors sorted by name as the safetensors library lays them out (by dtype, then name).
Targets match module names by suffix as PEFT does: c_proj is attn.c_proj and mlp.c_proj.

merge-check: W + scale * (B @ A)^T in float64 for every adapted Conv1D weight (PEFT's merge with fan_in_fan_out:
HF stores Conv1D weights (in, out)), scale = alpha / r (or / sqrt(r) with use_rslora), against the merged
model's weights; prints max|ours - ref| / max|ref| per merged tensor and fails above --bar; every other
tensor must be unchanged, bit for bit.
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

MODULES = ["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"]


def shapes(C):
    """(in, out) of each target module."""
    return {"attn.c_attn": (C, 3 * C), "attn.c_proj": (C, C), "mlp.c_fc": (C, 4 * C), "mlp.c_proj": (4 * C, C)}


def selected(targets):
    """The modules PEFT's suffix match selects in a block."""
    return [m for m in MODULES if any(m == t or m.endswith("." + t) for t in targets)]


def peft_config(args, targets):
    """PEFT's LoraConfig as its save_pretrained dumps it (current PEFT; runtime_config is popped by to_dict)."""
    return {
        "alora_invocation_tokens": None, "alpha_pattern": {}, "auto_mapping": None,
        "base_model_name_or_path": args.base_name, "bias": "none", "corda_config": None,
        "ensure_weight_tying": False, "eva_config": None, "exclude_modules": None, "fan_in_fan_out": True,
        "inference_mode": True, "init_lora_weights": True, "layer_replication": None, "layers_pattern": None,
        "layers_to_transform": None, "loftq_config": {}, "lora_alpha": args.alpha, "lora_bias": False,
        "lora_dropout": args.dropout, "megatron_config": None, "megatron_core": "megatron.core",
        "modules_to_save": None, "peft_type": "LORA", "peft_version": "0.17.1", "qalora_group_size": 16,
        "r": args.r, "rank_pattern": {}, "revision": None, "target_modules": targets, "target_parameters": None,
        "task_type": "CAUSAL_LM", "trainable_token_indices": None, "use_dora": False, "use_qalora": False,
        "use_rslora": args.rslora,
    }


def make(args):
    with open(os.path.join(args.base, "config.json")) as f:
        base = json.load(f)
    C, L = base["n_embd"], base["n_layer"]
    targets = args.targets.split(",")
    torch.manual_seed(args.seed)
    tensors = {}
    for layer in range(L):
        for m in selected(targets):
            fan_in, fan_out = shapes(C)[m]
            a = torch.empty(args.r, fan_in)
            torch.nn.init.kaiming_uniform_(a, a=math.sqrt(5))
            b = torch.randn(fan_out, args.r) * args.b_std
            key = f"base_model.model.transformer.h.{layer}.{m}"
            tensors[key + ".lora_A.weight"] = a
            tensors[key + ".lora_B.weight"] = b
    os.makedirs(args.out, exist_ok=True)
    out, bf16 = {}, set()
    for name in sorted(tensors):
        t = tensors[name]
        if args.dtype == "bf16":
            out[name] = t.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
            bf16.add(name)
        else:
            out[name] = t.numpy().astype(np.float16 if args.dtype == "f16" else np.float32)
    safetensors_io.write(os.path.join(args.out, "adapter_model.safetensors"), out, {"format": "pt"}, bf16=bf16)
    with open(os.path.join(args.out, "adapter_config.json"), "w") as f:
        f.write(json.dumps(peft_config(args, targets), indent=2, sort_keys=True))
    print(f"wrote {args.out}: r {args.r}, alpha {args.alpha}, {len(tensors)} tensors over {L} layers")


def merge_check(args):
    base, _ = safetensors_io.read(os.path.join(args.base, "model.safetensors"))
    merged, _ = safetensors_io.read(os.path.join(args.merged, "model.safetensors"))
    adapter, _ = safetensors_io.read(os.path.join(args.adapter, "adapter_model.safetensors"))
    with open(os.path.join(args.adapter, "adapter_config.json")) as f:
        cfg = json.load(f)
    r = cfg["r"]
    scale = cfg["lora_alpha"] / (math.sqrt(r) if cfg.get("use_rslora") else r)
    prefix = "transformer." if any(k.startswith("transformer.") for k in base) else ""
    done, worst, ok = set(), 0.0, True
    for key in sorted(adapter):
        if not key.endswith(".lora_A.weight"):
            continue
        module = key[len("base_model.model.transformer."):-len(".lora_A.weight")]
        name = prefix + module + ".weight"
        A = torch.from_numpy(np.array(adapter[key], dtype=np.float64))
        B = torch.from_numpy(np.array(adapter[key.replace(".lora_A.", ".lora_B.")], dtype=np.float64))
        W = torch.from_numpy(np.array(base[name], dtype=np.float64))  # Conv1D: (in, out)
        ref = W + (B @ A).T * scale  # PEFT's merge: transpose(B @ A, fan_in_fan_out) * scaling
        ours = torch.from_numpy(np.array(merged[name], dtype=np.float64))
        rel = ((ours - ref).abs().max() / ref.abs().max()).item()
        changed = (ref - W).abs().max().item()
        print(f"{name}: max|ours-ref|/max|ref| = {rel:.2e} (the merge moved it by up to {changed:.3g})")
        worst = max(worst, rel)
        ok = ok and rel <= args.bar and changed > 0
        done.add(name)
    for name in base:
        if name not in done and not np.array_equal(base[name], merged[name]):
            print(f"{name}: changed by the merge, expected as it was")
            ok = False
    print(f"{len(done)} merged tensors, worst {worst:.2e} (bar {args.bar:g}); {len(base) - len(done)} others unchanged")
    sys.exit(0 if ok and done else 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("out")
    m.add_argument("--base", required=True, help="HF directory of the base (config.json gives the geometry)")
    m.add_argument("--base-name", default="gpt2", help="base_model_name_or_path")
    m.add_argument("--r", type=int, default=8)
    m.add_argument("--alpha", type=int, default=8)
    m.add_argument("--dropout", type=float, default=0.0)
    m.add_argument("--targets", default="c_attn")
    m.add_argument("--rslora", action="store_true")
    m.add_argument("--dtype", choices=["f32", "f16", "bf16"], default="f32")
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--b-std", type=float, default=0.1)
    c = sub.add_parser("merge-check")
    c.add_argument("base")
    c.add_argument("adapter")
    c.add_argument("merged")
    c.add_argument("--bar", type=float, default=1e-6)
    args = p.parse_args()
    make(args) if args.cmd == "make" else merge_check(args)


if __name__ == "__main__":
    main()
