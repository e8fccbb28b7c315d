"""PyTorch peer for tests/ops_torch_test.cpp: forward + autograd backward of each primitive op, in float64.

    /usr/bin/python3 ops_ref.py request.json response.json

Each case in the request names an op, its shape parameters, its inputs (flat lists) and G, the upstream gradient;
the response holds the op's output and d(sum(out * G))/d(input) for every input. The ops are written the way
nanochat writes them (rotary half-split, softcap 15*tanh(z/15), ReLU^2), in plain torch 1.13 (no F.rms_norm or
F.scaled_dot_product_attention there, so both are spelled out).
"""
import json
import sys

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def t(x, shape):
    return torch.tensor(x, dtype=torch.float64).reshape(shape).requires_grad_(True)


def rms_norm(x, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def apply_rotary_emb(x, cos, sin):  # nanochat: x (B, T, H, D), cos/sin (1, T, 1, D/2)
    d = x.shape[3] // 2
    x1, x2 = x[..., :d], x[..., d:]
    y1 = x1 * cos + x2 * sin
    y2 = x1 * (-sin) + x2 * cos
    return torch.cat([y1, y2], 3)


def rotary_tables(T, D, base):
    channel_range = torch.arange(0, D, 2, dtype=torch.float64)
    inv_freq = 1.0 / (base ** (channel_range / D))
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    return freqs.cos()[None, :, None, :], freqs.sin()[None, :, None, :]


def causal_attention(q, k, v, scale=0.0, window=0):  # (B, T, H, D), GQA by repeating kv heads
    """scale 0 means 1/sqrt(D); window W > 0: query t sees keys t - W <= s <= t (flash-attn window_size=(W, 0))."""
    B, T, H, D = q.shape
    Hkv = k.shape[2]
    k = k.repeat_interleave(H // Hkv, dim=2)
    v = v.repeat_interleave(H // Hkv, dim=2)
    q, k, v = (x.transpose(1, 2) for x in (q, k, v))  # (B, H, T, D)
    att = (q @ k.transpose(-2, -1)) * (scale if scale else 1 / D**0.5)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    if window > 0:
        mask &= ~torch.ones(T, T, dtype=torch.bool).tril(-window - 1)  # s < t - W
    att = att.masked_fill(~mask, float("-inf")).softmax(-1)
    return (att @ v).transpose(1, 2)


def run(case):
    op, p = case["op"], case["params"]
    if op == "matmul":
        M, K, N = p["M"], p["K"], p["N"]
        ins = {"x": t(case["x"], (M, K)), "W": t(case["W"], (N, K))}
        out = F.linear(ins["x"], ins["W"])
    elif op == "rmsnorm":
        ins = {"x": t(case["x"], (p["N"], p["C"]))}
        out = rms_norm(ins["x"], p["eps"])
    elif op == "rope":
        B, T, H, D = p["B"], p["T"], p["H"], p["D"]
        ins = {"x": t(case["x"], (B, T, H, D))}
        cos, sin = rotary_tables(T, D, p["base"])
        out = apply_rotary_emb(ins["x"], cos, sin)
    elif op == "relu2":
        ins = {"x": t(case["x"], (len(case["x"]),))}
        out = F.relu(ins["x"]).square()
    elif op == "softcap_ce":
        N, V, cap = p["N"], p["V"], p["cap"]
        ins = {"z": t(case["z"], (N, V))}
        logits = cap * torch.tanh(ins["z"] / cap)
        out = F.cross_entropy(logits, torch.tensor(case["targets"]), ignore_index=-1).reshape(1)
    elif op == "attention":
        B, T, H, Hkv, D = p["B"], p["T"], p["H"], p["Hkv"], p["D"]
        ins = {"q": t(case["q"], (B, T, H, D)), "k": t(case["k"], (B, T, Hkv, D)), "v": t(case["v"], (B, T, Hkv, D))}
        out = causal_attention(ins["q"], ins["k"], ins["v"], p.get("scale", 0.0), p.get("window", 0))
    elif op == "leaky_relu2":
        ins = {"x": t(case["x"], (len(case["x"]),))}
        out = F.leaky_relu(ins["x"], p["slope"]).square()
    elif op == "gated_act":  # x (N, 2H): act(x[:, :H]) * x[:, H:]
        ins = {"x": t(case["x"], (p["N"], 2 * p["H"]))}
        a, b = ins["x"].chunk(2, dim=-1)
        out = (F.silu(a) if p["kind"] == "swiglu" else F.gelu(a, approximate="tanh")) * b
    elif op == "smear":  # nanochat: gate = lambda * sigmoid(smear_gate(x[:, 1:, :G])), mixed into x[:, 1:]
        B, T, C, G = p["B"], p["T"], p["C"], p["G"]
        ins = {"x": t(case["x"], (B, T, C)), "w": t(case["w"], (1, G)), "lam": t(case["lam"], (1,))}
        x = ins["x"]
        gate = ins["lam"] * torch.sigmoid(F.linear(x[:, 1:, :G], ins["w"]))
        out = torch.cat([x[:, :1], x[:, 1:] + gate * x[:, :-1]], dim=1)
    elif op == "axpy":
        n = p["n"]
        ins = {"a": t(case["a"], (n,)), "b": t(case["b"], (n,)), "s": t(case["s"], (len(case["s"]),))}
        out = ins["a"] + p["alpha"] * ins["s"][p["i"]] * ins["b"]
    elif op == "key_shift":  # dims d with d mod (D/2) >= p0 take position t-1's value (t >= 1)
        B, T, H, D, p0 = p["B"], p["T"], p["H"], p["D"], p["p0"]
        ins = {"k": t(case["k"], (B, T, H, D))}
        k = ins["k"]
        shifted = torch.cat([k[:, :1], k[:, :-1]], dim=1)
        out = torch.where(torch.arange(D) % (D // 2) >= p0, shifted, k)
    else:
        raise SystemExit(f"unknown op {op}")
    G = torch.tensor(case["G"]).reshape(out.shape)
    (out * G).sum().backward()
    res = {"out": out.detach().reshape(-1).tolist()}
    for name, x in ins.items():
        res["d" + name] = x.grad.reshape(-1).tolist()
    return res


def main():
    req = json.load(open(sys.argv[1]))
    json.dump([run(c) for c in req["cases"]], open(sys.argv[2], "w"))


if __name__ == "__main__":
    main()
