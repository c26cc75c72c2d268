//! The benchmark workloads of docs/WORKLOADS.md (W1 `mlp`, W2 `small`, W3 `big-elementwise`, W4
//! `rnn`): each loss written once as a `#[differentiable]` function and once by hand on `ndarray`
//! arrays, timed in the same run so that the ratio rune / hand is what the figures show.
//!
//! Before anything is timed, every workload checks that its loss equals the reference value of
//! docs/WORKLOADS.md and that the generated gradient agrees with the hand-written one (§4): a
//! benchmark that checks nothing can time a wrong answer. W3 also times forward mode (`f_jvp`)
//! against a hand-written forward pass of the value and its directional derivative.
//!
//! Run single-threaded: `cargo bench --bench workloads` (see docs/benchmarks.md).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, SamplingMode};
use ndarray::linalg::general_mat_mul;
use ndarray::{s, Array1, Array2, Array3, ArrayView1, Axis, Zip};
use rune_ad::__private::workload_tensor;
use rune_ad::prelude::*;

// ---- checks ---------------------------------------------------------------------------------

/// `max_i |g_i - r_i| / max_i |r_i|`, the gradient agreement measure of docs/WORKLOADS.md §4.
fn relative_max_error<T: Copy + Into<f64>>(g: &[T], r: &[T]) -> f64 {
    assert_eq!(g.len(), r.len(), "gradients of different lengths");
    let diff = g
        .iter()
        .zip(r)
        .map(|(&a, &b)| (a.into() - b.into()).abs())
        .fold(0.0, f64::max);
    let scale = r.iter().map(|&b| b.into().abs()).fold(0.0, f64::max);
    diff / scale
}

/// The tolerance of §4 for an element type: 1e-4 for `f32`, 1e-10 for `f64`.
trait Tolerance {
    const GRAD_RTOL: f64;
}

impl Tolerance for f32 {
    const GRAD_RTOL: f64 = 1e-4;
}

impl Tolerance for f64 {
    const GRAD_RTOL: f64 = 1e-10;
}

/// Panics unless the generated gradient `g` of `name` agrees with the hand-written `r` to the
/// tolerance of §4 for its element type.
fn assert_gradient_agrees<T>(workload: &str, name: &str, g: &Tensor<T>, r: &[T])
where
    T: Copy + Into<f64> + Tolerance,
{
    let err = relative_max_error(&g.to_vec(), r);
    let tol = T::GRAD_RTOL;
    assert!(
        err <= tol,
        "{workload}: the gradient of {name} differs from the hand-written one by {err:e} \
         (relative to its largest element); at most {tol:e} is allowed"
    );
}

/// Panics unless `value` is within `rtol` (relative) of the reference `expected`.
fn assert_loss<T: Into<f64>>(workload: &str, who: &str, value: T, expected: f64, rtol: f64) {
    let value: f64 = value.into();
    let rel = (value - expected).abs() / expected.abs();
    assert!(
        rel <= rtol,
        "{workload}: the {who} loss is {value}, the reference {expected} (relative error {rel:e}, \
         at most {rtol:e} allowed)"
    );
}

fn to_array2(t: &Tensor<f32>) -> Array2<f32> {
    t.to_array()
        .into_dimensionality()
        .expect("a two-axis workload tensor")
}

fn to_array1<T: Clone>(t: &Tensor<T>) -> Array1<T> {
    t.to_array()
        .into_dimensionality()
        .expect("a one-axis workload tensor")
}

// ---- W1 mlp ---------------------------------------------------------------------------------

/// W1 as the user writes it: `sum((tanh(X W1 + b1) W2 + b2 - Y)^2) / 64`.
#[differentiable]
pub fn mlp_loss(
    w1: &Tensor<f32>,
    b1: &Tensor<f32>,
    w2: &Tensor<f32>,
    b2: &Tensor<f32>,
    #[nodiff] x: &Tensor<f32>,
    #[nodiff] y: &Tensor<f32>,
) -> Tensor<f32> {
    let h = (x.matmul(w1) + b1).tanh();
    let o = h.matmul(w2) + b2;
    let d = o - y;
    (&d * &d).sum() / 64.0
}

/// The W1 inputs, in both representations.
struct Mlp {
    x: Tensor<f32>,
    w1: Tensor<f32>,
    b1: Tensor<f32>,
    w2: Tensor<f32>,
    b2: Tensor<f32>,
    y: Tensor<f32>,
    hand: MlpArrays,
}

struct MlpArrays {
    x: Array2<f32>,
    w1: Array2<f32>,
    b1: Array1<f32>,
    w2: Array2<f32>,
    b2: Array1<f32>,
    y: Array2<f32>,
}

/// The gradients of W1 w.r.t. `W1, b1, W2, b2`.
struct MlpGrads {
    w1: Array2<f32>,
    b1: Array1<f32>,
    w2: Array2<f32>,
    b2: Array1<f32>,
}

impl Mlp {
    fn new() -> Self {
        let x = workload_tensor(&[64, 784], 11, 0.0, 1.0);
        let w1 = workload_tensor(&[784, 256], 12, -0.05, 0.05);
        let b1 = workload_tensor(&[256], 13, -0.1, 0.1);
        let w2 = workload_tensor(&[256, 10], 14, -0.0625, 0.0625);
        let b2 = workload_tensor(&[10], 15, -0.1, 0.1);
        let y = workload_tensor(&[64, 10], 16, 0.0, 1.0);
        let hand = MlpArrays {
            x: to_array2(&x),
            w1: to_array2(&w1),
            b1: to_array1(&b1),
            w2: to_array2(&w2),
            b2: to_array1(&b2),
            y: to_array2(&y),
        };
        Mlp {
            x,
            w1,
            b1,
            w2,
            b2,
            y,
            hand,
        }
    }

    fn forward(&self) -> Tensor<f32> {
        mlp_loss(&self.w1, &self.b1, &self.w2, &self.b2, &self.x, &self.y)
    }

    #[allow(clippy::type_complexity)]
    fn value_and_grad(
        &self,
    ) -> (
        Tensor<f32>,
        (Tensor<f32>, Tensor<f32>, Tensor<f32>, Tensor<f32>),
    ) {
        mlp_loss_value_and_grad(&self.w1, &self.b1, &self.w2, &self.b2, &self.x, &self.y)
    }
}

/// The pre-activation `X W1 + b1` and the residual `O - Y` share the forward pass of both
/// hand-written paths.
fn mlp_hidden(p: &MlpArrays) -> Array2<f32> {
    let mut h = p.x.dot(&p.w1);
    Zip::from(h.rows_mut()).for_each(|mut row| {
        Zip::from(&mut row)
            .and(&p.b1)
            .for_each(|v, &b| *v = (*v + b).tanh());
    });
    h
}

fn mlp_residual(p: &MlpArrays, h: &Array2<f32>) -> Array2<f32> {
    let mut r = h.dot(&p.w2);
    Zip::from(r.rows_mut())
        .and(p.y.rows())
        .for_each(|mut row, y_row| {
            Zip::from(&mut row)
                .and(&p.b2)
                .and(&y_row)
                .for_each(|v, &b, &y| *v = *v + b - y);
        });
    r
}

/// W1's loss by hand.
fn mlp_hand_forward(p: &MlpArrays) -> f32 {
    let h = mlp_hidden(p);
    let r = mlp_residual(p, &h);
    r.iter().map(|&v| v * v).sum::<f32>() / 64.0
}

/// W1's loss and gradients by hand: the forward pass, then the chain rule written out with
/// three matrix products and the bias sums.
fn mlp_hand_value_and_grad(p: &MlpArrays) -> (f32, MlpGrads) {
    let h = mlp_hidden(p);
    let mut r = mlp_residual(p, &h);
    let loss = r.iter().map(|&v| v * v).sum::<f32>() / 64.0;
    // dL/dO = 2 (O - Y) / 64, in place of the residual.
    r.mapv_inplace(|v| v * (2.0 / 64.0));
    let d_o = r;
    let w2 = h.t().dot(&d_o);
    let b2 = d_o.sum_axis(Axis(0));
    // dL/dZ = (dL/dO W2^T) * (1 - H^2), in place of the product.
    let mut d_z = d_o.dot(&p.w2.t());
    Zip::from(&mut d_z)
        .and(&h)
        .for_each(|d, &hv| *d *= 1.0 - hv * hv);
    let w1 = p.x.t().dot(&d_z);
    let b1 = d_z.sum_axis(Axis(0));
    (loss, MlpGrads { w1, b1, w2, b2 })
}

fn check_mlp(w: &Mlp) {
    const NAME: &str = "W1 mlp";
    const REFERENCE: f64 = 4.69625;
    assert_loss(NAME, "rune forward", w.forward().item(), REFERENCE, 1e-5);
    assert_loss(
        NAME,
        "hand forward",
        mlp_hand_forward(&w.hand),
        REFERENCE,
        1e-5,
    );
    let (value, (g_w1, g_b1, g_w2, g_b2)) = w.value_and_grad();
    let (hand_value, hand) = mlp_hand_value_and_grad(&w.hand);
    assert_loss(NAME, "rune value_and_grad", value.item(), REFERENCE, 1e-5);
    assert_loss(NAME, "hand value_and_grad", hand_value, REFERENCE, 1e-5);
    assert_eq!(g_w1.shape(), w.w1.shape());
    assert_eq!(g_b1.shape(), w.b1.shape());
    assert_eq!(g_w2.shape(), w.w2.shape());
    assert_eq!(g_b2.shape(), w.b2.shape());
    assert_gradient_agrees(
        NAME,
        "W1",
        &g_w1,
        hand.w1.as_slice().expect("standard layout"),
    );
    assert_gradient_agrees(
        NAME,
        "b1",
        &g_b1,
        hand.b1.as_slice().expect("standard layout"),
    );
    assert_gradient_agrees(
        NAME,
        "W2",
        &g_w2,
        hand.w2.as_slice().expect("standard layout"),
    );
    assert_gradient_agrees(
        NAME,
        "b2",
        &g_b2,
        hand.b2.as_slice().expect("standard layout"),
    );
}

// ---- W2 small -------------------------------------------------------------------------------

/// The number of updates of W2.
const SMALL_STEPS: usize = 20;

/// W2 as the user writes it: twenty updates of `x`, each followed by a term of the loss.
#[differentiable]
pub fn small_loss(x: &Tensor<f64>) -> Tensor<f64> {
    let mut x = x.clone();
    let mut acc = Tensor::scalar(0.0);
    for _ in 0..SMALL_STEPS {
        x = &x * 0.9 + 0.1 * x.tanh();
        acc += (x.sin() * x.exp() / (1.0 + &x * &x)).sum();
    }
    acc
}

/// W2's loss by hand. Every element of `x` evolves on its own, so the loss is a sum over the
/// elements of twenty scalar updates and terms, computed element by element in registers.
fn small_hand_forward(x: ArrayView1<'_, f64>) -> f64 {
    x.iter()
        .map(|&x0| {
            let mut v = x0;
            let mut acc = 0.0;
            for _ in 0..SMALL_STEPS {
                v = v * 0.9 + 0.1 * v.tanh();
                acc += v.sin() * v.exp() / (1.0 + v * v);
            }
            acc
        })
        .sum()
}

/// W2's loss and gradient by hand, element by element: the forward pass keeps each step's `x`
/// and `tanh` on the stack, the backward pass runs the steps in reverse with
/// `d term / dx = e^x (sin x + cos x) / (1 + x²) - term · 2x / (1 + x²)` and
/// `d x_k / d x_{k-1} = 0.9 + 0.1 (1 - tanh² x_{k-1})`.
fn small_hand_value_and_grad(x: ArrayView1<'_, f64>) -> (f64, Array1<f64>) {
    let mut loss = 0.0;
    let mut grad = Array1::zeros(x.len());
    Zip::from(&mut grad).and(&x).for_each(|g, &x0| {
        // xs[k] is x_k (x_0 the input), th[k] = tanh(x_k), dterm[k] = d term_{k+1} / d x_{k+1}.
        let mut th = [0.0; SMALL_STEPS];
        let mut dterm = [0.0; SMALL_STEPS];
        let mut v = x0;
        for k in 0..SMALL_STEPS {
            th[k] = v.tanh();
            v = v * 0.9 + 0.1 * th[k];
            let (s, c) = v.sin_cos();
            let e = v.exp();
            let q = 1.0 + v * v;
            let term = s * e / q;
            loss += term;
            dterm[k] = (e * (s + c) - term * 2.0 * v) / q;
        }
        let mut dv = 0.0;
        for k in (0..SMALL_STEPS).rev() {
            dv += dterm[k];
            dv *= 0.9 + 0.1 * (1.0 - th[k] * th[k]);
        }
        *g = dv;
    });
    (loss, grad)
}

fn check_small(x: &Tensor<f64>, x_hand: &Array1<f64>) {
    const NAME: &str = "W2 small";
    const REFERENCE: f64 = 49.84146708677225;
    assert_loss(NAME, "rune forward", small_loss(x).item(), REFERENCE, 1e-12);
    let hand = small_hand_forward(x_hand.view());
    assert_loss(NAME, "hand forward", hand, REFERENCE, 1e-12);
    let (value, grad) = small_loss_value_and_grad(x);
    let (hand_value, hand_grad) = small_hand_value_and_grad(x_hand.view());
    assert_loss(NAME, "rune value_and_grad", value.item(), REFERENCE, 1e-12);
    assert_loss(NAME, "hand value_and_grad", hand_value, REFERENCE, 1e-12);
    assert_eq!(grad.shape(), x.shape());
    assert_gradient_agrees(
        NAME,
        "x",
        &grad,
        hand_grad.as_slice().expect("standard layout"),
    );
}

// ---- W3 big-elementwise ---------------------------------------------------------------------

/// W3 as the user writes it: `sum(exp(sin(x)) * x * x + log(1 + x*x))`.
#[differentiable]
pub fn big_elementwise_loss(x: &Tensor<f32>) -> Tensor<f32> {
    (x.sin().exp() * x * x + (1.0 + x * x).ln()).sum()
}

/// W3's loss by hand: one pass over `x`, the terms in `f32`, their sum in `f64` (a running
/// `f32` sum of 10^6 terms near 2.7 drifts by a few parts in 10^4).
fn big_elementwise_hand_forward(x: ArrayView1<'_, f32>) -> f32 {
    x.iter()
        .map(|&v| {
            let v2 = v * v;
            (v.sin().exp() * v2 + (1.0 + v2).ln()) as f64
        })
        .sum::<f64>() as f32
}

/// W3's loss and gradient by hand: one pass computing each term and its derivative
/// `e^sin(x) (x² cos x + 2x) + 2x / (1 + x²)` (the loss summed as in the forward).
fn big_elementwise_hand_value_and_grad(x: ArrayView1<'_, f32>) -> (f32, Array1<f32>) {
    let mut grad = Array1::zeros(x.len());
    let mut loss = 0.0f64;
    Zip::from(&mut grad).and(&x).for_each(|g, &v| {
        let (s, c) = v.sin_cos();
        let e = s.exp();
        let v2 = v * v;
        let one_plus = 1.0 + v2;
        loss += (e * v2 + one_plus.ln()) as f64;
        *g = e * (v2 * c + 2.0 * v) + 2.0 * v / one_plus;
    });
    (loss as f32, grad)
}

/// W3's value and directional derivative along `t` by hand: forward mode in one pass, the
/// derivative of each term as in [`big_elementwise_hand_value_and_grad`] times `t`.
fn big_elementwise_hand_jvp(x: ArrayView1<'_, f32>, t: ArrayView1<'_, f32>) -> (f32, f32) {
    let (mut loss, mut tangent) = (0.0f64, 0.0f64);
    Zip::from(&x).and(&t).for_each(|&v, &dv| {
        let (s, c) = v.sin_cos();
        let e = s.exp();
        let v2 = v * v;
        let one_plus = 1.0 + v2;
        loss += (e * v2 + one_plus.ln()) as f64;
        tangent += ((e * (v2 * c + 2.0 * v) + 2.0 * v / one_plus) * dv) as f64;
    });
    (loss as f32, tangent as f32)
}

fn check_big_elementwise(x: &Tensor<f32>, x_hand: &Array1<f32>) {
    const NAME: &str = "W3 big-elementwise";
    const REFERENCE: f64 = 2.67625e6;
    let rune = big_elementwise_loss(x).item();
    assert_loss(NAME, "rune forward", rune, REFERENCE, 1e-4);
    let hand = big_elementwise_hand_forward(x_hand.view());
    assert_loss(NAME, "hand forward", hand, REFERENCE, 1e-4);
    let (value, grad) = big_elementwise_loss_value_and_grad(x);
    let (hand_value, hand_grad) = big_elementwise_hand_value_and_grad(x_hand.view());
    assert_loss(NAME, "rune value_and_grad", value.item(), REFERENCE, 1e-4);
    assert_loss(NAME, "hand value_and_grad", hand_value, REFERENCE, 1e-4);
    assert_eq!(grad.shape(), x.shape());
    assert_gradient_agrees(
        NAME,
        "x",
        &grad,
        hand_grad.as_slice().expect("standard layout"),
    );
    // Forward mode along the direction cos(x): its tangent is the gradient's dot product
    // with it, and the hand-written forward pass's.
    let t = x.map(|&v| v.cos());
    let (jvp_value, jvp_tangent) = big_elementwise_loss_jvp(x, &t);
    assert_loss(NAME, "rune jvp", jvp_value.item(), REFERENCE, 1e-4);
    let (_, hand_tangent) = big_elementwise_hand_jvp(x_hand.view(), to_array1(&t).view());
    let dot: f64 = grad
        .to_vec()
        .iter()
        .zip(t.to_vec())
        .map(|(g, t)| f64::from(*g) * f64::from(t))
        .sum();
    for (what, tangent) in [
        ("rune jvp", f64::from(jvp_tangent.item())),
        ("hand jvp", f64::from(hand_tangent)),
    ] {
        assert!(
            (tangent - dot).abs() <= 1e-4 * dot.abs(),
            "{NAME}: {what} tangent {tangent}, the gradient's dot product {dot}"
        );
    }
}

// ---- W4 rnn ---------------------------------------------------------------------------------

const RNN_STEPS: usize = 50;
const RNN_BATCH: usize = 16;
const RNN_HIDDEN: usize = 64;
const RNN_INPUT: usize = 32;

/// W4 as the user writes it: fifty steps of `h = tanh(h Wᵀ + x_t Uᵀ + b)`, `x_t = xs[t]`.
#[differentiable]
pub fn rnn_loss(
    w: &Tensor<f32>,
    u: &Tensor<f32>,
    b: &Tensor<f32>,
    #[nodiff] xs: &Tensor<f32>,
) -> Tensor<f32> {
    let mut h = Tensor::zeros(&[RNN_BATCH, RNN_HIDDEN]);
    for t in 0..RNN_STEPS {
        let x_t = xs
            .shrink(&[(t, t + 1), (0, RNN_BATCH), (0, RNN_INPUT)])
            .squeeze(0);
        h = (h.matmul(&w.t()) + x_t.matmul(&u.t()) + b).tanh();
    }
    (&h * &h).sum()
}

/// The W4 inputs, in both representations.
struct Rnn {
    w: Tensor<f32>,
    u: Tensor<f32>,
    b: Tensor<f32>,
    xs: Tensor<f32>,
    hand: RnnArrays,
}

struct RnnArrays {
    w: Array2<f32>,
    u: Array2<f32>,
    b: Array1<f32>,
    /// `xs` with its step and batch axes merged: row `16 t + i` is `xs[t][i]`.
    x: Array2<f32>,
}

/// The gradients of W4 w.r.t. `W, U, b`.
struct RnnGrads {
    w: Array2<f32>,
    u: Array2<f32>,
    b: Array1<f32>,
}

impl Rnn {
    fn new() -> Self {
        let w = workload_tensor(&[RNN_HIDDEN, RNN_HIDDEN], 41, -0.125, 0.125);
        let u = workload_tensor(&[RNN_HIDDEN, RNN_INPUT], 42, -0.15, 0.15);
        let b = workload_tensor(&[RNN_HIDDEN], 43, -0.1, 0.1);
        let xs = workload_tensor(&[RNN_STEPS, RNN_BATCH, RNN_INPUT], 44, -1.0, 1.0);
        let xs3: Array3<f32> = xs
            .to_array()
            .into_dimensionality()
            .expect("a three-axis workload tensor");
        let x = xs3
            .into_shape_with_order((RNN_STEPS * RNN_BATCH, RNN_INPUT))
            .expect("a row-major array reshapes");
        let hand = RnnArrays {
            w: to_array2(&w),
            u: to_array2(&u),
            b: to_array1(&b),
            x,
        };
        Rnn { w, u, b, xs, hand }
    }

    fn forward(&self) -> Tensor<f32> {
        rnn_loss(&self.w, &self.u, &self.b, &self.xs)
    }

    #[allow(clippy::type_complexity)]
    fn value_and_grad(&self) -> (Tensor<f32>, (Tensor<f32>, Tensor<f32>, Tensor<f32>)) {
        rnn_loss_value_and_grad(&self.w, &self.u, &self.b, &self.xs)
    }
}

/// Every hidden state of W4, as a hand-written RNN computes them: `X Uᵀ + b` for all fifty steps
/// in one product, then per step `h_t = tanh(h_{t-1} Wᵀ + row block t)`, the product added into
/// the block in place. Row block `t` (rows `16 t .. 16 t + 16`) of the result is `h_t`.
fn rnn_hidden_states(p: &RnnArrays) -> Array2<f32> {
    let mut hs = p.x.dot(&p.u.t());
    Zip::from(hs.rows_mut()).for_each(|mut row| row += &p.b);
    for t in 0..RNN_STEPS {
        let (done, mut rest) = hs.view_mut().split_at(Axis(0), t * RNN_BATCH);
        let mut a = rest.slice_mut(s![..RNN_BATCH, ..]);
        if t > 0 {
            let prev = done.slice(s![(t - 1) * RNN_BATCH.., ..]);
            general_mat_mul(1.0, &prev, &p.w.t(), 1.0, &mut a);
        }
        a.mapv_inplace(f32::tanh);
    }
    hs
}

/// W4's loss by hand.
fn rnn_hand_forward(p: &RnnArrays) -> f32 {
    let hs = rnn_hidden_states(p);
    let last = hs.slice(s![(RNN_STEPS - 1) * RNN_BATCH.., ..]);
    last.iter().map(|&v| v * v).sum()
}

/// W4's loss and gradients by hand: every `h_t` kept, the backward pass per step only
/// `dA_t = dh_t (1 - h_t²)` and `dh_{t-1} = dA_t W`; the weight gradients then in one product
/// each over all steps, `dW = Σ dA_tᵀ h_{t-1}` (h_{-1} = 0), `dU = Σ dA_tᵀ x_t`, `db = Σ dA_t`.
fn rnn_hand_value_and_grad(p: &RnnArrays) -> (f32, RnnGrads) {
    let hs = rnn_hidden_states(p);
    let rows = RNN_STEPS * RNN_BATCH;
    let last = hs.slice(s![rows - RNN_BATCH.., ..]);
    let loss = last.iter().map(|&v| v * v).sum();
    // dA for all steps; block t is first dh_t, then turned into dA_t in place.
    let mut da = Array2::<f32>::zeros((rows, RNN_HIDDEN));
    Zip::from(da.slice_mut(s![rows - RNN_BATCH.., ..]))
        .and(&last)
        .for_each(|d, &h| *d = 2.0 * h);
    for t in (0..RNN_STEPS).rev() {
        let (mut before, mut rest) = da.view_mut().split_at(Axis(0), t * RNN_BATCH);
        let mut block = rest.slice_mut(s![..RNN_BATCH, ..]);
        Zip::from(&mut block)
            .and(hs.slice(s![t * RNN_BATCH..(t + 1) * RNN_BATCH, ..]))
            .for_each(|d, &h| *d *= 1.0 - h * h);
        if t > 0 {
            let mut prev = before.slice_mut(s![(t - 1) * RNN_BATCH.., ..]);
            general_mat_mul(1.0, &block, &p.w, 0.0, &mut prev);
        }
    }
    let w = da
        .slice(s![RNN_BATCH.., ..])
        .t()
        .dot(&hs.slice(s![..rows - RNN_BATCH, ..]));
    let u = da.t().dot(&p.x);
    let b = da.sum_axis(Axis(0));
    (loss, RnnGrads { w, u, b })
}

fn check_rnn(w: &Rnn) {
    const NAME: &str = "W4 rnn";
    const REFERENCE: f64 = 99.7690;
    const RTOL: f64 = 1e-5;
    assert_loss(NAME, "rune forward", w.forward().item(), REFERENCE, RTOL);
    assert_loss(
        NAME,
        "hand forward",
        rnn_hand_forward(&w.hand),
        REFERENCE,
        RTOL,
    );
    let (value, (g_w, g_u, g_b)) = w.value_and_grad();
    let (hand_value, hand) = rnn_hand_value_and_grad(&w.hand);
    assert_loss(NAME, "rune value_and_grad", value.item(), REFERENCE, RTOL);
    assert_loss(NAME, "hand value_and_grad", hand_value, REFERENCE, RTOL);
    assert_eq!(g_w.shape(), w.w.shape());
    assert_eq!(g_u.shape(), w.u.shape());
    assert_eq!(g_b.shape(), w.b.shape());
    assert_gradient_agrees(NAME, "W", &g_w, hand.w.as_slice().expect("standard layout"));
    assert_gradient_agrees(NAME, "U", &g_u, hand.u.as_slice().expect("standard layout"));
    assert_gradient_agrees(NAME, "b", &g_b, hand.b.as_slice().expect("standard layout"));
}

// ---- timing ---------------------------------------------------------------------------------

fn w1_mlp(c: &mut Criterion) {
    let w = Mlp::new();
    check_mlp(&w);

    let mut group = c.benchmark_group("w1_mlp/forward");
    group.bench_function("rune", |b| b.iter(|| black_box(w.forward())));
    group.bench_function("hand", |b| {
        b.iter(|| black_box(mlp_hand_forward(black_box(&w.hand))))
    });
    group.finish();

    let mut group = c.benchmark_group("w1_mlp/value_and_grad");
    group.bench_function("rune", |b| b.iter(|| black_box(w.value_and_grad())));
    group.bench_function("hand", |b| {
        b.iter(|| black_box(mlp_hand_value_and_grad(black_box(&w.hand))))
    });
    group.finish();
}

fn w2_small(c: &mut Criterion) {
    let x: Tensor<f64> = workload_tensor(&[16], 21, -1.0, 1.0);
    let x_hand = to_array1(&x);
    check_small(&x, &x_hand);

    let mut group = c.benchmark_group("w2_small/forward");
    group.bench_function("rune", |b| b.iter(|| black_box(small_loss(black_box(&x)))));
    group.bench_function("hand", |b| {
        b.iter(|| black_box(small_hand_forward(black_box(x_hand.view()))))
    });
    group.finish();

    let mut group = c.benchmark_group("w2_small/value_and_grad");
    group.bench_function("rune", |b| {
        b.iter(|| black_box(small_loss_value_and_grad(black_box(&x))))
    });
    group.bench_function("hand", |b| {
        b.iter(|| black_box(small_hand_value_and_grad(black_box(x_hand.view()))))
    });
    group.finish();
}

/// W3 calls take tens of milliseconds: fewer samples of one call each.
fn slow_group<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(4));
    group
}

fn w3_big_elementwise(c: &mut Criterion) {
    let x: Tensor<f32> = workload_tensor(&[1_000_000], 31, -2.0, 2.0);
    let x_hand = to_array1(&x);
    check_big_elementwise(&x, &x_hand);

    let mut group = slow_group(c, "w3_big_elementwise/forward");
    group.bench_function("rune", |b| {
        b.iter(|| black_box(big_elementwise_loss(black_box(&x))))
    });
    group.bench_function("hand", |b| {
        b.iter(|| black_box(big_elementwise_hand_forward(black_box(x_hand.view()))))
    });
    group.finish();

    let mut group = slow_group(c, "w3_big_elementwise/value_and_grad");
    group.bench_function("rune", |b| {
        b.iter(|| black_box(big_elementwise_loss_value_and_grad(black_box(&x))))
    });
    group.bench_function("hand", |b| {
        b.iter(|| {
            black_box(big_elementwise_hand_value_and_grad(black_box(
                x_hand.view(),
            )))
        })
    });
    group.finish();

    let t = x.map(|&v| v.cos());
    let t_hand = to_array1(&t);
    let mut group = slow_group(c, "w3_big_elementwise/jvp");
    group.bench_function("rune", |b| {
        b.iter(|| black_box(big_elementwise_loss_jvp(black_box(&x), black_box(&t))))
    });
    group.bench_function("hand", |b| {
        b.iter(|| {
            black_box(big_elementwise_hand_jvp(
                black_box(x_hand.view()),
                black_box(t_hand.view()),
            ))
        })
    });
    group.finish();
}

fn w4_rnn(c: &mut Criterion) {
    let w = Rnn::new();
    check_rnn(&w);

    let mut group = c.benchmark_group("w4_rnn/forward");
    group.bench_function("rune", |b| b.iter(|| black_box(w.forward())));
    group.bench_function("hand", |b| {
        b.iter(|| black_box(rnn_hand_forward(black_box(&w.hand))))
    });
    group.finish();

    let mut group = c.benchmark_group("w4_rnn/value_and_grad");
    group.bench_function("rune", |b| b.iter(|| black_box(w.value_and_grad())));
    group.bench_function("hand", |b| {
        b.iter(|| black_box(rnn_hand_value_and_grad(black_box(&w.hand))))
    });
    group.finish();
}

criterion_group!(workloads, w1_mlp, w2_small, w3_big_elementwise, w4_rnn);
criterion_main!(workloads);
