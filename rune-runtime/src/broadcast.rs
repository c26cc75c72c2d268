//! NumPy broadcasting, and its undoing for gradients (`sum_to_shape`).
//!
//! Every rule whose forward op broadcasts calls [`sum_to_shape`] to bring a cotangent back to
//! its input's shape; no rule reduces broadcast axes by itself.

use ndarray::{ArrayViewD, Axis, IxDyn};

use crate::element::Element;
use crate::error::ShapeError;
use crate::tensor::Tensor;

/// The shape two operands broadcast to under NumPy's rules.
pub fn broadcast_shapes(
    op: &'static str,
    a: &[usize],
    b: &[usize],
) -> Result<Vec<usize>, ShapeError> {
    let n = a.len().max(b.len());
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out.push(match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(ShapeError::new(
                    op,
                    format!("shapes {a:?} and {b:?} do not broadcast (axis {i}: {da} vs {db})"),
                ))
            }
        });
    }
    Ok(out)
}

/// A read-only view of `t` broadcast to `shape`.
pub(crate) fn broadcast_view<'a, T>(
    op: &'static str,
    t: &'a Tensor<T>,
    shape: &[usize],
) -> Result<ArrayViewD<'a, T>, ShapeError> {
    t.as_shared().broadcast(IxDyn(shape)).ok_or_else(|| {
        ShapeError::new(
            op,
            format!("shape {:?} cannot be broadcast to {:?}", t.shape(), shape),
        )
    })
}

/// Sums `g` over the axes that broadcasting added or stretched, giving a tensor of `shape`.
///
/// The adjoint of broadcasting `shape` to `g.shape()`. Returns `g` itself (a cheap clone) when
/// the shapes already agree.
///
/// # Panics
/// When `shape` does not broadcast to `g.shape()`.
#[track_caller]
pub fn sum_to_shape<T: Element>(g: &Tensor<T>, shape: &[usize]) -> Tensor<T> {
    if g.shape() == shape {
        return g.clone();
    }
    let gs = g.shape();
    assert!(
        gs.len() >= shape.len(),
        "sum_to_shape: shape {shape:?} has more axes than the gradient's {gs:?}"
    );
    let lead = gs.len() - shape.len();
    let mut acc = g.as_shared().to_owned();
    for _ in 0..lead {
        acc = acc.sum_axis(Axis(0));
    }
    for (axis, &len) in shape.iter().enumerate() {
        if len == 1 && acc.shape()[axis] != 1 {
            acc = acc.sum_axis(Axis(axis)).insert_axis(Axis(axis));
        } else {
            assert!(
                acc.shape()[axis] == len,
                "sum_to_shape: shape {shape:?} does not broadcast to the gradient's {gs:?}"
            );
        }
    }
    Tensor::from_array(acc)
}

/// `t` broadcast to `shape` as an owned tensor (cheap clone when the shapes agree).
#[track_caller]
pub(crate) fn broadcast_owned<T: Clone>(t: &Tensor<T>, shape: &[usize]) -> Tensor<T> {
    if t.shape() == shape {
        return t.clone();
    }
    match broadcast_view("broadcast_to", t, shape) {
        Ok(v) => Tensor::from_array(v.to_owned()),
        Err(e) => panic!("{e}"),
    }
}
