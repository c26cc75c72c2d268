//! The forward walk: each statement's primal code, for both passes that run it (`fwd`, saving
//! what the backward pass reads, and `tangent`, each op followed by its tangent rule).

use proc_macro2::Span;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::Ident;

use super::calls::bind_outs;
use super::residuals::Saved;
use super::rule::{forward_op, Hoists, OpCtx};
use super::tokens::{relocate, relocate_call};
use super::{list_refs, rt, struct_place, Emitter, Mode};
use crate::ir::{
    BranchHead, CallArg, List, LoopHead, Operand, OutShape, OutputAux, OutputElem, Stmt, Use, Val,
};
use crate::lower::path_tokens;
use crate::names::{
    arm_stack_ident, const_ident, hidden, list_len_ident, list_tangent_ident, pullback_ident,
    reached_ident, reached_stack_ident, slot_ident, slot_tangent_ident, stages_label,
    struct_tangent_ident, tangent_ident, template_ident, trips_ident, trips_stack_ident, val_ident,
};
use crate::parse::{Entry, Returns};

impl Emitter<'_> {
    /// The primal statements of one region, in `mode`.
    pub(super) fn forward_block(
        &self,
        stmts: &[Stmt],
        depth: usize,
        mode: Mode,
        hoists: &Hoists,
    ) -> TokenStream {
        let rt = rt();
        let mut out = Vec::new();
        for stmt in stmts {
            out.push(self.forward_stmt(stmt, depth, mode, hoists));
            if mode == Mode::Reverse {
                for saved in self.saved_by(stmt) {
                    let value = self.save_expr(&saved, stmt, hoists);
                    let ident = saved.ident();
                    let stack = saved.stack();
                    match (depth, &saved) {
                        (0, Saved::Value(_) | Saved::Pullback(_) | Saved::Partials(_)) => {}
                        (0, _) => out.push(quote!(let #ident = #value;)),
                        _ => out.push(quote!(#stack.push(#value);)),
                    }
                }
            }
            if mode == Mode::Tangent {
                out.push(self.tangent_of(stmt));
            }
        }
        let _ = rt;
        quote!(#(#out)*)
    }

    fn forward_stmt(&self, stmt: &Stmt, depth: usize, mode: Mode, hoists: &Hoists) -> TokenStream {
        let rt = rt();
        match stmt {
            Stmt::Verbatim(t) => t.tokens().clone(),
            Stmt::Hoist {
                id,
                expr,
                usage: Use::NumberOperand,
                ..
            } if self.carrier() == super::Carrier::Tensors => {
                let c = const_ident(*id);
                quote!(let #c = #rt::number_tensor(#expr);)
            }
            Stmt::Hoist { id, expr, ty, .. } => {
                let c = const_ident(*id);
                // The annotation comes from the op table; a mismatch is the user's argument's.
                let at = expr
                    .tokens()
                    .clone()
                    .into_iter()
                    .next()
                    .map_or_else(Span::call_site, |t| t.span());
                let ty = ty.as_ref().map(|t| relocate(quote!(: #t), at));
                quote!(let #c #ty = #expr;)
            }
            Stmt::Param {
                out,
                ident,
                borrowed,
                scalar,
            } => {
                let v = val_ident(*out);
                if *scalar {
                    let value = if *borrowed {
                        quote!(*#ident)
                    } else {
                        quote!(#ident)
                    };
                    let value = self.carrier().number_param(value);
                    quote!(let #v = #value;)
                } else if *borrowed {
                    quote!(let #v = ::core::clone::Clone::clone(#ident);)
                } else {
                    quote!(let #v = #ident;)
                }
            }
            Stmt::ArrayParam {
                list,
                ident,
                borrowed,
            } => {
                let l = &self.body.lists[list.0];
                let reference = if *borrowed {
                    quote!(#ident)
                } else {
                    quote!(&#ident)
                };
                let enter = self.glue("array_param");
                let len = list_len_ident(*list);
                let as_vec = self.entry_conversion(ident);
                quote! {
                    #as_vec
                    let #l = #enter(#reference);
                    let #len = #rt::array_len(#reference);
                }
            }
            Stmt::Op {
                out,
                op,
                inputs,
                config,
                turbofish,
                span,
                fallible,
                ..
            } => {
                let ctx = OpCtx {
                    out: *out,
                    op,
                    inputs,
                    config,
                    turbofish,
                    k: 0,
                };
                let v = val_ident(*out);
                let e = forward_op(&ctx, hoists, *fallible);
                let question = fallible.then(|| quote!(?));
                relocate_call(quote!(let #v = #e #question;), *span)
            }
            Stmt::Fused { .. } => self.fused_forward(stmt, mode),
            Stmt::StructParam {
                root,
                ident,
                borrowed,
            } => {
                let reference = if *borrowed {
                    quote!(#ident)
                } else {
                    quote!(&#ident)
                };
                let as_vec = self.entry_conversion(ident);
                match mode {
                    Mode::Reverse => {
                        let tpl = template_ident(*root);
                        quote!(#as_vec let #tpl = #rt::template_of(#reference);)
                    }
                    Mode::Value => quote!(#as_vec),
                    Mode::Tangent => {
                        let slot = self.tangent_slot_of(ident);
                        let ts = struct_tangent_ident(*root);
                        quote!(#as_vec let #ts = #rt::StructTangentSlot::tangent_or_zeros(#slot, #reference);)
                    }
                }
            }
            Stmt::Leaf {
                out,
                root,
                path,
                span,
            } => {
                // Borrowed unless the backward pass keeps it (no copy of a whole `Vec` field
                // that is only looped over). `parameter_part` says what to write where it is a
                // `#[nodiff]` field that is not a tensor.
                let v = val_ident(*out);
                let p = path_tokens(&self.body.roots[*root], path);
                let part = if path.is_empty() {
                    quote!(&#p)
                } else {
                    relocate(quote!(#rt::parameter_part(&#p)), *span)
                };
                if self.analysis.keep_value.contains(out) {
                    quote!(let #v = ::core::clone::Clone::clone(#part);)
                } else {
                    quote!(let #v = #part;)
                }
            }
            Stmt::Call {
                outs,
                shape,
                callee,
                args,
                span,
                fallible,
            } => {
                let question = fallible.then(|| quote!(?));
                let idents: Vec<Ident> = outs.iter().map(|v| val_ident(*v)).collect();
                let bound = bind_outs(&idents, shape);
                let recursive = self.is_recursive(callee, args);
                match mode {
                    Mode::Value => {
                        // One result: the callee itself. Several: its forward pass, whose
                        // pullback is dropped, since the callee may return them as an array
                        // (`[f64; 3]`), which the passes carry as a tuple.
                        let (call, question) = match shape {
                            OutShape::One => (self.plain_call_expr(callee, args), question),
                            OutShape::Tuple(_) => {
                                let values = self.call_args(args);
                                let fwd =
                                    self.call_expr(callee, "fwd", args, values, shape, Mode::Value);
                                (quote!(#fwd #question .0), None)
                            }
                        };
                        let values: Vec<Ident> = self.read_outs(outs).map(val_ident).collect();
                        let values = self.carrier().call_results(&values);
                        relocate(quote!(let #bound = #call #question; #values), *span)
                    }
                    Mode::Reverse => {
                        let values = self.call_args(args);
                        let call = self.call_expr(callee, "fwd", args, values, shape, mode);
                        let pb = pullback_ident(outs[0]);
                        let call = if recursive {
                            // A pullback that holds its own type: boxed, behind a reference count
                            // so that it stays `Clone`.
                            let raw = hidden("pullback_raw");
                            let cot = self.sig.cotangent_type();
                            let slots = self.sig.slot_types();
                            quote! {
                                let (#bound, #raw) = #call #question;
                                let #pb: ::std::rc::Rc<dyn ::core::ops::Fn(#cot) -> (#(#slots,)*)> =
                                    ::std::rc::Rc::new(move |__rune_c: #cot| ::core::clone::Clone::clone(&#raw)(__rune_c));
                            }
                        } else {
                            quote!(let (#bound, #pb) = #call #question;)
                        };
                        let values: Vec<Ident> = self.read_outs(outs).map(val_ident).collect();
                        let values = self.carrier().call_results(&values);
                        relocate(quote!(#call #values), *span)
                    }
                    Mode::Tangent => {
                        let mut all = self.call_args(args);
                        for a in args {
                            all.push(match a {
                                CallArg::Val { val, .. } if self.useful(*val) => {
                                    let t = tangent_ident(*val);
                                    quote!(&#t)
                                }
                                CallArg::Struct { root, path, .. } => {
                                    let ts = self.struct_tangent_base(*root);
                                    let p = struct_place(&ts, path, false);
                                    quote!(&#p)
                                }
                                CallArg::Array { list, .. } if self.analysis.list_useful(*list) => {
                                    let tl = list_tangent_ident(*list);
                                    let tangent = self.glue("array_tangent_arg");
                                    quote!(&#tangent(&#tl))
                                }
                                _ => quote!(#rt::NoTangent),
                            });
                        }
                        let call = self.call_expr(callee, "tangent", args, all, shape, mode);
                        let tangents: Vec<Ident> = outs.iter().map(|v| tangent_ident(*v)).collect();
                        let tbound = bind_outs(&tangents, shape);
                        let read: Vec<Val> = self.read_outs(outs).collect();
                        let values: Vec<Ident> = read.iter().map(|v| val_ident(*v)).collect();
                        let read_tangents: Vec<Ident> =
                            read.iter().map(|v| tangent_ident(*v)).collect();
                        let (values, tangents) = (
                            self.carrier().call_results(&values),
                            self.carrier().call_results(&read_tangents),
                        );
                        relocate(
                            quote!(let (#bound, #tbound) = #call #question; #values #tangents),
                            *span,
                        )
                    }
                }
            }
            Stmt::SlotInit { slot, init } => {
                let m = slot_ident(*slot);
                let value = self.carrier().owned(*init);
                quote!(let mut #m = #value;)
            }
            Stmt::ListNew { ident, init, .. } => quote!(let mut #ident = #init;),
            Stmt::ListPush {
                list,
                val,
                index,
                replace,
            } => {
                let ident = &self.body.lists[list.0];
                let value = match val {
                    Operand::Val(_) => self.carrier().owned(*val),
                    Operand::Const(c) => const_ident(*c).into_token_stream(),
                };
                if *replace {
                    let i = const_ident(*index);
                    quote!(#ident[#i] = #value;)
                } else {
                    quote!(#ident.push(#value);)
                }
            }
            Stmt::ListGet { out, list, index } => {
                let ident = &self.body.lists[list.0];
                let (v, i) = (val_ident(*out), const_ident(*index));
                quote!(let #v = ::core::clone::Clone::clone(&#ident[#i]);)
            }
            Stmt::ListOp {
                out,
                op,
                list,
                config,
                span,
                ..
            } => {
                let refs = list_refs(&self.body.lists[list.0]);
                let name = format_ident!("{}", op.name);
                let v = val_ident(*out);
                let config = config.iter().map(|c| const_ident(*c));
                relocate_call(quote!(let #v = #rt::#name(#refs, #(#config),*);), *span)
            }
            Stmt::SlotRead { out, slot } => {
                let m = slot_ident(*slot);
                let v = val_ident(*out);
                if self.optional(*slot) {
                    quote!(let #v = ::core::clone::Clone::clone(::core::option::Option::as_ref(&#m).expect("rune-ad: a branch or return left no value"));)
                } else {
                    quote!(let #v = ::core::clone::Clone::clone(&#m);)
                }
            }
            Stmt::SlotWrite { slot, val } => {
                let m = slot_ident(*slot);
                let value = self.carrier().owned(*val);
                if self.optional(*slot) {
                    quote!(#m = ::core::option::Option::Some(#value);)
                } else {
                    quote!(#m = #value;)
                }
            }
            Stmt::Branch { id, head, arms } => {
                let bodies: Vec<TokenStream> = arms
                    .iter()
                    .map(|arm| self.forward_block(arm, depth + 1, mode, hoists))
                    .collect();
                // Each arm records itself as it ends, so the arms nest no deeper than the user's
                // branch (rustc's parser limits the depth).
                let stack = arm_stack_ident(*id);
                let indexed: Vec<TokenStream> = bodies
                    .iter()
                    .enumerate()
                    .map(|(i, b)| match mode {
                        Mode::Reverse => quote!({ #b #stack.push(#i); }),
                        Mode::Tangent | Mode::Value => quote!({ #b }),
                    })
                    .collect();
                match head {
                    BranchHead::If(cond) => {
                        let (a, b) = (&indexed[0], &indexed[1]);
                        quote!(if #cond #a else #b)
                    }
                    BranchHead::Match {
                        scrutinee,
                        patterns,
                    } => quote!(match #scrutinee { #(#patterns => #indexed)* }),
                }
            }
            Stmt::Stages { id, guard, stages } => {
                let label = stages_label(*id);
                let reached = reached_ident(*id);
                let crossings = match mode {
                    Mode::Reverse => self.crossings(stages),
                    Mode::Tangent | Mode::Value => Vec::new(),
                };
                let bodies = stages.iter().enumerate().map(|(k, stage)| {
                    let body = self.forward_block(stage, depth + 1, mode, hoists);
                    let count = (mode == Mode::Reverse).then(|| {
                        let n = k + 1;
                        let again = crossings[k].iter().map(|(saved, def)| {
                            let stack = saved.stack();
                            let value = self.save_expr(saved, def, hoists);
                            quote!(#stack.push(#value);)
                        });
                        quote!(#reached = #n; #(#again)*)
                    });
                    quote!(if !(#guard) { break #label; } #count #body)
                });
                match mode {
                    Mode::Reverse => {
                        let stack = reached_stack_ident(*id);
                        quote! {
                            let mut #reached = 0usize;
                            #label: { #(#bodies)* }
                            #stack.push(#reached);
                        }
                    }
                    Mode::Tangent | Mode::Value => quote!(#label: { #(#bodies)* }),
                }
            }
            Stmt::Loop { id, head, body } => {
                let inner = self.forward_block(body, depth + 1, mode, hoists);
                let trips = trips_ident(*id);
                let stack = trips_stack_ident(*id);
                let (count, push, tick) = match mode {
                    Mode::Reverse => (
                        quote!(let mut #trips = 0usize;),
                        quote!(#stack.push(#trips);),
                        quote!(#trips += 1;),
                    ),
                    Mode::Tangent | Mode::Value => (quote!(), quote!(), quote!()),
                };
                // The stacks the body pushes on once a trip are reserved for the trip count the
                // iterator gives, when its first trip starts.
                let mut stacks: Vec<Ident> = Vec::new();
                if mode == Mode::Reverse {
                    for saved in body.iter().flat_map(|s| self.saved_by(s)) {
                        let stack = saved.stack();
                        if !stacks.contains(&stack) {
                            stacks.push(stack);
                        }
                    }
                }
                let looped = match head {
                    LoopHead::For { pattern, iter } if !stacks.is_empty() => {
                        let hint = hidden(&format!("hint{}", id));
                        quote! {
                            let mut #hint = 0usize;
                            for #pattern in #rt::hinted(::core::iter::IntoIterator::into_iter(#iter), &mut #hint) {
                                if #trips == 0 {
                                    #(#stacks.reserve(#hint);)*
                                }
                                #tick #inner
                            }
                        }
                    }
                    LoopHead::For { pattern, iter } => {
                        quote!(for #pattern in #iter { #tick #inner })
                    }
                    LoopHead::Loop => quote!(loop { #tick #inner }),
                };
                quote!(#count #looped #push)
            }
        }
    }

    /// Output slots and branch results start empty.
    pub(super) fn optional_decls(&self, tangents: bool) -> TokenStream {
        let decls = self.body.output_slots.iter().map(|s| {
            let m = slot_ident(*s);
            let tm = slot_tangent_ident(*s);
            let t = (tangents && self.analysis.slot_useful(*s))
                .then(|| quote!(let mut #tm = ::core::option::Option::None;));
            quote!(let mut #m = ::core::option::Option::None; #t)
        });
        quote!(#(#decls)*)
    }

    /// The list an array parameter enters as.
    pub(super) fn array_list(&self, param: &syn::Ident) -> List {
        self.body
            .stmts
            .iter()
            .find_map(|s| match s {
                Stmt::ArrayParam { list, ident, .. } if ident == param => Some(*list),
                _ => None,
            })
            .expect("an array parameter enters as a list")
    }

    /// The tangent slot argument of parameter `param` in forward mode (`__rune_tangent_<i>`).
    pub(super) fn tangent_slot_of(&self, param: &syn::Ident) -> syn::Ident {
        let index = self
            .sig
            .params
            .iter()
            .position(|p| p.ident == *param)
            .expect("a parameter");
        crate::names::tangent_param(index)
    }

    /// The statement that makes parameter `ident` the owned value it enters as, if it does not
    /// enter as it is: a slice (`&[Layer]`, `&[f64]`) copies into a `Vec`, an optional reference
    /// (`Option<&Tensor<T>>`) into an `Option` of the value.
    pub(super) fn entry_conversion(&self, ident: &Ident) -> Option<TokenStream> {
        let entry = self
            .sig
            .params
            .iter()
            .find(|p| p.ident == *ident)
            .and_then(|p| p.active.as_ref())
            .map_or(Entry::AsIs, |a| a.entry);
        match entry {
            Entry::SliceToVec => {
                Some(quote!(let #ident: &::std::vec::Vec<_> = &<[_]>::to_vec(#ident);))
            }
            Entry::OptionCloned => Some(quote!(let #ident = #ident.cloned();)),
            Entry::AsIs => None,
        }
    }

    /// The array parameter that entered as list `list`, if one did.
    pub(super) fn array_param_of(&self, list: List) -> Option<&crate::parse::Param> {
        self.body.stmts.iter().find_map(|s| match s {
            Stmt::ArrayParam { list: l, ident, .. } if *l == list => {
                self.sig.params.iter().find(|p| p.ident == *ident)
            }
            _ => None,
        })
    }

    /// The value of each active parameter, in parameter order (`None` for constants, and for
    /// structures and arrays, which enter otherwise).
    pub(super) fn param_vals(&self) -> Vec<Option<Val>> {
        let mut vals = self.body.stmts.iter().filter_map(|s| match s {
            Stmt::Param { out, .. } => Some(*out),
            _ => None,
        });
        self.sig
            .params
            .iter()
            .map(|p| {
                p.active
                    .as_ref()
                    .filter(|a| !a.structure && !a.array)
                    .and_then(|_| vals.next())
            })
            .collect()
    }

    /// Whether the plain function's body is written from the fused IR ([`Self::plain_body`]):
    /// where fusion made a region and no custom rule stands in for the derivatives. A call of
    /// another differentiable function is a call of that function itself there.
    pub(super) fn fuses_plain(&self) -> bool {
        let mut fused = false;
        crate::ir::walk(&self.body.stmts, &mut |s| {
            if let Stmt::Fused { .. } = s {
                fused = true;
            }
        });
        fused
            && !self.is_twin
            && self.options.custom_vjp.is_none()
            && self.options.custom_jvp.is_none()
    }

    /// The body of the plain function itself, written from the fused IR (the primal alone), so
    /// that calling `f` runs its fused regions too; `None` where the user's body stays as
    /// written. The body as written then becomes a hidden function of its own (`f::original`),
    /// which the checks of `check-values` compare every variant's value with, and which keeps
    /// what the user's body names (imports of `where_cond`, helpers) in use.
    pub fn plain_body(&self) -> Option<TokenStream> {
        if !self.fuses_plain() {
            return None;
        }
        let hoists = Hoists::new(self.body);
        let optionals = self.optional_decls(false);
        let fwd = self.forward_block(&self.body.stmts, 0, Mode::Value, &hoists);
        let value = self.output_value();
        // A function returning an array returns the array of the passes' tuple.
        let value = match self.sig.array_out {
            Some(_) => {
                let rt = rt();
                quote!(#rt::array_value(#value))
            }
            None => value,
        };
        let result = self.api().ok(value);
        let lints = super::lints();
        let body = super::tokens::gather_lets(quote!(#optionals #fwd #result));
        Some(quote! {
            #lints
            let __rune_out = { #body };
            __rune_out
        })
    }

    /// The function's return value built from the output locals (cloned: the pullback may keep
    /// the same tensors).
    pub(super) fn output_value(&self) -> TokenStream {
        let rt = rt();
        let elems: Vec<TokenStream> = self
            .body
            .outputs
            .iter()
            .map(|o| match o {
                // A function returning a number: its 0-d tensor's number.
                OutputElem::Val(v)
                    if self.sig.scalar_out && self.carrier() == super::Carrier::Tensors =>
                {
                    let v = val_ident(*v);
                    quote!(#rt::as_tensor(&#v).item())
                }
                OutputElem::Val(v) => self.carrier().value(*v),
                OutputElem::Const(c) => const_ident(*c).into_token_stream(),
            })
            .collect();
        let value = if self.sig.outputs() == 1 {
            elems
                .first()
                .cloned()
                .unwrap_or_else(|| quote!(::core::unreachable!()))
        } else {
            quote!((#(#elems,)*))
        };
        match (&self.sig.returns, &self.body.aux) {
            (Returns::Aux { .. }, Some(OutputAux::Expr(e))) => quote!((#value, #e)),
            _ => value,
        }
    }
}
