//! rune-ad: automatic differentiation of tensor code by source transformation.
#![forbid(unsafe_code)]

pub use rune_macros::*;
pub use rune_runtime::*;

/// Everything a differentiable function usually needs.
pub mod prelude {
    pub use rune_macros::{differentiable, Differentiable};
    pub use rune_runtime::{
        add, check_grad, check_hvp, concat, div, grad_fn, hessian, hessian_from_grad,
        hvp_from_grad, jacfwd, jacobian, jacrev, mul, stack, stop_gradient, sub, where_cond,
        Differentiable, Dual, Element, GradCheckError, ShapeError, Tensor,
    };
}

/// What generated code reaches the runtime through. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use rune_runtime::generated::*;
    pub use rune_runtime::model::DifferentiableField;
    pub use rune_runtime::rules;
    pub use rune_runtime::*;
}
