"""PyTorch peer for tests/gpt_torch_test.cpp: the same GPT written in plain torch (as nanochat's gpt.py), fed
Frontier's weights, batch and rotary tables; writes loss, logits and every parameter gradient.

    /usr/bin/python3 gpt_ref.py spec.json weights.f32 batch.i32 rope.f32 out.f32

Modes by spec key: default (loss, logits, gradients); "steps" (Muon + AdamW steps: losses, final weights);
"sequences" (per-position losses of each listed sequence, float64); "token_bytes" (val_bpb, one float64).
Opt-in precisions of the default mode (tests/gpt_bf16_torch_test.cpp): "float64": true computes in float64 (the
fp32 weights widened exactly; norm keeps fp32's eps, so it is Frontier's model without rounding) and writes float64;
"autocast": "bf16" runs the forward under torch.autocast("cpu", dtype=torch.bfloat16), backward outside it.

spec: {"depth", "dim", "n_head", "n_kv_head", "head_dim", "vocab_size", "B", "T",
       "params": [{"name", "shape", "offset"}]}; weights: the arena (float32); batch: idx then targets (int32, B*T
each); rope: cos then sin (float32, T*D/2 each). out: loss, logits (B*T*V), then the gradient arena.
"""
import contextlib
import json
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(1)


def norm(x):  # F.rms_norm(x, (x.size(-1),)) in torch >= 2.4, whose default eps is finfo(dtype).eps
    eps = torch.finfo(torch.float32 if x.dtype == torch.float64 else x.dtype).eps  # float64 mode: Frontier's eps
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def apply_rotary_emb(x, cos, sin):
    d = x.shape[3] // 2
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat([x1 * cos + x2 * sin, x1 * (-sin) + x2 * cos], 3)


def has_ve(i, n_layer):
    return i % 2 == (n_layer - 1) % 2


def attention(q, k, v):
    B, T, H, D = q.shape
    rep = H // k.shape[2]
    k, v = k.repeat_interleave(rep, dim=2), v.repeat_interleave(rep, dim=2)
    q, k, v = (z.transpose(1, 2) for z in (q, k, v))
    att = (q @ k.transpose(-2, -1)) / D**0.5
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    att = att.masked_fill(~mask, float("-inf")).softmax(-1)
    return (att @ v).transpose(1, 2)


def forward(spec, P, idx, targets, cos, sin):
    L, C, H, Hkv, D, V = (spec[k] for k in ("depth", "dim", "n_head", "n_kv_head", "head_dim", "vocab_size"))
    B, T = spec["B"], spec["T"]
    x = norm(F.embedding(idx, P["wte"]))
    x0 = x
    for i in range(L):
        p = f"h.{i}."
        x = P["resid_lambdas"][i] * x + P["x0_lambdas"][i] * x0
        h = norm(x)
        q = F.linear(h, P[p + "attn.c_q"]).view(B, T, H, D)
        k = F.linear(h, P[p + "attn.c_k"]).view(B, T, Hkv, D)
        v = F.linear(h, P[p + "attn.c_v"]).view(B, T, Hkv, D)
        if has_ve(i, L):
            ve = F.embedding(idx, P[f"value_embeds.{i}"]).view(B, T, Hkv, D)
            gate = 2 * torch.sigmoid(F.linear(h[..., :32], P[p + "attn.ve_gate"]))
            v = v + gate.unsqueeze(-1) * ve
        q, k = apply_rotary_emb(q, cos, sin), apply_rotary_emb(k, cos, sin)
        q, k = norm(q), norm(k)
        y = attention(q, k, v).contiguous().view(B, T, -1)
        x = x + F.linear(y, P[p + "attn.c_proj"])
        x = x + F.linear(F.relu(F.linear(norm(x), P[p + "mlp.c_fc"])).square(), P[p + "mlp.c_proj"])
    logits = F.linear(norm(x), P["lm_head"])
    capped = 15 * torch.tanh(logits / 15)
    loss = F.cross_entropy(capped.view(-1, V), targets.view(-1), ignore_index=-1)
    return loss, logits


POLAR = [
    (8.156554524902461, -22.48329292557795, 15.878769915207462),
    (4.042929935166739, -2.808917465908714, 0.5000178451051316),
    (3.8916678022926607, -2.772484153217685, 0.5060648178503393),
    (3.285753657755655, -2.3681294933425376, 0.46449024233003106),
    (2.3465413258596377, -1.7097828382687081, 0.42323551169305323),
]


@torch.no_grad()
def muon_step(p, buf, lr, momentum, wd, ns_steps, opts=None, nv=None, last=None):
    """nanochat's Muon step (muon_step_fused), in fp32. opts (nanochat 92d63d4's switches): "equilibrate" (MuonEq
    rows), "renormalize" (Muon+), "normuon_beta2" > 0 (NorMuon, moments in nv), written after 92d63d4's optim.py.
    last (a one-element list): with opts["reuse"] the orthogonalisation is skipped and last[0], the update of the
    last step that computed one, is applied again (Frontier's optim.muon_every); each computed update is kept there."""
    opts = opts or {}
    g = p.grad
    buf.lerp_(g, 1 - momentum)
    if opts.get("reuse"):
        X = last[0]
        mask = (X * p) >= 0
        p.sub_(lr * X + lr * wd * p * mask)
        return
    g = g.lerp(buf, momentum)
    if opts.get("equilibrate"):
        target = g.norm() / (g.size(-2) ** 0.5)
        g = g * (target / g.norm(dim=-1, keepdim=True).clamp_min(1e-6))
    X = g / (g.norm() * 1.02 + 1e-6)
    if g.size(-2) > g.size(-1):
        for a, b, c in POLAR[:ns_steps]:
            A = X.mT @ X
            X = a * X + X @ (b * A + c * (A @ A))
    else:
        for a, b, c in POLAR[:ns_steps]:
            A = X @ X.mT
            X = a * X + (b * A + c * (A @ A)) @ X
    if opts.get("renormalize"):
        X = X * (min(X.size(-2), X.size(-1)) ** 0.5 / X.norm().clamp_min(1e-6))
    beta2 = opts.get("normuon_beta2", 0)
    if beta2 > 0:
        red_dim = -1 if X.size(-2) >= X.size(-1) else -2
        v_mean = X.square().mean(dim=red_dim, keepdim=True)
        red_size = X.size(red_dim)
        v_norm = (v_mean.sum() * red_size).sqrt()
        nv.lerp_(v_mean, 1 - beta2)
        step_size = nv.clamp_min(1e-10).rsqrt()
        v_norm_new = ((v_mean * red_size) * step_size.square()).sum().sqrt()
        X = X * (step_size * (v_norm / v_norm_new.clamp_min(1e-10)))
    if last is not None:
        last[0] = X
    mask = (X * p) >= 0
    p.sub_(lr * X + lr * wd * p * mask)


def train_steps(spec, P, idx, targets, cos, sin, out_path):
    """spec["steps"]: [{"lr_mult", "momentum", "progress"}]; spec["groups"]: {name: {kind, lr, betas, eps, wd}}."""
    adam_groups, muon = [], []
    for name, g in spec["groups"].items():
        if g["kind"] == "adamw":
            adam_groups.append(dict(params=[P[name]], lr=g["lr"], betas=tuple(g["betas"]), eps=g["eps"],
                                    weight_decay=g["wd"], initial_lr=g["lr"]))
        else:
            t = P[name]
            nv = torch.zeros(t.size(0), 1) if t.size(0) >= t.size(1) else torch.zeros(1, t.size(1))
            muon.append((t, torch.zeros_like(t), g["lr"], nv, [None]))
    adam = torch.optim.AdamW(adam_groups)
    losses = []
    every = spec.get("muon_every", 1)
    for step, st in enumerate(spec["steps"]):
        for t in P.values():
            t.grad = None
        loss, _ = forward(spec, P, idx, targets, cos, sin)
        loss.backward()
        losses.append(loss.item())
        for group in adam.param_groups:
            group["lr"] = group["initial_lr"] * st["lr_mult"]
        adam.step()
        wd = spec["weight_decay"] * (1 - st["progress"])
        opts = dict(spec.get("muon") or {}, reuse=step % every != 0)
        for p, buf, lr, nv, last in muon:
            muon_step(p, buf, lr * st["lr_mult"], st["momentum"], wd, spec["ns_steps"], opts, nv, last)
    flat = np.concatenate([P[p["name"]].detach().reshape(-1).numpy() for p in spec["params"]])
    np.concatenate([np.array(losses, dtype=np.float32), flat.astype(np.float32)]).tofile(out_path)


def main():
    spec = json.load(open(sys.argv[1]))
    flat = np.fromfile(sys.argv[2], dtype=np.float32)
    batch = np.fromfile(sys.argv[3], dtype=np.int32)
    rope = np.fromfile(sys.argv[4], dtype=np.float32)
    L, C, H, Hkv, D, V = (spec[k] for k in ("depth", "dim", "n_head", "n_kv_head", "head_dim", "vocab_size"))
    B, T = spec["B"], spec["T"]
    P = {}
    for p in spec["params"]:
        n = int(np.prod(p["shape"]))
        P[p["name"]] = torch.tensor(flat[p["offset"]:p["offset"] + n].reshape(p["shape"]), requires_grad=True)
    idx = torch.tensor(batch[:B * T].reshape(B, T), dtype=torch.long)
    targets = torch.tensor(batch[B * T:].reshape(B, T), dtype=torch.long)
    half = T * D // 2
    cos = torch.tensor(rope[:half].reshape(1, T, 1, D // 2))
    sin = torch.tensor(rope[half:2 * half].reshape(1, T, 1, D // 2))

    if "steps" in spec:
        return train_steps(spec, P, idx, targets, cos, sin, sys.argv[5])
    if "sequences" in spec:  # per-position losses of each sequence (CORE scoring), concatenated, float64
        out = []
        with torch.no_grad():
            for seq in spec["sequences"]:
                t = torch.tensor(seq, dtype=torch.long)
                sub = dict(spec, B=1, T=len(seq) - 1)
                Tn = len(seq) - 1
                _, logits = forward(sub, P, t[None, :-1], t[None, 1:], cos[:, :Tn], sin[:, :Tn])
                capped = 15 * torch.tanh(logits / 15)
                out.append(F.cross_entropy(capped.view(-1, V), t[1:], reduction="none").double().numpy())
        np.concatenate(out).tofile(sys.argv[5])
        return
    if "token_bytes" in spec:  # val_bpb as nanochat's evaluate_bpb, over all rows of the batch
        with torch.no_grad():
            _, logits = forward(spec, P, idx, targets, cos, sin)
            capped = 15 * torch.tanh(logits / 15)
            nats = F.cross_entropy(capped.view(-1, V), targets.view(-1), ignore_index=-1, reduction="none")
            nbytes = torch.tensor(np.fromfile(spec["token_bytes"], dtype=np.int32))[targets.view(-1)]
            mask = nbytes > 0
            bpb = nats[mask].double().sum() / (math.log(2) * nbytes[mask].double().sum())
        np.array([bpb.item()], dtype=np.float64).tofile(sys.argv[5])
        return
    f64 = spec.get("float64", False)
    if f64:
        P = {k: t.detach().double().requires_grad_() for k, t in P.items()}
        cos, sin = cos.double(), sin.double()
    precision = contextlib.nullcontext()
    if "autocast" in spec:
        if spec["autocast"] != "bf16":
            raise ValueError(f"autocast: only \"bf16\" is supported, got {spec['autocast']!r}")
        precision = torch.autocast("cpu", dtype=torch.bfloat16)
    with precision:
        loss, logits = forward(spec, P, idx, targets, cos, sin)
    loss.backward()
    dtype = np.float64 if f64 else np.float32
    grads = np.zeros_like(flat, dtype=dtype)
    for p in spec["params"]:
        g = P[p["name"]].grad
        if g is not None:
            grads[p["offset"]:p["offset"] + g.numel()] = g.reshape(-1).numpy()
    logits = logits.detach().to(torch.float64 if f64 else torch.float32)  # autocast's are bf16
    out = np.concatenate([np.array([loss.item()], dtype=dtype), logits.reshape(-1).numpy(), grads])
    out.astype(dtype).tofile(sys.argv[5])


if __name__ == "__main__":
    main()
