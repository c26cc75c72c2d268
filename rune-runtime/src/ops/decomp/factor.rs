//! The factorizations with more than one factor — `qr`, `eigh`, `svd` — and what is built on
//! them (`lstsq`), `cho_solve`, and `slogdet`; each factor is its own differentiable op.
//!
//! # One op per factor
//!
//! A differentiable op has one output, so each factor is an op of its own: `qr_q` and `qr_r`;
//! `eigvalsh` and `eigh_vectors`; `svd_u`, `svdvals` and `svd_vh`; the sign and `logabsdet` of
//! `slogdet`. The methods returning the tuple (`qr`, `eigh`, `svd`, `slogdet`) factor once; in a
//! `#[differentiable]` function `let (q, r) = a.qr();` is written as the two ops, each of which
//! factors `A` again (and its rules once more, since they read `A`, not the factors).
//!
//! # The kernels
//!
//! `eigh` and `svd` of `f32` and `f64` matrices run faer's (tridiagonal and bidiagonal
//! reductions, chosen by the hidden `Element::factor_kernels` as the matrix product chooses
//! faer's GEMM). The dual numbers that forward mode inside a function and `f_hvp` push through
//! every op cannot go through faer, which takes `f32` and `f64` only, so every element type also
//! has generic kernels of ours: `eigh` by cyclic Jacobi rotations and `svd` by one-sided
//! (Hestenes) Jacobi, which give eigen- and singular values to high relative accuracy and
//! converge in a handful of O(n³) sweeps, plus one sweep more so that the tangents of dual
//! numbers converge too. Both kinds are brought to one convention (order and signs, below), so a
//! function's value and its derivatives see the same factors. QR of `f32` and `f64` is faer's
//! (Householder, its `R`'s rows signed to a positive diagonal) when `R` is clearly of full rank;
//! the generic one, for every other type and for a matrix faer leaves in doubt, is modified
//! Gram–Schmidt with a second orthogonalisation pass ("twice is enough", orthonormal to working
//! precision), which gives `R` its positive diagonal directly and decides rank deficiency.
//!
//! # Conventions
//!
//! - `qr` of `A [.., m, n]` is the reduced factorization `A = Q R` of NumPy and JAX, `k = min(m,
//!   n)`: `Q [.., m, k]` with orthonormal columns and `R [.., k, n]` upper triangular with a
//!   positive diagonal (which makes it unique and smooth). For `m >= n`, `A` must have full
//!   column rank; a wide `A = [X | Y]` (`m < n`) is factored through its leading square block,
//!   `X = Q R_X` and `R = [R_X | Qᵀ Y]`, and `X` must be invertible. Otherwise it is an error.
//! - `eigh` of a symmetric `A [.., n, n]` reads its lower triangle (as `cholesky`, and as
//!   PyTorch's and JAX's default `UPLO='L'`): eigenvalues `w [.., n]` ascending, and eigenvectors
//!   as the columns of `V [.., n, n]`, `A = V diag(w) Vᵀ`. An eigenvector's sign is fixed so that
//!   its largest component (the first of equal ones) is positive. (When two components are
//!   equal up to rounding, faer's and Jacobi's vectors may pick different ones, and so differ in
//!   sign: a loss that reads the vectors' signs is then not smooth there anyway.)
//! - `svd` of `A [.., m, n]` is the thin SVD `A = U diag(s) Vh`, `k = min(m, n)`, `U [.., m, k]`,
//!   `s [.., k]` descending and non-negative, `Vh [.., k, n]`. Each pair of singular vectors is
//!   signed so that the largest component of the left one is positive. For a zero singular value
//!   the left vector completes `U`'s columns to an orthonormal set.
//! - `lstsq(b)` of a full-column-rank `A [.., m, n]`, `m >= n`, and `B [.., m, k]` is the `X [..,
//!   n, k]` minimising `‖A X - B‖`, by QR: `X = R⁻¹ Qᵀ B`. The leading axes of `A` and `B`
//!   broadcast (see `decomp.rs`), as those of `cho_solve`'s.
//! - `cho_solve(b)` solves `A X = B` given the lower Cholesky factor `L` of `A` (the receiver;
//!   its lower triangle is read), by two triangular solves, as SciPy's `cho_solve((L, True), b)`.
//! - `slogdet()` returns `(sign_det(), logabsdet())`, the sign `±1` (`0` for a singular matrix)
//!   taken from the LU factorization, so that neither overflows or underflows as `det` can. The
//!   sign is piecewise constant: its rules give zero.
//!
//! # Rules
//!
//! - `cho_solve`: `X = A⁻¹ B` with `A = L Lᵀ`, so `dX = A⁻¹(dB - dA X)` with `dA = dL Lᵀ + L dLᵀ`;
//!   `B̄ = A⁻¹ ḡ` and `L̄ = -tril((B̄ Xᵀ + X B̄ᵀ) L)`.
//! - `qr` (Walter and Lehmann 2018; Liao et al. 2019): with `C = Qᵀ dA R⁻¹` and the skew
//!   matrix `Ω = tril(C, -1) - tril(C, -1)ᵀ`, `dR = (C - Ω) R` and `dQ = dA R⁻¹ - Q (C - Ω)`;
//!   the VJP is `Ā = (Q̄ + Q copyltu(M)) R⁻ᵀ` with `M = R R̄ᵀ - Q̄ᵀ Q` and `copyltu(M)` the
//!   symmetric matrix of `M`'s lower triangle. For a wide `A = [X | Y]` (as JAX's `qr_jvp_rule`)
//!   these give `dQ` and `dR_X` from `dX`, and `dR_Y = dQᵀ Y + Qᵀ dY`; backwards, `R_Y = Qᵀ Y`
//!   adds `Y R̄_Yᵀ` to `Q̄` before `X̄` is taken as above, and `Ȳ = Q R̄_Y`.
//! - `eigh` (Giles 2008; Seeger et al. 2017): `dw = diag(Vᵀ dA V)`, `dV = V (F ∘ Vᵀ dA V)` with
//!   `Fᵢⱼ = 1/(wⱼ - wᵢ)` off the diagonal and `0` on it; `Ā = V (diag(w̄) + F ∘ Vᵀ V̄) Vᵀ`, folded
//!   onto the lower triangle that is read. These need distinct eigenvalues. At a repeated
//!   eigenvalue the eigenvalues' rule stays finite: it gives the diagonal of `Vᵀ dA V` in the
//!   basis the kernel returned, which is right for what is differentiable there, the symmetric
//!   functions of the repeated ones (their sum: the trace, a log-determinant); the eigenvectors'
//!   rule divides by zero and its result is not finite, as in JAX and PyTorch. A loss that reads
//!   the eigenvectors of a repeated eigenvalue only through their span (a projector) has a
//!   derivative, but these rules do not give it.
//! - Second order (`f_hvp`, which runs these rules and the Jacobi kernels on dual numbers) is
//!   right where the first order is, for distinct eigen- and singular values (non-zero ones for
//!   the singular vectors). At a repeated one it is not, even for functions symmetric in the
//!   repeated values (`Σ w²`, a log-determinant), whose Hessian needs the limit of `(ḡⱼ - ḡᵢ) /
//!   (wⱼ - wᵢ)` that neither the rules nor the kernels take: the HVP is finite but wrong, or not
//!   finite. (A pair whose values are exactly equal and exactly diagonal is left alone by the
//!   kernel on dual numbers, so that its first-order tangents are the rules'.)
//! - `svd` (Townsend 2016): with `P = Uᵀ dA V`, `ds = diag(P)`, `Fᵢⱼ = 1/(sⱼ² - sᵢ²)`, `dU = U (F
//!   ∘ (P S + S Pᵀ)) + (I - U Uᵀ) dA V S⁻¹` and `dV = V (F ∘ (S P + Pᵀ S)) + (I - V Vᵀ) dAᵀ U
//!   S⁻¹`; `Ā = U [(F ∘ (UᵀŪ - ŪᵀU)) S + diag(s̄) + S (F ∘ (VᵀV̄ - V̄ᵀV))] Vᵀ + (I - U Uᵀ) Ū S⁻¹
//!   Vᵀ + U S⁻¹ V̄ᵀ (I - V Vᵀ)`. The singular values' derivative needs only distinct ones to be
//!   unique (`Ā = U diag(s̄) Vᵀ`); the vectors' needs distinct and non-zero singular values.
//! - `lstsq`, for full column rank: with the residual `r = B - A X`, `dX = (AᵀA)⁻¹ (dAᵀ r + Aᵀ
//!   (dB - dA X))`; with `Z = (AᵀA)⁻¹ ḡ = R⁻¹ R⁻ᵀ ḡ`, `B̄ = A Z` and `Ā = r Zᵀ - B̄ Xᵀ`.
//!
//! The generic kernels are in `factor/kernels.rs`, `svd` and its factors' ops and rules in
//! `factor/svd.rs`.

use super::rules::symmetric_from_lower;
use super::{elements, lu_logabsdet, map_indexed, matrices, square, Batched};
use crate::element::Element;
use crate::error::{panicking_twin, ShapeError};
use crate::factorize::LuFactors;
use crate::tensor::Tensor;

mod kernels;
mod svd;

use kernels::*;

// ---- the ops ----------------------------------------------------------------------------------

/// The factors of each matrix of a batch, as tensors: `f` gives each matrix's factors as flat
/// row-major vectors, and `shapes` their trailing shapes.
fn factor_batch<T: Element, const K: usize>(
    x: &Tensor<T>,
    batch: usize,
    shapes: [&[usize]; K],
    mut f: impl FnMut(usize, &[T]) -> Result<[Vec<T>; K], ShapeError>,
) -> Result<[Tensor<T>; K], ShapeError> {
    let data = elements(x);
    let len = data.len().checked_div(batch).unwrap_or(0);
    let mut outs: [Vec<T>; K] = std::array::from_fn(|_| Vec::new());
    for b in 0..batch {
        let parts = f(b, &data[b * len..(b + 1) * len])?;
        for (out, part) in outs.iter_mut().zip(parts) {
            out.extend(part);
        }
    }
    let lead = &x.shape()[..x.ndim() - 2];
    let mut i = 0;
    Ok(outs.map(|out| {
        let mut shape = lead.to_vec();
        shape.extend_from_slice(shapes[i]);
        i += 1;
        Tensor::from_vec(out, &shape)
    }))
}

impl<T: Element> Tensor<T> {
    panicking_twin! {
        /// `X` with `A X = B` for `A = L Lᵀ`, given the lower Cholesky factor `L` of each matrix
        /// (`self`, `[.., n, n]`, its lower triangle read) and `B` of `[.., n, k]` (SciPy's
        /// `cho_solve((L, True), B)`). The leading axes of `L` and `B` broadcast, as NumPy's and
        /// JAX's.
        ///
        /// ```
        /// use rune_runtime::Tensor;
        /// let a = Tensor::from_vec(vec![4.0, 2.0, 2.0, 5.0], &[2, 2]);
        /// let b = Tensor::from_vec(vec![6.0, 7.0], &[2, 1]);
        /// let x = a.cholesky().cho_solve(&b);
        /// assert_eq!(x.to_vec(), vec![1.0, 1.0]);
        /// ```
        ///
        /// # Panics
        /// When the shapes are not `[.., n, n]` and `[.., n, k]` with leading axes that broadcast.
        pub fn cho_solve(&self, b: &Tensor<T>) -> Tensor<T> => self.try_cho_solve
    }

    /// Like [`Tensor::cho_solve`], returning an error naming both shapes when they do not fit.
    pub fn try_cho_solve(&self, b: &Tensor<T>) -> Result<Tensor<T>, ShapeError> {
        let rename = |e: ShapeError| e.reported_by("cho_solve");
        let y = self.try_solve_triangular(b, true, false).map_err(rename)?;
        self.try_solve_triangular(&y, true, true).map_err(rename)
    }

    panicking_twin! {
        /// `(sign, logabsdet)` of each matrix of `[.., n, n]`, NumPy's `slogdet`: `det A = sign ·
        /// exp(logabsdet)`, the sign `±1`, or `0` (and `logabsdet` `-inf`) for a singular matrix.
        ///
        /// In a `#[differentiable]` function `let (sign, logdet) = a.slogdet();` differentiates
        /// `logabsdet`; the sign is a constant.
        ///
        /// # Panics
        /// When the matrices are not square.
        pub fn slogdet(&self) -> (Tensor<T>, Tensor<T>) => self.try_slogdet
    }

    /// Like [`Tensor::slogdet`], returning an error for a shape that is not `[.., n, n]`.
    pub fn try_slogdet(&self) -> Result<(Tensor<T>, Tensor<T>), ShapeError> {
        // Both from one factorization of each matrix.
        let both = self.pivoted_each(
            "slogdet",
            |f| vec![lu_sign_det(f), lu_logabsdet(f)],
            |p| vec![p.sign_det(), p.logabsdet()],
        )?;
        let (sign, log) = both.chunks_exact(2).map(|x| (x[0], x[1])).unzip();
        let shape = &self.shape()[..self.ndim() - 2];
        Ok((Tensor::from_vec(sign, shape), Tensor::from_vec(log, shape)))
    }

    panicking_twin! {
        /// The sign of the determinant of each matrix of `[.., n, n]`: `±1`, or `0` for a singular
        /// matrix (the first result of [`Tensor::slogdet`]); a constant to AD.
        ///
        /// # Panics
        /// When the matrices are not square.
        pub fn sign_det(&self) -> Tensor<T> => self.try_sign_det
    }

    /// Like [`Tensor::sign_det`], returning an error for a shape that is not `[.., n, n]`.
    pub fn try_sign_det(&self) -> Result<Tensor<T>, ShapeError> {
        self.sign_det_named("sign_det")
    }

    fn sign_det_named(&self, op: &'static str) -> Result<Tensor<T>, ShapeError> {
        self.pivoted_reduce(op, lu_sign_det, super::Pivoted::sign_det)
    }

    panicking_twin! {
        /// The reduced QR factorization `A = Q R` of each matrix of `[.., m, n]` (NumPy's and JAX's
        /// `mode='reduced'`), `k = min(m, n)`: `Q [.., m, k]` with orthonormal columns and `R [..,
        /// k, n]` upper triangular with a positive diagonal. A tall or square matrix must have full
        /// column rank; a wide one `[X | Y]` is factored through its leading square block `X`,
        /// which must be invertible: `X = Q R_X`, `R = [R_X | Qᵀ Y]`.
        ///
        /// ```
        /// use rune_runtime::Tensor;
        /// let close = |x: Tensor<f64>, y: &[f64]| {
        ///     x.to_vec().iter().zip(y).all(|(a, b)| (a - b).abs() < 1e-15)
        /// };
        /// let a = Tensor::from_vec(vec![3.0, 1.0, 4.0, 2.0], &[2, 2]);
        /// let (q, r) = a.qr();
        /// assert!(close(q, &[0.6, -0.8, 0.8, 0.6]));
        /// assert!(close(r, &[5.0, 2.2, 0.0, 0.4]));
        /// // Wide: the same Q, and R's last column Qᵀ [2, 5].
        /// let (q, r) = Tensor::from_vec(vec![3.0, 1.0, 2.0, 4.0, 2.0, 5.0], &[2, 3]).qr();
        /// assert!(close(q, &[0.6, -0.8, 0.8, 0.6]));
        /// assert!(close(r, &[5.0, 2.2, 5.2, 0.0, 0.4, 1.4]));
        /// ```
        ///
        /// # Panics
        /// When the tensor has fewer than two axes, or a matrix does not have full rank in its
        /// leading `k` columns.
        pub fn qr(&self) -> (Tensor<T>, Tensor<T>) => self.try_qr
    }

    /// Like [`Tensor::qr`], returning an error for fewer than two axes or a rank-deficient
    /// matrix.
    pub fn try_qr(&self) -> Result<(Tensor<T>, Tensor<T>), ShapeError> {
        self.qr_named("qr")
    }

    fn qr_named(&self, op: &'static str) -> Result<(Tensor<T>, Tensor<T>), ShapeError> {
        let (batch, m, n) = matrices(op, self.shape())?;
        let k = m.min(n);
        let [q, r] = factor_batch(self, batch, [&[m, k], &[k, n]], |b, a| {
            let (q, r) = qr_factors(a, m, n).map_err(|j| {
                ShapeError::singular(
                    op,
                    format!(
                        "matrix {b} of the batch of shape {:?} is rank-deficient (column {j} \
                         depends on the ones before it)",
                        self.shape()
                    ),
                )
            })?;
            Ok([q, r])
        })?;
        Ok((q, r))
    }

    panicking_twin! {
        /// `Q` of [`Tensor::qr`].
        ///
        /// # Panics
        /// As [`Tensor::qr`].
        pub fn qr_q(&self) -> Tensor<T> => self.try_qr_q
    }

    /// Like [`Tensor::qr_q`], returning an error as [`Tensor::try_qr`].
    pub fn try_qr_q(&self) -> Result<Tensor<T>, ShapeError> {
        Ok(self.qr_named("qr_q")?.0)
    }

    panicking_twin! {
        /// `R` of [`Tensor::qr`].
        ///
        /// # Panics
        /// As [`Tensor::qr`].
        pub fn qr_r(&self) -> Tensor<T> => self.try_qr_r
    }

    /// Like [`Tensor::qr_r`], returning an error as [`Tensor::try_qr`].
    pub fn try_qr_r(&self) -> Result<Tensor<T>, ShapeError> {
        Ok(self.qr_named("qr_r")?.1)
    }

    panicking_twin! {
        /// The eigenvalues `w [.., n]` (ascending) and eigenvectors `V [.., n, n]` (columns, each
        /// signed so that its largest component is positive) of each symmetric matrix of `[.., n,
        /// n]`, whose lower triangle is read: `A = V diag(w) Vᵀ`.
        ///
        /// ```
        /// use rune_runtime::Tensor;
        /// let close = |x: Tensor<f64>, y: &[f64]| {
        ///     x.to_vec().iter().zip(y).all(|(a, b)| (a - b).abs() < 1e-15)
        /// };
        /// // The upper triangle (here 0) is not read: the matrix is [[2, 2], [2, 5]].
        /// let a = Tensor::from_vec(vec![2.0, 0.0, 2.0, 5.0], &[2, 2]);
        /// let (w, v) = a.eigh();
        /// assert!(close(w, &[1.0, 6.0]));
        /// // The columns [2, -1] / √5 and [1, 2] / √5.
        /// let r = 0.2f64.sqrt();
        /// assert!(close(v, &[2.0 * r, r, -r, 2.0 * r]));
        /// ```
        ///
        /// # Panics
        /// When the matrices are not square.
        pub fn eigh(&self) -> (Tensor<T>, Tensor<T>) => self.try_eigh
    }

    /// Like [`Tensor::eigh`], returning an error for a shape that is not `[.., n, n]`.
    pub fn try_eigh(&self) -> Result<(Tensor<T>, Tensor<T>), ShapeError> {
        self.eigh_named("eigh")
    }

    fn eigh_named(&self, op: &'static str) -> Result<(Tensor<T>, Tensor<T>), ShapeError> {
        let (batch, n) = square(op, self.shape())?;
        let [w, v] = factor_batch(self, batch, [&[n], &[n, n]], |_, a| {
            let (w, v) = eigh_kernel(a, n);
            Ok([w, v])
        })?;
        Ok((w, v))
    }

    panicking_twin! {
        /// The eigenvalues of [`Tensor::eigh`], ascending.
        ///
        /// # Panics
        /// When the matrices are not square.
        pub fn eigvalsh(&self) -> Tensor<T> => self.try_eigvalsh
    }

    /// Like [`Tensor::eigvalsh`], returning an error for a shape that is not `[.., n, n]`.
    pub fn try_eigvalsh(&self) -> Result<Tensor<T>, ShapeError> {
        Ok(self.eigh_named("eigvalsh")?.0)
    }

    panicking_twin! {
        /// The eigenvectors of [`Tensor::eigh`], as the columns of `[.., n, n]`.
        ///
        /// # Panics
        /// When the matrices are not square.
        pub fn eigh_vectors(&self) -> Tensor<T> => self.try_eigh_vectors
    }

    /// Like [`Tensor::eigh_vectors`], returning an error for a shape that is not `[.., n, n]`.
    pub fn try_eigh_vectors(&self) -> Result<Tensor<T>, ShapeError> {
        Ok(self.eigh_named("eigh_vectors")?.1)
    }

    panicking_twin! {
        /// The least-squares solution `X [.., n, k]` minimising `‖A X - B‖` for each
        /// full-column-rank matrix `A` of `[.., m, n]`, `m >= n`, and `B` of `[.., m, k]`, by QR.
        /// The leading axes of `A` and `B` broadcast, as NumPy's and JAX's.
        ///
        /// ```
        /// use rune_runtime::Tensor;
        /// // The line through (0, 1), (1, 2), (2, 4): intercept 5/6, slope 3/2.
        /// let a = Tensor::from_vec(vec![1.0, 0.0, 1.0, 1.0, 1.0, 2.0], &[3, 2]);
        /// let b = Tensor::from_vec(vec![1.0, 2.0, 4.0], &[3, 1]);
        /// let x: Vec<f64> = a.lstsq(&b).to_vec();
        /// assert!((x[0] - 5.0 / 6.0).abs() < 1e-14 && (x[1] - 1.5).abs() < 1e-14);
        /// ```
        ///
        /// # Panics
        /// When the shapes do not fit (or their leading axes do not broadcast), `m < n`, or a
        /// matrix does not have full column rank.
        pub fn lstsq(&self, b: &Tensor<T>) -> Tensor<T> => self.try_lstsq
    }

    /// Like [`Tensor::lstsq`], returning an error when the shapes do not fit, `m < n`, or a
    /// matrix is rank-deficient.
    pub fn try_lstsq(&self, b: &Tensor<T>) -> Result<Tensor<T>, ShapeError> {
        let (a, bs) = (self.shape(), b.shape());
        let fits = a.len() >= 2 && bs.len() >= 2 && bs[bs.len() - 2] == a[a.len() - 2];
        if !fits {
            return Err(ShapeError::new(
                "lstsq",
                format!(
                    "expects a matrix [.., m, n] and a right-hand side [.., m, k] with m rows, \
                     their leading axes broadcasting: matrix {a:?}, right-hand side {bs:?}"
                ),
            ));
        }
        Batched::new("lstsq", a, bs)?;
        if a[a.len() - 2] < a[a.len() - 1] {
            return Err(ShapeError::new(
                "lstsq",
                format!(
                    "expects matrices [.., m, n] with m >= n (a wide system has many \
                     least-squares solutions), got shape {a:?}"
                ),
            ));
        }
        let (q, r) = self.qr_named("lstsq")?;
        Ok(r.solve_triangular(&q.t().matmul(b), false, false))
    }
}

// ---- rules ------------------------------------------------------------------------------------

/// Rules of the factorizations of this module (see its conventions).
pub mod rules {
    use super::super::rules::{fold_onto_lower, rhs_tangent};
    use super::*;
    use crate::broadcast::sum_to_shape;
    use crate::ops::combine::concat;

    pub use super::svd::rules::*;

    /// `Fᵢⱼ = 1 / (xⱼ - xᵢ)` off the diagonal, `0` on it, for each vector `x [.., n]`.
    pub(super) fn gap_inverses<T: Element>(x: &Tensor<T>) -> Tensor<T> {
        let gaps = x.expand_dims(-2) - x.expand_dims(-1);
        map_indexed(
            &gaps,
            |i, j, v| {
                if i == j {
                    T::zero()
                } else {
                    T::one() / v
                }
            },
        )
    }

    /// `x - u (uᵀ x)`: `x` projected off the columns of `u`.
    pub(super) fn project_off<T: Element>(u: &Tensor<T>, x: &Tensor<T>) -> Tensor<T> {
        x - &u.matmul(&u.t().matmul(x))
    }

    /// `s [.., k]` as `[.., 1, k]`: `X * as_columns(s)` is `X diag(s)`, column `j` scaled by
    /// `sⱼ`.
    pub(super) fn as_columns<T: Element>(s: &Tensor<T>) -> Tensor<T> {
        s.expand_dims(-2)
    }

    /// `s [.., k]` as `[.., k, 1]`: `X * as_rows(s)` is `diag(s) X`, row `i` scaled by `sᵢ`.
    pub(super) fn as_rows<T: Element>(s: &Tensor<T>) -> Tensor<T> {
        s.expand_dims(-1)
    }

    /// JVP of [`Tensor::sign_det`]: zero (the sign is piecewise constant).
    #[must_use]
    pub fn sign_det_jvp<T: Element>(da: &Tensor<T>) -> Tensor<T> {
        Tensor::zeros(&da.shape()[..da.ndim().saturating_sub(2)])
    }

    /// VJP of [`Tensor::sign_det`]: zero.
    #[must_use]
    pub fn sign_det_vjp<T: Element>(_g: &Tensor<T>, shape: &[usize]) -> Tensor<T> {
        Tensor::zeros(shape)
    }

    /// JVP of [`Tensor::cho_solve`], from the factor `l`, the solution `x` and the tangents:
    /// `A⁻¹ (dB - dA X)` with `dA = dL Lᵀ + L dLᵀ` (the lower triangles), over the broadcast
    /// batch.
    #[track_caller]
    #[must_use]
    pub fn cho_solve_jvp<T: Element>(
        l: &Tensor<T>,
        x: &Tensor<T>,
        dl: Option<&Tensor<T>>,
        db: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        let mut rhs = rhs_tangent(db, x.shape());
        if let Some(dl) = dl {
            let (lo, dlo) = (l.tril(0), dl.tril(0));
            rhs -= dlo.matmul(&lo.t().matmul(x)) + lo.matmul(&dlo.t().matmul(x));
        }
        l.cho_solve(&rhs)
    }

    /// VJP of [`Tensor::cho_solve`] for the factor, from `l` and the solution `x`: `-tril((B̄ Xᵀ
    /// + X B̄ᵀ) L)` with `B̄ = A⁻¹ ḡ`, summed over the batch axes `l` was broadcast along.
    #[track_caller]
    #[must_use]
    pub fn cho_solve_vjp_lhs<T: Element>(g: &Tensor<T>, l: &Tensor<T>, x: &Tensor<T>) -> Tensor<T> {
        // `(B̄ Xᵀ + X B̄ᵀ) L = B̄ (Lᵀ X)ᵀ + X (Lᵀ B̄)ᵀ`: products with the `n × k` right-hand
        // sides, no `n × n × n` one.
        let gb = l.cho_solve(g);
        let lt = l.tril(0).t();
        let s = gb.matmul(&lt.matmul(x).t()) + x.matmul(&lt.matmul(&gb).t());
        -sum_to_shape(&s, l.shape()).tril(0)
    }

    /// VJP of [`Tensor::cho_solve`] for `b` (of shape `b_shape`), from the factor `l`: `A⁻¹ ḡ`,
    /// summed over the batch axes `b` was broadcast along.
    #[track_caller]
    #[must_use]
    pub fn cho_solve_vjp_rhs<T: Element>(
        g: &Tensor<T>,
        l: &Tensor<T>,
        b_shape: &[usize],
    ) -> Tensor<T> {
        sum_to_shape(&l.cho_solve(g), b_shape)
    }

    /// Columns `lo..hi` of each matrix of `x`.
    pub(super) fn columns<T: Element>(x: &Tensor<T>, lo: usize, hi: usize) -> Tensor<T> {
        let mut ranges: Vec<(usize, usize)> = x.shape().iter().map(|&d| (0, d)).collect();
        *ranges.last_mut().expect("a matrix has two axes") = (lo, hi);
        x.shrink(&ranges)
    }

    /// The rows and columns of each matrix of `a`.
    pub(super) fn matrix_dims<T: Element>(a: &Tensor<T>) -> (usize, usize) {
        let s = a.shape();
        (s[s.len() - 2], s[s.len() - 1])
    }

    /// `(dQ, dR)` of the QR factorization `Q R` of a matrix with at least as many rows as
    /// columns, along `da`.
    pub(super) fn tall_qr_tangents<T: Element>(
        q: &Tensor<T>,
        r: &Tensor<T>,
        da: &Tensor<T>,
    ) -> (Tensor<T>, Tensor<T>) {
        // C = Qᵀ dA R⁻¹, i.e. Cᵀ = R⁻ᵀ (dAᵀ Q).
        let c = r.solve_triangular(&da.t().matmul(q), false, true).t();
        let low = c.tril(-1);
        let upper = &c - &(&low - &low.t());
        let dr = upper.matmul(r);
        let dq = r.solve_triangular(&da.t(), false, true).t() - q.matmul(&upper);
        (dq, dr)
    }

    /// `(dQ, dR)` of the QR factorization of `a` along `da`; for a wide `a = [X | Y]` (`X`
    /// square), `X`'s and `dR_Y = dQᵀ Y + Qᵀ dY`.
    #[track_caller]
    pub(super) fn qr_tangents<T: Element>(a: &Tensor<T>, da: &Tensor<T>) -> (Tensor<T>, Tensor<T>) {
        let (q, r) = a.qr();
        let (m, n) = matrix_dims(a);
        if m >= n {
            return tall_qr_tangents(&q, &r, da);
        }
        let (dq, drx) = tall_qr_tangents(&q, &columns(&r, 0, m), &columns(da, 0, m));
        let dry = dq.t().matmul(&columns(a, m, n)) + q.t().matmul(&columns(da, m, n));
        (dq, concat(&[drx, dry], -1))
    }

    /// `Ā` of the QR factorization `Q R` of a matrix with at least as many rows as columns, from
    /// the cotangents of `Q` and `R`.
    pub(super) fn tall_qr_cotangent<T: Element>(
        q: &Tensor<T>,
        r: &Tensor<T>,
        gq: Option<&Tensor<T>>,
        gr: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        let mut m = Tensor::zeros(r.shape());
        if let Some(gr) = gr {
            m += r.matmul(&gr.t());
        }
        if let Some(gq) = gq {
            m -= gq.t().matmul(q);
        }
        let mut b = q.matmul(&symmetric_from_lower(&m));
        if let Some(gq) = gq {
            b += gq;
        }
        // B R⁻ᵀ = (R⁻¹ Bᵀ)ᵀ.
        r.solve_triangular(&b.t(), false, false).t()
    }

    /// `Ā` of the QR factorization of `a` from the cotangents of `Q` and `R`; for a wide `a =
    /// [X | Y]` (`X` square, `R = [R_X | Qᵀ Y]`), `X̄` is the square factorization's with `Q̄ + Y
    /// R̄_Yᵀ`, and `Ȳ = Q R̄_Y`.
    #[track_caller]
    pub(super) fn qr_cotangent<T: Element>(
        a: &Tensor<T>,
        gq: Option<&Tensor<T>>,
        gr: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        let (q, r) = a.qr();
        let (m, n) = matrix_dims(a);
        if m >= n {
            return tall_qr_cotangent(&q, &r, gq, gr);
        }
        let y = columns(a, m, n);
        let mut gq = gq.cloned().unwrap_or_else(|| Tensor::zeros(q.shape()));
        let (grx, gy) = match gr {
            Some(gr) => {
                let gry = columns(gr, m, n);
                gq += y.matmul(&gry.t());
                (Some(columns(gr, 0, m)), q.matmul(&gry))
            }
            None => (None, Tensor::zeros(y.shape())),
        };
        let gx = tall_qr_cotangent(&q, &columns(&r, 0, m), Some(&gq), grx.as_ref());
        concat(&[gx, gy], -1)
    }

    /// JVP of [`Tensor::qr_q`], from `a`.
    #[track_caller]
    #[must_use]
    pub fn qr_q_jvp<T: Element>(a: &Tensor<T>, da: &Tensor<T>) -> Tensor<T> {
        qr_tangents(a, da).0
    }

    /// VJP of [`Tensor::qr_q`], from `a`.
    #[track_caller]
    #[must_use]
    pub fn qr_q_vjp<T: Element>(g: &Tensor<T>, a: &Tensor<T>) -> Tensor<T> {
        qr_cotangent(a, Some(g), None)
    }

    /// JVP of [`Tensor::qr_r`], from `a`.
    #[track_caller]
    #[must_use]
    pub fn qr_r_jvp<T: Element>(a: &Tensor<T>, da: &Tensor<T>) -> Tensor<T> {
        qr_tangents(a, da).1
    }

    /// VJP of [`Tensor::qr_r`], from `a`.
    #[track_caller]
    #[must_use]
    pub fn qr_r_vjp<T: Element>(g: &Tensor<T>, a: &Tensor<T>) -> Tensor<T> {
        qr_cotangent(a, None, Some(g))
    }

    /// `(V, Vᵀ dA_s V)` for the eigenvectors `V` of `a` and the symmetric tangent `dA_s` of `da`'s
    /// lower triangle.
    #[track_caller]
    pub(super) fn eigh_rotated<T: Element>(
        a: &Tensor<T>,
        da: &Tensor<T>,
    ) -> (Tensor<T>, Tensor<T>, Tensor<T>) {
        let (w, v) = a.eigh();
        let p = v.t().matmul(&symmetric_from_lower(da)).matmul(&v);
        (w, v, p)
    }

    /// JVP of [`Tensor::eigvalsh`], from `a`: `diag(Vᵀ dA V)`.
    #[track_caller]
    #[must_use]
    pub fn eigvalsh_jvp<T: Element>(a: &Tensor<T>, da: &Tensor<T>) -> Tensor<T> {
        eigh_rotated(a, da).2.diagonal()
    }

    /// VJP of [`Tensor::eigvalsh`], from `a`: `V diag(w̄) Vᵀ`, folded onto the lower triangle.
    #[track_caller]
    #[must_use]
    pub fn eigvalsh_vjp<T: Element>(g: &Tensor<T>, a: &Tensor<T>) -> Tensor<T> {
        let v = a.eigh_vectors();
        fold_onto_lower(&(&v * &as_columns(g)).matmul(&v.t()))
    }

    /// JVP of [`Tensor::eigh_vectors`], from `a`: `V (F ∘ Vᵀ dA V)`.
    #[track_caller]
    #[must_use]
    pub fn eigh_vectors_jvp<T: Element>(a: &Tensor<T>, da: &Tensor<T>) -> Tensor<T> {
        let (w, v, p) = eigh_rotated(a, da);
        v.matmul(&(gap_inverses(&w) * p))
    }

    /// VJP of [`Tensor::eigh_vectors`], from `a`: `V (F ∘ Vᵀ V̄) Vᵀ`, folded onto the lower
    /// triangle.
    #[track_caller]
    #[must_use]
    pub fn eigh_vectors_vjp<T: Element>(g: &Tensor<T>, a: &Tensor<T>) -> Tensor<T> {
        let (w, v) = a.eigh();
        let inner = gap_inverses(&w) * v.t().matmul(g);
        fold_onto_lower(&v.matmul(&inner).matmul(&v.t()))
    }

    /// `(AᵀA)⁻¹ y = R⁻¹ R⁻ᵀ y` for the `R` of `a`'s QR factorization.
    #[track_caller]
    pub(super) fn gram_solve<T: Element>(a: &Tensor<T>, y: &Tensor<T>) -> Tensor<T> {
        let r = a.qr_r();
        let z = r.solve_triangular(y, false, true);
        r.solve_triangular(&z, false, false)
    }

    /// JVP of [`Tensor::lstsq`], from `a`, `b`, the solution `x` and the tangents: `(AᵀA)⁻¹
    /// (dAᵀ r + Aᵀ (dB - dA X))`, `r = B - A X`, over the broadcast batch.
    #[track_caller]
    #[must_use]
    pub fn lstsq_jvp<T: Element>(
        a: &Tensor<T>,
        b: &Tensor<T>,
        x: &Tensor<T>,
        da: Option<&Tensor<T>>,
        db: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        let mut y = Tensor::zeros(x.shape());
        if let Some(db) = db {
            y += a.t().matmul(db);
        }
        if let Some(da) = da {
            let residual = b - &a.matmul(x);
            y += da.t().matmul(&residual) - a.t().matmul(&da.matmul(x));
        }
        gram_solve(a, &y)
    }

    /// VJP of [`Tensor::lstsq`] for `a`, from `a`, `b` and the solution `x`: `r Zᵀ - A Z Xᵀ`,
    /// `Z = (AᵀA)⁻¹ ḡ`, summed over the batch axes `a` was broadcast along.
    #[track_caller]
    #[must_use]
    pub fn lstsq_vjp_lhs<T: Element>(
        g: &Tensor<T>,
        a: &Tensor<T>,
        b: &Tensor<T>,
        x: &Tensor<T>,
    ) -> Tensor<T> {
        let z = gram_solve(a, g);
        let r = b - &a.matmul(x);
        sum_to_shape(&(r.matmul(&z.t()) - a.matmul(&z).matmul(&x.t())), a.shape())
    }

    /// VJP of [`Tensor::lstsq`] for `b` (of shape `b_shape`), from `a`: `A (AᵀA)⁻¹ ḡ`, summed
    /// over the batch axes `b` was broadcast along.
    #[track_caller]
    #[must_use]
    pub fn lstsq_vjp_rhs<T: Element>(g: &Tensor<T>, a: &Tensor<T>, b_shape: &[usize]) -> Tensor<T> {
        sum_to_shape(&a.matmul(&gram_solve(a, g)), b_shape)
    }
}
