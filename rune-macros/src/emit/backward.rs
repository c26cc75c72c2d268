//! The backward walk: each statement reversed, replaying branches and loops from what the
//! forward pass saved, and the body of `fwd` that runs the forward pass and returns the
//! pullback.

use proc_macro2::TokenStream;
use quote::quote;

use super::calls::cotangent_of;
use super::rule::{rule_call, rule_call_into, Hoists, OpCtx, Pass};
use super::tokens::{declare_before_use, gather_lets, relocate};
use super::{rt, struct_place, Emitter, Mode};
use crate::ir::{CallArg, List, Operand, OutputElem, Slot, Stmt, Val};
use crate::names::{
    adjoint_ident, arm_ident, arm_stack_ident, config_ident, list_adjoint_ident, list_len_ident,
    pullback_ident, reached_ident, reached_stack_ident, residual_ident, shape_ident, sizes_ident,
    slot_adjoint_ident, struct_grad_ident, template_ident, trips_stack_ident,
};
use crate::ops::{self, Param};

impl Emitter<'_> {
    /// The place of the gradient of structure `root` at `path`, in the backward pass: of a
    /// call's result read as a structure, inside its gradient started from the result (saved as
    /// its shape) where the first cotangent arrives.
    fn struct_grad_place(&self, root: usize, path: &[crate::ir::PathSeg]) -> TokenStream {
        let g = struct_grad_ident(root);
        match self.body.call_roots.get(&root) {
            Some(out) => {
                let rt = rt();
                let s = shape_ident(*out);
                let base = quote!((*#rt::call_root_grad(&mut #g, &#s)));
                crate::lower::path_place(base, path, crate::names::residual_ident, true)
            }
            None => struct_place(&g, path, true),
        }
    }

    /// The backward replay of one region: pops what it saved, then each statement reversed.
    fn backward_block(&self, stmts: &[Stmt], depth: usize) -> TokenStream {
        let mut out = Vec::new();
        if depth > 0 {
            for stmt in stmts {
                for saved in self.saved_by(stmt) {
                    let ident = saved.ident();
                    let stack = saved.stack();
                    out.push(quote!(let #ident = ::core::option::Option::unwrap(#stack.pop());));
                }
            }
        }
        for stmt in stmts.iter().rev() {
            out.push(self.backward_stmt(stmt, depth));
        }
        quote!(#(#out)*)
    }

    fn backward_stmt(&self, stmt: &Stmt, depth: usize) -> TokenStream {
        let rt = rt();
        match stmt {
            Stmt::Op {
                out,
                op,
                inputs,
                config,
                turbofish,
                span,
                ..
            } if self.useful(*out) => {
                let adj = adjoint_ident(*out);
                let list = op.params.contains(&Param::TensorList);
                let mut contributions = Vec::new();
                for (i, input) in inputs.iter().enumerate() {
                    let Operand::Val(v) = input else { continue };
                    let ctx = OpCtx {
                        out: *out,
                        op,
                        inputs,
                        config,
                        turbofish,
                        k: i,
                    };
                    let rules = ops::rules(op);
                    let rule = if list { &rules.vjp[0] } else { &rules.vjp[i] };
                    let target = adjoint_ident(*v);
                    let useful = |v| self.useful(v);
                    let contribution = match rules.vjp_into {
                        Some(into) if i == 0 => {
                            let target = quote!(&mut #target);
                            let call = rule_call_into(into, rule, &ctx, target, &useful);
                            quote!(#call;)
                        }
                        _ => {
                            let call = rule_call(rule, &ctx, Pass::Backward, &useful);
                            quote!(#rt::accumulate(&mut #target, #call);)
                        }
                    };
                    contributions.push(relocate(contribution, *span));
                }
                quote! {
                    if let ::core::option::Option::Some(__rune_g) = #adj.take() {
                        #(#contributions)*
                    }
                }
            }
            Stmt::Fused { out, .. } if self.useful(*out) => self.fused_backward(stmt),
            Stmt::Call {
                outs,
                args,
                span,
                shape,
                ..
            } if outs.iter().any(|o| self.useful(*o)) => {
                let pb = pullback_ident(outs[0]);
                let cts: Vec<TokenStream> = outs
                    .iter()
                    .map(|o| {
                        let adj = adjoint_ident(*o);
                        let s = shape_ident(*o);
                        if let Some(root) = self.body.call_root_of(*o) {
                            let g = struct_grad_ident(root);
                            return quote!(#rt::call_root_cotangent(#g.take(), &#s));
                        }
                        if self.body.discarded.contains(o) {
                            return quote!(#rt::discarded_cotangent(&#s));
                        }
                        let adjoint = if self.useful(*o) {
                            quote!(#adj.take())
                        } else {
                            quote!(::core::option::Option::None)
                        };
                        self.carrier().callee_cotangent(adjoint, &s)
                    })
                    .collect();
                let ct = cotangent_of(shape, &mut cts.into_iter());
                let slots: Vec<TokenStream> = args
                    .iter()
                    .enumerate()
                    .filter_map(|(i, arg)| match arg {
                        CallArg::Val { val, .. } if self.useful(*val) => {
                            let target = adjoint_ident(*val);
                            let index = syn::Index::from(i);
                            let accumulate = self.glue("accumulate_slot");
                            Some(quote!(#accumulate(&mut #target, __rune_slots.#index);))
                        }
                        CallArg::Array { list, .. } if self.analysis.list_useful(*list) => {
                            let al = list_adjoint_ident(*list);
                            let index = syn::Index::from(i);
                            let accumulate = self.glue("accumulate_array_slot");
                            Some(quote!(#accumulate(&mut #al, __rune_slots.#index);))
                        }
                        CallArg::Struct { root, path, .. } => {
                            let p = self.struct_grad_place(*root, path);
                            let index = syn::Index::from(i);
                            Some(quote!(#rt::accumulate_struct_slot(&mut #p, __rune_slots.#index);))
                        }
                        _ => None,
                    })
                    .collect();
                relocate(
                    quote! {
                        let __rune_slots = #pb(#ct);
                        #(#slots)*
                    },
                    *span,
                )
            }
            Stmt::ListNew { list, .. } if self.analysis.list_useful(*list) => {
                // Every element's adjoint has been handed on; the list may be made again by an
                // earlier iteration.
                let al = list_adjoint_ident(*list);
                quote!(#al.clear();)
            }
            Stmt::ListPush {
                list,
                val: Operand::Val(v),
                index,
                ..
            } if self.analysis.list_useful(*list) && self.useful(*v) => {
                let al = list_adjoint_ident(*list);
                let (a, i) = (adjoint_ident(*v), residual_ident(*index));
                quote!(#rt::accumulate_option(&mut #a, #rt::list_take(&mut #al, #i));)
            }
            // An element written over by a value that carries no gradient: what reached it
            // reaches nothing written there before.
            Stmt::ListPush {
                list,
                index,
                replace: true,
                ..
            } if self.analysis.list_useful(*list) => {
                let (al, i) = (list_adjoint_ident(*list), residual_ident(*index));
                quote!(let _ = #rt::list_take(&mut #al, #i);)
            }
            Stmt::ListGet { out, list, index } if self.useful(*out) => {
                let al = list_adjoint_ident(*list);
                let (a, i) = (adjoint_ident(*out), residual_ident(*index));
                let accumulate = self.glue("accumulate_option");
                quote!(#accumulate(#rt::list_slot(&mut #al, #i), #a.take());)
            }
            Stmt::ListOp {
                out,
                op,
                list,
                config,
                count,
                span,
            } if self.useful(*out) => {
                let al = list_adjoint_ident(*list);
                let a = adjoint_ident(*out);
                let n = residual_ident(*count);
                let axis = config_ident(config[0]);
                let contribution = if op.name == "concat" {
                    let z = sizes_ident(*out);
                    quote!(#rt::rules::concat_vjp(&__rune_g, __rune_k, &#z, #axis))
                } else {
                    quote!(#rt::rules::stack_vjp(&__rune_g, __rune_k, #axis))
                };
                relocate(
                    quote! {
                        if let ::core::option::Option::Some(__rune_g) = #a.take() {
                            for __rune_k in 0..#n {
                                #rt::accumulate(#rt::list_slot(&mut #al, __rune_k), #contribution);
                            }
                        }
                    },
                    *span,
                )
            }
            Stmt::SlotRead { out, slot } if self.useful(*out) => {
                let am = slot_adjoint_ident(*slot);
                let a = adjoint_ident(*out);
                let accumulate = self.glue("accumulate_option");
                quote!(#accumulate(&mut #am, #a.take());)
            }
            Stmt::Leaf {
                out, root, path, ..
            } if self.useful(*out) => {
                let a = adjoint_ident(*out);
                let p = self.struct_grad_place(*root, path);
                quote! {
                    if let ::core::option::Option::Some(__rune_g) = #a.take() {
                        #rt::accumulate_leaf(&mut #p, __rune_g);
                    }
                }
            }
            Stmt::SlotWrite { slot, val } | Stmt::SlotInit { slot, init: val }
                if self.analysis.slot_useful(*slot) =>
            {
                let am = slot_adjoint_ident(*slot);
                match val {
                    Operand::Val(v) if self.useful(*v) => {
                        let a = adjoint_ident(*v);
                        let accumulate = self.glue("accumulate_option");
                        quote!(#accumulate(&mut #a, #am.take());)
                    }
                    _ => quote!(#am = ::core::option::Option::None;),
                }
            }
            Stmt::Branch { id, arms, .. } => {
                // One flat `if` an arm with a backward pass, no deeper than the user's branch.
                let stack = arm_stack_ident(*id);
                let taken = arm_ident(*id);
                let replays: Vec<TokenStream> = arms
                    .iter()
                    .enumerate()
                    .map(|(i, arm)| (i, self.backward_block(arm, depth + 1)))
                    .filter(|(_, b)| !b.is_empty())
                    .map(|(i, b)| quote!(if #taken == #i { #b }))
                    .collect();
                quote! {
                    let #taken = ::core::option::Option::unwrap(#stack.pop());
                    #(#replays)*
                }
            }
            Stmt::Stages { id, stages, .. } => {
                let reached = reached_ident(*id);
                let stack = reached_stack_ident(*id);
                let crossings = self.crossings(stages);
                let replays = stages.iter().enumerate().rev().map(|(k, stage)| {
                    let again = crossings[k].iter().map(|(saved, _)| {
                        let ident = saved.ident();
                        let stack = saved.stack();
                        quote!(let #ident = ::core::option::Option::unwrap(#stack.pop());)
                    });
                    let b = self.backward_block(stage, depth + 1);
                    quote!(if #reached > #k { #(#again)* #b })
                });
                quote! {
                    let #reached = ::core::option::Option::unwrap(#stack.pop());
                    #(#replays)*
                }
            }
            Stmt::Loop { id, body, .. } => {
                let stack = trips_stack_ident(*id);
                let b = self.backward_block(body, depth + 1);
                quote! {
                    for _ in 0..::core::option::Option::unwrap(#stack.pop()) {
                        #b
                    }
                }
            }
            _ => quote!(),
        }
    }

    /// The body of `f_fwd`: forward statements with residuals saved, then the pullback.
    pub(super) fn reverse_body(&self) -> TokenStream {
        let rt = rt();
        let hoists = Hoists::new(self.body);
        let stacks = self.stack_decls();
        let optionals = self.optional_decls(false);
        let fwd = self.forward_block(&self.body.stmts, 0, Mode::Reverse, &hoists);

        // Adjoints and slot adjoints are declared where first named (see `declare_before_use`).
        let mut adjoints = Vec::new();
        for v in (0..self.body.values).map(Val).filter(|v| self.useful(*v)) {
            let adj = adjoint_ident(v);
            adjoints.push((
                adj.clone(),
                quote!(let mut #adj = ::core::option::Option::None;),
            ));
        }
        let mut bwd = Vec::new();
        for root in 0..self.body.roots.len() {
            let g = struct_grad_ident(root);
            let tpl = template_ident(root);
            bwd.push(if self.body.call_roots.contains_key(&root) {
                // Started from the call's result where a leaf's cotangent first arrives, and
                // taken by the call's pullback (once per pass of a loop).
                quote!(let mut #g = ::core::option::Option::None;)
            } else {
                quote!(let mut #g = #rt::struct_grad_start(&#tpl);)
            });
        }
        for l in (0..self.body.lists.len()).map(List) {
            if self.analysis.list_useful(l) {
                let al = list_adjoint_ident(l);
                let empty = match self.array_param_of(l) {
                    Some(p) => {
                        let ty = crate::parse::Signature::grad_type(p);
                        let len = list_len_ident(l);
                        quote!(<#ty as #rt::NumberArray>::adjoints(#len))
                    }
                    None => quote!(::std::vec::Vec::new()),
                };
                bwd.push(quote!(let mut #al = #empty;));
            }
        }
        for s in (0..self.body.slots).map(Slot) {
            if self.analysis.slot_useful(s) {
                let am = slot_adjoint_ident(s);
                adjoints.push((
                    am.clone(),
                    quote!(let mut #am = ::core::option::Option::None;),
                ));
            }
        }
        for (i, out) in self.body.outputs.iter().enumerate() {
            if let OutputElem::Val(v) = out {
                let adj = adjoint_ident(*v);
                let ct = if self.sig.outputs() == 1 {
                    quote!(__rune_cotangent)
                } else {
                    let index = syn::Index::from(i);
                    quote!(__rune_cotangent.#index)
                };
                bwd.push(self.carrier().seed(&adj, ct));
            }
        }
        bwd.extend(
            self.body
                .stmts
                .iter()
                .rev()
                .map(|stmt| self.backward_stmt(stmt, 0)),
        );
        let slots: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .zip(self.param_vals())
            .map(|(p, v)| match (p.active.as_ref(), v) {
                (Some(a), _) if a.structure => {
                    let root = self
                        .body
                        .roots
                        .iter()
                        .position(|r| *r == p.ident)
                        .expect("a structure root");
                    let g = struct_grad_ident(root);
                    let tpl = template_ident(root);
                    quote!(#rt::struct_grad_finish(#g, &#tpl))
                }
                (Some(a), _) if a.array => {
                    let list = self.array_list(&p.ident);
                    let al = list_adjoint_ident(list);
                    // The array type, named: the pullback does not capture the parameter.
                    let ty = crate::parse::Signature::grad_type(p);
                    let len = list_len_ident(list);
                    let adjoints = if self.analysis.list_useful(list) {
                        quote!(#al)
                    } else {
                        quote!(<#ty as #rt::NumberArray>::adjoints(#len))
                    };
                    let grad = self.glue("array_grad");
                    quote!(#grad::<#ty>(#adjoints, #len))
                }
                (Some(a), Some(v)) => {
                    let adj = adjoint_ident(v);
                    let s = shape_ident(v);
                    let adjoint = if self.useful(v) {
                        quote!(#adj)
                    } else {
                        quote!(::core::option::Option::None)
                    };
                    let or_zeros = self.glue("adjoint_or_zeros");
                    let grad = quote!(#or_zeros(#adjoint, &#s));
                    self.carrier().grad(grad, a.scalar)
                }
                _ => quote!(#rt::NoGrad),
            })
            .collect();

        let value = self.output_value();
        let cot_ty = self.sig.cotangent_type();
        bwd.push(quote!((#(#slots,)*)));
        let bwd = declare_before_use(adjoints, bwd);
        let bwd = gather_lets(quote!(#(#bwd)*));
        let result = self.api().ok(quote! {
            (__rune_value, move |__rune_cotangent: #cot_ty| {
                #bwd
            })
        });
        gather_lets(quote! {
            #stacks
            #optionals
            #fwd
            let __rune_value = #value;
            #result
        })
    }
}
