#!/usr/bin/env python3
"""PyTorch reference for gpt2.cpp, written from the math (no nn.Module, no transformers).

Given a geometry and a seed it writes
  * a random GPT-2 in HuggingFace's layout (config.json + model.safetensors, Conv1D weights stored
    (in, out), causal-mask buffers h.{l}.attn.bias included as older exports have them), and
  * a reference dump (safetensors): x, y (I32 (B, T)), logits (B, T, V), loss, grad.<HF name> for every
    parameter (HF orientation), and `losses`, the loss before each of --steps AdamW updates on the same
    batch (torch.optim.AdamW; weight decay on 2-D tensors only, no clipping).
The maths runs in float64 by default on the exact fp32 weights stored, so the dump is the true value the
fp32 C++ code is measured against; --dtype float32 gives PyTorch's own fp32 result instead.
  --layernorm-fixture FILE writes nn.LayerNorm's output on a fixed input, for the kernel test.
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


def hf_names(n_layer):
    """(name, is 2-D decayed weight) in HuggingFace order."""
    names = [("wte.weight", True), ("wpe.weight", True)]
    for l in range(n_layer):
        p = f"h.{l}."
        names += [(p + "ln_1.weight", False), (p + "ln_1.bias", False), (p + "attn.c_attn.weight", True),
                  (p + "attn.c_attn.bias", False), (p + "attn.c_proj.weight", True), (p + "attn.c_proj.bias", False),
                  (p + "ln_2.weight", False), (p + "ln_2.bias", False), (p + "mlp.c_fc.weight", True),
                  (p + "mlp.c_fc.bias", False), (p + "mlp.c_proj.weight", True), (p + "mlp.c_proj.bias", False)]
    return names + [("ln_f.weight", False), ("ln_f.bias", False)]


def hf_shape(name, C, V, maxT):
    if name == "wte.weight":
        return (V, C)
    if name == "wpe.weight":
        return (maxT, C)
    table = {"attn.c_attn.weight": (C, 3 * C), "attn.c_attn.bias": (3 * C,), "attn.c_proj.weight": (C, C),
             "mlp.c_fc.weight": (C, 4 * C), "mlp.c_fc.bias": (4 * C,), "mlp.c_proj.weight": (4 * C, C)}
    for suffix, shape in table.items():
        if name.endswith(suffix):
            return shape
    return (C,)  # LayerNorm weights/biases and projection biases


def random_model(args, gen):
    """fp32 tensors. GPT-2's init for weights; LayerNorm and biases get random values too, so that a
    mix-up of two tensors in a loader changes the result."""
    C, L = args.channels, args.layers
    params = {}
    for name, is_weight in hf_names(L):
        shape = hf_shape(name, C, args.vocab, args.seq_len)
        if is_weight:
            std = 0.02 / math.sqrt(2 * L) if name.endswith("c_proj.weight") else 0.02
            t = torch.randn(shape, generator=gen) * std
        elif name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
            t = 1.0 + 0.1 * torch.randn(shape, generator=gen)
        else:
            t = 0.02 * torch.randn(shape, generator=gen)
        params[name] = t.float()
    return params


def read_hf_model(indir, args):
    """Loads a HuggingFace-layout GPT-2 (ours or anyone's) and sets the geometry in args from config.json."""
    with open(os.path.join(indir, "config.json")) as f:
        cfg = json.load(f)
    args.layers, args.heads, args.channels = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
    args.vocab, args.seq_len = cfg["vocab_size"], cfg.get("n_positions", cfg.get("n_ctx"))
    tensors, _ = safetensors_io.read(os.path.join(indir, "model.safetensors"))
    params = {}
    for name, _ in hf_names(args.layers):
        t = tensors.get(name, tensors.get("transformer." + name))
        params[name] = torch.from_numpy(np.array(t, dtype=np.float32))
    return params


def layernorm(x, w, b, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)  # population variance
    return (x - mean) / torch.sqrt(var + eps) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gpt2_logits(p, x, L, NH, adapt=lambda module, x: 0):
    """adapt(module, x): a term added to the Conv1D `module`'s output ("h.0.attn.c_attn"), e.g. a LoRA's."""
    B, T = x.shape
    C = p["wte.weight"].shape[1]
    h = p["wte.weight"][x] + p["wpe.weight"][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(L):
        q = f"h.{l}."
        a = layernorm(h, p[q + "ln_1.weight"], p[q + "ln_1.bias"])
        qkv = a @ p[q + "attn.c_attn.weight"] + p[q + "attn.c_attn.bias"] + adapt(q + "attn.c_attn", a)  # x W + b
        qh, kh, vh = (t.view(B, T, NH, C // NH).transpose(1, 2) for t in qkv.split(C, dim=2))
        att = (qh @ kh.transpose(-2, -1)) / math.sqrt(C // NH)
        att = torch.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        y = (att @ vh).transpose(1, 2).reshape(B, T, C)
        h = h + y @ p[q + "attn.c_proj.weight"] + p[q + "attn.c_proj.bias"] + adapt(q + "attn.c_proj", y)
        m = layernorm(h, p[q + "ln_2.weight"], p[q + "ln_2.bias"])
        m = gelu_tanh(m @ p[q + "mlp.c_fc.weight"] + p[q + "mlp.c_fc.bias"] + adapt(q + "mlp.c_fc", m))
        h = h + m @ p[q + "mlp.c_proj.weight"] + p[q + "mlp.c_proj.bias"] + adapt(q + "mlp.c_proj", m)
    h = layernorm(h, p["ln_f.weight"], p["ln_f.bias"])
    return h @ p["wte.weight"].T  # lm_head tied to wte


def write_hf_model(outdir, params, args, prefix=""):
    os.makedirs(outdir, exist_ok=True)
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
              "layer_norm_epsilon": 1e-05, "n_ctx": args.seq_len, "n_positions": args.seq_len,
              "n_embd": args.channels, "n_head": args.heads, "n_layer": args.layers, "vocab_size": args.vocab}
    with open(os.path.join(outdir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    tensors = {prefix + k: v.numpy() for k, v in params.items()}
    mask = np.tril(np.ones((args.seq_len, args.seq_len), dtype=np.float32))[None, None]
    for l in range(args.layers):
        tensors[f"{prefix}h.{l}.attn.bias"] = mask
    safetensors_io.write(os.path.join(outdir, "model.safetensors"), tensors, {"format": "pt"})


def reference_dump(path, params32, args, gen):
    dtype = getattr(torch, args.dtype)
    x = torch.randint(0, args.vocab, (args.batch, args.tokens), generator=gen)
    y = torch.randint(0, args.vocab, (args.batch, args.tokens), generator=gen)
    if args.masked:  # a loss mask's -1: about half the targets not scored, the first of each row always scored
        y[torch.rand((args.batch, args.tokens), generator=gen) < 0.5] = -1
        y[:, 0] = torch.randint(0, args.vocab, (args.batch,), generator=gen)
    p = {k: v.to(dtype).clone().requires_grad_(True) for k, v in params32.items()}
    logits = gpt2_logits(p, x, args.layers, args.heads)
    logits.retain_grad()
    # ignore_index=-1: the mean over the scored targets (nanoGPT's and nanochat's answer-only loss)
    loss = torch.nn.functional.cross_entropy(logits.view(-1, args.vocab), y.view(-1), ignore_index=-1)
    loss.backward()
    out = {"x": x.int().numpy(), "y": y.int().numpy(), "logits": logits.detach().float().numpy(),
           "loss": np.array([loss.item()], dtype=np.float32)}
    if args.masked:
        out["dlogits"] = logits.grad.float().numpy()
    for k, v in p.items():
        out["grad." + k] = v.grad.float().numpy()

    decay = {name for name, is_weight in hf_names(args.layers) if is_weight}
    groups = [{"params": [p[k] for k in p if k in decay], "weight_decay": args.weight_decay},
              {"params": [p[k] for k in p if k not in decay], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=args.lr, betas=(args.beta1, args.beta2), eps=args.eps)
    losses = []
    for _ in range(args.steps):
        opt.zero_grad()
        step_loss = torch.nn.functional.cross_entropy(gpt2_logits(p, x, args.layers, args.heads).view(-1, args.vocab),
                                                      y.view(-1), ignore_index=-1)
        losses.append(step_loss.item())
        step_loss.backward()
        opt.step()
    out["losses"] = np.array(losses, dtype=np.float32)
    if args.llmc_dump_out:
        write_llmc_state(args.llmc_dump_out, out, args)
    meta = {"lr": args.lr, "beta1": args.beta1, "beta2": args.beta2, "eps": args.eps,
            "weight_decay": args.weight_decay, "dtype": args.dtype, "torch": torch.__version__}
    safetensors_io.write(path, out, meta)
    print(f"reference: loss {loss.item():.6f}, {args.steps} AdamW losses {losses[0]:.6f} .. {losses[-1]:.6f} -> {path}")


def read_tokens(path):
    """llm.c token file: 256 int32 header (magic 20240520, version 1, count), then uint16 tokens."""
    header = np.fromfile(path, dtype="<i4", count=256)
    assert header[0] == 20240520 and header[1] == 1, f"{path}: not a token file"
    return np.fromfile(path, dtype="<u2", offset=1024)[:header[2]].astype(np.int64)


def write_tokens(path, tokens):
    header = np.zeros(256, dtype="<i4")
    header[:3] = [20240520, 1, len(tokens)]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.asarray(tokens, dtype="<u2").tobytes())


def eval_loss(params32, args):
    """Mean loss over the first --eval-batches batches of consecutive (B, T+1) windows from token 0,
    the definition `gpt2 eval` uses."""
    tokens = torch.from_numpy(read_tokens(args.eval_data))
    B, T = args.batch, args.tokens
    p = {k: v.to(getattr(torch, args.dtype)) for k, v in params32.items()}
    total = 0.0
    with torch.no_grad():
        for i in range(args.eval_batches):
            starts = [(i * B + b) * T for b in range(B)]
            x = torch.stack([tokens[s:s + T] for s in starts])
            y = torch.stack([tokens[s + 1:s + T + 1] for s in starts])
            logits = gpt2_logits(p, x, args.layers, args.heads)
            total += torch.nn.functional.cross_entropy(logits.view(-1, args.vocab), y.view(-1)).item()
    return total / args.eval_batches


def eval_loss_all(params32, args):
    """Mean loss over every token of --eval-data after the first, each predicted once in consecutive windows
    of --tokens positions from token 0 (the last one shorter), the definition of `gpt2 eval --batches all`."""
    tokens = torch.from_numpy(read_tokens(args.eval_data))
    p = {k: v.to(getattr(torch, args.dtype)) for k, v in params32.items()}
    total = 0.0
    with torch.no_grad():
        for s in range(0, len(tokens) - 1, args.tokens):
            e = min(s + args.tokens, len(tokens) - 1)
            logits = gpt2_logits(p, tokens[None, s:e], args.layers, args.heads)
            total += torch.nn.functional.cross_entropy(logits.view(-1, args.vocab), tokens[s + 1:e + 1],
                                                       reduction="sum").item()
    return total / (len(tokens) - 1)


def greedy(params32, args):
    """Argmax continuation of --greedy-prompt by full forward passes (no cache) in --dtype; past the context
    each pass sees the last --seq-len tokens, as nanoGPT's generate crops them. Also returns
    the smallest gap between the best and second-best logit along the way: a fixture is only meaningful
    when that gap is far above fp32 rounding."""
    p = {k: v.to(getattr(torch, args.dtype)) for k, v in params32.items()}
    ids = [int(t) for t in args.greedy_prompt.split()]
    min_gap = float("inf")
    with torch.no_grad():
        for _ in range(args.greedy_tokens):
            logits = gpt2_logits(p, torch.tensor([ids[-args.seq_len:]]), args.layers, args.heads)[0, -1]
            top2 = torch.topk(logits, 2).values
            min_gap = min(min_gap, (top2[0] - top2[1]).item())
            ids.append(int(torch.argmax(logits)))
    return ids[len(args.greedy_prompt.split()):], min_gap


def llmc_order(params, L):
    """llm.c's tensor order: each per-layer tensor concatenated over layers, weights (out, in)."""
    def ours(name):  # HuggingFace Conv1D weights are (in, out); llm.c keeps (out, in)
        t = params[name]
        return t.T.contiguous() if name.endswith(".weight") and ("attn.c_" in name or "mlp.c_" in name) else t
    kinds = ["ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
             "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight",
             "mlp.c_proj.bias"]
    out = [params["wte.weight"], params["wpe.weight"]]
    for k in kinds:
        out += [ours(f"h.{l}.{k}") for l in range(L)]
    return out + [params["ln_f.weight"], params["ln_f.bias"]]


def write_llmc(path, params, args, version):
    """llm.c checkpoint: 256 int32 header (magic 20240326, version, maxT, V, L, NH, C, Vp), then the tensors;
    wte padded to Vp rows with zeros. Version 3 fp32, version 5 bf16 (torch's rounding)."""
    Vp = (args.vocab + 127) // 128 * 128
    header = np.zeros(256, dtype="<i4")
    header[:8] = [20240326, version, args.seq_len, args.vocab, args.layers, args.heads, args.channels, Vp]
    tensors = llmc_order(params, args.layers)
    tensors[0] = torch.cat([tensors[0], torch.zeros(Vp - args.vocab, args.channels)])
    with open(path, "wb") as f:
        f.write(header.tobytes())
        for t in tensors:
            t = t.contiguous().view(-1)
            if version == 3:
                f.write(t.float().numpy().astype("<f4").tobytes())
            else:
                f.write(t.bfloat16().view(torch.int16).numpy().astype("<i2").tobytes())


def write_llmc_state(path, out, args):
    """llm.c's debug state (its train_gpt2.py write_state): 256 int32 header (magic 20240327, version 2, B, T),
    x and y as int32, logits fp32 (B, T, V), the loss, then every gradient fp32 in llm.c's checkpoint order
    with wte's padded to Vp rows with zeros. Written from the same values as our safetensors dump."""
    Vp = (args.vocab + 127) // 128 * 128
    header = np.zeros(256, dtype="<i4")
    header[:4] = [20240327, 2, args.batch, args.tokens]
    grads = llmc_order({k[len("grad."):]: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in out.items() if k.startswith("grad.")},
                       args.layers)
    grads[0] = torch.cat([grads[0], torch.zeros(Vp - args.vocab, args.channels)])
    with open(path, "wb") as f:
        f.write(header.tobytes())
        for name in ["x", "y"]:
            f.write(out[name].astype("<i4").tobytes())
        f.write(out["logits"].astype("<f4").tobytes())
        f.write(out["loss"].astype("<f4").tobytes())
        for g in grads:
            f.write(g.contiguous().view(-1).numpy().astype("<f4").tobytes())


def write_formats(outdir, params, args):
    """The same random model in every format the loader reads, each converted by PyTorch, plus the fp32
    values PyTorch gets back from the narrow ones (the expected result of our widening)."""
    os.makedirs(outdir, exist_ok=True)
    write_llmc(os.path.join(outdir, "llmc_v3.bin"), params, args, 3)
    write_llmc(os.path.join(outdir, "llmc_v5.bin"), params, args, 5)
    for name, dtype in [("f16", torch.float16), ("bf16", torch.bfloat16)]:
        narrow = {k: v.to(dtype) for k, v in params.items()}
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        write_hf_model(d, {k: v.float() for k, v in narrow.items()}, args)  # config.json (+ an fp32 file, replaced)
        if dtype == torch.float16:
            tensors, bf = {k: v.numpy() for k, v in narrow.items()}, ()
        else:
            tensors = {k: v.view(torch.int16).numpy().view(np.uint16) for k, v in narrow.items()}
            bf = tuple(tensors)
        safetensors_io.write(os.path.join(d, "model.safetensors"), tensors, {"format": "pt"}, bf16=bf)
        write_hf_model(os.path.join(outdir, name + "_up"), {k: v.float() for k, v in narrow.items()}, args)
    extra = dict(params)
    extra["h.0.attn.extra_scale"] = torch.ones(args.channels)
    write_hf_model(os.path.join(outdir, "extra"), extra, args)
    tied = dict(params)
    write_hf_model(os.path.join(outdir, "lm_head"), tied, args)
    tensors, meta = safetensors_io.read(os.path.join(outdir, "lm_head", "model.safetensors"))
    tensors = dict(tensors)
    tensors["lm_head.weight"] = tensors["wte.weight"]
    safetensors_io.write(os.path.join(outdir, "lm_head", "model.safetensors"), tensors, meta)


def layernorm_fixture(path, gen):
    N, C = 37, 96
    # rows with large means and very different scales: where a one-pass variance would lose digits
    x = torch.randn(N, C, generator=gen) * torch.logspace(-3, 2, N).unsqueeze(1) + \
        torch.linspace(-50, 50, N).unsqueeze(1)
    w = 1.0 + 0.3 * torch.randn(C, generator=gen)
    b = 0.3 * torch.randn(C, generator=gen)
    ln = torch.nn.LayerNorm(C, eps=1e-5).double()
    with torch.no_grad():
        ln.weight.copy_(w.double())
        ln.bias.copy_(b.double())
        out = ln(x.float().double())
    safetensors_io.write(path, {"x": x.float().numpy(), "weight": w.float().numpy(), "bias": b.float().numpy(),
                                "out": out.float().numpy()}, {"module": "torch.nn.LayerNorm(eps=1e-5), float64"})
    print(f"layernorm fixture -> {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--channels", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--seq-len", type=int, default=64, help="n_positions")
    ap.add_argument("-B", "--batch", type=int, default=2)
    ap.add_argument("-T", "--tokens", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.999)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    ap.add_argument("--masked", action="store_true",
                    help="targets of -1 (not scored) in about half the batch, and the dump's dlogits")
    ap.add_argument("--prefix", default="", help='tensor name prefix in the model file, e.g. "transformer."')
    ap.add_argument("--model-out", help="directory for the HuggingFace-layout model")
    ap.add_argument("--model-in", help="use this HuggingFace-layout model instead of a random one")
    ap.add_argument("--formats-out", help="also write the model as llm.c v3/v5, F16, BF16 and variants here")
    ap.add_argument("--dump-out", help="reference dump file")
    ap.add_argument("--llmc-dump-out", help="also write the dump in llm.c's debug-state format (with --dump-out)")
    ap.add_argument("--llmc-model-out", help="also write the model as an llm.c version 3 (fp32) checkpoint")
    ap.add_argument("--llmc-from-dump", metavar="DUMP",
                    help="rewrite this safetensors dump in llm.c's format to --llmc-dump-out (geometry from "
                         "--layers, --channels, --vocab) and exit")
    ap.add_argument("--layernorm-fixture", help="write the LayerNorm fixture here and exit")
    ap.add_argument("--markov-tokens", type=int,
                    help="write this many tokens (< --vocab) of a random Markov chain in which every token has two "
                         "possible successors (learnable data for training tests) to --tokens-out and exit")
    ap.add_argument("--tokens-out", help="token file for --random-tokens")
    ap.add_argument("--eval-data", help="token file: print the eval loss of the model over it")
    ap.add_argument("--eval-batches", type=int, default=1, help="0: every token of the file (eval --batches all)")
    ap.add_argument("--eval-out", help="also write the `loss <value>` line to this file")
    ap.add_argument("--greedy-prompt", help="space-separated prompt ids: print the greedy continuation")
    ap.add_argument("--greedy-tokens", type=int, default=20)
    ap.add_argument("--greedy-out", help="also write the continuation ids to this file")
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    gen = torch.Generator().manual_seed(args.seed)
    if args.layernorm_fixture:
        return layernorm_fixture(args.layernorm_fixture, gen)
    if args.llmc_from_dump:
        out = safetensors_io.read(args.llmc_from_dump)[0]
        args.batch, args.tokens = out["x"].shape
        return write_llmc_state(args.llmc_dump_out, out, args)
    if args.markov_tokens:
        succ = torch.randint(0, args.vocab, (args.vocab, 2), generator=gen)
        coins = torch.randint(0, 2, (args.markov_tokens,), generator=gen)
        tokens = [0]
        for i in range(1, args.markov_tokens):
            tokens.append(int(succ[tokens[-1], coins[i]]))
        return write_tokens(args.tokens_out, tokens)
    if args.model_in:
        params = read_hf_model(args.model_in, args)
    elif args.model_out:
        params = random_model(args, gen)
        write_hf_model(args.model_out, params, args, args.prefix)
    else:
        ap.error("--model-out or --model-in is required")
    if args.formats_out:
        write_formats(args.formats_out, params, args)
    if args.llmc_model_out:
        write_llmc(args.llmc_model_out, params, args, 3)
    if args.dump_out:
        reference_dump(args.dump_out, params, args, gen)
    if args.greedy_prompt:
        ids, gap = greedy(params, args)
        print(f"reference greedy continuation (smallest top-2 logit gap {gap:.2e}): {' '.join(map(str, ids))}")
        if gap < 1e-3:
            sys.exit(f"error: top-2 logit gap {gap:.2e} is within fp32 noise; choose another prompt or seed")
        if args.greedy_out:
            with open(args.greedy_out, "w") as f:
                f.write(" ".join(map(str, ids)) + "\n")
    if args.eval_data:
        line = f"loss {(eval_loss(params, args) if args.eval_batches else eval_loss_all(params, args)):.9f}"
        print(f"reference eval over {args.eval_batches} batches: {line}")
        if args.eval_out:
            with open(args.eval_out, "w") as f:
                f.write(line + "\n")


if __name__ == "__main__":
    main()
