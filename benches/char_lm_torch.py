#!/usr/bin/env python3
"""The `char_lm` example's model and training step in PyTorch eager, on one thread.

    taskset -c 0 python3 benches/char_lm_torch.py            # ms per training step
    taskset -c 0 python3 benches/char_lm_torch.py --train    # the example's whole run

The same sizes (context 64, width 64, 4 heads, 4 pre-norm blocks, batch 32), layers
(`nn.Embedding`, `nn.LayerNorm`, `nn.MultiheadAttention` with a causal mask, `nn.Linear`
4·width wide with `tanh`), PyTorch's default initialisation (which `rune_ad::nn` copies) and
step: the mean cross-entropy and its gradient, `clip_grad_norm_` to 1, AdamW (weight decay 0.01)
with the learning rate warmed up over 100 steps and then cosine-annealed. It prints the wall
time of a step and the mean time the thread spent on the CPU. Compare with

    taskset -c 0 cargo run --release --example char_lm -- --time

in the same run (docs/benchmarks.md, "The char_lm example beside PyTorch eager").
"""
import argparse
import gzip
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.set_num_interop_threads(1)

CONTEXT, WIDTH, HEADS, LAYERS, BATCH = 64, 64, 4, 4, 32
STEPS, WARMUP, LR, MIN_LR = 2000, 100, 3e-3, 3e-4
WEIGHT_DECAY, MAX_GRAD_NORM, EVAL_EVERY = 0.01, 1.0, 100
TEXT = os.path.join(os.path.dirname(__file__), "..", "data", "pride-and-prejudice.txt.gz")


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention_norm = nn.LayerNorm(WIDTH)
        self.attention = nn.MultiheadAttention(WIDTH, HEADS, batch_first=True)
        self.mlp_norm = nn.LayerNorm(WIDTH)
        self.mlp = nn.Sequential(
            nn.Linear(WIDTH, 4 * WIDTH), nn.Tanh(), nn.Linear(4 * WIDTH, WIDTH)
        )

    def forward(self, x, mask):
        a = self.attention_norm(x)
        h = x + self.attention(a, a, a, attn_mask=mask, need_weights=False)[0]
        return h + self.mlp(self.mlp_norm(h))


class CharLm(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.token = nn.Embedding(vocab, WIDTH)
        self.position = nn.Embedding(CONTEXT, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, vocab)

    def forward(self, ids):
        length = ids.shape[1]
        mask = torch.triu(torch.ones(length, length, dtype=torch.bool), 1)
        h = self.token(ids) + self.position.weight[:length]
        for block in self.blocks:
            h = block(h, mask)
        return self.head(self.norm(h))

    def loss(self, ids, targets):
        logits = self(ids)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def warmup_cosine(t):
    """The learning rate of step `t + 1` as a factor of LR (rune's `Schedule::warmup_cosine`)."""
    if t < WARMUP:
        return (t + 1) / WARMUP
    fraction = min((t - WARMUP) / (STEPS - WARMUP), 1.0)
    return (MIN_LR + (LR - MIN_LR) * (1 + math.cos(math.pi * fraction)) / 2) / LR


def cpu_seconds():
    """The calling thread's time on the CPU, from Linux's /proc/thread-self/schedstat (None
    elsewhere), as the example reads it: it leaves out the time other programs held the core."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[0]) * 1e-9
    except OSError:
        return None


def windows(ids, starts):
    idx = starts[:, None] + torch.arange(CONTEXT)[None, :]
    return ids[idx], ids[idx + 1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", action="store_true", help="train as the example does")
    parser.add_argument("--steps", type=int, default=100, help="steps timed without --train")
    args = parser.parse_args()

    with gzip.open(TEXT, "rt", encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    ids = torch.tensor([chars.index(c) for c in text], dtype=torch.long)
    split = int(len(ids) * 0.9)
    train, validation = ids[:split], ids[split:]

    torch.manual_seed(0)
    model = CharLm(len(chars))
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine)
    generator = torch.Generator().manual_seed(1)

    def step():
        starts = torch.randint(0, len(train) - CONTEXT, (BATCH,), generator=generator)
        x, y = windows(train, starts)
        optimizer.zero_grad(set_to_none=True)
        loss = model.loss(x, y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), MAX_GRAD_NORM)
        optimizer.step()
        schedule.step()
        return loss.item()

    if not args.train:
        for _ in range(10):
            step()
        cpu_start = cpu_seconds()
        times = []
        for _ in range(args.steps):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        cpu_end = cpu_seconds()
        cpu = ""
        if cpu_start is not None and cpu_end is not None:
            cpu = f", on the CPU {1e3 * (cpu_end - cpu_start) / args.steps:.2f} ms"
        times.sort()
        print(
            f"torch {torch.__version__}, {torch.get_num_threads()} thread: "
            f"{1e3 * times[len(times) // 2]:.2f} ms a step (median of {args.steps}), "
            f"mean {1e3 * sum(times) / len(times):.2f} ms{cpu}"
        )
        return

    tiles = torch.arange(0, (len(validation) - 1) // CONTEXT) * CONTEXT
    start = time.perf_counter()
    total = 0.0
    for t in range(1, STEPS + 1):
        total += step()
        if t % EVAL_EVERY == 0:
            print(f"step {t:>4}/{STEPS}  train loss {total / EVAL_EVERY:.4f}", flush=True)
            total = 0.0
    seconds = time.perf_counter() - start
    with torch.no_grad():
        losses = [
            model.loss(*windows(validation, chunk)).item() * len(chunk)
            for chunk in tiles.split(BATCH)
        ]
    print(f"trained {STEPS} steps in {seconds:.1f} s ({1e3 * seconds / STEPS:.1f} ms a step)")
    print(f"validation loss: {sum(losses) / len(tiles):.4f} nats per character")


if __name__ == "__main__":
    main()
