//! The factorizations' generic kernels on one row-major matrix (any element type, dual numbers
//! included): QR by modified Gram–Schmidt twice, `eigh` and `svd` by Jacobi rotations, their
//! order and signs, and the sign of a determinant from faer's LU factors.

use super::*;

/// The sign of `det A` from faer's partial-pivot LU factors of `A`.
pub(super) fn lu_sign_det<T: Element>(f: &LuFactors<T>) -> T {
    let negatives = f.pivots.iter().filter(|&&p| p < T::zero()).count();
    if negatives % 2 == 1 {
        -f.sign
    } else {
        f.sign
    }
}

/// The sign of `x` with `+1` at zero.
pub(super) fn sign_of<T: Element>(x: T) -> T {
    if x < T::zero() {
        -T::one()
    } else {
        T::one()
    }
}

/// `(c, s)` of the Jacobi rotation that annihilates the off-diagonal entry `off` of a symmetric
/// pair whose diagonal entries differ by `diff = a_qq - a_pp`: `t = s / c` is the smaller root of
/// `t² + 2ζt - 1 = 0`, `ζ = diff / (2 off)`, written as `t = 2 off sign(diff) / (|diff| +
/// hypot(diff, 2 off))` so that it neither divides by `off` nor overflows. On dual numbers the
/// pair's off-diagonal value is often exactly zero while its tangent is not (a diagonal matrix
/// pushed along a full direction, or two columns that the previous rotation made orthogonal to
/// the last bit): this form gives `t = 0` with the tangent `off' / diff`, the rotation that
/// annihilates the tangent, where `ζ = ±∞` gave `t`'s tangent `∞ · 0 = NaN`.
pub(super) fn rotation<T: Element>(diff: T, off: T) -> (T, T) {
    let two_off = off + off;
    let t = two_off * sign_of(diff) / (diff.abs() + diff.hypot(two_off));
    let c = T::one() / t.hypot(T::one());
    (c, c * t)
}

/// Whether a Jacobi method leaves the pair with off-diagonal entry `off` and diagonal difference
/// `diff` alone: when `off` is exactly zero (value and tangent, on dual numbers), and when the
/// values of both are zero, a repeated eigen- or singular value whose pair is already diagonal.
/// There the rotation that would diagonalise the tangents is not a function of the values (it
/// is `0 / 0`), and the pair is left as it is: the eigenvalues' tangents are then the diagonal
/// of `Vᵀ dA V` in the basis returned, as the rule `eigvalsh_jvp` gives.
pub(super) fn leave_alone<T: Element>(diff: T, off: T) -> bool {
    off.is_exact_zero() || (off == T::zero() && diff == T::zero())
}

/// Rotates columns `p` and `q` of the `rows × cols` matrix `x`: `(xp, xq) ← (c xp - s xq, s xp +
/// c xq)`.
pub(super) fn rotate_columns<T: Element>(x: &mut [T], cols: usize, p: usize, q: usize, c: T, s: T) {
    for row in x.chunks_mut(cols) {
        let (xp, xq) = (row[p], row[q]);
        row[p] = c * xp - s * xq;
        row[q] = s * xp + c * xq;
    }
}

/// The dot product of columns `p` and `q` of `x` (`cols` wide).
pub(super) fn column_dot<T: Element>(x: &[T], cols: usize, p: usize, q: usize) -> T {
    x.chunks(cols).map(|row| row[p] * row[q]).sum()
}

/// Sweeps of Jacobi methods before giving up on convergence (they converge quadratically, in
/// under ten sweeps for the matrices they are meant for).
pub(super) const MAX_SWEEPS: usize = 60;

/// `Q` (`m × k`) and `R` (`k × n`), `k = min(m, n)`, of the reduced QR factorization, `R` with
/// a positive diagonal; `Err(j)` when column `j < k` depends on the ones before it. A wide
/// matrix `[X | Y]` (`X` its first `m` columns) is `Q [R_X | Qᵀ Y]` for `X = Q R_X`.
pub(super) fn qr_kernel<T: Element>(
    a: &[T],
    m: usize,
    n: usize,
) -> Result<(Vec<T>, Vec<T>), usize> {
    if m < n {
        let x: Vec<T> = a.chunks(n).flat_map(|row| row[..m].to_vec()).collect();
        let (q, rx) = qr_kernel(&x, m, m)?;
        let r = (0..m * n)
            .map(|idx| {
                let (i, j) = (idx / n, idx % n);
                if j < m {
                    rx[i * m + j]
                } else {
                    (0..m).map(|p| q[p * m + i] * a[p * n + j]).sum()
                }
            })
            .collect();
        return Ok((q, r));
    }
    let mut q = a.to_vec();
    let mut r = vec![T::zero(); n * n];
    for j in 0..n {
        for _pass in 0..2 {
            for i in 0..j {
                let d = column_dot(&q, n, i, j);
                r[i * n + j] += d;
                for row in q.chunks_mut(n) {
                    let qi = row[i];
                    row[j] -= d * qi;
                }
            }
        }
        let norm = column_dot(&q, n, j, j).sqrt();
        if norm == T::zero() || !norm.is_finite() {
            return Err(j);
        }
        r[j * n + j] = norm;
        for row in q.chunks_mut(n) {
            row[j] /= norm;
        }
    }
    debug_assert_eq!(q.len(), m * n);
    Ok((q, r))
}

/// [`qr_kernel`]'s factors: faer's for `f32` and `f64` when its `R` has no diagonal entry at or
/// below `(m + n) ε` times the largest (about Householder QR's backward error: below it, a
/// column may depend on the ones before it up to rounding), each row of `R` (and column of `Q`) signed so that the diagonal
/// is positive; the generic kernel's otherwise, which decides whether a column depends on the
/// ones before it.
pub(super) fn qr_factors<T: Element>(
    a: &[T],
    m: usize,
    n: usize,
) -> Result<(Vec<T>, Vec<T>), usize> {
    if let Some(kernels) = T::factor_kernels() {
        let (mut q, mut r) = (kernels.qr)(a, m, n);
        let k = m.min(n);
        let largest = (0..k).fold(T::zero(), |x, j| x.max(r[j * n + j].abs()));
        let floor = T::from_f64((m + n) as f64) * T::epsilon() * largest;
        if largest.is_finite() && (0..k).all(|j| r[j * n + j].abs() > floor) {
            for j in 0..k {
                if r[j * n + j] < T::zero() {
                    r[j * n..(j + 1) * n].iter_mut().for_each(|x| *x = -*x);
                    q.chunks_mut(k).for_each(|row| row[j] = -row[j]);
                }
            }
            return Ok((q, r));
        }
    }
    qr_kernel(a, m, n)
}

/// Orders the columns of `vectors` (`rows × k`) by `values` (ascending or descending), and signs
/// each so that its largest component is positive, flipping the same column of `partner` (`prows
/// × k`) with it.
pub(super) fn order_and_sign<T: Element>(
    values: &mut Vec<T>,
    vectors: &mut Vec<T>,
    rows: usize,
    mut partner: Option<(&mut Vec<T>, usize)>,
    ascending: bool,
) {
    let k = values.len();
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&i, &j| {
        let o = values[i]
            .partial_cmp(&values[j])
            .unwrap_or(std::cmp::Ordering::Equal);
        if ascending {
            o
        } else {
            o.reverse()
        }
    });
    let permute = |x: &[T], rows: usize| -> Vec<T> {
        (0..rows)
            .flat_map(|r| order.iter().map(move |&c| x[r * k + c]))
            .collect()
    };
    *values = order.iter().map(|&i| values[i]).collect();
    *vectors = permute(vectors, rows);
    if let Some((p, prows)) = partner.as_mut() {
        **p = permute(p, *prows);
    }
    for c in 0..k {
        let mut big = 0;
        for r in 1..rows {
            if vectors[r * k + c].abs() > vectors[big * k + c].abs() {
                big = r;
            }
        }
        if vectors[big * k + c] < T::zero() {
            for r in 0..rows {
                vectors[r * k + c] = -vectors[r * k + c];
            }
            if let Some((p, prows)) = partner.as_mut() {
                for r in 0..*prows {
                    p[r * k + c] = -p[r * k + c];
                }
            }
        }
    }
}

/// Eigenvalues (ascending) and eigenvectors (columns) of the symmetric `n × n` matrix whose
/// lower triangle is that of `a`, by cyclic Jacobi.
pub(super) fn jacobi_eigh<T: Element>(a: &[T], n: usize) -> (Vec<T>, Vec<T>) {
    let mut s: Vec<T> = (0..n * n)
        .map(|idx| {
            let (i, j) = (idx / n, idx % n);
            if i >= j {
                a[idx]
            } else {
                a[j * n + i]
            }
        })
        .collect();
    let mut v: Vec<T> = (0..n * n)
        .map(|idx| {
            if idx % (n + 1) == 0 {
                T::one()
            } else {
                T::zero()
            }
        })
        .collect();
    // A pair is rotated while its off-diagonal entry is above `ε √|a_pp a_qq|` (the test that
    // keeps small eigenvalues accurate); once none is, one more sweep rotates every pair that is
    // not exactly zero: on dual numbers it annihilates the off-diagonal tangents.
    let (eps, tiny) = (T::epsilon(), T::min_positive_value());
    let mut finishing = false;
    for _ in 0..MAX_SWEEPS {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let apq = s[p * n + q];
                let (app, aqq) = (s[p * n + p], s[q * n + q]);
                let small = apq.abs() <= eps * (app * aqq).abs().sqrt()
                    || apq.abs() <= tiny
                    || apq.is_nan();
                if leave_alone(aqq - app, apq) || (small && !finishing) {
                    continue;
                }
                rotated |= !small;
                let (c, sn) = rotation(aqq - app, apq);
                rotate_columns(&mut s, n, p, q, c, sn);
                for k in 0..n {
                    let (sp, sq) = (s[p * n + k], s[q * n + k]);
                    s[p * n + k] = c * sp - sn * sq;
                    s[q * n + k] = sn * sp + c * sq;
                }
                // The rotation zeroes the pair (its value and, on dual numbers, its tangent).
                s[p * n + q] = T::zero();
                s[q * n + p] = T::zero();
                rotate_columns(&mut v, n, p, q, c, sn);
            }
        }
        if finishing {
            break;
        }
        finishing = !rotated;
    }
    let mut w: Vec<T> = (0..n).map(|i| s[i * n + i]).collect();
    order_and_sign(&mut w, &mut v, n, None, true);
    (w, v)
}

/// The thin SVD of the `m × n` matrix `a` with `m >= n`, by one-sided Jacobi: `U` (`m × n`), `s`
/// (descending) and `V` (`n × n`, columns the right singular vectors).
pub(super) fn svd_tall_kernel<T: Element>(a: &[T], m: usize, n: usize) -> (Vec<T>, Vec<T>, Vec<T>) {
    let mut u = a.to_vec();
    let mut v: Vec<T> = (0..n * n)
        .map(|idx| {
            if idx % (n + 1) == 0 {
                T::one()
            } else {
                T::zero()
            }
        })
        .collect();
    let eps = T::epsilon();
    // Once no pair is above the threshold, one more sweep rotates every pair that is not exactly
    // orthogonal: on dual numbers it annihilates the tangents of the columns' inner products.
    let mut finishing = false;
    for _ in 0..MAX_SWEEPS {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let alpha = column_dot(&u, n, p, p);
                let beta = column_dot(&u, n, q, q);
                let gamma = column_dot(&u, n, p, q);
                let small = gamma.abs() <= eps * (alpha * beta).sqrt() || gamma.is_nan();
                if leave_alone(beta - alpha, gamma) || (small && !finishing) {
                    continue;
                }
                rotated |= !small;
                let (c, s) = rotation(beta - alpha, gamma);
                rotate_columns(&mut u, n, p, q, c, s);
                rotate_columns(&mut v, n, p, q, c, s);
            }
        }
        if finishing {
            break;
        }
        finishing = !rotated;
    }
    let mut s: Vec<T> = (0..n).map(|j| column_dot(&u, n, j, j).sqrt()).collect();
    order_and_sign(&mut s, &mut u, m, Some((&mut v, n)), false);
    // Normalise the columns; those of zero singular values complete an orthonormal set.
    for j in 0..n {
        if s[j] > T::zero() {
            for row in u.chunks_mut(n) {
                row[j] /= s[j];
            }
        } else {
            complete_column(&mut u, m, n, j);
        }
    }
    (u, s, v)
}

/// Replaces column `j` of `u` (`m × n`, columns before `j` orthonormal) by a unit vector
/// orthogonal to them: the first unit basis vector that keeps enough of its length after two
/// passes of Gram–Schmidt.
pub(super) fn complete_column<T: Element>(u: &mut [T], m: usize, n: usize, j: usize) {
    let threshold = T::from_f64(0.5);
    let mut best = (T::zero(), vec![T::zero(); m]);
    for e in 0..m {
        let mut x: Vec<T> = (0..m)
            .map(|r| if r == e { T::one() } else { T::zero() })
            .collect();
        for _pass in 0..2 {
            for i in 0..j {
                let d: T = (0..m).map(|r| u[r * n + i] * x[r]).sum();
                for r in 0..m {
                    x[r] -= d * u[r * n + i];
                }
            }
        }
        let norm = x.iter().map(|&y| y * y).sum::<T>().sqrt();
        if norm > best.0 {
            best = (norm, x);
        }
        if best.0 > threshold {
            break;
        }
    }
    let (norm, x) = best;
    for r in 0..m {
        u[r * n + j] = x[r] / norm;
    }
}

/// The transpose of the `rows × cols` matrix `x`.
pub(super) fn transposed<T: Element>(x: &[T], rows: usize, cols: usize) -> Vec<T> {
    (0..cols)
        .flat_map(|c| (0..rows).map(move |r| x[r * cols + c]))
        .collect()
}

/// The thin SVD of the `m × n` matrix `a` by one-sided Jacobi: `U` (`m × k`), `s` (`k`), `Vh`
/// (`k × n`).
pub(super) fn jacobi_svd<T: Element>(a: &[T], m: usize, n: usize) -> (Vec<T>, Vec<T>, Vec<T>) {
    if m >= n {
        let (u, s, v) = svd_tall_kernel(a, m, n);
        (u, s, transposed(&v, n, n))
    } else {
        // Aᵀ = U' S V'ᵀ, so A = V' S U'ᵀ. The largest component of V' (now U) is made positive.
        let (u2, mut s, mut v2) = svd_tall_kernel(&transposed(a, m, n), n, m);
        let mut u2 = u2;
        order_and_sign(&mut s, &mut v2, m, Some((&mut u2, n)), false);
        (v2, s, transposed(&u2, n, m))
    }
}

/// Eigenvalues (ascending) and eigenvectors (columns, signed) of the symmetric `n × n` matrix
/// whose lower triangle is that of `a`: faer's for `f32` and `f64`, Jacobi's otherwise (or when
/// faer's does not converge).
pub(super) fn eigh_kernel<T: Element>(a: &[T], n: usize) -> (Vec<T>, Vec<T>) {
    if let Some((mut w, mut v)) = T::factor_kernels().and_then(|k| (k.eigh)(a, n)) {
        order_and_sign(&mut w, &mut v, n, None, true);
        return (w, v);
    }
    jacobi_eigh(a, n)
}

/// The thin SVD of the `m × n` matrix `a`, `U` (`m × k`), `s` (`k`, descending), `Vh` (`k × n`),
/// signed: faer's for `f32` and `f64`, Jacobi's otherwise (or when faer's does not converge).
pub(super) fn svd_kernel<T: Element>(a: &[T], m: usize, n: usize) -> (Vec<T>, Vec<T>, Vec<T>) {
    if let Some((mut u, mut s, mut v)) = T::factor_kernels().and_then(|k| (k.svd)(a, m, n)) {
        let k = s.len();
        order_and_sign(&mut s, &mut u, m, Some((&mut v, n)), false);
        return (u, s, transposed(&v, n, k));
    }
    jacobi_svd(a, m, n)
}
