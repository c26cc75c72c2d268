//! `layer_norm`: each sample standardised over its last axes, as PyTorch's
//! `F.layer_norm(x, normalized_shape, eps=eps)` without the affine part (multiply by a weight
//! and add a bias after it: `x.layer_norm(&[d], 1e-5) * &w + &b`).
//!
//! With `μ` and `v` the mean and the biased variance over the normalised axes (`N` elements) and
//! `σ = sqrt(v + eps)`, `y = (x - μ) / σ`. Its Jacobian is the symmetric
//! `(I - 11ᵀ/N - y yᵀ/N) / σ` on each sample, so the JVP and the VJP are one formula:
//! `dy = (dx - mean(dx) - y · mean(y · dx)) / σ`.

use crate::element::{Element, FromScalar};
use crate::error::{panicking_twin, OrPanic, ShapeError};
use crate::tensor::Tensor;

/// The axes `normalized_shape` names: the last ones of `shape`, which must have its lengths.
fn normalized_axes(shape: &[usize], normalized_shape: &[usize]) -> Result<Vec<isize>, ShapeError> {
    let k = normalized_shape.len();
    if k == 0 || k > shape.len() || shape[shape.len() - k..] != *normalized_shape {
        return Err(ShapeError::new(
            "layer_norm",
            format!(
                "normalized shape {normalized_shape:?} must be the last axes of shape {shape:?} \
                 (and not empty)"
            ),
        ));
    }
    Ok((0..k).map(|i| i as isize - k as isize).collect())
}

/// `σ = sqrt(v + eps)` of `x` over `axes`, kept as length-1 axes.
fn deviation<T: Element>(x: &Tensor<T>, axes: &[isize], eps: T) -> Tensor<T> {
    (x.var_axes(axes, true, 0) + eps).sqrt()
}

impl<T: Element> Tensor<T> {
    panicking_twin! {
        /// The tensor standardised over its last axes, whose lengths `normalized_shape` gives:
        /// `(x - mean) / sqrt(var + eps)` with the biased variance (PyTorch's
        /// `F.layer_norm(x, normalized_shape, eps=eps)`; the weight and bias are a `*` and a `+`
        /// after it). `eps` is any number `T` converts from.
        ///
        /// # Panics
        /// When `normalized_shape` is empty or not the tensor's last lengths.
        pub fn layer_norm<E>(&self, normalized_shape: &[usize], eps: E) -> Tensor<T>
        where
            T: FromScalar<E>,
        => self.try_layer_norm
    }

    /// Like [`Tensor::layer_norm`], returning an error for a normalized shape that is not the
    /// tensor's last lengths.
    pub fn try_layer_norm<E>(
        &self,
        normalized_shape: &[usize],
        eps: E,
    ) -> Result<Tensor<T>, ShapeError>
    where
        T: FromScalar<E>,
    {
        let axes = normalized_axes(self.shape(), normalized_shape)?;
        let centred = self - &self.mean_axes(&axes, true);
        Ok(centred / deviation(self, &axes, T::from_scalar(eps)))
    }
}

// ---- rules ----------------------------------------------------------------------------------
//
// | op         | JVP                                     | VJP                                  |
// |------------|-----------------------------------------|--------------------------------------|
// | layer_norm | (dx - mean(dx) - y·mean(y·dx)) / σ      | (g - mean(g) - y·mean(y·g)) / σ      |

/// Rules of `layer_norm` (see the module's table).
pub mod rules {
    use super::*;

    /// `(d - mean(d) - y · mean(y · d)) / σ` over the normalised axes: the Jacobian of
    /// `layer_norm`, which is symmetric, applied to `d`.
    #[track_caller]
    fn project<T: Element>(
        x: &Tensor<T>,
        y: &Tensor<T>,
        normalized_shape: &[usize],
        eps: T,
        d: &Tensor<T>,
    ) -> Tensor<T> {
        let axes = normalized_axes(x.shape(), normalized_shape).or_panic();
        let along_y = y * &(y * d).mean_axes(&axes, true);
        (d - &d.mean_axes(&axes, true) - along_y) / deviation(x, &axes, eps)
    }

    /// JVP of `y = x.layer_norm(normalized_shape, eps)`.
    #[track_caller]
    pub fn layer_norm_jvp<T: Element>(
        x: &Tensor<T>,
        y: &Tensor<T>,
        normalized_shape: &[usize],
        eps: T,
        dx: &Tensor<T>,
    ) -> Tensor<T> {
        project(x, y, normalized_shape, eps, dx)
    }
    /// VJP of `y = x.layer_norm(normalized_shape, eps)`.
    #[track_caller]
    pub fn layer_norm_vjp<T: Element>(
        g: &Tensor<T>,
        x: &Tensor<T>,
        y: &Tensor<T>,
        normalized_shape: &[usize],
        eps: T,
    ) -> Tensor<T> {
        project(x, y, normalized_shape, eps, g)
    }
}
