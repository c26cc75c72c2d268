//! The entry point: runs the stages and, on errors, emits them with fallback items.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::visit_mut::VisitMut;
use syn::ItemFn;

use crate::diag::Errors;
use crate::emit::Emitter;
use crate::parse::{Options, Signature};
use crate::{analyse, lower, parse};

/// Expands `#[differentiable(args)] item`.
pub fn differentiable(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let mut func: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            errors.at(
                &item,
                "#[differentiable] applies to a function (`fn f(x: &Tensor<T>, ..) -> Tensor<T>`)",
            );
            let errs = errors.to_compile_errors();
            return quote!(#errs #item);
        }
    };
    let original = func.clone();
    let options = parse::options(args, &mut errors);
    let sig = parse::signature(&mut func, &options, &mut errors);
    let Some(sig) = sig else {
        let errs = errors.to_compile_errors();
        return quote!(#errs #func);
    };
    let body = lower::lower(&sig, &func.block, &mut errors);
    let analysis = analyse::analyse(&body, &mut errors);
    let concrete = concrete_element(&func, &sig);
    if options.hvp {
        check_hvp_option(&func, &sig, &options, concrete.is_some(), &mut errors);
    }
    if !errors.is_empty() {
        let errs = errors.to_compile_errors();
        let stubs = Emitter::stubs(&func, &sig);
        return quote!(#errs #func #stubs);
    }
    let generated = Emitter {
        func: &func,
        sig: &sig,
        body: &body,
        analysis: &analysis,
        options: &options,
        dual_twin: concrete.as_ref().filter(|_| options.hvp).map(|_| ()),
        is_twin: false,
    }
    .emit();
    let twin = match (&concrete, options.hvp) {
        (Some(elem), true) => dual_twin(&original, elem),
        _ => quote!(),
    };
    quote!(#func #generated #twin)
}

/// The element type of a function written for a concrete one (`f32`, `f64`), if it is.
fn concrete_element(func: &ItemFn, sig: &Signature) -> Option<syn::Type> {
    let (_, first) = sig.active().find(|(_, a)| !a.structure)?;
    let elem = &first.elem;
    let elem_text = quote!(#elem).to_string();
    let generic = func
        .sig
        .generics
        .type_params()
        .any(|t| t.ident == elem_text);
    (!generic).then(|| elem.clone())
}

/// `hvp` applies to functions on a concrete element type of tensor parameters only.
fn check_hvp_option(
    func: &ItemFn,
    sig: &Signature,
    options: &Options,
    concrete: bool,
    errors: &mut Errors,
) {
    if !concrete {
        errors.at(
            &func.sig.ident,
            "`hvp` is for functions on a concrete element type; a function generic over its \
             element type (`<T: Element>`) gets `f_hvp` without it",
        );
    }
    if sig.active().any(|(_, a)| a.structure) {
        errors.at(
            &func.sig.ident,
            "`f_hvp` takes tensor parameters; pass a structure's tensors separately",
        );
    }
    if options.custom_vjp.is_some() || options.custom_jvp.is_some() || options.has_aux {
        errors.at(
            &func.sig.ident,
            "`hvp` cannot be combined with `custom_vjp`, `custom_jvp` or `has_aux`",
        );
    }
    if !matches!(sig.returns, parse::Returns::Single(_)) {
        errors.at(
            &func.sig.ident,
            "`f_hvp` needs a function returning one tensor",
        );
    }
}

/// The function again on dual numbers (`Tensor<f64>` → `Tensor<Dual<f64>>`), hidden, whose
/// generated gradient `f_dual_grad` is what `f_hvp` runs: forward over reverse.
fn dual_twin(original: &ItemFn, elem: &syn::Type) -> TokenStream {
    let mut twin = original.clone();
    twin.sig.ident = format_ident!("{}_dual", original.sig.ident);
    twin.attrs.retain(|a| !a.path().is_ident("doc"));
    let mut rewrite = ToDual {
        elem: quote!(#elem).to_string(),
        dual: syn::parse_quote!(::rune_ad::__private::Dual<#elem>),
    };
    rewrite.visit_item_fn_mut(&mut twin);
    let mut errors = Errors::default();
    let options = Options::default();
    let mut func = twin;
    let Some(sig) = parse::signature(&mut func, &options, &mut errors) else {
        return quote!();
    };
    let body = lower::lower(&sig, &func.block, &mut errors);
    let analysis = analyse::analyse(&body, &mut errors);
    if !errors.is_empty() {
        return quote!();
    }
    let generated = Emitter {
        func: &func,
        sig: &sig,
        body: &body,
        analysis: &analysis,
        options: &options,
        dual_twin: None,
        is_twin: true,
    }
    .emit();
    // The twin's own plain function is not needed (its body would call the plain callees).
    generated
}

/// Rewrites `Tensor<E>` to `Tensor<Dual<E>>` in types and paths.
struct ToDual {
    elem: String,
    dual: syn::Type,
}

impl VisitMut for ToDual {
    fn visit_path_segment_mut(&mut self, seg: &mut syn::PathSegment) {
        if seg.ident == "Tensor" {
            if let syn::PathArguments::AngleBracketed(args) = &mut seg.arguments {
                if let Some(syn::GenericArgument::Type(t)) = args.args.first_mut() {
                    if quote!(#t).to_string() == self.elem {
                        *t = self.dual.clone();
                        return;
                    }
                }
            }
        }
        syn::visit_mut::visit_path_segment_mut(self, seg);
    }
}
