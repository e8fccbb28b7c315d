"""Load a model directory written by `frontier export` into PyTorch: a nanochat-style GPT whose state_dict has
nanochat's names and shapes, and its tokenizer.

    import sys; sys.path.insert(0, "python")
    from frontier_torch import load
    model, tok = load("out/a")                      # fp32, eval mode
    ids = [tok.bos_id] + [17, 42]
    logits = model(torch.tensor([ids]))             # (1, T, vocab_size), softcapped as nanochat's forward
    print(tok.decode(ids))

    /usr/bin/python3 python/frontier_torch.py out/a --tokens 8183 17 42 [--out logits.f32] [--generate 20]

Needs only torch and numpy (Debian's python3-torch; torch >= 1.13). model.safetensors is read here, not with the
`safetensors` package (not in Debian 12), and checked as strictly as Frontier's reader: header length, dtypes,
offsets that tile the data exactly. The model is nanochat's GPT of commit 535f664 with full-context attention
(docs/formats.md lists every difference from nanochat's current gpt.py); config.json's "frontier"."architecture"
is checked against the constants below, so a directory from a different architecture is refused, not misread.
"""
import argparse
import base64
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# Frontier's model (src/model/gpt.cpp), which is nanochat's at 535f664 with window_pattern "L".
ARCHITECTURE = {
    "rope_base": 100000.0,
    "softcap": 15.0,
    "ve_gate_channels": 32,
    "ve_gate_scale": 2,
    "qk_scale": 1,
    "norm_eps": float(np.finfo(np.float32).eps),
    "smear": False,
    "backout": False,
}
PAD_VOCAB_TO = 64
MAX_HEADER = 100_000_000


class FormatError(ValueError):
    pass


# ---------------------------------------------------------------------------------------------------- safetensors

def _bf16_to_f32(raw):
    return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)


_DTYPES = {  # header name -> (bytes per element, bytes -> float32 array)
    "F32": (4, lambda raw: np.frombuffer(raw, dtype="<f4")),
    "F16": (2, lambda raw: np.frombuffer(raw, dtype="<f2").astype(np.float32)),
    "BF16": (2, _bf16_to_f32),
}


def read_safetensors(path):
    """{name: float32 torch tensor}, metadata. Raises FormatError naming the file and the problem."""
    with open(path, "rb") as f:
        data = f.read()

    def bad(why):
        return FormatError(f"{path}: {why}")

    if len(data) < 8:
        raise bad("shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise bad(f"header length {n} is larger than the file ({len(data)} bytes)")
    if n > MAX_HEADER:
        raise bad(f"header length {n} is above the format's limit of {MAX_HEADER} bytes")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise bad(f"the header is not valid JSON ({e})")
    if not isinstance(header, dict):
        raise bad("the header is not a JSON object")
    body = memoryview(data)[8 + n:]
    metadata = header.pop("__metadata__", {}) or {}
    spans, out = [], {}
    for name, e in header.items():
        if not isinstance(e, dict) or not {"dtype", "shape", "data_offsets"} <= e.keys():
            raise bad(f"tensor '{name}': entry lacks dtype, shape or data_offsets")
        if e["dtype"] not in _DTYPES:
            raise bad(f"tensor '{name}': dtype {e['dtype']!r} is not one this reader converts (F32, BF16, F16)")
        shape, (b, end) = e["shape"], e["data_offsets"]
        if not all(isinstance(d, int) and d >= 0 for d in shape) or not (0 <= b <= end <= len(body)):
            raise bad(f"tensor '{name}': bad shape {shape} or data_offsets [{b}, {end}) (data is {len(body)} bytes)")
        size, conv = _DTYPES[e["dtype"]]
        if math.prod(shape) * size != end - b:
            raise bad(f"tensor '{name}': shape {shape} of {e['dtype']} needs {math.prod(shape) * size} bytes, "
                      f"data_offsets hold {end - b}")
        spans.append((b, end, name))
        out[name] = torch.from_numpy(conv(body[b:end]).copy().reshape(shape))
    pos = 0
    for b, end, name in sorted(spans):
        if b != pos:
            raise bad(f"tensor '{name}' starts at {b}, expected {pos} (overlap, or bytes no tensor covers)")
        pos = end
    if pos != len(body):
        raise bad(f"data bytes [{pos}, {len(body)}) belong to no tensor")
    return out, metadata


# ---------------------------------------------------------------------------------------------------- the model

def norm(x, eps):
    # F.rms_norm(x, (x.size(-1),)) of torch >= 2.4, whose default eps is finfo(float32).eps (Frontier's eps)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def apply_rotary_emb(x, cos, sin):  # nanochat's: half-split, rotates by -theta
    d = x.shape[3] // 2
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat([x1 * cos + x2 * sin, x1 * (-sin) + x2 * cos], 3)


def has_ve(i, n_layer):
    return i % 2 == (n_layer - 1) % 2


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        self.n_head, self.n_kv_head = cfg["n_head"], cfg["n_kv_head"]
        self.head_dim = cfg["n_embd"] // cfg["n_head"]
        C, D = cfg["n_embd"], self.head_dim
        self.c_q = nn.Linear(C, self.n_head * D, bias=False)
        self.c_k = nn.Linear(C, self.n_kv_head * D, bias=False)
        self.c_v = nn.Linear(C, self.n_kv_head * D, bias=False)
        self.c_proj = nn.Linear(C, C, bias=False)
        self.ve_gate_channels = ARCHITECTURE["ve_gate_channels"]
        self.ve_gate = (nn.Linear(self.ve_gate_channels, self.n_kv_head, bias=False)
                        if has_ve(layer_idx, cfg["n_layer"]) else None)

    def forward(self, x, ve, cos, sin, eps):
        B, T, C = x.size()
        q = self.c_q(x).view(B, T, self.n_head, self.head_dim)
        k = self.c_k(x).view(B, T, self.n_kv_head, self.head_dim)
        v = self.c_v(x).view(B, T, self.n_kv_head, self.head_dim)
        if ve is not None:
            ve = ve.view(B, T, self.n_kv_head, self.head_dim)
            gate = ARCHITECTURE["ve_gate_scale"] * torch.sigmoid(self.ve_gate(x[..., :self.ve_gate_channels]))
            v = v + gate.unsqueeze(-1) * ve
        q, k = apply_rotary_emb(q, cos, sin), apply_rotary_emb(k, cos, sin)
        q, k = norm(q, eps), norm(k, eps)
        rep = self.n_head // self.n_kv_head  # GQA
        k, v = k.repeat_interleave(rep, dim=2), v.repeat_interleave(rep, dim=2)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))  # (B, H, T, D)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        y = att.masked_fill(~mask, float("-inf")).softmax(-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = nn.Linear(cfg["n_embd"], 4 * cfg["n_embd"], bias=False)
        self.c_proj = nn.Linear(4 * cfg["n_embd"], cfg["n_embd"], bias=False)

    def forward(self, x):
        return self.c_proj(F.relu(self.c_fc(x)).square())


class Block(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        self.attn = CausalSelfAttention(cfg, layer_idx)
        self.mlp = MLP(cfg)

    def forward(self, x, ve, cos, sin, eps):
        x = x + self.attn(norm(x, eps), ve, cos, sin, eps)
        return x + self.mlp(norm(x, eps))


class GPT(nn.Module):
    """nanochat's GPT (535f664, full-context attention); cfg: config.json's GPTConfig fields."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        L, C, V = cfg["n_layer"], cfg["n_embd"], cfg["vocab_size"]
        Vp = -(-V // PAD_VOCAB_TO) * PAD_VOCAB_TO  # nanochat pads the vocabulary rows; logits are cropped to V
        self.transformer = nn.ModuleDict({
            "wte": nn.Embedding(Vp, C),
            "h": nn.ModuleList([Block(cfg, i) for i in range(L)]),
        })
        self.lm_head = nn.Linear(C, Vp, bias=False)
        self.resid_lambdas = nn.Parameter(torch.ones(L))
        self.x0_lambdas = nn.Parameter(torch.zeros(L))
        kv_dim = cfg["n_kv_head"] * (C // cfg["n_head"])
        self.value_embeds = nn.ModuleDict({str(i): nn.Embedding(Vp, kv_dim) for i in range(L) if has_ve(i, L)})
        # Rotary tables as Frontier builds them: angles in float64, then rounded to float32 (nanochat computes them
        # in float32, then casts to its compute dtype).
        D = C // cfg["n_head"]
        inv_freq = 1.0 / (ARCHITECTURE["rope_base"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
        freqs = torch.outer(torch.arange(cfg["sequence_len"], dtype=torch.float64), inv_freq)
        self.register_buffer("cos", freqs.cos().float()[None, :, None, :], persistent=False)
        self.register_buffer("sin", freqs.sin().float()[None, :, None, :], persistent=False)

    def forward(self, idx):
        """idx (B, T) token ids -> logits (B, T, vocab_size), softcapped as nanochat's forward returns them."""
        B, T = idx.size()
        assert T <= self.cos.size(1), f"sequence of {T} tokens is longer than the model's {self.cos.size(1)}"
        eps = ARCHITECTURE["norm_eps"]
        cos, sin = self.cos[:, :T], self.sin[:, :T]
        x = norm(self.transformer.wte(idx), eps)
        x0 = x
        for i, block in enumerate(self.transformer.h):
            x = self.resid_lambdas[i] * x + self.x0_lambdas[i] * x0
            ve = self.value_embeds[str(i)](idx) if str(i) in self.value_embeds else None
            x = block(x, ve, cos, sin, eps)
        logits = self.lm_head(norm(x, eps))[..., :self.cfg["vocab_size"]]
        cap = ARCHITECTURE["softcap"]
        return cap * torch.tanh(logits / cap)


# ---------------------------------------------------------------------------------------------------- tokenizer

class Tokenizer:
    """Decoding only (the rank file + specials, as `frontier prepare` writes them; tiktoken encodes with them:
    tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials))."""

    def __init__(self, dir):
        self.ranks = {}
        with open(os.path.join(dir, "tokenizer.tiktoken"), "rb") as f:
            for line in f:
                if line.strip():
                    tok, rank = line.split()
                    self.ranks[base64.b64decode(tok)] = int(rank)
        meta = json.load(open(os.path.join(dir, "tokenizer.json")))
        self.pattern = meta["pattern"]
        self.specials = meta["special_tokens"]
        self.bos_id = self.specials["<|bos|>"]
        self.by_id = {r: b for b, r in self.ranks.items()}
        self.by_id.update({i: s.encode() for s, i in self.specials.items()})

    def decode(self, ids):
        return b"".join(self.by_id[i] for i in ids).decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------------- loading

def load_config(dir):
    path = os.path.join(dir, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    for k in ("sequence_len", "vocab_size", "n_layer", "n_head", "n_kv_head", "n_embd"):
        if not isinstance(cfg.get(k), int) or cfg[k] <= 0:
            raise FormatError(f"{path}: field '{k}' is missing or not a positive integer")
    arch = cfg.get("frontier", {}).get("architecture", {})
    for k, v in ARCHITECTURE.items():
        if k in arch and arch[k] != v:
            raise FormatError(f"{path}: frontier.architecture {k} is {arch[k]!r}; this loader's model has {v!r}")
    return cfg


def load(dir, dtype=torch.float32):
    """(model in eval mode, Tokenizer) from a `frontier export` directory. strict: every tensor present, no extra."""
    cfg = load_config(dir)
    model = GPT(cfg)
    tensors, _ = read_safetensors(os.path.join(dir, "model.safetensors"))
    want = model.state_dict()
    for name, t in tensors.items():  # vocabulary rows stored unpadded: pad them as nanochat allocates them
        if name in want and t.dim() == 2 and t.shape[0] == cfg["vocab_size"] < want[name].shape[0]:
            tensors[name] = torch.cat([t, t.new_zeros(want[name].shape[0] - t.shape[0], t.shape[1])])
    model.load_state_dict(tensors, strict=True)
    model.to(dtype).eval()
    return model, Tokenizer(os.path.join(dir, "tokenizer"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="model directory from `frontier export`")
    ap.add_argument("--tokens", type=int, nargs="+", help="token ids (default: <|bos|> alone)")
    ap.add_argument("--tokens-file", help="token ids as raw int32 (instead of --tokens)")
    ap.add_argument("--out", help="write the logits (T x vocab_size float32, softcapped) here")
    ap.add_argument("--generate", type=int, default=0, help="then greedily generate this many tokens and print them")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    try:
        model, tok = load(a.dir)
    except (FormatError, OSError, RuntimeError, KeyError, json.JSONDecodeError) as e:
        sys.exit(f"error: {e}")
    ids = (np.fromfile(a.tokens_file, dtype=np.int32).tolist() if a.tokens_file else a.tokens) or [tok.bos_id]
    with torch.no_grad():
        logits = model(torch.tensor([ids], dtype=torch.long))[0]
        if a.out:
            logits.numpy().astype(np.float32).tofile(a.out)
        print(f"logits: {tuple(logits.shape)}, next token after the input: {int(logits[-1].argmax())}")
        for _ in range(a.generate):
            nxt = int(model(torch.tensor([ids[-model.cos.size(1):]], dtype=torch.long))[0, -1].argmax())
            ids.append(nxt)
        if a.generate:
            print(repr(tok.decode(ids)))


if __name__ == "__main__":
    main()
