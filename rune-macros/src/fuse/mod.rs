//! Fusion: trees of elementwise ops become one [`Stmt::Fused`], evaluated in one pass over the
//! elements (`rune_runtime::fused`), with no tensor for the values inside the tree.
//!
//! The elementwise ops are those the registry gives a [`rune_ops::Fusion`]: `+ - * /`, unary
//! minus, the unary functions, the functions of two tensors (`pow`, `maximum`, `atan2`, ..),
//! those with configuration arguments (`clamp`, `powf`, `powi`) where these are literals, and
//! `where_cond`. A `where_cond` reads its mask as an input of the region, unless
//! the mask is a comparison (`&a.le(0.5)`, a constant's `let` in the IR) that nothing else
//! reads: the region then computes the comparison in place, and the `let` goes.
//!
//! An op's value is *inside* a region when only ops of the region read it: one fusible op of
//! the same statement list, or several of one region, and nothing else (no other statement, no
//! output, no token of the user's constant code). Each op whose value is not inside a region is
//! the root of one: the root and, recursively, the fusible ops whose values only it and the ops
//! below it read. So a region is a graph with one result in which a value read by several of
//! its ops is computed once (`let d = a - b; d * d + d.sin()`), and the result's shape is the
//! broadcast of all the region's inputs; its backward pass recomputes the region from the
//! inputs, so the forward pass saves none of its intermediates. A root with no op below it
//! stays an ordinary [`Stmt::Op`].
//!
//! A reduction whose input is such a root's value, read by nothing else, ends the region: the
//! region's result is then the reduction's value, and no tensor holds the tree's values. A full
//! reduction (`sum`, `mean`) is 0-d: its reverse pass computes the inputs' partial derivatives
//! in the same pass as the value (`rune_runtime::fused::fused_reduce_vjp`), so it alone is a
//! region even of one op. A reduction over some axes (`sum_axes`, `mean_axes`) runs in the same
//! pass as the values when the axes are the region's last (`fused_reduce_axes`); its reverse
//! pass spreads the result's cotangent over the reduced axes and recomputes the region from its
//! inputs (`fused_reduce_axes_vjp`), so the forward pass saves the inputs as for a region that
//! is not reduced.
//!
//! The ops are moved to the root's place in the list. That is sound: values are assigned once,
//! an op inside a region reads only values and constants defined before it, and nothing reads
//! its value before the root.

mod needs;

use std::collections::HashMap;

use proc_macro2::{TokenStream, TokenTree};

use crate::ir::{Body, Const, FusedArg, FusedNode, Operand, ReduceAxes, Reduction, Stmt, Val};
use crate::ops::{Eval, Form, OpSpec};

pub use needs::Needs;

/// Whether `op` can be evaluated inside a fused region: the registry says how
/// ([`rune_ops::OpDef::fusion`]).
fn fusible_op(op: &OpSpec) -> bool {
    op.fusion.is_some()
}

/// Whether `op` is evaluated by scalar forms that take its configuration arguments as
/// operands (`clamp`, `powf`, `powi`): it fuses only where they are literals.
fn configured(op: &OpSpec) -> bool {
    op.fusion.is_some_and(|f| f.eval == Eval::Scalar) && op.operands() > op.tensor_inputs()
}

/// A comparison of a value with a value or a float literal, `&__rune_v3.le(0.5)`: a mask
/// `where_cond` reads, which a region computes element by element where it is read by nothing
/// else (see [`Literals::comparisons`]).
struct Comparison {
    op: &'static OpSpec,
    a: Val,
    b: Result<Val, TokenStream>,
    /// Its `let`'s position in its statement list.
    pos: usize,
}

/// The comparison a constant's expression is, if it is one a region can compute.
fn comparison(expr: &TokenStream, pos: usize) -> Option<Comparison> {
    let tokens: Vec<TokenTree> = expr.clone().into_iter().collect();
    let tokens = match tokens.as_slice() {
        [TokenTree::Punct(p), rest @ ..] if p.as_char() == '&' => rest,
        all => all,
    };
    // `&(a.gt(&b))`
    if let [TokenTree::Group(g)] = tokens {
        if g.delimiter() == proc_macro2::Delimiter::Parenthesis {
            return comparison(&g.stream(), pos);
        }
    }
    let val = |t: &TokenTree| match t {
        TokenTree::Ident(i) => crate::names::val_of(i),
        _ => None,
    };
    let [recv, TokenTree::Punct(dot), TokenTree::Ident(name), TokenTree::Group(args)] = tokens
    else {
        return None;
    };
    let op = rune_ops::all().find(|op| {
        op.kind == rune_ops::Kind::Comparison && op.form == Form::Method && name == op.name
    })?;
    if dot.as_char() != '.' || args.delimiter() != proc_macro2::Delimiter::Parenthesis {
        return None;
    }
    let a = val(recv)?;
    let args: Vec<TokenTree> = args.stream().into_iter().collect();
    let b = match args.as_slice() {
        [TokenTree::Punct(p), v] if p.as_char() == '&' => Ok(val(v)?),
        [v @ TokenTree::Ident(_)] => Ok(val(v)?),
        _ => {
            let lit: TokenStream = args.iter().cloned().collect();
            if !float_literal(&lit) {
                return None;
            }
            Err(as_f64(&lit))
        }
    };
    Some(Comparison { op, a, b, pos })
}

/// The literals a region writes where they are used: floats (as `f64` expressions) and the
/// integer exponents of `powi`.
struct Literals {
    floats: HashMap<Const, TokenStream>,
    ints: HashMap<Const, i32>,
    /// The comparisons whose masks only a `where_cond` of the same statement list reads:
    /// regions compute them in place, with no mask.
    comparisons: HashMap<Const, Comparison>,
}

/// An op written as a plain call (no turbofish, no value read out of a tensor flowing in, no
/// `?`): its output, spec, inputs and configuration.
fn plain_op(stmt: &Stmt) -> Option<(Val, &'static OpSpec, &[Operand], &[Const])> {
    match stmt {
        Stmt::Op {
            out,
            op,
            inputs,
            config,
            turbofish: None,
            tainted_by: None,
            fallible: false,
            ..
        } => Some((*out, *op, inputs, config)),
        _ => None,
    }
}

fn fusible<'s>(stmt: &'s Stmt, lits: &Literals) -> Option<(Val, &'s [Operand])> {
    let (out, op, inputs, config) = plain_op(stmt)?;
    let literal_config = match op.name {
        "powi" => config.iter().all(|c| lits.ints.contains_key(c)),
        _ => config.iter().all(|c| lits.floats.contains_key(c)),
    };
    let config_ok = if configured(op) {
        literal_config
    } else {
        // `where_cond`'s mask is an input of the region, or a comparison it computes.
        op.name == "where_cond" || config.is_empty()
    };
    (fusible_op(op) && config_ok).then_some((out, inputs))
}

/// A reduction that can end a region: `x.sum()`, `x.mean()`, or over some axes
/// `x.sum_axes(axes, keepdims)`, `x.mean_axes(axes, keepdims)`, with its output and the value
/// it reduces.
fn reduction(stmt: &Stmt) -> Option<(Val, Val, Reduction, Option<ReduceAxes>)> {
    let (out, op, inputs, config) = plain_op(stmt)?;
    let over = |axes: &[Const]| match *axes {
        [axes, keepdims] => Some(ReduceAxes { op, axes, keepdims }),
        _ => None,
    };
    let (reduce, axes) = match (op.name, config) {
        ("sum", []) => (Reduction::Sum, None),
        ("mean", []) => (Reduction::Mean, None),
        ("sum_axes", c) => (Reduction::Sum, Some(over(c)?)),
        ("mean_axes", c) => (Reduction::Mean, Some(over(c)?)),
        _ => return None,
    };
    match inputs {
        [Operand::Val(v)] => Some((out, *v, reduce, axes)),
        _ => None,
    }
}

/// Whether `expr` is a number literal with a decimal point or an exponent (`0.5`, `-1e-3`,
/// `2.0_f32`): a constant the region's code can write where it is used.
fn float_literal(expr: &TokenStream) -> bool {
    let tokens: Vec<TokenTree> = expr.clone().into_iter().collect();
    let lit = match tokens.as_slice() {
        [TokenTree::Literal(l)] => l,
        [TokenTree::Punct(p), TokenTree::Literal(l)] if p.as_char() == '-' => l,
        _ => return false,
    };
    let s = lit.to_string();
    s.starts_with(|c: char| c.is_ascii_digit())
        && !s.starts_with("0x")
        && !s.starts_with("0b")
        && !s.starts_with("0o")
        && (s.contains('.') || s.contains('e') || s.ends_with("f32") || s.ends_with("f64"))
}

/// The literal of a number configuration argument, `scalar_like(&x, 1.5)` (the scalar of the
/// element type of `clamp`'s and `powf`'s tensor, `rune_runtime::generated::scalar_like`), if
/// it is a float literal.
fn scalar_like_literal(expr: &TokenStream) -> Option<TokenStream> {
    let tokens: Vec<TokenTree> = expr.clone().into_iter().collect();
    let [.., TokenTree::Ident(f), TokenTree::Group(args)] = tokens.as_slice() else {
        return None;
    };
    if f != "scalar_like" {
        return None;
    }
    let args: Vec<TokenTree> = args.stream().into_iter().collect();
    let comma = args
        .iter()
        .position(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','))?;
    let lit: TokenStream = args[comma + 1..].iter().cloned().collect();
    float_literal(&lit).then_some(lit)
}

/// `expr` without a leading `&` and the parentheses around what follows it: `&0.0` and
/// `&(0.0)` (`where_cond`'s operands) are `0.0`.
fn unborrowed(expr: &TokenStream) -> TokenStream {
    let tokens: Vec<TokenTree> = expr.clone().into_iter().collect();
    match tokens.as_slice() {
        [TokenTree::Punct(p), TokenTree::Group(g)]
            if p.as_char() == '&' && g.delimiter() == proc_macro2::Delimiter::Parenthesis =>
        {
            g.stream()
        }
        [TokenTree::Punct(p), rest @ ..] if p.as_char() == '&' => rest.iter().cloned().collect(),
        _ => expr.clone(),
    }
}

/// The value of an integer literal that fits an `i32` (`3`, `-2`, `4_i32`).
fn int_literal(expr: &TokenStream) -> Option<i32> {
    let tokens: Vec<TokenTree> = expr.clone().into_iter().collect();
    let (negative, lit) = match tokens.as_slice() {
        [TokenTree::Literal(l)] => (false, l),
        [TokenTree::Punct(p), TokenTree::Literal(l)] if p.as_char() == '-' => (true, l),
        _ => return None,
    };
    let s = lit.to_string().replace('_', "");
    let digits = s.strip_suffix("i32").unwrap_or(&s);
    let n: i64 = digits.parse().ok()?;
    i32::try_from(if negative { -n } else { n }).ok()
}

/// A float literal as an `f64` expression: unsuffixed, written `f64`, the type its unfused op
/// gives it (a scalar operand's type falls back to `f64`); `f32`, widened (exactly) with `as`.
/// The runtime converts the region's literals to its element type once a call.
fn as_f64(expr: &TokenStream) -> TokenStream {
    expr.clone()
        .into_iter()
        .map(|t| match t {
            TokenTree::Literal(l) => {
                let s = l.to_string();
                if s.ends_with("f64") {
                    return TokenTree::Literal(l);
                }
                if s.ends_with("f32") {
                    let group = proc_macro2::Group::new(
                        proc_macro2::Delimiter::Parenthesis,
                        quote::quote!(#l as f64),
                    );
                    return TokenTree::Group(group);
                }
                let digits = if s.ends_with('.') { format!("{s}0") } else { s };
                let mut new: proc_macro2::Literal = format!("{digits}f64")
                    .parse()
                    .expect("a float literal with a suffix");
                new.set_span(l.span());
                TokenTree::Literal(new)
            }
            other => other,
        })
        .collect()
}

/// What the first walk learns about values.
struct Uses {
    /// Read by something other than a fusible op.
    escapes: Vec<bool>,
    /// The fusible ops reading it: (list, position), each once.
    readers: Vec<Vec<(usize, usize)>>,
    /// Where a fusible op defines it.
    def: Vec<Option<(usize, usize)>>,
    /// Inside a region ([`settle`]).
    inside: Vec<bool>,
}

impl Uses {
    fn inside(&self, v: Val) -> bool {
        self.inside[v.0]
    }
}

/// Decides which values are inside a region, list by list (numbered as [`collect`] numbers
/// them), each list from its last statement to its first, so that a value's readers are settled
/// before it: a value defined by a fusible op is inside when nothing but ops of its own list
/// read it, and either one op does (a fusible op, a reduction that ends the region, a
/// comparison that the region computes) or several fusible ops of one region do. Otherwise it is
/// the root of a region of its own.
fn settle(stmts: &[Stmt], next_list: &mut usize, uses: &mut Uses, lits: &Literals) {
    let list = *next_list;
    *next_list += 1;
    // The position of the root of the region each statement is in.
    let mut root = vec![usize::MAX; stmts.len()];
    for i in (0..stmts.len()).rev() {
        root[i] = i;
        let Some((out, _)) = fusible(&stmts[i], lits) else {
            continue;
        };
        let readers = &uses.readers[out.0];
        let Some(&(_, first)) = readers.first() else {
            continue;
        };
        let local = !uses.escapes[out.0]
            && uses.def[out.0] == Some((list, i))
            && readers.iter().all(|&(l, _)| l == list);
        let one_region = readers.len() == 1
            || readers
                .iter()
                .all(|&(_, p)| fusible(&stmts[p], lits).is_some() && root[p] == root[first]);
        if local && one_region {
            uses.inside[out.0] = true;
            root[i] = root[first];
        }
    }
    for stmt in stmts {
        for inner in nested(stmt) {
            settle(inner, next_list, uses, lits);
        }
    }
}

/// The nested statement lists of `stmt`.
fn nested(stmt: &Stmt) -> Vec<&Vec<Stmt>> {
    match stmt {
        Stmt::Branch { arms, .. } => arms.iter().collect(),
        Stmt::Stages { stages, .. } => stages.iter().collect(),
        Stmt::Loop { body, .. } => vec![body],
        _ => Vec::new(),
    }
}

fn nested_mut(stmt: &mut Stmt) -> Vec<&mut Vec<Stmt>> {
    match stmt {
        Stmt::Branch { arms, .. } => arms.iter_mut().collect(),
        Stmt::Stages { stages, .. } => stages.iter_mut().collect(),
        Stmt::Loop { body, .. } => vec![body],
        _ => Vec::new(),
    }
}

fn collect(stmts: &[Stmt], next_list: &mut usize, uses: &mut Uses, lits: &Literals) {
    let list = *next_list;
    *next_list += 1;
    for (i, stmt) in stmts.iter().enumerate() {
        if let Some((out, inputs)) = fusible(stmt, lits) {
            uses.def[out.0] = Some((list, i));
            for v in inputs.iter().filter_map(|o| o.val()) {
                if !uses.readers[v.0].contains(&(list, i)) {
                    uses.readers[v.0].push((list, i));
                }
            }
        } else if let Some(cmp) = match stmt {
            Stmt::Hoist { id, .. } => lits.comparisons.get(id),
            _ => None,
        } {
            // Read like a fusible op's inputs: the region of the `where_cond` reading the mask
            // computes it.
            for v in std::iter::once(cmp.a).chain(cmp.b.as_ref().ok().copied()) {
                if !uses.readers[v.0].contains(&(list, i)) {
                    uses.readers[v.0].push((list, i));
                }
            }
            continue;
        } else if let Some((_, v, _, _)) = reduction(stmt) {
            // A reduction reads its input like a fusible op, but its value is never inside a
            // region (it has another shape): it ends one.
            uses.readers[v.0].push((list, i));
        } else {
            stmt.read_vals(&mut |v| uses.escapes[v.0] = true);
        }
        // A literal's `let` does not read the tensor that `scalar_like` names for its type: the
        // op reading the literal is fusible, so a region takes it, and the literal with it,
        // wherever the tensor is inside one.
        let literal = matches!(stmt, Stmt::Hoist { id, .. } if lits.floats.contains_key(id));
        if !literal {
            stmt.for_each_code(&mut |c| {
                for v in c.vals() {
                    if let Some(e) = uses.escapes.get_mut(v.0) {
                        *e = true;
                    }
                }
            });
        }
        for inner in nested(stmt) {
            collect(inner, next_list, uses, lits);
        }
    }
}

/// A region being built.
struct Region {
    inputs: Vec<Operand>,
    literals: Vec<TokenStream>,
    /// Each literal's slot, by its text: equal literals share one.
    literal_of: HashMap<String, usize>,
    nodes: Vec<FusedNode>,
    /// The node of each value inside the region: one, however many of its ops read it.
    node_of: HashMap<Val, usize>,
}

impl Region {
    fn literal(&mut self, tokens: &TokenStream) -> usize {
        let text = tokens.to_string();
        *self.literal_of.entry(text).or_insert_with(|| {
            self.literals.push(tokens.clone());
            self.literals.len() - 1
        })
    }

    fn input(&mut self, o: Operand) -> usize {
        match self.inputs.iter().position(|x| *x == o) {
            Some(k) => k,
            None => {
                self.inputs.push(o);
                self.inputs.len() - 1
            }
        }
    }
}

/// What the region reads for operand `o` of an op: the node of the op inside the region that
/// defines it, a literal, or an input.
fn operand_arg(
    stmts: &[Stmt],
    o: Operand,
    uses: &Uses,
    lits: &Literals,
    region: &mut Region,
    taken: &mut Vec<usize>,
) -> FusedArg {
    match o {
        Operand::Val(v) if uses.inside(v) => {
            if let Some(&node) = region.node_of.get(&v) {
                return FusedArg::Node(node);
            }
            let (_, d) = uses.def[v.0].expect("an op inside a region has a definition");
            taken.push(d);
            let node = build(stmts, d, uses, lits, region, taken);
            region.node_of.insert(v, node);
            FusedArg::Node(node)
        }
        Operand::Const(c) if lits.floats.contains_key(&c) => {
            FusedArg::Literal(region.literal(&lits.floats[&c]))
        }
        o => FusedArg::Input(region.input(o)),
    }
}

/// Adds op `i` of `stmts` and the ops inside the region below it; returns its node. Marks the
/// ops it takes in `taken`.
fn build(
    stmts: &[Stmt],
    i: usize,
    uses: &Uses,
    lits: &Literals,
    region: &mut Region,
    taken: &mut Vec<usize>,
) -> usize {
    let Stmt::Op {
        op, inputs, config, ..
    } = &stmts[i]
    else {
        unreachable!("regions are made of ops")
    };
    let mut args = Vec::with_capacity(inputs.len() + config.len());
    if op.name == "where_cond" {
        // The mask first: a comparison computed in place, or an input.
        let mask = match lits.comparisons.get(&config[0]) {
            Some(cmp) => {
                taken.push(cmp.pos);
                let a = operand_arg(stmts, Operand::Val(cmp.a), uses, lits, region, taken);
                let b = match &cmp.b {
                    Ok(v) => operand_arg(stmts, Operand::Val(*v), uses, lits, region, taken),
                    Err(lit) => FusedArg::Literal(region.literal(lit)),
                };
                region.nodes.push(FusedNode {
                    op: cmp.op,
                    args: vec![a, b],
                });
                FusedArg::Node(region.nodes.len() - 1)
            }
            None => FusedArg::Input(region.input(Operand::Const(config[0]))),
        };
        args.push(mask);
    }
    for &input in inputs {
        args.push(operand_arg(stmts, input, uses, lits, region, taken));
    }
    // A configuration argument is a literal (`fusible` checks it).
    for c in config.iter().filter(|_| op.name != "where_cond") {
        args.push(match lits.ints.get(c) {
            Some(&n) if op.name == "powi" => FusedArg::Int(n),
            _ => operand_arg(stmts, Operand::Const(*c), uses, lits, region, taken),
        });
    }
    region.nodes.push(FusedNode { op, args });
    region.nodes.len() - 1
}

/// Replaces each region's root in `stmts` (and in the lists it holds) by the region, and
/// removes the ops inside it. Positions are those `collect` recorded: ops are replaced in place
/// and removed only at the end.
fn transform(stmts: &mut Vec<Stmt>, uses: &Uses, lits: &Literals, singletons: bool) {
    let mut taken = Vec::new();
    let mut fused = Vec::new();
    for i in 0..stmts.len() {
        // The op whose tree the region is, and the reduction that ends it.
        let (out, top, reduce, axes) = match (fusible(&stmts[i], lits), reduction(&stmts[i])) {
            (Some((out, _)), _) if !uses.inside(out) => (out, i, None, None),
            (_, Some((out, v, reduce, axes))) if uses.inside(v) => {
                let (_, d) = uses.def[v.0].expect("a value inside a region has a definition");
                (out, d, Some(reduce), axes)
            }
            _ => continue,
        };
        let mut region = Region {
            inputs: Vec::new(),
            literals: Vec::new(),
            literal_of: HashMap::new(),
            nodes: Vec::new(),
            node_of: HashMap::new(),
        };
        let mut below = Vec::new();
        build(stmts, top, uses, lits, &mut region, &mut below);
        // One op alone is a region only when a reduction ends it (it then makes no tensor), or
        // in a function of numbers, where every op is a region.
        if region.nodes.len() < 2 && reduce.is_none() && !singletons {
            continue;
        }
        if reduce.is_some() {
            below.push(top);
        }
        // Errors of the region's code point at its last elementwise op, also when a
        // reduction ends it.
        let Stmt::Op { span, .. } = &stmts[top] else {
            unreachable!("a root is an op")
        };
        taken.extend(below);
        fused.push((
            i,
            Stmt::Fused {
                out,
                inputs: region.inputs,
                literals: region.literals,
                nodes: region.nodes,
                span: *span,
                reduce,
                axes,
            },
        ));
    }
    for (i, stmt) in fused {
        stmts[i] = stmt;
    }
    for stmt in stmts.iter_mut() {
        for inner in nested_mut(stmt) {
            transform(inner, uses, lits, singletons);
        }
    }
    if !taken.is_empty() {
        let mut inside = vec![false; stmts.len()];
        for i in taken {
            inside[i] = true;
        }
        let mut i = 0;
        stmts.retain(|_| {
            i += 1;
            !inside[i - 1]
        });
    }
}

/// Fuses the body's elementwise regions; with `singletons`, each elementwise op that is not
/// inside a larger region is a region of its own (a function of numbers, `crate::numbers`).
pub fn fuse(body: &mut Body, singletons: bool) {
    let mut uses = Uses {
        escapes: vec![false; body.values],
        readers: vec![Vec::new(); body.values],
        def: vec![None; body.values],
        inside: vec![false; body.values],
    };
    for out in &body.outputs {
        if let crate::ir::OutputElem::Val(v) = out {
            uses.escapes[v.0] = true;
        }
    }
    // The aux output of `has_aux` names the values it returns.
    if let Some(crate::ir::OutputAux::Expr(aux)) = &body.aux {
        for v in aux.vals() {
            if let Some(e) = uses.escapes.get_mut(v.0) {
                *e = true;
            }
        }
    }
    let mut lits = Literals {
        floats: HashMap::new(),
        ints: HashMap::new(),
        comparisons: HashMap::new(),
    };
    crate::ir::walk(&body.stmts, &mut |s| {
        if let Stmt::Hoist { id, expr, ty, .. } = s {
            let ty = ty.as_ref().map(ToString::to_string);
            let expr = &unborrowed(expr.tokens());
            match ty.as_deref() {
                None if float_literal(expr) => {
                    lits.floats.insert(*id, as_f64(expr));
                }
                None => {
                    if let Some(lit) = scalar_like_literal(expr) {
                        lits.floats.insert(*id, as_f64(&lit));
                    }
                }
                Some("i32") => {
                    if let Some(n) = int_literal(expr) {
                        lits.ints.insert(*id, n);
                    }
                }
                _ => {}
            }
        }
    });
    // The comparisons a region can compute: read once, by a `where_cond` of their list.
    let mut reads: HashMap<Const, usize> = HashMap::new();
    let mut count = |c: Const| *reads.entry(c).or_default() += 1;
    crate::ir::walk(&body.stmts, &mut |s| {
        stmt_consts(s, &mut count);
        s.for_each_code(&mut |c| c.consts().iter().copied().for_each(&mut count));
    });
    for out in &body.outputs {
        if let crate::ir::OutputElem::Const(c) = out {
            count(*c);
        }
    }
    if let Some(crate::ir::OutputAux::Expr(aux)) = &body.aux {
        aux.consts().iter().copied().for_each(&mut count);
    }
    let mut comparisons = HashMap::new();
    masks(&body.stmts, &lits, &mut comparisons);
    comparisons.retain(|c, _| reads.get(c) == Some(&1));
    lits.comparisons = comparisons;
    collect(&body.stmts, &mut 0, &mut uses, &lits);
    settle(&body.stmts, &mut 0, &mut uses, &lits);
    transform(&mut body.stmts, &uses, &lits, singletons);
    drop_inlined_literals(&mut body.stmts, lits);
}

/// The comparisons of each statement list whose masks a fusible `where_cond` of the same list
/// reads.
fn masks(stmts: &[Stmt], lits: &Literals, found: &mut HashMap<Const, Comparison>) {
    let mut candidates = HashMap::new();
    let mut read = Vec::new();
    for (i, stmt) in stmts.iter().enumerate() {
        match stmt {
            Stmt::Hoist {
                id, expr, ty: None, ..
            } => {
                if let Some(cmp) = comparison(expr.tokens(), i) {
                    candidates.insert(*id, cmp);
                }
            }
            Stmt::Op { op, config, .. }
                if op.name == "where_cond" && fusible(stmt, lits).is_some() =>
            {
                read.push(config[0]);
            }
            _ => {}
        }
        for inner in nested(stmt) {
            masks(inner, lits, found);
        }
    }
    for c in read {
        if let Some(cmp) = candidates.remove(&c) {
            found.insert(c, cmp);
        }
    }
}

/// Removes the `let`s of literals that fused regions write inline and nothing else reads.
fn drop_inlined_literals(stmts: &mut Vec<Stmt>, lits: Literals) {
    let literals: std::collections::HashSet<Const> = lits
        .floats
        .keys()
        .chain(lits.ints.keys())
        .copied()
        .collect();
    let mut read = vec![false; literals.iter().map(|c| c.0 + 1).max().unwrap_or(0)];
    let mut mark = |c: Const| {
        if let Some(r) = read.get_mut(c.0) {
            *r = true;
        }
    };
    crate::ir::walk(stmts, &mut |s| {
        stmt_consts(s, &mut mark);
        s.for_each_code(&mut |c| c.consts().iter().copied().for_each(&mut mark));
    });
    let inlined = |s: &Stmt| match s {
        Stmt::Hoist { id, .. } => literals.contains(id) && !read[id.0],
        _ => false,
    };
    fn retain(stmts: &mut Vec<Stmt>, inlined: &dyn Fn(&Stmt) -> bool) {
        stmts.retain(|s| !inlined(s));
        for s in stmts.iter_mut() {
            for inner in nested_mut(s) {
                retain(inner, inlined);
            }
        }
    }
    retain(stmts, &inlined);
}

/// Calls `f` on each constant a statement reads by number (not those in its tokens).
fn stmt_consts(s: &Stmt, f: &mut impl FnMut(Const)) {
    let operands = |ops: &[Operand], f: &mut dyn FnMut(Const)| {
        ops.iter().for_each(|o| {
            if let Operand::Const(c) = o {
                f(*c)
            }
        })
    };
    let path =
        |p: &[crate::ir::PathSeg], f: &mut dyn FnMut(Const)| crate::ir::path_consts(p).for_each(f);
    match s {
        Stmt::Op { inputs, config, .. } => {
            operands(inputs, f);
            config.iter().copied().for_each(&mut *f);
        }
        Stmt::Fused { inputs, axes, .. } => {
            operands(inputs, f);
            if let Some(ReduceAxes { axes, keepdims, .. }) = axes {
                f(*axes);
                f(*keepdims);
            }
        }
        Stmt::SlotInit { init: o, .. } | Stmt::SlotWrite { val: o, .. } => {
            operands(std::slice::from_ref(o), f)
        }
        Stmt::ListPush { val, index, .. } => {
            operands(std::slice::from_ref(val), f);
            f(*index);
        }
        Stmt::ListGet { index, .. } => f(*index),
        Stmt::ListOp { config, count, .. } => {
            config.iter().copied().for_each(&mut *f);
            f(*count);
        }
        Stmt::Leaf { path: p, .. } => path(p, f),
        Stmt::Call { args, .. } => {
            for a in args {
                if let crate::ir::CallArg::Struct { path: p, .. } = a {
                    path(p, f);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    fn expand(attr: &str, src: &str) -> String {
        let (attr, src) = (attr.parse().expect("attr"), src.parse().expect("source"));
        crate::on_deep_stack(|| crate::expand::differentiable(attr, src)).to_string()
    }

    const GATED: &str = "fn f(x: &Tensor<f64>, w: &Tensor<f64>) -> Tensor<f64> {
        let z = x.matmul(w);
        let h = z.tanh() * 0.5 + 1.0;
        (h * &z).sum()
    }";

    #[test]
    #[cfg_attr(feature = "no-fusion", ignore = "fusion is off")]
    fn a_plain_function_with_calls_is_written_from_its_regions() {
        // One result: the callee itself; two: the callee's forward pass, its pullback dropped.
        let out = expand(
            "",
            "fn f(x: &Tensor<f64>) -> Tensor<f64> {
                let y = g(&(x.sin() * 2.0));
                let (a, b) = h(&y);
                (a.exp() + b).sum()
            }",
        );
        let plain = out.split("fn original").next().expect("the expansion");
        assert!(out.contains("fn original"), "{out}");
        assert!(plain.contains("fused_map ("), "{plain}");
        assert!(plain.contains("fused_reduce ("), "{plain}");
        assert!(
            plain.contains("= g (:: rune_ad :: __private :: arg (&"),
            "{plain}"
        );
        assert!(plain.contains("use h as __rune_callee"), "{plain}");
        assert!(plain.contains("__rune_callee :: fwd ("), "{plain}");
    }

    #[test]
    #[cfg_attr(feature = "no-fusion", ignore = "fusion is off")]
    fn a_tree_of_elementwise_ops_is_one_region() {
        let out = expand("", GATED);
        // `z` is read by `tanh` and by the last product: a region input. The rest is one tree,
        // which the sum ends: the reverse pass computes its value and cotangents in one call,
        // and the backward pass scales them.
        assert_eq!(out.matches("fused_reduce_vjp").count(), 1, "{out}");
        assert_eq!(out.matches("fused_reduce_jvp").count(), 1);
        assert_eq!(out.matches("fused_scale").count(), 1);
        assert!(!out.contains("fused_map") && !out.contains("rules :: sum_vjp"));
        // Two fn items hold the region's code: its value (the plain function's), and its value
        // and cotangents, which forward mode weights by the tangents.
        assert_eq!(out.matches("fn __rune_").count(), 2, "{out}");
        assert_eq!(out.matches("scalar :: tanh :: value").count(), 2, "{out}");
        assert_eq!(
            out.matches("fused_tangent_of (f :: __rune_d").count(),
            1,
            "{out}"
        );
        assert_eq!(out.matches("fused_reduce_vjp (").count(), 1, "{out}");
        assert!(!out.contains("rules :: tanh_vjp"));
    }

    #[test]
    fn fuse_false_leaves_every_op_its_own_call() {
        let out = expand("fuse = false", GATED);
        assert!(!out.contains("fused_"), "{out}");
        assert!(out.contains("rules :: tanh_vjp"));
    }

    #[test]
    #[cfg_attr(feature = "no-fusion", ignore = "fusion is off")]
    fn a_value_read_by_two_ops_of_a_region_is_computed_once_inside_it() {
        let out = expand(
            "",
            "fn f(x: &Tensor<f64>) -> Tensor<f64> {
                let a = x.exp();
                let b = &a * 2.0 + a.sin();
                b.sum()
            }",
        );
        // `a` is read by `*` and `sin`, both in the region: it is one node of it, computed
        // once, and no op of its own.
        assert!(!out.contains("rules :: exp_vjp"), "{out}");
        assert_eq!(out.matches("fused_reduce_vjp").count(), 1, "{out}");
        assert!(out.contains("\"exp 0;mul 1 _;sin 1;add 2 3\""), "{out}");
    }

    #[test]
    #[cfg_attr(feature = "no-fusion", ignore = "fusion is off")]
    fn a_value_read_inside_and_outside_a_region_ends_it() {
        let out = expand(
            "",
            "fn f(x: &Tensor<f64>) -> Tensor<f64> {
                let a = x.exp();
                let b = (&a * 2.0 + a.sin()).sum();
                b + a.matmul(x)
            }",
        );
        // The product reads `a` too: `exp` stays an op, and the region reads its tensor.
        assert!(out.contains("rules :: exp_vjp"), "{out}");
        assert!(out.contains("\"mul 0 _;sin 0;add 1 2\""), "{out}");
    }

    #[test]
    #[cfg_attr(feature = "no-fusion", ignore = "fusion is off")]
    fn a_linear_region_keeps_no_tensor_for_its_backward_pass() {
        let out = expand("", "fn f(x: &Tensor<f64>) -> Tensor<f64> { x * 0.5 - 2.0 }");
        assert!(out.contains("fused_shape"), "{out}");
        assert!(!out.contains("fused_value"), "{out}");
    }

    #[test]
    #[cfg_attr(feature = "no-fusion", ignore = "fusion is off")]
    fn a_reduction_over_some_axes_ends_a_region_that_its_backward_pass_recomputes() {
        for reduction in ["sum_axes", "mean_axes"] {
            let out = expand(
                "",
                &format!(
                    "fn f(x: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {{
                        (x.exp() * y).{reduction}(&[-1], true)
                    }}"
                ),
            );
            // The value in one pass (forward mode too), the cotangents in one pass from the
            // inputs: no partials, no rule of the reduction.
            assert_eq!(out.matches("fused_reduce_axes (").count(), 2, "{out}");
            assert_eq!(out.matches("fused_reduce_axes_jvp").count(), 1, "{out}");
            assert_eq!(out.matches("fused_reduce_axes_vjp").count(), 1, "{out}");
            let variant = if reduction == "sum_axes" {
                "Sum"
            } else {
                "Mean"
            };
            assert!(out.contains(&format!("Reduction :: {variant}")), "{out}");
            assert!(
                !out.contains("fused_scale") && !out.contains("fused_map"),
                "{out}"
            );
            assert!(!out.contains(&format!("rules :: {reduction}_vjp")), "{out}");
        }
    }

    #[test]
    #[cfg_attr(feature = "no-fusion", ignore = "fusion is off")]
    fn a_reduced_region_keeps_only_its_partial_derivatives() {
        for reduction in ["sum", "mean"] {
            let out = expand(
                "",
                &format!(
                    "fn f(x: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {{
                        (x.exp() * y).{reduction}()
                    }}"
                ),
            );
            // One call for the value and both cotangents; nothing of the region is kept but
            // what it returned.
            assert_eq!(out.matches("fused_reduce_vjp").count(), 1, "{out}");
            let variant = if reduction == "sum" { "Sum" } else { "Mean" };
            assert!(out.contains(&format!("Reduction :: {variant}")), "{out}");
            assert_eq!(out.matches("fused_scale").count(), 2);
            assert!(
                !out.contains("fused_value") && !out.contains("fused_shape"),
                "{out}"
            );
            assert!(!out.contains(&format!("rules :: {reduction}_vjp")));
        }
        // One op is a region when a reduction ends it.
        let out = expand("", "fn f(x: &Tensor<f64>) -> Tensor<f64> { (x * x).sum() }");
        assert_eq!(out.matches("fused_reduce_vjp").count(), 1, "{out}");
        // A reduction of a value read elsewhere, or of a parameter, stays an op.
        let out = expand(
            "",
            "fn f(x: &Tensor<f64>) -> Tensor<f64> { let y = x.exp(); y.sum() + &y }",
        );
        assert!(!out.contains("fused_reduce"), "{out}");
        let out = expand("", "fn f(x: &Tensor<f64>) -> Tensor<f64> { x.sum() }");
        assert!(!out.contains("fused_"), "{out}");
    }

    #[test]
    #[cfg_attr(feature = "no-fusion", ignore = "fusion is off")]
    fn equal_literals_share_a_slot_and_a_cotangent_is_one_expression() {
        let out = expand(
            "",
            "fn f(x: &Tensor<f64>) -> Tensor<f64> {
                let y = (x * 1.5 + 0.5) * 1.5 + 0.5;
                y * 2.0
            }",
        );
        // Three distinct literals, each written once in each of the four calls (the plain
        // function's, the forward and backward passes', forward mode's).
        assert_eq!(out.matches("1.5f64").count(), 4, "{out}");
        assert_eq!(out.matches("0.5f64").count(), 4, "{out}");
        // `+ 0.5` leaves the cotangent as it is, and each value read once is written into its
        // reader: the cotangent is one expression of the three products, and so is the value.
        let cotangent = "[(((__rune_ge * __rune_l2) * __rune_l0) * __rune_l0)]";
        assert!(out.contains(cotangent), "{out}");
        let value = "(((__rune_x0 * __rune_l0) + __rune_l1) * __rune_l0) + __rune_l1) * __rune_l2";
        assert_eq!(out.matches(value).count(), 2, "{out}");
    }

    #[test]
    #[cfg_attr(feature = "no-fusion", ignore = "fusion is off")]
    fn selections_powers_and_smooth_binary_functions_join_regions() {
        let out = expand(
            "",
            "fn f(x: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
                let r = (x - y).clamp(-1.0, 1.0).maximum(0.0).minimum(y);
                let p = x.powf(1.5) + x.powi(3) - x.pow(y) + x.atan2(y).hypot(y);
                (r * p + x.logaddexp(y) + x.xlogy(y) + x.xlog1py(y)).sum()
            }",
        );
        assert_eq!(out.matches("fused_reduce_vjp").count(), 1, "{out}");
        assert!(!out.contains("rules ::"), "{out}");
        // Each partial derivative from the ops' scalar forms; the integer exponent written
        // in place, its `let` gone.
        for f in [
            "maximum_lhs",
            "minimum_rhs",
            "clamp_d",
            "pow_rhs",
            "atan2_lhs",
            "xlog1py_rhs",
        ] {
            assert!(out.contains(&format!("elementwise :: {f}")), "{f}: {out}");
        }
        assert!(out.contains("powi_d (__rune_d"), "{out}");
        assert!(out.contains("3i32") && !out.contains(": i32 = 3"), "{out}");
        // A configuration argument that is not a literal keeps its op out of regions.
        let out = expand(
            "",
            "fn f(x: &Tensor<f64>, #[nodiff] n: i32, #[nodiff] lo: f64) -> Tensor<f64> {
                (x.exp().powi(n) + x.sin().clamp(lo, 1.0)).sum()
            }",
        );
        assert!(out.contains("rules :: powi_vjp"), "{out}");
        assert!(out.contains("rules :: clamp_vjp"), "{out}");
    }

    #[test]
    #[cfg_attr(feature = "no-fusion", ignore = "fusion is off")]
    fn a_where_cond_computes_its_comparison_in_place_and_reads_a_given_mask() {
        let out = expand(
            "",
            "fn f(x: &Tensor<f64>, y: &Tensor<f64>, #[nodiff] m: &Tensor<bool>) -> Tensor<f64> {
                let d = x - y;
                let a = d.abs();
                let h = where_cond(&a.le(0.5), &(&d * &d * 0.5), &((a - 0.25) * 0.5));
                where_cond(m, &h, &0.0).mean()
            }",
        );
        // One region: the comparison is computed in it, with no mask tensor; the given mask
        // is an input, as ones and zeros.
        assert_eq!(out.matches("fused_reduce_vjp").count(), 1, "{out}");
        assert!(out.contains("elementwise :: le (__rune_x"), "{out}");
        assert!(!out.contains("__rune_v3 . le"), "{out}");
        assert!(out.contains("fused_mask (& __rune_c"), "{out}");
        assert!(out.contains("elementwise :: where_cond_lhs"), "{out}");
        // `&0.0` is a literal of the region.
        assert!(out.contains("where_cond 0 8 _"), "{out}");
        assert!(!out.contains("where_cond_vjp") && !out.contains("where_cond_jvp"));
        // A mask read twice is computed once, as a constant, and read by the regions.
        let out = expand(
            "",
            "fn f(x: &Tensor<f64>) -> Tensor<f64> {
                let m = x.gt(0.0);
                (where_cond(&m, &x.exp(), &0.0) + where_cond(&m, &1.0, &x.sin())).sum()
            }",
        );
        assert!(!out.contains("elementwise :: gt"), "{out}");
        assert!(out.contains("fused_mask"), "{out}");
    }

    #[test]
    #[cfg_attr(feature = "no-fusion", ignore = "fusion is off")]
    fn the_plain_function_runs_its_regions_unless_fusion_is_off() {
        // The function as emitted: what comes before the type of its entry points.
        let plain =
            |out: &str| out[..out.find("# [doc (hidden)]").expect("entry points")].to_string();
        let out = plain(&expand("", GATED));
        assert!(out.contains("fused_reduce ("), "{out}");
        assert!(
            out.contains("matmul") && !out.contains("fused_reduce_vjp"),
            "{out}"
        );
        // Unfused: the body as written.
        let out = plain(&expand("fuse = false", GATED));
        assert!(!out.contains("fused"), "{out}");
    }
}
