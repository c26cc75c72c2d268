//! The bodies of the variants that do not derive: `custom_vjp` and `custom_jvp` call the user's
//! rule, `checkpoint` reruns the forward pass in the pullback. All start from owned copies of
//! the parameters.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

use super::{rt, Emitter};
use crate::names::hidden;

impl Emitter<'_> {
    /// How each parameter is passed on to a function taking the same parameters, from owned
    /// copies named `copies`.
    fn pass_copies(&self, copies: &[Ident]) -> Vec<TokenStream> {
        self.sig
            .params
            .iter()
            .zip(copies)
            .map(|(p, c)| match &p.ty {
                syn::Type::Reference(_) => quote!(&#c),
                _ => quote!(::core::clone::Clone::clone(&#c)),
            })
            .collect()
    }

    /// Owned copies of every parameter (cheap for tensors), kept by a pullback. A reference's
    /// copy is its `to_owned`: the referent's clone, or a `Vec` for a slice (`&[f64]`, whose
    /// referent cannot be cloned), passed on as a reference again.
    fn copy_params(&self) -> (Vec<Ident>, TokenStream) {
        let copies: Vec<Ident> = (0..self.sig.params.len())
            .map(|i| hidden(&format!("param{i}")))
            .collect();
        let stmts: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .zip(&copies)
            .map(|(p, c)| {
                let ident = &p.ident;
                match &p.ty {
                    syn::Type::Reference(_) => {
                        quote!(let #c = ::std::borrow::ToOwned::to_owned(#ident);)
                    }
                    _ => quote!(let #c = ::core::clone::Clone::clone(&#ident);),
                }
            })
            .collect();
        (copies, quote!(#(#stmts)*))
    }

    /// The value from the original function, the parameters kept for the pullback.
    fn value_and_copies(&self) -> (Vec<Ident>, TokenStream) {
        let name = self.api().original_path();
        let (_, ty_generics, _) = self.func.sig.generics.split_for_impl();
        let turbofish = ty_generics.as_turbofish();
        let (copies, stmts) = self.copy_params();
        let args = self.pass_copies(&copies);
        (
            copies,
            quote! {
                #stmts
                let __rune_value = #name #turbofish (#(#args),*);
            },
        )
    }

    /// Slots of the pullback's result from a rule's gradients (in active-parameter order).
    fn slots_from_grads(&self, grads: &Ident) -> TokenStream {
        let rt = rt();
        let n_active = self.sig.active().count();
        let mut k = 0;
        let slots = self.sig.params.iter().map(|p| match p.active {
            Some(_) => {
                let index = syn::Index::from(k);
                k += 1;
                if n_active == 1 {
                    quote!(#grads)
                } else {
                    quote!(#grads.#index)
                }
            }
            None => quote!(#rt::NoGrad),
        });
        let slots: Vec<TokenStream> = slots.collect();
        quote!((#(#slots,)*))
    }

    /// `f_fwd` under `custom_vjp = rule`: the value from the original function, and a pullback
    /// that calls `rule(params.., cotangent)`.
    pub(super) fn custom_pullback_body(&self, rule: &syn::Path) -> TokenStream {
        let (copies, head) = self.value_and_copies();
        let args = self.pass_copies(&copies);
        let cot_ty = self.sig.cotangent_type();
        let grads = hidden("rule_grads");
        let slots = self.slots_from_grads(&grads);
        quote! {
            #head
            (__rune_value, move |__rune_cotangent: #cot_ty| {
                let #grads = #rule(#(#args,)* __rune_cotangent);
                #slots
            })
        }
    }

    /// `f_fwd` under `checkpoint`: the value from the original function, and a pullback that
    /// keeps only the parameters and reruns the saving forward pass when called.
    pub(super) fn checkpoint_body(&self, saving: &TokenStream) -> TokenStream {
        let (_, ty_generics, _) = self.func.sig.generics.split_for_impl();
        let turbofish = ty_generics.as_turbofish();
        let (copies, head) = if self.is_twin {
            // A dual twin has no plain function: the saving pass gives the value, and its
            // intermediates are dropped here.
            let (copies, stmts) = self.copy_params();
            let args = self.pass_copies(&copies);
            let head = quote! {
                #stmts
                let (__rune_value, _) = #saving #turbofish (#(#args),*);
            };
            (copies, head)
        } else {
            self.value_and_copies()
        };
        let args = self.pass_copies(&copies);
        let cot_ty = self.sig.cotangent_type();
        quote! {
            #head
            (__rune_value, move |__rune_cotangent: #cot_ty| {
                let (_, __rune_pullback) = #saving #turbofish (#(#args),*);
                __rune_pullback(__rune_cotangent)
            })
        }
    }

    /// `f_tangent` under `custom_jvp = rule`: the value from the original function and the
    /// tangent from `rule(params.., tangents..)`.
    pub(super) fn custom_tangent_body(&self, rule: &syn::Path) -> TokenStream {
        let rt = rt();
        let (copies, head) = self.value_and_copies();
        let args = self.pass_copies(&copies);
        let mut tangents = Vec::new();
        let mut resolve = Vec::new();
        for (i, (p, c)) in self.sig.params.iter().zip(&copies).enumerate() {
            let Some(a) = &p.active else { continue };
            let slot = crate::names::tangent_param(i);
            let t = hidden(&format!("rule_tangent{i}"));
            let via = if a.structure {
                quote!(#rt::StructTangentSlot::tangent_or_zeros(#slot, &#c))
            } else {
                quote!(#rt::TangentSlot::tangent_or_zeros(#slot, &#c))
            };
            resolve.push(quote!(let #t = #via;));
            tangents.push(quote!(&#t));
        }
        quote! {
            #head
            #(#resolve)*
            let __rune_tangent_out = #rule(#(#args,)* #(#tangents),*);
            (__rune_value, __rune_tangent_out)
        }
    }
}
