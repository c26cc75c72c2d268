//! Functions of numbers: a function returning `f32`/`f64` differentiates its `f32`/`f64`
//! parameters like 0-d tensors, and its generated functions take and return numbers.

use rune_ad::prelude::*;

/// f(a, b) = a b + sin(a) / b + a².
#[differentiable]
fn two_numbers(a: f64, b: f64) -> f64 {
    let mut total = a * b;
    total += a.sin() / b;
    for _ in 0..2 {
        total += a * a * 0.5;
    }
    total
}

/// Numbers and tensors together; a `#[nodiff]` number stays a constant.
#[differentiable]
fn weighted_norm(x: &Tensor<f64>, scale: f64, #[nodiff] offset: f64) -> f64 {
    let s = (x.square().sum() + offset).sqrt();
    (s * scale.exp()).item()
}

/// An ODE step by step: a Lorenz-like system integrated with Euler's method.
#[differentiable]
fn euler(sigma: f64, rho: f64, #[nodiff] steps: usize) -> f64 {
    let dt = 0.01;
    let mut x = sigma * 0.0 + 1.0;
    let mut y = rho * 0.0 + 1.0;
    for _ in 0..steps {
        let dx = (y - x) * sigma;
        let dy = x * (rho - x) - y;
        x += dx * dt;
        y += dy * dt;
    }
    x + y
}

fn fd(f: impl Fn(f64) -> f64, at: f64) -> f64 {
    let h = 1e-6;
    (f(at + h) - f(at - h)) / (2.0 * h)
}

#[test]
fn a_function_of_two_numbers() {
    let (a, b) = (0.7, 1.9);
    let f = |a: f64, b: f64| a * b + a.sin() / b + a * a;
    let (value, (ga, gb)) = two_numbers_value_and_grad(a, b);
    assert_eq!(value, two_numbers(a, b));
    assert!((value - f(a, b)).abs() < 1e-12);
    // By hand: df/da = b + cos(a)/b + 2a, df/db = a - sin(a)/b².
    assert!((ga - (b + a.cos() / b + 2.0 * a)).abs() < 1e-12);
    assert!((gb - (a - a.sin() / (b * b))).abs() < 1e-12);
    assert_eq!(two_numbers_grad(a, b), (ga, gb));
    let (value, t) = two_numbers_jvp(a, b, &1.0, &-2.0);
    assert_eq!(value, two_numbers(a, b));
    assert!((t - (ga - 2.0 * gb)).abs() < 1e-12);
    let (_, (va, vb)) = two_numbers_vjp(a, b, &3.0);
    assert!((va - 3.0 * ga).abs() < 1e-12 && (vb - 3.0 * gb).abs() < 1e-12);
}

#[test]
fn numbers_beside_tensors() {
    let x = Tensor::from_vec(vec![1.0, 2.0], &[2]);
    let (value, (gx, gs)) = weighted_norm_value_and_grad(&x, 0.3, 4.0);
    assert_eq!(value, weighted_norm(&x, 0.3, 4.0));
    // s = sqrt(5 + 4) = 3: value 3 e^0.3, d/dscale = value, d/dx = x / s · e^0.3.
    assert!((value - 3.0 * 0.3f64.exp()).abs() < 1e-12);
    assert!((gs - value).abs() < 1e-12);
    for (g, x) in gx.to_vec().iter().zip([1.0, 2.0]) {
        assert!((g - x / 3.0 * 0.3f64.exp()).abs() < 1e-12);
    }
}

#[test]
fn an_ode_of_numbers() {
    let (sigma, rho) = (10.0, 28.0);
    let (value, (gs, gr)) = euler_value_and_grad(sigma, rho, 200);
    assert_eq!(value, euler(sigma, rho, 200));
    let ws = fd(|s| euler(s, rho, 200), sigma);
    let wr = fd(|r| euler(sigma, r, 200), rho);
    assert!((gs - ws).abs() <= 1e-6 * ws.abs().max(1.0), "{gs} vs {ws}");
    assert!((gr - wr).abs() <= 1e-6 * wr.abs().max(1.0), "{gr} vs {wr}");
    let (_, t) = euler_jvp(sigma, rho, 200, &1.0, &0.0);
    assert!((t - gs).abs() <= 1e-9 * gs.abs().max(1.0));
}

#[differentiable]
fn square_plus(a: f64, #[nodiff] c: f64) -> f64 {
    a * a + c
}

/// Functions of numbers call each other.
#[differentiable]
fn composed(a: f64, b: f64) -> f64 {
    square_plus(a * b, 1.0) + square_plus(b, 0.0) * 2.0
}

#[test]
fn functions_of_numbers_compose() {
    let (a, b) = (1.5, -0.5);
    // f = (ab)² + 1 + 2 b²: df/da = 2 a b², df/db = 2 a² b + 4 b.
    let (value, (ga, gb)) = composed_value_and_grad(a, b);
    assert_eq!(value, composed(a, b));
    assert!((ga - 2.0 * a * b * b).abs() < 1e-12);
    assert!((gb - (2.0 * a * a * b + 4.0 * b)).abs() < 1e-12);
    let (_, t) = composed_jvp(a, b, &1.0, &1.0);
    assert!((t - (ga + gb)).abs() < 1e-12);
}
