//! `cholesky`, `solve_triangular`, `solve`, `inv`, `det` and `logabsdet` on batches of matrices,
//! and their rules.

use super::*;
use crate::error::{panicking_twin, OrPanic};
use crate::factorize::CholeskyVjpKernel;

impl<T: Element> Tensor<T> {
    panicking_twin! {
        /// The lower Cholesky factor `L` of each symmetric positive-definite matrix `A` of
        /// `[.., n, n]`, `A = L Lᵀ`, reading only the lower triangle of `A`.
        ///
        /// ```
        /// use rune_runtime::Tensor;
        /// let a = Tensor::from_vec(vec![4.0, 2.0, 2.0, 5.0], &[2, 2]);
        /// assert_eq!(a.cholesky().to_vec(), vec![2.0, 0.0, 1.0, 2.0]);
        /// ```
        ///
        /// # Panics
        /// When the matrices are not square, or one is not positive definite.
        pub fn cholesky(&self) -> Tensor<T> => self.try_cholesky
    }

    /// Like [`Tensor::cholesky`], returning an error for a shape that is not `[.., n, n]` or a
    /// matrix that is not positive definite.
    pub fn try_cholesky(&self) -> Result<Tensor<T>, ShapeError> {
        let (batch, n) = square("cholesky", self.shape())?;
        let data = elements(self);
        let mut out = vec![T::zero(); data.len()];
        for b in 0..batch {
            let a = &data[b * n * n..(b + 1) * n * n];
            let l = &mut out[b * n * n..(b + 1) * n * n];
            if T::factor_kernels().is_some_and(|k| (k.cholesky)(a, n, l)) {
                continue;
            }
            // A matrix faer rejects goes through the generic kernel, whose error names the pivot.
            let generic = cholesky_kernel(a, n).map_err(|(j, d)| {
                ShapeError::singular(
                    "cholesky",
                    format!(
                        "matrix {b} of the batch of shape {:?} is not positive definite (pivot \
                         {j} is {d})",
                        self.shape()
                    ),
                )
            })?;
            l.copy_from_slice(&generic);
        }
        Ok(Tensor::from_vec(out, self.shape()))
    }

    panicking_twin! {
        /// `X` with `op(T) X = B` for each matrix `A` of `[.., n, n]` and right-hand side `B` of
        /// `[.., n, k]`, where `T` is the lower (`lower`) or upper triangle of `A` and `op(T)` is
        /// `Tᵀ` when `transpose` (SciPy's `solve_triangular(a, b, lower, trans)`). The leading axes
        /// of `A` and `B` broadcast, as JAX's: `[2, 1, 3, 3]` and `[5, 3, 2]` give `[2, 5, 3, 2]`.
        ///
        /// # Panics
        /// When the shapes are not `[.., n, n]` and `[.., n, k]` with leading axes that broadcast.
        pub fn solve_triangular(&self, b: &Tensor<T>, lower: bool, transpose: bool) -> Tensor<T>
            => self.try_solve_triangular
    }

    /// Like [`Tensor::solve_triangular`], returning an error naming both shapes when they do not
    /// fit.
    pub fn try_solve_triangular(
        &self,
        b: &Tensor<T>,
        lower: bool,
        transpose: bool,
    ) -> Result<Tensor<T>, ShapeError> {
        let (sys, n, k) = system("solve_triangular", self.shape(), b.shape())?;
        let shape = sys.shape::<T>("solve_triangular", n, k)?;
        let (a, rhs) = (elements(self), elements(b));
        let mut x = Vec::with_capacity(sys.pairs.len() * n * k);
        for &(ia, ib) in &sys.pairs {
            let start = x.len();
            x.extend_from_slice(&rhs[ib * n * k..(ib + 1) * n * k]);
            let (t, b) = (&a[ia * n * n..(ia + 1) * n * n], &mut x[start..]);
            match T::factor_kernels() {
                Some(kernels) => (kernels.triangular)(t, n, b, k, lower, transpose),
                None => triangular_kernel(t, n, b, k, lower, transpose),
            }
        }
        Ok(Tensor::from_vec(x, &shape))
    }

    panicking_twin! {
        /// `X = A⁻¹ B` for each matrix `A` of `[.., n, n]` and right-hand side `B` of `[.., n, k]`,
        /// by LU with partial pivoting. The leading axes of `A` and `B` broadcast, as NumPy's and
        /// JAX's; each matrix of `A` is factored once.
        ///
        /// ```
        /// use rune_runtime::Tensor;
        /// // One matrix against a batch of two right-hand sides: X is [2, 2, 1].
        /// let a = Tensor::from_vec(vec![2.0, 0.0, 0.0, 4.0], &[2, 2]);
        /// let b = Tensor::from_vec(vec![2.0, 4.0, 6.0, 8.0], &[2, 2, 1]);
        /// assert_eq!(a.solve(&b).to_vec(), vec![1.0, 1.0, 3.0, 2.0]);
        /// ```
        ///
        /// # Panics
        /// When the shapes do not fit, or a matrix is singular.
        pub fn solve(&self, b: &Tensor<T>) -> Tensor<T> => self.try_solve
    }

    /// Like [`Tensor::solve`], returning an error when the shapes do not fit or a matrix is
    /// singular.
    pub fn try_solve(&self, b: &Tensor<T>) -> Result<Tensor<T>, ShapeError> {
        let (sys, n, k) = system("solve", self.shape(), b.shape())?;
        let shape = sys.shape::<T>("solve", n, k)?;
        let x = match T::factor_kernels() {
            Some(kernels) => self.solve_each(
                b,
                &sys,
                |a| (kernels.lu)(a, n),
                |f| f.pivots.iter().any(|&p| p == T::zero()),
                |f, rhs| {
                    let mut x = rhs.to_vec();
                    (kernels.lu_solve)(f, &mut x, k);
                    x
                },
            ),
            None => self.solve_each(
                b,
                &sys,
                |a| lu_kernel(a, n),
                |f| f.singular,
                |f, rhs| f.solve(rhs, n, k),
            ),
        }?;
        Ok(Tensor::from_vec(x, &shape))
    }

    /// The solutions of `solve` for each pair of the batch, row-major: `factor` factors each
    /// matrix of `self` once, however many right-hand sides it meets; `solve` solves with the
    /// factors, unless `singular` finds them singular.
    fn solve_each<F>(
        &self,
        b: &Tensor<T>,
        sys: &Batched,
        factor: impl Fn(&[T]) -> F,
        singular: impl Fn(&F) -> bool,
        solve: impl Fn(&F, &[T]) -> Vec<T>,
    ) -> Result<Vec<T>, ShapeError> {
        let n = self.shape()[self.ndim() - 1];
        let k = b.shape()[b.ndim() - 1];
        let (a, rhs) = (elements(self), elements(b));
        let mut factors: Vec<Option<F>> = std::iter::repeat_with(|| None)
            .take(self.shape()[..self.ndim() - 2].iter().product())
            .collect();
        let mut x = Vec::with_capacity(sys.pairs.len() * n * k);
        for &(ia, ib) in &sys.pairs {
            let f = factors[ia].get_or_insert_with(|| factor(&a[ia * n * n..(ia + 1) * n * n]));
            if singular(f) {
                return Err(singular_error("solve", ia, self.shape()));
            }
            x.extend(solve(f, &rhs[ib * n * k..(ib + 1) * n * k]));
        }
        Ok(x)
    }

    panicking_twin! {
        /// The inverse of each matrix of `[.., n, n]`.
        ///
        /// # Panics
        /// When the matrices are not square, or one is singular.
        pub fn inv(&self) -> Tensor<T> => self.try_inv
    }

    /// Like [`Tensor::inv`], returning an error for a shape that is not `[.., n, n]` or a
    /// singular matrix.
    pub fn try_inv(&self) -> Result<Tensor<T>, ShapeError> {
        let (batch, n) = square("inv", self.shape())?;
        if let Some(kernels) = T::factor_kernels() {
            // faer inverts from the factors (triangular inverses and their product), 2n³
            // against the 8n³/3 of solving with the identity.
            let a = elements(self);
            let mut out = Vec::with_capacity(a.len());
            for i in 0..batch {
                let f = (kernels.lu)(&a[i * n * n..(i + 1) * n * n], n);
                if f.pivots.iter().any(|&p| p == T::zero()) {
                    return Err(singular_error("inv", i, self.shape()));
                }
                out.extend((kernels.lu_inverse)(&f, false));
            }
            return Ok(Tensor::from_vec(out, self.shape()));
        }
        let eye = Tensor::eye(n).broadcast_to(self.shape());
        self.try_solve(&eye).map_err(|e| e.reported_by("inv"))
    }

    panicking_twin! {
        /// The determinant of each matrix of `[.., n, n]`: shape `[..]`. Its gradient, the cofactor
        /// matrix `adj(A)ᵀ`, exists at every matrix, singular ones included: at the rank-one
        /// `[[1, 2], [3, 6]]` the determinant is 0 and its gradient `[[6, -3], [-2, 1]]`.
        ///
        /// ```
        /// use rune_runtime::Tensor;
        /// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0, 6.0], &[2, 2]);
        /// assert_eq!(a.det().item(), 0.0);
        /// ```
        ///
        /// # Panics
        /// When the matrices are not square.
        pub fn det(&self) -> Tensor<T> => self.try_det
    }

    /// Like [`Tensor::det`], returning an error for a shape that is not `[.., n, n]`.
    pub fn try_det(&self) -> Result<Tensor<T>, ShapeError> {
        self.pivoted_reduce(
            "det",
            |f| f.sign * f.pivots.iter().copied().product::<T>(),
            Pivoted::det,
        )
    }

    panicking_twin! {
        /// `ln |det A|` of each matrix of `[.., n, n]` (`-inf` for a singular one): shape `[..]`;
        /// the second result of [`Tensor::slogdet`], whose first is [`Tensor::sign_det`]. Its
        /// gradient `A⁻ᵀ` is not finite at a singular matrix ([`rules::logabsdet_vjp`] says what
        /// it gives there).
        ///
        /// # Panics
        /// When the matrices are not square.
        pub fn logabsdet(&self) -> Tensor<T> => self.try_logabsdet
    }

    /// Like [`Tensor::logabsdet`], returning an error for a shape that is not `[.., n, n]`.
    pub fn try_logabsdet(&self) -> Result<Tensor<T>, ShapeError> {
        self.pivoted_reduce("logabsdet", lu_logabsdet, Pivoted::logabsdet)
    }

    /// `f` of the completely pivoted LU factorization of each matrix, as a tensor of the
    /// leading axes; for `f32` and `f64`, `fast` of faer's partial-pivot LU instead where it
    /// finds the matrix clearly invertible (see [`clearly_invertible`]).
    pub(super) fn pivoted_reduce(
        &self,
        op: &'static str,
        fast: impl Fn(&LuFactors<T>) -> T,
        f: impl Fn(&Pivoted<T>) -> T,
    ) -> Result<Tensor<T>, ShapeError> {
        Ok(Tensor::from_vec(
            self.pivoted_each(op, |x| vec![fast(x)], |p| vec![f(p)])?,
            &self.shape()[..self.ndim() - 2],
        ))
    }

    /// The matrix `f` gives for the completely pivoted LU factorization of each matrix, in the
    /// shape of `self`; `fast` as in [`Tensor::pivoted_reduce`].
    pub(super) fn pivoted_map(
        &self,
        op: &'static str,
        fast: impl Fn(&LuFactors<T>) -> Vec<T>,
        f: impl Fn(&Pivoted<T>) -> Vec<T>,
    ) -> Result<Tensor<T>, ShapeError> {
        Ok(Tensor::from_vec(
            self.pivoted_each(op, fast, f)?,
            self.shape(),
        ))
    }

    /// What `fast` (faer's LU of a clearly invertible matrix) or else `f` (the generic complete
    /// pivoting) gives for each matrix, concatenated.
    pub(super) fn pivoted_each(
        &self,
        op: &'static str,
        fast: impl Fn(&LuFactors<T>) -> Vec<T>,
        f: impl Fn(&Pivoted<T>) -> Vec<T>,
    ) -> Result<Vec<T>, ShapeError> {
        let (batch, n) = square(op, self.shape())?;
        let a = elements(self);
        // Up to `SMALL_DET` rows complete pivoting costs little, and it keeps `f32`/`f64`
        // values the exact primal parts of the dual numbers' (which `f_hvp` checks compare).
        let kernels = T::factor_kernels().filter(|_| n > SMALL_DET);
        let mut out = Vec::new();
        for i in 0..batch {
            let a = &a[i * n * n..(i + 1) * n * n];
            let lu = kernels.map(|k| (k.lu)(a, n)).filter(clearly_invertible);
            match lu {
                Some(lu) => out.extend(fast(&lu)),
                None => out.extend(f(&pivoted_kernel(a, n))),
            }
        }
        Ok(out)
    }
}

/// Rules of these ops (see `ops::decomp`'s conventions).
pub mod rules {
    use super::super::rules::{
        cofactors, fold_onto_lower, log_det_gradient, matrix_inner, per_matrix, phi, rhs_tangent,
        symmetric_from_lower, triangle,
    };
    use super::*;
    use crate::broadcast::sum_to_shape;

    /// JVP of [`Tensor::cholesky`], from the factor `l`: `L Φ(L⁻¹ dA_s L⁻ᵀ)`, where `dA_s` is
    /// the symmetric matrix of the tangent's lower triangle.
    #[track_caller]
    #[must_use]
    pub fn cholesky_jvp<T: Element>(l: &Tensor<T>, da: &Tensor<T>) -> Tensor<T> {
        let ds = symmetric_from_lower(da);
        let left = l.solve_triangular(&ds, true, false);
        let x = l.solve_triangular(&left.t(), true, false);
        l.matmul(&phi(&x))
    }

    /// VJP of [`Tensor::cholesky`], from the factor `l`: `L⁻ᵀ Φ(Lᵀ tril(ḡ)) L⁻¹`, folded onto
    /// the lower triangle that the op reads.
    #[track_caller]
    #[must_use]
    pub fn cholesky_vjp<T: Element>(g: &Tensor<T>, l: &Tensor<T>) -> Tensor<T> {
        if let Some(kernels) = T::factor_kernels() {
            return cholesky_vjp_fast(g, l, kernels.cholesky_vjp);
        }
        let p = phi(&l.t().matmul(&g.tril(0)));
        let z = l.solve_triangular(&p, true, true);
        let a = l.solve_triangular(&z.t(), true, true).t();
        fold_onto_lower(&a)
    }

    /// [`cholesky_vjp`] by the element type's kernel, one matrix of the batch at a time.
    #[track_caller]
    fn cholesky_vjp_fast<T: Element>(
        g: &Tensor<T>,
        l: &Tensor<T>,
        kernel: CholeskyVjpKernel<T>,
    ) -> Tensor<T> {
        let (batch, n) = square("cholesky_vjp", l.shape()).or_panic();
        if g.shape() != l.shape() {
            panic!(
                "cholesky_vjp: the cotangent has shape {:?}, the factor {:?}",
                g.shape(),
                l.shape()
            );
        }
        let mut out = vec![T::zero(); batch * n * n];
        if n > 0 {
            let (gs, ls) = (g.standard_layout(), l.standard_layout());
            let gs = gs
                .as_slice()
                .expect("a standard-layout tensor is contiguous");
            let ls = ls
                .as_slice()
                .expect("a standard-layout tensor is contiguous");
            for ((gm, lm), om) in gs
                .chunks_exact(n * n)
                .zip(ls.chunks_exact(n * n))
                .zip(out.chunks_exact_mut(n * n))
            {
                kernel(gm, lm, n, om);
            }
        }
        Tensor::from_vec(out, l.shape())
    }

    /// JVP of [`Tensor::solve_triangular`], from `a`, the solution `x` and the tangents:
    /// `op(T)⁻¹ (dB - op(dT) X)` (over the broadcast batch, the solution's shape).
    #[track_caller]
    #[must_use]
    pub fn solve_triangular_jvp<T: Element>(
        a: &Tensor<T>,
        x: &Tensor<T>,
        lower: bool,
        transpose: bool,
        da: Option<&Tensor<T>>,
        db: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        let mut rhs = rhs_tangent(db, x.shape());
        if let Some(da) = da {
            let dt = triangle(da, lower);
            let dt = if transpose { dt.t() } else { dt };
            rhs -= dt.matmul(x);
        }
        a.solve_triangular(&rhs, lower, transpose)
    }

    /// VJP of [`Tensor::solve_triangular`] for `a`, from `a` and the solution `x`: the
    /// triangle read of `-B̄ Xᵀ` (or `-X B̄ᵀ` when transposed), `B̄ = op(T)⁻ᵀ ḡ`, summed over
    /// the batch axes `a` was broadcast along.
    #[track_caller]
    #[must_use]
    pub fn solve_triangular_vjp_lhs<T: Element>(
        g: &Tensor<T>,
        a: &Tensor<T>,
        x: &Tensor<T>,
        lower: bool,
        transpose: bool,
    ) -> Tensor<T> {
        let gb = a.solve_triangular(g, lower, !transpose);
        let outer = if transpose {
            x.matmul(&gb.t())
        } else {
            gb.matmul(&x.t())
        };
        -triangle(&sum_to_shape(&outer, a.shape()), lower)
    }

    /// VJP of [`Tensor::solve_triangular`] for `b` (of shape `b_shape`), from `a`: `op(T)⁻ᵀ ḡ`,
    /// summed over the batch axes `b` was broadcast along.
    #[track_caller]
    #[must_use]
    pub fn solve_triangular_vjp_rhs<T: Element>(
        g: &Tensor<T>,
        a: &Tensor<T>,
        b_shape: &[usize],
        lower: bool,
        transpose: bool,
    ) -> Tensor<T> {
        sum_to_shape(&a.solve_triangular(g, lower, !transpose), b_shape)
    }

    /// JVP of [`Tensor::solve`], from `a`, the solution `x` and the tangents: `A⁻¹(dB - dA X)`
    /// (over the broadcast batch, the solution's shape).
    #[track_caller]
    #[must_use]
    pub fn solve_jvp<T: Element>(
        a: &Tensor<T>,
        x: &Tensor<T>,
        da: Option<&Tensor<T>>,
        db: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        let mut rhs = rhs_tangent(db, x.shape());
        if let Some(da) = da {
            rhs -= da.matmul(x);
        }
        a.solve(&rhs)
    }

    /// VJP of [`Tensor::solve`] for `a`, from `a` and the solution `x`: `-B̄ Xᵀ` with `B̄ =
    /// A⁻ᵀ ḡ`, summed over the batch axes `a` was broadcast along.
    #[track_caller]
    #[must_use]
    pub fn solve_vjp_lhs<T: Element>(g: &Tensor<T>, a: &Tensor<T>, x: &Tensor<T>) -> Tensor<T> {
        -sum_to_shape(&a.t().solve(g).matmul(&x.t()), a.shape())
    }

    /// VJP of [`Tensor::solve`] for `b` (of shape `b_shape`), from `a`: `A⁻ᵀ ḡ`, summed over the
    /// batch axes `b` was broadcast along.
    #[track_caller]
    #[must_use]
    pub fn solve_vjp_rhs<T: Element>(g: &Tensor<T>, a: &Tensor<T>, b_shape: &[usize]) -> Tensor<T> {
        sum_to_shape(&a.t().solve(g), b_shape)
    }

    /// JVP of [`Tensor::inv`], from the inverse `y`: `-Y dA Y`.
    #[must_use]
    pub fn inv_jvp<T: Element>(y: &Tensor<T>, da: &Tensor<T>) -> Tensor<T> {
        -y.matmul(da).matmul(y)
    }

    /// VJP of [`Tensor::inv`], from the inverse `y`: `-Yᵀ ḡ Yᵀ`.
    #[must_use]
    pub fn inv_vjp<T: Element>(g: &Tensor<T>, y: &Tensor<T>) -> Tensor<T> {
        let yt = y.t();
        -yt.matmul(g).matmul(&yt)
    }

    /// JVP of [`Tensor::logabsdet`], from `a`: `tr(A⁻¹ dA) = Σ A⁻ᵀ ∘ dA`, the VJP's gradient
    /// against the tangent; at a singular matrix, where `ln |det A|` is `-∞`, that gradient
    /// holds only infinities and NaNs, and this is not finite.
    #[track_caller]
    #[must_use]
    pub fn logabsdet_jvp<T: Element>(a: &Tensor<T>, da: &Tensor<T>) -> Tensor<T> {
        matrix_inner(&log_det_gradient("logabsdet_jvp", a), da)
    }

    /// VJP of [`Tensor::logabsdet`], from `a`: `ḡ A⁻ᵀ`. At a singular matrix, where `ln |det
    /// A|` is `-∞`, the gradient does not exist, and this gives `ḡ adj(A)ᵀ / 0`: `±∞` with the
    /// sign of `ḡ` times the cofactor where the cofactor is not zero, NaN where it is (every
    /// entry when the rank is `n - 2` or less). JAX's (`trace(solve(A, dA))`, through an LU that
    /// divides by the zero pivot) is not finite there either.
    #[track_caller]
    #[must_use]
    pub fn logabsdet_vjp<T: Element>(g: &Tensor<T>, a: &Tensor<T>) -> Tensor<T> {
        log_det_gradient("logabsdet_vjp", a) * per_matrix(g)
    }

    /// JVP of [`Tensor::det`], from `a`: `tr(adj(A) dA) = Σ adj(A)ᵀ ∘ dA`, the cofactors against
    /// the tangent, right at singular matrices too (where `det A · tr(A⁻¹ dA)` is `0 · ∞`).
    #[track_caller]
    #[must_use]
    pub fn det_jvp<T: Element>(a: &Tensor<T>, da: &Tensor<T>) -> Tensor<T> {
        matrix_inner(&cofactors("det_jvp", a), da)
    }

    /// VJP of [`Tensor::det`], from `a`: `ḡ adj(A)ᵀ`, the cofactor matrix, which is `det A ·
    /// A⁻ᵀ` for an invertible `A` and exists everywhere: at a matrix of rank `n - 1` it has rank
    /// one, at rank `n - 2` or less it is zero.
    #[track_caller]
    #[must_use]
    pub fn det_vjp<T: Element>(g: &Tensor<T>, a: &Tensor<T>) -> Tensor<T> {
        cofactors("det_vjp", a) * per_matrix(g)
    }
}
