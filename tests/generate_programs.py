#!/usr/bin/env python3
"""Writes tests/generated_programs.rs: random #[differentiable] programs written the way users
write them, each checked by check_variants! (tests/support/mod.rs).

Every program mixes control flow and plain-number code with tensor code: nested `for` loops,
loops over a `Vec` field of a structure parameter (also inside an outer loop, all of it or some
layers picked by `skip`, `take`, `step_by`, `rev`, `filter`, `take_while` and `chain`, or
windows and chunks of them), `let y;` given its value in both arms of
a branch, accumulators
updated in loops (`total = &total + &h.sum();`, `+=`), `if`/`else` and `match` on plain values
(`#[nodiff]` flags and counts, loop counters), branches that only assign plain `f64` variables,
plain arithmetic with parentheses, casts and method calls feeding tensor code, calls of
differentiable helpers, early `return` and `break`, and values collected in a local `Vec`.
Functions stay smooth at the test points: no max/relu, positive arguments of ln and sqrt,
squashing ops in loops so values stay of order one.

Usage (Python 3 standard library only, deterministic; the output goes through the rustfmt of
the pinned toolchain, as `cargo fmt` would format it):

    python3 tests/generate_programs.py            # rewrites tests/generated_programs.rs
    python3 tests/generate_programs.py --check    # fails if the file is not up to date
    python3 tests/generate_programs.py --count 300 --seed 7 --out /tmp/other.rs
    python3 tests/generate_programs.py --plain --out tests/plain_programs.rs

`--plain` writes the same programs without `#[differentiable]` on them, each test only running
`f`: when that file builds and the real one does not, the macro is at fault, not the generator.
"""

import argparse
import pathlib
import random
import re
import subprocess
import sys

DEFAULT_SEED = 20240611
DEFAULT_COUNT = 240
OUT = pathlib.Path(__file__).with_name("generated_programs.rs")


def fmt_f(value):
    """A float literal Rust accepts as f64."""
    text = f"{value:.2f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def paren(expr):
    """`expr` as an operand: atoms and method chains as they are, anything else in parentheses."""
    depth = 0
    for ch in expr:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and ch in " +-*/":
            return f"({expr})"
    if expr.startswith("&"):
        return f"({expr})"
    return expr


class Tensor:
    """A tensor-valued expression of shape [B, D]: how to use it as an operand of a binary
    operator (`val`) and as the receiver of a method (`recv`)."""

    def __init__(self, val, recv):
        self.val = val
        self.recv = recv

    @staticmethod
    def local(name):
        return Tensor(f"&{name}", name)

    @staticmethod
    def borrowed(name):
        return Tensor(name, name)


class Program:
    """One generated program: its parameters, its body as lines, the constructs it uses."""

    def __init__(self, index, rng):
        self.index = index
        self.name = f"p{index:03}"
        self.rng = rng
        self.B, self.D = rng.choice([(2, 3), (3, 4), (2, 4), (3, 3), (4, 2)])
        self.features = set()
        self.used = set()  # the parameters the body reads, found once it is written
        self.lines = []
        self.indent = 1
        self.plain_vars = []  # positive f64 locals in scope at the top level
        self.counter_names = []  # loop counters in scope (innermost last)
        self.loop_depth = 0
        self.loop_weight = None  # inside a loop over a `Vec` field: its item's weight, bias
        self.loop_bias = None
        self.vector_output = rng.random() < 0.1
        # Traits of the program's style: how often its plain code groups with parentheses, how
        # often it branches only to set a plain number, whether it collects values in a Vec.
        self.paren_rate = rng.choice([0.0, 0.0, 0.3, 0.7])
        self.plain_if_weight = rng.choice([0, 1, 1, 2])
        self.collects = rng.random() < 0.2
        self.fresh_names = 0

        # Parameters available to the body; those it does not use are dropped afterwards.
        self.x_diff = rng.random() < 0.75
        self.structure = rng.choice([None, None, "net", "net", "stack", "named", "boxed"])
        self.struct_by_value = self.structure is not None and rng.random() < 0.15
        self.w_diff = rng.random() < 0.75
        self.v_diff = rng.random() < 0.8
        self.has_w = rng.random() < 0.55
        self.has_v = rng.random() < 0.55
        self.has_u = rng.random() < 0.2
        self.layers = rng.choice([2, 2, 3])
        self.values = {
            "a": round(rng.uniform(0.5, 2.0), 2),
            "b": round(rng.uniform(0.5, 2.0), 2),
            "n": rng.choice([1, 2, 3, 3, 4]),
            "k": rng.choice([1, 2, 3]),
            "flag": rng.choice([True, False]),
        }
        if not self.x_diff and not (self.structure or (self.has_w and self.w_diff)):
            self.has_w, self.w_diff = True, True

    # ---- output ---------------------------------------------------------------------------

    def emit(self, line):
        self.lines.append("    " * self.indent + line)

    def fresh(self, stem):
        self.fresh_names += 1
        return f"{stem}{self.fresh_names}"

    # ---- plain numbers ----------------------------------------------------------------------

    # Positive f64 expressions of order one, by whether they group with parentheses. `{s}` is a
    # plain local, `{i}` the innermost loop counter; `a`, `b` are in [0.5, 2], `n`, `k` >= 1.
    GROUPED = [
        "(a / b).sqrt()",
        "(a - b).abs() + 0.25",
        "((n * k) as f64).sqrt()",
        "1.0 / (1.0 + (a * b).sqrt())",
        "(a + b) * 0.5",
        "(a * 2.0 - b).abs() + 0.1",
        "((n + 1) as f64).ln()",
        "(b / (a + 1.0)).powi(2) + 0.5",
        "(a.ln() - b.ln()).exp()",
        "({s} + a) * 0.5",
        "({i} as f64 + 1.0).ln() + 0.5",
        "1.0 / ({i} as f64 + 1.0)",
        "(({i} + 1) * k) as f64 * 0.2",
        "(a * ({i} as f64 + 2.0)).sqrt()",
    ]
    UNGROUPED = [
        "a * b",
        "a / b",
        "a.sqrt() + b",
        "a * 0.5 + b * 0.25",
        "n as f64 * 0.5",
        "k as f64 + a",
        "a.powi(2) + 0.1",
        "b.exp() * 0.5",
        "a.ln().abs() + 0.5",
        "a.max(b) - a.min(b) * 0.5",
        "{s} * a + 0.1",
        "{i} as f64 * 0.25 + 0.5",
        "{i} as f64 * b + a",
        "n as f64 * k as f64 * 0.1",
    ]
    ATOMIC = ["a", "b", "{s}", "{s}", "a.sqrt()", "b.exp()", "a.cbrt()", "b.ln().abs()"]

    def plain_positive(self, operand=False):
        """A positive f64 expression of order one, from parameters, locals and loop counters.

        With `operand`, the expression is an operand of a binary operator: parenthesised
        unless atomic. How often plain code groups with parentheses is a trait of the program.
        """
        r = self.rng
        if r.random() < self.paren_rate:
            pool = self.GROUPED
        elif operand:
            pool = self.ATOMIC
        else:
            pool = self.UNGROUPED + self.ATOMIC
        pool = [
            t
            for t in pool
            if ("{s}" not in t or self.plain_vars) and ("{i}" not in t or self.counter_names)
        ]
        template = r.choice(pool)
        expr = template.replace("{s}", r.choice(self.plain_vars) if self.plain_vars else "a")
        if self.counter_names:
            expr = expr.replace("{i}", self.counter_names[-1])
        if operand:
            expr = paren(expr)
        if re.search(r"(^|[\s(+\-*/])\(", expr):
            self.features.add("plain-parens")
        if " as " in expr:
            self.features.add("cast")
        if ".max(" in expr:
            self.features.add("plain-max-min")
        return expr

    def plain_factor(self):
        """An f64 factor, as an operand: a positive expression, a local, or a literal."""
        r = self.rng.random()
        if r < 0.45:
            return self.plain_positive(operand=True)
        if r < 0.7 and self.plain_vars:
            return self.rng.choice(self.plain_vars)
        return fmt_f(self.rng.choice([0.5, 0.7, 0.9, 1.5, 2.0, 0.3]))

    def plain_let(self):
        name = self.fresh("s")
        self.emit(f"let {name} = {self.plain_positive()};")
        self.features.add("plain-let")
        return name

    # ---- tensors ---------------------------------------------------------------------------

    def x(self):
        return Tensor.borrowed("x")

    def weight(self):
        """A [D, D] tensor: `w`, a field of the structure, or the loop variable over one."""
        options = []
        if self.has_w:
            options.append("w")
        if self.structure == "net":
            options.append("net.ws[0]")
        if self.structure == "stack":
            options.append("stack.layers[0].w")
        if self.structure == "named":
            options.append('named["l0"].w')
        if self.loop_weight:
            options.append(self.loop_weight)
        if not options:
            self.has_w = True
            options.append("w")
        pick = self.rng.choice(options)
        if pick in ("w", self.loop_weight):
            return pick
        return f"&{pick}"

    def vector(self):
        """A [D] tensor (broadcast against [B, D])."""
        options = []
        if self.has_v:
            options.append("v")
        if self.structure == "net":
            options.append("&net.b")
        if self.structure == "stack":
            options.append("&stack.gain")
        if self.structure == "named":
            options.append('&named["l1"].b')
        if self.loop_bias:
            options.append(self.loop_bias)
        if not options:
            self.has_v = True
            options.append("v")
        pick = self.rng.choice(options)
        if pick.startswith("&") and self.loop_bias != pick:
            self.features.add("field")
        return pick

    def same_shape(self):
        """Another [B, D] operand."""
        options = ["x"]
        if self.has_u:
            options.append("&u")
        pick = self.rng.choice(options)
        return pick

    def mix(self, h):
        """A [B, D] expression combining `h` with parameters and plain numbers."""
        r = self.rng
        D = self.D
        options = [
            lambda: f"{h.recv}.matmul({self.weight()})",
            lambda: f"{h.recv}.matmul({self.weight()}) + {self.vector()}",
            lambda: f"{h.val} * {self.plain_factor()}",
            lambda: f"{self.plain_factor()} * {h.val}",
            lambda: f"{h.val} + {self.vector()}",
            lambda: f"{h.val} - {self.same_shape()}",
            lambda: f"{self.vector()} * {h.val}",
            lambda: f"{h.val} / ({self.vector().lstrip('&')}.square() + 1.0)",
            lambda: f"{h.val} / {self.plain_positive(operand=True)}",
            lambda: f"{self.plain_positive(operand=True)} / ({h.recv}.square() + 1.0)",
            lambda: f"{fmt_f(r.choice([1.0, 2.0, 0.5]))} - {h.val}",
            lambda: f"{h.val} - {h.recv}.sum_axes(&[1], true) * {fmt_f(round(1.0 / D, 2))}",
            lambda: f"{h.val} * {self.same_shape()}",
            lambda: f"{h.val} * {self.plain_positive(operand=True)}",
        ]
        return r.choice(options)()

    def squash(self, expr):
        """`expr` through a bounded smooth op."""
        e = paren(expr)
        op = self.rng.choice(
            ["tanh", "tanh", "sin", "sigmoid", "softmax", "sin", "expt", "lnsq", "sqrtsq"]
        )
        self.features.add({"expt": "exp", "lnsq": "ln", "sqrtsq": "sqrt"}.get(op, op))
        if op == "softmax":
            return f"{e}.softmax(-1)"
        if op == "expt":
            return f"({e} * 0.5).tanh().exp()"
        if op == "lnsq":
            return f"({e}.square() + 1.0).ln()"
        if op == "sqrtsq":
            return f"({e}.square() + 0.5).sqrt() - 0.5"
        return f"{e}.{op}()"

    def reduce(self, h):
        """A 0-d tensor from a [B, D] value."""
        B, D = self.B, self.D
        options = [
            lambda: f"{h.recv}.sum()",
            lambda: f"{h.recv}.mean()",
            lambda: f"{h.recv}.square().mean()",
            lambda: f"{h.recv}.sum_axes(&[0], false).square().mean()",
            lambda: f"({h.recv}.square() + 1.0).ln().sum()",
            lambda: f"{h.recv}.softmax(-1).ln().mean()",
            lambda: f"({h.recv}.square().sum() + 1.0).sqrt()",
            lambda: f"{h.recv}.reshape(&[{B * D}]).sin().sum()",
            lambda: f"{h.recv}.reshape(&[{D}, {B}]).matmul({self.x().val}).mean()",
            lambda: f"{h.recv}.exp().mean().ln()",
            lambda: f"soft_norm({h.val}, {self.plain_positive()})",
        ]
        expr = self.rng.choice(options)()
        if "soft_norm" in expr:
            self.features.add("helper")
        if "reshape" in expr:
            self.features.add("reshape")
        if "sum_axes" in expr:
            self.features.add("sum_axes")
        return expr

    # ---- statements ------------------------------------------------------------------------

    def update(self):
        """`h = squash(mix(h))`, or a helper call, or an in-place form."""
        r = self.rng.random()
        h = Tensor.local("h")
        if r < 0.15:
            self.features.add("helper")
            pick = self.rng.choice(["dense", "gated", "repeat_dense", "scaled_softmax"])
            if pick == "dense":
                self.emit(f"h = dense(&h, {self.weight()}, {self.vector()});")
            elif pick == "gated":
                self.emit(f"h = gated(&h, {self.same_shape()});")
            elif pick == "repeat_dense":
                self.emit(f"h = repeat_dense(&h, {self.weight()}, k);")
            else:
                self.emit(f"h = scaled_softmax(&h, {self.plain_positive()});")
            return
        if r < 0.25:
            self.features.add("compound-assign")
            self.emit(f"h += {paren(self.squash(self.mix(h)))} * 0.5;")
            self.emit("h = h.tanh();")
            return
        self.emit(f"h = {self.squash(self.mix(h))};")

    def accumulate(self, source=None, total="total"):
        """`total` (or another accumulator) updated with a reduction of `source` (`h`)."""
        h = source or Tensor.local("h")
        form = self.rng.randrange(5)
        self.features.add("accumulate")
        red = self.reduce(h)
        t = total
        if form == 0:
            self.emit(f"{t} = &{t} + &{red};")
        elif form == 1:
            self.emit(f"{t} += {red};")
            self.features.add("compound-assign")
        elif form == 2:
            self.emit(f"{t} = {t} + {red} * {self.plain_factor()};")
        elif form == 3:
            self.emit(f"{t} -= {red} * 0.5;")
            self.features.add("compound-assign")
        else:
            self.emit(f"{t} = {paren(red)} + &{t} * {fmt_f(self.rng.choice([0.5, 0.9]))};")

    def loop_body(self, depth, allow_exit=True):
        for _ in range(self.rng.randint(1, 3)):
            self.statement(depth, in_loop=True, allow_exit=allow_exit)

    def range_loop(self, depth, allow_exit=True):
        counter = "i" if not self.counter_names else ("j" if len(self.counter_names) == 1 else "l")
        bound = self.rng.choice(["n", "n", "k + 1", "2", "3", "n"])
        if self.counter_names:
            self.features.add("nested-for")
        self.features.add("for")
        head = len(self.lines)
        self.emit(f"for {counter} in 0..{bound} {{")
        self.indent += 1
        self.counter_names.append(counter)
        self.loop_depth += 1
        self.counter_statement(counter)
        self.loop_body(depth + 1, allow_exit)
        self.loop_depth -= 1
        self.counter_names.pop()
        self.indent -= 1
        self.emit("}")
        self.unused_counter(head, counter)

    def unused_counter(self, head, counter):
        """Names the counter of the loop starting at line `head` `_` when its body ignores it."""
        body = "\n".join(self.lines[head + 1 :])
        if not re.search(rf"\b{counter}\b", body):
            self.lines[head] = self.lines[head].replace(f"for {counter} in", "for _ in", 1)

    def counter_statement(self, counter):
        """Something that reads the loop counter (a plain number or a branch on it)."""
        r = self.rng.random()
        if r < 0.3:
            name = self.fresh("c")
            self.emit(f"let {name} = {self.plain_positive()};")
            self.emit(f"h = (&h * {name} + {self.vector()}).tanh();")
            self.features.add("counter-plain")
        elif r < 0.55:
            self.features.add("if-counter")
            self.emit(f"if {counter} % 2 == 0 {{")
            self.indent += 1
            self.update()
            self.indent -= 1
            self.emit("} else {")
            self.indent += 1
            self.accumulate()
            self.indent -= 1
            self.emit("}")
        elif r < 0.7:
            self.features.add("match-counter")
            self.emit(f"match {counter} % 3 {{")
            self.indent += 1
            self.emit("0 => {")
            self.indent += 1
            self.update()
            self.indent -= 1
            self.emit("}")
            self.emit(f"1 => h = {self.squash(self.mix(Tensor.local('h')))},")
            self.emit("_ => {")
            self.indent += 1
            self.accumulate()
            self.indent -= 1
            self.emit("}")
            self.indent -= 1
            self.emit("}")
        else:
            self.emit(f"h = (&h * {self.plain_positive(operand=True)}).tanh();")
            self.features.add("counter-plain")

    def field_loop(self, depth, state="h", items_only=False):
        """A loop over a `Vec` field of the structure parameter, updating `state` (from the loop
        item alone, with `items_only`)."""
        outer = self.loop_depth > 0
        self.features.add("vec-field-loop-in-outer-loop" if outer else "vec-field-loop")
        # All the layers, or some of them picked by iterator adaptors, or windows of two; the
        # layers of a map by name in the order of their names.
        field = {"net": "net.ws", "stack": "stack.layers", "named": "named",
                 "boxed": "boxed.layers"}[self.structure]
        picks = ["", "", "", ".skip(1)", ".take(2)", ".step_by(2)", ".rev().skip(1)", ".rev()",
                 ".enumerate().filter(|(pos, _)| pos % 2 == 0).map(|(_, l)| l)",
                 f".chain(&{field}).skip(1)", ".take_while(|_| true).skip(1)", "windows", "chunks"]
        if self.structure == "named":
            picks = picks[:-4] + [".chain(named.values()).skip(1)", ".take_while(|_| true).skip(1)"]
            self.features.add("map-of-layers")
        if self.structure == "boxed":
            # Boxed layers of two types, reached through the trait only.
            picks = picks[:-2]
            self.features.add("trait-objects")
        pick = self.rng.choice(picks)
        if pick:
            self.features.add("iterator-adaptors")
        if pick in ("windows", "chunks"):
            # A window's first element feeds the matmul, its last the bias.
            self.emit(f"for part in {field}.{pick}(2) {{")
            last = "part[part.len() - 1]"
            if self.structure == "net":
                self.loop_weight, self.loop_bias = "&part[0]", None
            else:
                self.loop_weight, self.loop_bias = "&part[0].w", f"&{last}.b"
        elif self.structure == "net":
            self.emit(f"for wl in net.ws.iter(){pick} {{" if pick else "for wl in &net.ws {")
            self.loop_weight = "wl"
            self.loop_bias = None
        elif self.structure == "boxed":
            head = f"boxed.layers.iter(){pick}" if pick else "&boxed.layers"
            self.emit(f"for layer in {head} {{")
            self.loop_weight = None
            self.loop_bias = None
        else:
            if self.structure == "stack":
                head = f"stack.layers.iter(){pick}" if pick else "&stack.layers"
            else:
                head = f"named.values(){pick}"
            self.emit(f"for layer in {head} {{")
            self.loop_weight = "&layer.w"
            self.loop_bias = "&layer.b"
        self.indent += 1
        self.loop_depth += 1
        if self.structure == "boxed":
            call = self.rng.choice([f"layer.apply(&{state})", f"through(layer, &{state})"])
            step = f"{call} * {self.plain_factor()}"
        elif self.loop_bias == "&layer.b" and self.rng.random() < 0.3:
            # The layer through a trait: its method, or a function generic over the trait.
            self.features.add("trait")
            call = self.rng.choice([f"layer.apply(&{state})", f"through(layer, &{state})"])
            step = f"{call} * {self.plain_factor()}"
        elif self.loop_bias:
            step = f"{state}.matmul({self.loop_weight}) + {self.loop_bias}"
        elif items_only:
            step = f"{state}.matmul({self.loop_weight}) * {self.plain_factor()}"
        else:
            step = f"{state}.matmul({self.loop_weight}) + {self.vector()}"
        self.emit(f"{state} = {self.squash(step)};")
        for _ in range(self.rng.randint(0, 2)):
            self.statement(depth + 1, in_loop=True, allow_exit=False, allow_field=False)
        self.loop_depth -= 1
        self.indent -= 1
        self.emit("}")
        self.loop_weight = None
        self.loop_bias = None

    def fresh_state_field_loop(self, depth, total="total"):
        """Inside an outer loop: a state that starts afresh each iteration (from constants or
        from `h`), run through a loop over a `Vec` field, then accumulated into `total`."""
        self.features.add("fresh-state-in-outer-loop")
        g = self.fresh("g")
        B, D = self.B, self.D
        inits = [f"Tensor::full(&[{B}, {D}], 0.5)"] * 3 + ["x.clone()", "h.clone()"]
        if self.counter_names:
            i = self.counter_names[-1]
            inits.append(f"x * {self.plain_positive(operand=True)}")
            inits += [f"Tensor::full(&[{B}, {D}], {i} as f64 * 0.25 + 0.1)"] * 2
        self.emit(f"let mut {g} = {self.rng.choice(inits)};")
        self.field_loop(depth, state=g, items_only=True)
        self.accumulate(Tensor.local(g), total)
        if self.rng.random() < 0.5:
            self.emit(f"h = (&h + &{g}).tanh();")

    def if_flag(self, depth, in_loop):
        self.features.add("if-flag")
        negate = "!" if self.rng.random() < 0.3 else ""
        self.emit(f"if {negate}flag {{")
        self.indent += 1
        self.statement(depth + 1, in_loop=in_loop, allow_exit=False, allow_control=False)
        self.indent -= 1
        if self.rng.random() < 0.7:
            self.emit("} else {")
            self.indent += 1
            self.statement(depth + 1, in_loop=in_loop, allow_exit=False, allow_control=False)
            self.indent -= 1
        self.emit("}")

    def let_if(self):
        """`let y = if flag { .. } else { .. };` then used."""
        self.features.add("if-flag")
        h = Tensor.local("h")
        y = self.fresh("y")
        self.emit(f"let {y} = if flag {{")
        self.emit(f"    {self.squash(self.mix(h))}")
        self.emit("} else {")
        self.emit(f"    {self.mix(h)}")
        self.emit("};")
        self.emit(f"h = {self.squash(f'&h * 0.5 + &{y} * 0.5')};")

    def late_let(self):
        """`let y;` given its value in both arms of a branch on a flag, then used."""
        self.features.add("late-let")
        h = Tensor.local("h")
        y = self.fresh("y")
        self.emit(f"let {y};")
        self.emit("if flag {")
        self.emit(f"    {y} = {self.squash(self.mix(h))};")
        self.emit("} else {")
        self.emit(f"    {y} = {self.mix(h)};")
        self.emit("}")
        self.emit(f"h = {self.squash(f'&h * 0.5 + &{y} * 0.5')};")

    def match_plain(self):
        """`match` on a plain parameter, as a value or as statements."""
        self.features.add("match")
        scrutinee = self.rng.choice(["n % 3", "k", "n"])
        h = Tensor.local("h")
        if self.rng.random() < 0.5:
            y = self.fresh("y")
            self.emit(f"let {y} = match {scrutinee} {{")
            self.emit(f"    0 => {self.squash(self.mix(h))},")
            self.emit(f"    1 => {self.squash(self.mix(h))},")
            self.emit(f"    _ => {self.mix(h)},")
            self.emit("};")
            self.emit(f"h = ({y} * 0.5).tanh();")
        else:
            self.emit(f"match {scrutinee} {{")
            self.indent += 1
            self.emit("1 => {")
            self.indent += 1
            self.update()
            self.indent -= 1
            self.emit("}")
            self.emit("2 | 3 => {")
            self.indent += 1
            self.accumulate()
            self.update()
            self.indent -= 1
            self.emit("}")
            self.emit("_ => {}")
            self.indent -= 1
            self.emit("}")

    def plain_if(self, in_loop):
        """A branch that only assigns a plain f64, read afterwards by tensor code."""
        self.features.add("plain-only-if")
        name = self.fresh("scale")
        self.emit(f"let mut {name} = {self.plain_positive()};")
        if in_loop and self.counter_names and self.rng.random() < 0.5:
            cond = f"{self.counter_names[-1]} % 2 == 1"
        else:
            cond = "flag"
        self.emit(f"if {cond} {{")
        self.emit(f"    {name} = {self.plain_positive()};")
        if self.rng.random() < 0.5:
            self.emit("} else {")
            self.emit(f"    {name} *= {fmt_f(self.rng.choice([0.5, 1.5, 2.0]))};")
        self.emit("}")
        if self.rng.random() < 0.5:
            self.emit(f"h = (&h * {name}).tanh();")
        else:
            self.emit(f"total += h.mean() * {name};")
            self.features.add("accumulate")

    def local_vec(self, depth):
        """Values pushed into a local `Vec` in a loop, read back afterwards."""
        self.features.add("local-vec-push")
        saved = self.fresh("saved")
        whole = self.rng.random() < 0.6
        pushed = "h.clone()" if whole else self.reduce(Tensor.local("h"))
        self.emit(f"let mut {saved} = Vec::new();")
        if self.structure and self.rng.random() < 0.5:
            self.features.add("vec-field-loop")
            if self.structure == "net":
                self.emit("for wl in &net.ws {")
                self.emit(f"    h = {self.squash('h.matmul(wl)')};")
            elif self.structure == "boxed":
                self.emit("for layer in &boxed.layers {")
                self.emit(f"    h = {self.squash('layer.apply(&h)')};")
            else:
                head = "&stack.layers" if self.structure == "stack" else "named.values()"
                self.emit(f"for layer in {head} {{")
                self.emit(f"    h = {self.squash('h.matmul(&layer.w) + &layer.b')};")
        else:
            self.emit("for _ in 0..2 {")
            self.emit(f"    h = {self.squash(self.mix(Tensor.local('h')))};")
        self.emit(f"    {saved}.push({pushed});")
        self.emit("}")
        self.emit(f"for s in &{saved} {{")
        if whole:
            self.emit(f"    total = &total + &{self.reduce(Tensor.borrowed('s'))};")
        else:
            self.emit("    total = &total + s;")
        self.emit("}")
        if whole and self.rng.random() < 0.5:
            self.emit(f"h = (&h + &{saved}[0]).tanh();")

    def while_loop(self, depth):
        self.features.add("while")
        step = self.fresh("step")
        self.emit(f"let mut {step} = 0;")
        self.emit(f"while {step} < n {{")
        self.indent += 1
        self.loop_depth += 1
        self.update()
        self.emit(f"{step} += 1;")
        self.loop_depth -= 1
        self.indent -= 1
        self.emit("}")

    def exit_statement(self):
        """`break` or an early `return` inside a loop, on a plain condition."""
        counter = self.counter_names[-1] if self.counter_names else None
        if counter is not None:
            cond = self.rng.choice(
                [f"{counter} + 1 >= k", f"{counter} == 1", f"flag && {counter} > 0"]
            )
        else:
            cond = "flag"
        if self.rng.random() < 0.5 and not self.vector_output:
            self.features.add("early-return")
            self.emit(f"if {cond} {{")
            self.emit(f"    return {self.final_expr()};")
            self.emit("}")
        else:
            self.features.add("break")
            self.emit(f"if {cond} {{")
            self.emit("    break;")
            self.emit("}")

    def statement(
        self, depth, in_loop=False, allow_exit=True, allow_control=True, allow_field=True
    ):
        r = self.rng
        kinds = ["update", "update", "accumulate", "accumulate"]
        kinds += ["plain_if"] * self.plain_if_weight
        if allow_control and depth < 3:
            kinds += ["range_loop", "if_flag", "match_plain", "let_if", "late_let"]
            if self.structure and allow_field:
                kinds += ["field_loop", "field_loop"]
            if depth < 2:
                kinds += ["while"]
        if in_loop and allow_exit and self.loop_depth > 0:
            kinds += ["exit"]
        if self.loop_depth == 0 and allow_control:
            kinds += ["local_vec"] if self.collects else []
        kind = r.choice(kinds)
        if kind == "update":
            self.update()
        elif kind == "accumulate":
            self.accumulate()
        elif kind == "plain_if":
            self.plain_if(in_loop)
        elif kind == "range_loop":
            self.range_loop(depth, allow_exit)
        elif kind == "if_flag":
            self.if_flag(depth, in_loop)
        elif kind == "match_plain":
            self.match_plain()
        elif kind == "let_if":
            self.let_if()
        elif kind == "late_let":
            self.late_let()
        elif kind == "field_loop":
            if self.loop_depth > 0 and r.random() < 0.4:
                self.fresh_state_field_loop(depth)
            else:
                self.field_loop(depth)
        elif kind == "while":
            self.while_loop(depth)
        elif kind == "exit":
            self.exit_statement()
        elif kind == "local_vec":
            self.local_vec(depth)

    def final_expr(self):
        h = Tensor.local("h")
        if self.vector_output:
            self.features.add("vector-output")
            return f"{self.squash(self.mix(h))} + &total"
        form = self.rng.randrange(3)
        if form == 0:
            return f"&total + &{self.reduce(h)}"
        if form == 1:
            return f"total.clone() * {self.plain_factor()} + {self.reduce(h)}"
        return f"{paren(self.reduce(h))} + &total"

    # ---- the whole program -----------------------------------------------------------------

    def generate(self):
        r = self.rng
        for _ in range(r.randint(0, 2)):
            self.plain_vars.append(self.plain_let())
        # The state `h`, always [B, D], from the input and a differentiated parameter.
        init = r.choice(["x.tanh()", "x.matmul(W)", "x * V", "x.clone()", "x.sin() + V"])
        if not self.x_diff and "W" not in init and "V" not in init:
            init = "x.matmul(W)" if self.has_w or self.structure else "x * V"
        if "W" in init:
            init = init.replace("W", self.weight())
        if "V" in init:
            init = init.replace("V", self.vector())
        self.emit(f"let mut h = {init};")
        self.emit(
            "let mut total = "
            + r.choice(["Tensor::<f64>::zeros(&[]);", "Tensor::scalar(0.0);", "h.sum() * 0.0;"])
        )
        sections = r.randint(2, 4)
        wants_field = self.structure is not None
        collect_at = r.randrange(sections - 1) if self.collects else None
        for s in range(sections):
            if s == collect_at:
                self.local_vec(0)
            elif wants_field and s == sections - 1 and not any(
                f.startswith("vec-field") for f in self.features
            ):
                # A structure parameter is read through a loop over its `Vec` field, inside an
                # outer loop half of the time.
                if r.random() < 0.5:
                    # With a fresh state, its own accumulator, constant until the loop over
                    # the field's items runs.
                    fresh = r.random() < 0.6
                    acc = self.fresh("acc") if fresh else "total"
                    if fresh:
                        self.emit(f"let mut {acc} = Tensor::scalar(0.0);")
                    head = len(self.lines)
                    self.emit("for i in 0..n {")
                    self.indent += 1
                    self.loop_depth += 1
                    self.counter_names.append("i")
                    self.features.add("for")
                    if fresh:
                        self.fresh_state_field_loop(1, acc)
                    else:
                        self.field_loop(1)
                        self.accumulate()
                    self.counter_names.pop()
                    self.loop_depth -= 1
                    self.indent -= 1
                    self.emit("}")
                    self.unused_counter(head, "i")
                    if fresh:
                        self.emit(
                            r.choice([f"total = &total + &{acc};", f"total += {acc} * 0.5;"])
                        )
                else:
                    self.field_loop(0)
            else:
                self.statement(0)
        if r.random() < 0.15 and not self.vector_output:
            self.features.add("early-return")
            self.emit("if !flag {")
            self.emit(f"    return {self.final_expr()};")
            self.emit("}")
            self.accumulate()
        for name in self.plain_vars:
            if not any(
                re.search(rf"\b{name}\b", line)
                for line in self.lines
                if not line.lstrip().startswith(f"let {name} =")
            ):
                self.emit(f"h = (&h * {name}).tanh();")
        self.emit(self.final_expr())
        # `mut` only where the variable is assigned again.
        for name in ("h", "total"):
            if not any(re.match(rf"\s*{name} (=|\+=|-=|\*=)", line) for line in self.lines):
                self.lines = [
                    line.replace(f"let mut {name} =", f"let {name} =", 1) for line in self.lines
                ]
        return self

    # ---- rendering -------------------------------------------------------------------------

    def uses(self, name):
        """Whether the body reads the parameter `name` (not a field of that name)."""
        pattern = re.compile(rf"(?<!\w)(?<![\w)\]]\.){name}\b")
        return any(pattern.search(line) for line in self.lines)

    def params(self):
        """(declaration, argument, (name, initial value) or None, differentiated) for each
        parameter the body reads, in order."""
        candidates = ("x", "net", "stack", "named", "boxed", "w", "v", "u", "a", "b", "n", "k", "flag")
        self.used = {name for name in candidates if self.uses(name)}
        B, D = self.B, self.D
        seed = 1000 * self.index

        def tensor(name, diff, shape, std, offset, by_value=False):
            ty = "Tensor<f64>" if by_value else "&Tensor<f64>"
            decl = f"{name}: {ty}" if diff else f"#[nodiff] {name}: {ty}"
            arg = f"{name}.clone()" if by_value else f"&{name}"
            init = f"Tensor::rand_normal(&{shape}, 0.0, {std}, {seed + offset})"
            return (decl, arg, (name, init), diff)

        out = []
        if "x" in self.used:
            out.append(tensor("x", self.x_diff, [B, D], 1.0, 1))
        if self.structure in self.used:
            s = self.structure
            ty = {"net": "Net", "stack": "Stack", "named": "BTreeMap<String, Layer>",
                  "boxed": "Boxed"}[s]
            decl = f"{s}: {ty}" if self.struct_by_value else f"{s}: &{ty}"
            arg = f"{s}.clone()" if self.struct_by_value else f"&{s}"
            if self.struct_by_value:
                self.features.add("structure-by-value")
            out.append((decl, arg, (s, f"{s}({D}, {self.layers}, {seed + 2})"), True))
        if self.has_w and "w" in self.used:
            out.append(tensor("w", self.w_diff, [D, D], 0.5, 3))
        if self.has_v and "v" in self.used:
            out.append(tensor("v", self.v_diff, [D], 0.5, 4))
        if self.has_u and "u" in self.used:
            out.append(tensor("u", True, [B, D], 1.0, 5, by_value=True))
            self.features.add("tensor-by-value")
        plain = (("a", "f64"), ("b", "f64"), ("n", "usize"), ("k", "usize"), ("flag", "bool"))
        for name, ty in plain:
            if name in self.used:
                value = self.values[name]
                if ty == "f64":
                    arg = fmt_f(value)
                elif ty == "bool":
                    arg = "true" if value else "false"
                else:
                    arg = str(value)
                out.append((f"#[nodiff] {name}: {ty}", arg, None, False))
        return out

    def render(self, plain=False):
        params = self.params()
        if not any(diff for *_, diff in params):
            return None
        features = ", ".join(sorted(self.features))
        lines = [f"/// Uses: {features}.", f"mod {self.name} {{", "    use super::*;", ""]
        if not plain:
            lines.append("    #[differentiable]")
        decls = [p[0].replace("#[nodiff] ", "") if plain else p[0] for p in params]
        sig = f"    pub fn f({', '.join(decls)}) -> Tensor<f64> {{"
        if len(sig) > 100:
            lines.append("    pub fn f(")
            lines += [f"        {d}," for d in decls]
            lines.append("    ) -> Tensor<f64> {")
        else:
            lines.append(sig)
        lines += ["    " + line for line in self.lines]
        lines.append("    }")
        lines.append("}")
        lines.append("")
        lines.append("#[test]")
        lines.append(f"fn {self.name}() {{")
        for _, _, binding, _ in params:
            if binding:
                lines.append(f"    let {binding[0]} = {binding[1]};")
        diff = [p[2][0] for p in params if p[3]]
        args = ", ".join(p[1] for p in params)
        macro = "check_vector_variants" if self.vector_output else "check_variants"
        if plain:
            finite = ".to_vec().iter().all(|v| v.is_finite())"
            lines.append(f"    assert!({self.name}::f({args}){finite});")
        else:
            lines.append(f"    {macro}!(mod {self.name}; [{', '.join(diff)}]; ({args}));")
        lines.append("}")
        return "\n".join(lines)


HEADER = """\
//! {count} generated `#[differentiable]` programs, each checked by `check_variants!`
//! (`tests/support/mod.rs`): every variant's value against `f`'s bit for bit, gradients and
//! tangents against finite differences and against each other.
//!
//! GENERATED by `tests/generate_programs.py` (seed {seed}); do not edit by hand. Regenerate
//! with `python3 tests/generate_programs.py` from the repository root, and check that the file is
//! up to date with `python3 tests/generate_programs.py --check`.
//!
//! Each program is a module `pNNN` holding `f`, with a test `pNNN` beside it
//! (`cargo test --test generated_programs p042`); the comment above each module lists the
//! constructs it uses.
// The programs are written as users write them: `total = total + ..` beside `+=`, `let y;`
// given its value in both arms of a branch, and many plain parameters.
#![allow(
    clippy::assign_op_pattern,
    clippy::needless_late_init,
    clippy::too_many_arguments
)]

mod support;

use std::collections::BTreeMap;

use rune_ad::prelude::*;
use support::{{check_variants, check_vector_variants}};

/// The parameters of a few layers as a `Vec` field.
#[derive(Clone, Differentiable)]
pub struct Net {{
    pub ws: Vec<Tensor<f64>>,
    pub b: Tensor<f64>,
}}

/// One layer of a [`Stack`].
#[derive(Clone, Differentiable)]
pub struct Layer {{
    pub w: Tensor<f64>,
    pub b: Tensor<f64>,
}}

/// Layers as a `Vec` of structures, and a gain.
#[derive(Clone, Differentiable)]
pub struct Stack {{
    pub layers: Vec<Layer>,
    pub gain: Tensor<f64>,
}}

/// A layer applied through a trait, whose boxes are layers too.
#[differentiable(dyn)]
pub trait Block {{
    fn apply(&self, h: &Tensor<f64>) -> Tensor<f64>;
}}

#[differentiable]
impl Block for Layer {{
    fn apply(&self, h: &Tensor<f64>) -> Tensor<f64> {{
        (h.matmul(&self.w) + &self.b).tanh()
    }}
}}

/// A gate, the other kind of boxed layer.
#[derive(Clone, Differentiable)]
pub struct Gate {{
    pub g: Tensor<f64>,
}}

#[differentiable]
impl Block for Gate {{
    fn apply(&self, h: &Tensor<f64>) -> Tensor<f64> {{
        h * &(h * &self.g).sigmoid()
    }}
}}

/// Layers of two types in one `Vec`, as trait objects.
#[derive(Clone, Differentiable)]
pub struct Boxed {{
    pub layers: Vec<Box<dyn Block>>,
}}

/// `layers` boxed layers of width `d`, a [`Layer`] then a [`Gate`] in turn.
pub fn boxed(d: usize, layers: usize, seed: u64) -> Boxed {{
    Boxed {{
        layers: (0..layers as u64)
            .map(|l| -> Box<dyn Block> {{
                if l % 2 == 0 {{
                    Box::new(Layer {{
                        w: Tensor::rand_normal(&[d, d], 0.0, 0.5, seed * 10 + 2 * l),
                        b: Tensor::rand_normal(&[d], 0.0, 0.3, seed * 10 + 2 * l + 1),
                    }})
                }} else {{
                    Box::new(Gate {{
                        g: Tensor::rand_normal(&[d], 0.0, 1.0, seed * 10 + 2 * l),
                    }})
                }}
            }})
            .collect(),
    }}
}}

/// A function generic over the trait.
#[differentiable]
pub fn through<B: Block + Differentiable>(block: &B, h: &Tensor<f64>) -> Tensor<f64> {{
    block.apply(h) + h * 0.25
}}

/// Layers by name (`l0`, `l1`, ..), as a map of parameters.
pub fn named(d: usize, layers: usize, seed: u64) -> BTreeMap<String, Layer> {{
    stack(d, layers.max(2), seed)
        .layers
        .into_iter()
        .enumerate()
        .map(|(i, layer)| (format!("l{{i}}"), layer))
        .collect()
}}

/// A [`Net`] of `layers` random `[d, d]` weights.
pub fn net(d: usize, layers: usize, seed: u64) -> Net {{
    Net {{
        ws: (0..layers as u64)
            .map(|l| Tensor::rand_normal(&[d, d], 0.0, 0.5, seed * 10 + l))
            .collect(),
        b: Tensor::rand_normal(&[d], 0.0, 0.3, seed * 10 + 9),
    }}
}}

/// A [`Stack`] of `layers` random layers of width `d`, gains in [0.5, 1.5].
pub fn stack(d: usize, layers: usize, seed: u64) -> Stack {{
    Stack {{
        layers: (0..layers as u64)
            .map(|l| Layer {{
                w: Tensor::rand_normal(&[d, d], 0.0, 0.5, seed * 10 + 2 * l),
                b: Tensor::rand_normal(&[d], 0.0, 0.3, seed * 10 + 2 * l + 1),
            }})
            .collect(),
        gain: Tensor::rand_uniform(&[d], 0.5, 1.5, seed * 10 + 9),
    }}
}}

// ---- helpers the programs call -----------------------------------------------------------------

/// One dense layer.
#[differentiable]
pub fn dense(h: &Tensor<f64>, w: &Tensor<f64>, b: &Tensor<f64>) -> Tensor<f64> {{
    (h.matmul(w) + b).tanh()
}}

/// A gate: `sigmoid(h) * tanh(g) + h / 2`.
#[differentiable]
pub fn gated(h: &Tensor<f64>, g: &Tensor<f64>) -> Tensor<f64> {{
    h.sigmoid() * g.tanh() + h * 0.5
}}

/// `times` damped layers with one weight, by a loop.
#[differentiable]
pub fn repeat_dense(h: &Tensor<f64>, w: &Tensor<f64>, #[nodiff] times: usize) -> Tensor<f64> {{
    let mut y = h.clone();
    for t in 0..times {{
        let damping = 0.5 - t as f64 * 0.1;
        y = (y.matmul(w) * damping + &y).sin();
    }}
    y
}}

/// Softmax at a temperature, calling another helper on the way.
#[differentiable]
pub fn scaled_softmax(h: &Tensor<f64>, #[nodiff] temperature: f64) -> Tensor<f64> {{
    let g = gated(h, h);
    (g / temperature).softmax(-1)
}}

/// A smooth norm, `sqrt(Σ h² + eps)`.
#[differentiable]
pub fn soft_norm(h: &Tensor<f64>, #[nodiff] eps: f64) -> Tensor<f64> {{
    (h.square().sum() + eps).sqrt()
}}

fn helper_inputs() -> (Tensor<f64>, Tensor<f64>, Tensor<f64>, Tensor<f64>) {{
    (
        Tensor::rand_normal(&[3, 4], 0.0, 1.0, 1),
        Tensor::rand_normal(&[3, 4], 0.0, 1.0, 2),
        Tensor::rand_normal(&[4, 4], 0.0, 0.5, 3),
        Tensor::rand_normal(&[4], 0.0, 0.5, 4),
    )
}}

#[test]
fn helper_dense() {{
    let (h, _, w, b) = helper_inputs();
    check_vector_variants!(dense, dense_vjp, dense_jvp, dense_pullback; [h, w, b]; (&h, &w, &b));
}}

#[test]
fn helper_gated() {{
    let (h, g, _, _) = helper_inputs();
    check_vector_variants!(gated, gated_vjp, gated_jvp, gated_pullback; [h, g]; (&h, &g));
}}

#[test]
fn helper_repeat_dense() {{
    let (h, _, w, _) = helper_inputs();
    check_vector_variants!(
        repeat_dense, repeat_dense_vjp, repeat_dense_jvp, repeat_dense_pullback;
        [h, w]; (&h, &w, 3)
    );
}}

#[test]
fn helper_scaled_softmax() {{
    let (h, _, _, _) = helper_inputs();
    check_vector_variants!(
        scaled_softmax, scaled_softmax_vjp, scaled_softmax_jvp, scaled_softmax_pullback;
        [h]; (&h, 0.7)
    );
}}

#[test]
fn helper_soft_norm() {{
    let (h, _, _, _) = helper_inputs();
    check_variants!(
        soft_norm, soft_norm_value_and_grad, soft_norm_grad, soft_norm_vjp, soft_norm_jvp,
        soft_norm_pullback;
        [h]; (&h, 0.5)
    );
}}
"""


def rustfmt(text):
    """`text` as `cargo fmt` leaves it (the toolchain of rust-toolchain.toml), so that the
    generated file and `cargo fmt --all` agree."""
    result = subprocess.run(
        ["rustfmt", "--edition", "2021"],
        input=text,
        capture_output=True,
        text=True,
        cwd=OUT.parent.parent,
    )
    if result.returncode != 0:
        sys.exit(f"rustfmt failed:\n{result.stderr}")
    return result.stdout


def generate(count, seed, plain=False):
    rng = random.Random(seed)
    programs = []
    index = 1
    while len(programs) < count:
        program = Program(index, random.Random(rng.getrandbits(64))).generate()
        text = program.render(plain)
        index += 1
        if text is not None:
            programs.append(text)
    return rustfmt(HEADER.format(count=count, seed=seed) + "\n" + "\n\n".join(programs) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=pathlib.Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="fail if --out is not up to date")
    parser.add_argument(
        "--plain",
        action="store_true",
        help="write the programs as plain Rust, without #[differentiable] on them, each test only "
        "evaluating f: if this compiles and the real file does not, the macro is at fault",
    )
    args = parser.parse_args()
    text = generate(args.count, args.seed, args.plain)
    if args.check:
        if not args.out.exists() or args.out.read_text() != text:
            sys.exit(f"{args.out} is not up to date: run python3 tests/generate_programs.py")
        return
    args.out.write_text(text)


if __name__ == "__main__":
    main()
