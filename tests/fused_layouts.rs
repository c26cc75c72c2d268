//! Fused regions that read views: a reversed vector, a transposed or permuted tensor, a tensor
//! joined by `concat` along an inner axis, a block of a reversed tensor, a view assigned to in
//! place, each through an elementwise tree that a `sum`, `mean`, `sum_axes` or `mean_axes`
//! ends. Every entry point returns the plain function's value bit for bit (checked here, and by
//! `check-values` in every call), which is the same ops applied to row-major copies of the
//! views; gradients, tangents and Hessian-vector products agree with the derivatives worked out
//! by hand, in f64 and f32. Then models written as users write them, given their input as a
//! transposed or reversed view, through `check_variants!`; and a stencil whose neighbours are
//! shifted copies (`shrink` then `pad`), which the fused regions read in place of the copies.

mod support;

use rune_ad::prelude::*;
use support::check_variants;

/// The elements of `t`, row-major, as f64.
fn reals<T: Element>(t: &Tensor<T>) -> Vec<f64> {
    t.to_vec().into_iter().map(Element::to_real).collect()
}

/// A row-major tensor of `shape` whose element `i` is `f(i)`.
fn tensor<T: Element>(shape: &[usize], f: impl Fn(usize) -> f64) -> Tensor<T> {
    let n = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| T::from_f64(f(i))).collect(), shape)
}

/// `t`'s elements in a new row-major tensor.
fn row_major<T: Element>(t: &Tensor<T>) -> Tensor<T> {
    Tensor::from_vec(t.to_vec(), t.shape())
}

/// `got` is `want`, bit for bit.
#[track_caller]
fn same<T: Element>(what: &str, got: &Tensor<T>, want: &Tensor<T>) {
    assert_eq!(got.shape(), want.shape(), "{what}: shapes");
    let bits = |t: &Tensor<T>| reals(t).iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(got), bits(want), "{what}: {got:?} against {want:?}");
}

/// `got` agrees with `want`, worked out by hand, within `tol` of `max(1, |want|)` element by
/// element.
#[track_caller]
fn close<T: Element>(what: &str, got: &Tensor<T>, want: &[f64], tol: f64) {
    let got = reals(got);
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{what}[{i}]: {g} against {w} by hand"
        );
    }
}

/// Calls every entry point of a function of one differentiated tensor `x` (named in full, with
/// the call's arguments) and checks them: the value of each is `value` (the body op by op on
/// row-major tensors) bit for bit; the gradients (of `_value_and_grad`, `_grad`, `_vjp` with a
/// cotangent of -1.5, a pullback called twice, `_hvp`) are `grad`, the Hessian-vector product
/// along `v` is `hvp`, both worked out by hand (row-major, in `x`'s shape), and the tangent along
/// `v` is `grad · v`, within `tol`.
macro_rules! check_by_hand {
    ($f:ident, $vag:ident, $grad:ident, $vjp:ident, $jvp:ident, $pullback:ident, $hvp:ident;
     ($($arg:expr),*); v: $v:expr; value: $value:expr; grad: $want:expr; hvp: $want_hvp:expr;
     tol: $tol:expr) => {{
        let (v, value, want, want_hvp, tol) = ($v, $value, $want, $want_hvp, $tol);
        let scaled = |s: f64| want.iter().map(|g| g * s).collect::<Vec<f64>>();
        let constant = |s: f64| value.map(|_| Element::from_f64(s));
        same("f", &$f($($arg),*), &value);
        let (y, g) = $vag($($arg),*);
        same("value_and_grad", &y, &value);
        close("value_and_grad", &g, &want, tol);
        close("grad", &$grad($($arg),*), &want, tol);
        let (y, g) = $vjp($($arg,)* &constant(-1.5));
        same("vjp", &y, &value);
        close("vjp", &g, &scaled(-1.5), tol);
        let (y, t) = $jvp($($arg,)* &v);
        same("jvp", &y, &value);
        let dot: f64 = want.iter().zip(reals(&v)).map(|(g, v)| g * v).sum();
        close("jvp", &t, &[dot], tol);
        let (y, pullback) = $pullback($($arg),*);
        same("pullback", &y, &value);
        close("pullback", &pullback(&constant(-1.5)), &scaled(-1.5), tol);
        close("pullback, again", &pullback(&constant(1.0)), &want, tol);
        let (g, hv) = $hvp($($arg,)* &v);
        close("hvp's gradient", &g, &want, tol);
        close("hvp", &hv, &want_hvp, tol);
    }};
}

/// A direction for `_jvp` and `_hvp`, of `shape`.
fn direction<T: Element>(shape: &[usize]) -> Tensor<T> {
    tensor(shape, |i| ((i * 7 % 11) as f64 - 5.0) * 0.1)
}

#[differentiable]
fn reversed<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    x.flip(&[0]).sin().sum()
}

fn check_reversed<T: Element>(n: usize, tol: f64) {
    let x: Tensor<T> = tensor(&[n], |i| 0.37 * i as f64);
    let v = direction(&[n]);
    let xs = reals(&x);
    let reversed_copy = Tensor::from_vec(x.to_vec().into_iter().rev().collect(), &[n]);
    check_by_hand!(reversed, reversed_value_and_grad, reversed_grad, reversed_vjp, reversed_jvp,
        reversed_pullback, reversed_hvp; (&x); v: &v;
        value: reversed_copy.sin().sum();
        // cos of the reversed input, reversed back.
        grad: xs.iter().map(|x| x.cos()).collect::<Vec<_>>();
        hvp: xs.iter().zip(reals(&v)).map(|(x, v)| -x.sin() * v).collect::<Vec<_>>();
        tol: tol);
}

#[test]
fn a_reversed_vector_summed() {
    // 17 elements (one block), and more than one block of 128.
    for n in [17, 1037] {
        check_reversed::<f64>(n, 1e-12);
        check_reversed::<f32>(n, 2e-4);
    }
    // The function of the report, against its sum by hand (-0.00335, of terms up to one: the
    // error is relative to those).
    let x: Tensor<f64> = tensor(&[17], |i| 0.37 * i as f64);
    let by_hand: f64 = (0..17).map(|i| (0.37 * i as f64).sin()).sum();
    assert!((reversed(&x).item() - by_hand).abs() <= 1e-14);
}

#[differentiable]
fn transposed<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    (x.t().exp() * 0.5 - 1.0).square().mean()
}

fn check_transposed<T: Element>(tol: f64) {
    let shape = [5, 140];
    let x: Tensor<T> = tensor(&shape, |i| (i as f64 * 0.37).sin());
    let v = direction(&shape);
    let n = 700.0;
    // u = e^x / 2 - 1: d/dx mean(u²) = 2 u u' / n and the Hessian's diagonal 2 (u'² + u u'') / n,
    // with u' = u'' = e^x / 2.
    let du = |x: f64| x.exp() / 2.0;
    let u = |x: f64| du(x) - 1.0;
    check_by_hand!(transposed, transposed_value_and_grad, transposed_grad, transposed_vjp,
        transposed_jvp, transposed_pullback, transposed_hvp; (&x); v: &v;
        value: (row_major(&x.t()).exp() * 0.5 - 1.0).square().mean();
        grad: reals(&x).iter().map(|&x| 2.0 * u(x) * du(x) / n).collect::<Vec<_>>();
        hvp: reals(&x).iter().zip(reals(&v))
            .map(|(&x, v)| 2.0 * (du(x) * du(x) + u(x) * du(x)) / n * v)
            .collect::<Vec<_>>();
        tol: tol);
}

#[test]
fn a_transposed_matrix_averaged() {
    check_transposed::<f64>(1e-13);
    check_transposed::<f32>(2e-5);
}

#[differentiable]
fn permuted<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    x.permute(&[2, 0, 1]).cos().mean()
}

fn check_permuted<T: Element>(tol: f64) {
    let shape = [4, 5, 60];
    let x: Tensor<T> = tensor(&shape, |i| i as f64 * 0.37);
    let v = direction(&shape);
    check_by_hand!(permuted, permuted_value_and_grad, permuted_grad, permuted_vjp,
        permuted_jvp, permuted_pullback, permuted_hvp; (&x); v: &v;
        value: row_major(&x.permute(&[2, 0, 1])).cos().mean();
        grad: reals(&x).iter().map(|x| -x.sin() / 1200.0).collect::<Vec<_>>();
        hvp: reals(&x).iter().zip(reals(&v)).map(|(x, v)| -x.cos() / 1200.0 * v)
            .collect::<Vec<_>>();
        tol: tol);
}

#[test]
fn a_permuted_tensor_averaged() {
    check_permuted::<f64>(1e-13);
    check_permuted::<f32>(2e-5);
}

/// `x` joined to a constant along the columns: each row of the result is a run of `x`'s row
/// and one of `c`'s.
#[differentiable]
fn joined<T: Element>(x: &Tensor<T>, #[nodiff] c: &Tensor<T>) -> Tensor<T> {
    concat(&[x, c], 1).sin().sum()
}

fn check_joined<T: Element>(tol: f64) {
    let x: Tensor<T> = tensor(&[7, 90], |i| i as f64 * 0.37);
    let c: Tensor<T> = tensor(&[7, 60], |i| (i as f64).sqrt());
    let v = direction(&[7, 90]);
    check_by_hand!(joined, joined_value_and_grad, joined_grad, joined_vjp, joined_jvp,
        joined_pullback, joined_hvp; (&x, &c); v: &v;
        value: row_major(&concat(&[&x, &c], 1)).sin().sum();
        grad: reals(&x).iter().map(|x| x.cos()).collect::<Vec<_>>();
        hvp: reals(&x).iter().zip(reals(&v)).map(|(x, v)| -x.sin() * v).collect::<Vec<_>>();
        tol: tol);
}

#[test]
fn a_tensor_joined_along_its_columns_summed() {
    let (x, c) = (Tensor::<f64>::ones(&[2, 3]), Tensor::<f64>::ones(&[2, 2]));
    assert!(concat(&[&x, &c], 1).is_standard_layout());
    check_joined::<f64>(1e-13);
    check_joined::<f32>(2e-4);
}

/// A block of the tensor reversed along its columns: a slice with a step of -1.
#[differentiable]
fn block<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    x.flip(&[1]).shrink(&[(1, 4), (2, 150)]).exp().sum()
}

fn check_block<T: Element>(tol: f64) {
    let x: Tensor<T> = tensor(&[5, 160], |i| (i as f64 * 0.37).sin());
    let v = direction(&[5, 160]);
    // Element (i, j) is in the block when row i is in 1..4 and the reversed column 159 - j in
    // 2..150.
    let inside = |k: usize| (1..4).contains(&(k / 160)) && (2..150).contains(&(159 - k % 160));
    let by_hand = |f: &dyn Fn(f64, f64) -> f64| -> Vec<f64> {
        let vs = reals(&v);
        reals(&x)
            .iter()
            .enumerate()
            .map(|(k, &x)| if inside(k) { f(x, vs[k]) } else { 0.0 })
            .collect()
    };
    check_by_hand!(block, block_value_and_grad, block_grad, block_vjp, block_jvp,
        block_pullback, block_hvp; (&x); v: &v;
        value: row_major(&x.flip(&[1]).shrink(&[(1, 4), (2, 150)])).exp().sum();
        grad: by_hand(&|x, _| x.exp());
        hvp: by_hand(&|x, v| x.exp() * v);
        tol: tol);
}

#[test]
fn a_block_of_a_reversed_tensor_summed() {
    check_block::<f64>(1e-13);
    check_block::<f32>(2e-4);
}

/// Row sums of the transposed tensor (the columns' sums), reduced as the loop makes the values.
#[differentiable]
fn column_sums<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    let r = x.t().sin().sum_axes(&[-1], false);
    (&r * &r).sum()
}

/// Means over the first axis of the transposed tensor (the rows' means), the values made first.
#[differentiable]
fn row_means<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    let r = x.t().sin().mean_axes(&[0], true);
    (&r * &r).sum()
}

fn check_reductions_over_axes<T: Element>(tol: f64) {
    // [300, 4]: the transposed tensor's rows have 300 elements, more than one chunk of 128.
    let (rows, cols) = (300, 4);
    let x: Tensor<T> = tensor(&[rows, cols], |i| i as f64 * 0.37);
    let v = direction(&[rows, cols]);
    let (xs, vs) = (reals(&x), reals(&v));
    let at = |i: usize, j: usize| xs[i * cols + j];
    let dir = |i: usize, j: usize| vs[i * cols + j];
    // f = sum_j r_j², r_j = sum_i sin x_ij: df/dx_ij = 2 r_j cos x_ij, and (Hv)_ij =
    // 2 cos x_ij sum_k cos x_kj v_kj - 2 r_j sin x_ij v_ij.
    let r: Vec<f64> = (0..cols)
        .map(|j| (0..rows).map(|i| at(i, j).sin()).sum())
        .collect();
    let along: Vec<f64> = (0..cols)
        .map(|j| (0..rows).map(|i| at(i, j).cos() * dir(i, j)).sum())
        .collect();
    let grad = |k: usize| 2.0 * r[k % cols] * xs[k].cos();
    let hvp =
        |k: usize| 2.0 * xs[k].cos() * along[k % cols] - 2.0 * r[k % cols] * xs[k].sin() * vs[k];
    let value = {
        let r = row_major(&x.t()).sin().sum_axes(&[-1], false);
        (&r * &r).sum()
    };
    check_by_hand!(column_sums, column_sums_value_and_grad, column_sums_grad, column_sums_vjp,
        column_sums_jvp, column_sums_pullback, column_sums_hvp; (&x); v: &v;
        value: value;
        grad: (0..rows * cols).map(grad).collect::<Vec<_>>();
        hvp: (0..rows * cols).map(hvp).collect::<Vec<_>>();
        tol: tol);

    // f = sum_i m_i², m_i = sum_j sin x_ij / n (n = 300 columns of x here): df/dx_ij =
    // 2 m_i cos x_ij / n, (Hv)_ij = 2 (cos x_ij sum_k cos x_ik v_ik / n - m_i sin x_ij v_ij) / n.
    let x: Tensor<T> = tensor(&[cols, rows], |i| i as f64 * 0.37);
    let v = direction(&[cols, rows]);
    let (xs, vs) = (reals(&x), reals(&v));
    let n = rows as f64;
    let at = |i: usize, j: usize| xs[i * rows + j];
    let m: Vec<f64> = (0..cols)
        .map(|i| (0..rows).map(|j| at(i, j).sin()).sum::<f64>() / n)
        .collect();
    let along: Vec<f64> = (0..cols)
        .map(|i| {
            (0..rows)
                .map(|j| at(i, j).cos() * vs[i * rows + j])
                .sum::<f64>()
                / n
        })
        .collect();
    let grad = |k: usize| 2.0 * m[k / rows] * xs[k].cos() / n;
    let hvp =
        |k: usize| 2.0 * (xs[k].cos() * along[k / rows] - m[k / rows] * xs[k].sin() * vs[k]) / n;
    let value = {
        let r = row_major(&x.t()).sin().mean_axes(&[0], true);
        (&r * &r).sum()
    };
    check_by_hand!(row_means, row_means_value_and_grad, row_means_grad, row_means_vjp,
        row_means_jvp, row_means_pullback, row_means_hvp; (&x); v: &v;
        value: value;
        grad: (0..rows * cols).map(grad).collect::<Vec<_>>();
        hvp: (0..rows * cols).map(hvp).collect::<Vec<_>>();
        tol: tol);
}

#[test]
fn reductions_over_some_axes_of_a_transposed_tensor() {
    check_reductions_over_axes::<f64>(1e-12);
    check_reductions_over_axes::<f32>(1e-4);
}

/// A transposed view scaled and shifted in place: as written, `*=` and `+=` write into the
/// view; fused, they are `h * 0.5 + 1.0` in the region that the sum ends.
#[differentiable]
fn assigned<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    let mut h = x.t();
    h *= 0.5;
    h += 1.0;
    h.sin().sum()
}

fn check_assigned<T: Element>(tol: f64) {
    let x: Tensor<T> = tensor(&[6, 50], |i| i as f64 * 0.37);
    let v = direction(&[6, 50]);
    check_by_hand!(assigned, assigned_value_and_grad, assigned_grad, assigned_vjp,
        assigned_jvp, assigned_pullback, assigned_hvp; (&x); v: &v;
        value: (row_major(&x.t()) * 0.5 + 1.0).sin().sum();
        grad: reals(&x).iter().map(|x| 0.5 * (0.5 * x + 1.0).cos()).collect::<Vec<_>>();
        hvp: reals(&x).iter().zip(reals(&v))
            .map(|(x, v)| -0.25 * (0.5 * x + 1.0).sin() * v)
            .collect::<Vec<_>>();
        tol: tol);
}

#[test]
fn a_transposed_view_assigned_to_in_place() {
    check_assigned::<f64>(1e-13);
    check_assigned::<f32>(2e-4);
}

#[derive(Clone, Differentiable)]
struct Layer {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

#[derive(Clone, Differentiable)]
struct Net {
    layers: Vec<Layer>,
}

impl Net {
    /// The squared error of the last layer's output, plus an activity penalty: the mean square
    /// of each layer's input, the first of which is `x` as the caller gives it (here a view).
    #[differentiable]
    fn loss(&self, x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
        let mut h = x.clone();
        let mut penalty = Tensor::scalar(0.0);
        for layer in &self.layers {
            penalty += h.square().mean();
            h = (h.matmul(&layer.w) + &layer.b).tanh();
        }
        let d = h - y;
        (&d * &d).mean() + penalty
    }
}

/// A sequence model reading its input ([time, batch, features]) backwards in time, as the
/// backward half of a bidirectional layer does: each step's features through `u` and tanh,
/// weighed by `decay` (the last steps, first in the reversed sequence, most) and summed over
/// time, then mixed `steps` times by `w`.
#[derive(Clone, Differentiable)]
struct Backward {
    w: Tensor<f64>,
    u: Tensor<f64>,
}

impl Backward {
    #[differentiable]
    fn loss(
        &self,
        xs: &Tensor<f64>,
        #[nodiff] decay: &Tensor<f64>,
        #[nodiff] steps: usize,
    ) -> Tensor<f64> {
        let reversed = xs.flip(&[0]);
        let summary = ((reversed.sin() * &self.u).tanh() * decay).sum_axes(&[0], false);
        let mut h = summary.clone();
        for _ in 0..steps {
            h = (h.matmul(&self.w) + &summary).tanh();
        }
        (&h * &h).mean()
    }
}

/// Three features to two outputs through a hidden layer of four.
fn net() -> Net {
    let widths = [3, 4, 2];
    Net {
        layers: (0..2)
            .map(|i| Layer {
                w: Tensor::rand_uniform(&[widths[i], widths[i + 1]], -0.8, 0.8, 50 + i as u64),
                b: Tensor::rand_uniform(&[widths[i + 1]], -0.3, 0.3, 60 + i as u64),
            })
            .collect(),
    }
}

#[test]
fn a_model_given_its_input_as_a_transposed_or_reversed_view() {
    let net = net();
    // The data arrive feature-major, [3 features, 50 samples]: the model reads them
    // transposed, or reversed as well.
    let data = Tensor::rand_normal(&[3, 50], 0.0, 1.0, 70);
    let y = Tensor::rand_normal(&[50, 2], 0.0, 0.5, 71);
    for x in [data.t(), data.t().flip(&[0, 1])] {
        assert!(!x.is_standard_layout());
        check_variants!(Net::loss, Net::loss_value_and_grad, Net::loss_grad, Net::loss_vjp,
            Net::loss_jvp, Net::loss_pullback; [net, x]; (&net, &x, &y));
        // The same numbers as the model given a row-major copy of its input.
        same("loss", &net.loss(&x, &y), &net.loss(&row_major(&x), &y));
    }
}

#[test]
fn a_sequence_model_reading_its_input_reversed_in_time() {
    let model = Backward {
        w: Tensor::rand_uniform(&[3, 3], -0.6, 0.6, 80),
        u: Tensor::rand_uniform(&[3], -1.0, 1.0, 81),
    };
    // [time, batch, features], given transposed from [batch, time, features].
    let xs = Tensor::rand_normal(&[2, 5, 3], 0.0, 1.0, 82).permute(&[1, 0, 2]);
    let decay = Tensor::from_vec((0..5).map(|t| 0.8_f64.powi(4 - t)).collect(), &[5, 1, 1]);
    check_variants!(Backward::loss, Backward::loss_value_and_grad, Backward::loss_grad,
        Backward::loss_vjp, Backward::loss_jvp, Backward::loss_pullback; [model, xs];
        (&model, &xs, &decay, 3));
}

/// `u` shifted one cell to the right, `edge` entering at the left: `uᵢ₋₁`.
#[differentiable]
fn from_left<T: Element>(u: &Tensor<T>, #[nodiff] edge: f64) -> Tensor<T> {
    let n = u.len();
    u.shrink(&[(0, n - 1)]).pad(&[(1, 0)], T::from_f64(edge))
}

/// A rod heated at its left end and held at zero at its right: `steps` explicit steps of
/// `u += k · (uᵢ₋₁ − 2uᵢ + uᵢ₊₁) / 10 + q / 100`, then the rod's energy `Σ u²`. The left
/// neighbours come from a call, the right ones from a shift written in the loop.
#[differentiable]
fn heated_rod<T: Element>(
    k: &Tensor<T>,
    q: &Tensor<T>,
    u0: &Tensor<T>,
    #[nodiff] steps: usize,
) -> Tensor<T> {
    let n = u0.len();
    let mut u = u0.clone();
    for _ in 0..steps {
        let right = u.shrink(&[(1, n)]).pad(&[(0, 1)], T::zero());
        let laplacian = from_left(&u, 1.0) + right - &u * 2.0;
        u = &u + k * laplacian * 0.1 + q * 0.01;
    }
    (&u * &u).sum()
}

#[test]
fn a_stencil_of_shifted_cells_in_a_loop() {
    // Long enough that `pad` leaves its result unwritten and the regions read it in place.
    let n = 300;
    let k = Tensor::rand_uniform(&[n], 0.2, 0.9, 90);
    let q = Tensor::rand_uniform(&[n], -1.0, 1.0, 91);
    let u0 = Tensor::rand_uniform(&[n], 0.0, 1.0, 92);
    check_variants!(heated_rod, heated_rod_value_and_grad, heated_rod_grad, heated_rod_vjp,
        heated_rod_jvp, heated_rod_pullback; [k, q, u0]; (&k, &q, &u0, 6));
    // The same numbers as the shifts written out by hand.
    let (kv, qv, mut u) = (k.to_vec(), q.to_vec(), u0.to_vec());
    for _ in 0..6 {
        let last = u.clone();
        for i in 0..n {
            let l = if i == 0 { 1.0 } else { last[i - 1] };
            let r = if i + 1 == n { 0.0 } else { last[i + 1] };
            u[i] = last[i] + kv[i] * (l - 2.0 * last[i] + r) * 0.1 + qv[i] * 0.01;
        }
    }
    let energy: f64 = u.iter().map(|v| v * v).sum();
    let got = heated_rod(&k, &q, &u0, 6).item();
    assert!(
        (got - energy).abs() <= 1e-12 * energy,
        "{got} against {energy}"
    );
    // In f32, the gradient of the f64 function's.
    let single = |t: &Tensor<f64>| t.map(|&v| v as f32);
    let (g64, g32) = (
        heated_rod_grad(&k, &q, &u0, 6),
        heated_rod_grad(&single(&k), &single(&q), &single(&u0), 6),
    );
    for (a, b) in [g64.0, g64.1, g64.2]
        .iter()
        .zip([g32.0, g32.1, g32.2].iter())
    {
        for (x, y) in a.to_vec().iter().zip(b.to_vec()) {
            assert!(
                (x - y as f64).abs() <= 1e-4 * x.abs().max(1.0),
                "f32 {y} against {x}"
            );
        }
    }
}

/// A field of `rows` cells of two channels mixed with the row above it (a half entering at the
/// top) and the row two below it (zeros entering at the bottom) for `steps` steps: windows of
/// whole rows, read in place by the step's region, whose backward pass adds their cotangents
/// into `u`'s adjoint at their offsets. The row above is also read by a reduction outside the
/// region, which gives that window an adjoint of its own beside.
#[differentiable]
fn mixed_rows<T: Element>(w: &Tensor<T>, u0: &Tensor<T>, #[nodiff] steps: usize) -> Tensor<T> {
    let rows = u0.shape()[0];
    let mut u = u0.clone();
    let mut drift = u0.sum() * 0.0;
    for _ in 0..steps {
        let above = u
            .shrink(&[(0, rows - 1), (0, 2)])
            .pad(&[(1, 0), (0, 0)], T::from_f64(0.5));
        let below = u
            .shrink(&[(2, rows), (0, 2)])
            .pad(&[(0, 2), (0, 0)], T::zero());
        drift += above.sum_axes(&[0], false).sum() * 0.01;
        u = &u + (&above * w - below * &u) * 0.1;
    }
    (&u * &u).sum() + drift
}

#[test]
fn windows_of_whole_rows_in_a_loop() {
    // A weight per cell (every input of the step's region of its shape: the windows' cotangents
    // are added at their offsets as the loop makes them), then one per channel (broadcast: the
    // cotangents go through the VJPs of `pad` and `shrink`).
    for (rows, w_rows) in [(150, 150), (150, 1), (5, 5)] {
        let w = Tensor::rand_uniform(&[w_rows, 2], -1.0, 1.0, 93);
        let u0 = Tensor::rand_uniform(&[rows, 2], -1.0, 1.0, 94);
        check_variants!(mixed_rows, mixed_rows_value_and_grad, mixed_rows_grad, mixed_rows_vjp,
            mixed_rows_jvp, mixed_rows_pullback; [w, u0]; (&w, &u0, 4));
        // The same numbers worked out cell by cell.
        let (wv, mut u) = (w.to_vec(), u0.to_vec());
        let mut drift = 0.0;
        for _ in 0..4 {
            let last = u.clone();
            let at = |r: isize, c: usize, fill: f64| match r {
                r if r < 0 || r >= rows as isize => fill,
                r => last[r as usize * 2 + c],
            };
            drift += (0..rows)
                .flat_map(|r| [0, 1].map(|c| at(r as isize - 1, c, 0.5)))
                .sum::<f64>()
                * 0.01;
            for r in 0..rows {
                for c in 0..2 {
                    let weight = wv[if w_rows == 1 { c } else { r * 2 + c }];
                    let (above, below) = (at(r as isize - 1, c, 0.5), at(r as isize + 2, c, 0.0));
                    u[r * 2 + c] =
                        last[r * 2 + c] + (above * weight - below * last[r * 2 + c]) * 0.1;
                }
            }
        }
        let want = u.iter().map(|v| v * v).sum::<f64>() + drift;
        let got = mixed_rows(&w, &u0, 4).item();
        assert!(
            (got - want).abs() <= 1e-12 * want.abs().max(1.0),
            "{got} against {want}"
        );
        // In f32, the gradient of the f64 function's.
        let single = |t: &Tensor<f64>| t.map(|&v| v as f32);
        let (g64, g32) = (
            mixed_rows_grad(&w, &u0, 4),
            mixed_rows_grad(&single(&w), &single(&u0), 4),
        );
        for (a, b) in [g64.0, g64.1].iter().zip([g32.0, g32.1].iter()) {
            for (x, y) in a.to_vec().iter().zip(b.to_vec()) {
                assert!(
                    (x - y as f64).abs() <= 1e-4 * x.abs().max(1.0),
                    "f32 {y} against {x}"
                );
            }
        }
    }
}

/// A smoother of a signal: one pass a layer, each mixing every cell with its left neighbour
/// (the signal shifted one cell, `edge` entering) and the cell two to its right, weighted by
/// the layer's kernel (a weight per cell). Windows of the signal inside a method's loop over a
/// `Vec` field.
#[derive(Clone, Differentiable)]
struct Smoother {
    kernels: Vec<Tensor<f64>>,
}

impl Smoother {
    #[differentiable]
    fn energy(&self, u0: &Tensor<f64>, #[nodiff] edge: f64) -> Tensor<f64> {
        let n = u0.len();
        let mut u = u0.clone();
        for k in &self.kernels {
            let left = u.shrink(&[(0, n - 1)]).pad(&[(1, 0)], edge);
            let right = u.shrink(&[(2, n)]).pad(&[(0, 2)], 0.0);
            u = &u + (left * k - &u + right * 0.5) * 0.2;
        }
        (&u * &u).sum()
    }
}

#[test]
fn windows_in_a_method_over_a_vec_of_layers() {
    for n in [6, 300] {
        let model = Smoother {
            kernels: (0..3)
                .map(|i| Tensor::rand_uniform(&[n], 0.2, 1.0, 95 + i))
                .collect(),
        };
        let u0 = Tensor::rand_uniform(&[n], -1.0, 1.0, 99);
        check_variants!(Smoother::energy, Smoother::energy_value_and_grad, Smoother::energy_grad,
            Smoother::energy_vjp, Smoother::energy_jvp, Smoother::energy_pullback;
            [model, u0]; (&model, &u0, 0.5));
        // The same numbers cell by cell.
        let mut u = u0.to_vec();
        for k in &model.kernels {
            let (k, last) = (k.to_vec(), u.clone());
            for i in 0..n {
                let left = if i == 0 { 0.5 } else { last[i - 1] };
                let right = if i + 2 < n { last[i + 2] } else { 0.0 };
                u[i] = last[i] + (left * k[i] - last[i] + right * 0.5) * 0.2;
            }
        }
        let want: f64 = u.iter().map(|v| v * v).sum();
        let got = model.energy(&u0, 0.5).item();
        assert!(
            (got - want).abs() <= 1e-12 * want.max(1.0),
            "{got} against {want}"
        );
    }
}
