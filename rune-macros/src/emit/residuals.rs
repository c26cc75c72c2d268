//! What the forward pass saves for the backward pass: which residuals each statement saves, how
//! they are computed, and the stacks that hold them inside branches and loops.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::Ident;

use super::rule::Hoists;
use super::{list_refs, rt, Emitter};
use crate::ir::{path_consts, walk};
use crate::ir::{CallArg, Const, Operand, Stmt, Val};
use crate::names::{
    arm_stack_ident, config_ident, const_ident, partials_ident, pullback_ident,
    reached_stack_ident, residual_ident, shape_ident, sizes_ident, trips_stack_ident, val_ident,
    witness_ident,
};

/// Something the backward pass reads, saved by the forward pass right after the statement that
/// produces it: captured by the pullback at the top level, pushed on a stack inside a branch or
/// loop (and popped at the start of the same region's replay).
#[derive(Clone, Copy)]
pub(super) enum Saved {
    Value(Val),
    Shape(Val),
    ConstResidual(Const),
    Config(Const),
    Sizes(Val),
    Witness(Val),
    Pullback(Val),
    /// The input cotangents of a reduced fused region, for a cotangent of one on its result.
    Partials(Val),
}

impl Saved {
    /// The local the backward pass reads it from.
    pub(super) fn ident(&self) -> Ident {
        match self {
            Saved::Value(v) => val_ident(*v),
            Saved::Shape(v) => shape_ident(*v),
            Saved::ConstResidual(c) => residual_ident(*c),
            Saved::Config(c) => config_ident(*c),
            Saved::Sizes(v) => sizes_ident(*v),
            Saved::Witness(v) => witness_ident(*v),
            Saved::Pullback(v) => pullback_ident(*v),
            Saved::Partials(v) => partials_ident(*v),
        }
    }

    /// The stack it lives on inside regions.
    pub(super) fn stack(&self) -> Ident {
        format_ident!("{}_stack", self.ident())
    }
}

impl Emitter<'_> {
    /// What `stmt` saves for the backward pass.
    pub(super) fn saved_by(&self, stmt: &Stmt) -> Vec<Saved> {
        let a = self.analysis;
        let mut out = Vec::new();
        let value = |v: Val, out: &mut Vec<Saved>| {
            if a.keep_value.contains(&v) {
                out.push(Saved::Value(v));
            }
            if a.keep_shape.contains(&v) {
                out.push(Saved::Shape(v));
            }
        };
        match stmt {
            // A constant defined outside every branch and loop is saved where it is defined.
            Stmt::Hoist { id, .. } if a.top_consts.contains(id) => {
                if a.keep_const.contains(id) {
                    out.push(Saved::ConstResidual(*id));
                }
                if a.keep_config.contains(id) {
                    out.push(Saved::Config(*id));
                }
            }
            Stmt::Param { out: v, .. } | Stmt::SlotRead { out: v, .. } => value(*v, &mut out),
            Stmt::Leaf { out: v, path, .. } => {
                value(*v, &mut out);
                if self.useful(*v) {
                    out.extend(path_consts(path).map(Saved::ConstResidual));
                }
            }
            Stmt::Op {
                out: v,
                inputs,
                config,
                ..
            } => {
                value(*v, &mut out);
                for input in inputs {
                    if let Operand::Const(c) = input {
                        if a.keep_const.contains(c) {
                            out.push(Saved::ConstResidual(*c));
                        }
                    }
                }
                for c in config {
                    if a.keep_config.contains(c) {
                        out.push(Saved::Config(*c));
                    }
                }
                if a.keep_sizes.contains(v) {
                    out.push(Saved::Sizes(*v));
                }
                if a.keep_witness.contains(v) {
                    out.push(Saved::Witness(*v));
                }
            }
            Stmt::Fused {
                out: v,
                inputs,
                reduce,
                axes,
                ..
            } => {
                value(*v, &mut out);
                if reduce.is_some() && axes.is_none() && self.useful(*v) {
                    out.push(Saved::Partials(*v));
                }
                for c in axes.iter().flat_map(|r| [r.axes, r.keepdims]) {
                    if a.keep_config.contains(&c) {
                        out.push(Saved::Config(c));
                    }
                }
                for input in inputs {
                    if let Operand::Const(c) = input {
                        if a.keep_const.contains(c) {
                            out.push(Saved::ConstResidual(*c));
                        }
                    }
                }
            }
            Stmt::ListPush { list, index, .. } if self.analysis.list_useful(*list) => {
                out.push(Saved::ConstResidual(*index));
            }
            Stmt::ListGet { out: v, index, .. } => {
                value(*v, &mut out);
                if self.useful(*v) {
                    out.push(Saved::ConstResidual(*index));
                }
            }
            Stmt::ListOp {
                out: v,
                config,
                count,
                ..
            } => {
                value(*v, &mut out);
                if self.useful(*v) {
                    out.push(Saved::ConstResidual(*count));
                    out.extend(config.iter().map(|c| Saved::Config(*c)));
                }
                if a.keep_sizes.contains(v) {
                    out.push(Saved::Sizes(*v));
                }
            }
            Stmt::Call { outs, args, .. } => {
                if outs.iter().any(|o| self.useful(*o)) {
                    out.push(Saved::Pullback(outs[0]));
                    for arg in args {
                        if let CallArg::Struct { path, .. } = arg {
                            out.extend(path_consts(path).map(Saved::ConstResidual));
                        }
                    }
                }
                for o in outs {
                    value(*o, &mut out);
                }
            }
            _ => {}
        }
        if !matches!(stmt, Stmt::Hoist { .. }) {
            out.retain(|saved| match saved {
                Saved::ConstResidual(c) | Saved::Config(c) => !a.top_consts.contains(c),
                _ => true,
            });
        }
        out
    }

    /// The expression computing a saved item in the forward pass.
    pub(super) fn save_expr(&self, saved: &Saved, stmt: &Stmt, hoists: &Hoists) -> TokenStream {
        let rt = rt();
        match saved {
            Saved::Value(v) => self.carrier().value(*v),
            // Of a call's result kept whole (bound to `_`, or read as a structure), what its
            // cotangent is made from: a tensor's shape, anything else (a structure) whole.
            Saved::Shape(v) if self.body.kept_whole(*v) => {
                let v = crate::names::val_ident(*v);
                quote!({
                    use #rt::{SaveDiscarded as _, SaveDiscardedTensor as _};
                    (&#rt::DiscardedResult(&#v)).save()
                })
            }
            Saved::Shape(v) => self.carrier().shape(*v),
            Saved::ConstResidual(c) | Saved::Config(c) => {
                let c = const_ident(*c);
                quote!(#rt::Residual::residual(&#c))
            }
            Saved::Sizes(_) => match stmt {
                Stmt::Op { inputs, config, .. } => {
                    let list: Vec<TokenStream> =
                        inputs.iter().map(|o| hoists.forward(*o)).collect();
                    let axis = const_ident(config[0]);
                    quote!(#rt::rules::concat_sizes(&[#(#list),*], #axis))
                }
                Stmt::ListOp { list, config, .. } => {
                    let refs = list_refs(&self.body.lists[list.0]);
                    let axis = const_ident(config[0]);
                    quote!(#rt::rules::concat_sizes(#refs, #axis))
                }
                _ => unreachable!("sizes are saved by concat"),
            },
            Saved::Witness(_) => {
                let Stmt::Op { inputs, .. } = stmt else {
                    unreachable!("witnesses are saved by cast")
                };
                let input = inputs[0].val().map(val_ident).expect("cast of a value");
                quote!(#rt::witness(&#input))
            }
            Saved::Pullback(v) => pullback_ident(*v).into_token_stream(),
            Saved::Partials(v) => partials_ident(*v).into_token_stream(),
        }
    }

    /// For each stage, the values and shapes that an earlier stage saved and it reads, with the
    /// statement that saved them. A stage's replay in the backward pass sees only what it
    /// popped itself, so the forward pass saves these again when the stage starts.
    pub(super) fn crossings<'s>(&self, stages: &'s [Vec<Stmt>]) -> Vec<Vec<(Saved, &'s Stmt)>> {
        let mut earlier: Vec<(Val, Saved, &Stmt)> = Vec::new();
        let mut out = Vec::with_capacity(stages.len());
        for stage in stages {
            let mut read = std::collections::HashSet::new();
            walk(stage, &mut |s| {
                s.read_vals(&mut |v| {
                    read.insert(v);
                })
            });
            out.push(
                earlier
                    .iter()
                    .filter(|(v, _, _)| read.contains(v))
                    .map(|&(_, saved, def)| (saved, def))
                    .collect(),
            );
            for stmt in stage {
                for saved in self.saved_by(stmt) {
                    if let Saved::Value(v) | Saved::Shape(v) = saved {
                        earlier.push((v, saved, stmt));
                    }
                }
            }
        }
        out
    }

    /// Every saved item inside a branch or loop (each gets a stack).
    fn stacked(&self) -> Vec<Saved> {
        let mut out = Vec::new();
        fn go(e: &Emitter, stmts: &[Stmt], depth: usize, out: &mut Vec<Saved>) {
            for s in stmts {
                if depth > 0 {
                    out.extend(e.saved_by(s));
                }
                match s {
                    Stmt::Branch { arms, .. } => {
                        for arm in arms {
                            go(e, arm, depth + 1, out);
                        }
                    }
                    Stmt::Stages { stages, .. } => {
                        for stage in stages {
                            go(e, stage, depth + 1, out);
                        }
                    }
                    Stmt::Loop { body, .. } => go(e, body, depth + 1, out),
                    _ => {}
                }
            }
        }
        go(self, &self.body.stmts, 0, &mut out);
        out
    }

    /// Stacks for everything saved inside regions, trip counts and arms taken.
    pub(super) fn stack_decls(&self) -> TokenStream {
        let mut names: Vec<Ident> = self.stacked().iter().map(Saved::stack).collect();
        names.sort_by_key(|i| i.to_string());
        names.dedup_by_key(|i| i.to_string());
        let mut decls: Vec<TokenStream> = names
            .iter()
            .map(|stack| quote!(let mut #stack = ::std::vec::Vec::new();))
            .collect();
        walk(&self.body.stmts, &mut |s| match s {
            Stmt::Branch { id, .. } => {
                let stack = arm_stack_ident(*id);
                decls
                    .push(quote!(let mut #stack: ::std::vec::Vec<usize> = ::std::vec::Vec::new();));
            }
            Stmt::Stages { id, .. } => {
                let stack = reached_stack_ident(*id);
                decls
                    .push(quote!(let mut #stack: ::std::vec::Vec<usize> = ::std::vec::Vec::new();));
            }
            Stmt::Loop { id, .. } => {
                let stack = trips_stack_ident(*id);
                decls
                    .push(quote!(let mut #stack: ::std::vec::Vec<usize> = ::std::vec::Vec::new();));
            }
            _ => {}
        });
        quote!(#(#decls)*)
    }
}
