#!/usr/bin/python3
"""Tiny GPT-2 GGUF files for testing against llama.cpp (python3 + numpy only).

  gguf_tiny.py write OUT.gguf [--vocab V] [--layers 2] [--embd 64] [--heads 2] [--ctx 64]
                              [--seed 0] [--type f32|f16|bf16|q8_0] [--untied] [--eps 1e-5]
      Random GPT-2 (weights N(0, 0.02), LayerNorm weight 1 / bias 0) with the first V tokens
      of GPT-2's vocabulary ($GPT2_DATA_DIR/gpt2/{encoder.json,vocab.bpe}, GPT2_DATA_DIR
      defaults to /work/shared/data). If <|endoftext|> is not among them it is appended
      (id V, so n_vocab = V + 1) and used as BOS/EOS. --type sets the type of the 2-D tensors;
      1-D tensors are always f32. --untied also writes output.weight (else llama.cpp reuses
      token_embd.weight for the output projection, as in GPT-2).
  gguf_tiny.py forward FILE.gguf --ids 1,2,3 [--n 32] [--ggml-gelu] [--margins]
      Independent float64 numpy forward pass of any GPT-2 GGUF file (f32/f16/bf16/q8_0
      tensors); prints the greedy continuation (prompt not included), space separated.
      --ggml-gelu rounds GELU's input and output to f16 like ggml's CPU lookup table.
      --margins also prints, on stderr, the top1-top2 logit gap of each step.
  gguf_tiny.py eval FILE.gguf --ids-file F [--ggml-gelu]
      Same JSON as `llama_oracle.mjs eval`: {"n", "mean_nll", "top1"}.
  gguf_tiny.py dump FILE.gguf
      Prints the metadata (arrays shortened) and the tensor table.

GGUF v3 layout (ggml/src/gguf.cpp): "GGUF", u32 version, u64 n_tensors, u64 n_kv, the KVs,
the tensor infos (name, u32 n_dims, u64 ne[n_dims] innermost first, u32 ggml type, u64 offset),
padding to general.alignment (default 32) from the file start, then the tensor data. Each
tensor's offset, relative to the data start, must equal the padded sizes of the tensors before
it (in tensor-info order). All integers little-endian.
"""
import json
import math
import os
import struct
import sys

import numpy as np

# ggml tensor types (ggml.h / gguf-py constants.py GGMLQuantizationType)
GGML_F32, GGML_F16, GGML_Q8_0, GGML_BF16 = 0, 1, 8, 30
TYPE_NAMES = {"f32": GGML_F32, "f16": GGML_F16, "q8_0": GGML_Q8_0, "bf16": GGML_BF16}
# general.file_type (llama_ftype): ALL_F32, MOSTLY_F16, MOSTLY_Q8_0, MOSTLY_BF16
FILE_TYPES = {GGML_F32: 0, GGML_F16: 1, GGML_Q8_0: 7, GGML_BF16: 32}
QK8_0 = 32  # values per q8_0 block: f16 scale d, then 32 int8 (34 bytes)

# GGUF metadata value types (gguf.h)
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR_FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
              BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}
ARRAY_DTYPE = {U8: "<u1", I8: "<i1", U16: "<u2", I16: "<i2", U32: "<u4", I32: "<i4", F32: "<f4",
               BOOL: "?", U64: "<u8", I64: "<i8", F64: "<f8"}

TOKEN_NORMAL, TOKEN_CONTROL = 1, 3  # tokenizer.ggml.token_type values
ALIGN = 32
EOT = "<|endoftext|>"


# ---------------------------------------------------------------- tensor encoding

def f32_to_bf16_bits(x):
    """ggml's fp32 -> bf16: round to nearest even (NaN kept quiet)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = (u & 0x7fffffff) > 0x7f800000
    r = ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r[nan] = ((u[nan] >> 16) | 64).astype(np.uint16)
    return r


def quantize_q8_0(x):
    """ggml's quantize_row_q8_0_ref on each row: blocks of 32, d = amax/127, q = roundf(x/d)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    assert x.shape[-1] % QK8_0 == 0, "q8_0 needs ne[0] to be a multiple of 32"
    blocks = x.reshape(-1, QK8_0)
    d = (np.abs(blocks).max(axis=1) / np.float32(127)).astype(np.float32)
    inv = np.where(d != 0, np.float32(1) / np.where(d != 0, d, 1), 0).astype(np.float32)
    v = blocks * inv[:, None]                                   # float32 product, like C
    q = (np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))).astype(np.int8)  # roundf
    out = np.zeros(len(blocks), dtype=[("d", "<f2"), ("qs", "i1", QK8_0)])
    out["d"] = d.astype(np.float16)
    out["qs"] = q
    return out.tobytes()


def encode_tensor(x, ggml_type):
    """Bytes of a numpy array (row-major, so numpy shape reversed = ggml ne) in a ggml type."""
    if ggml_type == GGML_F32:
        return np.ascontiguousarray(x, dtype="<f4").tobytes()
    if ggml_type == GGML_F16:
        return np.ascontiguousarray(x, dtype="<f2").tobytes()
    if ggml_type == GGML_BF16:
        return f32_to_bf16_bits(x).astype("<u2").tobytes()
    if ggml_type == GGML_Q8_0:
        return quantize_q8_0(x)
    raise ValueError(f"unsupported ggml type {ggml_type}")


def decode_tensor(buf, ggml_type, ne):
    """numpy float64 array of shape reversed(ne) from a tensor's bytes."""
    n = int(np.prod(ne))
    shape = tuple(reversed(ne))
    if ggml_type == GGML_F32:
        a = np.frombuffer(buf, dtype="<f4", count=n)
    elif ggml_type == GGML_F16:
        a = np.frombuffer(buf, dtype="<f2", count=n)
    elif ggml_type == GGML_BF16:
        a = (np.frombuffer(buf, dtype="<u2", count=n).astype(np.uint32) << 16).view(np.float32)
    elif ggml_type == GGML_Q8_0:
        b = np.frombuffer(buf, dtype=[("d", "<f2"), ("qs", "i1", QK8_0)], count=n // QK8_0)
        a = b["d"].astype(np.float32)[:, None] * b["qs"].astype(np.float32)
    else:
        raise ValueError(f"unsupported ggml type {ggml_type}")
    return a.astype(np.float64).reshape(shape)


def tensor_nbytes(ggml_type, ne):
    n = int(np.prod(ne))
    if ggml_type == GGML_Q8_0:
        return n // QK8_0 * (2 + QK8_0)
    return n * {GGML_F32: 4, GGML_F16: 2, GGML_BF16: 2}[ggml_type]


# ---------------------------------------------------------------- GGUF writer

def pack_str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def pack_value(vtype, value):
    if vtype == STR:
        return pack_str(value)
    return struct.pack(SCALAR_FMT[vtype], value)


def pack_kv(key, vtype, value, elem_type=None):
    out = pack_str(key) + struct.pack("<I", vtype)
    if vtype == ARR:
        out += struct.pack("<IQ", elem_type, len(value))
        if elem_type == STR:
            out += b"".join(pack_str(v) for v in value)
        else:  # numeric arrays: one packed block
            out += np.asarray(value, dtype=ARRAY_DTYPE[elem_type]).tobytes()
        return out
    return out + pack_value(vtype, value)


def write_gguf(path, kvs, tensors):
    """kvs: list of (key, type, value[, elem_type]); tensors: list of (name, numpy array, ggml type)."""
    header = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    meta = b"".join(pack_kv(*kv) for kv in kvs)
    infos, datas, offset = [], [], 0
    for name, arr, gtype in tensors:
        assert len(name) < 64, "ggml tensor names are < 64 bytes"
        data = encode_tensor(arr, gtype)
        ne = list(reversed(arr.shape))
        infos.append(pack_str(name) + struct.pack("<I", len(ne)) +
                     struct.pack(f"<{len(ne)}Q", *ne) + struct.pack("<IQ", gtype, offset))
        pad = (-len(data)) % ALIGN
        datas.append(data + b"\0" * pad)
        offset += len(data) + pad
    head = header + meta + b"".join(infos)
    head += b"\0" * ((-len(head)) % ALIGN)
    with open(path, "wb") as f:
        f.write(head)
        for d in datas:
            f.write(d)


# ---------------------------------------------------------------- GGUF reader

class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        vals = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return vals[0] if len(vals) == 1 else vals

    def string(self):
        n = self.take("<Q")
        s = self.data[self.pos:self.pos + n].decode("utf-8", errors="surrogateescape")
        self.pos += n
        return s

    def value(self, vtype):
        if vtype == STR:
            return self.string()
        if vtype == ARR:
            etype, n = self.take("<IQ")
            if etype in (STR, ARR):
                return [self.value(etype) for _ in range(n)]
            dt = np.dtype(ARRAY_DTYPE[etype])
            a = np.frombuffer(self.data, dtype=dt, count=n, offset=self.pos)
            self.pos += n * dt.itemsize
            return a.tolist()
        return self.take(SCALAR_FMT[vtype])


def read_gguf(path):
    """(metadata dict, {name: (ggml type, ne, float64 array)})"""
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    if r.take("<4s") != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    version, n_tensors, n_kv = r.take("<IQQ")
    if version != 3:
        raise ValueError(f"{path}: GGUF version {version}, expected 3")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        n_dims = r.take("<I")
        ne = [r.take("<Q") for _ in range(n_dims)]
        gtype, off = r.take("<IQ")
        infos.append((name, ne, gtype, off))
    align = meta.get("general.alignment", ALIGN)
    start = r.pos + (-r.pos) % align
    tensors, expect = {}, 0
    for name, ne, gtype, off in infos:
        if off != expect:
            raise ValueError(f"{name}: offset {off}, expected {expect}")
        nb = tensor_nbytes(gtype, ne)
        tensors[name] = (gtype, ne, decode_tensor(data[start + off:start + off + nb], gtype, ne))
        expect = off + nb + (-nb) % align
    return meta, tensors


# ---------------------------------------------------------------- writing a random model

def gpt2_vocab(n_first):
    """First n_first GPT-2 tokens (byte-to-unicode strings), their types, the merges among them,
    and the id of <|endoftext|> (appended when not among them)."""
    d = os.path.join(os.environ.get("GPT2_DATA_DIR", "/work/shared/data"), "gpt2")
    with open(os.path.join(d, "encoder.json"), encoding="utf-8") as f:
        encoder = json.load(f)
    by_id = sorted(encoder.items(), key=lambda kv: kv[1])
    tokens = [t for t, i in by_id[:n_first]]
    assert [i for t, i in by_id[:n_first]] == list(range(len(tokens))), "ids must be 0..V-1"
    if EOT not in tokens:
        tokens.append(EOT)
    vocab = set(tokens)
    merges = []
    with open(os.path.join(d, "vocab.bpe"), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#version"):
                continue
            a, b = line.split(" ")
            if a in vocab and b in vocab and a + b in vocab:
                merges.append(line)
    types = [TOKEN_CONTROL if t == EOT else TOKEN_NORMAL for t in tokens]
    return tokens, types, merges, tokens.index(EOT)


def cmd_write(args):
    out = args.pop(0) if args and not args[0].startswith("--") else die("write: need OUT.gguf")
    opt = parse_opts(args, {"--vocab": 1000, "--layers": 2, "--embd": 64, "--heads": 2, "--ctx": 64,
                            "--seed": 0, "--type": "f32", "--untied": False, "--eps": 1e-5})
    V, L, C, H, T = (int(opt[k]) for k in ("--vocab", "--layers", "--embd", "--heads", "--ctx"))
    if opt["--type"] not in TYPE_NAMES:
        die(f"--type must be one of {', '.join(TYPE_NAMES)}")
    wtype = TYPE_NAMES[opt["--type"]]
    if C % H:
        die("--embd must be a multiple of --heads")
    tokens, types, merges, eot = gpt2_vocab(V)
    nv, ff = len(tokens), 4 * C
    rng = np.random.default_rng(int(opt["--seed"]))

    def randn(*shape):  # numpy shape = reversed ggml ne: (out, in) for weight matrices
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    ones, zeros = (lambda n: np.ones(n, np.float32)), (lambda n: np.zeros(n, np.float32))
    tensors = [("token_embd.weight", randn(nv, C), wtype),      # ne {C, n_vocab}
               ("position_embd.weight", randn(T, C), wtype)]    # ne {C, n_ctx}
    for i in range(L):
        p = f"blk.{i}."
        tensors += [(p + "attn_norm.weight", ones(C), GGML_F32),
                    (p + "attn_norm.bias", zeros(C), GGML_F32),
                    (p + "attn_qkv.weight", randn(3 * C, C), wtype),   # ne {C, 3C}: rows q|k|v
                    (p + "attn_qkv.bias", randn(3 * C), GGML_F32),
                    (p + "attn_output.weight", randn(C, C), wtype),
                    (p + "attn_output.bias", randn(C), GGML_F32),
                    (p + "ffn_norm.weight", ones(C), GGML_F32),
                    (p + "ffn_norm.bias", zeros(C), GGML_F32),
                    (p + "ffn_up.weight", randn(ff, C), wtype),        # ne {C, 4C}
                    (p + "ffn_up.bias", randn(ff), GGML_F32),
                    (p + "ffn_down.weight", randn(C, ff), wtype),      # ne {4C, C}
                    (p + "ffn_down.bias", randn(C), GGML_F32)]
    tensors += [("output_norm.weight", ones(C), GGML_F32), ("output_norm.bias", zeros(C), GGML_F32)]
    if opt["--untied"]:
        tensors.append(("output.weight", randn(nv, C), wtype))        # ne {C, n_vocab}

    kvs = [("general.architecture", STR, "gpt2"),
           ("general.name", STR, "gpt2-tiny-random"),
           ("general.file_type", U32, FILE_TYPES[wtype]),
           ("general.alignment", U32, ALIGN),
           ("gpt2.context_length", U32, T),
           ("gpt2.embedding_length", U32, C),
           ("gpt2.feed_forward_length", U32, ff),
           ("gpt2.block_count", U32, L),
           ("gpt2.attention.head_count", U32, H),
           ("gpt2.attention.layer_norm_epsilon", F32, float(opt["--eps"])),
           ("tokenizer.ggml.model", STR, "gpt2"),
           ("tokenizer.ggml.pre", STR, "gpt-2"),
           ("tokenizer.ggml.tokens", ARR, tokens, STR),
           ("tokenizer.ggml.token_type", ARR, types, I32),
           ("tokenizer.ggml.merges", ARR, merges, STR),
           ("tokenizer.ggml.bos_token_id", U32, eot),
           ("tokenizer.ggml.eos_token_id", U32, eot),
           ("tokenizer.ggml.add_bos_token", BOOL, False)]
    write_gguf(out, kvs, tensors)
    print(f"wrote {out}: n_vocab {nv} (eot {eot}), {len(merges)} merges, {len(tensors)} tensors, "
          f"{opt['--type']}, {'untied' if opt['--untied'] else 'tied'}", file=sys.stderr)


# ---------------------------------------------------------------- numpy forward pass

def gelu(x, ggml_f16=False):
    """GPT-2's tanh GELU; ggml_f16 mimics ggml's CPU table (f16 input, f16 output, |x| >= 10 exact)."""
    if not ggml_f16:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    h = x.astype(np.float16).astype(np.float32)
    g = (np.float32(0.5) * h * (np.float32(1) + np.tanh(np.float32(0.7978845608028654) * h *
         (np.float32(1) + np.float32(0.044715) * h * h)))).astype(np.float16).astype(np.float64)
    return np.where(x <= -10, 0.0, np.where(x >= 10, x, g))


class Model:
    def __init__(self, path, ggml_gelu=False):
        meta, t = read_gguf(path)
        if meta.get("general.architecture") != "gpt2":
            raise ValueError(f"{path}: architecture {meta.get('general.architecture')!r}, expected 'gpt2'")
        self.w = {k: v[2] for k, v in t.items()}
        self.L = meta["gpt2.block_count"]
        self.H = meta["gpt2.attention.head_count"]
        self.T = meta["gpt2.context_length"]
        self.eps = meta["gpt2.attention.layer_norm_epsilon"]
        self.ggml_gelu = ggml_gelu
        # output.weight is optional: without it the output projection is token_embd (tied)
        self.out = self.w.get("output.weight", self.w["token_embd.weight"])

    def ln(self, x, name):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + self.eps) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def logits(self, ids):
        """Logits (len(ids), n_vocab) of every position; weight matrices are (out, in)."""
        w, n = self.w, len(ids)
        if n > self.T:
            raise ValueError(f"{n} tokens > context length {self.T}")
        x = w["token_embd.weight"][ids] + w["position_embd.weight"][:n]
        C = x.shape[1]
        hd = C // self.H
        mask = np.triu(np.full((n, n), -np.inf), 1)
        for i in range(self.L):
            p = f"blk.{i}."
            qkv = self.ln(x, p + "attn_norm") @ w[p + "attn_qkv.weight"].T + w[p + "attn_qkv.bias"]
            q, k, v = (qkv[:, j * C:(j + 1) * C].reshape(n, self.H, hd).transpose(1, 0, 2) for j in range(3))
            att = q @ k.transpose(0, 2, 1) / math.sqrt(hd) + mask
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            y = (att @ v).transpose(1, 0, 2).reshape(n, C)
            x = x + y @ w[p + "attn_output.weight"].T + w[p + "attn_output.bias"]
            h = self.ln(x, p + "ffn_norm") @ w[p + "ffn_up.weight"].T + w[p + "ffn_up.bias"]
            x = x + gelu(h, self.ggml_gelu) @ w[p + "ffn_down.weight"].T + w[p + "ffn_down.bias"]
        return self.ln(x, "output_norm") @ self.out.T


def cmd_forward(args):
    path = args.pop(0) if args and not args[0].startswith("--") else die("forward: need FILE.gguf")
    opt = parse_opts(args, {"--ids": None, "--n": 32, "--ggml-gelu": False, "--margins": False})
    if opt["--ids"] is None:
        die("forward: need --ids")
    ids = parse_ids(opt["--ids"])
    m = load_model(path, opt["--ggml-gelu"])
    out = []
    for _ in range(int(opt["--n"])):
        last = m.logits(ids + out)[-1]
        top2 = np.argsort(-last, kind="stable")[:2]
        if opt["--margins"]:
            print(f"{top2[0]} margin {last[top2[0]] - last[top2[1]]:.3e}", file=sys.stderr)
        out.append(int(top2[0]))  # first index among equal maxima, like llama.cpp's greedy sampler
    print(" ".join(map(str, out)))


def cmd_eval(args):
    path = args.pop(0) if args and not args[0].startswith("--") else die("eval: need FILE.gguf")
    opt = parse_opts(args, {"--ids-file": None, "--ggml-gelu": False})
    if opt["--ids-file"] is None:
        die("eval: need --ids-file")
    try:
        with open(opt["--ids-file"]) as f:
            ids = parse_ids(f.read())
    except OSError as e:
        die(f"eval: {e}")
    if len(ids) < 2:
        die("eval: need at least 2 ids")
    lg = load_model(path, opt["--ggml-gelu"]).logits(ids)[:-1]
    mx = lg.max(-1, keepdims=True)
    logp = lg - mx - np.log(np.exp(lg - mx).sum(-1, keepdims=True))
    nll = -logp[np.arange(len(ids) - 1), ids[1:]]
    print(json.dumps({"n": len(ids) - 1, "mean_nll": float(nll.mean()),
                      "top1": [int(i) for i in lg.argmax(-1)]}))


def cmd_dump(args):
    if not args:
        die("dump: need FILE.gguf")
    try:
        meta, tensors = read_gguf(args[0])
    except (OSError, ValueError) as e:
        die(f"dump: {e}")
    for k, v in meta.items():
        if isinstance(v, list):
            v = f"[{len(v)} items] {v[:5]}..."
        print(f"{k} = {v}")
    names = {v: k for k, v in TYPE_NAMES.items()}
    for name, (gtype, ne, _) in tensors.items():
        print(f"{name:28s} {names.get(gtype, gtype):5s} ne={ne}")


# ---------------------------------------------------------------- helpers

def die(msg):
    print(f"gguf_tiny.py: {msg}", file=sys.stderr)
    sys.exit(1)


def parse_opts(args, defaults):
    """--key value options (booleans take no value) into a copy of defaults."""
    opt = dict(defaults)
    while args:
        k = args.pop(0)
        if k not in opt:
            die(f"unknown option {k}")
        if isinstance(defaults[k], bool):
            opt[k] = True
        elif not args:
            die(f"{k} needs a value")
        else:
            opt[k] = args.pop(0)
    return opt


def parse_ids(s):
    try:
        return [int(x) for x in s.replace(",", " ").split()]
    except ValueError:
        die(f"bad token ids: {s[:40]!r}")


def load_model(path, ggml_gelu):
    try:
        return Model(path, ggml_gelu)
    except (OSError, ValueError, KeyError) as e:
        die(f"{path}: {e}")


def main():
    cmds = {"write": cmd_write, "forward": cmd_forward, "eval": cmd_eval, "dump": cmd_dump}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        die("usage: gguf_tiny.py write|forward|eval|dump ... (see the docstring)")
    cmds[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
