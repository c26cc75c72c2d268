//! The unary ops: every op's rules against finite differences away from kinks, and hand-derived
//! values at the kinks and singular points.

use rune_runtime::__private::rules::*;
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
        cbrt, cbrt_jvp, cbrt_vjp, Y, -3.0, 3.0;
        silu, silu_jvp, silu_vjp, X, -4.0, 4.0;
        gelu, gelu_jvp, gelu_vjp, X, -4.0, 4.0;
        gelu_tanh, gelu_tanh_jvp, gelu_tanh_vjp, X, -4.0, 4.0;
        recip, recip_jvp, recip_vjp, Y, 0.5, 2.0;
        square, square_jvp, square_vjp, X, -2.0, 2.0;
        softplus, softplus_jvp, softplus_vjp, X, -3.0, 3.0;
        expm1, expm1_jvp, expm1_vjp, X, -2.0, 2.0;
        log_sigmoid, log_sigmoid_jvp, log_sigmoid_vjp, X, -4.0, 4.0;
        erf, erf_jvp, erf_vjp, X, -2.0, 2.0;
        erfc, erfc_jvp, erfc_vjp, X, -2.0, 2.0;
        erfinv, erfinv_jvp, erfinv_vjp, Y, -0.9, 0.9;
        lgamma, lgamma_jvp, lgamma_vjp, X, 0.5, 4.0;
        digamma, digamma_jvp, digamma_vjp, X, 0.5, 4.0;
        sinh, sinh_jvp, sinh_vjp, X, -2.0, 2.0;
        cosh, cosh_jvp, cosh_vjp, X, -2.0, 2.0;
        asinh, asinh_jvp, asinh_vjp, X, -3.0, 3.0;
        acosh, acosh_jvp, acosh_vjp, X, 1.2, 3.0;
        atanh, atanh_jvp, atanh_vjp, X, -0.8, 0.8;
        asin, asin_jvp, asin_vjp, X, -0.8, 0.8;
        acos, acos_jvp, acos_vjp, X, -0.8, 0.8;
        atan, atan_jvp, atan_vjp, X, -3.0, 3.0;
    }
    // `lgamma` and `digamma` between the poles at negative `x` too.
    let x = tensor(&[-2.6, -1.7, -0.4, -0.55, -3.3, -1.2], &[2, 3]);
    push(
        &mut cases,
        ("lgamma", "[2, 3] between negative poles"),
        Tensor::lgamma,
        lgamma_jvp,
        lgamma_vjp,
        Reads::X,
        x.clone(),
    );
    push(
        &mut cases,
        ("digamma", "[2, 3] between negative poles"),
        Tensor::digamma,
        digamma_jvp,
        digamma_vjp,
        Reads::X,
        x,
    );
    // Piecewise-constant ops, on inputs at least 0.1 from their jumps (integers, and the halves
    // for `round`): the finite differences are zero there, as the rules say.
    let steps = tensor(&[-2.7, -1.3, -0.4, 0.35, 1.2, 2.6], &[2, 3]);
    for (name, f, jvp, vjp) in [
        (
            "sign",
            Tensor::sign as Forward<T>,
            sign_jvp as Rule<T>,
            sign_vjp as Rule<T>,
        ),
        ("signum", Tensor::signum, signum_jvp, signum_vjp),
        ("floor", Tensor::floor, floor_jvp, floor_vjp),
        ("ceil", Tensor::ceil, ceil_jvp, ceil_vjp),
        ("round", Tensor::round, round_jvp, round_vjp),
        (
            "round_ties_even",
            Tensor::round_ties_even,
            round_ties_even_jvp,
            round_ties_even_vjp,
        ),
    ] {
        push(
            &mut cases,
            (name, "[2, 3] away from jumps"),
            f,
            jvp,
            vjp,
            Reads::X,
            steps.clone(),
        );
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

/// The special functions at points where their values and derivatives are known in closed form
/// or to many digits (Abramowitz and Stegun; `ψ(1) = -γ`, `ψ'(1) = π²/6`), in f64 and f32.
#[test]
fn special_functions_at_known_points() {
    const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;
    let pi = std::f64::consts::PI;
    fn check<T: Element>(tol: f64) {
        let pi = std::f64::consts::PI;
        let x = tensor::<T>(&[0.5, 0.0, -0.5], &[3]);
        let ones = Tensor::ones(&[3]);
        assert_close(
            &x.erf(),
            &[0.520_499_877_813_046_5, 0.0, -0.520_499_877_813_046_5],
            tol,
        );
        assert_close(
            &erf_vjp(&ones, &x),
            &[
                2.0 / pi.sqrt() * (-0.25f64).exp(),
                2.0 / pi.sqrt(),
                2.0 / pi.sqrt() * (-0.25f64).exp(),
            ],
            tol,
        );
        assert_close(
            &x.erfc(),
            &[1.0 - 0.520_499_877_813_046_5, 1.0, 1.520_499_877_813_046_5],
            tol,
        );
        assert_close(
            &x.erfinv(),
            &[0.476_936_276_204_469_9, 0.0, -0.476_936_276_204_469_9],
            tol,
        );
        // erfinv'(0) = √π/2.
        assert_close(
            &erfinv_vjp(&ones, &x.erfinv()),
            &[
                pi.sqrt() / 2.0 * 0.476_936_276_204_469_9f64.powi(2).exp(),
                pi.sqrt() / 2.0,
                pi.sqrt() / 2.0 * 0.476_936_276_204_469_9f64.powi(2).exp(),
            ],
            tol,
        );
        // Γ(1/2) = √π, Γ(-1/2) = -2√π, Γ(100) = 99!.
        let x = tensor::<T>(&[0.5, -0.5, 100.0, 1.0], &[4]);
        assert_close(
            &x.lgamma(),
            &[
                pi.sqrt().ln(),
                (2.0 * pi.sqrt()).ln(),
                359.134_205_369_575_4,
                0.0,
            ],
            tol,
        );
        // ψ(1/2) = -γ - 2 ln 2, ψ(-1/2) = ψ(1/2) + 2, ψ(100) = H_99 - γ, ψ(1) = -γ.
        let h99: f64 = (1..100).map(|k| 1.0 / k as f64).sum();
        let psi = [
            -EULER_GAMMA - 2.0 * LN2,
            -EULER_GAMMA - 2.0 * LN2 + 2.0,
            h99 - EULER_GAMMA,
            -EULER_GAMMA,
        ];
        assert_close(&x.digamma(), &psi, tol);
        assert_close(&lgamma_vjp(&Tensor::ones(&[4]), &x), &psi, tol);
        // ψ'(1/2) = π²/2, ψ'(-1/2) = π²/2 + 4, ψ'(1) = π²/6.
        let trigamma = digamma_jvp(&x, &Tensor::ones(&[4])).to_vec();
        for (got, want) in [
            (0, pi * pi / 2.0),
            (1, pi * pi / 2.0 + 4.0),
            (3, pi * pi / 6.0),
        ] {
            let got = trigamma[got].to_real();
            assert!((got - want).abs() <= tol * want, "{got} vs {want}");
        }
    }
    check::<f64>(1e-14);
    check::<f32>(1e-6);
    let _ = (pi, EULER_GAMMA);
}

/// Where the naive formulas overflow, underflow to zero or cancel, the ops and their rules keep
/// their relative precision, in f32 and f64.
#[test]
fn special_and_inverse_functions_are_stable_at_extreme_inputs() {
    fn check<T: Element>(tol: f64) {
        // log_sigmoid(x) = -softplus(-x): -e^-1000 ≈ 0 and -1000 far out; -ln 2 at 0. Its
        // derivative sigmoid(-x) is 0, 1 and 1/2 there; a naive ln(1 / (1 + e^-x)) is -inf at
        // -1000.
        let x = tensor::<T>(&[1000.0, -1000.0, 0.0, 1e4, -1e4], &[5]);
        assert_close(&x.log_sigmoid(), &[0.0, -1000.0, -LN2, 0.0, -1e4], tol);
        let g = Tensor::ones(&[5]);
        assert_close(&log_sigmoid_vjp(&g, &x), &[0.0, 1.0, 0.5, 0.0, 1.0], 0.0);
        assert_close(&log_sigmoid_jvp(&x, &g), &[0.0, 1.0, 0.5, 0.0, 1.0], 0.0);
        // The ends of erf's range: erfinv(±1) = ±inf, NaN beyond, erfc(-inf) = 2.
        let x = tensor::<T>(&[1.0, -1.0], &[2]);
        assert_eq!(
            x.erfinv()
                .to_vec()
                .iter()
                .map(|v| v.to_real())
                .collect::<Vec<_>>(),
            vec![f64::INFINITY, f64::NEG_INFINITY]
        );
        assert!(tensor::<T>(&[1.5], &[1]).erfinv().item().is_nan());
        // Large arguments of the inverse functions: acosh'(x) = 1/√(x² - 1) and asinh'(x) =
        // 1/√(x² + 1) are 1/x, atan'(x) = 1/(1 + x²) is 1/x², where x² overflows (2e19 in f32,
        // 2e160 in f64).
        let big = if T::NAME == "f32" { 2e19 } else { 2e160 };
        let x = tensor::<T>(&[big], &[1]);
        let one = Tensor::ones(&[1]);
        for (got, want) in [
            (acosh_vjp(&one, &x).item(), 1.0 / big),
            (asinh_vjp(&one, &x).item(), 1.0 / big),
            (atan_vjp(&one, &x).item(), 1.0 / big / big),
        ] {
            let got = got.to_real();
            assert!((got - want).abs() <= 1e-5 * want, "{got} vs {want}");
        }
        // The piecewise-constant ops: `round` takes halves away from zero as `f64::round`,
        // `round_ties_even` to even, sign(0) = 0, NaN kept; their derivative is zero even
        // against an infinite cotangent.
        let x = tensor::<T>(&[2.5, -2.5, 0.5, 1.5, -0.7, 0.0], &[6]);
        assert_close(&x.round(), &[3.0, -3.0, 1.0, 2.0, -1.0, 0.0], 0.0);
        assert_close(&x.round_ties_even(), &[2.0, -2.0, 0.0, 2.0, -1.0, 0.0], 0.0);
        let halves = [
            2.5,
            -2.5,
            0.5,
            1.5,
            -0.7,
            0.0,
            0.49999999999999994,
            4503599627370497.0,
        ];
        for v in halves {
            let t = tensor::<T>(&[v], &[1]);
            let v = T::from_f64(v);
            assert_eq!(t.round().item(), num_traits::Float::round(v), "round({v})");
        }
        assert_close(&x.floor(), &[2.0, -3.0, 0.0, 1.0, -1.0, 0.0], 0.0);
        assert_close(&x.ceil(), &[3.0, -2.0, 1.0, 2.0, -0.0, 0.0], 0.0);
        assert_close(&x.sign(), &[1.0, -1.0, 1.0, 1.0, -1.0, 0.0], 0.0);
        let zeros = tensor::<T>(&[0.0, -0.0, f64::NAN], &[3]).signum().to_vec();
        assert!(zeros[0] == T::one() && zeros[1] == -T::one() && zeros[2].is_nan());
        assert!(tensor::<T>(&[f64::NAN], &[1]).sign().item().is_nan());
        let inf = Tensor::full(&[6], T::infinity());
        for d in [
            sign_vjp(&inf, &x),
            floor_vjp(&inf, &x),
            ceil_jvp(&x, &inf),
            round_jvp(&x, &inf),
            round_ties_even_vjp(&inf, &x),
        ] {
            assert_close(&d, &[0.0; 6], 0.0);
        }
    }
    check::<f32>(1e-6);
    check::<f64>(1e-14);

    // Tails in f64: log_sigmoid(40) = -e^-40 (1 - e^-40/2), expm1(1e-10) = 1e-10 + 5e-21 and
    // expm1'(-40) = e^-40 (where 1 + expm1(x) rounds to 0), erfc(10) = 2.0884875837625448e-45
    // (where 1 - erf(10) is 0), erfinv(1 - 1e-15) with erfc(erfinv(1 - d)) = d.
    let tail = |got: f64, want: f64, tol: f64| {
        assert!((got - want).abs() <= tol * want.abs(), "{got} vs {want}");
    };
    let at = |v: f64| tensor::<f64>(&[v], &[1]);
    let one = Tensor::<f64>::ones(&[1]);
    tail(at(40.0).log_sigmoid().item(), -(-40f64).exp(), 1e-15);
    tail(at(1e-10).expm1().item(), 1e-10 + 5e-21, 1e-15);
    tail(expm1_vjp(&one, &at(-40.0)).item(), (-40f64).exp(), 1e-15);
    tail(at(10.0).erfc().item(), 2.088_487_583_762_545e-45, 1e-13);
    let d = 1.0 - (1.0 - 1e-15);
    let z = at(1.0 - d).erfinv();
    tail(z.erfc().item(), d, 1e-13);
    // f32 keeps the same tails in single precision.
    let at32 = |v: f32| tensor::<f32>(&[v as f64], &[1]);
    tail(
        at32(20.0).log_sigmoid().item() as f64,
        -(-20f64).exp(),
        1e-6,
    );
    tail(at32(1e-6).expm1().item() as f64, 1e-6 + 5e-13, 1e-6);
    tail(
        at32(5.0).erfc().item() as f64,
        1.537_459_794_428_034_8e-12,
        1e-5,
    );
}

/// Forward mode on dual numbers (what `f_jvp` of generic code and `f_hvp` run) takes every new
/// function's tangent from the same scalar derivative as the rules, and nests: second
/// derivatives on `Dual<Dual<f64>>` match hand-derived ones.
#[test]
fn dual_numbers_differentiate_the_special_functions() {
    use rune_runtime::{dual_of, tangent_of, Dual};
    type Op = fn(&Tensor<f64>) -> Tensor<f64>;
    type DualOp = fn(&Tensor<Dual<f64>>) -> Tensor<Dual<f64>>;
    type Jvp = fn(&Tensor<f64>, &Tensor<f64>) -> Tensor<f64>;
    let x = tensor::<f64>(&[0.3, 0.7, -0.45], &[3]);
    let v = tensor::<f64>(&[1.0, -2.0, 0.5], &[3]);
    let cases: [(&str, Op, DualOp, Jvp, bool); 19] = [
        ("expm1", Tensor::expm1, Tensor::expm1, expm1_jvp, false),
        (
            "log_sigmoid",
            Tensor::log_sigmoid,
            Tensor::log_sigmoid,
            log_sigmoid_jvp,
            false,
        ),
        ("erf", Tensor::erf, Tensor::erf, erf_jvp, false),
        ("erfc", Tensor::erfc, Tensor::erfc, erfc_jvp, false),
        ("erfinv", Tensor::erfinv, Tensor::erfinv, erfinv_jvp, true),
        ("lgamma", Tensor::lgamma, Tensor::lgamma, lgamma_jvp, false),
        (
            "digamma",
            Tensor::digamma,
            Tensor::digamma,
            digamma_jvp,
            false,
        ),
        ("sinh", Tensor::sinh, Tensor::sinh, sinh_jvp, false),
        ("cosh", Tensor::cosh, Tensor::cosh, cosh_jvp, false),
        ("asinh", Tensor::asinh, Tensor::asinh, asinh_jvp, false),
        (
            "acosh",
            |x| (x + 2.0).acosh(),
            |x| (x + 2.0).acosh(),
            |x, v| acosh_jvp(&(x + 2.0), v),
            false,
        ),
        ("atanh", Tensor::atanh, Tensor::atanh, atanh_jvp, false),
        ("asin", Tensor::asin, Tensor::asin, asin_jvp, false),
        ("acos", Tensor::acos, Tensor::acos, acos_jvp, false),
        ("atan", Tensor::atan, Tensor::atan, atan_jvp, false),
        ("sign", Tensor::sign, Tensor::sign, sign_jvp, false),
        ("floor", Tensor::floor, Tensor::floor, floor_jvp, false),
        ("ceil", Tensor::ceil, Tensor::ceil, ceil_jvp, false),
        ("round", Tensor::round, Tensor::round, round_jvp, false),
    ];
    for (name, f, fd, jvp, reads_y) in cases {
        let y = fd(&dual_of(&x, &v));
        let at = if reads_y { f(&x) } else { x.clone() };
        assert_eq!(
            rune_runtime::primal_of(&y).to_vec(),
            f(&x).to_vec(),
            "{name}: value"
        );
        assert_close(&tangent_of(&y), &jvp(&at, &v).to_vec(), 1e-15);
    }

    // Second derivatives: erf'' = -2x erf', lgamma'' = ψ'(x) (π²/6 at 1), digamma'' = ψ''(x)
    // (-2ζ(3) at 1), log_sigmoid'' = -σ(x)σ(-x), atan'' = -2x / (1 + x²)².
    let second = |f: fn(Dual<Dual<f64>>) -> Dual<Dual<f64>>, x: f64| {
        let d = Dual::new(Dual::variable(x), Dual::new(1.0, 0.0));
        f(d).du.du
    };
    let close = |got: f64, want: f64| {
        assert!(
            (got - want).abs() <= 1e-13 * want.abs().max(1.0),
            "{got} vs {want}"
        )
    };
    let pi = std::f64::consts::PI;
    let e = |x: f64| 2.0 / pi.sqrt() * (-x * x).exp();
    close(second(Element::erf, 0.7), -2.0 * 0.7 * e(0.7));
    close(second(Element::erfc, 0.7), 2.0 * 0.7 * e(0.7));
    close(second(Element::ln_gamma, 1.0), pi * pi / 6.0);
    close(
        second(|x| Element::polygamma(x, 0), 1.0),
        -2.0 * 1.202_056_903_159_594_3,
    );
    let s = |x: f64| 1.0 / (1.0 + (-x).exp());
    let log_sigmoid = |x: Dual<Dual<f64>>| {
        let t = Tensor::from_vec(vec![x], &[1]).log_sigmoid();
        t.item()
    };
    close(second(log_sigmoid, 0.4), -s(0.4) * s(-0.4));
    close(second(num_traits::Float::atan, 0.4), -0.8 / (1.16 * 1.16));
}

/// The activations of transformers against values worked out independently: `Φ(1)`, `Φ(-1)` of
/// the normal distribution, the tanh form at 1, and `1 / (1 + e^-1)`.
#[test]
fn gelu_and_silu_values() {
    let x = Tensor::from_vec(vec![1.0f64, -1.0, 0.0], &[3]);
    let close = |got: Vec<f64>, want: [f64; 3]| {
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-15, "{got:?} vs {want:?}");
        }
    };
    close(
        x.gelu().to_vec(),
        [0.841_344_746_068_542_9, -0.158_655_253_931_457_05, 0.0],
    );
    close(
        x.gelu_tanh().to_vec(),
        [0.841_191_990_608_276_8, -0.158_808_009_391_723_2, 0.0],
    );
    close(
        x.silu().to_vec(),
        [0.731_058_578_630_004_9, -0.268_941_421_369_995_1, 0.0],
    );
    // The derivatives at 0: Φ(0) = 1/2 for both GELUs, σ(0) = 1/2 for SiLU.
    let zero = Tensor::from_vec(vec![0.0f64], &[1]);
    let one = Tensor::ones(&[1]);
    for d in [
        gelu_vjp(&one, &zero),
        gelu_tanh_vjp(&one, &zero),
        silu_vjp(&one, &zero),
    ] {
        assert_eq!(d.item(), 0.5);
    }
}
