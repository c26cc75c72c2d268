//! `#[differentiable]` on a method declared in a trait (`fn forward(&self, x: &Tensor<f32>) ->
//! Tensor<f32>;`): the trait then declares the entry points that the `#[differentiable]`
//! method of each impl writes (`forward_fwd`, `forward_tangent`, `forward_vjp`, ..), so that
//! they are members of the trait, callable on `M: Module` and on a type through the trait.
//!
//! The entry points are required methods, each with the declaration the impl's method gets
//! from the same signature ([`Api::declare`]): an impl whose method lacks the attribute fails
//! to compile, naming them. The hidden items that only some impls write are provided, as the
//! method itself (`forward_original`, the function as written, where the plain method runs
//! fused code) or as the forward pass (`forward_fwd_derived`, of a method with a custom VJP or a
//! checkpoint). Each generated method has `where Self: Sized`, which keeps the trait
//! dyn-compatible (its entry points return `impl Trait` and take `impl Trait`): `dyn Module`
//! calls the method itself.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{FnArg, ItemFn, Pat};

use super::api::{Decl, EntryPoint};
use super::{Api, Host, TraitMethod};
use crate::diag::Errors;
use crate::parse::Signature;

/// The arguments that pass `func`'s parameters on (`self, x, w`), or an error at a parameter
/// that is not a name.
fn forwarded_args(func: &ItemFn, errors: &mut Errors) -> Vec<TokenStream> {
    func.sig
        .inputs
        .iter()
        .map(|arg| match arg {
            FnArg::Receiver(_) => quote!(self),
            FnArg::Typed(t) => match &*t.pat {
                Pat::Ident(i) => {
                    let ident = &i.ident;
                    quote!(#ident)
                }
                other => {
                    errors.at(
                        other,
                        "a #[differentiable] trait method names each parameter (`x: &Tensor<f32>`)",
                    );
                    quote!(::core::unreachable!())
                }
            },
        })
        .collect()
}

/// The trait items of method `func` (declared without a body) under `#[differentiable]`: the
/// declarations of its entry points, and the provided hidden items (see the module's
/// documentation). `trait_generics`: the trait's, when known (a generic trait's entry points
/// name its parameters in what they capture).
pub fn trait_declarations(
    func: &ItemFn,
    sig: &Signature,
    trait_generics: Option<&syn::Generics>,
    errors: &mut Errors,
) -> TokenStream {
    let trait_method = TraitMethod::new(None, trait_generics, func);
    let api = Api {
        func,
        sig,
        host: Host::Impl,
        is_twin: false,
        hvp_twin: false,
        trait_method: Some(&trait_method),
        inherent: None,
    };
    let generics = trait_method.bounded(&func.sig.generics);
    let where_clause = &generics.where_clause;
    let args = forwarded_args(func, errors);
    let name = api.name();
    let mut items = TokenStream::new();
    let prototype = |decl: &Decl| {
        let Decl {
            prototype_attrs,
            name,
            params,
            ret,
            ..
        } = decl;
        quote!(#prototype_attrs fn #name #generics (#params) -> #ret #where_clause;)
    };
    for entry in EntryPoint::ALL {
        let Some(decl) = api.declare(entry) else {
            continue;
        };
        items.extend(prototype(&decl));
        if matches!(entry, EntryPoint::Fwd) {
            // `fwd_derived`: the forward pass, where the impl's method has no custom rule.
            let fwd = &decl.name;
            let derived = Decl {
                name: api.hidden_name("fwd_derived"),
                ..decl.clone()
            };
            let Decl {
                attrs,
                name: derived,
                params,
                ret,
                ..
            } = derived;
            items.extend(quote! {
                #attrs fn #derived #generics (#params) -> #ret #where_clause {
                    Self::#fwd(#(#args),*)
                }
            });
        }
    }
    // The method as written, hidden: the impl's, where its plain method runs fused code.
    let original = api.hidden_name("original");
    let inputs = &func.sig.inputs;
    let output = &func.sig.output;
    items.extend(quote! {
        #[doc(hidden)]
        #[inline]
        #[allow(dead_code)]
        fn #original #generics (#inputs) #output #where_clause {
            Self::#name(#(#args),*)
        }
    });
    if let Some(opt_in) = api.hvp_opt_in() {
        let mut opt_in: ItemFn = syn::parse2(opt_in).expect("the opt-in item parses");
        opt_in.sig.generics = trait_method.bounded(&opt_in.sig.generics);
        items.extend(quote!(#opt_in));
    }
    items
}
