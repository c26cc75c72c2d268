//! `f32` and `f64` factor with faer (`Element::factor_kernels`), dual numbers with the generic
//! kernels: both must give one result. Each op on `f64` is compared with the primal part of the
//! same op on `Dual<f64>` (the generic path), and on `f32` with the `f64` result, within
//! `c · n · ε · scale`; on batches, transposed views, broadcast right-hand sides, and at singular
//! and non-positive-definite matrices, where the generic path decides.

// `check!` clones its inputs into one slice, a single one too.
#![allow(clippy::cloned_ref_to_slice_refs)]

use rune_runtime::__private::rules::{cho_solve_vjp_lhs, cholesky_vjp, det_vjp, logabsdet_vjp};
use rune_runtime::{dual_of, primal_of, Dual, Element, Tensor};

use crate::common::{shifted, spd, tensor, uniform};

/// Large enough that `det` and its kin take faer's LU (above 16 × 16).
const N: usize = 40;

/// `x` on dual numbers with zero tangents: the op then runs the generic kernels.
fn dual(x: &Tensor<f64>) -> Tensor<Dual<f64>> {
    dual_of(x, &Tensor::zeros(x.shape()))
}

fn f64s<T: Element>(x: &Tensor<T>) -> Vec<f64> {
    x.to_vec()
        .iter()
        .map(|v| v.to_string().parse().unwrap())
        .collect()
}

/// `got` and `want` agree within `c · n · ε` times the largest `|want|` (1 at least).
fn agree(label: &str, got: &[f64], want: &[f64], eps: f64) {
    assert_eq!(got.len(), want.len(), "{label}: lengths");
    let scale = want.iter().fold(1.0f64, |m, w| m.max(w.abs()));
    let tol = 200.0 * N as f64 * eps * scale;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let close = (g - w).abs() <= tol || (g == w);
        assert!(
            close,
            "{label}: element {i}: {g} against {w} (tolerance {tol})"
        );
    }
}

/// `op` on `f64` (faer) against `op` on `Dual<f64>` (generic), and on `f32` against `f64`.
fn check(
    label: &str,
    inputs: &[Tensor<f64>],
    op64: impl Fn(&[Tensor<f64>]) -> Tensor<f64>,
    opd: impl Fn(&[Tensor<Dual<f64>>]) -> Tensor<Dual<f64>>,
    op32: impl Fn(&[Tensor<f32>]) -> Tensor<f32>,
) {
    let got = op64(inputs);
    let duals: Vec<_> = inputs.iter().map(dual).collect();
    let want = primal_of(&opd(&duals));
    assert_eq!(got.shape(), want.shape(), "{label}: shapes");
    agree(
        &format!("{label} f64"),
        &got.to_vec(),
        &want.to_vec(),
        f64::EPSILON,
    );
    let singles: Vec<Tensor<f32>> = inputs
        .iter()
        .map(|x| tensor(&x.to_vec(), x.shape()))
        .collect();
    let got32 = op32(&singles);
    agree(
        &format!("{label} f32"),
        &f64s(&got32),
        &got.to_vec(),
        f32::EPSILON as f64,
    );
}

/// The same expression for the three element types.
macro_rules! check {
    ($label:expr, [$($x:expr),*], |$a:ident| $body:expr) => {
        check(
            $label,
            &[$($x.clone()),*],
            |$a: &[Tensor<f64>]| $body,
            |$a: &[Tensor<Dual<f64>>]| $body,
            |$a: &[Tensor<f32>]| $body,
        )
    };
}

#[test]
fn faer_and_the_generic_kernels_agree() {
    let a = shifted::<f64>(&[2, N, N], 3.0, 11);
    // A transposed view: strides the kernels do not see, since the ops read row-major copies.
    let at = shifted::<f64>(&[N, N], 3.0, 12).t();
    let s = spd::<f64>(&[2, N, N], 13);
    let b = uniform::<f64>(&[3, 1, N, 5], -1.0, 1.0, 14);
    let l = s.cholesky();
    check!("cholesky", [s], |x| x[0].cholesky());
    check!("cholesky of a transposed view", [s.t()], |x| x[0]
        .cholesky());
    for lower in [true, false] {
        for transpose in [true, false] {
            let label = format!("solve_triangular lower {lower} transpose {transpose}");
            // The triangle not read holds values that would change the result if read.
            check!(&label, [a, b], |x| x[0]
                .solve_triangular(&x[1], lower, transpose));
        }
    }
    check!("cho_solve", [l, b], |x| x[0].cho_solve(&x[1]));
    // The rules with kernels of their own, on batches and on a transposed cotangent.
    let g = uniform::<f64>(&[2, N, N], -1.0, 1.0, 18);
    check!("cholesky_vjp", [g, l], |x| cholesky_vjp(&x[0], &x[1]));
    let (g1, l1) = (
        uniform::<f64>(&[N, N], -1.0, 1.0, 19),
        spd::<f64>(&[N, N], 20).cholesky(),
    );
    check!("cholesky_vjp, transposed cotangent", [g1.t(), l1], |x| {
        cholesky_vjp(&x[0], &x[1])
    });
    let xs = l.cho_solve(&b);
    let gx = uniform::<f64>(xs.shape(), -1.0, 1.0, 23);
    check!("cho_solve_vjp_lhs, broadcast", [gx, l, xs], |x| {
        cho_solve_vjp_lhs(&x[0], &x[1], &x[2])
    });
    check!("solve, broadcast", [a, b], |x| x[0].solve(&x[1]));
    check!("solve, transposed", [at, b], |x| x[0].solve(&x[1]));
    check!("inv", [a], |x| x[0].inv());
    check!("inv, transposed", [at], |x| x[0].inv());
    check!("det", [a], |x| x[0].det());
    check!("logabsdet", [a], |x| x[0].logabsdet());
    check!("sign_det", [a], |x| x[0].sign_det());
    check!("-a: sign_det", [a], |x| (-&x[0]).sign_det());
    check!("det_vjp", [a], |x| det_vjp(&Tensor::ones(&[2]), &x[0]));
    check!("logabsdet_vjp", [a], |x| logabsdet_vjp(
        &Tensor::ones(&[2]),
        &x[0]
    ));
    let tall = uniform::<f64>(&[2, N + 10, N], -1.0, 1.0, 15);
    let wide = uniform::<f64>(&[N - 10, N], -1.0, 1.0, 16);
    for (label, m) in [
        ("tall", &tall),
        ("square", &a),
        ("wide", &wide),
        ("transposed", &at),
    ] {
        check!(&format!("qr_q {label}"), [m], |x| x[0].qr_q());
        check!(&format!("qr_r {label}"), [m], |x| x[0].qr_r());
        check!(&format!("svdvals {label}"), [m], |x| x[0].svdvals());
        check!(&format!("svd_u {label}"), [m], |x| x[0].svd_u());
        check!(&format!("svd_vh {label}"), [m], |x| x[0].svd_vh());
    }
    check!("eigvalsh", [s], |x| x[0].eigvalsh());
    check!("eigh_vectors", [s], |x| x[0].eigh_vectors());
    let rhs = uniform::<f64>(&[2, N + 10, 3], -1.0, 1.0, 17);
    check!("lstsq", [tall, rhs], |x| x[0].lstsq(&x[1]));
}

/// The identities the factors satisfy, on `f64` (faer).
#[test]
fn faer_factors_satisfy_their_identities() {
    let a = shifted::<f64>(&[N, N], 3.0, 21);
    let s = spd::<f64>(&[N, N], 22);
    let eye = Tensor::<f64>::eye(N);
    let l = s.cholesky();
    agree(
        "L Lᵀ = A",
        &l.matmul(&l.t()).to_vec(),
        &s.to_vec(),
        f64::EPSILON,
    );
    agree(
        "L lower",
        &l.triu(1).to_vec(),
        &vec![0.0; N * N],
        f64::EPSILON,
    );
    agree(
        "A inv(A) = I",
        &a.matmul(&a.inv()).to_vec(),
        &eye.to_vec(),
        f64::EPSILON,
    );
    let (q, r) = a.qr();
    agree("Q R = A", &q.matmul(&r).to_vec(), &a.to_vec(), f64::EPSILON);
    agree(
        "R upper",
        &r.tril(-1).to_vec(),
        &vec![0.0; N * N],
        f64::EPSILON,
    );
    assert!(
        r.diagonal().to_vec().iter().all(|&d| d > 0.0),
        "R's diagonal is positive"
    );
    let (w, v) = s.eigh();
    agree(
        "A V = V diag(w)",
        &s.matmul(&v).to_vec(),
        &(&v * &w.expand_dims(-2)).to_vec(),
        f64::EPSILON,
    );
    let (u, sv, vh) = a.svd();
    agree(
        "U S Vh = A",
        &(&u * &sv.expand_dims(-2)).matmul(&vh).to_vec(),
        &a.to_vec(),
        f64::EPSILON,
    );
}

/// Singular and non-positive-definite inputs above 16 × 16 keep the generic kernels' results.
#[test]
fn singular_and_indefinite_inputs_keep_their_semantics() {
    // Rank N - 1: the last row repeats the first.
    let mut rows = shifted::<f64>(&[N, N], 3.0, 31).to_vec();
    let first = rows[..N].to_vec();
    rows[(N - 1) * N..].copy_from_slice(&first);
    let singular = Tensor::from_vec(rows, &[N, N]);
    assert_eq!(singular.det().item(), 0.0);
    assert_eq!(singular.sign_det().item(), 0.0);
    assert_eq!(singular.logabsdet().item(), f64::NEG_INFINITY);
    let (sign, logdet) = singular.slogdet();
    assert_eq!((sign.item(), logdet.item()), (0.0, f64::NEG_INFINITY));
    let cof = det_vjp(&Tensor::scalar(1.0), &singular);
    let want = primal_of(&det_vjp(
        &Tensor::scalar(Dual::new(1.0, 0.0)),
        &dual(&singular),
    ));
    assert_eq!(
        cof.to_vec(),
        want.to_vec(),
        "the cofactors at a singular matrix"
    );
    assert!(
        cof.to_vec().iter().any(|&c| c != 0.0),
        "rank N - 1: cofactors of rank one"
    );
    let err = singular.try_inv().unwrap_err().to_string();
    assert!(err.starts_with("inv:") && err.contains("singular"), "{err}");
    let err = singular
        .try_solve(&Tensor::ones(&[N, 1]))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("solve:") && err.contains("singular"),
        "{err}"
    );
    // A column that repeats another: whatever the generic kernel decides, faer's path does.
    let generic = dual(&singular.t()).try_qr().is_err();
    assert_eq!(
        singular.t().try_qr().is_err(),
        generic,
        "qr of a rank-deficient matrix"
    );
    // Symmetric, indefinite: the error names the op, the shape and the pivot.
    let indefinite = spd::<f64>(&[2, N, N], 32) - Tensor::<f64>::eye(N) * 1e3;
    let err = indefinite.try_cholesky().unwrap_err().to_string();
    assert!(
        err.starts_with("cholesky:")
            && err.contains("[2, 40, 40]")
            && err.contains("not positive definite"),
        "{err}"
    );
    let err = tensor::<f32>(&indefinite.to_vec(), &[2, N, N])
        .try_cholesky()
        .unwrap_err();
    assert!(err.to_string().contains("not positive definite"), "{err}");
}
