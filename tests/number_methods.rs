//! The methods of `f32` and `f64` in functions of numbers: each computes what Rust's method of
//! the same name computes, in the function itself and in every generated variant, and its
//! derivative is checked against central differences and derivatives worked out by hand.

use rune_ad::prelude::*;

/// Central difference of `f` at `x`.
fn central(f: impl Fn(f64) -> f64, x: f64) -> f64 {
    let h = 1e-6;
    (f(x + h) - f(x - h)) / (2.0 * h)
}

/// A staircase fee: the amount rounded as Rust rounds it, times a rate.
#[differentiable]
fn fee(amount: f64, rate: f64) -> f64 {
    amount.round() * rate + amount.round_ties_even() * 0.5
}

#[test]
fn round_rounds_halves_as_rust_does_in_every_variant() {
    // `f64::round` takes halves away from zero, `round_ties_even` to even: 2.5 -> 3 and 2.
    for (amount, rounded, even) in [(2.5, 3.0, 2.0), (-2.5, -3.0, -2.0), (0.5, 1.0, 0.0)] {
        let want = rounded * 1.5 + even * 0.5;
        assert_eq!(fee(amount, 1.5), want);
        let (v, (ga, gr)) = fee_value_and_grad(amount, 1.5);
        assert_eq!(v, want);
        // Zero derivative through the rounding; the rate's is the rounded amount.
        assert_eq!((ga, gr), (0.0, rounded));
        let (vj, t) = fee_jvp(amount, 1.5, &1.0, &2.0);
        assert_eq!((vj, t), (want, 2.0 * rounded));
    }
    // Away from the halves the derivative is zero, as the differences say.
    assert_eq!(central(|a| fee(a, 1.5), 1.3), 0.0);
}

/// The checks every program below gets: the value is the plain function's and the formula's,
/// the gradient matches central differences, and `f_jvp` along `u` is the gradient's inner
/// product with `u`.
#[track_caller]
fn check2(
    f: impl Fn(f64, f64) -> f64,
    value_and_grad: impl Fn(f64, f64) -> (f64, (f64, f64)),
    jvp: impl Fn(f64, f64, f64, f64) -> (f64, f64),
    (a, b): (f64, f64),
    formula: f64,
) {
    let (v, (ga, gb)) = value_and_grad(a, b);
    assert_eq!(v, f(a, b));
    assert!(
        (v - formula).abs() <= 1e-12 * (1.0 + formula.abs()),
        "{v} {formula}"
    );
    let (fa, fb) = (central(|x| f(x, b), a), central(|y| f(a, y), b));
    assert!((ga - fa).abs() <= 1e-6 * (1.0 + fa.abs()), "{ga} {fa}");
    assert!((gb - fb).abs() <= 1e-6 * (1.0 + fb.abs()), "{gb} {fb}");
    let (u, w) = (0.7, -1.3);
    let (vj, t) = jvp(a, b, u, w);
    assert_eq!(vj, v);
    assert!((t - (ga * u + gb * w)).abs() <= 1e-12 * (1.0 + t.abs()));
}

/// Where a projectile launched at `speed` and `angle` lands, and the distance and bearing of
/// the landing point from a post of height `post` at 1: `sin_cos`, `hypot`, `atan2`.
#[differentiable]
fn landing(speed: f64, angle: f64, post: f64) -> f64 {
    let (s, c) = angle.sin_cos();
    let range = speed * speed * 2.0 * s * c / 9.81;
    let dx = range - 1.0;
    dx.hypot(post) + (-post).atan2(dx)
}

#[test]
fn sin_cos_hypot_and_atan2_in_a_projectile() {
    let (v, a, p): (f64, f64, f64) = (12.0, 0.6, 1.0);
    let range = v * v * (2.0 * a).sin() / 9.81;
    let formula = (range - 1.0).hypot(p) + (-p).atan2(range - 1.0);
    check2(
        |v, a| landing(v, a, p),
        |v, a| {
            let (value, (gv, ga, _)) = landing_value_and_grad(v, a, p);
            (value, (gv, ga))
        },
        |v, a, u, w| landing_jvp(v, a, p, &u, &w, &0.0),
        (v, a),
        formula,
    );
    // By hand, along the speed: d/dv of hypot(r - 1, p) + atan2(-p, r - 1) is
    // ((r - 1) / hypot + p / ((r - 1)² + p²)) · dr/dv, with dr/dv = 2r / v.
    let d = range - 1.0;
    let by_hand = (d / d.hypot(p) + p / (d * d + p * p)) * 2.0 * range / v;
    let (_, (gv, _, _)) = landing_value_and_grad(v, a, p);
    assert!((gv - by_hand).abs() < 1e-12 * by_hand.abs());
}

/// A power law `a^b` against one data point, the exponent differentiated (`powf`), with Rust's
/// `ln_1p`, `exp_m1`, `cbrt` and `signum` around it.
#[differentiable]
fn power_law(a: f64, b: f64) -> f64 {
    let y = a.powf(b);
    let r = (y - 3.0).cbrt() * (y - 3.0).signum();
    r.ln_1p() + (0.1 * b).exp_m1()
}

#[test]
fn powf_with_a_differentiated_exponent_and_rusts_names() {
    let (a, b): (f64, f64) = (1.25, 1.5);
    let y = a.powf(b);
    let r = (y - 3.0).cbrt() * (y - 3.0).signum();
    let formula = r.ln_1p() + (0.1 * b).exp_m1();
    check2(
        power_law,
        power_law_value_and_grad,
        |a, b, u, w| power_law_jvp(a, b, &u, &w),
        (a, b),
        formula,
    );
    // d/db by hand: 1/(1 + r) · dr/dy · dy/db + 0.1 e^(0.1 b), dr/dy = |y - 3|^(-2/3) / 3 ·
    // signum, dy/db = y ln a.
    let dr = (y - 3.0).signum() * (y - 3.0).abs().powf(-2.0 / 3.0) / 3.0;
    let by_hand = dr * y * a.ln() / (1.0 + r) + 0.1 * (0.1 * b).exp();
    let (_, (_, gb)) = power_law_value_and_grad(a, b);
    assert!(
        (gb - by_hand).abs() < 1e-12 * by_hand.abs(),
        "{gb} {by_hand}"
    );
}

/// A one-feature logistic regression on numbers, with our names of the tensor ops
/// (`NumberMethods`): `sigmoid`, `log1p`, `softplus`, `square`.
#[differentiable]
fn logistic(w: f64, bias: f64) -> f64 {
    let mut loss = 0.0;
    for (x, y) in [(0.5, 1.0), (-1.0, 0.0), (2.0, 1.0)] {
        let p = (w * x + bias).sigmoid();
        loss += -(y * p.ln() + (1.0 - y) * (-p).log1p());
    }
    loss + 0.01 * (w.square() + bias.softplus())
}

#[test]
fn our_names_of_the_tensor_ops_on_numbers() {
    let (w, b) = (0.8, -0.2);
    let sigmoid = |z: f64| 1.0 / (1.0 + (-z).exp());
    let data = [(0.5, 1.0), (-1.0, 0.0), (2.0, 1.0)];
    let loss: f64 = data
        .iter()
        .map(|&(x, y)| {
            let p = sigmoid(w * x + b);
            -(y * p.ln() + (1.0 - y) * (1.0 - p).ln())
        })
        .sum::<f64>()
        + 0.01 * (w * w + (1.0 + b.exp()).ln());
    check2(
        logistic,
        logistic_value_and_grad,
        |a, b, u, v| logistic_jvp(a, b, &u, &v),
        (w, b),
        loss,
    );
    // By hand: dL/dw = sum (p - y) x + 0.02 w.
    let gw: f64 = data
        .iter()
        .map(|&(x, y)| (sigmoid(w * x + b) - y) * x)
        .sum::<f64>()
        + 0.02 * w;
    let (_, (g, _)) = logistic_value_and_grad(w, b);
    assert!((g - gw).abs() < 1e-12, "{g} {gw}");
}

/// The same methods in `f32`.
#[differentiable]
fn in_f32(x: f32) -> f32 {
    let (s, c) = x.sin_cos();
    x.cbrt() + s * c + x.exp_m1().ln_1p() + x.sigmoid()
}

#[test]
fn the_methods_in_f32() {
    let x = 0.4f32;
    let (v, g) = in_f32_value_and_grad(x);
    assert_eq!(v, in_f32(x));
    // d/dx: 1/(3 x^(2/3)) + cos 2x + 1 (ln(1 + e^x - 1) = x) + σ(x)(1 - σ(x)).
    let sigmoid = 1.0 / (1.0 + (-x).exp());
    let by_hand =
        1.0 / (3.0 * x.powf(2.0 / 3.0)) + (2.0 * x).cos() + 1.0 + sigmoid * (1.0 - sigmoid);
    assert!((g - by_hand).abs() < 1e-5, "{g} {by_hand}");
}

/// The right-hand side of Lotka-Volterra: a helper of numbers returning a tuple.
#[differentiable]
fn lotka_volterra(prey: f64, predators: f64, birth: f64, death: f64) -> (f64, f64) {
    (
        birth * prey - 0.1 * prey * predators,
        0.075 * prey * predators - death * predators,
    )
}

/// A forward-Euler integration calling the helper, over a step count given as a number (`as
/// usize`), returning the final prey count.
#[differentiable]
fn final_prey(prey: f64, predators: f64, birth: f64, death: f64, steps: f64) -> f64 {
    let (mut x, mut y) = (prey, predators);
    for _ in 0..steps as usize {
        let (dx, dy) = lotka_volterra(x, y, birth, death);
        x += 0.01 * dx;
        y += 0.01 * dy;
    }
    x
}

#[test]
fn helpers_returning_tuples_of_numbers() {
    let (x, y, b, d) = (10.0, 5.0, 1.1, 0.4);
    // The helper's vjp and jvp against its Jacobian by hand:
    // [[b - 0.1 y, -0.1 x, x, 0], [0.075 y, 0.075 x - d, 0, -y]].
    let jacobian = [
        [b - 0.1 * y, -0.1 * x, x, 0.0],
        [0.075 * y, 0.075 * x - d, 0.0, -y],
    ];
    let (value, (gx, gy, gb, gd)) = lotka_volterra_vjp(x, y, b, d, (&2.0, &-1.0));
    assert_eq!(value, lotka_volterra(x, y, b, d));
    let pulled = [gx, gy, gb, gd];
    for k in 0..4 {
        let want = 2.0 * jacobian[0][k] - jacobian[1][k];
        assert!((pulled[k] - want).abs() < 1e-12, "{pulled:?}");
    }
    let (_, (tx, ty)) = lotka_volterra_jvp(x, y, b, d, &1.0, &0.0, &0.0, &1.0);
    assert!((tx - (jacobian[0][0] + jacobian[0][3])).abs() < 1e-12);
    assert!((ty - (jacobian[1][0] + jacobian[1][3])).abs() < 1e-12);

    // The integration through the helper, its step count a number cast to an integer.
    let f = |p: [f64; 4]| final_prey(p[0], p[1], p[2], p[3], 50.7);
    let (v, (g0, g1, g2, g3, g_steps)) = final_prey_value_and_grad(x, y, b, d, 50.7);
    assert_eq!(v, f([x, y, b, d]));
    assert_eq!(g_steps, 0.0, "the step count is a constant");
    let grads = [g0, g1, g2, g3];
    for k in 0..4 {
        let along = |t: f64| {
            let mut p = [x, y, b, d];
            p[k] = t;
            f(p)
        };
        let fd = central(along, [x, y, b, d][k]);
        assert!(
            (grads[k] - fd).abs() < 1e-6 * (1.0 + fd.abs()),
            "{k}: {grads:?} {fd}"
        );
    }
}

/// A value declared first and given in the arms of a branch (`let r;`), and an integer one
/// beside it that stays plain Rust.
#[differentiable]
fn piecewise(x: f64, #[nodiff] threshold: f64) -> f64 {
    let r;
    let scale: f64;
    if x > threshold {
        r = x * x;
        scale = 2.0;
    } else {
        r = -x;
        scale = 3.0;
    }
    r * scale
}

#[test]
fn a_value_assigned_after_its_let() {
    for (x, want, slope) in [(2.0, 8.0, 8.0), (-1.0, 3.0, -3.0)] {
        let (v, g) = piecewise_value_and_grad(x, 0.5);
        assert_eq!((v, g), (want, slope));
        assert_eq!(piecewise(x, 0.5), want);
        assert_eq!(piecewise_jvp(x, 0.5, &2.0), (want, 2.0 * slope));
    }
}

/// Numbers into a matrix, a linear solve, and the solution's sum back into a number: a function
/// of numbers calling tensor ops (`Tensor::from_vec`, `Tensor::from`, `Tensor::scalar`,
/// `.item()`).
#[differentiable]
fn solved(a: f64, b: f64, c: f64) -> f64 {
    let m = Tensor::from_vec(vec![a, b, b, c + 2.0], &[2, 2]);
    let rhs = Tensor::from([1.0, a]).reshape(&[2, 1]);
    let x = m.solve(&rhs);
    let s = x.sum().item();
    s * a + Tensor::scalar(c).item()
}

#[test]
fn numbers_into_tensors_and_back() {
    // By Cramer's rule: x = [(c + 2) - a b, a² - b] / (a (c + 2) - b²).
    let by_hand = |a: f64, b: f64, c: f64| {
        let det = a * (c + 2.0) - b * b;
        ((c + 2.0) - b * a + a * a - b) / det * a + c
    };
    let (a, b, c) = (2.0, 0.5, 1.0);
    let (v, (ga, gb, gc)) = solved_value_and_grad(a, b, c);
    assert!((v - by_hand(a, b, c)).abs() < 1e-12);
    assert_eq!(v, solved(a, b, c));
    let fd = [
        central(|t| by_hand(t, b, c), a),
        central(|t| by_hand(a, t, c), b),
        central(|t| by_hand(a, b, t), c),
    ];
    for (g, f) in [ga, gb, gc].iter().zip(fd) {
        assert!((g - f).abs() < 1e-6, "{g} {f}");
    }
    let (_, t) = solved_jvp(a, b, c, &1.0, &-2.0, &0.5);
    assert!((t - (ga - 2.0 * gb + 0.5 * gc)).abs() < 1e-12);
}

/// Constant numbers where an op takes a tensor input (`hypot(1.0)`, a constant base of
/// `powf`, a constant `atan2` receiver), on numbers and on 0-d tensors (`fuse = false`).
#[differentiable]
fn constant_operands(x: f64, b: f64) -> f64 {
    x.hypot(1.0) + (-1.0f64).atan2(x) + 2.0f64.powf(b)
}

#[differentiable(fuse = false)]
fn constant_operands_tensors(x: f64, b: f64) -> f64 {
    x.hypot(1.0) + (-1.0f64).atan2(x) + 2.0f64.powf(b)
}

#[test]
fn constant_operands_of_ops_taking_tensors() {
    let (x, b): (f64, f64) = (0.5, 1.5);
    let value = x.hypot(1.0) + (-1.0f64).atan2(x) + 2.0f64.powf(b);
    // d/dx hypot(x, 1) = x / hypot, d/dx atan2(-1, x) = 1 / (x² + 1), d/db 2^b = 2^b ln 2.
    let gx = x / x.hypot(1.0) + 1.0 / (x * x + 1.0);
    let gb = 2.0f64.powf(b) * 2.0f64.ln();
    for (v, (dx, db)) in [
        constant_operands_value_and_grad(x, b),
        constant_operands_tensors_value_and_grad(x, b),
    ] {
        assert!((v - value).abs() < 1e-15, "{v} {value}");
        assert!(
            (dx - gx).abs() < 1e-12 && (db - gb).abs() < 1e-12,
            "{dx} {db}"
        );
    }
    let (_, t) = constant_operands_tensors_jvp(x, b, &1.0, &2.0);
    assert!((t - (gx + 2.0 * gb)).abs() < 1e-12);
}
