//! Procedural macros of rune-ad: `#[differentiable]` writes a function's forward- and
//! reverse-mode derivatives as plain Rust at compile time.
//!
//! The pipeline, one module a stage, run by `expand`: `parse` (attribute options, signature
//! model) → `lower` (body → SSA IR of `ir`) → `fuse` (elementwise trees as fused regions) or
//! `numbers` (the function on plain numbers where it can be: every elementwise op a region) →
//! `analyse` (activity, what the backward pass keeps) → `emit` (the derivative functions);
//! `twin` runs the same stages again on dual numbers for `#[differentiable(hvp)]`. No stage imports a later one; `lower`,
//! `fuse` and `emit` are directories of one file a job. `ops` is the op table as the macro
//! reads it from the registry crate `rune-ops` (shared with the runtime); `ids` and `names`
//! the numbers and identifiers of generated values; `diag` collects errors.
//! `derive` writes `#[derive(Differentiable)]`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod analyse;
mod derive;
mod diag;
mod emit;
mod expand;
mod fuse;
#[cfg(test)]
mod fuzz;
mod ids;
mod ir;
mod lower;
mod names;
mod numbers;
mod ops;
mod parse;
#[cfg(test)]
mod scaling;
mod twin;
mod vmap;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

/// Generates `f_vjp`, `f_jvp`, `f_grad` and `f_value_and_grad` beside the function `f`.
///
/// See the `rune_ad` crate documentation for what is accepted and what is generated.
#[proc_macro_attribute]
pub fn differentiable(args: TokenStream, item: TokenStream) -> TokenStream {
    on_deep_stack(|| expand::differentiable(args.into(), item.into()).into())
}

/// Implements `Differentiable` for a struct of tensors, other `Differentiable` types, and `Vec`s
/// or arrays of them, named or tuple fields; the struct must also be `Clone`.
///
/// The leaves are the fields' leaves in declaration order; a leaf's path joins field names with
/// `.` (`"layers[1].w"`, `"0.w"` for a tuple struct). A field marked `#[nodiff]` is a constant:
/// `zeros_like` clones it and it has no leaves. The element type is the first differentiated
/// field's, and every other differentiated field must have the same.
#[proc_macro_derive(Differentiable, attributes(nodiff, buffer))]
pub fn derive_differentiable(input: TokenStream) -> TokenStream {
    on_deep_stack(|| {
        let input = parse_macro_input!(input as DeriveInput);
        derive::differentiable(input)
            .unwrap_or_else(syn::Error::into_compile_error)
            .into()
    })
}

/// Runs `f` on a stack of its own, large enough for the deepest body rustc itself accepts.
///
/// Parsing, lowering and emitting recurse over the syntax tree (a chain of 5,000 method calls is
/// 5,000 frames deep, in `syn` as well as here), and rustc runs a proc macro on its own thread's
/// remaining stack, where such a body overflowed it and crashed rustc. The stack is reserved, not
/// committed: only the pages a deep body touches cost memory.
pub(crate) fn on_deep_stack<R>(f: impl FnOnce() -> R) -> R {
    const STACK: usize = 1 << 30;
    stacker::grow(STACK, f)
}
