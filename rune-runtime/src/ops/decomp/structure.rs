//! The linear matrix functions: `eye`, `trace`, `diagonal`, `diag`, `triu` and `tril`, and their rules.

use super::*;
use crate::error::{panicking_twin, OrPanic};

impl<T: Element> Tensor<T> {
    /// The `n × n` identity matrix.
    #[must_use]
    pub fn eye(n: usize) -> Tensor<T> {
        let mut data = vec![T::zero(); n * n];
        for i in 0..n {
            data[i * (n + 1)] = T::one();
        }
        Tensor::from_vec(data, &[n, n])
    }

    panicking_twin! {
        /// The sum of the diagonal of each matrix of `[.., m, n]`: shape `[..]`.
        ///
        /// # Panics
        /// When the tensor has fewer than two axes.
        pub fn trace(&self) -> Tensor<T> => self.try_trace
    }

    /// Like [`Tensor::trace`], returning an error for fewer than two axes.
    pub fn try_trace(&self) -> Result<Tensor<T>, ShapeError> {
        let d = self.try_diagonal()?;
        let shape = d.shape().to_vec();
        let k = shape[shape.len() - 1];
        let data: Vec<T> = d.to_vec();
        let sums = if k == 0 {
            vec![T::zero(); shape[..shape.len() - 1].iter().product()]
        } else {
            data.chunks(k).map(|c| c.iter().copied().sum()).collect()
        };
        Ok(Tensor::from_vec(sums, &shape[..shape.len() - 1]))
    }

    panicking_twin! {
        /// The diagonal of each matrix of `[.., m, n]`: shape `[.., min(m, n)]` (PyTorch's
        /// `diagonal(dim1=-2, dim2=-1)`).
        ///
        /// # Panics
        /// When the tensor has fewer than two axes.
        pub fn diagonal(&self) -> Tensor<T> => self.try_diagonal
    }

    /// Like [`Tensor::diagonal`], returning an error for fewer than two axes.
    pub fn try_diagonal(&self) -> Result<Tensor<T>, ShapeError> {
        let (batch, m, n) = matrices("diagonal", self.shape())?;
        let k = m.min(n);
        let data = elements(self);
        let out = (0..batch)
            .flat_map(|b| (0..k).map(move |i| b * m * n + i * n + i))
            .map(|i| data[i])
            .collect();
        let mut shape = self.shape()[..self.ndim() - 2].to_vec();
        shape.push(k);
        Ok(Tensor::from_vec(out, &shape))
    }

    panicking_twin! {
        /// The diagonal matrix of each vector of `[.., n]`: shape `[.., n, n]` (PyTorch's
        /// `diag_embed`; NumPy's `diag` of a vector).
        ///
        /// # Panics
        /// When the tensor is 0-d.
        pub fn diag(&self) -> Tensor<T> => self.try_diag
    }

    /// Like [`Tensor::diag`], returning an error for a 0-d tensor.
    pub fn try_diag(&self) -> Result<Tensor<T>, ShapeError> {
        let Some(&n) = self.shape().last() else {
            return Err(ShapeError::new(
                "diag",
                "expects a vector or a batch of vectors [.., n], got a 0-d tensor",
            ));
        };
        let data = self.to_vec();
        let batch = data.len().checked_div(n).unwrap_or(0);
        let mut out = vec![T::zero(); batch * n * n];
        for b in 0..batch {
            for i in 0..n {
                out[b * n * n + i * n + i] = data[b * n + i];
            }
        }
        let mut shape = self.shape().to_vec();
        shape.push(n);
        Ok(Tensor::from_vec(out, &shape))
    }

    panicking_twin! {
        /// The entries of each matrix on and above the `k`-th diagonal (`k = 0` the main one, `k >
        /// 0` above it), zeros elsewhere.
        ///
        /// # Panics
        /// When the tensor has fewer than two axes.
        pub fn triu(&self, k: isize) -> Tensor<T> => self.try_triu
    }

    /// Like [`Tensor::triu`], returning an error for fewer than two axes.
    pub fn try_triu(&self, k: isize) -> Result<Tensor<T>, ShapeError> {
        let (_, _, n) = matrices("triu", self.shape())?;
        Ok(keep_columns(self, |i| columns_above(i, k, n)))
    }

    panicking_twin! {
        /// The entries of each matrix on and below the `k`-th diagonal (`k = 0` the main one, `k <
        /// 0` below it), zeros elsewhere.
        ///
        /// # Panics
        /// When the tensor has fewer than two axes.
        pub fn tril(&self, k: isize) -> Tensor<T> => self.try_tril
    }

    /// Like [`Tensor::tril`], returning an error for fewer than two axes.
    pub fn try_tril(&self, k: isize) -> Result<Tensor<T>, ShapeError> {
        let (_, _, n) = matrices("tril", self.shape())?;
        Ok(keep_columns(self, |i| columns_below(i, k, n)))
    }
}

/// Rules of these ops (see `ops::decomp`'s conventions).
pub mod rules {
    use super::super::rules::per_matrix;
    use super::*;

    /// JVP of [`Tensor::trace`].
    #[must_use]
    pub fn trace_jvp<T: Element>(dx: &Tensor<T>) -> Tensor<T> {
        dx.trace()
    }

    /// VJP of [`Tensor::trace`]: `g` on the diagonal of each matrix of the input's shape.
    #[must_use]
    pub fn trace_vjp<T: Element>(g: &Tensor<T>, shape: &[usize]) -> Tensor<T> {
        diagonal_ones::<T>(shape) * per_matrix(g)
    }

    /// Ones on the diagonal of each matrix of `shape`.
    fn diagonal_ones<T: Element>(shape: &[usize]) -> Tensor<T> {
        let (batch, m, n) = matrices("diagonal_ones", shape).or_panic();
        diagonal_vjp(&Tensor::ones(&[batch, m.min(n)]), shape)
    }

    /// JVP of [`Tensor::diagonal`].
    #[must_use]
    pub fn diagonal_jvp<T: Element>(dx: &Tensor<T>) -> Tensor<T> {
        dx.diagonal()
    }

    /// VJP of [`Tensor::diagonal`]: `g` written on the diagonal of zeros of the input's shape.
    #[must_use]
    pub fn diagonal_vjp<T: Element>(g: &Tensor<T>, shape: &[usize]) -> Tensor<T> {
        let (batch, m, n) = matrices("diagonal_vjp", shape).or_panic();
        let k = m.min(n);
        let gv = elements(g);
        let mut out = vec![T::zero(); batch * m * n];
        for b in 0..batch {
            for i in 0..k {
                out[b * m * n + i * n + i] = gv[b * k + i];
            }
        }
        Tensor::from_vec(out, shape)
    }

    /// JVP of [`Tensor::diag`].
    #[must_use]
    pub fn diag_jvp<T: Element>(dv: &Tensor<T>) -> Tensor<T> {
        dv.diag()
    }

    /// VJP of [`Tensor::diag`]: the diagonal of `g`.
    #[must_use]
    pub fn diag_vjp<T: Element>(g: &Tensor<T>) -> Tensor<T> {
        g.diagonal()
    }

    /// JVP of [`Tensor::triu`].
    #[must_use]
    pub fn triu_jvp<T: Element>(k: isize, dx: &Tensor<T>) -> Tensor<T> {
        dx.triu(k)
    }

    /// VJP of [`Tensor::triu`].
    #[must_use]
    pub fn triu_vjp<T: Element>(g: &Tensor<T>, k: isize) -> Tensor<T> {
        g.triu(k)
    }

    /// JVP of [`Tensor::tril`].
    #[must_use]
    pub fn tril_jvp<T: Element>(k: isize, dx: &Tensor<T>) -> Tensor<T> {
        dx.tril(k)
    }

    /// VJP of [`Tensor::tril`].
    #[must_use]
    pub fn tril_vjp<T: Element>(g: &Tensor<T>, k: isize) -> Tensor<T> {
        g.tril(k)
    }
}
