//! The entry point: runs the stages and, on errors, emits them with fallback items.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

use crate::diag::Errors;
use crate::emit::Emitter;
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
    let options = parse::options(args, &mut errors);
    let sig = parse::signature(&mut func, &options, &mut errors);
    let Some(sig) = sig else {
        let errs = errors.to_compile_errors();
        return quote!(#errs #func);
    };
    let body = lower::lower(&sig, &func.block, &mut errors);
    let analysis = analyse::analyse(&body, &mut errors);
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
    }
    .emit();
    quote!(#func #generated)
}
