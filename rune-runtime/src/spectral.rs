//! faer's eigen- and singular-value decompositions, the kernels of `eigh` and `svd` for `f32` and
//! `f64` (`ops::decomp`).
//!
//! Every other element type (the dual numbers of forward mode and `f_hvp`) runs the generic
//! Jacobi kernels of `ops::decomp`. An element type chooses with the hidden
//! `Element::spectral_kernels`, as it chooses its GEMM (`crate::gemm`). Both kinds return the
//! factors in the same order, and the ops sign them the same way, so a function's value and its
//! derivatives through `f_hvp` see one factorization.
//!
//! faer reduces to tridiagonal (bidiagonal) form and iterates on it: O(n³) once, against the
//! Jacobi kernels' O(n³) per sweep over several sweeps, so it is the faster from small sizes on.
//!
//! This file sits below the ops and the element types: it imports only faer.

use faer::traits::RealField;
use faer::{MatRef, Side};

/// The eigendecomposition of a symmetric matrix: from the row-major `n × n` matrix whose lower
/// triangle is read, the eigenvalues (ascending) and the eigenvectors as the columns of a
/// row-major `n × n` matrix; `None` when the iteration does not converge.
pub type EighKernel<T> = fn(&[T], usize) -> Option<(Vec<T>, Vec<T>)>;

/// The thin SVD of a row-major `m × n` matrix: `U` (`m × k`, row-major), the singular values
/// (`k`, descending) and `V` (`n × k`, row-major, the right singular vectors as columns), `k =
/// min(m, n)`; `None` when the iteration does not converge.
pub type SvdKernel<T> = fn(&[T], usize, usize) -> Option<(Vec<T>, Vec<T>, Vec<T>)>;

/// An element type's decompositions.
#[derive(Clone, Copy)]
pub struct SpectralKernels<T> {
    /// The symmetric eigendecomposition.
    pub eigh: EighKernel<T>,
    /// The thin SVD.
    pub svd: SvdKernel<T>,
}

/// The row-major elements of `x`.
fn row_major<T: RealField + Copy>(x: MatRef<'_, T>) -> Vec<T> {
    (0..x.nrows())
        .flat_map(|i| (0..x.ncols()).map(move |j| x[(i, j)]))
        .collect()
}

fn faer_eigh<T: RealField + Copy>(a: &[T], n: usize) -> Option<(Vec<T>, Vec<T>)> {
    let evd = MatRef::from_row_major_slice(a, n, n)
        .self_adjoint_eigen(Side::Lower)
        .ok()?;
    let w = evd.S().column_vector().iter().copied().collect();
    Some((w, row_major(evd.U())))
}

fn faer_svd<T: RealField + Copy>(a: &[T], m: usize, n: usize) -> Option<(Vec<T>, Vec<T>, Vec<T>)> {
    let svd = MatRef::from_row_major_slice(a, m, n).thin_svd().ok()?;
    let s = svd.S().column_vector().iter().copied().collect();
    Some((row_major(svd.U()), s, row_major(svd.V())))
}

/// The `f32` kernels: faer.
pub(crate) const F32: SpectralKernels<f32> = SpectralKernels {
    eigh: faer_eigh::<f32>,
    svd: faer_svd::<f32>,
};

/// The `f64` kernels: faer.
pub(crate) const F64: SpectralKernels<f64> = SpectralKernels {
    eigh: faer_eigh::<f64>,
    svd: faer_svd::<f64>,
};
