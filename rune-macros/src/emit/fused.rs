//! Fused regions (`crate::fuse`) in the generated code: the region's scalar code for its value,
//! its value and tangent, and its input cotangents, each a closure that the runtime's fused
//! loops (`rune_runtime::fused`) run element by element.
//!
//! Inside the closures, `__rune_xI` is input `I`'s element, `__rune_nJ` op `J`'s value,
//! `__rune_lK` literal `K`, and `__rune_u..`/`__rune_d..` their tangents and adjoints.
//! `__rune_k` is the kernels of the loop's pass (`rune_runtime::vmath::Kernels`), which the
//! unary functions' scalar forms take (`value_in`, `tangent_in`): the loops run each block
//! with the fast kernels and, when one met an argument outside its range, again with the
//! full-range ones. Each op's local derivative is the one its tensor rule applies (`strong_mul`
//! where the rule scales, `rune_runtime::scalar::<op>::tangent_in` for a unary function, the
//! scalar forms of `rune_runtime::generated::elementwise` for the others: `maximum_lhs`,
//! `clamp_d`, `where_cond_rhs`, ..), so the fused and the unfused code compute the same numbers
//! up to the order of additions. A comparison's value is a `bool`; `where_cond` reads it, or `fused_flag`
//! of a mask input.

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::Ident;

use super::tokens::{gather_closure_lets, inline_single_reads, relocate_call};
use super::{rt, Emitter, Mode};
use crate::analyse::config_keep;
use crate::fuse::Needs;
use crate::ir::{Const, FusedArg, FusedNode, Operand, ReduceAxes, Reduction, Stmt, Val};
use crate::names::{
    adjoint_ident, config_ident, const_ident, hidden, partials_ident, residual_ident, shape_ident,
    tangent_ident, val_ident,
};
use crate::ops::{Eval, Form, Keep, OpSpec, Partial, Read};

fn x(i: usize) -> Ident {
    hidden(&format!("x{i}"))
}
fn node(j: usize) -> Ident {
    hidden(&format!("n{j}"))
}
fn literal(k: usize) -> Ident {
    hidden(&format!("l{k}"))
}

/// A value of the region: input, op, literal or integer.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Value {
    Input(usize),
    Node(usize),
    Literal(usize),
    Int(i32),
}

impl From<FusedArg> for Value {
    fn from(a: FusedArg) -> Self {
        match a {
            FusedArg::Input(i) => Value::Input(i),
            FusedArg::Node(j) => Value::Node(j),
            FusedArg::Literal(k) => Value::Literal(k),
            FusedArg::Int(n) => Value::Int(n),
        }
    }
}

fn value_ident(v: Value) -> TokenStream {
    match v {
        Value::Input(i) => x(i).into_token_stream(),
        Value::Node(j) => node(j).into_token_stream(),
        Value::Literal(k) => literal(k).into_token_stream(),
        Value::Int(n) => quote!(#n),
    }
}

/// Whether `op` is evaluated by its scalar forms in `elementwise` ([`Eval::Scalar`]).
fn elementwise(op: &OpSpec) -> bool {
    op.fusion.is_some_and(|f| f.eval == Eval::Scalar)
}

/// The partials of fused op `op` (none for a comparison).
fn partials(op: &OpSpec) -> &'static [Partial] {
    op.fusion.map_or(&[], |f| f.partials)
}

fn input_tangent(i: usize) -> Ident {
    hidden(&format!("ux{i}"))
}
fn node_tangent(j: usize) -> Ident {
    hidden(&format!("un{j}"))
}

/// The region's code, shared by its three closures.
struct Code<'a> {
    inputs: usize,
    literals: &'a [TokenStream],
    nodes: &'a [FusedNode],
}

impl Code<'_> {
    /// `"mul 0 1;exp 2"`: each op's name and the values it reads, for shape errors
    /// (`rune_runtime::fused::FusedOps`).
    fn ops_table(&self) -> TokenStream {
        let index = |a: FusedArg| match a {
            FusedArg::Input(i) => i.to_string(),
            FusedArg::Node(j) => (self.inputs + j).to_string(),
            FusedArg::Literal(_) | FusedArg::Int(_) => "_".to_string(),
        };
        let rows: Vec<String> = self
            .nodes
            .iter()
            .map(|n| {
                let args: Vec<String> = n.args.iter().map(|&a| index(a)).collect();
                format!("{} {}", n.op.name, args.join(" "))
            })
            .collect();
        let table = rows.join(";");
        quote!(#table)
    }

    /// Whether input `i` is the mask of a `where_cond` (made a tensor of the element type by
    /// `fused_mask`).
    fn is_mask(&self, i: usize) -> bool {
        self.nodes
            .iter()
            .any(|n| n.op.name == "where_cond" && n.args[0] == FusedArg::Input(i))
    }

    fn params(&self) -> TokenStream {
        let xs = (0..self.inputs).map(x);
        quote!([#(#xs),*])
    }

    /// The literals as `f64`s, `[1.5f64, ..]`: the runtime converts them to the element type
    /// once a call and hands the closure `__rune_lits`.
    fn literal_array(&self) -> TokenStream {
        let lits = self.literals;
        quote!([#(#lits),*])
    }

    /// `let [__rune_l0, ..] = *__rune_lits;` for the literals `keep` says (all for `None`).
    fn literal_lets(&self, keep: Option<&[bool]>) -> TokenStream {
        if self.literals.is_empty() {
            return quote!();
        }
        let names = (0..self.literals.len()).map(|k| {
            if keep.is_none_or(|keep| keep[k]) {
                let l = literal(k);
                quote!(#l)
            } else {
                quote!(_)
            }
        });
        quote!(let [#(#names),*] = *__rune_lits;)
    }

    /// `let __rune_nJ = ..;` for the ops `keep` says (all for `None`), as names and initializers.
    fn value_lets(&self, keep: Option<&[bool]>) -> Vec<(Ident, TokenStream)> {
        let rt = rt();
        let kept = |j: usize| keep.is_none_or(|keep| keep[j]);
        let lets = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(j, _)| kept(*j))
            .map(|(j, n)| {
                let a = value_ident(n.args[0].into());
                let nj = node(j);
                let e = match n.op.form {
                    Form::Operator => {
                        let b = value_ident(n.args[1].into());
                        match n.op.name {
                            "add" => quote!(#a + #b),
                            "sub" => quote!(#a - #b),
                            "mul" => quote!(#a * #b),
                            _ => quote!(#a / #b),
                        }
                    }
                    Form::Negation => quote!(-#a),
                    _ if n.op.name == "where_cond" => {
                        let (c, a, b) = (
                            self.cond(j),
                            value_ident(n.args[1].into()),
                            value_ident(n.args[2].into()),
                        );
                        quote!(#rt::elementwise::where_cond(#c, #a, #b))
                    }
                    _ if n.op.kind == rune_ops::Kind::Comparison => {
                        let f = format_ident!("{}", n.op.name);
                        let b = value_ident(n.args[1].into());
                        quote!(#rt::elementwise::#f(#a, #b))
                    }
                    _ if elementwise(n.op) => {
                        let f = format_ident!("{}", n.op.name);
                        let args = n.args.iter().map(|&a| value_ident(a.into()));
                        quote!(#rt::elementwise::#f(#(#args),*))
                    }
                    _ => {
                        let f = format_ident!("{}", n.op.name);
                        quote!(#rt::scalar::#f::value_in(#a, __rune_k))
                    }
                };
                (nj, e)
            });
        lets.collect()
    }

    /// Where a unary function's derivative is read: `Input(x)` or `Output(y)`.
    fn at(&self, j: usize) -> TokenStream {
        let rt = rt();
        let n = &self.nodes[j];
        if partials(n.op)
            .first()
            .is_some_and(|p| p.reads == [Read::Output])
        {
            let y = node(j);
            quote!(#rt::scalar::Output(#y))
        } else {
            let a = value_ident(n.args[0].into());
            quote!(#rt::scalar::Input(#a))
        }
    }

    /// `d` through an operand of op `j` by the partial's scalar form in `elementwise`, called
    /// with what the registry says the partial reads ([`Partial::reads`]).
    fn chain(&self, j: usize, p: &Partial, d: &TokenStream) -> TokenStream {
        let rt = rt();
        let n = &self.nodes[j];
        let f = format_ident!("{}", p.form);
        let args = p.reads.iter().map(|r| match *r {
            Read::Operand(0) if n.op.fusion.is_some_and(|f| f.eval == Eval::Select) => self.cond(j),
            Read::Operand(k) => value_ident(n.args[k].into()),
            Read::Output => node(j).into_token_stream(),
        });
        quote!(#rt::elementwise::#f(#d, #(#args),*))
    }

    /// The mask of `where_cond` op `j`, a `bool`: a comparison of the region, or an input made
    /// by `fused_mask`.
    fn cond(&self, j: usize) -> TokenStream {
        let rt = rt();
        match self.nodes[j].args[0] {
            FusedArg::Input(i) => {
                let m = x(i);
                quote!(#rt::fused_flag(#m))
            }
            a => value_ident(a.into()),
        }
    }

    fn root(&self) -> Ident {
        node(self.nodes.len() - 1)
    }

    /// The value closure's body.
    fn value_body(&self) -> TokenStream {
        let (lits, lets, root) = (self.literal_lets(None), self.value_lets(None), self.root());
        body(lits, lets, quote!(#root))
    }

    /// The tangent closure's body, for the inputs `with_tangent`.
    fn tangent_body(&self, with_tangent: &[usize]) -> TokenStream {
        let rt = rt();
        // Each node's tangent, where it has one: its own `let`, or the operand's tangent it
        // equals (`a + literal`), which then gets no `let` of its own.
        let mut tangents: Vec<Option<Ident>> = vec![None; self.nodes.len()];
        let tangent = |v: Value, tangents: &[Option<Ident>]| match v {
            Value::Input(i) => with_tangent.contains(&i).then(|| input_tangent(i)),
            Value::Node(j) => tangents[j].clone(),
            Value::Literal(_) | Value::Int(_) => None,
        };
        let mut lets = Vec::new();
        for (j, n) in self.nodes.iter().enumerate() {
            let a: Value = n.args[0].into();
            let ta = tangent(a, &tangents);
            let av = value_ident(a);
            let e = match n.op.form {
                Form::Operator => {
                    let b: Value = n.args[1].into();
                    let tb = tangent(b, &tangents);
                    let bv = value_ident(b);
                    let y = node(j);
                    match (n.op.name, ta, tb) {
                        (_, None, None) => None,
                        ("add" | "sub", Some(ta), None) | ("add", None, Some(ta)) => {
                            tangents[j] = Some(ta);
                            continue;
                        }
                        ("add", Some(ta), Some(tb)) => Some(quote!(#ta + #tb)),
                        ("sub", Some(ta), Some(tb)) => Some(quote!(#ta - #tb)),
                        ("sub", None, Some(tb)) => Some(quote!(-#tb)),
                        ("mul", Some(ta), Some(tb)) => {
                            Some(quote!(#rt::strong_mul(#ta, #bv) + #rt::strong_mul(#tb, #av)))
                        }
                        // A literal is finite: no need of a strong zero.
                        ("mul", Some(ta), None) if matches!(b, Value::Literal(_)) => {
                            Some(quote!(#ta * #bv))
                        }
                        ("mul", None, Some(tb)) if matches!(a, Value::Literal(_)) => {
                            Some(quote!(#tb * #av))
                        }
                        ("mul", Some(ta), None) => Some(quote!(#rt::strong_mul(#ta, #bv))),
                        ("mul", None, Some(tb)) => Some(quote!(#rt::strong_mul(#tb, #av))),
                        (_, Some(ta), Some(tb)) => Some(quote!(#rt::strong_mul(
                            #ta - #rt::strong_mul(#tb, #y), #rt::fused_recip(#bv)))),
                        (_, Some(ta), None) => {
                            Some(quote!(#rt::strong_mul(#ta, #rt::fused_recip(#bv))))
                        }
                        (_, None, Some(tb)) => Some(quote!(#rt::strong_mul(
                            -#rt::strong_mul(#tb, #y), #rt::fused_recip(#bv)))),
                    }
                }
                Form::Negation => ta.map(|ta| quote!(-#ta)),
                _ if n.op.kind == rune_ops::Kind::Comparison => None,
                // The tangent of the side selected, as the rule selects it.
                _ if n.op.name == "where_cond" => {
                    let ta = tangent(n.args[1].into(), &tangents);
                    let tb = tangent(n.args[2].into(), &tangents);
                    let x0 = x(0);
                    let zero = quote!(#rt::fused_zero(#x0));
                    let or_zero =
                        |t: &Option<Ident>| t.as_ref().map_or(zero.clone(), |t| quote!(#t));
                    (ta.is_some() || tb.is_some()).then(|| {
                        let (c, ta, tb) = (self.cond(j), or_zero(&ta), or_zero(&tb));
                        quote!(#rt::elementwise::where_cond(#c, #ta, #tb))
                    })
                }
                // The sum of the tangents through the operands that have one, as the rules
                // add them.
                _ if elementwise(n.op) => partials(n.op)
                    .iter()
                    .filter_map(|p| {
                        let t = tangent(n.args[p.operand].into(), &tangents)?;
                        Some(self.chain(j, p, &t.into_token_stream()))
                    })
                    .reduce(|acc, c| quote!(#acc + #c)),
                _ => {
                    let f = format_ident!("{}", n.op.name);
                    let at = self.at(j);
                    ta.map(|ta| quote!(#rt::scalar::#f::tangent_in(#ta, #at, __rune_k)))
                }
            };
            if let Some(e) = e {
                let u = node_tangent(j);
                lets.push((u.clone(), e));
                tangents[j] = Some(u);
            }
        }
        let root = self.root();
        let x0 = x(0);
        let u_root = match &tangents[self.nodes.len() - 1] {
            Some(u) => quote!(#u),
            None => quote!(#rt::fused_zero(#x0)),
        };
        let (lits, mut values) = (self.literal_lets(None), self.value_lets(None));
        values.extend(lets);
        body(lits, values, quote!((#root, #u_root)))
    }

    /// The cotangent closure's body: the input cotangents of `targets` from `__rune_ge`. Each
    /// partial sum of an adjoint gets a name of its own (`__rune_dK`), so that long bodies'
    /// `let`s can be gathered.
    ///
    /// Returns the body and, for each target, which of the closure's results is its cotangent:
    /// inputs whose cotangents are the same value (the operands of `+`) share one result, so
    /// that the runtime computes and stores it once.
    fn adjoint_body(&self, targets: &[usize], needs: &Needs) -> (TokenStream, Vec<usize>) {
        let (lets, outs, slots) = self.adjoint_lets(targets);
        let lits = self.literal_lets(Some(&needs.literals));
        let mut values = self.value_lets(Some(&needs.nodes));
        values.extend(lets);
        (body(lits, values, outs), slots)
    }

    /// The body of a reduced region's closure in the reverse pass: its element's value and the
    /// input cotangents of `targets` from the element's cotangent `__rune_ge`, as `(value,
    /// [cotangents])`; with the slots as [`Self::adjoint_body`] gives them.
    fn value_and_adjoint_body(&self, targets: &[usize]) -> (TokenStream, Vec<usize>) {
        let (lets, outs, slots) = self.adjoint_lets(targets);
        let (lits, mut values) = (self.literal_lets(None), self.value_lets(None));
        values.extend(lets);
        let root = self.root();
        (body(lits, values, quote!((#root, #outs))), slots)
    }

    /// The adjoint's `let`s, the array of the cotangents of `targets`, and each target's slot
    /// in it.
    #[allow(clippy::type_complexity)]
    fn adjoint_lets(
        &self,
        targets: &[usize],
    ) -> (Vec<(Ident, TokenStream)>, TokenStream, Vec<usize>) {
        let rt = rt();
        let mut current: HashMap<Value, Ident> = HashMap::new();
        let mut fresh = 0;
        let mut lets = Vec::new();
        let root = self.nodes.len() - 1;
        let d_root = hidden("d");
        lets.push((d_root.clone(), quote!(__rune_ge)));
        current.insert(Value::Node(root), d_root);
        let wanted = |v: Value| match v {
            Value::Input(i) => targets.contains(&i),
            Value::Node(_) => true,
            Value::Literal(_) | Value::Int(_) => false,
        };
        for (j, n) in self.nodes.iter().enumerate().rev() {
            let Some(d) = current.get(&Value::Node(j)).cloned() else {
                continue;
            };
            // `None`: the adjoint itself, handed on (`a + b`): no code, and no copy.
            let mut contributions: Vec<(Value, Option<TokenStream>)> = Vec::new();
            let a: Value = n.args[0].into();
            let av = value_ident(a);
            match n.op.form {
                Form::Operator => {
                    let b: Value = n.args[1].into();
                    let bv = value_ident(b);
                    let y = node(j);
                    let (ca, cb) = match n.op.name {
                        "add" => (None, None),
                        "sub" => (None, Some(quote!(-#d))),
                        // A literal is finite: no need of a strong zero.
                        "mul" => (
                            Some(if matches!(b, Value::Literal(_)) {
                                quote!(#d * #bv)
                            } else {
                                quote!(#rt::strong_mul(#d, #bv))
                            }),
                            Some(if matches!(a, Value::Literal(_)) {
                                quote!(#d * #av)
                            } else {
                                quote!(#rt::strong_mul(#d, #av))
                            }),
                        ),
                        _ => (
                            Some(quote!(#rt::strong_mul(#d, #rt::fused_recip(#bv)))),
                            Some(
                                quote!(-#rt::strong_mul(#rt::strong_mul(#d, #y), #rt::fused_recip(#bv))),
                            ),
                        ),
                    };
                    contributions.push((a, ca));
                    contributions.push((b, cb));
                }
                Form::Negation => contributions.push((a, Some(quote!(-#d)))),
                _ if n.op.kind == rune_ops::Kind::Comparison => {}
                // `where_cond` and the ops of `elementwise`: each partial's scalar form.
                _ if n.op.name == "where_cond" || elementwise(n.op) => {
                    let d = d.to_token_stream();
                    for p in partials(n.op) {
                        let c = self.chain(j, p, &d);
                        contributions.push((n.args[p.operand].into(), Some(c)));
                    }
                }
                _ => {
                    let f = format_ident!("{}", n.op.name);
                    let at = self.at(j);
                    contributions.push((
                        a,
                        Some(quote!(#rt::scalar::#f::tangent_in(#d, #at, __rune_k))),
                    ));
                }
            }
            for (target, c) in contributions {
                if !wanted(target) {
                    continue;
                }
                let sum = match (current.get(&target), c) {
                    (None, None) => {
                        current.insert(target, d.clone());
                        continue;
                    }
                    (None, Some(c)) => c,
                    (Some(old), None) => quote!(#old + #d),
                    (Some(old), Some(c)) => quote!(#old + #c),
                };
                let next = hidden(&format!("d{fresh}"));
                fresh += 1;
                lets.push((next.clone(), sum));
                current.insert(target, next);
            }
        }
        let x0 = x(0);
        let mut outs: Vec<Option<Ident>> = Vec::new();
        let slots = targets
            .iter()
            .map(|&i| {
                let d = current.get(&Value::Input(i)).cloned();
                match outs.iter().position(|o| *o == d) {
                    Some(k) => k,
                    None => {
                        outs.push(d);
                        outs.len() - 1
                    }
                }
            })
            .collect();
        let outs = outs.iter().map(|d| match d {
            Some(d) => quote!(#d),
            None => quote!(#rt::fused_zero(#x0)),
        });
        (lets, quote!([#(#outs),*]), slots)
    }
}

/// A closure's body: `prefix`, then `lets` (each read once written into its reader), then `tail`.
fn body(prefix: TokenStream, lets: Vec<(Ident, TokenStream)>, tail: TokenStream) -> TokenStream {
    gather_closure_lets(inline_single_reads(prefix, lets, tail))
}

/// A fused region's parts.
struct Region<'a> {
    code: Code<'a>,
    out: Val,
    inputs: &'a [Operand],
    span: Span,
    /// The runtime's `Reduction` that ends the region, if one does.
    reduce: Option<TokenStream>,
    /// The axes of that reduction, when it is over some axes.
    axes: Option<ReduceAxes>,
}

fn region(stmt: &Stmt) -> Region<'_> {
    let Stmt::Fused {
        out,
        inputs,
        literals,
        nodes,
        span,
        reduce,
        axes,
    } = stmt
    else {
        unreachable!("a fused region")
    };
    let code = Code {
        inputs: inputs.len(),
        literals,
        nodes,
    };
    let rt = rt();
    let reduce = reduce.map(|r| match r {
        Reduction::Sum => quote!(#rt::Reduction::Sum),
        Reduction::Mean => quote!(#rt::Reduction::Mean),
    });
    Region {
        code,
        out: *out,
        inputs,
        span: *span,
        reduce,
        axes: *axes,
    }
}

/// The arguments `axes, keepdims,` of a reduction over some axes, from the constants of the
/// forward pass, or from those the backward pass keeps.
fn axes_args(axes: &ReduceAxes, backward: bool) -> TokenStream {
    let arg = |c: Const, index: usize| {
        if !backward {
            return const_ident(c).into_token_stream();
        }
        let k = config_ident(c);
        match config_keep(axes.op, index) {
            Some(Keep::Owned) => quote!(&#k),
            _ => quote!(#k),
        }
    };
    let (a, k) = (arg(axes.axes, 0), arg(axes.keepdims, 1));
    quote!(#a, #k,)
}

impl Emitter<'_> {
    /// The positions of a region's inputs that are differentiated values.
    fn differentiated(&self, inputs: &[Operand]) -> Vec<usize> {
        (0..inputs.len())
            .filter(|&i| inputs[i].val().is_some_and(|v| self.useful(v)))
            .collect()
    }

    /// A fused region's inputs as `OperandRef`s, in the forward pass.
    fn fused_inputs(&self, inputs: &[Operand], code: &Code) -> TokenStream {
        let rt = rt();
        let items = inputs.iter().enumerate().map(|(k, o)| {
            let i = match *o {
                Operand::Val(v) => val_ident(v),
                Operand::Const(c) => const_ident(c),
            };
            if self.numbers {
                quote!(#rt::number_of(&#i))
            } else if code.is_mask(k) {
                quote!(#rt::OperandOf::operand_of(&#rt::fused_mask(&#i)))
            } else {
                quote!(#rt::OperandOf::operand_of(&#i))
            }
        });
        quote!([#(#items),*])
    }

    /// The forward statement of a fused region: its value, or in forward mode its value and
    /// tangent.
    /// In the reverse pass, a reduced region computes its input cotangents for a cotangent of
    /// one on its result in the same pass as its value, and saves them (see
    /// [`Self::fused_backward`]).
    pub(super) fn fused_forward(&self, stmt: &Stmt, mode: Mode) -> TokenStream {
        let rt = rt();
        let Region {
            code,
            out,
            inputs,
            span,
            reduce,
            axes,
        } = region(stmt);
        let (ops, args, params) = (
            code.ops_table(),
            self.fused_inputs(inputs, &code),
            code.params(),
        );
        let lits = code.literal_array();
        let v = val_ident(out);
        let useful = self.useful(out);
        let over = axes.as_ref().map(|a| axes_args(a, false));
        let call = match (mode, reduce) {
            (Mode::Tangent, reduce) if useful => {
                let with_tangent = self.differentiated(inputs);
                let tangents = with_tangent.iter().map(|&i| {
                    let t = tangent_ident(inputs[i].val().expect("a value"));
                    quote!(&#t)
                });
                let us = with_tangent.iter().map(|&i| input_tangent(i));
                let body = code.tangent_body(&with_tangent);
                let t = tangent_ident(out);
                let (function, reduce) = match (reduce, &over) {
                    (Some(r), Some(over)) => {
                        (quote!(#rt::fused_reduce_axes_jvp), quote!(#r, #over))
                    }
                    (Some(r), None) => (quote!(#rt::fused_reduce_jvp), quote!(#r,)),
                    (None, _) => (self.glue("fused_jvp"), quote!()),
                };
                quote! {
                    let (#v, #t) = #function(#ops, #args, #lits, #reduce [#(#tangents),*], #[inline(always)] |#params, __rune_lits, __rune_k, [#(#us),*]| { #body });
                }
            }
            (_, Some(r)) if over.is_some() => {
                let body = code.value_body();
                quote!(let #v = #rt::fused_reduce_axes(#ops, #args, #lits, #r, #over #[inline(always)] |#params, __rune_lits, __rune_k| { #body });)
            }
            (Mode::Reverse, Some(r)) if useful => {
                let targets = self.differentiated(inputs);
                let (body, slots) = code.value_and_adjoint_body(&targets);
                let pairs = targets.iter().zip(&slots).map(|(i, k)| quote!((#i, #k)));
                let p = partials_ident(out);
                quote! {
                    let (#v, #p) = #rt::fused_reduce_vjp(#ops, #args, #lits, #r, [#(#pairs),*], #[inline(always)] |#params, __rune_lits, __rune_k, __rune_ge| { #body });
                }
            }
            (_, Some(r)) => {
                let body = code.value_body();
                quote!(let #v = #rt::fused_reduce(#ops, #args, #lits, #r, #[inline(always)] |#params, __rune_lits, __rune_k| { #body });)
            }
            (_, None) => {
                let body = code.value_body();
                let function = self.glue("fused_map");
                quote!(let #v = #function(#ops, #args, #lits, #[inline(always)] |#params, __rune_lits, __rune_k| { #body });)
            }
        };
        relocate_call(call, span)
    }

    /// The backward statement of a fused region: every differentiated input's cotangent in one
    /// pass.
    ///
    /// A reduced region's cotangents were computed by the forward pass for a cotangent of one:
    /// each is scaled by the result's cotangent.
    pub(super) fn fused_backward(&self, stmt: &Stmt) -> TokenStream {
        let rt = rt();
        let Region {
            code,
            out,
            inputs,
            span,
            reduce,
            axes,
        } = region(stmt);
        let targets = self.differentiated(inputs);
        let adj = adjoint_ident(out);
        if reduce.is_some() && axes.is_none() {
            let p = partials_ident(out);
            let accumulate = targets.iter().enumerate().map(|(k, &i)| {
                let a = adjoint_ident(inputs[i].val().expect("a value"));
                quote!(#rt::accumulate(&mut #a, #rt::fused_scale(&#p[#k], &__rune_g));)
            });
            return relocate_call(
                quote! {
                    if let ::core::option::Option::Some(__rune_g) = #adj.take() {
                        #(#accumulate)*
                    }
                },
                span,
            );
        }
        let needs = Needs::of(inputs, code.literals.len(), code.nodes);
        let args = inputs
            .iter()
            .zip(&needs.inputs)
            .enumerate()
            .map(|(k, (o, needed))| match *o {
                Operand::Val(v) if self.numbers && *needed => {
                    let v = val_ident(v);
                    quote!(#rt::number_of(&#v))
                }
                Operand::Val(v) if self.numbers => {
                    let s = shape_ident(v);
                    quote!(#rt::number_zero(&#s))
                }
                Operand::Const(c) if self.numbers => {
                    let r = residual_ident(c);
                    quote!(#rt::number_of(&#r))
                }
                Operand::Const(c) if code.is_mask(k) => {
                    let r = residual_ident(c);
                    quote!(#rt::fused_value(&#rt::fused_mask(&#r)))
                }
                Operand::Val(v) if *needed => {
                    let v = val_ident(v);
                    quote!(#rt::fused_value(&#v))
                }
                Operand::Val(v) => {
                    let s = shape_ident(v);
                    quote!(#rt::fused_shape(&#s))
                }
                Operand::Const(c) => {
                    let r = residual_ident(c);
                    quote!(#rt::fused_value(&#r))
                }
            });
        let args = quote!([#(#args),*]);
        let (ops, params, lits) = (code.ops_table(), code.params(), code.literal_array());
        let (body, slots) = code.adjoint_body(&targets, &needs);
        let pairs = targets.iter().zip(&slots).map(|(i, k)| quote!((#i, #k)));
        let results: Vec<Ident> = (0..targets.len())
            .map(|k| hidden(&format!("f{k}")))
            .collect();
        let accumulate = self.glue("accumulate");
        let (function, over) = match (&reduce, &axes) {
            (Some(r), Some(axes)) => {
                let axes = axes_args(axes, true);
                (quote!(#rt::fused_reduce_axes_vjp), quote!(#r, #axes))
            }
            _ => (self.glue("fused_vjp"), quote!()),
        };
        let accumulate = targets.iter().zip(&results).map(|(&i, r)| {
            let a = adjoint_ident(inputs[i].val().expect("a value"));
            quote!(#accumulate(&mut #a, #r);)
        });
        relocate_call(
            quote! {
                if let ::core::option::Option::Some(__rune_g) = #adj.take() {
                    let [#(#results),*] = #function(#ops, #args, #lits, #over [#(#pairs),*], &__rune_g, #[inline(always)] |#params, __rune_lits, __rune_k, __rune_ge| { #body });
                    #(#accumulate)*
                }
            },
            span,
        )
    }
}
