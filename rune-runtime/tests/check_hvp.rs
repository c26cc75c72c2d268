//! `check_hvp`: correct Hessian-vector products of closed-form functions pass at f32 and f64;
//! a wrong block, a product that is not symmetric, and a wrong shape or count each fail with
//! their own error.

use rune_runtime::{check_hvp, hvp_from_grad, Dual, Element, GradCheckError, Tensor};

/// `f(a, b) = Σ sin(a)·b²`: `∇f = (cos(a)·b², 2 sin(a)·b)`.
fn grad<T: Element>(args: &[Tensor<T>]) -> Vec<Tensor<T>> {
    let (a, b) = (&args[0], &args[1]);
    vec![&a.cos() * &(b * b), &(&a.sin() * b) * T::from_f64(2.0)]
}

/// `H v` for `f` above: `(-sin(a)·b²·va + 2cos(a)·b·vb, 2cos(a)·b·va + 2sin(a)·vb)`.
fn hvp<T: Element>(args: &[Tensor<T>], v: &[Tensor<T>]) -> Vec<Tensor<T>> {
    let (a, b, va, vb) = (&args[0], &args[1], &v[0], &v[1]);
    let two = T::from_f64(2.0);
    let cross = &(&a.cos() * b) * two;
    vec![
        -(&(&(&a.sin() * &(b * b)) * va)) + &cross * vb,
        &cross * va + &(&a.sin() * two) * vb,
    ]
}

fn args<T: Element>() -> Vec<Tensor<T>> {
    vec![
        Tensor::rand_uniform(&[2, 3], T::from_f64(-2.0), T::from_f64(2.0), 11),
        Tensor::rand_uniform(&[2, 3], T::from_f64(-1.0), T::from_f64(1.0), 12),
    ]
}

#[test]
fn correct_products_pass() {
    check_hvp(grad, hvp, &args::<f64>(), 1e-5, 1e-6, 1e-6).unwrap();
    let tol = f32::GRAD_TOL;
    check_hvp(grad, hvp, &args::<f32>(), f32::FD_EPS, tol, tol).unwrap();
}

/// `f(x) = Σ eˣ·x`, its product taken from the gradient run on dual numbers.
#[test]
fn products_from_the_gradient_on_duals_pass() {
    let x = Tensor::<f64>::rand_normal(&[4], 0.0, 1.0, 3);
    let grad = |args: &[Tensor<f64>]| vec![&(&args[0] + 1.0) * &args[0].exp()];
    let hvp = |args: &[Tensor<f64>], v: &[Tensor<f64>]| {
        let dual_grad = |x: &Tensor<Dual<f64>>| &(x + 1.0) * &x.exp();
        vec![hvp_from_grad(dual_grad, &args[0], &v[0])]
    };
    check_hvp(grad, hvp, &[x], 1e-5, 1e-6, 1e-6).unwrap();
}

#[test]
fn a_missing_cross_term_fails_against_finite_differences() {
    let without_cross_term = |args: &[Tensor<f64>], v: &[Tensor<f64>]| {
        let mut hv = hvp(args, v);
        hv[1] = &(&args[0].sin() * 2.0) * &v[1];
        hv
    };
    let err = check_hvp(grad, without_cross_term, &args(), 1e-5, 1e-6, 1e-6).unwrap_err();
    assert!(matches!(err, GradCheckError::Hvp { index: 1, .. }), "{err}");
    assert!(err.to_string().contains("argument 1"), "{err}");
}

/// A "gradient" `A x` with `A` not symmetric is no gradient at all: `A v` agrees with its finite
/// differences, and only the symmetry test rejects it.
#[test]
fn a_product_that_is_not_symmetric_fails() {
    let a = Tensor::<f64>::from_vec(vec![1.0, 2.0, 0.0, 1.0], &[2, 2]);
    let not_a_gradient = |args: &[Tensor<f64>]| vec![a.matmul(&args[0])];
    let product = |_: &[Tensor<f64>], v: &[Tensor<f64>]| vec![a.matmul(&v[0])];
    let x = Tensor::from_vec(vec![0.5, -1.0], &[2]);
    let err = check_hvp(not_a_gradient, product, &[x], 1e-5, 1e-6, 1e-6).unwrap_err();
    assert!(matches!(err, GradCheckError::Symmetry { .. }), "{err}");
    assert!(err.to_string().contains("not symmetric"), "{err}");
}

#[test]
fn wrong_shapes_and_counts_fail() {
    let flat = |args: &[Tensor<f64>], v: &[Tensor<f64>]| {
        let mut hv = hvp(args, v);
        hv[0] = hv[0].reshape(&[6]);
        hv
    };
    let err = check_hvp(grad, flat, &args(), 1e-5, 1e-6, 1e-6).unwrap_err();
    assert_eq!(
        err,
        GradCheckError::Shape {
            which: "hvp",
            index: 0,
            expected: vec![2, 3],
            found: vec![6],
        }
    );

    let one_block = |args: &[Tensor<f64>], v: &[Tensor<f64>]| vec![hvp(args, v).remove(0)];
    let err = check_hvp(grad, one_block, &args(), 1e-5, 1e-6, 1e-6).unwrap_err();
    assert!(
        matches!(
            err,
            GradCheckError::Shape {
                which: "hvp",
                index: 1,
                ..
            }
        ),
        "{err}"
    );

    let short_grad = |args: &[Tensor<f64>]| vec![grad(args).remove(0)];
    let err = check_hvp(short_grad, hvp, &args(), 1e-5, 1e-6, 1e-6).unwrap_err();
    assert!(
        matches!(err, GradCheckError::Shape { which: "grad", .. }),
        "{err}"
    );
}
