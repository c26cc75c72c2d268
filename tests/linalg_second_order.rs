//! `det`, `slogdet`, the SVD and `eigh` through generated code, to second order: `f_grad`,
//! `f_jvp`, `f_value_and_grad`, `f_vjp` and `f_pullback` (for `det`), and `f_hvp` (whose
//! backward pass runs the factorizations and their rules on dual numbers) at singular matrices and at ordinary ones, against values
//! derived by hand and central differences of `f_grad`.

use rune_ad::prelude::*;

// ---- helpers ---------------------------------------------------------------------------------

/// Asserts `|a - b| <= tol * (1 + |b|)` elementwise, naming the first element that fails.
#[track_caller]
fn assert_close(what: &str, got: &Tensor<f64>, want: &[f64], tol: f64) {
    let got = got.to_vec();
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (x, y)) in got.iter().zip(want).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{what}: element {i} is {x}, expected {y} (tolerance {tol:e}); all: {got:?}"
        );
    }
}

/// Central differences of a gradient along `d`: the Hessian times `d`.
fn hvp_by_differences(
    grad: impl Fn(&Tensor<f64>) -> Tensor<f64>,
    a: &Tensor<f64>,
    d: &Tensor<f64>,
) -> Vec<f64> {
    let h = 1e-5;
    ((grad(&(a + &(d * h))) - grad(&(a - &(d * h)))) / (2.0 * h)).to_vec()
}

/// Central differences of a function along `d`: its directional derivative.
fn jvp_by_differences(
    f: impl Fn(&Tensor<f64>) -> Tensor<f64>,
    a: &Tensor<f64>,
    d: &Tensor<f64>,
) -> f64 {
    let h = 1e-5;
    (f(&(a + &(d * h))).item() - f(&(a - &(d * h))).item()) / (2.0 * h)
}

/// `⟨x, y⟩` over all elements.
fn inner(x: &Tensor<f64>, y: &Tensor<f64>) -> f64 {
    (x * y).sum().item()
}

/// The cofactor matrix of a 2 × 2 matrix, `[[d, -c], [-b, a]]`: linear in the matrix.
fn cof2(m: &[f64]) -> Vec<f64> {
    vec![m[3], -m[2], -m[1], m[0]]
}

/// The cofactor matrix of a 3 × 3 matrix by its definition, `Cᵢⱼ = (-1)^(i+j)` times the minor
/// without row `i` and column `j`.
fn cof3(a: &[f64]) -> Vec<f64> {
    let others = |k: usize| match k {
        0 => [1, 2],
        1 => [0, 2],
        _ => [0, 1],
    };
    (0..9)
        .map(|idx| {
            let (i, j) = (idx / 3, idx % 3);
            let ([r0, r1], [c0, c1]) = (others(i), others(j));
            let minor = a[r0 * 3 + c0] * a[r1 * 3 + c1] - a[r0 * 3 + c1] * a[r1 * 3 + c0];
            if (i + j) % 2 == 0 {
                minor
            } else {
                -minor
            }
        })
        .collect()
}

/// The product of two 2 × 2 matrices, row-major.
fn mul2(x: &[f64], y: &[f64]) -> Vec<f64> {
    vec![
        x[0] * y[0] + x[1] * y[2],
        x[0] * y[1] + x[1] * y[3],
        x[2] * y[0] + x[3] * y[2],
        x[2] * y[1] + x[3] * y[3],
    ]
}

fn matrix(values: &[f64], shape: &[usize]) -> Tensor<f64> {
    Tensor::from_vec(values.to_vec(), shape)
}

// ---- det -------------------------------------------------------------------------------------

/// The sum of the determinants of a batch.
#[differentiable]
fn det_sum<T: Element>(a: &Tensor<T>) -> Tensor<T> {
    a.det().sum()
}

/// The sum of the squared determinants: its HVP reads `det`'s own tangent on dual numbers.
#[differentiable]
fn det_squared<T: Element>(a: &Tensor<T>) -> Tensor<T> {
    a.det().square().sum()
}

/// At singular matrices the gradient of `det` is the cofactor matrix (it panicked), and its
/// HVP the cofactors' derivative: for 2 × 2 matrices, whose cofactors are linear, `cof(D)`; for
/// `[[0]]` zero; for the zero 3 × 3 matrix zero (its cofactors are quadratic); else central
/// differences of `f_grad`.
#[test]
fn det_differentiates_to_second_order_at_singular_matrices() {
    let rank_two = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
    let rank_one = [1.0, 2.0, 3.0, 2.0, 4.0, 6.0, -1.0, -2.0, -3.0];
    // Every 2 × 2 minor of a rank-one matrix vanishes; those of [[1, 2, 3], [4, 5, 6], [7, 8,
    // 9]] do not all: C₀₀ = 5·9 - 6·8 = -3, C₁₁ = 1·9 - 3·7 = -12.
    assert!(cof3(&rank_one).iter().all(|&c| c == 0.0));
    assert_eq!((cof3(&rank_two)[0], cof3(&rank_two)[4]), (-3.0, -12.0));
    let cases: Vec<(&str, Tensor<f64>, Vec<f64>)> = vec![
        ("[[0]]", matrix(&[0.0], &[1, 1]), vec![1.0]),
        (
            "rank one 2 × 2",
            matrix(&[1.0, 2.0, 3.0, 6.0], &[2, 2]),
            vec![6.0, -3.0, -2.0, 1.0],
        ),
        (
            "rank two 3 × 3",
            matrix(&rank_two, &[3, 3]),
            cof3(&rank_two),
        ),
        ("rank one 3 × 3", matrix(&rank_one, &[3, 3]), vec![0.0; 9]),
        ("zero 3 × 3", Tensor::zeros(&[3, 3]), vec![0.0; 9]),
        (
            "batch: singular, invertible, zero",
            matrix(
                &[1.0, 2.0, 3.0, 6.0, 2.0, 1.0, 0.5, 3.0, 0.0, 0.0, 0.0, 0.0],
                &[3, 2, 2],
            ),
            [
                cof2(&[1.0, 2.0, 3.0, 6.0]),
                cof2(&[2.0, 1.0, 0.5, 3.0]),
                vec![0.0; 4],
            ]
            .concat(),
        ),
    ];
    for (label, a, cof) in cases {
        let d = Tensor::rand_normal(a.shape(), 0.0, 1.0, 31);
        let grad = det_sum_grad(&a);
        assert_close(label, &grad, &cof, 1e-14);
        let (value, g) = det_sum_value_and_grad(&a);
        assert_eq!(value.item(), a.det().sum().item(), "{label}");
        assert_eq!(g.to_vec(), grad.to_vec(), "{label}");
        let (_, g) = det_sum_vjp(&a, &Tensor::scalar(2.0));
        assert_close(
            label,
            &g,
            &cof.iter().map(|c| 2.0 * c).collect::<Vec<_>>(),
            1e-14,
        );
        let (_, pullback) = det_sum_pullback(&a);
        assert_close(label, &pullback(&Tensor::scalar(1.0)), &cof, 1e-14);
        let (_, tangent) = det_sum_jvp(&a, &d);
        let want = inner(&matrix(&cof, a.shape()), &d);
        assert!(
            (tangent.item() - want).abs() < 1e-13,
            "{label}: jvp {tangent:?} vs {want}"
        );
        let (g, hvp) = det_sum_hvp(&a, &d);
        assert_eq!(g.to_vec(), grad.to_vec(), "{label}");
        let fd = hvp_by_differences(det_sum_grad, &a, &d);
        assert_close(label, &hvp, &fd, 1e-8);
        let n = a.shape()[a.ndim() - 1];
        let dv = d.to_vec();
        let exact: Option<Vec<f64>> = match n {
            1 => Some(vec![0.0]),
            2 => Some(dv.chunks(4).flat_map(cof2).collect()),
            _ if label.starts_with("zero") => Some(vec![0.0; 9]),
            _ => None,
        };
        if let Some(exact) = exact {
            assert_close(label, &hvp, &exact, 1e-14);
        }
    }
    // In f32 too.
    let grad = det_sum_grad(&Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 6.0], &[2, 2]));
    assert_eq!(grad.to_vec(), vec![6.0, -3.0, -2.0, 1.0]);
}

/// `Σ det²`: at a singular matrix the gradient `2 det · cof` is zero and the HVP `2 cof ⟨cof,
/// D⟩` (the `det · cof(D)` term vanishes), which needs `det`'s tangent on dual numbers; at an
/// invertible one the HVP is `2 (cof ⟨cof, D⟩ + det · cof(D))`.
#[test]
fn squared_determinants_differentiate_to_second_order() {
    let d = matrix(&[0.3, -1.2, 0.7, 0.4], &[2, 2]);
    let dv = d.to_vec();
    for (m, det) in [([1.0, 2.0, 3.0, 6.0], 0.0), ([2.0, 1.0, 0.5, 3.0], 5.5)] {
        let a = matrix(&m, &[2, 2]);
        let cof = cof2(&m);
        let along: f64 = cof.iter().zip(&dv).map(|(c, x)| c * x).sum();
        let (value, grad) = det_squared_value_and_grad(&a);
        assert_close("value", &value, &[det * det], 1e-15);
        let want: Vec<f64> = cof.iter().map(|c| 2.0 * det * c).collect();
        assert_close("grad", &grad, &want, 1e-15);
        assert_close("f_grad", &det_squared_grad(&a), &want, 1e-15);
        let (_, tangent) = det_squared_jvp(&a, &d);
        assert_close("jvp", &tangent, &[2.0 * det * along], 1e-14);
        let (_, hvp) = det_squared_hvp(&a, &d);
        let want: Vec<f64> = cof
            .iter()
            .zip(cof2(&dv))
            .map(|(c, cd)| 2.0 * (c * along + det * cd))
            .collect();
        assert_close("hvp", &hvp, &want, 1e-14);
        assert_close(
            "hvp",
            &hvp,
            &hvp_by_differences(det_squared_grad, &a, &d),
            1e-8,
        );
    }
}

// ---- slogdet ---------------------------------------------------------------------------------

/// `ln |det A|` through the tuple form of `slogdet`.
#[differentiable]
fn log_abs_det<T: Element>(a: &Tensor<T>) -> Tensor<T> {
    let (_sign, logdet) = a.slogdet();
    logdet.sum()
}

/// At invertible matrices (of either sign) the gradient of `ln |det A|` is `A⁻ᵀ = cof(A) / det
/// A` and its HVP `-(A⁻¹ D A⁻¹)ᵀ`. At a singular matrix the value is `-∞` and the gradient, as
/// documented (`logabsdet_vjp`), `cof(A) / 0`: nothing panics.
#[test]
fn log_abs_det_differentiates_to_second_order() {
    let d = matrix(&[0.3, -1.2, 0.7, 0.4], &[2, 2]);
    for (m, det) in [([2.0, 1.0, 0.5, 3.0], 5.5), ([1.0, 2.0, 4.0, 3.0], -5.0)] {
        let a = matrix(&m, &[2, 2]);
        // A⁻¹ = adj(A) / det A, adj(A) = cof(A)ᵀ = [[d, -b], [-c, a]].
        let inv: Vec<f64> = [m[3], -m[1], -m[2], m[0]].iter().map(|x| x / det).collect();
        let inv_t = [inv[0], inv[2], inv[1], inv[3]];
        let (value, grad) = log_abs_det_value_and_grad(&a);
        assert_close("value", &value, &[det.abs().ln()], 1e-15);
        assert_close("grad", &grad, &inv_t, 1e-15);
        assert_eq!(log_abs_det_grad(&a).to_vec(), grad.to_vec());
        let (_, tangent) = log_abs_det_jvp(&a, &d);
        assert_close("jvp", &tangent, &[inner(&grad, &d)], 1e-14);
        let (_, hvp) = log_abs_det_hvp(&a, &d);
        let p = mul2(&mul2(&inv, &d.to_vec()), &inv);
        assert_close("hvp", &hvp, &[-p[0], -p[2], -p[1], -p[3]], 1e-14);
        assert_close(
            "hvp",
            &hvp,
            &hvp_by_differences(log_abs_det_grad, &a, &d),
            1e-8,
        );
    }
    // Singular: cofactors [[6, -3], [-2, 1]] over zero.
    let a = matrix(&[1.0, 2.0, 3.0, 6.0], &[2, 2]);
    let (value, grad) = log_abs_det_value_and_grad(&a);
    assert_eq!(value.item(), f64::NEG_INFINITY);
    let inf = f64::INFINITY;
    assert_eq!(grad.to_vec(), vec![inf, -inf, -inf, inf]);
    assert_eq!(log_abs_det_grad(&a).to_vec(), grad.to_vec());
    let (value, tangent) = log_abs_det_jvp(&a, &d);
    assert_eq!(value.item(), f64::NEG_INFINITY);
    assert!(!tangent.item().is_finite());
    let (g, _) = log_abs_det_hvp(&a, &d);
    assert_eq!(g.to_vec(), grad.to_vec());
}

// ---- the SVD ---------------------------------------------------------------------------------

/// The nuclear norm `Σ s`.
#[differentiable]
fn nuclear_norm<T: Element>(a: &Tensor<T>) -> Tensor<T> {
    a.svdvals().sum()
}

/// `Σ s² = ‖A‖²`: gradient `2A`, HVP `2D`.
#[differentiable]
fn squared_singular_values<T: Element>(a: &Tensor<T>) -> Tensor<T> {
    a.svdvals().square().sum()
}

/// The HVP of the nuclear norm at `[[2, 1], [0.5, 3]]` along ones, which was NaN. For a 2 × 2
/// matrix with `det A > 0`, `(s₁ + s₂)² = ‖A‖² + 2 det A`, so `f = √(‖A‖² + 2 det A)`, `∇f = (A +
/// cof A) / f` and `H D = (D + cof D) / f - (A + cof A) ⟨A + cof A, D⟩ / f³`; here `A + cof A =
/// [[5, 0.5], [-0.5, 5]]`, `D + cof D = 2I`, `⟨A + cof A, D⟩ = 10` and `f = √25.25`. JAX prints
/// the HVP `[[0.00394, -0.0394], [0.0394, 0.00394]]`.
#[test]
fn nuclear_norm_of_a_two_by_two_matrix_has_its_closed_form_hessian() {
    let a = matrix(&[2.0, 1.0, 0.5, 3.0], &[2, 2]);
    let d = Tensor::ones(&[2, 2]);
    let f = 25.25f64.sqrt();
    let (value, grad) = nuclear_norm_value_and_grad(&a);
    assert_close("value", &value, &[f], 1e-15);
    let want = [5.0 / f, 0.5 / f, -0.5 / f, 5.0 / f];
    assert_close("grad", &grad, &want, 1e-14);
    assert_close("f_grad", &nuclear_norm_grad(&a), &want, 1e-14);
    let (_, tangent) = nuclear_norm_jvp(&a, &d);
    assert_close("jvp", &tangent, &[10.0 / f], 1e-14);
    let (g, hvp) = nuclear_norm_hvp(&a, &d);
    assert_close("hvp's grad", &g, &want, 1e-14);
    let (diag, off) = (2.0 / f - 50.0 / f.powi(3), 5.0 / f.powi(3));
    assert_close("hvp", &hvp, &[diag, -off, off, diag], 1e-13);
    for (got, jax) in hvp.to_vec().iter().zip([0.00394, -0.0394, 0.0394, 0.00394]) {
        // Three significant digits.
        assert!(
            (got - jax).abs() <= 5e-3 * jax.abs(),
            "{got} vs JAX's {jax}"
        );
    }
    assert_close(
        "hvp",
        &hvp,
        &hvp_by_differences(nuclear_norm_grad, &a, &d),
        1e-8,
    );
}

/// Matrices with distinct singular values: square, wide, tall and a batch.
fn ordinary_matrices() -> Vec<(&'static str, Tensor<f64>)> {
    vec![
        ("[4, 4]", Tensor::rand_normal(&[4, 4], 0.0, 1.0, 41)),
        ("[2, 5]", Tensor::rand_normal(&[2, 5], 0.0, 1.0, 42)),
        ("[5, 2]", Tensor::rand_normal(&[5, 2], 0.0, 1.0, 43)),
        ("[2, 5, 5]", Tensor::rand_normal(&[2, 5, 5], 0.0, 1.0, 44)),
    ]
}

/// The singular values to second order: the nuclear norm's gradient `U Vh` and its HVP against
/// central differences of `f_grad`; `Σ s²`'s gradient `2A` and HVP `2D`.
#[test]
fn singular_values_differentiate_to_second_order() {
    for (label, a) in ordinary_matrices() {
        let d = Tensor::rand_normal(a.shape(), 0.0, 1.0, 45);
        let (u, _, vh) = a.svd();
        let uvh = u.matmul(&vh).to_vec();
        let (_, grad) = nuclear_norm_value_and_grad(&a);
        assert_close(label, &grad, &uvh, 1e-12);
        let (_, tangent) = nuclear_norm_jvp(&a, &d);
        assert_close(
            label,
            &tangent,
            &[jvp_by_differences(nuclear_norm, &a, &d)],
            1e-8,
        );
        let (g, hvp) = nuclear_norm_hvp(&a, &d);
        assert_close(label, &g, &uvh, 1e-12);
        assert_close(
            label,
            &hvp,
            &hvp_by_differences(nuclear_norm_grad, &a, &d),
            1e-7,
        );
        let (_, hvp) = squared_singular_values_hvp(&a, &d);
        assert_close(label, &hvp, &(&d * 2.0).to_vec(), 1e-12);
        assert_close(
            label,
            &squared_singular_values_grad(&a),
            &(&a * 2.0).to_vec(),
            1e-12,
        );
    }
}

/// `Σ W ∘ (U diag(s) Vh)`, through all three factors: it is `Σ W ∘ A`, so its gradient is `W`
/// and its HVP zero.
#[differentiable]
fn reconstruction<T: Element>(a: &Tensor<T>, #[nodiff] w: &Tensor<T>) -> Tensor<T> {
    let (u, s, vh) = a.svd();
    ((u * s.expand_dims(-2)).matmul(&vh) * w).sum()
}

/// `Σ W ∘ U ∘ U`: blind to the signs of `U`'s columns.
#[differentiable]
fn squared_u<T: Element>(a: &Tensor<T>, #[nodiff] w: &Tensor<T>) -> Tensor<T> {
    (a.svd_u().square() * w).sum()
}

/// `Σ W ∘ Vh ∘ Vh`: blind to the signs of `Vh`'s rows.
#[differentiable]
fn squared_vh<T: Element>(a: &Tensor<T>, #[nodiff] w: &Tensor<T>) -> Tensor<T> {
    (a.svd_vh().square() * w).sum()
}

/// The singular vectors to second order, through losses that do not see their signs: the
/// gradient against central differences of the function (by the JVP), the HVP against central
/// differences of `f_grad`, and the reconstruction's `W` and zero.
#[test]
fn singular_vectors_differentiate_to_second_order() {
    let mut cases = ordinary_matrices();
    cases.push(("[2, 2]", matrix(&[2.0, 1.0, 0.5, 3.0], &[2, 2])));
    for (label, a) in cases {
        let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
        let k = m.min(n);
        let d = Tensor::rand_normal(a.shape(), 0.0, 1.0, 46);
        let w = Tensor::rand_uniform(a.shape(), 0.5, 1.5, 47);
        let (_, grad) = reconstruction_value_and_grad(&a, &w);
        assert_close(label, &grad, &w.to_vec(), 1e-12);
        let (_, hvp) = reconstruction_hvp(&a, &w, &d);
        assert_close(label, &hvp, &vec![0.0; a.len()], 1e-12);
        let wu = Tensor::rand_uniform(&[m, k], 0.5, 1.5, 48);
        let wv = Tensor::rand_uniform(&[k, n], 0.5, 1.5, 49);
        for (what, f, grad, hvp, w) in [
            (
                "Σ W U²",
                squared_u::<f64> as fn(&Tensor<f64>, &Tensor<f64>) -> Tensor<f64>,
                squared_u_grad::<f64> as fn(&Tensor<f64>, &Tensor<f64>) -> Tensor<f64>,
                squared_u_hvp::<f64>
                    as fn(&Tensor<f64>, &Tensor<f64>, &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>),
                &wu,
            ),
            (
                "Σ W Vh²",
                squared_vh::<f64>,
                squared_vh_grad::<f64>,
                squared_vh_hvp::<f64>,
                &wv,
            ),
        ] {
            let what = format!("{what} at {label}");
            let g = grad(&a, w);
            let along = jvp_by_differences(|x| f(x, w), &a, &d);
            assert!(
                (inner(&g, &d) - along).abs() < 1e-8 * (1.0 + along.abs()),
                "{what}"
            );
            let (g2, h) = hvp(&a, w, &d);
            assert_close(&what, &g2, &g.to_vec(), 1e-12);
            assert_close(&what, &h, &hvp_by_differences(|x| grad(x, w), &a, &d), 1e-7);
        }
    }
}

// ---- eigh ------------------------------------------------------------------------------------

/// `Σ c ∘ w² + Σ W ∘ V²` of the eigen-decomposition: blind to the vectors' signs.
#[differentiable]
fn spectrum<T: Element>(
    a: &Tensor<T>,
    #[nodiff] c: &Tensor<T>,
    #[nodiff] w: &Tensor<T>,
) -> Tensor<T> {
    let (values, vectors) = a.eigh();
    (values.square() * c).sum() + (vectors.square() * w).sum()
}

/// `eigh` to second order at a diagonal matrix, whose off-diagonal values are exactly zero but
/// whose tangents are not (the Jacobi kernel gave NaN there), and at a full symmetric one.
#[test]
fn eigen_decomposition_differentiates_to_second_order_at_a_diagonal_matrix() {
    let diagonal = matrix(&[1.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 6.0], &[3, 3]);
    let b = Tensor::rand_normal(&[3, 3], 0.0, 1.0, 51);
    let full = b.matmul(&b.t()) + Tensor::eye(3);
    let c = Tensor::from_vec(vec![0.5, 1.0, 1.5], &[3]);
    let w = Tensor::rand_uniform(&[3, 3], 0.5, 1.5, 52);
    for (label, a) in [("diagonal", diagonal), ("full", full)] {
        for d in [
            Tensor::ones(&[3, 3]),
            Tensor::rand_normal(&[3, 3], 0.0, 1.0, 53),
        ] {
            let (g, hvp) = spectrum_hvp(&a, &c, &w, &d);
            assert_close(label, &g, &spectrum_grad(&a, &c, &w).to_vec(), 1e-12);
            let fd = hvp_by_differences(|x| spectrum_grad(x, &c, &w), &a, &d);
            assert_close(label, &hvp, &fd, 1e-7);
        }
    }
}
