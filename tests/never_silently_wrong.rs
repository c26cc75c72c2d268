//! Programs that once compiled and returned wrong numbers from the generated variants while the
//! plain function was right. Each is checked in every variant against values derived by hand.

use rune_ad::prelude::*;

fn t64(values: &[f64], shape: &[usize]) -> Tensor<f64> {
    Tensor::from_vec(values.to_vec(), shape)
}

#[track_caller]
fn assert_vec(got: &Tensor<f64>, want: &[f64]) {
    let got = got.to_vec();
    assert_eq!(got.len(), want.len(), "got {got:?}, want {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-12 * w.abs().max(1.0),
            "got {got:?}, want {want:?}"
        );
    }
}

// ---- an accumulator in an outer loop around a loop over a `Vec` field -----------------------

#[derive(Clone, Differentiable)]
struct Chain {
    ws: Vec<Tensor<f64>>,
}

#[differentiable]
fn repeated_products(model: &Chain) -> Tensor<f64> {
    let mut total = Tensor::scalar(0.0);
    for _ in 0..2 {
        let mut h = Tensor::scalar(1.0);
        for w in &model.ws {
            h = &h * w;
        }
        total = &total + &h.sum();
    }
    total
}

#[differentiable]
fn repeated_products_compound(model: &Chain) -> Tensor<f64> {
    let mut total = Tensor::scalar(0.0);
    for _ in 0..2 {
        let mut h = Tensor::scalar(1.0);
        for w in &model.ws {
            h = &h * w;
        }
        total += h.sum();
    }
    total
}

#[test]
fn accumulator_around_a_loop_over_a_vec_field() {
    // Value 2 Π w; gradient of w_i: 2 Π_{j≠i} w_j.
    let one = Chain {
        ws: vec![Tensor::scalar(3.0)],
    };
    for f in [
        repeated_products_value_and_grad,
        repeated_products_compound_value_and_grad,
    ] {
        let (value, grad) = f(&one);
        assert_eq!(value.item(), 6.0);
        assert_eq!(grad.ws[0].item(), 2.0);
    }
    assert_eq!(repeated_products(&one).item(), 6.0);
    let two = Chain {
        ws: vec![Tensor::scalar(3.0), Tensor::scalar(5.0)],
    };
    let (value, grad) = repeated_products_value_and_grad(&two);
    assert_eq!(value.item(), 30.0);
    assert_eq!(grad.ws[0].item(), 10.0);
    assert_eq!(grad.ws[1].item(), 6.0);
    let tangent = Chain {
        ws: vec![Tensor::scalar(1.0), Tensor::scalar(-2.0)],
    };
    let (value, t) = repeated_products_jvp(&two, &tangent);
    assert_eq!(value.item(), 30.0);
    assert_eq!(t.item(), 10.0 - 12.0);
    let (value, t) = repeated_products_compound_jvp(&two, &tangent);
    assert_eq!(value.item(), 30.0);
    assert_eq!(t.item(), 10.0 - 12.0);
}

// ---- parentheses in plain-number code ---------------------------------------------------------

#[differentiable(hvp)]
fn parenthesised(x: &Tensor<f64>, #[nodiff] a: f64, #[nodiff] b: f64) -> Tensor<f64> {
    (x * ((a / b).sqrt() + (a - b).abs() + (b - a).abs())).sum()
}

#[differentiable]
fn parenthesised_sum(x: &Tensor<f64>, #[nodiff] a: f64, #[nodiff] b: f64) -> Tensor<f64> {
    (x * ((a + b) * 2.0)).sum()
}

#[differentiable]
fn abs_of_difference(y: &Tensor<f64>, #[nodiff] c: &Tensor<f64>) -> Tensor<f64> {
    (y - c).abs().sum()
}

#[differentiable(hvp)]
fn parenthesised_operands(y: &Tensor<f64>, #[nodiff] n: usize, #[nodiff] k: usize) -> Tensor<f64> {
    let z = y * ((n * k) as f64);
    let m = z.maximum(&(y * 0.3));
    let p = &m * &(y * 0.3);
    (p + (y - 0.5).abs()).sum()
}

#[test]
fn parentheses_are_kept() {
    let x = t64(&[1.0], &[1]);
    // a = 4, b = 1: sqrt(4) + 3 + 3 = 8.
    let (value, grad) = parenthesised_value_and_grad(&x, 4.0, 1.0);
    assert_eq!(value.item(), 8.0);
    assert_vec(&grad, &[8.0]);
    assert_eq!(parenthesised(&x, 4.0, 1.0).item(), 8.0);
    let (value, t) = parenthesised_jvp(&x, 4.0, 1.0, &t64(&[1.0], &[1]));
    assert_eq!((value.item(), t.item()), (8.0, 8.0));

    let (value, grad) = parenthesised_sum_value_and_grad(&x, 4.0, 1.0);
    assert_eq!(value.item(), 10.0);
    assert_vec(&grad, &[10.0]);

    let y = t64(&[1.0, 3.0], &[2]);
    let c = t64(&[2.0, 2.0], &[2]);
    let (value, grad) = abs_of_difference_value_and_grad(&y, &c);
    assert_eq!(value.item(), 2.0);
    assert_vec(&grad, &[-1.0, 1.0]);

    // n k = 6 > 0.3: m = 6 y, p = 1.8 y², plus |y - 0.5|; at y = [1, 2]:
    // value 1.8 (1 + 4) + 0.5 + 1.5 = 11, gradient 3.6 y + 1 = [4.6, 8.2].
    let y = t64(&[1.0, 2.0], &[2]);
    let (value, grad) = parenthesised_operands_value_and_grad(&y, 2, 3);
    assert!((value.item() - 11.0).abs() < 1e-12);
    assert_vec(&grad, &[4.6, 8.2]);
}

// ---- control flow that only sets plain variables ----------------------------------------------

#[differentiable(hvp)]
fn scaled_by_flag(x: &Tensor<f64>, #[nodiff] flag: bool) -> Tensor<f64> {
    let mut c = 1.0;
    if flag {
        c = 2.0;
    }
    (x * c).sum()
}

#[differentiable(hvp)]
fn scaled_by_match(x: &Tensor<f64>, #[nodiff] mode: usize) -> Tensor<f64> {
    let mut c = 1.0;
    match mode {
        0 => c += 1.0,
        1 => {
            c *= 5.0;
        }
        _ => {}
    }
    let mut steps = 0;
    while c < 20.0 {
        c *= 2.0;
        steps += 1;
    }
    (x * (c + steps as f64)).sum()
}

#[test]
fn branches_on_plain_variables_are_replayed() {
    let x = t64(&[1.0, 2.0], &[2]);
    for (flag, c) in [(true, 2.0), (false, 1.0)] {
        let (value, grad) = scaled_by_flag_value_and_grad(&x, flag);
        assert_eq!(value.item(), 3.0 * c);
        assert_vec(&grad, &[c, c]);
        let (value, t) = scaled_by_flag_jvp(&x, flag, &t64(&[1.0, 0.0], &[2]));
        assert_eq!((value.item(), t.item()), (3.0 * c, c));
    }
    // mode 0: c = 2 → 32 after 4 doublings, + 4; mode 1: c = 5 → 20 after 2, + 2;
    // otherwise c = 1 → 32 after 5, + 5.
    for (mode, c) in [(0, 36.0), (1, 22.0), (7, 37.0)] {
        let (value, grad) = scaled_by_match_value_and_grad(&x, mode);
        assert_eq!(value.item(), 3.0 * c);
        assert_vec(&grad, &[c, c]);
        assert_eq!(scaled_by_match(&x, mode).item(), 3.0 * c);
    }
}

// ---- parameters that hold tensors -------------------------------------------------------------

#[differentiable]
fn weighted_layers(ws: &Vec<Tensor<f64>>, x: &Tensor<f64>) -> Tensor<f64> {
    let mut h = x.clone();
    for w in ws {
        h = (&h * w).tanh();
    }
    let first = &ws[0];
    (&h * first).sum() + ws[1].sum() * (ws.len() as f64)
}

#[test]
fn a_vec_of_tensors_is_differentiated() {
    let ws = vec![t64(&[0.5, -1.0], &[2]), t64(&[2.0, 0.25], &[2])];
    let x = t64(&[0.3, 0.7], &[2]);
    // By hand, per element: h1 = tanh(w0 x), h2 = tanh(w1 h1), f = Σ h2 w0 + 2 Σ w1.
    let f = |ws: &[Vec<f64>], x: &[f64]| -> f64 {
        (0..2)
            .map(|i| {
                let h1 = (ws[0][i] * x[i]).tanh();
                let h2 = (ws[1][i] * h1).tanh();
                h2 * ws[0][i] + 2.0 * ws[1][i]
            })
            .sum()
    };
    let plain: Vec<Vec<f64>> = ws.iter().map(Tensor::to_vec).collect();
    let (value, (gw, gx)) = weighted_layers_value_and_grad(&ws, &x);
    assert!((value.item() - f(&plain, &x.to_vec())).abs() < 1e-12);
    assert_eq!(value.item(), weighted_layers(&ws, &x).item());
    let eps = 1e-6;
    for k in 0..2 {
        for i in 0..2 {
            let mut up = plain.clone();
            let mut down = plain.clone();
            up[k][i] += eps;
            down[k][i] -= eps;
            let fd = (f(&up, &x.to_vec()) - f(&down, &x.to_vec())) / (2.0 * eps);
            assert!((gw[k].to_vec()[i] - fd).abs() < 1e-8, "w{k}[{i}]");
        }
    }
    for i in 0..2 {
        let mut up = x.to_vec();
        let mut down = x.to_vec();
        up[i] += eps;
        down[i] -= eps;
        let fd = (f(&plain, &up) - f(&plain, &down)) / (2.0 * eps);
        assert!((gx.to_vec()[i] - fd).abs() < 1e-8, "x[{i}]");
    }
    // Forward mode along the first layer's first weight.
    let tw = vec![t64(&[1.0, 0.0], &[2]), t64(&[0.0, 0.0], &[2])];
    let (value, t) = weighted_layers_jvp(&ws, &x, &tw, &t64(&[0.0, 0.0], &[2]));
    assert_eq!(value.item(), weighted_layers(&ws, &x).item());
    assert!((t.item() - gw[0].to_vec()[0]).abs() < 1e-12);
}

// ---- values collected in a local `Vec` ---------------------------------------------------------

#[differentiable(hvp)]
fn collected_steps(x: &Tensor<f64>, #[nodiff] steps: usize) -> Tensor<f64> {
    let mut outs = Vec::new();
    let mut h = x.clone();
    for _ in 0..steps {
        h = (&h * 0.5).sin();
        outs.push(h.clone());
    }
    let stacked = stack(&outs.iter().collect::<Vec<_>>(), 0);
    let mut total = stacked.sum() * 0.0;
    for o in &outs {
        total += o.sum();
    }
    total + outs[0].square().sum() + stacked.sum() + concat(&outs, 0).mean()
}

#[test]
fn values_pushed_into_a_vec_keep_their_gradient() {
    // Scalar x, per step h_k = sin(h_{k-1} / 2): value 2 Σ h_k + h_1² + mean(h) over steps.
    let f = |x: f64, steps: usize| -> (f64, f64) {
        let mut h = x;
        let mut dh = 1.0;
        let (mut s, mut ds) = (0.0, 0.0);
        let (mut first, mut dfirst) = (0.0, 0.0);
        for k in 0..steps {
            dh *= 0.5 * (h * 0.5).cos();
            h = (h * 0.5).sin();
            s += h;
            ds += dh;
            if k == 0 {
                (first, dfirst) = (h, dh);
            }
        }
        let n = steps as f64;
        (
            2.0 * s + first * first + s / n,
            2.0 * ds + 2.0 * first * dfirst + ds / n,
        )
    };
    let x = Tensor::from_vec(vec![0.8], &[1]);
    for steps in [1, 3] {
        let (want, dwant) = f(0.8, steps);
        let (value, grad) = collected_steps_value_and_grad(&x, steps);
        assert!((value.item() - want).abs() < 1e-12);
        assert_eq!(value.item(), collected_steps(&x, steps).item());
        assert!(
            (grad.item() - dwant).abs() < 1e-12,
            "{} vs {dwant}",
            grad.item()
        );
        let (value, t) = collected_steps_jvp(&x, steps, &Tensor::from_vec(vec![1.0], &[1]));
        assert_eq!(value.item(), collected_steps(&x, steps).item());
        assert!((t.item() - dwant).abs() < 1e-12);
    }
}

// ---- Hessian-vector products of the same programs -----------------------------------------------

#[track_caller]
fn hvp_check(
    grad: impl Fn(&Tensor<f64>) -> Tensor<f64>,
    hvp: impl Fn(&Tensor<f64>, &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>),
    x: &Tensor<f64>,
) {
    // The gradient returned beside the product is the gradient.
    let v = Tensor::ones(x.shape());
    let (g, _) = hvp(x, &v);
    assert_eq!(g.to_vec(), grad(x).to_vec());
    check_hvp(
        |a| vec![grad(&a[0])],
        |a, v| vec![hvp(&a[0], &v[0]).1],
        std::slice::from_ref(x),
        1e-5,
        1e-6,
        1e-8,
    )
    .unwrap();
}

#[test]
fn hessian_vector_products_through_the_same_constructs() {
    let x = t64(&[0.3, -0.8], &[2]);
    hvp_check(
        |x| parenthesised_grad(x, 4.0, 1.0),
        |x, v| parenthesised_hvp(x, 4.0, 1.0, v),
        &x,
    );
    hvp_check(
        |x| parenthesised_operands_grad(x, 2, 3),
        |x, v| parenthesised_operands_hvp(x, 2, 3, v),
        &t64(&[1.0, 2.0], &[2]),
    );
    hvp_check(
        |x| scaled_by_flag_grad(x, true),
        |x, v| scaled_by_flag_hvp(x, true, v),
        &x,
    );
    hvp_check(
        |x| scaled_by_match_grad(x, 1),
        |x, v| scaled_by_match_hvp(x, 1, v),
        &x,
    );
    hvp_check(
        |x| collected_steps_grad(x, 3),
        |x, v| collected_steps_hvp(x, 3, v),
        &x,
    );
    // collected_steps is not linear: its Hessian is not zero.
    let (_, hv) = collected_steps_hvp(&x, 3, &Tensor::ones(&[2]));
    assert!(hv.to_vec().iter().any(|h| h.abs() > 1e-3));
}

// ---- constant fields of a structure, and Vecs of structures -------------------------------------

#[derive(Clone, Differentiable)]
struct Centred {
    w: Tensor<f64>,
    #[nodiff]
    mean: Tensor<f64>,
}

#[differentiable]
fn centred_score(model: &Centred, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    (x - &model.mean).matmul(&model.w).sum()
}

#[test]
fn a_nodiff_tensor_field_stays_constant() {
    let model = Centred {
        w: t64(&[1.0, -1.0], &[2, 1]),
        mean: t64(&[1.0, 2.0], &[2]),
    };
    let x = t64(&[3.0, 6.0, 5.0, 2.0], &[2, 2]);
    // f = Σ_rows (x - mean) w: dw = Σ_rows (x - mean) = [2 + 4, 4 + 0] = [6, 4].
    let g = centred_score_grad(&model, &x);
    assert_eq!(g.w.to_vec(), vec![6.0, 4.0]);
    // A constant field of the gradient is the parameter's own value, untouched.
    assert_eq!(g.mean.to_vec(), model.mean.to_vec());
    // A tangent made with zeros_like holds a copy of `mean`: it is not its tangent.
    let (_, t) = centred_score_jvp(&model, &x, &model.zeros_like());
    assert_eq!(t.item(), 0.0);
    let mut tangent = model.zeros_like();
    tangent.w = t64(&[1.0, 0.0], &[2, 1]);
    let (_, t) = centred_score_jvp(&model, &x, &tangent);
    assert_eq!(t.item(), 6.0);
}

#[derive(Clone, Differentiable)]
struct Dense {
    w: Tensor<f64>,
}

#[differentiable]
fn through_layers(layers: &Vec<Dense>, x: &Tensor<f64>) -> Tensor<f64> {
    let mut h = x.clone();
    for layer in layers {
        h = &h * &layer.w;
    }
    h.sum()
}

#[test]
fn a_vec_of_structures_is_differentiated() {
    let layers = vec![
        Dense {
            w: t64(&[2.0], &[1]),
        },
        Dense {
            w: t64(&[3.0], &[1]),
        },
    ];
    let x = t64(&[5.0], &[1]);
    let (value, (gl, gx)) = through_layers_value_and_grad(&layers, &x);
    assert_eq!(value.item(), 30.0);
    assert_eq!(gl[0].w.to_vec(), vec![15.0]);
    assert_eq!(gl[1].w.to_vec(), vec![10.0]);
    assert_eq!(gx.to_vec(), vec![6.0]);
}

#[differentiable]
fn through_a_slice(layers: &[Dense], xs: &[Tensor<f64>]) -> Tensor<f64> {
    let mut total = xs[0].sum() * 0.0;
    for (layer, x) in layers.iter().zip(xs.iter()) {
        total += (x * &layer.w).sum();
    }
    total
}

#[test]
fn slices_of_tensors_and_structures_are_differentiated() {
    let layers = [
        Dense {
            w: t64(&[2.0], &[1]),
        },
        Dense {
            w: t64(&[3.0], &[1]),
        },
    ];
    let xs = [t64(&[5.0], &[1]), t64(&[7.0], &[1])];
    // f = 2·5 + 3·7: d/dw = x, d/dx = w; gradients of slices are Vecs.
    let (value, (gl, gx)) = through_a_slice_value_and_grad(&layers, &xs);
    assert_eq!(value.item(), 31.0);
    assert_eq!(value.item(), through_a_slice(&layers, &xs).item());
    assert_eq!((gl[0].w.item(), gl[1].w.item()), (5.0, 7.0));
    assert_eq!((gx[0].item(), gx[1].item()), (2.0, 3.0));
    let tl = vec![
        Dense {
            w: t64(&[1.0], &[1]),
        },
        Dense {
            w: t64(&[0.0], &[1]),
        },
    ];
    let tx = vec![t64(&[0.0], &[1]), t64(&[1.0], &[1])];
    let (_, t) = through_a_slice_jvp(&layers, &xs, &tl, &tx);
    assert_eq!(t.item(), 5.0 + 3.0);
}

// ---- optional parameters -------------------------------------------------------------------------

#[differentiable]
fn optional_bias(x: &Tensor<f64>, bias: Option<&Tensor<f64>>) -> Tensor<f64> {
    let mut h = x * 2.0;
    if let Some(b) = bias {
        h += b * 3.0;
    }
    let extra = match bias {
        Some(b) => b.sum(),
        None => x.sum() * 0.0,
    };
    h.sum() + extra
}

#[derive(Clone, Differentiable)]
struct Head {
    w: Tensor<f64>,
}

#[differentiable]
fn optional_head(x: &Tensor<f64>, #[nodiff] scale: f64, head: Option<Head>) -> Tensor<f64> {
    match head {
        Some(h) => (x * &h.w).sum() * scale,
        None => x.sum(),
    }
}

#[test]
fn optional_parameters_have_optional_gradients() {
    let x = t64(&[1.0, 2.0], &[2]);
    let b = t64(&[0.5, -0.5], &[2]);
    // With a bias: f = Σ (2x + 3b) + Σ b: df/dx = 2, df/db = 4.
    let (value, (gx, gb)) = optional_bias_value_and_grad(&x, Some(&b));
    assert_eq!(value.item(), optional_bias(&x, Some(&b)).item());
    assert_eq!(value.item(), 6.0);
    assert_eq!(gx.to_vec(), vec![2.0, 2.0]);
    assert_eq!(gb.expect("a bias gradient").to_vec(), vec![4.0, 4.0]);
    let (_, t) = optional_bias_jvp(
        &x,
        Some(&b),
        &t64(&[0.0, 0.0], &[2]),
        &Some(t64(&[1.0, 0.0], &[2])),
    );
    assert_eq!(t.item(), 4.0);
    // Without: f = 2 Σx, and no bias gradient.
    let (value, (gx, gb)) = optional_bias_value_and_grad(&x, None);
    assert_eq!(value.item(), 6.0);
    assert_eq!(gx.to_vec(), vec![2.0, 2.0]);
    assert!(gb.is_none());

    let head = Head {
        w: t64(&[3.0, 4.0], &[2]),
    };
    let (value, (gx, gh)) = optional_head_value_and_grad(&x, 2.0, Some(head.clone()));
    assert_eq!(value.item(), 22.0);
    assert_eq!(gx.to_vec(), vec![6.0, 8.0]);
    assert_eq!(gh.expect("a head gradient").w.to_vec(), vec![2.0, 4.0]);
    let (_, (gx, gh)) = optional_head_value_and_grad(&x, 2.0, None);
    assert_eq!(gx.to_vec(), vec![1.0, 1.0]);
    assert!(gh.is_none());
}

#[derive(Clone, Differentiable)]
struct Leaky {
    w: Tensor<f64>,
    #[nodiff]
    slope: f64,
}

#[differentiable]
fn leaky(model: &Leaky, x: &Tensor<f64>) -> Tensor<f64> {
    let slope = stop_gradient(&model.slope);
    let z = x * &model.w;
    z.maximum(&(&z * slope)).sum()
}

#[test]
fn a_nodiff_number_field_is_read_with_stop_gradient() {
    let model = Leaky {
        w: t64(&[2.0, 2.0], &[2]),
        slope: 0.1,
    };
    let x = t64(&[1.0, -1.0], &[2]);
    // z = [2, -2]: max(z, 0.1 z) = [2, -0.2]; dw = [x0, 0.1 x1], dx = [w0, 0.1 w1].
    let (value, (gm, gx)) = leaky_value_and_grad(&model, &x);
    assert!((value.item() - 1.8).abs() < 1e-12);
    assert_eq!(gm.w.to_vec(), vec![1.0, -0.1]);
    assert_eq!(gm.slope, 0.1);
    assert_eq!(gx.to_vec(), vec![2.0, 0.2]);
}

// ---- saturated activations: derivatives where tanh and sigmoid round to ±1 ----------------------

/// `Σ tanh(x) + Σ sigmoid(2x)`: at `|x| = 10` (f32) and `|x| = 20` (f64) both outputs round to
/// `±1`, where a rule that read the rounded output (`1 - y²`, `y(1 - y)`) gave 0.
#[differentiable(hvp)]
fn saturated_f32(x: &Tensor<f32>) -> Tensor<f32> {
    x.tanh().sum() + (x * 2.0).sigmoid().sum()
}

#[differentiable(hvp)]
fn saturated_f64(x: &Tensor<f64>) -> Tensor<f64> {
    x.tanh().sum() + (x * 2.0).sigmoid().sum()
}

/// `d/dx` and `d²/dx²` of `tanh(x) + sigmoid(2x)`, from `e = e^(-2|x|)` (so that they are exact
/// at large `|x|`): `sech² x = 4e/(1+e)²`, `2σ'(2x) = 2e/(1+e)²`; `(tanh)'' = -2 tanh · sech²`,
/// `4σ''(2x) = 4σ'(2x)(1 - 2σ(2x))` with `1 - 2σ(2x) = -tanh x`.
fn saturated_derivatives(x: f64) -> (f64, f64) {
    let e = (-2.0 * x.abs()).exp();
    let d = (1.0 + e) * (1.0 + e);
    let (sech2, dsig) = (4.0 * e / d, e / d);
    let tanh = x.signum() * (1.0 - e) / (1.0 + e);
    (sech2 + 2.0 * dsig, -2.0 * tanh * sech2 - 4.0 * dsig * tanh)
}

#[track_caller]
fn assert_relative(got: &[f64], want: &[f64], tol: f64) {
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= tol * w.abs(),
            "got {got:?}, want {want:?} (tolerance {tol:e})"
        );
    }
}

#[test]
fn saturated_activations_keep_their_derivatives() {
    let xs = [10.0, -10.0];
    let (d1, d2): (Vec<f64>, Vec<f64>) = xs.iter().map(|&x| saturated_derivatives(x)).unzip();
    let x = Tensor::from_vec(xs.iter().map(|&v| v as f32).collect(), &[2]);
    let widen = |t: Tensor<f32>| t.to_vec().into_iter().map(f64::from).collect::<Vec<_>>();
    assert_relative(&widen(saturated_f32_grad(&x)), &d1, 1e-5);
    let ones = Tensor::<f32>::ones(&[2]);
    let (_, t) = saturated_f32_jvp(&x, &Tensor::from_vec(vec![1.0, 0.0], &[2]));
    assert_relative(&[f64::from(t.item())], &d1[..1], 1e-5);
    let (_, hv) = saturated_f32_hvp(&x, &ones);
    assert_relative(&widen(hv), &d2, 1e-4);

    let xs = [20.0, -20.0];
    let (d1, d2): (Vec<f64>, Vec<f64>) = xs.iter().map(|&x| saturated_derivatives(x)).unzip();
    let x = t64(&xs, &[2]);
    assert_relative(&saturated_f64_grad(&x).to_vec(), &d1, 1e-13);
    let (_, t) = saturated_f64_jvp(&x, &t64(&[0.0, 1.0], &[2]));
    assert_relative(&[t.item()], &d1[1..], 1e-13);
    let (_, hv) = saturated_f64_hvp(&x, &Tensor::ones(&[2]));
    assert_relative(&hv.to_vec(), &d2, 1e-12);
}
