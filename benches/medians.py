#!/usr/bin/env python3
"""Prints the median time of every workloads benchmark and the ratio rune / hand, and the
speed-ups of the `parallel` bench when it has run.

Reads criterion's estimates of the last run: `python3 benches/medians.py [TARGET_DIR]`
(default: $CARGO_TARGET_DIR, else ./target).
"""
import json
import os
import sys

target = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CARGO_TARGET_DIR", "target")
root = os.path.join(target, "criterion")

GROUPS = [
    "w1_mlp_forward",
    "w1_mlp_value_and_grad",
    "w2_small_forward",
    "w2_small_value_and_grad",
    "w3_big_elementwise_forward",
    "w3_big_elementwise_value_and_grad",
    "w4_rnn_forward",
    "w4_rnn_value_and_grad",
]


def median_us(group, who):
    path = os.path.join(root, group, who, "new", "estimates.json")
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"] / 1e3


def show(us):
    if us >= 1000:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} µs" if us < 100 else f"{us:.0f} µs"


print(f"{'benchmark':36} {'rune':>10} {'hand':>10} {'rune/hand':>10}")
for group in GROUPS:
    try:
        rune, hand = median_us(group, "rune"), median_us(group, "hand")
    except FileNotFoundError:
        continue
    print(f"{group:36} {show(rune):>10} {show(hand):>10} {rune / hand:>10.2f}")

PARALLEL = [
    "parallel_w3_big_elementwise_value_and_grad",
    "parallel_w1_mlp_batch_1024_value_and_grad",
]
rows = []
for group in PARALLEL:
    try:
        one, two = median_us(group, "threads=1"), median_us(group, "threads=2")
    except FileNotFoundError:
        continue
    rows.append(f"{group:44} {show(one):>10} {show(two):>10} {one / two:>8.2f}")
if rows:
    print(f"\n{'parallel benchmark':44} {'1 thread':>10} {'2 threads':>10} {'speed-up':>8}")
    print("\n".join(rows))
