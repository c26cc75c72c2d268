//! `f_hvp`: the gradient and Hessian-vector products, forward over reverse (the reverse pass run
//! on dual numbers). The dual-number twin of a function on a concrete element type is made in
//! `expand`; this runs its gradient.

use proc_macro2::TokenStream;
use proc_macro2::{Span, TokenTree};
use quote::{format_ident, quote, ToTokens};

use super::{rt, Emitter, Host};
use crate::names::hidden;
use crate::parse::{Returns, Signature};

impl Emitter<'_> {
    /// `f_hvp` (forward over reverse): `f_grad` run on dual numbers whose tangents are the
    /// directions. Written for functions generic over their element type; a function on a
    /// concrete element type gets it through its generic twin.
    pub(super) fn hvp(&self, lints: &TokenStream) -> TokenStream {
        let rt = rt();
        if !matches!(self.sig.returns, Returns::Single(_)) {
            return quote!();
        }
        if self.sig.active().any(|(_, a)| a.structure) {
            return quote!();
        }
        let Some((_, first)) = self.sig.active().next() else {
            return quote!();
        };
        let elem = &first.elem;
        let elem_name = elem.to_token_stream().to_string();
        let generics = &self.func.sig.generics;
        let generic = generics.type_params().any(|t| t.ident == elem_name);
        if self.is_twin || (!generic && self.dual_twin.is_none()) {
            return quote!();
        }
        let name = self.name();
        let vis = &self.func.vis;
        let (_, ty_generics, where_clause) = generics.split_for_impl();
        // A concrete function's gradient on dual numbers is its twin's.
        let grad_path = match (generic, self.host) {
            (true, _) => self.public_path("grad"),
            (false, Host::Free) => quote!(#name::dual_grad),
            (false, Host::Impl) => {
                let item = format_ident!("{}_dual_grad", name);
                quote!(Self::#item)
            }
        };
        let hvp_name = self.public_name("hvp");
        // The turbofish instantiating the element type with its dual numbers.
        let args: Vec<TokenStream> = generics
            .params
            .iter()
            .filter_map(|g| match g {
                syn::GenericParam::Type(t) if t.ident == elem_name => {
                    Some(quote!(#rt::Dual<#elem>))
                }
                syn::GenericParam::Type(t) => Some(t.ident.to_token_stream()),
                syn::GenericParam::Const(c) => Some(c.ident.to_token_stream()),
                syn::GenericParam::Lifetime(_) => None,
            })
            .collect();
        // Generic: every parameter whose type names the element type is lifted. Concrete: the
        // twin takes `Tensor<Dual<E>>` where the function takes `Tensor<E>`, and plain scalars.
        let tensor_of_elem = format!("Tensor < {elem_name} >");
        let mentions_elem = |ty: &syn::Type| {
            let text = ty.to_token_stream().to_string();
            if generic {
                ty.to_token_stream()
                    .into_iter()
                    .any(|t| matches!(&t, TokenTree::Ident(i) if *i == elem_name))
                    || text.contains(&format!("< {elem_name} >"))
            } else {
                text.contains(&tensor_of_elem)
            }
        };
        let mut lifts = Vec::new();
        let mut call_args = Vec::new();
        let mut directions = Vec::new();
        for (i, p) in self.sig.params.iter().enumerate() {
            let ident = &p.ident;
            let lifted = hidden(&format!("dual{i}"));
            let (borrowed, reference) = match &p.ty {
                syn::Type::Reference(_) => (true, quote!(#ident)),
                _ => (false, quote!(&#ident)),
            };
            match &p.active {
                Some(_) => {
                    let d = format_ident!("{}_direction", ident, span = Span::mixed_site());
                    let ty = Signature::grad_type(p);
                    directions.push(quote!(#d: &#ty));
                    lifts.push(quote!(let #lifted = #rt::dual_tensor(#reference, #d);));
                }
                None if mentions_elem(&p.ty) => {
                    lifts.push(quote!(let #lifted = #rt::Lift::lift(#reference);));
                }
                None => {
                    call_args.push(quote!(#ident));
                    continue;
                }
            }
            call_args.push(if borrowed {
                quote!(&#lifted)
            } else {
                quote!(#lifted)
            });
        }
        let call_turbofish = if generic {
            quote!(::<#(#args),*>)
        } else {
            ty_generics.as_turbofish().to_token_stream()
        };
        let n_active = self.sig.active().count();
        let (grads_out, hvps_out) = if n_active == 1 {
            (
                quote!(#rt::dual_primal(&__rune_dual_grads)),
                quote!(#rt::dual_tangent(&__rune_dual_grads)),
            )
        } else {
            let idx: Vec<syn::Index> = (0..n_active).map(syn::Index::from).collect();
            (
                quote!((#(#rt::dual_primal(&__rune_dual_grads.#idx),)*)),
                quote!((#(#rt::dual_tangent(&__rune_dual_grads.#idx),)*)),
            )
        };
        let grads_ty = self.sig.grads_type();
        let params_plain: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .map(|p| {
                let (ident, ty) = (&p.ident, &p.ty);
                quote!(#ident: #ty)
            })
            .collect();
        let link = self.link();
        let doc = format!(" The gradient of {link} and its Hessian times the given directions (forward over reverse: the reverse pass run on dual numbers).");
        quote! {
            #[doc = #doc]
            #lints
            #[track_caller]
            #vis fn #hvp_name #generics (#(#params_plain,)* #(#directions),*) -> (#grads_ty, #grads_ty) #where_clause {
                #(#lifts)*
                let __rune_dual_grads = #grad_path #call_turbofish (#(#call_args),*);
                (#grads_out, #hvps_out)
            }
        }
    }
}
