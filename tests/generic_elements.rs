//! Functions generic over the element type (`T: Element`) written with plain float literals:
//! `x + 1.0`, `2.0 * x`, `x / 3.0`, `x.powf(2.0)`, `x.maximum(0.0)`, `x.clamp(-1.0, 1.0)`,
//! `x.gt(0.0)`, `where_cond(&m, x, &0.0)`, `x += 1.0`. Run at `f32` and `f64`, the plain function
//! is checked against the same code written for each concrete type, the gradients against
//! finite differences, and the Hessian-vector products (the generic function run at `Dual<T>`)
//! against finite differences of the gradient.

use rune_ad::prelude::*;
use rune_ad::GradFn;

fn tensor<T: Element>(values: &[f64], shape: &[usize]) -> Tensor<T> {
    Tensor::from_vec(values.iter().map(|&v| T::from_f64(v)).collect(), shape)
}

fn reals<T: Element>(t: &Tensor<T>) -> Vec<f64> {
    t.to_vec().into_iter().map(Element::to_real).collect()
}

/// Asserts equal lengths and values within `tol` (relative to 1 + |expected|).
#[track_caller]
fn assert_close(actual: &[f64], expected: &[f64], tol: f64) {
    assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
    for (a, e) in actual.iter().zip(expected) {
        assert!(
            (a - e).abs() <= tol * (1.0 + e.abs()),
            "got {actual:?}, expected {expected:?}"
        );
    }
}

#[track_caller]
fn fd_check<T: Element>(f: &impl GradFn<T>, args: &[Tensor<T>]) {
    if let Err(e) = check_grad(f, args, T::FD_EPS, T::GRAD_TOL, T::GRAD_TOL) {
        panic!("{e}");
    }
}

// ---- every literal form in one function --------------------------------------------------------

#[differentiable]
fn softplus_sum<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    (x.exp() + 1.0).ln().sum()
}

/// Every form in which a float literal meets a tensor of the generic element type.
#[differentiable]
fn literal_forms<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    let shifted = x.exp() + 1.0;
    let doubled = 2.0 * x;
    let thirds = x / 3.0;
    let squared = x.powf(2.0);
    let relu = x.maximum(0.0);
    let capped = x.minimum(1.5);
    let clamped = x.clamp(-1.0, 1.0);
    let positive = where_cond(&x.gt(0.0), x, &0.0);
    let weights = where_cond(&x.lt(-0.5), &2.0, &1.0);
    let mut total = shifted + doubled - thirds + squared * 0.5 + relu + capped;
    total += 1.0;
    total = total + clamped - 1.0 / (x.square() + 1.0) + positive * weights;
    (total - 0.25 + Tensor::scalar(T::from_f64(0.75))).sum()
}

/// `literal_forms` written out for `f64`, with typed constants: the reference.
fn literal_forms_f64(x: &Tensor<f64>) -> f64 {
    x.to_vec()
        .into_iter()
        .map(|v| {
            let positive = if v > 0.0 { v } else { 0.0 };
            let weight = if v < -0.5 { 2.0 } else { 1.0 };
            v.exp() + 1.0 + 2.0 * v - v / 3.0
                + v * v * 0.5
                + v.max(0.0)
                + v.min(1.5)
                + 1.0
                + v.clamp(-1.0, 1.0)
                - 1.0 / (v * v + 1.0)
                + positive * weight
                + 0.5
        })
        .sum()
}

const POINTS: [f64; 6] = [0.3, -1.2, 2.0, -0.7, 1.1, -0.2];

fn check_literal_forms<T: Element>(tol: f64) {
    let x = tensor::<T>(&POINTS, &[2, 3]);
    let expected = literal_forms_f64(&x.cast());
    assert_close(&[literal_forms(&x).item().to_real()], &[expected], tol);
    // d/dx: eˣ + 2 - 1/3 + x + [x > 0] + [x < 1.5] + [|x| < 1] + 2x/(x² + 1)² + [x > 0]
    let grad: Vec<f64> = POINTS
        .iter()
        .map(|&v| {
            let step = |b: bool| if b { 1.0 } else { 0.0 };
            v.exp() + 2.0 - 1.0 / 3.0
                + v
                + step(v > 0.0)
                + step(v < 1.5)
                + step(v.abs() < 1.0)
                + 2.0 * v / (v * v + 1.0).powi(2)
                + step(v > 0.0)
        })
        .collect();
    assert_close(&reals(&literal_forms_grad(&x)), &grad, tol);
    fd_check(
        &grad_fn(
            |a: &[Tensor<T>]| literal_forms(&a[0]),
            |a: &[Tensor<T>], t: &[Tensor<T>]| literal_forms_jvp(&a[0], &t[0]).1,
            |a: &[Tensor<T>], g: &Tensor<T>| vec![literal_forms_vjp(&a[0], g).1],
        ),
        &[x],
    );
}

#[test]
fn literals_in_generic_code_run_at_f64_and_f32() {
    check_literal_forms::<f64>(1e-12);
    check_literal_forms::<f32>(1e-5);

    let x = tensor::<f32>(&POINTS, &[6]);
    let sigmoid: Vec<f64> = POINTS.iter().map(|v| 1.0 / (1.0 + (-v).exp())).collect();
    assert_close(&reals(&softplus_sum_grad(&x)), &sigmoid, 1e-6);
    let x = tensor::<f64>(&POINTS, &[6]);
    assert_close(&softplus_sum_grad(&x).to_vec(), &sigmoid, 1e-15);
}

#[test]
fn literals_in_generic_code_run_at_dual_numbers() {
    // The Hessian of softplus_sum is diag(σ(x)(1 - σ(x))).
    let x = tensor::<f64>(&POINTS, &[6]);
    let v = tensor::<f64>(&[1.0, -1.0, 0.5, 2.0, 0.0, 1.0], &[6]);
    let (grad, hv) = softplus_sum_hvp(&x, &v);
    let sigmoid: Vec<f64> = POINTS.iter().map(|v| 1.0 / (1.0 + (-v).exp())).collect();
    let expected: Vec<f64> = sigmoid
        .iter()
        .zip(v.to_vec())
        .map(|(s, v)| s * (1.0 - s) * v)
        .collect();
    assert_close(&grad.to_vec(), &sigmoid, 1e-15);
    assert_close(&hv.to_vec(), &expected, 1e-15);
    // Every literal form, run at dual numbers by `literal_forms_hvp`.
    check_hvp(
        |a: &[Tensor<f64>]| vec![literal_forms_grad(&a[0])],
        |a: &[Tensor<f64>], v: &[Tensor<f64>]| vec![literal_forms_hvp(&a[0], &v[0]).1],
        &[x],
        1e-5,
        1e-6,
        1e-8,
    )
    .unwrap();
}

// ---- a generic model with literals -------------------------------------------------------------

/// A two-layer network with softplus units, its output kept in [-10, 10], scored by a weighted
/// squared error (errors above the target count twice) and an L2 penalty: generic over the
/// element type, with its constants written as literals.
#[differentiable]
fn mlp_loss<T: Element>(
    w1: &Tensor<T>,
    b1: &Tensor<T>,
    w2: &Tensor<T>,
    #[nodiff] x: &Tensor<T>,
    #[nodiff] y: &Tensor<T>,
) -> Tensor<T> {
    let z = x.matmul(w1) + b1;
    let h = (z.exp() + 1.0).ln() - 0.5;
    let out = (h.matmul(w2) / 2.0).clamp(-10.0, 10.0);
    let d = out - y;
    let weight = where_cond(&d.gt(0.0), &2.0, &1.0);
    let fit = (weight * d.square()).mean() * 0.5;
    let penalty = 1e-2 * (w1.powf(2.0).sum() + w2.square().sum());
    fit + penalty
}

/// A batch of 5 inputs in R³ with targets in R, and parameters w1 [3, 4], b1 [4], w2 [4, 1].
struct Mlp<T: Element> {
    x: Tensor<T>,
    y: Tensor<T>,
    params: Vec<Tensor<T>>,
}

impl<T: Element> Mlp<T> {
    fn new() -> Self {
        let draw = |shape: &[usize], scale: f64, seed: u64| {
            Tensor::<f64>::rand_normal(shape, 0.0, scale, seed).cast::<T>()
        };
        Mlp {
            x: draw(&[5, 3], 1.0, 1),
            y: draw(&[5, 1], 1.0, 2),
            params: vec![
                draw(&[3, 4], 0.7, 3),
                draw(&[4], 0.3, 4),
                draw(&[4, 1], 0.7, 5),
            ],
        }
    }

    fn loss(&self, p: &[Tensor<T>]) -> Tensor<T> {
        mlp_loss(&p[0], &p[1], &p[2], &self.x, &self.y)
    }

    fn grad(&self, p: &[Tensor<T>]) -> Vec<Tensor<T>> {
        let (g1, gb, g2) = mlp_loss_grad(&p[0], &p[1], &p[2], &self.x, &self.y);
        vec![g1, gb, g2]
    }

    fn hvp(&self, p: &[Tensor<T>], v: &[Tensor<T>]) -> Vec<Tensor<T>> {
        let (_, (h1, hb, h2)) =
            mlp_loss_hvp(&p[0], &p[1], &p[2], &self.x, &self.y, &v[0], &v[1], &v[2]);
        vec![h1, hb, h2]
    }

    fn check_grad(&self) {
        fd_check(
            &grad_fn(
                |p: &[Tensor<T>]| self.loss(p),
                |p: &[Tensor<T>], t: &[Tensor<T>]| {
                    mlp_loss_jvp(&p[0], &p[1], &p[2], &self.x, &self.y, &t[0], &t[1], &t[2]).1
                },
                |p: &[Tensor<T>], g: &Tensor<T>| {
                    let (_, (g1, gb, g2)) = mlp_loss_vjp(&p[0], &p[1], &p[2], &self.x, &self.y, g);
                    vec![g1, gb, g2]
                },
            ),
            &self.params,
        );
    }
}

#[test]
fn a_generic_model_with_literals_has_checked_gradients_at_f64_and_f32() {
    let (m64, m32) = (Mlp::<f64>::new(), Mlp::<f32>::new());
    m64.check_grad();
    m32.check_grad();
    // The same model at both precisions: the f32 gradient is the f64 one, rounded.
    let (g64, g32) = (m64.grad(&m64.params), m32.grad(&m32.params));
    for (a, b) in g64.iter().zip(&g32) {
        assert_close(&reals(b), &a.to_vec(), 1e-5);
    }
}

#[test]
fn a_generic_model_with_literals_has_checked_hessian_vector_products() {
    let m = Mlp::<f64>::new();
    check_hvp(
        |p: &[Tensor<f64>]| m.grad(p),
        |p: &[Tensor<f64>], v: &[Tensor<f64>]| m.hvp(p, v),
        &m.params,
        1e-5,
        1e-6,
        1e-8,
    )
    .unwrap();
    let m = Mlp::<f32>::new();
    check_hvp(
        |p: &[Tensor<f32>]| m.grad(p),
        |p: &[Tensor<f32>], v: &[Tensor<f32>]| m.hvp(p, v),
        &m.params,
        1e-2,
        2e-2,
        2e-2,
    )
    .unwrap();
}
