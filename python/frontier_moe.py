"""Frontier's mixture-of-experts MLP (src/autograd/tape.h `moe_mlp`, design in src/reference/moe.h) as a PyTorch
module.

    import sys; sys.path.insert(0, "python")
    from frontier_moe import MoE
    moe = MoE(C=512, E=8, Hd=1024, top_k=2, slope=0.0)
    out, aux = moe(x)                               # x (..., C) -> out (..., C), aux a scalar
    loss = task_loss(out) + aux_weight * aux        # Frontier's op adds aux_weight * d(aux) in its own backward

Routing: probs = softmax(x @ router^T) over the E experts; each token takes its top_k experts by prob (ties: lower
expert index first), weighted by the chosen probs renormalised to sum 1; expert e computes
proj[e] @ act(fc[e] @ x) with act(u) = (u >= 0 ? u : slope * u)^2 (slope 0: nanochat's relu^2). No capacity limit:
no token is dropped. aux = E * sum_e f_e * P_e (Switch Transformer): f_e the fraction of the N * top_k
(token, slot) pairs routed to e (a count, no gradient), P_e the mean of probs[:, e].

    /usr/bin/python3 python/frontier_moe.py request.json response.json

runs the peer for tests/moe_test.cpp: each case gives the shape, x, router, fc, proj (flat lists), G and aux_weight;
the response holds out, aux and the gradients of sum(out * G) + aux_weight * aux w.r.t. x, router, fc, proj.
Needs only torch (Debian's python3-torch 1.13).
"""
import json
import sys

import torch
import torch.nn as nn


class MoE(nn.Module):
    def __init__(self, C, E, Hd, top_k, slope=0.0):
        super().__init__()
        assert 1 <= top_k <= E
        self.E, self.top_k, self.slope = E, top_k, slope
        self.router = nn.Parameter(torch.empty(E, C))  # logits = x @ router^T
        self.fc = nn.Parameter(torch.empty(E, Hd, C))  # expert e's c_fc, rows = hidden units
        self.proj = nn.Parameter(torch.empty(E, C, Hd))  # expert e's c_proj
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self):  # nanochat's MLP init per expert: c_fc uniform with std 1/sqrt(C), c_proj zero
        C = self.fc.shape[2]
        s = 3**0.5 * C**-0.5
        self.fc.uniform_(-s, s)
        self.proj.zero_()
        self.router.normal_(0.0, C**-0.5)

    def route(self, x):
        """probs (N, E), chosen experts (N, top_k) by descending prob (ties: lower index), gates (N, top_k)."""
        return route(x, self.router, self.top_k)

    def forward(self, x):
        return moe_forward(x, self.router, self.fc, self.proj, self.top_k, self.slope)


def route(x, router, top_k):
    probs = torch.softmax(x @ router.t(), dim=-1)
    # torch.topk does not promise an order among equal values; a stable descending sort keeps lower index first.
    top_p, top_e = torch.sort(probs, dim=-1, descending=True, stable=True)
    top_p, top_e = top_p[:, :top_k], top_e[:, :top_k]
    return probs, top_e, top_p / top_p.sum(-1, keepdim=True)


def moe_forward(x, router, fc, proj, top_k, slope=0.0):
    """The op as a function of its tensors (python/frontier_torch.py stacks a layer's experts into fc, proj):
    x (..., C), router (E, C), fc (E, Hd, C), proj (E, C, Hd) -> (out (..., C), aux)."""
    shape = x.shape
    x = x.reshape(-1, shape[-1])
    N, E = x.shape[0], router.shape[0]
    probs, top_e, gate = route(x, router, top_k)
    out = torch.zeros_like(x)
    for e in range(E):
        n, j = torch.nonzero(top_e == e, as_tuple=True)
        if n.numel() == 0:
            continue
        u = x[n] @ fc[e].t()
        a = torch.where(u >= 0, u, slope * u) ** 2
        out = out.index_add(0, n, gate[n, j, None] * (a @ proj[e].t()))
    f = torch.bincount(top_e.reshape(-1), minlength=E).to(x.dtype) / (N * top_k)
    aux = E * (f * probs.mean(0)).sum()
    return out.reshape(shape), aux


def run(case):
    p = case["params"]
    N, C, E, Hd = p["N"], p["C"], p["E"], p["Hd"]
    moe = MoE(C, E, Hd, p["top_k"], p["slope"]).double()
    with torch.no_grad():
        moe.router.copy_(torch.tensor(case["router"]).reshape(E, C))
        moe.fc.copy_(torch.tensor(case["fc"]).reshape(E, Hd, C))
        moe.proj.copy_(torch.tensor(case["proj"]).reshape(E, C, Hd))
    x = torch.tensor(case["x"], dtype=torch.float64).reshape(N, C).requires_grad_(True)
    G = torch.tensor(case["G"], dtype=torch.float64).reshape(N, C)
    out, aux = moe(x)
    ((out * G).sum() + p["aux_weight"] * aux).backward()
    flat = lambda t: t.detach().reshape(-1).tolist()
    return {"out": flat(out), "aux": aux.item(), "dx": flat(x.grad), "drouter": flat(moe.router.grad),
            "dfc": flat(moe.fc.grad), "dproj": flat(moe.proj.grad)}


if __name__ == "__main__":
    torch.set_default_dtype(torch.float64)
    with open(sys.argv[1]) as f:
        req = json.load(f)
    with open(sys.argv[2], "w") as f:
        json.dump([run(c) for c in req["cases"]], f)
