"""Training tokens/s of the same GPT in PyTorch (Debian python3-torch, CPU), for comparison with `frontier train`.

    /usr/bin/python3 python/torch_speed.py --depth 2 --seq-len 128 --batch 8 --threads 2 --steps 10

Uses tests/torch/gpt_ref.py's forward and Muon step (the model and optimizer the parity tests check): Muon on the
block matrices, torch.optim.AdamW on embeddings, lm_head and scalars, as `frontier train` does (--optim adamw puts
every tensor on AdamW). Random weights and tokens. Reports the median step time after 2 warm-up steps; --json
prints one JSON object instead. `frontier bench --torch` runs it (stock, and with BLIS + tcmalloc preloaded).

--precision fp32 (default) is the parity tests' model and optimizer, all fp32. --precision bf16 is nanochat's own
configuration: forward and loss under torch.autocast("cpu", dtype=torch.bfloat16) (matmuls in bf16, weights and
gradients stay fp32; backward runs outside the context, as nanochat does) and Muon's Polar Express iterations in
bf16 (muon_step_bf16 below).

--stop-above S: if the first warm-up step is still running after S seconds, a watchdog thread ends the process
there ("stopped": true) and reports S as its step time, so the tokens/s printed is an upper bound. `frontier bench`
passes 4x the best variant's step so far, so that a variant that cannot win (bf16 autocast on a CPU without native
bf16 runs its matmuls emulated, minutes a step) does not hold the benchmark for half an hour.
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import threading
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "torch"))
import gpt_ref  # noqa: E402


@torch.no_grad()
def muon_step_bf16(p, buf, lr, momentum, wd, ns_steps):
    """gpt_ref.muon_step with nanochat's bf16 Polar Express: X is cast to bfloat16 before the normalisation and the
    iterations (every matmul in bf16) and back to the parameter's dtype at the end. Momentum and update stay fp32."""
    g = p.grad
    buf.lerp_(g, 1 - momentum)
    g = g.lerp(buf, momentum)
    X = g.bfloat16()
    X = X / (X.norm() * 1.02 + 1e-6)
    if g.size(-2) > g.size(-1):
        for a, b, c in gpt_ref.POLAR[:ns_steps]:
            A = X.mT @ X
            X = a * X + X @ (b * A + c * (A @ A))
    else:
        for a, b, c in gpt_ref.POLAR[:ns_steps]:
            A = X @ X.mT
            X = a * X + (b * A + c * (A @ A)) @ X
    X = X.to(p.dtype)
    mask = (X * p) >= 0
    p.sub_(lr * X + lr * wd * p * mask)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--aspect", type=int, default=64)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--optim", choices=["muon", "adamw"], default="muon")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                    help="bf16: nanochat's autocast forward + bf16 Polar Express (see the module docstring)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--stop-above", type=float, default=0.0,
                    help="stop during the first warm-up step once it has run this many seconds, reporting "
                         "that bound (0: never)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    C = (a.depth * a.aspect + a.head_dim - 1) // a.head_dim * a.head_dim
    H, D, V, L, T, B = C // a.head_dim, a.head_dim, a.vocab, a.depth, a.seq_len, a.batch
    spec = dict(depth=L, dim=C, n_head=H, n_kv_head=H, head_dim=D, vocab_size=V, B=B, T=T)
    g = torch.Generator().manual_seed(0)
    P = {"wte": torch.randn(V, C, generator=g) * 0.8, "lm_head": torch.randn(V, C, generator=g) * 0.001,
         "resid_lambdas": torch.ones(L), "x0_lambdas": torch.full((L,), 0.1)}
    for i in range(L):
        p = f"h.{i}."
        for name, shape in [("attn.c_q", (C, C)), ("attn.c_k", (C, C)), ("attn.c_v", (C, C)), ("attn.c_proj", (C, C)),
                            ("mlp.c_fc", (4 * C, C)), ("mlp.c_proj", (C, 4 * C))]:
            P[p + name] = torch.randn(*shape, generator=g) * C**-0.5
        if gpt_ref.has_ve(i, L):
            P[p + "attn.ve_gate"] = torch.zeros(H, 32)
            P[f"value_embeds.{i}"] = torch.randn(V, C, generator=g) * C**-0.5
    for t in P.values():
        t.requires_grad_(True)
    matrices = [n for n in P if n.startswith("h.")] if a.optim == "muon" else []
    muon = [(P[n], torch.zeros_like(P[n])) for n in matrices]
    opt = torch.optim.AdamW([t for n, t in P.items() if n not in matrices], lr=1e-3)
    idx = torch.randint(0, V, (B, T), generator=g)
    tgt = torch.randint(0, V, (B, T), generator=g)
    freqs = torch.outer(torch.arange(T, dtype=torch.float32),
                        1.0 / (100000 ** (torch.arange(0, D, 2, dtype=torch.float32) / D)))
    cos, sin = freqs.cos()[None, :, None, :], freqs.sin()[None, :, None, :]
    bf16 = a.precision == "bf16"
    muon_step = muon_step_bf16 if bf16 else gpt_ref.muon_step
    if a.stop_above > 0:  # the first step is cut at stop_above: its tokens/s is at most B*T/stop_above
        def stop():
            report(a, L, C, T, B, a.stop_above, True)
            sys.stdout.flush()
            os._exit(0)
        watchdog = threading.Timer(a.stop_above, stop)
        watchdog.daemon = True
        watchdog.start()
    times = []
    for s in range(a.steps + 2):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext():
            loss, _ = gpt_ref.forward(spec, P, idx, tgt, cos, sin)
        loss.backward()
        opt.step()
        for p, buf in muon:
            muon_step(p, buf, 0.02, 0.95, 0.2, 5)
        if s == 0 and a.stop_above > 0:
            watchdog.cancel()
        if s >= 2:
            times.append(time.perf_counter() - t0)
    report(a, L, C, T, B, statistics.median(times), False)


def report(a, L, C, T, B, dt, stopped):
    if a.json:
        print(json.dumps({"torch": torch.__version__, "depth": L, "dim": C, "seq_len": T, "batch": B,
                          "threads": a.threads, "optim": a.optim, "precision": a.precision, "step_seconds": dt,
                          "tokens_per_sec": B * T / dt, "stopped": stopped}))
        return
    how = (f"at most: its first step was stopped at --stop-above {a.stop_above:g} s" if stopped
           else f"median step {dt * 1000:.1f} ms over {a.steps} steps")
    print(f"torch {torch.__version__}: depth {L} dim {C} seq {T} batch {B} threads {a.threads} {a.precision}: "
          f"{B * T / dt:.0f} tokens/s ({how})")


if __name__ == "__main__":
    main()
