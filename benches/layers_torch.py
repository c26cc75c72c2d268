#!/usr/bin/env python3
"""The `layers` bench's products with PyTorch's eager kernels on one thread, beside rune's
medians from criterion's last run of `cargo bench -p rune-benches --bench layers`.

    cargo bench -p rune-benches --bench layers
    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 python3 benches/layers_torch.py [TARGET_DIR]

(TARGET_DIR defaults to $CARGO_TARGET_DIR, else ./target; pin both runs to one core with
`taskset -c 1`.) Prints each entry's median in µs for PyTorch and rune and the ratio
rune / torch; entries that criterion has not measured show PyTorch alone. The entries and
their operands are those of benches/layers.rs.
"""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
torch.set_num_interop_threads(1)

B, T, H, DH = 8, 64, 4, 32


def rand(*shape):
    return torch.rand(*shape, dtype=torch.float32) * 2 - 1


def median_us(f, budget=1.0):
    """Median wall time of `f()` in µs over at least 20 calls and about `budget` seconds."""
    for _ in range(5):
        f()
    times = []
    start = time.perf_counter()
    while len(times) < 20 or time.perf_counter() - start < budget:
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2] * 1e6


def product(name, a, b):
    """`a @ b` and both operands' gradients, as torch.autograd computes them."""
    g = rand(*torch.matmul(a, b).shape)
    a = a.detach().requires_grad_(True)
    b = b.detach().requires_grad_(True)

    def fwd():
        with torch.no_grad():
            torch.matmul(a, b)

    y = torch.matmul(a, b)

    def bwd():
        # The VJPs alone, as the rune entry times them: g·bᵀ and aᵀ·g.
        torch.autograd.grad(y, (a, b), g, retain_graph=True)

    return [(f"{name}_fwd", median_us(fwd)), (f"{name}_bwd", median_us(bwd))]


def heads(qkv, j):
    d = H * DH
    return qkv[:, :, j * d:(j + 1) * d].reshape(B, T, H, DH).permute(0, 2, 1, 3)


def softmax(p):
    """Softmax along the last axis and its VJP."""
    g = rand(*p.shape)
    pr = p.detach().requires_grad_(True)

    def fwd():
        with torch.no_grad():
            torch.softmax(p, -1)

    y = torch.softmax(pr, -1)

    def bwd():
        torch.autograd.grad(y, (pr,), g, retain_graph=True)

    return [("softmax_fwd", median_us(fwd)), ("softmax_bwd", median_us(bwd))]


def conv(name, xs, ws):
    x, w = rand(*xs), rand(*ws)
    g = rand(*F.conv2d(x, w, padding=1).shape)
    xr = x.detach().requires_grad_(True)
    wr = w.detach().requires_grad_(True)

    def fwd():
        with torch.no_grad():
            F.conv2d(x, w, padding=1)

    y = F.conv2d(xr, wr, padding=1)

    def bwd():
        torch.autograd.grad(y, (xr, wr), g, retain_graph=True)

    return [(f"{name}_fwd", median_us(fwd)), (f"{name}_bwd", median_us(bwd))]


def main():
    torch.manual_seed(0)
    rows = []
    q, v = rand(B, H, T, DH), rand(B, H, T, DH)
    kt, p = rand(B, H, DH, T), rand(B, H, T, T)
    rows += product("bmm_qk", q, kt)
    rows += product("bmm_pv", p, v)
    qkv = rand(B, T, 3 * H * DH)
    qh, kh, vh = heads(qkv, 0), heads(qkv, 1), heads(qkv, 2)
    rows += product("bmm_qk_heads", qh, kh.transpose(-1, -2))
    rows += product("bmm_pv_heads", p, vh)
    rows += softmax(p)
    rows += conv("conv1", (32, 3, 32, 32), (16, 3, 3, 3))
    rows += conv("conv2", (32, 16, 16, 16), (32, 16, 3, 3))

    target = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CARGO_TARGET_DIR", "target")
    root = os.path.join(target, "criterion", "layers_f32")
    print(f"{'entry':20} {'torch µs':>10} {'rune µs':>10} {'rune/torch':>10}")
    for name, t_us in rows:
        path = os.path.join(root, name, "new", "estimates.json")
        try:
            with open(path) as f:
                r_us = json.load(f)["median"]["point_estimate"] / 1e3
        except FileNotFoundError:
            print(f"{name:20} {t_us:10.1f}")
            continue
        print(f"{name:20} {t_us:10.1f} {r_us:10.1f} {r_us / t_us:10.2f}")


if __name__ == "__main__":
    main()
