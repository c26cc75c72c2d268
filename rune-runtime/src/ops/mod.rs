//! The primitive ops, grouped by kind; beside each group's forward kernels, its derivative rules.
//!
//! # Rule conventions
//!
//! For an op `foo` with differentiable tensor inputs `x1..xn`, configuration arguments `c..` and
//! output `y`, the group's `rules` module has:
//!
//! - `foo_jvp(<the primal inputs and/or y it reads>, <c..>, <tangents>) -> Tensor<T>`: the output
//!   tangent. A one-input op takes its input tangent as `&Tensor<T>`; an op with several
//!   differentiable inputs takes one `Option<&Tensor<T>>` each (`None` for a constant input).
//! - `foo_vjp(g, <what it reads>, <c..>) -> Tensor<T>` for a one-input op, and
//!   `foo_vjp_<input>(..)` (`_lhs`/`_rhs`, `_input`/`_weight`, ...) for each differentiable input
//!   of a multi-input op: the cotangent `g` pulled back to that input, with the input's shape.
//!
//! A rule takes exactly what it reads (an input, the output, or only an input's *shape*), so that
//! generated reverse-mode code keeps nothing else alive. Rules reuse the forward output where that
//! saves work (`exp`, `sqrt`, `tanh`, `sigmoid`, `softmax`). Every rule applies local derivatives
//! with [`strong_mul`](crate::element::strong_mul): an exactly-zero tangent or cotangent stays
//! zero even where the local derivative is infinite or NaN.
//!
//! Every op is declared once, in the registry crate `rune-ops`: its form, its kind, and the
//! arguments of each rule call, which the macro writes calls from. [`all_ops`] lists it, and the
//! test suite checks that every differentiable op in it has both rules checked against finite
//! differences, here and through the macro.

use crate::error::ShapeError;

pub mod arith;
pub mod binary;
pub mod cast;
pub mod combine;
pub mod compare;
pub mod conv;
pub mod decomp;
pub mod duals;
pub mod index;
mod lanes;
pub mod linalg;
pub mod norm;
pub mod poly;
pub mod pool;
pub mod reduce;
pub mod scan;
pub mod shape;
pub mod slice;
pub mod softmax;
pub mod sort;
pub mod special;
pub mod unary;
mod window;

/// One primitive of the op table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpInfo {
    /// The method or function name users write (`"exp"`, `"sum_axes"`, `"add"` for `+`).
    pub name: &'static str,
    /// Whether the op has derivative rules (comparisons and `argmax` do not).
    pub differentiable: bool,
    /// The primitive(s) of Rune's `autodiff.ml` this op corresponds to, or `"composite"`.
    pub reference: &'static str,
    /// Whether `#[differentiable]` code evaluates it inside fused elementwise regions.
    pub fused: bool,
}

/// Every op of the runtime, as the op registry (`rune-ops`) declares it.
pub fn all_ops() -> Vec<OpInfo> {
    rune_ops::all()
        .map(|op| OpInfo {
            name: op.name,
            differentiable: op.differentiable(),
            reference: op.reference,
            fused: op.fusion.is_some(),
        })
        .collect()
}

/// `axis` (negative counts from the end) as an index into `ndim` axes.
pub(crate) fn normalize_axis(
    op: &'static str,
    axis: isize,
    ndim: usize,
) -> Result<usize, ShapeError> {
    let n = ndim as isize;
    let a = if axis < 0 { axis + n } else { axis };
    if a < 0 || a >= n {
        return Err(ShapeError::new(
            op,
            format!("axis {axis} is out of range for a tensor with {ndim} axes"),
        ));
    }
    Ok(a as usize)
}

/// Several axes normalised, sorted, and checked for repeats.
pub(crate) fn normalize_axes(
    op: &'static str,
    axes: &[isize],
    ndim: usize,
) -> Result<Vec<usize>, ShapeError> {
    let mut out = axes
        .iter()
        .map(|&a| normalize_axis(op, a, ndim))
        .collect::<Result<Vec<_>, _>>()?;
    out.sort_unstable();
    if out.windows(2).any(|w| w[0] == w[1]) {
        return Err(ShapeError::new(op, format!("axes {axes:?} repeat an axis")));
    }
    Ok(out)
}
