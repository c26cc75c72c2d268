//! A fused region's scalar code: the body of the closure the runtime's loop calls for each
//! element, for the region's value, or its value and its inputs' cotangents (which forward mode
//! weights by the inputs' tangents).
//!
//! Inside, `__rune_xI` is input `I`'s element, `__rune_nJ` op `J`'s value, `__rune_lK` literal
//! `K`, and `__rune_d..` the adjoints. `__rune_k` is the kernels of
//! the loop's pass (`rune_runtime::vmath::Kernels`), which the unary functions' scalar forms take
//! (`value_in`, `tangent_in`): the loops run each block with the fast kernels and, when one met an
//! argument outside its range, again with the full-range ones. Each op's local derivative is the
//! one its tensor rule applies (`strong_mul` where the rule scales,
//! `rune_runtime::scalar::<op>::tangent_in` for a unary function, the scalar forms of
//! `rune_runtime::generated::elementwise` for the others: `maximum_lhs`, `clamp_d`,
//! `where_cond_rhs`, ..), so the fused and the unfused code compute the same numbers up to the
//! order of additions and, in forward mode, of the products of the chain rule. A comparison's value is a `bool`; `where_cond` reads it, or `fused_flag`
//! of a mask input.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::Ident;

use super::super::rt;
use super::super::tokens::{detached, gather_closure_lets, inline_single_reads};
use crate::ir::{FusedArg, FusedNode};
use crate::names::hidden;
use crate::ops::{Eval, Form, OpSpec, Partial, Read};

/// `rune_ad::__private` inside a region's fn item, which imports it under this name.
fn short_rt() -> Ident {
    hidden("rt")
}
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

/// The region's code, shared by its two closures (value; value and cotangents).
pub(super) struct Code<'a> {
    pub(super) inputs: usize,
    pub(super) literals: &'a [TokenStream],
    pub(super) nodes: &'a [FusedNode],
}

impl Code<'_> {
    /// `"mul 0 1;exp 2"`: each op's name and the values it reads, for shape errors
    /// (`rune_runtime::fused::FusedOps`).
    pub(super) fn ops_table(&self) -> TokenStream {
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
    pub(super) fn is_mask(&self, i: usize) -> bool {
        self.nodes
            .iter()
            .any(|n| n.op.name == "where_cond" && n.args[0] == FusedArg::Input(i))
    }

    fn params(&self) -> TokenStream {
        let xs = (0..self.inputs).map(x);
        quote!([#(#xs),*])
    }

    /// The fn item `name` whose closure holds the region's scalar code `body`, generic over the
    /// element type, for the runtime's loop to call: its inputs, its literals, the kernels, then
    /// `extra` (an element's cotangent: a pattern and its type), returning `ret` (written with
    /// the element type `__RuneE`). The call passes `name()`.
    ///
    /// The closure is made inside a fn item of its own, not where the call is: rustc keeps each
    /// closure's trait obligations pending until the end of the type check of the function the
    /// closure is written in, and goes over the pending ones at every step, so a function of n
    /// closures took time quadratic in n to check (2,000 regions: 46 s against 0.36 s without
    /// the attribute). Made in `name`, it is checked with `name`, and the caller sees an opaque
    /// `impl Fn + Sync`. It stays a closure, not the fn item itself: the loop calls a fn item
    /// through its `Fn` shim, which LLVM did not inline into the vectorised loop (a logistic
    /// regression's gradient took twice as long). The fn item is an associated function beside
    /// the entry points (`super::RegionItems`), so that every pass that runs the same code
    /// calls one item, which rustc checks once. Each call passes its own `__RUNE_CALL`, which
    /// the code does not read: each call's closure is then a type of its own, and so is the
    /// runtime's loop it instantiates. Two calls sharing one loop, LLVM inlined it into
    /// neither, and a small model's RK4 loop took 17% longer.
    pub(super) fn region_item(
        &self,
        name: &str,
        extra: Option<(TokenStream, TokenStream)>,
        ret: TokenStream,
        body: TokenStream,
    ) -> TokenStream {
        let rt = rt();
        let name = format_ident!("{}", name);
        let alias = short_rt();
        let (params, n, l) = (self.params(), self.inputs, self.literals.len());
        let (extra_param, extra_type) = match extra {
            Some((pattern, ty)) => (quote!(, #pattern), quote!(, #ty)),
            None => (quote!(), quote!()),
        };
        quote! {
            #[doc(hidden)]
            #[inline(always)]
            #[allow(unused, clippy::all, clippy::pedantic, clippy::nursery)]
            fn #name<__RuneE: #rt::Element, const __RUNE_CALL: usize>() -> impl ::core::ops::Fn(
                [__RuneE; #n],
                &[__RuneE; #l],
                &#rt::vmath::Kernels
                #extra_type
            ) -> #ret + ::core::marker::Sync {
                use #rt as #alias;
                #[inline(always)]
                |#params, __rune_lits, __rune_k #extra_param| { #body }
            }
        }
    }

    /// The fn item `name` of the region's value alone, as text ([`detached`]).
    pub(super) fn value_item(&self, name: &str) -> String {
        detached(|| self.region_item(name, None, quote!(__RuneE), self.value_body()))
    }

    /// The fn item `name` of the region's value and the cotangents of the inputs `targets` for
    /// an element cotangent `__rune_ge`, `(value, [cotangents])`, as text ([`detached`]); with
    /// each target's slot in the array (see [`Self::adjoint_lets`]).
    ///
    /// Every derivative of the region runs this one item: the backward pass for the cotangents,
    /// a reduced region's forward pass for its partial derivatives (a cotangent of one), and
    /// forward mode for the tangent, the partials weighted by the inputs' tangents
    /// (`rune_runtime::fused::fused_tangent_of`).
    pub(super) fn partials_item(&self, name: &str, targets: &[usize]) -> (String, Vec<usize>) {
        let mut slots = Vec::new();
        let text = detached(|| {
            let (lets, outs, s) = self.adjoint_lets(targets);
            let k = slot_count(&s);
            slots = s;
            let (lits, mut values) = (self.literal_lets(), self.value_lets());
            values.extend(lets);
            let root = self.root();
            self.region_item(
                name,
                Some((quote!(__rune_ge), quote!(__RuneE))),
                quote!((__RuneE, [__RuneE; #k])),
                body(lits, values, quote!((#root, #outs))),
            )
        });
        (text, slots)
    }

    /// The literals as `f64`s, `[1.5f64, ..]`: the runtime converts them to the element type
    /// once a call and hands the region's closure `__rune_lits`.
    pub(super) fn literal_array(&self) -> TokenStream {
        let lits = self.literals;
        quote!([#(#lits),*])
    }

    /// `let [__rune_l0, ..] = *__rune_lits;`.
    fn literal_lets(&self) -> TokenStream {
        if self.literals.is_empty() {
            return quote!();
        }
        let names = (0..self.literals.len()).map(literal);
        quote!(let [#(#names),*] = *__rune_lits;)
    }

    /// `let __rune_nJ = ..;` for every op, as names and initializers.
    fn value_lets(&self) -> Vec<(Ident, TokenStream)> {
        let rt = short_rt();
        let lets = self.nodes.iter().enumerate().map(|(j, n)| {
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
        let rt = short_rt();
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
        let rt = short_rt();
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
        let rt = short_rt();
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

    /// The body of the value's closure.
    pub(super) fn value_body(&self) -> TokenStream {
        let (lits, lets, root) = (self.literal_lets(), self.value_lets(), self.root());
        body(lits, lets, quote!(#root))
    }

    /// The adjoint's `let`s, the array of the cotangents of `targets`, and each target's slot
    /// in it.
    #[allow(clippy::type_complexity)]
    fn adjoint_lets(
        &self,
        targets: &[usize],
    ) -> (Vec<(Ident, TokenStream)>, TokenStream, Vec<usize>) {
        let rt = short_rt();
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

/// The length of the cotangent array whose positions `slots` are (targets may share one).
fn slot_count(slots: &[usize]) -> usize {
    slots.iter().max().map_or(0, |k| k + 1)
}

/// A region's body: `prefix`, then `lets` (each read once written into its reader), then `tail`.
fn body(prefix: TokenStream, lets: Vec<(Ident, TokenStream)>, tail: TokenStream) -> TokenStream {
    gather_closure_lets(inline_single_reads(prefix, lets, tail))
}
