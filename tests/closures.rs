//! Closures defined in a `#[differentiable]` body and called there: inlined where they are
//! called, with the bindings they captured where they were defined.

use rune_ad::prelude::*;

fn t64(values: &[f64], shape: &[usize]) -> Tensor<f64> {
    Tensor::from_vec(values.to_vec(), shape)
}

#[differentiable(hvp)]
fn activated(x: &Tensor<f64>, w: &Tensor<f64>) -> Tensor<f64> {
    let act = |t: &Tensor<f64>| t.tanh();
    let layer = |h: &Tensor<f64>, k: f64| act(&(h * w)) * k;
    let h = layer(x, 2.0);
    let h = layer(&h, 0.5);
    h.sum()
}

/// A closure sees the binding it captured, not a later one of the same name.
#[differentiable]
fn captured_where_defined(x: &Tensor<f64>) -> Tensor<f64> {
    let w = x * 2.0;
    let scale = |t: &Tensor<f64>| t * &w;
    let w = x * 100.0;
    (scale(x) + &w * 0.0).sum()
}

/// Closures that read no differentiated value stay plain Rust, usable as values too.
#[differentiable]
fn plain_closures(x: &Tensor<f64>, #[nodiff] xs: &[f64]) -> Tensor<f64> {
    let square = |v: f64| v * v;
    let total: f64 = xs.iter().map(|v| square(*v)).sum();
    let c = square(3.0) + total;
    (x * c).sum()
}

#[test]
fn closures_are_inlined() {
    let x = t64(&[0.3, -0.4], &[2]);
    let w = t64(&[1.5, 0.5], &[2]);
    // f = Σ 0.5 tanh(w · 2 tanh(w x)).
    let f = |x: &[f64], w: &[f64]| -> f64 {
        (0..2)
            .map(|i| 0.5 * (w[i] * 2.0 * (w[i] * x[i]).tanh()).tanh())
            .sum()
    };
    let (value, (gx, gw)) = activated_value_and_grad(&x, &w);
    assert_eq!(value.item(), activated(&x, &w).item());
    assert!((value.item() - f(&x.to_vec(), &w.to_vec())).abs() < 1e-12);
    let eps = 1e-6;
    for i in 0..2 {
        let mut up = x.to_vec();
        let mut down = x.to_vec();
        up[i] += eps;
        down[i] -= eps;
        let fd = (f(&up, &w.to_vec()) - f(&down, &w.to_vec())) / (2.0 * eps);
        assert!((gx.to_vec()[i] - fd).abs() < 1e-8);
        let mut up = w.to_vec();
        let mut down = w.to_vec();
        up[i] += eps;
        down[i] -= eps;
        let fd = (f(&x.to_vec(), &up) - f(&x.to_vec(), &down)) / (2.0 * eps);
        assert!((gw.to_vec()[i] - fd).abs() < 1e-8);
    }
    let (value, t) = activated_jvp(&x, &w, &t64(&[1.0, 0.0], &[2]), &t64(&[0.0, 1.0], &[2]));
    assert_eq!(value.item(), activated(&x, &w).item());
    assert!((t.item() - (gx.to_vec()[0] + gw.to_vec()[1])).abs() < 1e-12);
}

#[test]
fn closures_capture_where_they_are_defined() {
    let x = t64(&[1.0, 3.0], &[2]);
    // f = Σ 2 x², df/dx = 4 x.
    let (value, g) = captured_where_defined_value_and_grad(&x);
    assert_eq!(value.item(), 20.0);
    assert_eq!(g.to_vec(), vec![4.0, 12.0]);
    assert_eq!(captured_where_defined(&x).item(), 20.0);
}

#[test]
fn plain_closures_stay_plain() {
    let x = t64(&[1.0, 2.0], &[2]);
    let xs = [1.0, 2.0];
    // c = 9 + 5 = 14.
    let (value, g) = plain_closures_value_and_grad(&x, &xs);
    assert_eq!(value.item(), 42.0);
    assert_eq!(g.to_vec(), vec![14.0, 14.0]);
    let (value, t) = plain_closures_jvp(&x, &xs, &t64(&[1.0, 1.0], &[2]));
    assert_eq!((value.item(), t.item()), (42.0, 28.0));
}

#[test]
fn hessian_vector_products_through_inlined_closures() {
    let x = t64(&[0.3, -0.4], &[2]);
    let w = t64(&[1.5, 0.5], &[2]);
    check_hvp(
        |a| {
            let (gx, gw) = activated_grad(&a[0], &a[1]);
            vec![gx, gw]
        },
        |a, v| {
            let (_, (hx, hw)) = activated_hvp(&a[0], &a[1], &v[0], &v[1]);
            vec![hx, hw]
        },
        &[x, w],
        1e-5,
        1e-6,
        1e-8,
    )
    .unwrap();
}
