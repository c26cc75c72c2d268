#!/usr/bin/env python3
"""GradBench's JAX tool, timed to the end of each computation.

usage (from a GradBench checkout): python jax_blocking.py [run.py's arguments]

GradBench's `wrap.multiple_runs` times `function(input)` and stops the clock when it returns.
A jitted JAX function on the CPU returns as soon as its computation is dispatched, so the
clock stops before anything is computed: the timings are the dispatch (a few µs) plus, now
and then, a wait when the dispatch queue is full or the first call's compilation. Their mean
is not the cost of a call (gmm 64_100's jacobian: a harness mean of 34 ms where a call takes
258 ms when waited for, docs/benchmarks.md "GradBench"). Every other tool is synchronous.

This runs the JAX tool unchanged except that each timed call waits for its result
(`jax.block_until_ready`) before the clock stops, which is what the timing of the other tools
measures. `run.sh`'s tool `jax` uses it; `jax-async` runs GradBench's tool as it is.
"""
import os
import runpy
import sys

import jax
from gradbench import wrap

TOOL = os.path.join("python", "gradbench", "gradbench", "tools", "jax", "run.py")


def waiting(function):
    """`function`, returning only when its result is computed."""

    def call(input):
        return jax.block_until_ready(function(input))

    return call


def waits(make_decorator):
    """A `wrap` decorator factory whose decorated functions wait for their results."""

    def factory(**options):
        decorator = make_decorator(**options)
        return lambda function: decorator(waiting(function))

    return factory


wrap.multiple_runs = waits(wrap.multiple_runs)
wrap.function = waits(wrap.function)
sys.path.insert(0, os.path.dirname(os.path.abspath(TOOL)))
sys.argv = [TOOL] + sys.argv[1:]
runpy.run_path(TOOL, run_name="__main__")
