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
offsets that tile the data exactly. The model is Frontier's GPT: nanochat's of commit 535f664 by default, with
every lever config.json's "frontier"."architecture" names (windows, smear, backout, gated MLPs, n-gram tables, a
tied head, experts, ...; docs/formats.md); a nanochat directory of commit 92d63d4 (smear_gate in its weights) loads
as that model. An unknown architecture field is refused, not misread.
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

# Frontier's model (src/model/): nanochat's GPT of 535f664 by default; every lever of config.json's
# "frontier"."architecture" (Frontier's model.* keys, docs/formats.md) is built here too. These are the defaults, the
# values of a directory that does not name them.
ARCHITECTURE = {
    "rope_base": 100000.0,
    "rope_fraction": 1.0,
    "short_window": 0,          # 0: nanochat's ceil(T/4/128)*128
    "key_offset": False,
    "softcap": 15.0,
    "value_embeds": "alternate",
    "ve_gate_channels": 32,
    "ve_gate_scale": 2,
    "ve_gate_init": 0,
    "qk_scale": 1,
    "norm_eps": float(np.finfo(np.float32).eps),
    "smear": False,
    "backout": False,
    "mlp": "relu2",
    "mlp_slope": 0.01,
    "mlp_ratio": 4,
    "tie_embeddings": False,
    "ngram_orders": "",
    "ngram_buckets": 0,
    "mtp_heads": 0,
    "moe_experts": 0,
    "moe_top_k": 2,
    "moe_layers": "all",
    "moe_hidden": 0,
    "moe_aux_weight": 0.01,
}
# nanochat 92d63d4's levers (a nanochat directory whose weights hold smear_gate.weight).
NANOCHAT_CURRENT = {"smear": True, "backout": True, "ve_gate_channels": 12, "ve_gate_scale": 3,
                    "ve_gate_init": 0.02, "qk_scale": 1.2}
SMEAR_CHANNELS = 24
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


def has_ve(i, n_layer, layout="alternate"):
    if layout == "none":
        return False
    return layout == "all" or i % 2 == (n_layer - 1) % 2


def window(cfg, i):
    """Keys before each query an attention layer sees (None = all): window_pattern tiled, the last layer L."""
    T, L = cfg["sequence_len"], cfg["n_layer"]
    pattern = cfg.get("window_pattern", "L").upper()
    if i == L - 1 or pattern[i % len(pattern)] != "S":
        return None
    w = cfg["arch"]["short_window"] or -(-T // 4 // 128) * 128
    return None if w >= T else w


def is_moe(cfg, i):
    a = cfg["arch"]
    if not a["moe_experts"]:
        return False
    if a["moe_layers"] == "all":
        return True
    if a["moe_layers"] == "alternate":
        return i % 2 == 1
    return a["moe_layers"][i % len(a["moe_layers"])] == "1"


def rope_pairs(cfg):
    D = cfg["n_embd"] // cfg["n_head"]
    return int(round(cfg["arch"]["rope_fraction"] * (D // 2)))  # C's lround: half-way cases do not occur here


def mlp_hidden(cfg):
    C, r = cfg["n_embd"], cfg["arch"]["mlp_ratio"]
    return 4 * C if r == 4 else (math.ceil(r * C) + 31) // 32 * 32


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        a = cfg["arch"]
        self.cfg, self.layer_idx = cfg, layer_idx
        self.n_head, self.n_kv_head = cfg["n_head"], cfg["n_kv_head"]
        self.head_dim = cfg["n_embd"] // cfg["n_head"]
        C, D = cfg["n_embd"], self.head_dim
        self.c_q = nn.Linear(C, self.n_head * D, bias=False)
        self.c_k = nn.Linear(C, self.n_kv_head * D, bias=False)
        self.c_v = nn.Linear(C, self.n_kv_head * D, bias=False)
        self.c_proj = nn.Linear(C, C, bias=False)
        self.ve_gate_channels = a["ve_gate_channels"]
        self.ve_gate = (nn.Linear(self.ve_gate_channels, self.n_kv_head, bias=False)
                        if has_ve(layer_idx, cfg["n_layer"], a["value_embeds"]) else None)
        self.window = window(cfg, layer_idx)

    def forward(self, x, ve, cos, sin, eps):
        a = self.cfg["arch"]
        B, T, C = x.size()
        D = self.head_dim
        q = self.c_q(x).view(B, T, self.n_head, D)
        k = self.c_k(x).view(B, T, self.n_kv_head, D)
        v = self.c_v(x).view(B, T, self.n_kv_head, D)
        if ve is not None:
            ve = ve.view(B, T, self.n_kv_head, D)
            gate = a["ve_gate_scale"] * torch.sigmoid(self.ve_gate(x[..., :self.ve_gate_channels]))
            v = v + gate.unsqueeze(-1) * ve
        q, k = apply_rotary_emb(q, cos, sin), apply_rotary_emb(k, cos, sin)
        q, k = norm(q, eps), norm(k, eps)
        q, k = q * a["qk_scale"], k * a["qk_scale"]  # nanochat 92d63d4: 1.2
        if a["key_offset"] and self.window is None:  # the un-rotated dims of the keys from the previous token
            p0, half = rope_pairs(self.cfg), D // 2
            still = torch.zeros(D, dtype=torch.bool)
            still[p0:half] = True
            still[half + p0:] = True
            shifted = torch.cat([k[:, :1], k[:, :-1]], 1)
            k = torch.where(still, shifted, k)
        rep = self.n_head // self.n_kv_head  # GQA
        k, v = k.repeat_interleave(rep, dim=2), v.repeat_interleave(rep, dim=2)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))  # (B, H, T, D)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        t = torch.arange(T, device=x.device)
        mask = t[None, :] <= t[:, None]  # causal; a sliding window also drops keys more than `window` back
        if self.window is not None:
            mask = mask & (t[None, :] >= t[:, None] - self.window)
        y = att.masked_fill(~mask, float("-inf")).softmax(-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    """relu2 (nanochat), leaky_relu2, or gated swiglu / geglu over c_fc's halves [gate | up]."""

    def __init__(self, cfg):
        super().__init__()
        self.a, C, Hd = cfg["arch"], cfg["n_embd"], mlp_hidden(cfg)
        gated = self.a["mlp"] in ("swiglu", "geglu")
        self.c_fc = nn.Linear(C, (2 if gated else 1) * Hd, bias=False)
        self.c_proj = nn.Linear(Hd, C, bias=False)

    def forward(self, x):
        u, kind = self.c_fc(x), self.a["mlp"]
        if kind == "relu2":
            u = F.relu(u).square()
        elif kind == "leaky_relu2":
            u = F.leaky_relu(u, self.a["mlp_slope"]).square()
        else:
            g, up = u.chunk(2, dim=-1)
            u = (F.silu(g) if kind == "swiglu" else F.gelu(g, approximate="tanh")) * up
        return self.c_proj(u)


class Expert(nn.Module):
    def __init__(self, C, Hd):
        super().__init__()
        self.c_fc = nn.Linear(C, Hd, bias=False)
        self.c_proj = nn.Linear(Hd, C, bias=False)


class MoEMLP(nn.Module):
    """Frontier's mixture of experts (src/reference/moe.h): top_k of E experts by softmax(router), gates
    renormalised."""

    def __init__(self, cfg):
        super().__init__()
        a, C = cfg["arch"], cfg["n_embd"]
        self.a = a
        Hd = a["moe_hidden"] or max(1, mlp_hidden(cfg) // a["moe_top_k"])
        self.router = nn.Linear(C, a["moe_experts"], bias=False)
        self.experts = nn.ModuleList([Expert(C, Hd) for _ in range(a["moe_experts"])])
        self.aux = None  # the last forward's load-balance loss (before moe_aux_weight)

    def forward(self, x):
        from frontier_moe import moe_forward  # same folder
        slope = self.a["mlp_slope"] if self.a["mlp"] == "leaky_relu2" else 0.0
        fc = torch.stack([e.c_fc.weight for e in self.experts])
        proj = torch.stack([e.c_proj.weight for e in self.experts])
        shape = x.shape
        out, self.aux = moe_forward(x.reshape(-1, shape[-1]), self.router.weight, fc, proj, self.a["moe_top_k"], slope)
        return out.view(shape)


class Block(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        self.attn = CausalSelfAttention(cfg, layer_idx)
        self.mlp = MoEMLP(cfg) if is_moe(cfg, layer_idx) else MLP(cfg)

    def forward(self, x, ve, cos, sin, eps):
        x = x + self.attn(norm(x, eps), ve, cos, sin, eps)
        return x + self.mlp(norm(x, eps))


class GPT(nn.Module):
    """Frontier's GPT; cfg: config.json's GPTConfig fields plus cfg["arch"] (ARCHITECTURE with the directory's values)."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        a = cfg["arch"]
        L, C, V = cfg["n_layer"], cfg["n_embd"], cfg["vocab_size"]
        Vp = -(-V // PAD_VOCAB_TO) * PAD_VOCAB_TO  # nanochat pads the vocabulary rows; logits are cropped to V
        self.transformer = nn.ModuleDict({
            "wte": nn.Embedding(Vp, C),
            "h": nn.ModuleList([Block(cfg, i) for i in range(L)]),
        })
        if not a["tie_embeddings"]:
            self.lm_head = nn.Linear(C, Vp, bias=False)
        self.resid_lambdas = nn.Parameter(torch.ones(L))
        self.x0_lambdas = nn.Parameter(torch.zeros(L))
        if a["smear"]:
            self.smear_gate = nn.Linear(SMEAR_CHANNELS, 1, bias=False)
            self.smear_lambda = nn.Parameter(torch.zeros(1))
        if a["backout"]:
            self.backout_lambda = nn.Parameter(0.2 * torch.ones(1))
        self.ngram_orders = [int(n) for n in a["ngram_orders"].split(",") if n.strip()]
        buckets = a["ngram_buckets"] or 4 * V
        self.ngram_buckets = buckets
        self.ngram_embeds = nn.ModuleDict({str(n): nn.Embedding(buckets, C) for n in self.ngram_orders})
        kv_dim = cfg["n_kv_head"] * (C // cfg["n_head"])
        self.value_embeds = nn.ModuleDict({str(i): nn.Embedding(Vp, kv_dim) for i in range(L)
                                           if has_ve(i, L, a["value_embeds"])})
        # Rotary tables as Frontier builds them: angles in float64, then rounded to float32 (nanochat computes them
        # in float32, then casts to its compute dtype). Partial RoPE: pairs past rope_pairs have frequency 0.
        D = C // cfg["n_head"]
        inv_freq = 1.0 / (a["rope_base"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
        inv_freq[rope_pairs(cfg):] = 0
        freqs = torch.outer(torch.arange(cfg["sequence_len"], dtype=torch.float64), inv_freq)
        self.register_buffer("cos", freqs.cos().float()[None, :, None, :], persistent=False)
        self.register_buffer("sin", freqs.sin().float()[None, :, None, :], persistent=False)

    def hidden(self, idx):
        """idx (B, T) -> the final normed residual (B, T, C)."""
        a = self.cfg["arch"]
        B, T = idx.size()
        assert T <= self.cos.size(1), f"sequence of {T} tokens is longer than the model's {self.cos.size(1)}"
        eps = a["norm_eps"]
        cos, sin = self.cos[:, :T], self.sin[:, :T]
        e = self.transformer.wte(idx)
        if self.ngram_orders:
            from frontier_ngram import ngram_embed  # same folder
            for n in self.ngram_orders:
                e = e + ngram_embed(idx, n, self.ngram_buckets, self.ngram_embeds[str(n)].weight)
        x = norm(e, eps)
        if a["smear"]:  # nanochat's smear: the previous token's embedding, gated
            gate = self.smear_lambda * torch.sigmoid(self.smear_gate(x[:, 1:, :SMEAR_CHANNELS]))
            x = torch.cat([x[:, :1], x[:, 1:] + gate * x[:, :-1]], dim=1)
        x0 = x_mid = x
        self.aux_loss = 0.0
        for i, block in enumerate(self.transformer.h):
            x = self.resid_lambdas[i] * x + self.x0_lambdas[i] * x0
            ve = self.value_embeds[str(i)](idx) if str(i) in self.value_embeds else None
            x = block(x, ve, cos, sin, eps)
            if isinstance(block.mlp, MoEMLP):
                self.aux_loss = self.aux_loss + block.mlp.aux
            if i == len(self.transformer.h) // 2:
                x_mid = x
        if a["backout"]:
            x = x - self.backout_lambda * x_mid
        return norm(x, eps)

    def raw_logits(self, idx):
        """(B, T, vocab_size) before the softcap."""
        W = self.transformer.wte.weight if self.cfg["arch"]["tie_embeddings"] else self.lm_head.weight
        return F.linear(self.hidden(idx), W)[..., :self.cfg["vocab_size"]]

    def forward(self, idx):
        """idx (B, T) token ids -> logits (B, T, vocab_size), softcapped as nanochat's forward returns them."""
        logits, cap = self.raw_logits(idx), self.cfg["arch"]["softcap"]
        return cap * torch.tanh(logits / cap) if cap > 0 else logits

    def loss(self, idx, targets, mtp_weights=()):
        """Mean cross-entropy of the next token (targets -1 ignored), plus sum_j mtp_weights[j-1] x the mean
        cross-entropy of token t+1+j (targets shifted j left within the row; past the end ignored), as Frontier
        trains with model.mtp_heads. The MoE load-balance term is not included (self.aux_loss holds it)."""
        logits = self.forward(idx)
        V = logits.size(-1)
        loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=-1)
        for j, w in enumerate(mtp_weights, start=1):
            if w > 0:
                tj = torch.full_like(targets, -1)
                tj[:, :-j] = targets[:, j:]
                loss = loss + w * F.cross_entropy(logits.reshape(-1, V), tj.reshape(-1), ignore_index=-1)
        return loss


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

def load_config(dir, tensor_names=()):
    """config.json's GPTConfig fields, with cfg["arch"]: ARCHITECTURE updated from "frontier"."architecture" (or,
    for nanochat's own directory whose tensors include smear_gate.weight, nanochat 92d63d4's levers)."""
    path = os.path.join(dir, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    for k in ("sequence_len", "vocab_size", "n_layer", "n_head", "n_kv_head", "n_embd"):
        if not isinstance(cfg.get(k), int) or cfg[k] <= 0:
            raise FormatError(f"{path}: field '{k}' is missing or not a positive integer")
    pattern = cfg.get("window_pattern", "L")
    if not isinstance(pattern, str) or not pattern or set(pattern.upper()) - set("SL"):
        raise FormatError(f"{path}: window_pattern {pattern!r} is not a string of L and S")
    arch = dict(ARCHITECTURE)
    fa = cfg.get("frontier", {}).get("architecture")
    if fa is None:
        if "smear_gate.weight" in tensor_names:
            arch.update(NANOCHAT_CURRENT)
    else:
        for k, v in fa.items():
            if k in ("head_dim", "mlp_dim", "padded_vocab_size", "nanochat_commit"):
                continue  # derived from the shape (Frontier's reader checks them)
            if k not in arch:
                raise FormatError(f"{path}: frontier.architecture has {k!r}, which this loader does not know")
            if k == "norm_eps" and v != arch[k]:
                raise FormatError(f"{path}: frontier.architecture norm_eps is {v!r}; this loader's model has "
                                  f"{arch[k]!r}")
            arch[k] = v
    cfg["arch"] = arch
    return cfg


def load_model(dir, dtype=torch.float32):
    """The model of a `frontier export` directory (eval mode), without its tokenizer. strict: every tensor present,
    no extra."""
    tensors, _ = read_safetensors(os.path.join(dir, "model.safetensors"))
    cfg = load_config(dir, tensors.keys())
    model = GPT(cfg)
    want = model.state_dict()
    for name, t in tensors.items():  # vocabulary rows stored unpadded: pad them as nanochat allocates them
        if name in want and t.dim() == 2 and t.shape[0] == cfg["vocab_size"] < want[name].shape[0]:
            tensors[name] = torch.cat([t, t.new_zeros(want[name].shape[0] - t.shape[0], t.shape[1])])
    model.load_state_dict(tensors, strict=True)
    return model.to(dtype).eval()


def load(dir, dtype=torch.float32):
    """(model in eval mode, Tokenizer) from a `frontier export` directory."""
    return load_model(dir, dtype), Tokenizer(os.path.join(dir, "tokenizer"))


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
