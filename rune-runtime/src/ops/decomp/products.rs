//! The vector products `dot` and `outer` and the Euclidean (Frobenius) `norm`, and their
//! rules.

use super::*;
use crate::error::panicking_twin;

impl<T: Element> Tensor<T> {
    panicking_twin! {
        /// The inner product of two vectors of one length: a 0-d tensor.
        ///
        /// # Panics
        /// When the two are not vectors of one length.
        pub fn dot(&self, b: &Tensor<T>) -> Tensor<T> => self.try_dot
    }

    /// Like [`Tensor::dot`], returning an error when the two are not vectors of one length.
    pub fn try_dot(&self, b: &Tensor<T>) -> Result<Tensor<T>, ShapeError> {
        if self.ndim() != 1 || self.shape() != b.shape() {
            return Err(ShapeError::new(
                "dot",
                format!(
                    "expects two vectors of one length, got shapes {:?} and {:?}",
                    self.shape(),
                    b.shape()
                ),
            ));
        }
        let s = self
            .to_vec()
            .into_iter()
            .zip(b.to_vec())
            .map(|(x, y)| x * y)
            .sum();
        Ok(Tensor::scalar(s))
    }

    panicking_twin! {
        /// The outer product of vectors `[m]` and `[n]`: the matrix `[m, n]` of `aᵢ bⱼ`.
        ///
        /// # Panics
        /// When either is not a vector.
        pub fn outer(&self, b: &Tensor<T>) -> Tensor<T> => self.try_outer
    }

    /// Like [`Tensor::outer`], returning an error when either is not a vector.
    pub fn try_outer(&self, b: &Tensor<T>) -> Result<Tensor<T>, ShapeError> {
        if self.ndim() != 1 || b.ndim() != 1 {
            return Err(ShapeError::new(
                "outer",
                format!(
                    "expects two vectors, got shapes {:?} and {:?}",
                    self.shape(),
                    b.shape()
                ),
            ));
        }
        let bv = b.to_vec();
        let data = self
            .to_vec()
            .into_iter()
            .flat_map(|x| bv.iter().map(move |&y| x * y))
            .collect();
        Ok(Tensor::from_vec(data, &[self.len(), b.len()]))
    }

    /// The Euclidean norm of all the elements, `√(Σ x²)` (the vector 2-norm; the Frobenius norm
    /// of a matrix): a 0-d tensor, without overflow or underflow.
    #[must_use]
    pub fn norm(&self) -> Tensor<T> {
        let data = self.to_vec();
        let scale = data.iter().fold(T::zero(), |m, x| {
            let a = x.abs();
            if a > m || a.is_nan() {
                a
            } else {
                m
            }
        });
        if scale == T::zero() || scale.is_infinite() || scale.is_nan() {
            return Tensor::scalar(scale);
        }
        let sum: T = data.iter().map(|&x| (x / scale) * (x / scale)).sum();
        Tensor::scalar(scale * sum.sqrt())
    }
}

/// Rules of these ops (see `ops::decomp`'s conventions).
pub mod rules {
    use super::*;

    /// JVP of [`Tensor::dot`], from both vectors and their tangents.
    #[track_caller]
    #[must_use]
    pub fn dot_jvp<T: Element>(
        a: &Tensor<T>,
        b: &Tensor<T>,
        da: Option<&Tensor<T>>,
        db: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        let ta = da.map(|d| d.dot(b));
        let tb = db.map(|d| a.dot(d));
        match (ta, tb) {
            (Some(x), Some(y)) => x + y,
            (Some(t), None) | (None, Some(t)) => t,
            (None, None) => Tensor::zeros(&[]),
        }
    }

    /// VJP of [`Tensor::dot`] for the first vector, from the second: `ḡ b`.
    #[must_use]
    pub fn dot_vjp_lhs<T: Element>(g: &Tensor<T>, b: &Tensor<T>) -> Tensor<T> {
        b * g
    }

    /// VJP of [`Tensor::dot`] for the second vector, from the first: `ḡ a`.
    #[must_use]
    pub fn dot_vjp_rhs<T: Element>(g: &Tensor<T>, a: &Tensor<T>) -> Tensor<T> {
        a * g
    }

    /// JVP of [`Tensor::outer`], from both vectors and their tangents.
    #[track_caller]
    #[must_use]
    pub fn outer_jvp<T: Element>(
        a: &Tensor<T>,
        b: &Tensor<T>,
        da: Option<&Tensor<T>>,
        db: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        let ta = da.map(|d| d.outer(b));
        let tb = db.map(|d| a.outer(d));
        match (ta, tb) {
            (Some(x), Some(y)) => x + y,
            (Some(t), None) | (None, Some(t)) => t,
            (None, None) => Tensor::zeros(&[a.len(), b.len()]),
        }
    }

    /// VJP of [`Tensor::outer`] for the first vector, from the second: `ḡ b`.
    #[track_caller]
    #[must_use]
    pub fn outer_vjp_lhs<T: Element>(g: &Tensor<T>, b: &Tensor<T>) -> Tensor<T> {
        g.matmul(b)
    }

    /// VJP of [`Tensor::outer`] for the second vector, from the first: `ḡᵀ a`.
    #[track_caller]
    #[must_use]
    pub fn outer_vjp_rhs<T: Element>(g: &Tensor<T>, a: &Tensor<T>) -> Tensor<T> {
        g.t().matmul(a)
    }

    /// `x / y` for the norm `y` of `x`, and zeros where `y = 0`.
    fn normalized<T: Element>(x: &Tensor<T>, y: &Tensor<T>) -> Tensor<T> {
        let y = y.item();
        if y == T::zero() {
            Tensor::zeros(x.shape())
        } else {
            x / y
        }
    }

    /// JVP of [`Tensor::norm`], from `x` and the norm `y`: `Σ x dx / y` (0 at `x = 0`).
    #[must_use]
    pub fn norm_jvp<T: Element>(x: &Tensor<T>, y: &Tensor<T>, dx: &Tensor<T>) -> Tensor<T> {
        (normalized(x, y) * dx).sum()
    }

    /// VJP of [`Tensor::norm`], from `x` and the norm `y`: `ḡ x / y` (0 at `x = 0`).
    #[must_use]
    pub fn norm_vjp<T: Element>(g: &Tensor<T>, x: &Tensor<T>, y: &Tensor<T>) -> Tensor<T> {
        normalized(x, y) * g
    }
}
