//! What `#[differentiable]` means, checked against derivatives worked out by hand in each test
//! (closed forms evaluated with plain loops, never numbers taken from the code under test), and
//! against central finite differences where the function is a composition.

use rune_ad::prelude::*;
use rune_ad::GradFn;

// ---- helpers ---------------------------------------------------------------------------------

fn t64(values: &[f64], shape: &[usize]) -> Tensor<f64> {
    Tensor::from_vec(values.to_vec(), shape)
}

fn t32(values: &[f64], shape: &[usize]) -> Tensor<f32> {
    Tensor::from_vec(values.iter().map(|&v| v as f32).collect(), shape)
}

fn real<T: Element>(t: &Tensor<T>) -> Vec<f64> {
    t.to_vec().into_iter().map(Element::to_real).collect()
}

/// `got` has `shape` and is within `tol` (relative to max(1, |want|)) of `want`, elementwise.
#[track_caller]
fn assert_close<T: Element>(got: &Tensor<T>, want: &[f64], shape: &[usize], tol: f64) {
    assert_eq!(got.shape(), shape, "shape");
    let got = real(got);
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "element {i}: got {g}, want {w}\n got: {got:?}\nwant: {want:?}"
        );
    }
}

/// Exactly equal numbers and shapes.
#[track_caller]
fn assert_same<T: Element>(a: &Tensor<T>, b: &Tensor<T>) {
    assert_eq!(a.shape(), b.shape(), "shape");
    assert_eq!(real(a), real(b));
}

/// Runs `check_grad` at `T`'s default step and tolerances.
#[track_caller]
fn fd_check<T: Element>(f: &impl GradFn<T>, args: &[Tensor<T>]) {
    if let Err(e) = check_grad(f, args, T::FD_EPS, T::GRAD_TOL, T::GRAD_TOL) {
        panic!("{e}");
    }
}

fn normal(shape: &[usize], seed: u64) -> Tensor<f64> {
    Tensor::rand_normal(shape, 0.0, 1.0, seed)
}

fn positive(shape: &[usize], seed: u64) -> Tensor<f64> {
    Tensor::rand_uniform(shape, 0.5, 2.0, seed)
}

// ---- the docs/API.md example ----------------------------------------------------------------------

#[differentiable]
pub fn loss(
    w: &Tensor<f32>,
    b: &Tensor<f32>,
    #[nodiff] x: &Tensor<f32>,
    #[nodiff] y: &Tensor<f32>,
) -> Tensor<f32> {
    let z = x.matmul(w) + b;
    let d = z.tanh() - y;
    (&d * &d).mean()
}

/// The loss and its gradient for x: [n, m], w: [m, k], b: [k], y: [n, k], by hand:
/// z = x w + b, d = tanh z - y, L = Σ d² / (n k); dL/dz = 2 d (1 - tanh² z) / (n k),
/// dL/dw = xᵀ dL/dz, dL/db = Σ_rows dL/dz.
#[allow(clippy::too_many_arguments)]
fn loss_by_hand(
    w: &[f64],
    b: &[f64],
    x: &[f64],
    y: &[f64],
    n: usize,
    m: usize,
    k: usize,
) -> (f64, Vec<f64>, Vec<f64>) {
    let mut value = 0.0;
    let mut gw = vec![0.0; m * k];
    let mut gb = vec![0.0; k];
    for i in 0..n {
        for c in 0..k {
            let z: f64 = (0..m).map(|j| x[i * m + j] * w[j * k + c]).sum::<f64>() + b[c];
            let d = z.tanh() - y[i * k + c];
            value += d * d / (n * k) as f64;
            let dz = 2.0 * d * (1.0 - z.tanh().powi(2)) / (n * k) as f64;
            for j in 0..m {
                gw[j * k + c] += x[i * m + j] * dz;
            }
            gb[c] += dz;
        }
    }
    (value, gw, gb)
}

#[test]
fn api_example_loss_gradient_matches_the_hand_derived_one() {
    let (n, m, k) = (4, 3, 2);
    let w = [0.3, -0.2, 0.8, 0.5, -0.6, 0.1];
    let b = [0.05, -0.1];
    let x = [
        1.0, 0.5, -0.3, 0.2, -1.0, 0.7, -0.4, 0.3, 0.9, 0.6, 0.1, -0.8,
    ];
    let y = [0.2, -0.5, 0.7, 0.1, -0.3, 0.4, 0.0, 0.6];
    let (value, gw, gb) = loss_by_hand(&w, &b, &x, &y, n, m, k);
    let (tw, tb, tx, ty) = (
        t32(&w, &[m, k]),
        t32(&b, &[k]),
        t32(&x, &[n, m]),
        t32(&y, &[n, k]),
    );

    let (v, (dw, db)) = loss_value_and_grad(&tw, &tb, &tx, &ty);
    assert_close(&v, &[value], &[], 1e-5);
    assert_close(&dw, &gw, &[m, k], 1e-5);
    assert_close(&db, &gb, &[k], 1e-5);

    let (dw2, db2) = loss_grad(&tw, &tb, &tx, &ty);
    assert_same(&dw, &dw2);
    assert_same(&db, &db2);

    // The original function is unchanged.
    assert_close(&loss(&tw, &tb, &tx, &ty), &[value], &[], 1e-5);

    // Forward mode: the tangent is the gradient dotted with the direction.
    let (dir_w, dir_b) = (
        t32(&[1.0, 0.0, -1.0, 2.0, 0.5, 0.0], &[m, k]),
        t32(&[0.0, 1.0], &[k]),
    );
    let (v2, tangent) = loss_jvp(&tw, &tb, &tx, &ty, &dir_w, &dir_b);
    assert_same(&v, &v2);
    let want: f64 = gw.iter().zip(real(&dir_w)).map(|(g, d)| g * d).sum::<f64>()
        + gb.iter().zip(real(&dir_b)).map(|(g, d)| g * d).sum::<f64>();
    assert_close(&tangent, &[want], &[], 1e-5);
}

/// The same model at f64, generic, checked tightly.
#[differentiable]
pub fn loss_generic<T: Element>(
    w: &Tensor<T>,
    b: &Tensor<T>,
    #[nodiff] x: &Tensor<T>,
    #[nodiff] y: &Tensor<T>,
) -> Tensor<T> {
    let z = x.matmul(w) + b;
    let d = z.tanh() - y;
    (&d * &d).mean()
}

#[test]
fn generic_loss_gradient_at_f64() {
    let (n, m, k) = (5, 3, 4);
    let (w, b, x, y) = (
        normal(&[m, k], 1),
        normal(&[k], 2),
        normal(&[n, m], 3),
        normal(&[n, k], 4),
    );
    let (value, gw, gb) = loss_by_hand(&real(&w), &real(&b), &real(&x), &real(&y), n, m, k);
    let (v, (dw, db)) = loss_generic_value_and_grad(&w, &b, &x, &y);
    assert_close(&v, &[value], &[], 1e-12);
    assert_close(&dw, &gw, &[m, k], 1e-12);
    assert_close(&db, &gb, &[k], 1e-12);
}

// ---- the entry points agree ------------------------------------------------------------------

#[differentiable]
fn two_inputs<T: Element>(x: &Tensor<T>, y: Tensor<T>) -> Tensor<T> {
    (x.sin() * &y).sum()
}

#[differentiable]
fn one_element_not_0d(x: &Tensor<f64>) -> Tensor<f64> {
    x.square().sum_axes(&[0, 1], true)
}

#[test]
fn value_and_grad_and_grad_agree_with_vjp_of_ones() {
    let (x, y) = (normal(&[2, 3], 5), normal(&[2, 3], 6));
    let (v, (gx, gy)) = two_inputs_value_and_grad(&x, y.clone());
    let (v2, (gx2, gy2)) = two_inputs_vjp(&x, y.clone(), &Tensor::scalar(1.0));
    let (gx3, gy3) = two_inputs_grad(&x, y.clone());
    assert_eq!(v.shape(), &[] as &[usize]);
    assert_same(&v, &v2);
    assert_same(&v, &two_inputs(&x, y.clone()));
    for (a, b) in [(&gx, &gx2), (&gx, &gx3), (&gy, &gy2), (&gy, &gy3)] {
        assert_same(a, b);
    }
    // d/dx Σ sin(x) y = cos(x) y, d/dy = sin(x).
    let want_x: Vec<f64> = real(&x)
        .iter()
        .zip(real(&y))
        .map(|(a, b)| a.cos() * b)
        .collect();
    let want_y: Vec<f64> = real(&x).iter().map(|a| a.sin()).collect();
    assert_close(&gx, &want_x, &[2, 3], 1e-12);
    assert_close(&gy, &want_y, &[2, 3], 1e-12);

    // A cotangent scales the gradient (and the 0-d output takes a 0-d cotangent).
    let (_, (gx4, _)) = two_inputs_vjp(&x, y.clone(), &Tensor::scalar(-2.0));
    let scaled: Vec<f64> = want_x.iter().map(|v| -2.0 * v).collect();
    assert_close(&gx4, &scaled, &[2, 3], 1e-12);

    // A one-element value that is not 0-d: seeded with ones of its shape.
    let (v, g) = one_element_not_0d_value_and_grad(&x);
    assert_eq!(v.shape(), &[1, 1]);
    let (_, g2) = one_element_not_0d_vjp(&x, &Tensor::ones(&[1, 1]));
    assert_same(&g, &g2);
    assert_same(&g, &one_element_not_0d_grad(&x));
    let twice: Vec<f64> = real(&x).iter().map(|v| 2.0 * v).collect();
    assert_close(&g, &twice, &[2, 3], 1e-12);
    assert_same(&v, &one_element_not_0d(&x));
}

#[differentiable]
fn non_scalar<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    x.exp()
}

#[test]
#[should_panic(
    expected = "`non_scalar` returned shape [2, 3]; a gradient needs a value with \
                           exactly one element"
)]
fn value_and_grad_of_a_non_scalar_value_panics() {
    let x = normal(&[2, 3], 7);
    // The function itself and its reverse mode are fine with a non-scalar value.
    let (v, g) = non_scalar_vjp(&x, &Tensor::ones(&[2, 3]));
    assert_same(&v, &non_scalar(&x));
    assert_same(&g, &v);
    let _ = non_scalar_value_and_grad(&x);
}

#[test]
#[should_panic(
    expected = "`non_scalar` returned shape [2]; a gradient needs a value with \
                           exactly one element"
)]
fn grad_of_a_non_scalar_value_panics() {
    let _ = non_scalar_grad(&Tensor::<f32>::ones(&[2]));
}

// ---- constants -------------------------------------------------------------------------------

#[differentiable]
fn with_constants<T: Element>(
    x: &Tensor<T>,
    #[nodiff] c: &Tensor<T>,
    s: T,
    axis: usize,
    #[nodiff] d: Tensor<T>,
) -> Tensor<T> {
    let scaled = x * c * s + &d;
    scaled
        .square()
        .sum_axes(&[axis as isize], false)
        .sum()
        .powf(T::from_f64(0.5))
}

#[test]
fn nodiff_tensors_and_scalar_parameters_are_constants() {
    let (x, c, d) = (normal(&[2, 3], 8), normal(&[2, 3], 9), normal(&[3], 10));
    let s = 1.7;
    // f = sqrt(Σ (x c s + d)²); df/dx = (x c s + d) c s / f.
    let u: Vec<f64> = (0..6)
        .map(|i| real(&x)[i] * real(&c)[i] * s + real(&d)[i % 3])
        .collect();
    let f = u.iter().map(|v| v * v).sum::<f64>().sqrt();
    let want: Vec<f64> = (0..6).map(|i| u[i] * real(&c)[i] * s / f).collect();

    // One active parameter: the gradient is a single tensor, not a tuple.
    let g: Tensor<f64> = with_constants_grad(&x, &c, s, 1, d.clone());
    assert_close(&g, &want, &[2, 3], 1e-12);
    let (v, g0) = with_constants_value_and_grad(&x, &c, s, 0, d.clone());
    assert_close(&v, &[f], &[], 1e-12);
    assert_close(&g0, &want, &[2, 3], 1e-12);
    assert_same(&v, &with_constants(&x, &c, s, 0, d.clone()));
    // Forward mode takes one tangent, for `x`.
    let dir = normal(&[2, 3], 11);
    let (_, t) = with_constants_jvp(&x, &c, s, 1, d.clone(), &dir);
    let dot: f64 = want.iter().zip(real(&dir)).map(|(a, b)| a * b).sum();
    assert_close(&t, &[dot], &[], 1e-12);
}

#[differentiable]
fn ignores_y<T: Element>(x: &Tensor<T>, _y: &Tensor<T>) -> Tensor<T> {
    x.exp().sum()
}

#[differentiable]
fn dead_values(x: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
    // Computed, never reaching the output; `y.ln()` is NaN for negative `y`.
    let unused = y.ln() * x;
    let _also = unused.sum() + x.exp();
    let out = x.square().sum();
    let _after = out.exp() * y;
    out
}

#[test]
fn an_unused_input_gets_an_exact_zero_gradient_of_its_shape() {
    let (x, y) = (normal(&[2, 3], 12), normal(&[4], 13));
    let (gx, gy) = ignores_y_grad(&x, &y);
    assert_eq!(gy.shape(), &[4]);
    assert!(real(&gy).iter().all(|&v| v == 0.0));
    let (v, _) = ignores_y_value_and_grad(&x, &y);
    assert_same(&v, &ignores_y(&x, &y));
    let want: Vec<f64> = real(&x).iter().map(|v| v.exp()).collect();
    assert_close(&gx, &want, &[2, 3], 1e-12);
    // A NaN tangent for the unused input does not leak either.
    let (_, t) = ignores_y_jvp(
        &x,
        &y,
        &Tensor::zeros(&[2, 3]),
        &Tensor::full(&[4], f64::NAN),
    );
    assert_eq!(real(&t), vec![0.0]);
    // At f32 too.
    let (_, gy) = ignores_y_grad(&Tensor::<f32>::ones(&[2]), &Tensor::<f32>::ones(&[3, 1]));
    assert_eq!(gy.shape(), &[3, 1]);
    assert!(gy.to_vec().iter().all(|&v| v == 0.0));
}

#[test]
fn values_that_do_not_reach_the_output_do_not_contribute() {
    let x = normal(&[2, 3], 14);
    let y = t64(&[-1.0, 0.0, 2.0], &[3]);
    let (v, (gx, gy)) = dead_values_value_and_grad(&x, &y);
    let xs = real(&x);
    assert_close(&v, &[xs.iter().map(|a| a * a).sum()], &[], 1e-12);
    assert_same(&v, &dead_values(&x, &y));
    let twice: Vec<f64> = xs.iter().map(|a| 2.0 * a).collect();
    assert_close(&gx, &twice, &[2, 3], 1e-12);
    assert_eq!(real(&gy), vec![0.0; 3]);
    let (_, t) = dead_values_jvp(&x, &y, &x, &Tensor::full(&[3], f64::NAN));
    assert_close(
        &t,
        &[twice.iter().zip(&xs).map(|(a, b)| a * b).sum()],
        &[],
        1e-12,
    );
}

#[differentiable]
fn constant_subexpressions(x: &Tensor<f64>) -> Tensor<f64> {
    let n = x.shape()[0] as f64;
    let columns = x.shape()[1];
    let offset = Tensor::<f64>::zeros(&[columns]) + 1.0;
    let ramp = Tensor::<f64>::arange(x.len()).reshape(x.shape());
    let ndim = x.ndim();
    let mut k = 0.0;
    for i in 0..ndim {
        k += i as f64;
    }
    ((x + &offset) * &ramp).sum() / n + x.mean() * k
}

#[test]
fn constant_subexpressions_stay_constant() {
    let x = normal(&[4, 3], 15);
    // f = Σ (x + 1) r / 4 + k mean(x) with r = 0..12, k = 0 + 1; df/dx_i = r_i / 4 + 1 / 12.
    let want: Vec<f64> = (0..12).map(|i| i as f64 / 4.0 + 1.0 / 12.0).collect();
    let (v, g) = constant_subexpressions_value_and_grad(&x);
    assert_close(&g, &want, &[4, 3], 1e-12);
    let xs = real(&x);
    let value = (0..12).map(|i| (xs[i] + 1.0) * i as f64).sum::<f64>() / 4.0
        + xs.iter().sum::<f64>() / 12.0;
    assert_close(&v, &[value], &[], 1e-12);
    assert_same(&v, &constant_subexpressions(&x));
}

#[differentiable]
fn metadata_in_arrays_and_loops(x: &Tensor<f64>) -> Tensor<f64> {
    let mut k = 0.0;
    for i in 0..x.ndim() {
        k += i as f64;
    }
    (x + &Tensor::zeros(&[x.shape()[1]])).sum() * k
}

#[test]
fn metadata_reads_are_constants_everywhere() {
    // f = Σ (x + 0) · k with k = 0 + 1: the gradient is all ones.
    let g = metadata_in_arrays_and_loops_grad(&normal(&[2, 3], 42));
    assert_close(&g, &[1.0; 6], &[2, 3], 1e-12);
}

#[differentiable]
fn stopped<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    let frozen = stop_gradient(&x.exp());
    (x * stop_gradient(x) + &frozen * x).sum()
}

#[test]
fn stop_gradient_passes_the_value_and_blocks_the_gradient() {
    let x = normal(&[5], 16);
    let xs = real(&x);
    // Value Σ x² + eˣ x; with the stopped factors held fixed, d/dx = x + eˣ.
    let (v, g) = stopped_value_and_grad(&x);
    let value: f64 = xs.iter().map(|a| a * a + a.exp() * a).sum();
    assert_close(&v, &[value], &[], 1e-12);
    let want: Vec<f64> = xs.iter().map(|a| a + a.exp()).collect();
    assert_close(&g, &want, &[5], 1e-12);
    assert_same(&v, &stopped(&x));
    let (_, t) = stopped_jvp(&x, &Tensor::ones(&[5]));
    assert_close(&t, &[want.iter().sum()], &[], 1e-12);
}

// ---- statements ------------------------------------------------------------------------------

#[differentiable]
#[allow(clippy::needless_return, clippy::let_and_return)]
fn statements<T: Element>(x: &Tensor<T>, y: Tensor<T>) -> Tensor<T> {
    let x = x * T::from_f64(2.0);
    let mut acc = x.clone();
    acc += &y;
    acc *= &x;
    acc -= T::from_f64(1.0);
    acc /= &y;
    let z = {
        let inner = acc.sin();
        let x = &inner + &x;
        x
    };
    let w = &z;
    acc = w.clone() * &y;
    return acc.sum();
}

#[test]
fn shadowing_reassignment_compound_assignment_blocks_and_return() {
    let (x, y) = (normal(&[2, 3], 17), positive(&[2, 3], 18));
    // a = 2x, q = ((a + y) a - 1) / y, z = sin q + a, f = Σ z y.
    // df/dx = y (cos q · 2 (2a + y) / y + 2); df/dy = z + y cos q (1 - a²) / y².
    let (xs, ys) = (real(&x), real(&y));
    let mut gx = Vec::new();
    let mut gy = Vec::new();
    let mut value = 0.0;
    for (&x, &y) in xs.iter().zip(&ys) {
        let a = 2.0 * x;
        let q = ((a + y) * a - 1.0) / y;
        let z = q.sin() + a;
        value += z * y;
        gx.push(y * (q.cos() * 2.0 * (2.0 * a + y) / y + 2.0));
        gy.push(z + y * q.cos() * (1.0 - a * a) / (y * y));
    }
    let (v, (dx, dy)) = statements_value_and_grad(&x, y.clone());
    assert_close(&v, &[value], &[], 1e-12);
    assert_close(&dx, &gx, &[2, 3], 1e-10);
    assert_close(&dy, &gy, &[2, 3], 1e-10);
    let (_, t) = statements_jvp(
        &x,
        y.clone(),
        &Tensor::ones(&[2, 3]),
        &Tensor::zeros(&[2, 3]),
    );
    assert_close(&t, &[gx.iter().sum()], &[], 1e-10);
    // At f32, against finite differences.
    let f = grad_fn(
        |a: &[Tensor<f32>]| statements(&a[0], a[1].clone()),
        |a: &[Tensor<f32>], t: &[Tensor<f32>]| statements_jvp(&a[0], a[1].clone(), &t[0], &t[1]).1,
        |a: &[Tensor<f32>], g: &Tensor<f32>| {
            let (dx, dy) = statements_vjp(&a[0], a[1].clone(), g).1;
            vec![dx, dy]
        },
    );
    fd_check(&f, &[x.cast::<f32>(), y.cast::<f32>()]);
}

// ---- tuple outputs ---------------------------------------------------------------------------

#[differentiable]
fn pair<T: Element>(x: &Tensor<T>, y: &Tensor<T>) -> (Tensor<T>, Tensor<T>) {
    let s = x * y;
    (s.sum_axes(&[0], false), x.exp() - y)
}

#[test]
fn tuple_outputs_take_tuple_cotangents_and_give_tuple_tangents() {
    let (x, y) = (normal(&[2, 3], 19), normal(&[2, 3], 20));
    let (ca, cb) = (normal(&[3], 21), normal(&[2, 3], 22));
    let (xs, ys, cas, cbs) = (real(&x), real(&y), real(&ca), real(&cb));
    // a_j = Σ_i x_ij y_ij, b = eˣ - y:
    // gx = ca_j y_ij + cb_ij e^x_ij, gy = ca_j x_ij - cb_ij.
    let gx: Vec<f64> = (0..6)
        .map(|i| cas[i % 3] * ys[i] + cbs[i] * xs[i].exp())
        .collect();
    let gy: Vec<f64> = (0..6).map(|i| cas[i % 3] * xs[i] - cbs[i]).collect();
    let ((a, b), (dx, dy)) = pair_vjp(&x, &y, (&ca, &cb));
    let (a2, b2) = pair(&x, &y);
    assert_same(&a, &a2);
    assert_same(&b, &b2);
    assert_close(&dx, &gx, &[2, 3], 1e-12);
    assert_close(&dy, &gy, &[2, 3], 1e-12);

    // ta_j = Σ_i (tx y + x ty)_ij, tb = eˣ tx - ty.
    let (tx, ty) = (normal(&[2, 3], 23), normal(&[2, 3], 24));
    let (txs, tys) = (real(&tx), real(&ty));
    let ((a3, b3), (ta, tb)) = pair_jvp(&x, &y, &tx, &ty);
    assert_same(&a, &a3);
    assert_same(&b, &b3);
    let want_a: Vec<f64> = (0..3)
        .map(|j| {
            (0..2)
                .map(|i| txs[3 * i + j] * ys[3 * i + j] + xs[3 * i + j] * tys[3 * i + j])
                .sum()
        })
        .collect();
    let want_b: Vec<f64> = (0..6).map(|i| xs[i].exp() * txs[i] - tys[i]).collect();
    assert_close(&ta, &want_a, &[3], 1e-12);
    assert_close(&tb, &want_b, &[2, 3], 1e-12);
}

#[differentiable]
fn with_constant_output(x: &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>, Tensor<f64>) {
    (x.sin(), Tensor::full(&[2], 3.0), x.sum())
}

#[test]
fn a_constant_tuple_output_gets_a_zero_tangent() {
    // An output that does not depend on the input: zero tangent, its cotangent ignored.
    let x = normal(&[4], 25);
    let ((s, c, m), (ts, tc, tm)) = with_constant_output_jvp(&x, &Tensor::ones(&[4]));
    assert_eq!(real(&c), vec![3.0, 3.0]);
    assert_eq!(real(&tc), vec![0.0, 0.0]);
    assert_same(&s, &x.sin());
    assert_close(&m, &[real(&x).iter().sum()], &[], 1e-12);
    assert_close(&tm, &[4.0], &[], 1e-12);
    let cos: Vec<f64> = real(&x).iter().map(|v| v.cos()).collect();
    assert_close(&ts, &cos, &[4], 1e-12);
    let (_, g) = with_constant_output_vjp(
        &x,
        (
            &Tensor::ones(&[4]),
            &Tensor::full(&[2], f64::NAN),
            &Tensor::scalar(2.0),
        ),
    );
    let want: Vec<f64> = cos.iter().map(|c| c + 2.0).collect();
    assert_close(&g, &want, &[4], 1e-12);
}

// ---- has_aux ---------------------------------------------------------------------------------

#[differentiable(has_aux)]
fn with_aux<T: Element>(x: &Tensor<T>) -> (Tensor<T>, Tensor<T>) {
    let sq = x.square();
    (sq.sum(), sq)
}

#[differentiable(has_aux)]
fn with_plain_aux(x: &Tensor<f32>, #[nodiff] scale: f32) -> (Tensor<f32>, (usize, f32)) {
    let n = x.len();
    ((x * scale).sin().sum(), (n, scale))
}

#[test]
fn has_aux_passes_the_aux_through_every_entry_point() {
    let x = normal(&[2, 3], 26);
    let xs = real(&x);
    let squares: Vec<f64> = xs.iter().map(|v| v * v).collect();
    let twice: Vec<f64> = xs.iter().map(|v| 2.0 * v).collect();

    let ((v, aux), g) = with_aux_value_and_grad(&x);
    let (v0, aux0) = with_aux(&x);
    assert_same(&v, &v0);
    assert_same(&aux, &aux0);
    assert_close(&v, &[squares.iter().sum()], &[], 1e-12);
    assert_close(&aux, &squares, &[2, 3], 1e-12);
    assert_close(&g, &twice, &[2, 3], 1e-12);

    let (g2, aux2) = with_aux_grad(&x);
    assert_same(&g, &g2);
    assert_same(&aux, &aux2);

    let ((v3, aux3), t) = with_aux_jvp(&x, &Tensor::ones(&[2, 3]));
    assert_same(&v, &v3);
    assert_same(&aux, &aux3);
    assert_close(&t, &[twice.iter().sum()], &[], 1e-12);

    let ((v4, aux4), g4) = with_aux_vjp(&x, &Tensor::scalar(3.0));
    assert_same(&v, &v4);
    assert_same(&aux, &aux4);
    let thrice: Vec<f64> = twice.iter().map(|v| 3.0 * v).collect();
    assert_close(&g4, &thrice, &[2, 3], 1e-12);

    // A non-tensor aux, at f32.
    let x = t32(&[0.1, -0.4, 0.7], &[3]);
    let ((v, (n, s)), g) = with_plain_aux_value_and_grad(&x, 2.0);
    assert_eq!((n, s), (3, 2.0));
    assert_same(&v, &with_plain_aux(&x, 2.0).0);
    let xs = real(&x);
    assert_close(&v, &[xs.iter().map(|a| (2.0 * a).sin()).sum()], &[], 1e-6);
    let want: Vec<f64> = xs.iter().map(|a| 2.0 * (2.0 * a).cos()).collect();
    assert_close(&g, &want, &[3], 1e-6);
    let (g2, (n2, _)) = with_plain_aux_grad(&x, 2.0);
    assert_same(&g, &g2);
    assert_eq!(n2, 3);
    let ((_, (n3, _)), t) = with_plain_aux_jvp(&x, 2.0, &Tensor::ones(&[3]));
    assert_eq!(n3, 3);
    assert_close(&t, &[want.iter().sum()], &[], 1e-6);
}

#[differentiable(has_aux)]
fn with_tuple_aux(x: &Tensor<f64>) -> (Tensor<f64>, (usize, Tensor<f64>)) {
    let y = x.square();
    (y.sum(), (x.len(), y))
}

#[test]
fn a_tuple_aux_may_hold_computed_tensors() {
    let x = t64(&[1.0, -2.0], &[2]);
    let ((v, (n, y)), g) = with_tuple_aux_value_and_grad(&x);
    assert_eq!((real(&v), n, real(&y)), (vec![5.0], 2, vec![1.0, 4.0]));
    assert_close(&g, &[2.0, -4.0], &[2], 1e-12);
}

// ---- composition -----------------------------------------------------------------------------

/// `x sin x`.
#[differentiable]
fn level1<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    x.sin() * x
}

/// `level1(x)·e^{level1(x²)}`: the same callee twice.
#[differentiable]
fn level2<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    let a = level1(x);
    let b = level1(&x.square());
    a * b.exp()
}

/// Three levels deep, with an owned argument and a path call.
#[differentiable]
fn level3(x: &Tensor<f64>, y: Tensor<f64>) -> Tensor<f64> {
    let u = level2(x) + helpers::owned_callee(y.clone());
    (u * &y).sum()
}

mod helpers {
    use super::*;

    #[differentiable]
    pub fn owned_callee<T: Element>(y: Tensor<T>) -> Tensor<T> {
        y.tanh()
    }
}

#[test]
fn nested_calls_match_the_hand_derived_gradient() {
    let x = t64(&[0.3, -0.7, 1.1], &[3]);
    let y = t64(&[0.5, -0.2, 0.9], &[3]);
    // l1(x) = x sin x, l1' = sin x + x cos x; l2 = l1(x) e^{l1(x²)},
    // l2' = l1'(x) e^{l1(x²)} + l1(x) e^{l1(x²)} l1'(x²) 2x; f = Σ (l2(x) + tanh y) y,
    // df/dx = y l2'(x), df/dy = l2(x) + tanh y + y (1 - tanh² y).
    let l1 = |v: f64| v * v.sin();
    let dl1 = |v: f64| v.sin() + v * v.cos();
    let (xs, ys) = (real(&x), real(&y));
    let gx: Vec<f64> = (0..3)
        .map(|i| {
            let v = xs[i];
            let e = l1(v * v).exp();
            ys[i] * (dl1(v) * e + l1(v) * e * dl1(v * v) * 2.0 * v)
        })
        .collect();
    let gy: Vec<f64> = (0..3)
        .map(|i| {
            let v = xs[i];
            l1(v) * l1(v * v).exp() + ys[i].tanh() + ys[i] * (1.0 - ys[i].tanh().powi(2))
        })
        .collect();
    let (dx, dy) = level3_grad(&x, y.clone());
    assert_close(&dx, &gx, &[3], 1e-12);
    assert_close(&dy, &gy, &[3], 1e-12);
    let (_, t) = level3_jvp(&x, y.clone(), &Tensor::ones(&[3]), &Tensor::ones(&[3]));
    assert_close(&t, &[gx.iter().chain(&gy).sum()], &[], 1e-12);

    let f = grad_fn(
        |a: &[Tensor<f64>]| level3(&a[0], a[1].clone()),
        |a: &[Tensor<f64>], t: &[Tensor<f64>]| level3_jvp(&a[0], a[1].clone(), &t[0], &t[1]).1,
        |a: &[Tensor<f64>], g: &Tensor<f64>| {
            let (dx, dy) = level3_vjp(&a[0], a[1].clone(), g).1;
            vec![dx, dy]
        },
    );
    fd_check(&f, &[normal(&[2, 3], 27), normal(&[2, 3], 28)]);
    // The generic levels at f32, from a generic caller.
    let f = grad_fn(
        |a: &[Tensor<f32>]| level2(&a[0]),
        |a: &[Tensor<f32>], t: &[Tensor<f32>]| level2_jvp(&a[0], &t[0]).1,
        |a: &[Tensor<f32>], g: &Tensor<f32>| vec![level2_vjp(&a[0], g).1],
    );
    fd_check(&f, &[t32(&[0.3, -0.7, 1.1, 0.2], &[2, 2])]);
}

#[differentiable]
fn uses_pair<T: Element>(x: &Tensor<T>, y: &Tensor<T>) -> Tensor<T> {
    let (a, b) = pair(x, y);
    (a * b).sum()
}

#[differentiable]
fn uses_first_of_pair(x: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
    let (a, _) = pair(x, y);
    a.sum()
}

#[differentiable]
fn uses_second_of_pair(x: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
    let (_first, b) = pair(x, &y.exp());
    b.mean()
}

#[test]
fn tuple_returning_callees_destructure() {
    let (x, y) = (normal(&[2, 3], 29), normal(&[2, 3], 30));
    let (xs, ys) = (real(&x), real(&y));
    // a_j = Σ_i x_ij y_ij, b = eˣ - y, f = Σ_ij a_j b_ij; with B_j = Σ_i b_ij:
    // df/dx_ij = y_ij B_j + a_j e^x_ij, df/dy_ij = x_ij B_j - a_j.
    let a: Vec<f64> = (0..3)
        .map(|j| xs[j] * ys[j] + xs[3 + j] * ys[3 + j])
        .collect();
    let b: Vec<f64> = (0..6).map(|i| xs[i].exp() - ys[i]).collect();
    let bsum: Vec<f64> = (0..3).map(|j| b[j] + b[3 + j]).collect();
    let gx: Vec<f64> = (0..6)
        .map(|i| ys[i] * bsum[i % 3] + a[i % 3] * xs[i].exp())
        .collect();
    let gy: Vec<f64> = (0..6).map(|i| xs[i] * bsum[i % 3] - a[i % 3]).collect();
    let (dx, dy) = uses_pair_grad(&x, &y);
    assert_close(&dx, &gx, &[2, 3], 1e-12);
    assert_close(&dy, &gy, &[2, 3], 1e-12);
    let (_, t) = uses_pair_jvp(&x, &y, &Tensor::ones(&[2, 3]), &Tensor::zeros(&[2, 3]));
    assert_close(&t, &[gx.iter().sum()], &[], 1e-12);

    // Only the first output used: d/dx = y, d/dy = x.
    let (v, (dx, dy)) = uses_first_of_pair_value_and_grad(&x, &y);
    assert_same(&v, &uses_first_of_pair(&x, &y));
    assert_close(&dx, &ys, &[2, 3], 1e-12);
    assert_close(&dy, &xs, &[2, 3], 1e-12);
    // Only the second: f = mean(eˣ - e^y); d/dx = eˣ/6, d/dy = -e^y/6.
    let (v, (dx, dy)) = uses_second_of_pair_value_and_grad(&x, &y);
    assert_same(&v, &uses_second_of_pair(&x, &y));
    let ex: Vec<f64> = xs.iter().map(|v| v.exp() / 6.0).collect();
    let ey: Vec<f64> = ys.iter().map(|v| -v.exp() / 6.0).collect();
    assert_close(&dx, &ex, &[2, 3], 1e-12);
    assert_close(&dy, &ey, &[2, 3], 1e-12);

    let f = grad_fn(
        |a: &[Tensor<f32>]| uses_pair(&a[0], &a[1]),
        |a: &[Tensor<f32>], t: &[Tensor<f32>]| uses_pair_jvp(&a[0], &a[1], &t[0], &t[1]).1,
        |a: &[Tensor<f32>], g: &Tensor<f32>| {
            let (dx, dy) = uses_pair_vjp(&a[0], &a[1], g).1;
            vec![dx, dy]
        },
    );
    fd_check(&f, &[x.cast::<f32>(), y.cast::<f32>()]);
}

#[differentiable]
fn weighted<T: Element>(x: &Tensor<T>, w: &Tensor<T>) -> Tensor<T> {
    (x * w).sum()
}

#[differentiable]
fn constant_into_active<T: Element>(x: &Tensor<T>, #[nodiff] c: &Tensor<T>) -> Tensor<T> {
    weighted(x, c) + weighted(&Tensor::ones(x.shape()), &x.square())
}

#[test]
fn a_constant_passed_to_an_active_parameter_of_a_callee() {
    let (x, c) = (normal(&[2, 3], 31), normal(&[2, 3], 32));
    // f = Σ x c + Σ x²: df/dx = c + 2x.
    let want: Vec<f64> = real(&x)
        .iter()
        .zip(real(&c))
        .map(|(a, b)| b + 2.0 * a)
        .collect();
    let g = constant_into_active_grad(&x, &c);
    assert_close(&g, &want, &[2, 3], 1e-12);
    let (_, t) = constant_into_active_jvp(&x, &c, &Tensor::ones(&[2, 3]));
    assert_close(&t, &[want.iter().sum()], &[], 1e-12);
    let f = grad_fn(
        |a: &[Tensor<f64>]| constant_into_active(&a[0], &c),
        |a: &[Tensor<f64>], t: &[Tensor<f64>]| constant_into_active_jvp(&a[0], &c, &t[0]).1,
        |a: &[Tensor<f64>], g: &Tensor<f64>| vec![constant_into_active_vjp(&a[0], &c, g).1],
    );
    fd_check(&f, std::slice::from_ref(&x));
    let c32 = c.cast::<f32>();
    let f = grad_fn(
        |a: &[Tensor<f32>]| constant_into_active(&a[0], &c32),
        |a: &[Tensor<f32>], t: &[Tensor<f32>]| constant_into_active_jvp(&a[0], &c32, &t[0]).1,
        |a: &[Tensor<f32>], g: &Tensor<f32>| vec![constant_into_active_vjp(&a[0], &c32, g).1],
    );
    fd_check(&f, &[x.cast()]);
}

#[differentiable]
fn scale_by<T: Element>(x: &Tensor<T>, #[nodiff] c: &Tensor<T>) -> Tensor<T> {
    x * c
}

/// Passing a differentiated value to a callee's `#[nodiff]` parameter is a compile error (see
/// `tests/ui/ops/active_into_nodiff_parameter.rs`); `stop_gradient` says it on purpose.
#[differentiable]
fn active_into_nodiff<T: Element>(x: &Tensor<T>, y: &Tensor<T>) -> Tensor<T> {
    scale_by(x, &stop_gradient(&y.exp())).sum()
}

#[test]
fn a_stopped_value_passed_to_a_nodiff_parameter_of_a_callee() {
    let (x, y) = (normal(&[2, 3], 33), normal(&[2, 3], 34));
    let ys = real(&y);
    // f = Σ x e^y with e^y held constant: df/dx = e^y, df/dy = 0.
    let gx: Vec<f64> = ys.iter().map(|v| v.exp()).collect();
    let (dx, dy) = active_into_nodiff_grad(&x, &y);
    assert_close(&dx, &gx, &[2, 3], 1e-12);
    assert_close(&dy, &[0.0; 6], &[2, 3], 0.0);
    let (v, t) = active_into_nodiff_jvp(&x, &y, &Tensor::ones(&[2, 3]), &Tensor::ones(&[2, 3]));
    assert_close(&t, &[gx.iter().sum()], &[], 1e-12);
    assert_same(&v, &active_into_nodiff(&x, &y));
}

/// A concrete f32 caller of generic callees.
#[differentiable]
fn concrete_caller(x: &Tensor<f32>) -> Tensor<f32> {
    let y = level1(x);
    weighted(&y, &level1(&y))
}

#[test]
fn concrete_callers_of_generic_callees() {
    let x = t32(&[0.4, -0.9, 0.25], &[3]);
    // f = Σ l1(x) l1(l1(x)); df/dx = l1'(x) (l1(u) + u l1'(u)) with u = l1(x).
    let l1 = |v: f64| v * v.sin();
    let dl1 = |v: f64| v.sin() + v * v.cos();
    let want: Vec<f64> = real(&x)
        .iter()
        .map(|&v| {
            let u = l1(v);
            dl1(v) * (l1(u) + u * dl1(u))
        })
        .collect();
    let (v, g) = concrete_caller_value_and_grad(&x);
    assert_close(&g, &want, &[3], 1e-5);
    assert_same(&v, &concrete_caller(&x));
}

#[differentiable]
fn passes_its_reference_on<T: Element>(x: &Tensor<T>, y: &Tensor<T>) -> Tensor<T> {
    let (a, b) = pair(x, y);
    (level1(x) * a).sum() + weighted(x, &b)
}

#[test]
fn reference_parameters_pass_on_to_callees() {
    let f = grad_fn(
        |a: &[Tensor<f64>]| passes_its_reference_on(&a[0], &a[1]),
        |a: &[Tensor<f64>], t: &[Tensor<f64>]| {
            passes_its_reference_on_jvp(&a[0], &a[1], &t[0], &t[1]).1
        },
        |a: &[Tensor<f64>], g: &Tensor<f64>| {
            let (dx, dy) = passes_its_reference_on_vjp(&a[0], &a[1], g).1;
            vec![dx, dy]
        },
    );
    fd_check(&f, &[normal(&[2, 3], 40), normal(&[2, 3], 41)]);
}

// ---- the where-NaN trap ----------------------------------------------------------------------

#[differentiable]
fn safe_log(x: &Tensor<f64>) -> Tensor<f64> {
    where_cond(&x.gt(0.0), &x.ln(), x).sum()
}

#[differentiable]
fn safe_log_f32(x: &Tensor<f32>) -> Tensor<f32> {
    where_cond(&x.gt(0.0f32), &x.ln(), x).sum()
}

#[differentiable]
fn safe_sqrt_chain<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    let positive = x.gt(T::zero());
    let root = x.sqrt();
    let deep = x.ln().square().recip();
    where_cond(&positive, &(root + deep), &(x * T::from_f64(3.0)))
}

#[test]
fn where_does_not_leak_nan_from_the_unselected_branch() {
    let values = [-2.0, -0.5, 0.0, 0.5, 1.0, 3.0];
    let x = t64(&values, &[6]);
    // Σ where(x > 0, ln x, x): the derivative is 1/x where x > 0 and 1 elsewhere.
    let want: Vec<f64> = values
        .iter()
        .map(|&v| if v > 0.0 { 1.0 / v } else { 1.0 })
        .collect();
    let (v, g) = safe_log_value_and_grad(&x);
    assert_close(&g, &want, &[6], 1e-12);
    assert_same(&v, &safe_log(&x));
    let (v, t) = safe_log_jvp(&x, &Tensor::ones(&[6]));
    assert!(v.item().is_finite());
    assert_close(&t, &[want.iter().sum()], &[], 1e-12);

    let x32 = t32(&values, &[6]);
    let (v, g) = safe_log_f32_value_and_grad(&x32);
    assert_same(&v, &safe_log_f32(&x32));
    assert_close(&g, &want, &[6], 1e-6);
    let (_, t) = safe_log_f32_jvp(&x32, &Tensor::ones(&[6]));
    assert_close(&t, &[want.iter().sum()], &[], 1e-6);

    // where(x > 0, sqrt x + 1/ln²x, 3x), elementwise: derivative
    // 1/(2 sqrt x) - 2/(x ln³x) where x > 0, 3 elsewhere. ln 1 = 0 makes 1/ln² x infinite at 1,
    // so that point is left out of the selected side.
    let values = [-2.0, -0.5, 0.0, 0.5, 2.0, 3.0];
    let want: Vec<f64> = values
        .iter()
        .map(|&v: &f64| {
            if v > 0.0 {
                0.5 / v.sqrt() - 2.0 / (v * v.ln().powi(3))
            } else {
                3.0
            }
        })
        .collect();
    let x = t64(&values, &[6]);
    let (v, g) = safe_sqrt_chain_vjp(&x, &Tensor::ones(&[6]));
    assert_close(&g, &want, &[6], 1e-12);
    assert_same(&v, &safe_sqrt_chain(&x));
    assert!(real(&v).iter().all(|v| v.is_finite()));
    let (_, t) = safe_sqrt_chain_jvp(&x, &Tensor::ones(&[6]));
    assert_close(&t, &want, &[6], 1e-12);
    let (_, g) = safe_sqrt_chain_vjp(&t32(&values, &[6]), &Tensor::ones(&[6]));
    assert_close(&g, &want, &[6], 1e-5);
}
