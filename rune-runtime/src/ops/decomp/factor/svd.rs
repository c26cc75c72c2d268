//! `svd` and its three factors `svd_u`, `svdvals`, `svd_vh`, and their rules.

use super::*;

impl<T: Element> Tensor<T> {
    panicking_twin! {
        /// The thin SVD `A = U diag(s) Vh` of each matrix of `[.., m, n]`, `k = min(m, n)`: `U [..,
        /// m, k]`, the singular values `s [.., k]` descending, `Vh [.., k, n]`; each pair of
        /// singular vectors signed so that the largest component of the left one is positive.
        ///
        /// ```
        /// use rune_runtime::Tensor;
        /// let a = Tensor::from_vec(vec![0.0, 2.0, 0.0, 0.0, 0.0, 3.0], &[2, 3]);
        /// let (u, s, vh) = a.svd();
        /// assert_eq!(s.to_vec(), vec![3.0, 2.0]);
        /// assert_eq!(u.to_vec(), vec![0.0, 1.0, 1.0, 0.0]);
        /// assert_eq!(vh.to_vec(), vec![0.0, 0.0, 1.0, 0.0, 1.0, 0.0]);
        /// ```
        ///
        /// # Panics
        /// When the tensor has fewer than two axes.
        pub fn svd(&self) -> (Tensor<T>, Tensor<T>, Tensor<T>) => self.try_svd
    }

    /// Like [`Tensor::svd`], returning an error for fewer than two axes.
    #[allow(clippy::type_complexity)]
    pub fn try_svd(&self) -> Result<(Tensor<T>, Tensor<T>, Tensor<T>), ShapeError> {
        self.svd_named("svd")
    }

    #[allow(clippy::type_complexity)]
    fn svd_named(&self, op: &'static str) -> Result<(Tensor<T>, Tensor<T>, Tensor<T>), ShapeError> {
        let (batch, m, n) = matrices(op, self.shape())?;
        let k = m.min(n);
        let [u, s, vh] = factor_batch(self, batch, [&[m, k], &[k], &[k, n]], |_, a| {
            let (u, s, vh) = svd_kernel(a, m, n);
            Ok([u, s, vh])
        })?;
        Ok((u, s, vh))
    }

    panicking_twin! {
        /// `U` of [`Tensor::svd`].
        ///
        /// # Panics
        /// When the tensor has fewer than two axes.
        pub fn svd_u(&self) -> Tensor<T> => self.try_svd_u
    }

    /// Like [`Tensor::svd_u`], returning an error for fewer than two axes.
    pub fn try_svd_u(&self) -> Result<Tensor<T>, ShapeError> {
        Ok(self.svd_named("svd_u")?.0)
    }

    panicking_twin! {
        /// The singular values of [`Tensor::svd`], descending.
        ///
        /// # Panics
        /// When the tensor has fewer than two axes.
        pub fn svdvals(&self) -> Tensor<T> => self.try_svdvals
    }

    /// Like [`Tensor::svdvals`], returning an error for fewer than two axes.
    pub fn try_svdvals(&self) -> Result<Tensor<T>, ShapeError> {
        Ok(self.svd_named("svdvals")?.1)
    }

    panicking_twin! {
        /// `Vh` of [`Tensor::svd`].
        ///
        /// # Panics
        /// When the tensor has fewer than two axes.
        pub fn svd_vh(&self) -> Tensor<T> => self.try_svd_vh
    }

    /// Like [`Tensor::svd_vh`], returning an error for fewer than two axes.
    pub fn try_svd_vh(&self) -> Result<Tensor<T>, ShapeError> {
        Ok(self.svd_named("svd_vh")?.2)
    }
}

/// Rules of these ops (see `ops::decomp::factor`'s conventions).
pub mod rules {
    use super::super::rules::*;
    use super::*;

    /// `1 / (sⱼ² - sᵢ²)` off the diagonal.
    fn svd_gaps<T: Element>(s: &Tensor<T>) -> Tensor<T> {
        gap_inverses(&(s * s))
    }

    /// `(dU, ds, dVh)` of the thin SVD of `a` along `da`.
    #[track_caller]
    fn svd_tangents<T: Element>(
        a: &Tensor<T>,
        da: &Tensor<T>,
    ) -> (Tensor<T>, Tensor<T>, Tensor<T>) {
        let (u, s, vh) = a.svd();
        let v = vh.t();
        let p = u.t().matmul(da).matmul(&v);
        let f = svd_gaps(&s);
        let ds = p.diagonal();
        // P S scales columns, S P rows.
        let (ps, sp) = (&p * &as_columns(&s), &p * &as_rows(&s));
        let du =
            u.matmul(&(&f * &(&ps + &ps.t()))) + project_off(&u, &da.matmul(&v)) / as_columns(&s);
        let dv = v.matmul(&(&f * &(&sp + &sp.t())))
            + project_off(&v, &da.t().matmul(&u)) / as_columns(&s);
        (du, ds, dv.t())
    }

    /// `Ā` of the thin SVD of `a` from the cotangents of `U`, `s` and `Vh`.
    #[track_caller]
    fn svd_cotangent<T: Element>(
        a: &Tensor<T>,
        gu: Option<&Tensor<T>>,
        gs: Option<&Tensor<T>>,
        gvh: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        let (u, s, vh) = a.svd();
        let v = vh.t();
        let f = svd_gaps(&s);
        let k = s.shape()[s.ndim() - 1];
        let lead = &s.shape()[..s.ndim() - 1];
        let mut inner_shape = lead.to_vec();
        inner_shape.extend([k, k]);
        let mut inner = Tensor::zeros(&inner_shape);
        let mut out = Tensor::zeros(a.shape());
        if let Some(gs) = gs {
            inner += gs.diag();
        }
        if let Some(gu) = gu {
            let j = u.t().matmul(gu);
            inner += (&f * &(&j - &j.t())) * as_columns(&s);
            out += project_off(&u, gu).matmul(&(&vh / &as_rows(&s)));
        }
        if let Some(gvh) = gvh {
            let gv = gvh.t();
            let j = v.t().matmul(&gv);
            inner += (&f * &(&j - &j.t())) * as_rows(&s);
            out += (&u / &as_columns(&s)).matmul(&project_off(&v, &gv).t());
        }
        out + u.matmul(&inner).matmul(&vh)
    }

    /// JVP of [`Tensor::svd_u`], from `a`.
    #[track_caller]
    #[must_use]
    pub fn svd_u_jvp<T: Element>(a: &Tensor<T>, da: &Tensor<T>) -> Tensor<T> {
        svd_tangents(a, da).0
    }

    /// VJP of [`Tensor::svd_u`], from `a`.
    #[track_caller]
    #[must_use]
    pub fn svd_u_vjp<T: Element>(g: &Tensor<T>, a: &Tensor<T>) -> Tensor<T> {
        svd_cotangent(a, Some(g), None, None)
    }

    /// JVP of [`Tensor::svdvals`], from `a`: `diag(Uᵀ dA V)`.
    #[track_caller]
    #[must_use]
    pub fn svdvals_jvp<T: Element>(a: &Tensor<T>, da: &Tensor<T>) -> Tensor<T> {
        let (u, _, vh) = a.svd();
        u.t().matmul(da).matmul(&vh.t()).diagonal()
    }

    /// VJP of [`Tensor::svdvals`], from `a`: `U diag(s̄) Vh`.
    #[track_caller]
    #[must_use]
    pub fn svdvals_vjp<T: Element>(g: &Tensor<T>, a: &Tensor<T>) -> Tensor<T> {
        let (u, _, vh) = a.svd();
        (&u * &as_columns(g)).matmul(&vh)
    }

    /// JVP of [`Tensor::svd_vh`], from `a`.
    #[track_caller]
    #[must_use]
    pub fn svd_vh_jvp<T: Element>(a: &Tensor<T>, da: &Tensor<T>) -> Tensor<T> {
        svd_tangents(a, da).2
    }

    /// VJP of [`Tensor::svd_vh`], from `a`.
    #[track_caller]
    #[must_use]
    pub fn svd_vh_vjp<T: Element>(g: &Tensor<T>, a: &Tensor<T>) -> Tensor<T> {
        svd_cotangent(a, None, None, Some(g))
    }
}
