//! Forward mode: the tangent rule after each statement, and the body of `tangent`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::Ident;

use super::rule::{rule_call, Hoists, OpCtx, Pass};
use super::tokens::{gather_lets, relocate};
use super::{list_refs, rt, struct_place, Emitter, Mode};
use crate::ir::{Operand, OutputElem, Stmt};
use crate::names::{
    const_ident, list_tangent_ident, slot_ident, slot_tangent_ident, tangent_ident, val_ident,
};
use crate::ops;

impl Emitter<'_> {
    /// The tangent rule after `stmt` (forward mode).
    pub(super) fn tangent_of(&self, stmt: &Stmt) -> TokenStream {
        let rt = rt();
        match stmt {
            Stmt::Param { out: v, .. } if self.useful(*v) => {
                let index = self
                    .param_vals()
                    .iter()
                    .position(|pv| *pv == Some(*v))
                    .expect("a parameter value");
                let slot = crate::names::tangent_param(index);
                let t = tangent_ident(*v);
                let tangent = self.carrier().param_tangent(&slot, *v);
                quote!(let #t = #tangent;)
            }
            Stmt::ArrayParam {
                list,
                ident,
                borrowed,
            } if self.analysis.list_useful(*list) => {
                let slot = self.tangent_slot_of(ident);
                let tl = list_tangent_ident(*list);
                let reference = if *borrowed {
                    quote!(#ident)
                } else {
                    quote!(&#ident)
                };
                let tangent = self.glue("array_tangent");
                quote!(let #tl = #tangent(#slot, #reference);)
            }
            Stmt::Op {
                out: v,
                op,
                inputs,
                config,
                turbofish,
                span,
                ..
            } if self.useful(*v) => {
                let ctx = OpCtx {
                    out: *v,
                    op,
                    inputs,
                    config,
                    turbofish,
                    k: 0,
                };
                let call = rule_call(&ops::rules(op).jvp, &ctx, Pass::Tangent, &|v| {
                    self.useful(v)
                });
                let t = tangent_ident(*v);
                relocate(quote!(let #t = #call;), *span)
            }
            Stmt::Leaf {
                out, root, path, ..
            } if self.useful(*out) => {
                let t = tangent_ident(*out);
                let p = struct_place(&self.struct_tangent_base(*root), path, false);
                quote!(let #t = ::core::clone::Clone::clone(&#p);)
            }
            Stmt::ListNew { list, .. } if self.analysis.list_useful(*list) => {
                // The elements it starts with (`[0.0; 2]`) are constants.
                let (tl, ident) = (list_tangent_ident(*list), &self.body.lists[list.0]);
                quote!(let mut #tl = #rt::list_zero_tangents(&#ident);)
            }
            Stmt::ListPush {
                list,
                val,
                index,
                replace,
            } if self.analysis.list_useful(*list) => {
                let tl = list_tangent_ident(*list);
                let ident = &self.body.lists[list.0];
                let i = const_ident(*index);
                let tangent = match val {
                    Operand::Val(v) if self.useful(*v) => {
                        let t = tangent_ident(*v);
                        quote!(::core::clone::Clone::clone(&#t))
                    }
                    _ => quote!(#rt::Tensor::zeros(#ident[#i].shape())),
                };
                if *replace {
                    quote!(#tl[#i] = #tangent;)
                } else {
                    quote!(#tl.push(#tangent);)
                }
            }
            Stmt::ListGet { out, list, index } if self.useful(*out) => {
                let tl = list_tangent_ident(*list);
                let (t, i) = (tangent_ident(*out), const_ident(*index));
                quote!(let #t = ::core::clone::Clone::clone(&#tl[#i]);)
            }
            Stmt::ListOp {
                out,
                op,
                list,
                config,
                span,
                ..
            } if self.useful(*out) => {
                let tl = list_tangent_ident(*list);
                let refs = list_refs(&self.body.lists[list.0]);
                let rule = format_ident!("{}_jvp", op.name);
                let t = tangent_ident(*out);
                let axis = const_ident(config[0]);
                relocate(
                    quote! {
                        let #t = #rt::rules::#rule(
                            #refs,
                            #axis,
                            &#tl.iter().map(::core::option::Option::Some).collect::<::std::vec::Vec<_>>(),
                        );
                    },
                    *span,
                )
            }
            Stmt::SlotInit { slot, init } if self.analysis.slot_useful(*slot) => {
                let tm = slot_tangent_ident(*slot);
                let m = slot_ident(*slot);
                let value = self.tangent_operand(*init, &m);
                quote!(let mut #tm = #value;)
            }
            Stmt::SlotRead { out, slot } if self.useful(*out) => {
                let tm = slot_tangent_ident(*slot);
                let t = tangent_ident(*out);
                if self.optional(*slot) {
                    quote!(let #t = ::core::clone::Clone::clone(::core::option::Option::as_ref(&#tm).expect("rune-ad: a branch or return left no tangent"));)
                } else {
                    quote!(let #t = ::core::clone::Clone::clone(&#tm);)
                }
            }
            Stmt::SlotWrite { slot, val } if self.analysis.slot_useful(*slot) => {
                let tm = slot_tangent_ident(*slot);
                let m = slot_ident(*slot);
                let m_value = if self.optional(*slot) {
                    quote!(::core::option::Option::as_ref(&#m).expect("written"))
                } else {
                    quote!(&#m)
                };
                let value = match val {
                    Operand::Val(v) if self.useful(*v) => {
                        let t = tangent_ident(*v);
                        quote!(::core::clone::Clone::clone(&#t))
                    }
                    _ => self.carrier().zero_like(m_value),
                };
                if self.optional(*slot) {
                    quote!(#tm = ::core::option::Option::Some(#value);)
                } else {
                    quote!(#tm = #value;)
                }
            }
            _ => quote!(),
        }
    }

    /// The tangent of a slot's initial value (zeros for a constant).
    fn tangent_operand(&self, o: Operand, m: &Ident) -> TokenStream {
        match o {
            Operand::Val(v) if self.useful(v) => {
                let t = tangent_ident(v);
                quote!(::core::clone::Clone::clone(&#t))
            }
            _ => self.carrier().zero_like(quote!(&#m)),
        }
    }

    /// The body of `f_tangent`.
    pub(super) fn tangent_body(&self) -> TokenStream {
        let rt = rt();
        let hoists = Hoists::new(self.body);
        let optionals = self.optional_decls(true);
        let fwd = self.forward_block(&self.body.stmts, 0, Mode::Tangent, &hoists);
        let value = self.output_value();
        let tangents: Vec<TokenStream> = self
            .body
            .outputs
            .iter()
            .map(|o| match o {
                OutputElem::Val(v) if self.useful(*v) && self.numbers => {
                    tangent_ident(*v).into_token_stream()
                }
                OutputElem::Val(v) if self.useful(*v) && self.sig.scalar_out => {
                    let t = tangent_ident(*v);
                    quote!(#t.item())
                }
                OutputElem::Val(_) | OutputElem::Const(_) if self.sig.scalar_out => {
                    quote!(::core::default::Default::default())
                }
                OutputElem::Val(v) if self.useful(*v) => tangent_ident(*v).into_token_stream(),
                OutputElem::Val(v) => {
                    let v = val_ident(*v);
                    quote!(#rt::Tensor::zeros(#v.shape()))
                }
                OutputElem::Const(c) => {
                    let c = const_ident(*c);
                    quote!(#rt::Tensor::zeros(#c.shape()))
                }
            })
            .collect();
        let tangent = if self.sig.outputs() == 1 {
            tangents
                .first()
                .cloned()
                .unwrap_or_else(|| quote!(::core::unreachable!()))
        } else {
            quote!((#(#tangents,)*))
        };
        let result = self.api().ok(quote!((#value, __rune_tangent_out)));
        gather_lets(quote! {
            #optionals
            #fwd
            let __rune_tangent_out = #tangent;
            #result
        })
    }
}
