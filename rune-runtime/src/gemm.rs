//! The matrix-product kernels behind the runtime's one GEMM (`ops::linalg::gemm`).
//!
//! `f32` and `f64` products run faer's GEMM (`faer::linalg::matmul`: its packed kernels for
//! large products, nano-gemm's unrolled ones for tiny ones), on the calling thread unless the
//! `parallel` feature is on and the product large (`crate::parallel`). Every other
//! element type (the dual numbers) runs `ndarray::linalg::general_mat_mul`'s generic loop. An
//! element type chooses its kernel with the hidden `Element::gemm_kernel`, so the choice is
//! made by the type system, without a run-time type test.
//!
//! faer is faster than `matrixmultiply` (what `general_mat_mul` runs for `f32`/`f64`) on every
//! shape measured, from 1×1×1 to the 64×784×256 products of the MLP benchmark and their
//! transposed VJP variants: about 1.5–2× on the large ones, 2–3.5× on the tiny ones, where
//! `matrixmultiply`'s fixed packing cost dominates. So no size threshold keeps it.
//!
//! This file sits below the ops and the element types: it imports only ndarray, faer and
//! `crate::parallel`.

use faer::linalg::matmul::matmul;
use faer::traits::RealField;
use faer::{Accum, MatMut, MatRef, Par};
use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2, LinalgScalar};

/// A matrix-product kernel: `c = a · b`, or `c += a · b` when the flag is set, with `c` the
/// row-major `m × n` slice. `c` is only written, never read, when the flag is clear.
pub type GemmKernel<T> = fn(&ArrayView2<'_, T>, &ArrayView2<'_, T>, &mut [T], bool);

/// `general_mat_mul` with β = 0 or 1: the kernel of every element type without a faster one.
pub(crate) fn ndarray_gemm<T: LinalgScalar>(
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    c: &mut [T],
    accumulate: bool,
) {
    let mut c = ArrayViewMut2::from_shape((a.nrows(), b.ncols()), c)
        .expect("gemm: the output slice holds m x n elements");
    let beta = if accumulate { T::one() } else { T::zero() };
    general_mat_mul(T::one(), a, b, beta, &mut c);
}

/// The `f32` kernel: faer.
pub(crate) fn gemm_f32(a: &ArrayView2<'_, f32>, b: &ArrayView2<'_, f32>, c: &mut [f32], acc: bool) {
    faer_gemm(a, b, c, acc);
}

/// The `f64` kernel: faer.
pub(crate) fn gemm_f64(a: &ArrayView2<'_, f64>, b: &ArrayView2<'_, f64>, c: &mut [f64], acc: bool) {
    faer_gemm(a, b, c, acc);
}

/// faer's GEMM on any views.
pub(crate) fn faer_gemm<T: RealField + Copy>(
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    c: &mut [T],
    accumulate: bool,
) {
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    assert_eq!(k, b.nrows(), "gemm: the operands' contraction axes differ");
    assert_eq!(
        c.len(),
        m * n,
        "gemm: the output slice holds m x n elements"
    );
    // A view faer cannot borrow (gaps between rows, negative strides) is copied:
    // O(rows · cols) against the product's O(m · k · n).
    let (a_copy, b_copy);
    let lhs = match mat_ref(a) {
        Some(r) => r,
        None => {
            a_copy = Packed::of(a);
            a_copy.mat_ref()
        }
    };
    let rhs = match mat_ref(b) {
        Some(r) => r,
        None => {
            b_copy = Packed::of(b);
            b_copy.mat_ref()
        }
    };
    let dst = MatMut::from_row_major_slice_mut(c, m, n);
    // `Replace` writes `dst` without reading it, so the caller's slice needs no zero-fill.
    let beta = if accumulate {
        Accum::Add
    } else {
        Accum::Replace
    };
    matmul(dst, beta, lhs, rhs, T::one(), parallelism(m * k * n));
    // private-gemm-x86's AVX2/AVX-512 kernels return without `vzeroupper`. With the upper
    // state dirty, every SSE instruction that follows (the runtime outside its vectorised loops
    // is compiled for baseline x86-64) pays the AVX-SSE transition penalty until something
    // clears it: an `exp`/`tanh` loop measured 10-17× slower after a faer product, and the W1
    // MLP's value-and-gradient 3× slower.
    if m.saturating_mul(k).saturating_mul(n) > NANO_GEMM_MAX_MNK {
        crate::vmath::clear_upper_vector_state();
    }
}

/// The threads of a product of `mnk` multiply-adds: the pool's with the `parallel` feature for
/// a large one (see [`crate::parallel`]), else this thread.
fn parallelism(mnk: usize) -> Par {
    #[cfg(feature = "parallel")]
    if mnk >= crate::parallel::MIN_PARALLEL_GEMM && crate::parallel::threads() > 1 {
        return Par::rayon(0);
    }
    let _ = mnk;
    Par::Seq
}

/// faer runs products of at most this many multiply-adds with nano-gemm's kernels (Rust), larger
/// ones with private-gemm-x86's (assembly) on x86-64 (`NANO_GEMM_THRESHOLD` in faer 0.24).
const NANO_GEMM_MAX_MNK: usize = 16 * 16 * 16;

/// A copy of a matrix view that faer cannot borrow, contiguous in the order of the view's
/// shorter stride: a view with gaps between rows of contiguous elements (a column slice, one
/// of attention's heads) is copied row by row, its transpose column by column.
struct Packed<T> {
    data: Vec<T>,
    rows: usize,
    cols: usize,
    column_major: bool,
}

impl<T: Copy> Packed<T> {
    fn of(v: &ArrayView2<'_, T>) -> Self {
        let (rows, cols) = v.dim();
        let column_major = v.strides()[0].unsigned_abs() < v.strides()[1].unsigned_abs();
        let oriented = if column_major { v.t() } else { v.view() };
        let mut data = Vec::with_capacity(rows * cols);
        for lane in oriented.rows() {
            match lane.as_slice() {
                Some(s) => data.extend_from_slice(s),
                None => data.extend(lane.iter().copied()),
            }
        }
        Packed {
            data,
            rows,
            cols,
            column_major,
        }
    }

    fn mat_ref(&self) -> MatRef<'_, T> {
        if self.column_major {
            MatRef::from_column_major_slice(&self.data, self.rows, self.cols)
        } else {
            MatRef::from_row_major_slice(&self.data, self.rows, self.cols)
        }
    }
}

/// `v` as a faer matrix borrowing its elements, when they are contiguous in row-major or
/// column-major order (a transposed matrix is the latter).
fn mat_ref<'a, T>(v: &'a ArrayView2<'_, T>) -> Option<MatRef<'a, T>> {
    let (rows, cols) = v.dim();
    if v.is_standard_layout() {
        let s = v.as_slice()?;
        Some(MatRef::from_row_major_slice(s, rows, cols))
    } else {
        let s = v.as_slice_memory_order()?;
        // Contiguous but not row-major: column-major exactly when the transpose is row-major.
        v.t()
            .is_standard_layout()
            .then(|| MatRef::from_column_major_slice(s, rows, cols))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array2, Axis, Slice};

    /// `v` reversed along `axis` (a negative stride).
    fn reversed<'a>(v: ArrayView2<'a, f64>, axis: usize) -> ArrayView2<'a, f64> {
        let mut v = v;
        v.invert_axis(Axis(axis));
        v
    }

    fn sample(rows: usize, cols: usize, seed: usize) -> Array2<f64> {
        Array2::from_shape_fn((rows, cols), |(i, j)| {
            (((i * 31 + j * 17 + seed * 7) % 23) as f64 - 11.0) / 8.0
        })
    }

    /// Without `accumulate`, faer's kernel overwrites whatever `c` held (NaN here) and agrees
    /// with `matrixmultiply` on borrowed, transposed and copied (strided, reversed) operands.
    #[test]
    fn replace_ignores_the_old_output_and_matches_ndarray() {
        let (m, k, n) = (24, 40, 30);
        let a = sample(m, k, 1);
        let at = sample(k, m, 2);
        let wide = sample(m + 3, k + 5, 3);
        let b = sample(k, n, 4);
        let bt = sample(n, k, 5);
        let mut sub = wide.view();
        sub.slice_axis_inplace(Axis(0), Slice::from(1..m + 1));
        sub.slice_axis_inplace(Axis(1), Slice::from(2..k + 2));
        let lhs = [a.view(), at.t(), sub, reversed(a.view(), 0)];
        let rhs = [b.view(), bt.t(), reversed(b.view(), 1)];
        for (i, x) in lhs.iter().enumerate() {
            for (j, y) in rhs.iter().enumerate() {
                let mut want = vec![0.0; m * n];
                ndarray_gemm(x, y, &mut want, false);
                let mut got = vec![f64::NAN; m * n];
                gemm_f64(x, y, &mut got, false);
                for (g, w) in got.iter().zip(&want) {
                    assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "lhs {i}, rhs {j}");
                }
                // Accumulating adds a second product on top.
                gemm_f64(x, y, &mut got, true);
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - 2.0 * w).abs() <= 1e-12 * (1.0 + w.abs()),
                        "lhs {i}, rhs {j}"
                    );
                }
            }
        }
    }
}
