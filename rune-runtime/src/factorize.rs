//! faer's factorizations, the kernels of `cholesky`, `solve_triangular`, `solve`, `inv`, `det`
//! and its kin, `qr`, `eigh` and `svd` for `f32` and `f64` (`ops::decomp`).
//!
//! Every other element type (the dual numbers of forward mode and `f_hvp`) runs the generic
//! kernels of `ops::decomp`. An element type chooses with the hidden `Element::factor_kernels`,
//! as it chooses its GEMM (`crate::gemm`). Both kinds return the factors in one layout
//! (row-major), and the ops bring them to one convention (signs, order, what counts as singular),
//! so a function's value and its derivatives through `f_hvp` see one factorization.
//!
//! faer's are blocked (their O(n³) work is matrix products) and vectorised, where the generic
//! kernels are textbook loops: at 500 × 500 a Cholesky factorization takes 1.7 ms in faer
//! against 24 ms in the generic kernel.
//!
//! faer's kernels return with the upper halves of the vector registers dirty, as its GEMM does
//! (see `crate::gemm`): each kernel here clears them before it returns.
//!
//! One rule has a kernel here too, `cholesky`'s VJP, which is all matrix products and triangular
//! solves that faer runs in place on one buffer (see [`CholeskyVjpKernel`]).
//!
//! This file sits below the ops and the element types: it imports only faer, ndarray's views
//! and `crate::vmath`.

use std::ops::MulAssign;

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::linalg::solvers::{DenseSolveCore, PartialPivLu, Solve};
use faer::linalg::triangular_solve::solve_upper_triangular_in_place;
use faer::traits::RealField;
use faer::{Accum, Mat, MatMut, MatRef, Par, Side};

/// Writes the lower Cholesky factor (row-major `n × n`, zeros above the diagonal) of the
/// row-major `n × n` matrix whose lower triangle is read into the last argument; `false` (and
/// the output unspecified) when faer meets a pivot that is not positive.
pub type CholeskyKernel<T> = fn(&[T], usize, &mut [T]) -> bool;

/// Solves `op(T) X = B` in place, `B` the row-major `n × k` slice, `T` the lower (the flag
/// `lower`) or upper triangle of the row-major `n × n` matrix, `op(T) = Tᵀ` when the flag
/// `transpose` is set; the other triangle is not read.
pub type TriangularKernel<T> = fn(&[T], usize, &mut [T], usize, bool, bool);

/// The LU factorization with partial pivoting of a row-major `n × n` matrix.
pub type LuKernel<T> = fn(&[T], usize) -> LuFactors<T>;

/// `A⁻¹ B` in place from the factors of `A`, `B` the row-major `n × k` slice.
pub type LuSolveKernel<T> = fn(&LuFactors<T>, &mut [T], usize);

/// `A⁻¹`, or `A⁻ᵀ` when the flag is set (row-major `n × n`), from the factors of `A`.
pub type LuInverseKernel<T> = fn(&LuFactors<T>, bool) -> Vec<T>;

/// The reduced QR factorization of a row-major `m × n` matrix, `k = min(m, n)`: `Q` (`m × k`)
/// and `R` (`k × n`), row-major, by Householder reflections (`R`'s diagonal of either sign).
pub type QrKernel<T> = fn(&[T], usize, usize) -> (Vec<T>, Vec<T>);

/// The eigendecomposition of a symmetric matrix: from the row-major `n × n` matrix whose lower
/// triangle is read, the eigenvalues (ascending) and the eigenvectors as the columns of a
/// row-major `n × n` matrix; `None` when the iteration does not converge.
pub type EighKernel<T> = fn(&[T], usize) -> Option<(Vec<T>, Vec<T>)>;

/// The thin SVD of a row-major `m × n` matrix: `U` (`m × k`, row-major), the singular values
/// (`k`, descending) and `V` (`n × k`, row-major, the right singular vectors as columns), `k =
/// min(m, n)`; `None` when the iteration does not converge.
pub type SvdKernel<T> = fn(&[T], usize, usize) -> Option<(Vec<T>, Vec<T>, Vec<T>)>;

/// The VJP of `cholesky` for one `n × n` matrix: from the cotangent `Ḡ` of the factor and the
/// factor `L` (both row-major `n × n`, their lower triangles read), the gradient with respect to the lower triangle of `A` (the triangle `cholesky`
/// reads), written row-major into `out` (`n × n`, zeros above the diagonal; its previous
/// contents are not read).
///
/// Murray's (2016) `Ā = L⁻ᵀ Φ(Lᵀ Ḡ) L⁻¹`, folded onto the lower triangle (`Ā + Āᵀ` below the
/// diagonal, `Ā` on it), is the lower triangle of the symmetric `S = L⁻ᵀ (P + Pᵀ) L⁻¹` with its
/// diagonal halved, `P = Φ(Lᵀ tril(Ḡ))`. In `out`, seen column-major: the lower triangle of
/// `Lᵀ tril(Ḡ)` by a triangular product (a sixth of a square product's work), mirrored onto the
/// upper one (`P + Pᵀ`: `Φ` halves the diagonal and the sum doubles it back), then two
/// triangular solves in place, `Z = L⁻ᵀ Q` and `S = Z L⁻¹` (as `Sᵀ = L⁻ᵀ Zᵀ` on the transposed
/// view). `S` is symmetric, so the buffer read row-major holds it too.
pub type CholeskyVjpKernel<T> = fn(&[T], &[T], usize, &mut [T]);

/// An element type's factorizations.
#[derive(Clone, Copy)]
pub struct FactorKernels<T> {
    /// `cholesky`.
    pub cholesky: CholeskyKernel<T>,
    /// `solve_triangular`.
    pub triangular: TriangularKernel<T>,
    /// LU with partial pivoting, for `solve`, `inv` and the determinants.
    pub lu: LuKernel<T>,
    /// Solves with [`FactorKernels::lu`]'s factors.
    pub lu_solve: LuSolveKernel<T>,
    /// Inverts with [`FactorKernels::lu`]'s factors.
    pub lu_inverse: LuInverseKernel<T>,
    /// The reduced QR factorization.
    pub qr: QrKernel<T>,
    /// The symmetric eigendecomposition.
    pub eigh: EighKernel<T>,
    /// The thin SVD.
    pub svd: SvdKernel<T>,
    /// The VJP of `cholesky`.
    pub cholesky_vjp: CholeskyVjpKernel<T>,
}

/// `P A = L U` of an `n × n` matrix by faer: `U`'s diagonal and the sign of `P` (what the
/// determinants read), and the factors for solving.
pub struct LuFactors<T> {
    /// `U`'s diagonal, the pivots (an exactly zero one for a matrix that is singular to faer).
    pub pivots: Vec<T>,
    /// `det P`: `-1` for an odd permutation, else `1`.
    pub sign: T,
    lu: PartialPivLu<T>,
}

/// The row-major elements of `x`.
fn row_major<T: RealField + Copy>(x: MatRef<'_, T>) -> Vec<T> {
    let (rows, cols) = (x.nrows(), x.ncols());
    let mut out = vec![T::zero_impl(); rows * cols];
    MatMut::from_row_major_slice_mut(&mut out, rows, cols).copy_from(x);
    out
}

/// `x`, after clearing the upper vector state that faer's kernels leave dirty.
fn clean<X>(x: X) -> X {
    crate::vmath::clear_upper_vector_state();
    x
}

/// `dst = srcᵀ`, both row-major `n × n`, a tile at a time so that both sides stay in cache
/// (faer's copy between layouts goes an element at a time).
fn transpose_into<T: Copy>(src: &[T], dst: &mut [T], n: usize) {
    const TILE: usize = 16;
    for i0 in (0..n).step_by(TILE) {
        for j0 in (0..n).step_by(TILE) {
            for i in i0..(i0 + TILE).min(n) {
                let row = &src[i * n + j0..i * n + (j0 + TILE).min(n)];
                for (j, &x) in (j0..).zip(row) {
                    dst[j * n + i] = x;
                }
            }
        }
    }
}

fn faer_cholesky<T: RealField + Copy>(a: &[T], n: usize, l: &mut [T]) -> bool {
    // faer factors the lower triangle of a column-major matrix in place: `A` column-major is
    // the transpose of the row-major one, and so is `L` row-major of `L` column-major.
    let mut work = vec![T::zero_impl(); n * n];
    transpose_into(a, &mut work, n);
    let mut mem = MemBuffer::new(cholesky_in_place_scratch::<T>(
        n,
        Par::Seq,
        Default::default(),
    ));
    let factored = cholesky_in_place(
        MatMut::from_column_major_slice_mut(&mut work, n, n),
        Default::default(),
        Par::Seq,
        MemStack::new(&mut mem),
        Default::default(),
    );
    if factored.is_err() {
        return clean(false);
    }
    transpose_into(&work, l, n);
    // Above the diagonal `work` held `A`'s upper triangle, which is not read.
    for (i, row) in l.chunks_exact_mut(n).enumerate() {
        row[i + 1..].fill(T::zero_impl());
    }
    clean(true)
}

fn faer_triangular<T: RealField + Copy>(
    t: &[T],
    n: usize,
    b: &mut [T],
    k: usize,
    lower: bool,
    transpose: bool,
) {
    let t = MatRef::from_row_major_slice(t, n, n);
    let t = if transpose { t.transpose() } else { t };
    let rhs = MatMut::from_row_major_slice_mut(b, n, k);
    // `Tᵀ` of a lower triangle is upper.
    if lower != transpose {
        t.solve_lower_triangular_in_place(rhs);
    } else {
        t.solve_upper_triangular_in_place(rhs);
    }
    clean(())
}

fn faer_lu<T: RealField + Copy>(a: &[T], n: usize) -> LuFactors<T> {
    let lu = MatRef::from_row_major_slice(a, n, n).partial_piv_lu();
    let pivots = lu.U().diagonal().column_vector().iter().copied().collect();
    // The parity of a permutation is that of `n` minus its number of cycles.
    let (forward, _) = lu.P().arrays();
    let mut seen = vec![false; n];
    let mut cycles = 0;
    for start in 0..n {
        if !seen[start] {
            cycles += 1;
            let mut i = start;
            while !seen[i] {
                seen[i] = true;
                i = forward[i];
            }
        }
    }
    let sign = if (n - cycles) % 2 == 1 {
        -T::one_impl()
    } else {
        T::one_impl()
    };
    clean(LuFactors { pivots, sign, lu })
}

fn faer_lu_solve<T: RealField + Copy>(f: &LuFactors<T>, b: &mut [T], k: usize) {
    let n = f.pivots.len();
    f.lu.solve_in_place(MatMut::from_row_major_slice_mut(b, n, k));
    clean(())
}

fn faer_lu_inverse<T: RealField + Copy>(f: &LuFactors<T>, transpose: bool) -> Vec<T> {
    let inverse = f.lu.inverse();
    // faer's column-major `A⁻¹` is the row-major `A⁻ᵀ`: a straight copy.
    let inverse = if transpose {
        inverse.transpose()
    } else {
        inverse.as_ref()
    };
    clean(row_major(inverse))
}

fn faer_qr<T: RealField + Copy>(a: &[T], m: usize, n: usize) -> (Vec<T>, Vec<T>) {
    let qr = MatRef::from_row_major_slice(a, m, n).qr();
    let q: Mat<T> = qr.compute_thin_Q();
    clean((row_major(q.as_ref()), row_major(qr.thin_R())))
}

fn faer_eigh<T: RealField + Copy>(a: &[T], n: usize) -> Option<(Vec<T>, Vec<T>)> {
    let evd = MatRef::from_row_major_slice(a, n, n)
        .self_adjoint_eigen(Side::Lower)
        .ok();
    clean(evd.map(|evd| {
        let w = evd.S().column_vector().iter().copied().collect();
        (w, row_major(evd.U()))
    }))
}

fn faer_svd<T: RealField + Copy>(a: &[T], m: usize, n: usize) -> Option<(Vec<T>, Vec<T>, Vec<T>)> {
    let svd = MatRef::from_row_major_slice(a, m, n).thin_svd().ok();
    clean(svd.map(|svd| {
        let s = svd.S().column_vector().iter().copied().collect();
        (row_major(svd.U()), s, row_major(svd.V()))
    }))
}

fn faer_cholesky_vjp<T: RealField + Copy + MulAssign>(g: &[T], l: &[T], n: usize, out: &mut [T]) {
    assert!(
        g.len() == n * n && l.len() == n * n && out.len() == n * n,
        "cholesky_vjp: the cotangent, the factor and the output are n x n"
    );
    if n == 0 {
        return;
    }
    // `Lᵀ`: the row-major `L` read column-major, an upper triangle.
    let lt = MatRef::from_row_major_slice(l, n, n).transpose();
    triangular::matmul(
        MatMut::from_column_major_slice_mut(out, n, n),
        BlockStructure::TriangularLower,
        Accum::Replace,
        lt,
        BlockStructure::TriangularUpper,
        MatRef::from_row_major_slice(g, n, n),
        BlockStructure::TriangularLower,
        T::one_impl(),
        Par::Seq,
    );
    // `Q = P + Pᵀ`: the lower triangle (column-major, column `j` at `out[j * n..]`) mirrored.
    for j in 0..n {
        for i in j + 1..n {
            out[i * n + j] = out[j * n + i];
        }
    }
    solve_upper_triangular_in_place(lt, MatMut::from_column_major_slice_mut(out, n, n), Par::Seq);
    solve_upper_triangular_in_place(lt, MatMut::from_row_major_slice_mut(out, n, n), Par::Seq);
    // `S`, read row-major: its lower triangle with the diagonal halved, zeros above.
    let half = T::from_f64_impl(0.5);
    for (i, row) in out.chunks_exact_mut(n).enumerate() {
        row[i] *= half;
        row[i + 1..].fill(T::zero_impl());
    }
    clean(())
}

/// The kernels of one type: faer's.
const fn faer_kernels<T: RealField + Copy + MulAssign>() -> FactorKernels<T> {
    FactorKernels {
        cholesky: faer_cholesky::<T>,
        triangular: faer_triangular::<T>,
        lu: faer_lu::<T>,
        lu_solve: faer_lu_solve::<T>,
        lu_inverse: faer_lu_inverse::<T>,
        qr: faer_qr::<T>,
        eigh: faer_eigh::<T>,
        svd: faer_svd::<T>,
        cholesky_vjp: faer_cholesky_vjp::<T>,
    }
}

/// The `f32` kernels: faer.
pub(crate) const F32: FactorKernels<f32> = faer_kernels();

/// The `f64` kernels: faer.
pub(crate) const F64: FactorKernels<f64> = faer_kernels();
