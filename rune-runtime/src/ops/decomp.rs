//! Matrix functions and factorizations, batched over leading axes: `trace`, `diagonal`, `diag`,
//! `triu`, `tril`, [`Tensor::eye`], `cholesky`, `solve_triangular`, `solve`, `inv`, `det` and
//! `logabsdet`; and the vector products `dot` and `outer` and the Euclidean (Frobenius) `norm`.
//! This file holds what they share: the batching of matrices and right-hand sides, the generic
//! kernels on one matrix, and the helpers of their rules. The linear functions are in
//! `decomp/structure.rs`, the solvers and determinants in `decomp/solve.rs`, the products and
//! the norm in `decomp/products.rs`; the factorizations with several factors (`qr`, `eigh`,
//! `svd`, `slogdet`, one op per factor), `lstsq` and `cho_solve` in `decomp/factor.rs`, with
//! their own conventions and rules; `einsum` in `decomp/einsum.rs`.
//!
//! A tensor of shape `[.., m, n]` is a batch of `m × n` matrices; every op works on each matrix
//! of the batch. The leading (batch) axes of the two operands of `solve`, `solve_triangular`,
//! `cho_solve` and `lstsq` broadcast as NumPy's and JAX's do (and as `matmul`'s): `a [2, 1, 3,
//! 3]` and `b [5, 3, 2]` give `[2, 5, 3, 2]`, and one matrix meets a batch of right-hand sides
//! or the reverse; the VJPs sum each operand's cotangent over the axes it was broadcast along.
//! A right-hand side is a matrix `[.., n, k]`; write a vector as `[.., n, 1]`.
//!
//! # The kernels
//!
//! `f32` and `f64` matrices are factored by faer (`crate::factorize`), chosen by the hidden
//! `Element::factor_kernels` as the matrix product chooses faer's GEMM: blocked and vectorised,
//! 10–15× faster than textbook loops at 500 × 500. faer's take only `f32` and `f64`, and these
//! ops must also run on dual numbers, which forward mode inside a function (`dual_of`) and
//! `f_hvp` push through every op; for them the kernels here are generic over [`Element`], the
//! textbook unblocked algorithms (Cholesky–Banachiewicz, substitution, LU with partial and with
//! complete pivoting), O(n³) and accurate on well-conditioned matrices.
//!
//! Both kinds keep one semantics. `cholesky` of a matrix faer finds not positive definite runs
//! the generic kernel, whose error names the pivot. `det`, `logabsdet` and `sign_det` (and the
//! rules of `det` and `logabsdet`) take faer's partial-pivot LU only for a matrix it finds
//! clearly invertible (every pivot above `n ε` times the largest) and larger than 16 × 16;
//! any other, singular ones
//! included, runs the completely pivoted generic kernel (`Pivoted`), which gives singular
//! matrices their exact `0`, `-inf` and cofactors.
//!
//! # Conventions and rules
//!
//! - `cholesky` reads the lower triangle of `A` only (as LAPACK and PyTorch do) and returns the
//!   lower factor `L` with `A = L Lᵀ`; a matrix that is not positive definite is an error. Its
//!   JVP is Murray's (2016) `dL = L Φ(L⁻¹ dA_s L⁻ᵀ)`, where `dA_s` is the symmetric matrix the
//!   tangent's lower triangle stands for and `Φ` keeps the lower triangle with the diagonal
//!   halved; its VJP is the adjoint, `Ā = L⁻ᵀ Φ(Lᵀ tril(L̄)) L⁻¹` folded onto the lower
//!   triangle (`Ā + Āᵀ` below the diagonal, `Ā` on it, zero above).
//! - `solve_triangular(b, lower, transpose)` solves `op(T) X = B`, `T` the lower or upper
//!   triangle of `A` (the other entries are never read, and their gradient is zero), `op(T)` is
//!   `Tᵀ` when `transpose`. A zero on the diagonal gives infinities, as SciPy.
//! - `solve` and `inv` factor `A` by LU with partial pivoting and reject a matrix with an
//!   exactly zero pivot (singular). `det`, `logabsdet` and `sign_det` factor it by LU with
//!   complete pivoting, stopped where what is left is exactly zero (`Pivoted`): for a singular
//!   matrix `det` is `0`, `logabsdet` `-inf` and `sign_det` `0`. The derivatives of `solve`,
//!   `inv` and `logabsdet` (Giles 2008) are defined for invertible `A`: `dX = A⁻¹(dB - dA X)`,
//!   `d(A⁻¹) = -A⁻¹ dA A⁻¹`, `d ln|det A| = tr(A⁻¹ dA)` (not finite at a singular `A`, see
//!   `rules::logabsdet_vjp`). That of `det` is defined everywhere: `d det A = tr(adj(A) dA)`,
//!   the adjugate (`det A · A⁻¹` where that exists) computed from the factorization without
//!   dividing by a zero pivot. At a matrix of rank `n - 1` it has rank one, at a lower rank it
//!   is zero; and it is right on dual numbers there too, so that `f_hvp` differentiates it.
//! - `logabsdet` is the second result of NumPy's `slogdet`; the first, the sign, is `sign_det`
//!   (a constant to AD, from the LU factorization, so it does not underflow as `det` can), and
//!   `slogdet()` returns both.
//! - `trace`, `diagonal` (of `[.., m, n]`: `[.., min(m, n)]`), `diag` (a vector `[.., n]` to the
//!   diagonal matrix `[.., n, n]`, PyTorch's `diag_embed`), `triu(k)` and `tril(k)` (the entries
//!   on and above, or on and below, the `k`-th diagonal) are linear.
//! - `norm()` is `√(Σ x²)` over every element (the vector 2-norm, the Frobenius norm of a
//!   matrix), scaled by the largest `|x|` so that it neither overflows nor underflows; its
//!   gradient `x / norm` is taken as `0` at `x = 0` (the subgradient of least norm, as JAX).
//! - `dot(b)` of two vectors of one length is a 0-d tensor; `outer(b)` of `[m]` and `[n]` is
//!   `[m, n]`.

use std::borrow::Cow;
use std::ops::Range;

use super::linalg::batch_pairs;
use crate::broadcast::broadcast_shapes;
use crate::element::Element;
use crate::error::{checked_size, OrPanic, ShapeError};
use crate::factorize::LuFactors;
use crate::tensor::Tensor;

mod einsum;
mod factor;
mod products;
mod solve;
mod structure;

pub use einsum::{einsum, try_einsum};

/// The batch size and the matrix shape `(m, n)` of a tensor of matrices.
fn matrices(op: &'static str, shape: &[usize]) -> Result<(usize, usize, usize), ShapeError> {
    if shape.len() < 2 {
        return Err(ShapeError::new(
            op,
            format!("expects a matrix or a batch of matrices [.., m, n], got shape {shape:?}"),
        ));
    }
    let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    Ok((shape[..shape.len() - 2].iter().product(), m, n))
}

/// The batch size and `n` of a tensor of square matrices `[.., n, n]`.
fn square(op: &'static str, shape: &[usize]) -> Result<(usize, usize), ShapeError> {
    let (batch, m, n) = matrices(op, shape)?;
    if m != n {
        return Err(ShapeError::new(
            op,
            format!("expects square matrices [.., n, n], got shape {shape:?}"),
        ));
    }
    Ok((batch, n))
}

/// Two stacks of matrices whose batch (leading) axes broadcast, as NumPy's and JAX's `solve`
/// and `matmul` broadcast them: `[2, 1, 3, 3]` and `[5, 3, 2]` have the batch `[2, 5]`.
pub(super) struct Batched {
    /// The broadcast batch shape.
    pub(super) batch: Vec<usize>,
    /// For each matrix of the batch (row-major), the index of the matrix of each operand it
    /// reads.
    pub(super) pairs: Vec<(usize, usize)>,
}

impl Batched {
    /// The batch of `a [.., p, q]` and `b [.., r, s]` (both with at least two axes); an error
    /// naming `op` and both shapes when their batch axes do not broadcast.
    pub(super) fn new(op: &'static str, a: &[usize], b: &[usize]) -> Result<Self, ShapeError> {
        let (a_batch, b_batch) = (&a[..a.len() - 2], &b[..b.len() - 2]);
        let batch = broadcast_shapes(op, a_batch, b_batch).map_err(|_| {
            ShapeError::new(
                op,
                format!(
                    "the batch axes {a_batch:?} and {b_batch:?} of shapes {a:?} and {b:?} do not \
                     broadcast"
                ),
            )
        })?;
        let pairs = batch_pairs(a_batch, b_batch, &batch).collect();
        Ok(Batched { batch, pairs })
    }

    /// The batch shape followed by `rows × cols`, checked to fit in a tensor of `T`.
    pub(super) fn shape<T>(
        &self,
        op: &'static str,
        rows: usize,
        cols: usize,
    ) -> Result<Vec<usize>, ShapeError> {
        let mut shape = self.batch.clone();
        shape.extend([rows, cols]);
        checked_size::<T>(op, &shape, || format!("the result of shape {shape:?}"))?;
        Ok(shape)
    }
}

/// The broadcast batch, `n` and `k` of a system `a [.., n, n]`, `b [.., n, k]`.
fn system(
    op: &'static str,
    a: &[usize],
    b: &[usize],
) -> Result<(Batched, usize, usize), ShapeError> {
    let (_, n) = square(op, a)?;
    if b.len() < 2 || b[b.len() - 2] != n {
        return Err(ShapeError::new(
            op,
            format!(
                "the right-hand side must be [.., n, k] with n rows (a vector as [.., n, 1]), \
                 its leading axes broadcasting with the matrix's: matrix {a:?}, right-hand side \
                 {b:?}"
            ),
        ));
    }
    Ok((Batched::new(op, a, b)?, n, b[b.len() - 1]))
}

/// The elements of `x` in row-major order, borrowed when they lie so already: the kernels
/// read a tensor of the factorizations' size without copying it.
fn elements<T: Element>(x: &Tensor<T>) -> Cow<'_, [T]> {
    match x.view().to_slice() {
        Some(data) => Cow::Borrowed(data),
        None => Cow::Owned(x.to_vec()),
    }
}

/// `f(i, j, v)` at every element `v` at row `i`, column `j` of each matrix of `x`.
fn map_indexed<T: Element>(x: &Tensor<T>, f: impl Fn(usize, usize, T) -> T) -> Tensor<T> {
    let shape = x.shape().to_vec();
    let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    let data = elements(x)
        .iter()
        .enumerate()
        .map(|(idx, &v)| f((idx / n) % m.max(1), idx % n.max(1), v))
        .collect();
    Tensor::from_vec(data, &shape)
}

/// Each matrix of `x` with row `i` kept in the columns `cols(i)` (a range within the row) and
/// zero elsewhere: `tril`, `triu` and their kin, a row at a time.
fn keep_columns<T: Element>(x: &Tensor<T>, cols: impl Fn(usize) -> Range<usize>) -> Tensor<T> {
    let shape = x.shape();
    let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    let data = elements(x);
    let mut out = vec![T::zero(); data.len()];
    if n > 0 {
        for (r, (src, dst)) in data
            .chunks_exact(n)
            .zip(out.chunks_exact_mut(n))
            .enumerate()
        {
            let keep = cols(r % m);
            dst[keep.clone()].copy_from_slice(&src[keep]);
        }
    }
    Tensor::from_vec(out, shape)
}

/// The columns of row `i` on or below the `k`-th diagonal, of `n` columns.
fn columns_below(i: usize, k: isize, n: usize) -> Range<usize> {
    0..(i as isize + k + 1).clamp(0, n as isize) as usize
}

/// The columns of row `i` on or above the `k`-th diagonal, of `n` columns.
fn columns_above(i: usize, k: isize, n: usize) -> Range<usize> {
    (i as isize + k).clamp(0, n as isize) as usize..n
}

// ---- kernels on one row-major matrix ----------------------------------------------------------

/// The lower Cholesky factor of the `n × n` matrix `a` (its lower triangle read), or the index
/// of the first pivot that is not positive.
fn cholesky_kernel<T: Element>(a: &[T], n: usize) -> Result<Vec<T>, (usize, T)> {
    let mut l = vec![T::zero(); n * n];
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            d -= l[j * n + k] * l[j * n + k];
        }
        if d <= T::zero() || d.is_nan() {
            return Err((j, d));
        }
        let d = d.sqrt();
        l[j * n + j] = d;
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            l[i * n + j] = s / d;
        }
    }
    Ok(l)
}

/// One step of Gaussian elimination on the row-major `n × n` matrix `lu`: the multipliers of
/// column `k` below the (non-zero) pivot `lu[k][k]` stored in place of the entries they
/// eliminate, and the trailing rows updated. Both LUs (partial and complete pivoting) run it.
fn eliminate_below<T: Element>(lu: &mut [T], n: usize, k: usize) {
    let pivot = lu[k * n + k];
    for i in k + 1..n {
        let f = lu[i * n + k] / pivot;
        lu[i * n + k] = f;
        for j in k + 1..n {
            let u = lu[k * n + j];
            lu[i * n + j] -= f * u;
        }
    }
}

/// Solves `op(T) X = B` in place (`B` is `n × k`), `T` the lower or upper triangle of `t`.
fn triangular_kernel<T: Element>(
    t: &[T],
    n: usize,
    b: &mut [T],
    k: usize,
    lower: bool,
    transpose: bool,
) {
    let at = |i: usize, j: usize| {
        if transpose {
            t[j * n + i]
        } else {
            t[i * n + j]
        }
    };
    let forward = lower != transpose;
    let rows: Box<dyn Iterator<Item = usize>> = if forward {
        Box::new(0..n)
    } else {
        Box::new((0..n).rev())
    };
    for i in rows {
        let known: Box<dyn Iterator<Item = usize>> = if forward {
            Box::new(0..i)
        } else {
            Box::new(i + 1..n)
        };
        for j in known {
            let f = at(i, j);
            for c in 0..k {
                let v = b[j * k + c];
                b[i * k + c] -= f * v;
            }
        }
        let d = at(i, i);
        for c in 0..k {
            b[i * k + c] /= d;
        }
    }
}

/// An LU factorization with partial pivoting, `P A = L U`: `L` (unit diagonal) below the
/// diagonal of `lu`, `U` on and above it; row `i` of `P A` is row `perm[i]` of `A`.
struct Lu<T> {
    lu: Vec<T>,
    perm: Vec<usize>,
    singular: bool,
}

fn lu_kernel<T: Element>(a: &[T], n: usize) -> Lu<T> {
    let mut lu = a.to_vec();
    let mut perm: Vec<usize> = (0..n).collect();
    let mut singular = false;
    for k in 0..n {
        let mut p = k;
        for i in k + 1..n {
            if lu[i * n + k].abs() > lu[p * n + k].abs() {
                p = i;
            }
        }
        if p != k {
            for j in 0..n {
                lu.swap(p * n + j, k * n + j);
            }
            perm.swap(p, k);
        }
        if lu[k * n + k] == T::zero() {
            singular = true;
            continue;
        }
        eliminate_below(&mut lu, n, k);
    }
    Lu { lu, perm, singular }
}

impl<T: Element> Lu<T> {
    /// `A⁻¹ B` for `B` of `n × k`.
    fn solve(&self, b: &[T], n: usize, k: usize) -> Vec<T> {
        let mut x = vec![T::zero(); n * k];
        for i in 0..n {
            x[i * k..(i + 1) * k].copy_from_slice(&b[self.perm[i] * k..(self.perm[i] + 1) * k]);
        }
        for i in 0..n {
            for j in 0..i {
                let f = self.lu[i * n + j];
                for c in 0..k {
                    let v = x[j * k + c];
                    x[i * k + c] -= f * v;
                }
            }
        }
        triangular_kernel(&self.lu, n, &mut x, k, false, false);
        x
    }
}

/// An LU factorization with complete pivoting, `P A Q = L M`, that stops at the first step whose
/// largest remaining entry is exactly zero: `det`, `sign_det`, `logabsdet` and the rules of
/// `det` and `logabsdet` read it.
///
/// With `r` pivots, `L = [[L₁₁, 0], [L₂₁, I]]` is unit lower triangular and `M = [[U₁₁, U₁₂], [0,
/// S]]`, `U₁₁` upper triangular with non-zero pivots and `S` (`k × k`, `k = n - r`) the Schur
/// complement left, whose values are all exactly zero when `k > 0` (it is empty for an
/// invertible matrix). A matrix's rank is `r` when no rounding hides a zero; a matrix that is
/// singular only up to rounding factors fully, with a tiny last pivot.
///
/// Complete pivoting is what makes the adjugate (the derivative of `det`) right on dual numbers
/// at a singular matrix, which `f_hvp` needs: the factorization divides only by pivots whose
/// values are not zero, so for fixed `P` and `Q` the formulas below are rational functions of
/// `A` equal to `adj(A)` and `det A` on a whole neighbourhood of it, whatever `S` holds, and dual
/// numbers differentiate them exactly. Partial pivoting can meet a zero pivot above rows that
/// are not zero, and skipping that column then gives formulas that hold at the point only, with
/// wrong derivatives (`det [[0, 1], [0, 1]]`'s would miss the entry `-1` of its cofactors).
struct Pivoted<T> {
    n: usize,
    /// `L` below the diagonal of the first `rank` columns; `U₁₁` and `U₁₂` on and above the
    /// diagonal of the first `rank` rows; `S` in rows and columns `rank..n`.
    lu: Vec<T>,
    /// Row `i` of `P A Q` is row `rows[i]` of `A`...
    rows: Vec<usize>,
    /// ... and its column `j` is column `cols[j]` of `A`.
    cols: Vec<usize>,
    /// `det P · det Q`: `-1` after an odd number of swaps.
    sign: T,
    rank: usize,
}

fn pivoted_kernel<T: Element>(a: &[T], n: usize) -> Pivoted<T> {
    let mut lu = a.to_vec();
    let (mut rows, mut cols): (Vec<usize>, Vec<usize>) = ((0..n).collect(), (0..n).collect());
    let mut sign = T::one();
    let mut rank = n;
    for k in 0..n {
        let (mut p, mut q) = (k, k);
        for i in k..n {
            for j in k..n {
                if lu[i * n + j].abs() > lu[p * n + q].abs() {
                    (p, q) = (i, j);
                }
            }
        }
        if lu[p * n + q] == T::zero() {
            rank = k;
            break;
        }
        if p != k {
            for j in 0..n {
                lu.swap(p * n + j, k * n + j);
            }
            rows.swap(p, k);
            sign = -sign;
        }
        if q != k {
            for i in 0..n {
                lu.swap(i * n + q, i * n + k);
            }
            cols.swap(q, k);
            sign = -sign;
        }
        eliminate_below(&mut lu, n, k);
    }
    Pivoted {
        n,
        lu,
        rows,
        cols,
        sign,
        rank,
    }
}

impl<T: Element> Pivoted<T> {
    fn at(&self, i: usize, j: usize) -> T {
        self.lu[i * self.n + j]
    }

    /// The product of the pivots, `det U₁₁`.
    fn pivot_product(&self) -> T {
        (0..self.rank).map(|t| self.at(t, t)).product()
    }

    /// `det S` and `adj S` of the trailing block (`1` and the empty matrix when there is none).
    /// Their values are those of a zero block; their tangents, on dual numbers, are not zero
    /// in general, and the polynomial formula of `faddeev_leverrier` gives them exactly. A block
    /// that is exactly zero (always so for `f32` and `f64`) is not worth that formula.
    fn trailing(&self) -> (T, Vec<T>) {
        let (r, n) = (self.rank, self.n);
        let k = n - r;
        let s: Vec<T> = (r..n)
            .flat_map(|i| (r..n).map(move |j| (i, j)))
            .map(|(i, j)| self.at(i, j))
            .collect();
        if k == 0 {
            return (T::one(), s);
        }
        if s.iter().all(|x| x.is_exact_zero()) {
            let adj = if k == 1 {
                vec![T::one()]
            } else {
                vec![T::zero(); k * k]
            };
            return (T::zero(), adj);
        }
        faddeev_leverrier(&s, k)
    }

    /// `det A = det P · det Q · det U₁₁ · det S`.
    fn det(&self) -> T {
        self.sign * self.pivot_product() * self.trailing().0
    }

    /// The sign of `det A`: `±1`, `0` for a singular matrix.
    fn sign_det(&self) -> T {
        if self.rank < self.n {
            return T::zero();
        }
        let negatives = (0..self.n).filter(|&t| self.at(t, t) < T::zero()).count();
        if negatives % 2 == 1 {
            -self.sign
        } else {
            self.sign
        }
    }

    /// `ln |det A|`, summed over the pivots so that it neither overflows nor underflows; `-inf`
    /// for a singular matrix (the logarithm of `det S`, whose value is zero).
    fn logabsdet(&self) -> T {
        let pivots: T = (0..self.rank).map(|t| self.at(t, t).abs().ln()).sum();
        if self.rank < self.n {
            pivots + self.trailing().0.abs().ln()
        } else {
            pivots
        }
    }

    /// `X L⁻¹` for an `n × n` matrix `X` of the factored `P A Q`, taken back to the rows and
    /// columns of `A` and transposed: entry `(rows[i], cols[j])` of the result is `scale · (X
    /// L⁻¹)ⱼᵢ`. (`A = Pᵀ L M Qᵀ`, so `adj(A) = det Q · Q adj(M) L⁻¹ · det P · P` and `A⁻¹ = Q
    /// M⁻¹ L⁻¹ P`.) `L` has a unit diagonal, so this never divides.
    fn unpivot_transposed(&self, mut x: Vec<T>, scale: T) -> Vec<T> {
        let n = self.n;
        // Row by row, z L = x: z_j = x_j - Σ_{i > j} z_i L_ij, from the last column back.
        for row in x.chunks_mut(n.max(1)) {
            for j in (0..self.rank).rev() {
                let later: T = (j + 1..n).map(|i| row[i] * self.at(i, j)).sum();
                row[j] -= later;
            }
        }
        let mut out = vec![T::zero(); n * n];
        for i in 0..n {
            for j in 0..n {
                out[self.rows[i] * n + self.cols[j]] = scale * x[j * n + i];
            }
        }
        out
    }

    /// The cofactor matrix `adj(A)ᵀ`, the gradient of `det`, through `adj(M)` of the block
    /// triangular `M`: `[[det S · adj U₁₁, -adj U₁₁ · U₁₂ · adj S], [0, det U₁₁ · adj S]]`. This is
    /// `det M · M⁻¹` where `M` is invertible and a polynomial in the blocks everywhere, and no
    /// part of it divides: it is right at a singular matrix (where `adj S` is `I` for `k = 1`,
    /// giving a rank-one adjugate, and zero for `k ≥ 2`), and on dual numbers there.
    fn cofactors(&self) -> Vec<T> {
        let (n, r) = (self.n, self.rank);
        let (det_s, adj_s) = self.trailing();
        let adj_u = triangular_adjugate(|i, j| self.at(i, j), r);
        let det_u = self.pivot_product();
        let mut adj_m = vec![T::zero(); n * n];
        for i in 0..r {
            for j in i..r {
                adj_m[i * n + j] = det_s * adj_u[i * r + j];
            }
        }
        for i in 0..r {
            // Row i of adj U₁₁ · U₁₂ (adj U₁₁ is upper triangular), then times adj S.
            let w: Vec<T> = (r..n)
                .map(|c| (i..r).map(|t| adj_u[i * r + t] * self.at(t, c)).sum())
                .collect();
            for j in r..n {
                let v: T = (r..n)
                    .map(|c| w[c - r] * adj_s[(c - r) * (n - r) + j - r])
                    .sum();
                adj_m[i * n + j] = -v;
            }
        }
        for i in r..n {
            for j in r..n {
                adj_m[i * n + j] = det_u * adj_s[(i - r) * (n - r) + j - r];
            }
        }
        self.unpivot_transposed(adj_m, self.sign)
    }

    /// `A⁻ᵀ` of an invertible matrix (`rank == n`): `Q U⁻¹ L⁻¹ P`, transposed, `U⁻¹` by back
    /// substitution.
    fn inverse_transpose(&self) -> Vec<T> {
        let n = self.n;
        let mut x = vec![T::zero(); n * n];
        for j in 0..n {
            let d = self.at(j, j);
            x[j * n + j] = T::one() / d;
            for i in (0..j).rev() {
                let s: T = (i..j).map(|k| x[i * n + k] * self.at(k, j)).sum();
                x[i * n + j] = -s / d;
            }
        }
        self.unpivot_transposed(x, T::one())
    }
}

/// `adj(U)` of the upper triangular `r × r` matrix `u(i, j)` (read on and above the diagonal),
/// without dividing by its diagonal, so that it is a polynomial in the entries, exact whatever
/// the diagonal holds: `adj(U)ᵢⱼ = (Π_{t<i} u_tt) (Π_{t>j} u_tt) Wᵢⱼ` with `Wᵢᵢ = 1` and `Wᵢⱼ =
/// -Σ_{i≤k<j} Wᵢₖ u_kj Π_{k<t<j} u_tt` (`W` is `U⁻¹` scaled by `Π_{i≤t≤j} u_tt`, the product that
/// cancels the divisions of back substitution).
fn triangular_adjugate<T: Element>(u: impl Fn(usize, usize) -> T, r: usize) -> Vec<T> {
    let mut w = vec![T::zero(); r * r];
    for i in 0..r {
        w[i * r + i] = T::one();
        for j in i + 1..r {
            let (mut sum, mut between) = (T::zero(), T::one());
            for k in (i..j).rev() {
                sum += w[i * r + k] * u(k, j) * between;
                between *= u(k, k);
            }
            w[i * r + j] = -sum;
        }
    }
    let mut before = vec![T::one(); r + 1];
    let mut after = vec![T::one(); r + 1];
    for t in 0..r {
        before[t + 1] = before[t] * u(t, t);
        after[r - 1 - t] = after[r - t] * u(r - 1 - t, r - 1 - t);
    }
    // adj[i][j] = before[i] · after[j + 1] · W[i][j].
    for i in 0..r {
        for j in i..r {
            w[i * r + j] = before[i] * after[j + 1] * w[i * r + j];
        }
    }
    w
}

/// `det S` and `adj S` of the `k × k` matrix `s` by the Faddeev–LeVerrier recurrence, `M₀ = 0`,
/// `c_k = 1`, `Mₘ = S Mₘ₋₁ + c_{k-m+1} I`, `c_{k-m} = -tr(S Mₘ) / m`; then `det S = (-1)ᵏ c₀`
/// and `adj S = (-1)^(k-1) M_k`. It divides only by the integers `1..=k`, so it is a polynomial
/// in `S`: exact on dual numbers whose values are zero, which is all it is given (the trailing
/// block of [`Pivoted`]); on general matrices it would lose accuracy.
fn faddeev_leverrier<T: Element>(s: &[T], k: usize) -> (T, Vec<T>) {
    let mut m = vec![T::zero(); k * k];
    let mut c = T::one();
    for step in 1..=k {
        let mut next: Vec<T> = (0..k * k)
            .map(|idx| {
                let (i, j) = (idx / k, idx % k);
                (0..k).map(|t| s[i * k + t] * m[t * k + j]).sum()
            })
            .collect();
        for i in 0..k {
            next[i * k + i] += c;
        }
        m = next;
        let trace: T = (0..k)
            .flat_map(|i| (0..k).map(move |t| (i, t)))
            .map(|(i, t)| s[i * k + t] * m[t * k + i])
            .sum();
        c = -trace / T::from_f64(step as f64);
    }
    if k.is_multiple_of(2) {
        (c, m.into_iter().map(|x| -x).collect())
    } else {
        (-c, m)
    }
}

/// The size up to which `det`, `logabsdet` and `sign_det` always pivot completely.
const SMALL_DET: usize = 16;

/// `ln |det A|` from faer's partial-pivot LU factors of `A`.
fn lu_logabsdet<T: Element>(f: &LuFactors<T>) -> T {
    f.pivots.iter().map(|p| p.abs().ln()).sum()
}

/// Whether faer's partial-pivot LU leaves no doubt that the matrix is invertible: every pivot
/// finite and above `n ε` times the largest. Elsewhere, singular matrices included, the
/// completely pivoted kernel decides, which gives a singular matrix its exact zero pivots.
fn clearly_invertible<T: Element>(f: &LuFactors<T>) -> bool {
    let largest = f.pivots.iter().fold(T::zero(), |m, p| m.max(p.abs()));
    let floor = T::from_f64(f.pivots.len() as f64) * T::epsilon() * largest;
    largest.is_finite() && f.pivots.iter().all(|p| p.abs() > floor)
}

fn singular_error(op: &'static str, b: usize, shape: &[usize]) -> ShapeError {
    ShapeError::singular(
        op,
        format!("matrix {b} of the batch of shape {shape:?} is singular (a zero pivot)"),
    )
}

// ---- rules ------------------------------------------------------------------------------------

/// Rules of the matrix functions (see the module's conventions).
pub mod rules {
    pub use super::einsum::rules::*;
    pub use super::factor::rules::*;
    pub use super::products::rules::*;
    pub use super::solve::rules::*;
    pub use super::structure::rules::*;
    use super::*;

    /// `x` with two unit axes appended: a value per matrix, broadcast over its matrix.
    pub(super) fn per_matrix<T: Element>(x: &Tensor<T>) -> Tensor<T> {
        let mut shape = x.shape().to_vec();
        shape.extend([1, 1]);
        x.reshape(&shape)
    }

    /// The lower triangle with the diagonal halved: Murray's `Φ`.
    pub(super) fn phi<T: Element>(x: &Tensor<T>) -> Tensor<T> {
        let half = T::from_f64(0.5);
        x.tril(-1) + x.diagonal().diag() * half
    }

    /// The symmetric matrix whose lower triangle is that of `x`.
    pub(super) fn symmetric_from_lower<T: Element>(x: &Tensor<T>) -> Tensor<T> {
        x.tril(0) + x.tril(-1).t()
    }

    /// The gradient with respect to the lower triangle of a symmetric input from `ā`:
    /// `ā + āᵀ` below the diagonal, `ā` on it, zero above.
    pub(super) fn fold_onto_lower<T: Element>(a: &Tensor<T>) -> Tensor<T> {
        (a + &a.t()).tril(-1) + a.diagonal().diag()
    }

    /// The triangle of `a` that `solve_triangular` reads.
    pub(super) fn triangle<T: Element>(a: &Tensor<T>, lower: bool) -> Tensor<T> {
        if lower {
            a.tril(0)
        } else {
            a.triu(0)
        }
    }

    /// The gradient of `ln |det A|` for each matrix: `A⁻ᵀ`; at a singular matrix `adj(A)ᵀ / 0`,
    /// `±∞` where a cofactor is not zero and NaN where it is (see [`logabsdet_vjp`]).
    #[track_caller]
    pub(super) fn log_det_gradient<T: Element>(op: &'static str, a: &Tensor<T>) -> Tensor<T> {
        let inverse_transpose = |f: &LuFactors<T>| {
            let kernels = T::factor_kernels().expect("faer factored the matrix");
            (kernels.lu_inverse)(f, true)
        };
        a.pivoted_map(op, inverse_transpose, |p| {
            if p.rank == p.n {
                p.inverse_transpose()
            } else {
                p.cofactors().into_iter().map(|c| c / T::zero()).collect()
            }
        })
        .or_panic()
    }

    /// The cofactor matrix `adj(A)ᵀ` of each matrix, the gradient of `det`: right at every
    /// matrix, singular ones included (see `Pivoted::cofactors`).
    #[track_caller]
    pub(super) fn cofactors<T: Element>(op: &'static str, a: &Tensor<T>) -> Tensor<T> {
        // `det A · A⁻ᵀ` where faer finds `A` clearly invertible.
        let scaled = |f: &LuFactors<T>| {
            let kernels = T::factor_kernels().expect("faer factored the matrix");
            let det = f.sign * f.pivots.iter().copied().product::<T>();
            let mut inverse_transpose = (kernels.lu_inverse)(f, true);
            inverse_transpose.iter_mut().for_each(|x| *x = det * *x);
            inverse_transpose
        };
        a.pivoted_map(op, scaled, Pivoted::cofactors).or_panic()
    }

    /// `Σ x ∘ y` over the matrix axes: `tr(xᵀ y)` of each pair of matrices.
    pub(super) fn matrix_inner<T: Element>(x: &Tensor<T>, y: &Tensor<T>) -> Tensor<T> {
        let n = x.ndim() as isize;
        (x * y).sum_axes(&[n - 2, n - 1], false)
    }

    /// The tangent `db` of a right-hand side broadcast to the solution's shape (zeros when
    /// absent).
    pub(super) fn rhs_tangent<T: Element>(db: Option<&Tensor<T>>, shape: &[usize]) -> Tensor<T> {
        db.map_or_else(|| Tensor::zeros(shape), |d| d.broadcast_to(shape))
    }
}
