//! Jacobians and Hessians assembled from JVPs, VJPs and Hessian-vector products, against closed
//! forms: diagonal Jacobians of elementwise maps, the matrix of a linear map, non-square maps in
//! both directions (and which mode `jacobian` picks), and the Hessians of `xᵀAx` and `Σ eˣ·x`.

use std::cell::Cell;

use rune_runtime::{
    check_hvp, hessian, hessian_from_grad, hvp_from_grad, jacfwd, jacobian, jacrev, Dual, Tensor,
};

type T64 = Tensor<f64>;

#[track_caller]
fn assert_tensor(got: &T64, shape: &[usize], want: &[f64], tol: f64) {
    assert_eq!(got.shape(), shape);
    for (i, (g, w)) in got.to_vec().iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "element {i}: got {g}, want {w}\n{:?}",
            got.to_vec()
        );
    }
}

/// `diag` laid out as the Jacobian of an elementwise map on a tensor of `diag`'s shape.
fn diagonal(diag: &T64) -> Vec<f64> {
    let n = diag.len();
    let mut j = vec![0.0; n * n];
    for (i, d) in diag.to_vec().into_iter().enumerate() {
        j[i * n + i] = d;
    }
    j
}

/// `f(x) = sin(x)·eˣ` elementwise, on a 2×2 input: `J = diag((cos x + sin x)·eˣ)`, shaped
/// `[2, 2, 2, 2]`, the same from JVPs and from VJPs.
#[test]
fn elementwise_map_has_a_diagonal_jacobian() {
    let x = T64::from_vec(vec![0.3, -1.2, 2.0, 0.0], &[2, 2]);
    let derivative = |x: &T64| &(x.cos() + x.sin()) * &x.exp();
    let jvp = |x: &T64, v: &T64| &derivative(x) * v;
    let vjp = |x: &T64, w: &T64| &derivative(x) * w;
    let want = diagonal(&derivative(&x));
    assert_tensor(&jacfwd(jvp, &x), &[2, 2, 2, 2], &want, 1e-14);
    assert_tensor(&jacrev(vjp, &x, &[2, 2]), &[2, 2, 2, 2], &want, 1e-14);
    assert_tensor(&jacobian(jvp, vjp, &x), &[2, 2, 2, 2], &want, 1e-14);
}

/// The Jacobian of `x ↦ A x` is `A`.
#[test]
fn linear_map_has_its_matrix_as_jacobian() {
    let a = T64::rand_normal(&[3, 3], 0.0, 1.0, 7);
    let x = T64::rand_normal(&[3], 0.0, 1.0, 8);
    let jvp = |_: &T64, v: &T64| a.matmul(v);
    let vjp = |_: &T64, w: &T64| w.matmul(&a);
    assert_tensor(&jacfwd(jvp, &x), &[3, 3], &a.to_vec(), 0.0);
    assert_tensor(&jacrev(vjp, &x, &[3]), &[3, 3], &a.to_vec(), 0.0);
    assert_tensor(&jacobian(jvp, vjp, &x), &[3, 3], &a.to_vec(), 0.0);
}

/// Counts the products a Jacobian took.
#[derive(Default)]
struct Calls {
    jvp: Cell<usize>,
    vjp: Cell<usize>,
}

/// `f(x) = (x₀x₁, x₁ + sin x₂)` from R³ to R²: `J = [[x₁, x₀, 0], [0, 1, cos x₂]]`. Reverse
/// mode wins: one probing JVP, then one VJP per output.
#[test]
fn wide_map_is_differentiated_in_reverse_mode() {
    let x = T64::from_vec(vec![1.5, -2.0, 0.7], &[3]);
    let calls = Calls::default();
    let jvp = |x: &T64, v: &T64| {
        calls.jvp.set(calls.jvp.get() + 1);
        let (x, v) = (x.to_vec(), v.to_vec());
        T64::from_vec(
            vec![x[1] * v[0] + x[0] * v[1], v[1] + x[2].cos() * v[2]],
            &[2],
        )
    };
    let vjp = |x: &T64, w: &T64| {
        calls.vjp.set(calls.vjp.get() + 1);
        let (x, w) = (x.to_vec(), w.to_vec());
        T64::from_vec(
            vec![w[0] * x[1], w[0] * x[0] + w[1], w[1] * x[2].cos()],
            &[3],
        )
    };
    let want = [-2.0, 1.5, 0.0, 0.0, 1.0, 0.7f64.cos()];

    let j = jacobian(jvp, vjp, &x);
    assert_tensor(&j, &[2, 3], &want, 1e-15);
    assert_eq!((calls.jvp.get(), calls.vjp.get()), (1, 2));

    assert_tensor(&jacfwd(jvp, &x), &[2, 3], &want, 1e-15);
    assert_eq!(jacfwd(jvp, &x).to_vec(), jacrev(vjp, &x, &[2]).to_vec());
}

/// `f(x) = (x₀², x₀x₁, sin x₁)` from R² to R³: `J = [[2x₀, 0], [x₁, x₀], [0, cos x₁]]`.
/// Forward mode wins: one JVP per input and no VJP.
#[test]
fn tall_map_is_differentiated_in_forward_mode() {
    let x = T64::from_vec(vec![0.5, 3.0], &[2]);
    let calls = Calls::default();
    let jvp = |x: &T64, v: &T64| {
        calls.jvp.set(calls.jvp.get() + 1);
        let (x, v) = (x.to_vec(), v.to_vec());
        T64::from_vec(
            vec![
                2.0 * x[0] * v[0],
                x[1] * v[0] + x[0] * v[1],
                x[1].cos() * v[1],
            ],
            &[3],
        )
    };
    let vjp = |x: &T64, w: &T64| {
        calls.vjp.set(calls.vjp.get() + 1);
        let (x, w) = (x.to_vec(), w.to_vec());
        T64::from_vec(
            vec![
                2.0 * x[0] * w[0] + x[1] * w[1],
                x[0] * w[1] + x[1].cos() * w[2],
            ],
            &[2],
        )
    };
    let want = [1.0, 0.0, 3.0, 0.5, 0.0, 3f64.cos()];

    let j = jacobian(jvp, vjp, &x);
    assert_tensor(&j, &[3, 2], &want, 1e-15);
    assert_eq!((calls.jvp.get(), calls.vjp.get()), (2, 0));

    assert_tensor(&jacrev(vjp, &x, &[3]), &[3, 2], &want, 1e-15);
    assert_eq!(jacfwd(jvp, &x).to_vec(), jacrev(vjp, &x, &[3]).to_vec());
}

/// A scalar function's Jacobian is its gradient, shaped like the input (a 0-d output adds no
/// axes); `jacobian` takes it with one VJP.
#[test]
fn jacobian_of_a_scalar_function_is_its_gradient() {
    let x = T64::from_vec(vec![1.0, -2.0, 0.5, 4.0], &[2, 2]);
    let jvp = |x: &T64, v: &T64| (&(x * 2.0) * v).sum();
    let vjp = |x: &T64, w: &T64| &(x * 2.0) * w;
    let want = [2.0, -4.0, 1.0, 8.0];
    assert_tensor(&jacobian(jvp, vjp, &x), &[2, 2], &want, 0.0);
    assert_tensor(&jacfwd(jvp, &x), &[2, 2], &want, 0.0);
    assert_tensor(&jacrev(vjp, &x, &[]), &[2, 2], &want, 0.0);
}

/// An empty input gives an empty Jacobian of the right shape.
#[test]
fn empty_input_gives_an_empty_jacobian() {
    let x = T64::zeros(&[0, 2]);
    let jvp = |_: &T64, _: &T64| T64::zeros(&[3]);
    let vjp = |x: &T64, _: &T64| x.clone();
    assert_eq!(jacfwd(jvp, &x).shape(), &[3, 0, 2]);
    assert_eq!(jacobian(jvp, vjp, &x).shape(), &[3, 0, 2]);
    assert_eq!(jacrev(vjp, &x, &[3]).shape(), &[3, 0, 2]);
    assert_eq!(
        hessian(|x: &T64, _: &T64| x.clone(), &x).shape(),
        &[0, 2, 0, 2]
    );
}

#[test]
#[should_panic(expected = "jacrev: the product has shape [2], expected [3]")]
fn a_product_of_the_wrong_shape_panics() {
    let x = T64::zeros(&[3]);
    let _ = jacrev(|_: &T64, _: &T64| T64::zeros(&[2]), &x, &[1]);
}

fn asymmetric_matrix() -> T64 {
    T64::from_vec(vec![2.0, 1.0, 0.0, -1.0, 3.0, 0.5, 4.0, 0.0, 1.0], &[3, 3])
}

/// `f(x) = xᵀAx` with `A` not symmetric: `H = A + Aᵀ`, from Hessian-vector products and from the
/// gradient `(A + Aᵀ)x` run on dual numbers.
#[test]
fn hessian_of_a_quadratic_form() {
    let a = asymmetric_matrix();
    let a_t = a.t();
    let x = T64::from_vec(vec![0.5, -1.0, 2.0], &[3]);
    let want = (&a + &a_t).to_vec();

    let hvp = |_: &T64, v: &T64| a.matmul(v) + v.matmul(&a);
    assert_tensor(&hessian(hvp, &x), &[3, 3], &want, 0.0);

    let a_dual = a.cast::<Dual<f64>>();
    let grad = |x: &Tensor<Dual<f64>>| a_dual.matmul(x) + x.matmul(&a_dual);
    assert_tensor(&hessian_from_grad(grad, &x), &[3, 3], &want, 0.0);

    let grad_real = |args: &[T64]| vec![a.matmul(&args[0]) + args[0].matmul(&a)];
    let hvp_real = |args: &[T64], v: &[T64]| vec![hvp(&args[0], &v[0])];
    check_hvp(grad_real, hvp_real, &[x], 1e-5, 1e-8, 1e-8).unwrap();
}

/// `f(x) = Σ eˣ·x` on a 2×2 input: `∇f = (1 + x)eˣ`, `H = diag((2 + x)eˣ)`.
#[test]
fn hessian_of_a_sum_of_exp_times_x() {
    let x = T64::from_vec(vec![0.0, 1.0, -0.5, 2.0], &[2, 2]);
    let curvature = |x: &T64| &(x + 2.0) * &x.exp();
    let want = diagonal(&curvature(&x));

    let h = hessian(|x: &T64, v: &T64| &curvature(x) * v, &x);
    assert_tensor(&h, &[2, 2, 2, 2], &want, 1e-15);

    // The gradient as plain code on duals: the literal `1.0` is a dual constant.
    let grad = |x: &Tensor<Dual<f64>>| &(x + 1.0) * &x.exp();
    assert_tensor(&hessian_from_grad(grad, &x), &[2, 2, 2, 2], &want, 1e-15);

    let v = T64::from_vec(vec![1.0, -1.0, 0.5, 2.0], &[2, 2]);
    assert_tensor(
        &hvp_from_grad(grad, &x, &v),
        &[2, 2],
        &(&curvature(&x) * &v).to_vec(),
        1e-15,
    );
}
