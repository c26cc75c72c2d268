//! The unary ops: every op's rules against finite differences away from kinks, and hand-derived
//! values at the kinks and singular points.

use rune_runtime::rules::*;
use rune_runtime::{Element, Tensor};

use crate::common::{assert_close, tensor, uniform, Case};

/// Values with `0.3 <= |x| < 2` and mixed signs: away from the kinks of `relu` and `abs`.
fn away_from_zero<T: Element>(shape: &[usize], seed: u64) -> Tensor<T> {
    let magnitude: Tensor<T> = uniform(shape, 0.3, 2.0, seed);
    let v = magnitude
        .to_vec()
        .into_iter()
        .enumerate()
        .map(|(i, m)| if i % 3 == 1 { -m } else { m })
        .collect();
    Tensor::from_vec(v, shape)
}

type Forward<T> = fn(&Tensor<T>) -> Tensor<T>;
type Rule<T> = fn(&Tensor<T>, &Tensor<T>) -> Tensor<T>;

/// What a rule reads besides the tangent: the op's input or its output.
#[derive(Clone, Copy)]
enum Reads {
    X,
    Y,
}

/// A case for a one-input op without configuration.
fn push<T: Element>(
    cases: &mut Vec<Case<T>>,
    (name, label): (&'static str, &'static str),
    f: Forward<T>,
    jvp: Rule<T>,
    vjp: Rule<T>,
    reads: Reads,
    x: Tensor<T>,
) {
    let at = move |x: &Tensor<T>| match reads {
        Reads::X => x.clone(),
        Reads::Y => f(x),
    };
    cases.push(Case::new(
        name,
        label,
        vec![x],
        move |x| f(&x[0]),
        move |x, t| jvp(&at(&x[0]), &t[0]),
        move |x, g| vec![vjp(g, &at(&x[0]))],
    ));
}

/// One `[2, 3]` case per op, on uniform inputs in `[lo, hi)`.
macro_rules! uniform_cases {
    ($cases:ident; $($name:ident, $jvp:ident, $vjp:ident, $reads:ident, $lo:expr, $hi:expr;)*) => {{
        let mut seed = 400;
        $(
            seed += 1;
            let x = uniform(&[2, 3], $lo, $hi, seed);
            let name = (stringify!($name), "[2, 3]");
            push(&mut $cases, name, Tensor::$name, $jvp, $vjp, Reads::$reads, x);
        )*
    }};
}

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    uniform_cases! { cases;
        exp, exp_jvp, exp_vjp, Y, -2.0, 2.0;
        ln, ln_jvp, ln_vjp, X, 0.5, 3.0;
        log2, log2_jvp, log2_vjp, X, 0.5, 3.0;
        exp2, exp2_jvp, exp2_vjp, Y, -2.0, 2.0;
        log1p, log1p_jvp, log1p_vjp, X, -0.5, 2.0;
        sin, sin_jvp, sin_vjp, X, -3.0, 3.0;
        cos, cos_jvp, cos_vjp, X, -3.0, 3.0;
        tan, tan_jvp, tan_vjp, Y, -1.2, 1.2;
        tanh, tanh_jvp, tanh_vjp, X, -2.0, 2.0;
        sigmoid, sigmoid_jvp, sigmoid_vjp, X, -4.0, 4.0;
        sqrt, sqrt_jvp, sqrt_vjp, Y, 0.5, 3.0;
        recip, recip_jvp, recip_vjp, Y, 0.5, 2.0;
        square, square_jvp, square_vjp, X, -2.0, 2.0;
        softplus, softplus_jvp, softplus_vjp, X, -3.0, 3.0;
    }
    let x = tensor(&[0.3], &[]);
    push(
        &mut cases,
        ("exp", "0-d"),
        Tensor::exp,
        exp_jvp,
        exp_vjp,
        Reads::Y,
        x,
    );
    // Kinked ops, on inputs away from their kinks.
    let (label, x) = ("[3, 2] away from 0", away_from_zero(&[3, 2], 450));
    let name = ("relu", label);
    push(
        &mut cases,
        name,
        Tensor::relu,
        relu_jvp,
        relu_vjp,
        Reads::X,
        x.clone(),
    );
    push(
        &mut cases,
        ("abs", label),
        Tensor::abs,
        abs_jvp,
        abs_vjp,
        Reads::X,
        x,
    );
    // `clamp` on values below, inside and above [-0.5, 0.8], none within 0.1 of a bound.
    let (lo, hi) = (T::from_f64(-0.5), T::from_f64(0.8));
    cases.push(Case::new(
        "clamp",
        "[-0.5, 0.8] on values on both sides",
        vec![tensor::<T>(
            &[-1.5, -0.7, -0.2, 0.1, 0.6, 1.0, 2.0, -3.0],
            &[2, 4],
        )],
        move |x| x[0].clamp(lo, hi),
        move |x, t| clamp_jvp(&x[0], lo, hi, &t[0]),
        move |x, g| vec![clamp_vjp(g, &x[0], lo, hi)],
    ));
    // `powf` with fractional, negative and integer exponents; integer `p` on negative bases.
    for (label, p, lo, hi) in [
        ("p = 2.5, x > 0", 2.5, 0.5, 2.0),
        ("p = -1.5, x > 0", -1.5, 0.5, 2.0),
        ("p = 3, x of both signs", 3.0, -2.0, 2.0),
    ] {
        let p = T::from_f64(p);
        cases.push(Case::new(
            "powf",
            label,
            vec![uniform::<T>(&[4], lo, hi, 460)],
            move |x| x[0].powf(p),
            move |x, t| powf_jvp(&x[0], p, &t[0]),
            move |x, g| vec![powf_vjp(g, &x[0], p)],
        ));
    }
    cases
}

const LN2: f64 = std::f64::consts::LN_2;

/// Forward values and derivatives at points where both are known in closed form.
#[test]
fn values_and_derivatives_at_known_points() {
    let one = tensor::<f64>(&[1.0], &[1]);
    let check = |y: Tensor<f64>, d: Tensor<f64>, want_y: f64, want_d: f64| {
        assert_close(&y, &[want_y], 1e-12);
        assert_close(&d, &[want_d], 1e-12);
    };
    let at = |v: f64| tensor::<f64>(&[v], &[1]);

    let x = at(2.0);
    check(x.exp2(), exp2_vjp(&one, &x.exp2()), 4.0, 4.0 * LN2);
    let x = at(8.0);
    check(x.log2(), log2_vjp(&one, &x), 3.0, 1.0 / (8.0 * LN2));
    let x = at(1.0);
    check(x.ln(), ln_jvp(&x, &one), 0.0, 1.0);
    check(
        x.exp(),
        exp_vjp(&one, &x.exp()),
        std::f64::consts::E,
        std::f64::consts::E,
    );
    let x = at(0.0);
    check(x.log1p(), log1p_vjp(&one, &x), 0.0, 1.0);
    check(x.sin(), sin_vjp(&one, &x), 0.0, 1.0);
    check(x.cos(), cos_vjp(&one, &x), 1.0, 0.0);
    check(x.tanh(), tanh_vjp(&one, &x), 0.0, 1.0);
    let x = at(std::f64::consts::FRAC_PI_4);
    check(x.tan(), tan_vjp(&one, &x.tan()), 1.0, 2.0);
    let x = at(4.0);
    check(x.sqrt(), sqrt_vjp(&one, &x.sqrt()), 2.0, 0.25);
    check(x.recip(), recip_vjp(&one, &x.recip()), 0.25, -1.0 / 16.0);
    let x = at(-3.0);
    check(x.square(), square_vjp(&one, &x), 9.0, -6.0);
    check(x.abs(), abs_vjp(&one, &x), 3.0, -1.0);
    // sigmoid(ln 3) = 3/4, sigmoid(-ln 3) = 1/4, and sigmoid' = 3/16 at both.
    let x = tensor::<f64>(&[3f64.ln(), -(3f64.ln()), 0.0], &[3]);
    let y = x.sigmoid();
    assert_close(&y, &[0.75, 0.25, 0.5], 1e-12);
    let g = Tensor::ones(&[3]);
    assert_close(&sigmoid_vjp(&g, &x), &[3.0 / 16.0, 3.0 / 16.0, 0.25], 1e-12);
}

/// `sigmoid` neither overflows nor turns into NaN for large `|x|`, in f32 or f64, and keeps
/// relative precision far into the negative tail.
#[test]
fn sigmoid_is_stable_for_large_inputs() {
    fn check<T: Element>() {
        let x = tensor::<T>(&[1000.0, -1000.0, 80.0, -80.0], &[4]);
        let y = x.sigmoid();
        assert_close(&y, &[1.0, 0.0, 1.0, 0.0], 1e-6);
        let d = sigmoid_vjp(&Tensor::ones(&[4]), &x);
        assert!(d.to_vec().iter().all(|v| v.is_finite()), "{d:?}");
        assert_close(&d, &[0.0, 0.0, 0.0, 0.0], 1e-6);
    }
    check::<f32>();
    check::<f64>();
    // sigmoid(-40) = 1 / (1 + e^40) ≈ e^-40 · (1 - e^-40); a naive 1 - 1/(1 + e^-x) would give 0.
    let y = tensor::<f64>(&[-40.0], &[1]).sigmoid().item();
    let want = (-40f64).exp();
    assert!((y - want).abs() <= 1e-15 * want, "{y} vs {want}");
}

/// relu'(0) = 0 and abs'(0) = 0 (PyTorch's choice); both sides of the kinks are exact.
#[test]
fn relu_and_abs_at_zero() {
    let x = tensor::<f64>(&[-2.0, 0.0, 3.0], &[3]);
    let g = tensor::<f64>(&[5.0, 7.0, 11.0], &[3]);
    assert_close(&x.relu(), &[0.0, 0.0, 3.0], 0.0);
    assert_close(&relu_vjp(&g, &x), &[0.0, 0.0, 11.0], 0.0);
    assert_close(&relu_jvp(&x, &g), &[0.0, 0.0, 11.0], 0.0);
    assert_close(&x.abs(), &[2.0, 0.0, 3.0], 0.0);
    assert_close(&abs_vjp(&g, &x), &[-5.0, 0.0, 11.0], 0.0);
    assert_close(&abs_jvp(&x, &g), &[-5.0, 0.0, 11.0], 0.0);
    // A NaN cotangent where relu is flat does not leak through.
    let g = tensor::<f64>(&[f64::NAN, 1.0, 1.0], &[3]);
    assert_close(&relu_vjp(&g, &x), &[0.0, 0.0, 1.0], 0.0);
    // NaN propagates through the forward ops.
    let n = tensor::<f64>(&[f64::NAN], &[1]);
    assert!(n.relu().item().is_nan());
    assert!(n.clamp(0.0, 1.0).item().is_nan());
}

/// The gradient passes at the bounds themselves (inclusive, as PyTorch) and nowhere outside.
#[test]
fn clamp_passes_gradient_on_the_closed_interval() {
    let x = tensor::<f64>(&[-2.0, -1.0, 0.0, 1.0, 2.0], &[5]);
    let g = tensor::<f64>(&[1.0, 2.0, 3.0, 4.0, 5.0], &[5]);
    assert_close(&x.clamp(-1.0, 1.0), &[-1.0, -1.0, 0.0, 1.0, 1.0], 0.0);
    assert_close(
        &clamp_vjp(&g, &x, -1.0, 1.0),
        &[0.0, 2.0, 3.0, 4.0, 0.0],
        0.0,
    );
    assert_close(
        &clamp_jvp(&x, -1.0, 1.0, &g),
        &[0.0, 2.0, 3.0, 4.0, 0.0],
        0.0,
    );
    // lo > hi: min(max(x, lo), hi) is the constant hi, whose gradient is zero.
    assert_close(&x.clamp(1.0, -1.0), &[-1.0; 5], 0.0);
    assert_close(&clamp_vjp(&g, &x, 1.0, -1.0), &[0.0; 5], 0.0);
}

/// `d/dx x^p = p·x^(p-1)` at `x = 0`: 0 for p > 1, 1 for p = 1, inf for p < 1, and 0 for the
/// constant p = 0; a zero cotangent stays zero against the infinity.
#[test]
fn powf_at_zero() {
    let zero = tensor::<f64>(&[0.0], &[1]);
    let one = tensor::<f64>(&[1.0], &[1]);
    assert_close(&powf_vjp(&one, &zero, 2.0), &[0.0], 0.0);
    assert_close(&powf_vjp(&one, &zero, 1.0), &[1.0], 0.0);
    assert_close(&powf_vjp(&one, &zero, 0.0), &[0.0], 0.0);
    assert_close(&zero.powf(0.0), &[1.0], 0.0);
    assert_eq!(powf_vjp(&one, &zero, 0.5).item(), f64::INFINITY);
    assert_close(&powf_vjp(&zero, &zero, 0.5), &[0.0], 0.0);
    assert_close(&powf_jvp(&zero, -1.0, &zero), &[0.0], 0.0);
    // Away from 0: d/dx x^3 at x = -2 is 12, d/dx x^-1 at 4 is -1/16.
    let x = tensor::<f64>(&[-2.0, 4.0], &[2]);
    assert_close(&powf_vjp(&Tensor::ones(&[2]), &x, 3.0), &[12.0, 48.0], 0.0);
    assert_close(
        &powf_jvp(&x, -1.0, &Tensor::ones(&[2])),
        &[-0.25, -1.0 / 16.0],
        1e-15,
    );
}

/// sqrt and ln are singular at 0: a zero tangent stays zero (strong zero), a nonzero one is inf.
#[test]
fn singular_derivatives_keep_strong_zeros() {
    let x = tensor::<f64>(&[0.0, 0.0], &[2]);
    let g = tensor::<f64>(&[0.0, 1.0], &[2]);
    let s = sqrt_vjp(&g, &x.sqrt()).to_vec();
    assert_eq!(s, vec![0.0, f64::INFINITY]);
    let l = ln_jvp(&x, &g).to_vec();
    assert_eq!(l, vec![0.0, f64::INFINITY]);
}

#[test]
fn rule_shape_mismatch_names_the_rule_and_shapes() {
    let g = Tensor::<f64>::ones(&[2, 3]);
    let y = Tensor::<f64>::ones(&[3]);
    let panic = std::panic::catch_unwind(|| exp_vjp(&g, &y)).unwrap_err();
    let msg = panic.downcast_ref::<String>().unwrap();
    assert!(
        msg.starts_with("exp_vjp:") && msg.contains("[2, 3]") && msg.contains("[3]"),
        "{msg}"
    );
    let panic = std::panic::catch_unwind(|| clamp_jvp(&y, 0.0, 1.0, &g)).unwrap_err();
    let msg = panic.downcast_ref::<String>().unwrap();
    assert!(
        msg.starts_with("clamp_jvp:") && msg.contains("[2, 3]"),
        "{msg}"
    );
}

/// Rules pair elements by logical position when an input is stored transposed.
#[test]
fn rules_pair_elements_of_transposed_inputs() {
    // Logical [[1, 3, 5], [2, 4, 6]], stored column-major.
    let stored = ndarray::Array2::from_shape_vec((3, 2), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        .unwrap()
        .reversed_axes()
        .into_dyn();
    let x = Tensor::<f64>::from_array(stored);
    let g = tensor::<f64>(&[1.0, 10.0, 100.0, 1e3, 1e4, 1e5], &[2, 3]);
    assert_close(&x.square(), &[1.0, 9.0, 25.0, 4.0, 16.0, 36.0], 0.0);
    assert_close(&square_vjp(&g, &x), &[2.0, 60.0, 1e3, 4e3, 8e4, 1.2e6], 0.0);
}

/// `sigmoid` and `tanh` rules read their input, not the rounded output: where the output rounds
/// to `±1` the derivative keeps its relative precision (`1 - y²` and `y(1 - y)` would give 0),
/// and where the exact derivative underflows they give 0, never NaN.
#[test]
fn sigmoid_and_tanh_rules_at_large_inputs() {
    fn check<T: Element>(magnitudes: &[f64]) {
        for &c in magnitudes {
            let x = tensor::<T>(&[c, -c], &[2]);
            let g = Tensor::ones(&[2]);
            assert_close(&x.sigmoid(), &[1.0, 0.0], 0.0);
            assert_close(&sigmoid_vjp(&g, &x), &[0.0, 0.0], 0.0);
            assert_close(&sigmoid_jvp(&x, &g), &[0.0, 0.0], 0.0);
            assert_close(&x.tanh(), &[1.0, -1.0], 0.0);
            assert_close(&tanh_vjp(&g, &x), &[0.0, 0.0], 0.0);
            assert_close(&tanh_jvp(&x, &g), &[0.0, 0.0], 0.0);
        }
    }
    check::<f32>(&[1e4, 1e8]);
    check::<f64>(&[1e4, 1e8, 1e17]);
}

/// Where `tanh` and `sigmoid` round to `±1` but the derivative is still a normal number, the
/// rules match the exact derivative to a few ulps: `sech²(x) = 4e^(-2|x|) / (1 + e^(-2|x|))²`
/// and `σ'(x) = e^(-|x|) / (1 + e^(-|x|))²`, evaluated in f64 for the f32 case, and their leading
/// terms in f64.
#[test]
fn sigmoid_and_tanh_rules_keep_precision_where_the_output_saturates() {
    // f32: tanh(10) and sigmoid(20) round to 1, their derivatives are ~8e-9 and ~2e-9.
    for c in [10.0f64, 20.0, 40.0] {
        let x = tensor::<f32>(&[c, -c], &[2]);
        let g = Tensor::<f32>::ones(&[2]);
        let xf = c;
        let e2 = (-2.0 * xf).exp();
        let sech2 = 4.0 * e2 / ((1.0 + e2) * (1.0 + e2));
        let e1 = (-xf).exp();
        let dsig = e1 / ((1.0 + e1) * (1.0 + e1));
        for (got, want) in [
            (tanh_vjp(&g, &x).to_vec(), sech2),
            (tanh_jvp(&x, &g).to_vec(), sech2),
            (sigmoid_vjp(&g, &x).to_vec(), dsig),
            (sigmoid_jvp(&x, &g).to_vec(), dsig),
        ] {
            for v in got {
                let rel = (v as f64 - want).abs() / want;
                assert!(
                    rel < 1e-6,
                    "x = ±{c}: {v} vs {want} (relative error {rel:e})"
                );
            }
        }
    }
    // f64: tanh(20) and sigmoid(40) round to 1. The leading terms `4e^(-2x)` and `e^(-x)` are
    // exact to double precision there (the next terms are smaller by `2e^(-2x)`, `2e^(-x)`).
    for (c, sigmoid_too) in [(20.0f64, false), (40.0, true), (300.0, true)] {
        let x = tensor::<f64>(&[c, -c], &[2]);
        let g = Tensor::<f64>::ones(&[2]);
        let mut checks = vec![(tanh_vjp(&g, &x).to_vec(), 4.0 * (-2.0 * c).exp())];
        if sigmoid_too {
            checks.push((sigmoid_vjp(&g, &x).to_vec(), (-c).exp()));
        }
        for (got, want) in checks {
            for v in got {
                let rel = (v - want).abs() / want;
                assert!(
                    rel < 1e-13,
                    "x = ±{c}: {v} vs {want} (relative error {rel:e})"
                );
            }
        }
    }
}

/// `softplus` at large `|x|` and at 0, against values worked out by hand: `softplus(x) = x +
/// ln(1 + e^-x)` is `x` to working precision for large `x` and `e^x(1 - e^x/2)` for very negative
/// `x`; its derivative is `sigmoid(x)`: `1/2` at 0, `1` and `0` far out, `e^x` in the negative
/// tail. A naive `ln(1 + e^x)` overflows to `inf` at `x = 1000` and underflows to `0` at `-40`
/// in f32.
#[test]
fn softplus_is_stable_for_large_inputs() {
    fn check<T: Element>() {
        let x = tensor::<T>(&[1000.0, -1000.0, 0.0, 1e4, -1e4], &[5]);
        assert_close(&x.softplus(), &[1000.0, 0.0, 2f64.ln(), 1e4, 0.0], 1e-6);
        let g = Tensor::ones(&[5]);
        assert_close(&softplus_vjp(&g, &x), &[1.0, 0.0, 0.5, 1.0, 0.0], 0.0);
        assert_close(&softplus_jvp(&x, &g), &[1.0, 0.0, 0.5, 1.0, 0.0], 0.0);
    }
    check::<f32>();
    check::<f64>();
    // The negative tail keeps its relative precision: softplus(-40) = e^-40 (1 - e^-40 / 2).
    let x = tensor::<f32>(&[-40.0], &[1]);
    let (y, d) = (
        x.softplus().item() as f64,
        softplus_vjp(&Tensor::ones(&[1]), &x).item() as f64,
    );
    let want = (-40f64).exp();
    assert!((y - want).abs() <= 1e-6 * want, "{y} vs {want}");
    assert!((d - want).abs() <= 1e-6 * want, "{d} vs {want}");
}
