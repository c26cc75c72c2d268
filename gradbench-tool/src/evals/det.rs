//! `det`: the determinant of an ℓ × ℓ matrix by expansion in minors along the first row, as
//! cmpad's `det_by_minor` (GradBench's reference) computes it: every minor is expanded again
//! wherever it occurs, none is computed once and reused, so the work grows as ℓ! (40 million
//! products at ℓ = 11). The gradient with respect to the matrix is `det_grad`'s, through the
//! whole expansion.
//!
//! The expansion is a function of numbers (no tensor in either pass): the matrix is a list of
//! numbers read by index, and each minor recurses on the list of its columns
//! ([`det_of_minor`]). A minor of five columns expands its last levels in two loops down to
//! 3×3 cofactors ([`minor3`]), so that the products are not each a call. Above
//! [`TAPED_COLUMNS`] columns the minors are checkpointed ([`checkpointed_minor`]): the backward
//! pass tapes one minor of eight columns at a time, not the whole expansion.
use rune_ad::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use super::{decode, timed, unknown_function, Outcome};
use crate::timing::Runs;

/// The 3×3 determinant `m₀₀ (m₁₁ m₂₂ − m₁₂ m₂₁) − m₀₁ (m₁₀ m₂₂ − m₁₂ m₂₀) + m₀₂ (m₁₀ m₂₁ −
/// m₁₁ m₂₀)`, the expansion of its first row in the order and with the signs `det_by_minor`
/// uses, so that it rounds as the reference does.
#[allow(clippy::too_many_arguments)]
#[differentiable]
pub fn minor3(
    m00: f64,
    m01: f64,
    m02: f64,
    m10: f64,
    m11: f64,
    m12: f64,
    m20: f64,
    m21: f64,
    m22: f64,
) -> f64 {
    m00 * (m11 * m22 - m12 * m21) - m01 * (m10 * m22 - m12 * m20) + m02 * (m10 * m21 - m11 * m20)
}

/// The determinant of the minor of `a` (`ell × ell`, row-major) made of rows `row..ell` and
/// the columns `cols` (as many, in increasing order): `Σⱼ (−1)ʲ a[row][cols[j]] · M_j`, `M_j`
/// the minor without `cols[j]`, summed in `j`'s order as `det_by_minor` sums.
///
/// A minor of five columns expands its 4×4 cofactors here, in an inner loop over their first
/// row, into 3×3 cofactors of the last three rows ([`minor3`]); a larger one recurses. Each
/// 3×3 cofactor reads its columns through `black_box`: the compiler would otherwise see that
/// two iterations of the unrolled inner loop share 2×2 minors and compute them once, which
/// is the memoisation this benchmark leaves out.
#[differentiable]
pub fn det_of_minor(
    a: &[f64],
    #[nodiff] ell: usize,
    #[nodiff] row: usize,
    #[nodiff] cols: &[usize],
) -> f64 {
    let m = cols.len();
    if m == 1 {
        return a[row * ell + cols[0]];
    }
    let mut det = 0.0;
    for j in 0..m {
        let mut rest = cols.to_vec();
        rest.remove(j);
        let minor = if m == 5 {
            let [q, r, s, t] = [1, 2, 3, 4].map(|i| (row + i) * ell);
            let mut cofactor = 0.0;
            for k in 0..4 {
                let c = std::hint::black_box([0, 1, 2].map(|i| rest[i + usize::from(i >= k)]));
                let term = a[q + rest[k]]
                    * minor3(
                        a[r + c[0]],
                        a[r + c[1]],
                        a[r + c[2]],
                        a[s + c[0]],
                        a[s + c[1]],
                        a[s + c[2]],
                        a[t + c[0]],
                        a[t + c[1]],
                        a[t + c[2]],
                    );
                if k % 2 == 0 {
                    cofactor += term;
                } else {
                    cofactor -= term;
                }
            }
            cofactor
        } else {
            det_of_minor(a, ell, row + 1, &rest)
        };
        let term = a[row * ell + cols[j]] * minor;
        if j % 2 == 0 {
            det += term;
        } else {
            det -= term;
        }
    }
    det
}

/// The most columns a minor is differentiated whole with: its tape (the values its backward
/// pass reads) then stays in the caches, about 2 MB.
pub const TAPED_COLUMNS: usize = 8;

/// [`det_of_minor`] again, for minors of more than [`TAPED_COLUMNS`] columns: the expansion's
/// first row here, each cofactor through this function again, checkpointed. A caller's
/// forward pass runs the plain expansion; its backward pass runs each cofactor's forward pass
/// again with its pullback, one at a time, so that at most one minor of `TAPED_COLUMNS`
/// columns is taped at a time (2.5 GB at ℓ = 11 otherwise, all of it page-faulted in).
#[differentiable(checkpoint)]
pub fn checkpointed_minor(
    a: &[f64],
    #[nodiff] ell: usize,
    #[nodiff] row: usize,
    #[nodiff] cols: &[usize],
) -> f64 {
    let m = cols.len();
    if m <= TAPED_COLUMNS {
        return det_of_minor(a, ell, row, cols);
    }
    let mut det = 0.0;
    for j in 0..m {
        let mut rest = cols.to_vec();
        rest.remove(j);
        let term = a[row * ell + cols[j]] * checkpointed_minor(a, ell, row + 1, &rest);
        if j % 2 == 0 {
            det += term;
        } else {
            det -= term;
        }
    }
    det
}

/// The determinant of `a` (`ell × ell`, row-major, `ell ≥ 1`) by expansion in minors.
#[differentiable]
pub fn det(a: &[f64], #[nodiff] ell: usize) -> f64 {
    let cols: Vec<usize> = (0..ell).collect();
    if ell <= TAPED_COLUMNS {
        det_of_minor(a, ell, 0, &cols)
    } else {
        checkpointed_minor(a, ell, 0, &cols)
    }
}

#[derive(Deserialize)]
struct Input {
    #[serde(rename = "A")]
    a: Vec<f64>,
    ell: usize,
    #[serde(flatten)]
    runs: Runs,
}

/// Decodes a `det` input into the matrix (row-major), its edge `ell` and its timing controls.
pub fn prepare(input: &Value) -> Result<(Vec<f64>, usize, Runs), String> {
    let Input { a, ell, runs } = decode("det", input)?;
    if ell == 0 || a.len() != ell * ell {
        return Err(format!(
            "det: A has {} entries, expected ell² = {} with ell ≥ 1",
            a.len(),
            ell * ell
        ));
    }
    Ok((a, ell, runs))
}

/// Runs `primal` or `gradient` on a `det` input.
pub fn evaluate(function: &str, input: &Value) -> Result<Outcome, String> {
    let (a, ell, runs) = prepare(input)?;
    match function {
        "primal" => Ok(timed(runs, &a, |a| det(a, ell), Value::from)),
        "gradient" => Ok(timed(runs, &a, |a| det_grad(a, ell), Value::from)),
        _ => Err(unknown_function("det", function)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `diag(d)` as a row-major list.
    fn diagonal(d: &[f64]) -> Vec<f64> {
        let n = d.len();
        (0..n * n)
            .map(|i| if i / n == i % n { d[i / n] } else { 0.0 })
            .collect()
    }

    /// The determinant of a diagonal matrix is the product of its diagonal, and its gradient
    /// the diagonal of the products of the other entries (every off-diagonal cofactor has a
    /// zero row): through the plain recursion (ℓ < 5), the five-column loops and the
    /// checkpointed minors (ℓ = 9).
    #[test]
    fn a_diagonal_matrix() {
        for ell in [1, 2, 3, 4, 5, 6, 7, 9] {
            let d: Vec<f64> = (0..ell).map(|i| 0.5 + i as f64 * 0.25).collect();
            let a = diagonal(&d);
            let product: f64 = d.iter().product();
            assert!((det(&a, ell) - product).abs() < 1e-14, "ell = {ell}");
            let g = det_grad(&a, ell);
            for (i, gi) in g.iter().enumerate() {
                let (r, c) = (i / ell, i % ell);
                let expected = if r == c { product / d[r] } else { 0.0 };
                assert!(
                    (gi - expected).abs() < 1e-14,
                    "ell = {ell}, entry {i}: {gi}"
                );
            }
        }
    }

    /// Exchanging two rows of the identity changes the determinant's sign.
    #[test]
    fn an_exchange_of_two_rows() {
        for ell in [2, 5, 6, 9] {
            let mut a = diagonal(&vec![1.0; ell]);
            a.swap(0, ell);
            a.swap(1, ell + 1);
            assert_eq!(det(&a, ell), -1.0, "ell = {ell}");
        }
    }

    #[test]
    fn a_matrix_of_the_wrong_size_is_refused() {
        let input = serde_json::json!({"A": [1.0, 2.0, 3.0], "ell": 2});
        let error = prepare(&input).unwrap_err();
        assert!(
            error.contains("A has 3 entries, expected ell² = 4"),
            "{error}"
        );
    }
}
