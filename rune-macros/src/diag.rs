//! Error collection: every problem found is recorded with the span of the user's token, and all
//! of them are reported together (as serde_derive's `Ctxt` does).

use proc_macro2::TokenStream;
use quote::ToTokens;
use std::fmt::Display;

/// The message for a value read out of a differentiated tensor that reaches the output.
pub const CONCRETIZATION: &str = "this value is read out of a differentiated tensor, and the \
    result depends on it: its gradient would be silently lost (JAX reports this as a \
    concretization error). Compute it from `stop_gradient(&x)` to cut the gradient on purpose, \
    or keep the computation in tensor ops";

/// The errors found so far.
#[derive(Default)]
pub struct Errors {
    errors: Vec<syn::Error>,
    /// Where each error was recorded and what it says: the same error found twice (an
    /// expression lowered again on another path) is reported once.
    seen: Vec<String>,
}

impl Errors {
    /// Records an error at `tokens`, unless the same one is recorded there already.
    pub fn at<T: ToTokens, M: Display>(&mut self, tokens: T, message: M) {
        let error = syn::Error::new_spanned(tokens, message);
        let key = format!("{:?} {}", error.span(), error);
        if !self.seen.contains(&key) {
            self.seen.push(key);
            self.errors.push(error);
        }
    }

    /// Records an already built error.
    pub fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    /// How many errors are recorded.
    pub fn len(&self) -> usize {
        self.errors.len()
    }

    /// True when nothing went wrong.
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// All errors as `compile_error!` invocations.
    pub fn to_compile_errors(&self) -> TokenStream {
        self.errors
            .iter()
            .map(syn::Error::to_compile_error)
            .collect()
    }
}
