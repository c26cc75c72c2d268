//! Procedural macros of rune-ad: `#[differentiable]` writes a function's forward- and
//! reverse-mode derivatives as plain Rust at compile time.
//!
//! The pipeline, one module a stage: [`parse`] (attribute options, signature model) →
//! [`lower`] (body → SSA IR of [`ir`]) → [`analyse`] (activity, what the backward pass keeps) →
//! [`emit`] (the derivative functions). [`ops`] is the op table; [`diag`] collects errors.

mod analyse;
mod diag;
mod emit;
mod expand;
mod ir;
mod lower;
mod ops;
mod parse;

use proc_macro::TokenStream;

/// Generates `f_vjp`, `f_jvp`, `f_grad` and `f_value_and_grad` beside the function `f`.
///
/// See the `rune_ad` crate documentation for what is accepted and what is generated.
#[proc_macro_attribute]
pub fn differentiable(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::differentiable(args.into(), item.into()).into()
}
