//! rune-ad: automatic differentiation of tensor code by source transformation.
#![forbid(unsafe_code)]

pub use rune_macros::*;
pub use rune_runtime::*;

/// Everything a differentiable function usually needs.
pub mod prelude {
    pub use rune_runtime::{check_grad, grad_fn, Element, ShapeError, Tensor};
}
