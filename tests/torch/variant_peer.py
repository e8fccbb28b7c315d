"""PyTorch peer for tests/variants_torch_test.cpp: loads a model directory with python/frontier_torch.py (the
loader users run), so each architecture variant is checked as PyTorch users would build it from config.json.

    /usr/bin/python3 variant_peer.py DIR spec.json batch.i32 out.f32

spec: {"B", "T", "mtp_weights": [...], "moe_aux_weight": w,
       "params": [{"name": nanochat name, "offset", "numel", "rows"}]} (rows: the vocabulary rows kept, or 0).
out (float32): the loss (next token plus the weighted extra targets; without the MoE load-balance term, as
Frontier's loss value), the raw logits (B*T*V, before the softcap), then the gradient of loss + w * aux in
Frontier's arena order.
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from frontier_torch import load_model  # noqa: E402

torch.set_num_threads(1)


def main():
    d, spec_path, batch_path, out_path = sys.argv[1:5]
    spec = json.load(open(spec_path))
    B, T = spec["B"], spec["T"]
    model = load_model(d)
    params = dict(model.named_parameters())
    batch = np.fromfile(batch_path, dtype=np.int32)
    idx = torch.tensor(batch[:B * T].reshape(B, T), dtype=torch.long)
    targets = torch.tensor(batch[B * T:].reshape(B, T), dtype=torch.long)
    with torch.no_grad():
        logits = model.raw_logits(idx)
    loss = model.loss(idx, targets, spec.get("mtp_weights", []))
    total = loss + spec.get("moe_aux_weight", 0.0) * model.aux_loss
    total.backward()
    n = sum(p["numel"] for p in spec["params"])
    grads = np.zeros(n, dtype=np.float32)
    for p in spec["params"]:
        g = params[p["name"]].grad.detach().numpy()
        if p["rows"]:
            g = g[:p["rows"]]
        grads[p["offset"]:p["offset"] + p["numel"]] = g.reshape(-1)
    out = np.concatenate([np.array([loss.item()], dtype=np.float32), logits.reshape(-1).numpy(), grads])
    out.astype(np.float32).tofile(out_path)


if __name__ == "__main__":
    main()
