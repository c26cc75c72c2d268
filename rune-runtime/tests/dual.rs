//! Dual numbers: every `Float` method's derivative against its closed form (f32 and f64),
//! higher derivatives by nesting, strong zeros, and tensors of duals through the arithmetic ops.

use std::f64::consts::{LN_10, LN_2, PI};

use num_traits::{Float, Num, NumCast, One, ToPrimitive, Zero};
use rune_runtime::__private::rules::{mul_jvp, mul_vjp_lhs, mul_vjp_rhs};
use rune_runtime::__private::strong_mul;
use rune_runtime::{check_grad, grad_fn, Dual, Element, Tensor};

type Unary<T> = fn(Dual<T>) -> Dual<T>;
type Binary<T> = fn(Dual<T>, Dual<T>) -> Dual<T>;

/// `(name, f, x, f(x), f'(x))` with the value and derivative written in closed form.
fn unary_cases<T: Element>() -> Vec<(&'static str, Unary<T>, f64, f64, f64)> {
    let sec2 = |x: f64| 1.0 / (x.cos() * x.cos());
    vec![
        ("exp", |x| x.exp(), 0.7, 0.7f64.exp(), 0.7f64.exp()),
        (
            "exp2",
            |x| x.exp2(),
            1.3,
            1.3f64.exp2(),
            1.3f64.exp2() * LN_2,
        ),
        (
            "exp_m1",
            |x| x.exp_m1(),
            -0.4,
            (-0.4f64).exp() - 1.0,
            (-0.4f64).exp(),
        ),
        ("ln", |x| x.ln(), 2.5, 2.5f64.ln(), 1.0 / 2.5),
        ("ln_1p", |x| x.ln_1p(), 0.25, 1.25f64.ln(), 1.0 / 1.25),
        (
            "log2",
            |x| x.log2(),
            3.0,
            3f64.ln() / LN_2,
            1.0 / (3.0 * LN_2),
        ),
        (
            "log10",
            |x| x.log10(),
            7.0,
            7f64.ln() / LN_10,
            1.0 / (7.0 * LN_10),
        ),
        ("sqrt", |x| x.sqrt(), 2.25, 1.5, 1.0 / 3.0),
        ("cbrt", |x| x.cbrt(), 8.0, 2.0, 1.0 / 12.0),
        ("cbrt of a negative", |x| x.cbrt(), -27.0, -3.0, 1.0 / 27.0),
        ("recip", |x| x.recip(), -0.5, -2.0, -4.0),
        ("powi 3", |x| x.powi(3), -1.5, -3.375, 6.75),
        ("powi -2", |x| x.powi(-2), 2.0, 0.25, -0.25),
        ("powi 1", |x| x.powi(1), 0.0, 0.0, 1.0),
        ("powi 0", |x| x.powi(0), 0.0, 1.0, 0.0),
        (
            "powi i32::MIN at 1",
            |x| x.powi(i32::MIN),
            1.0,
            1.0,
            -2147483648.0,
        ),
        (
            "powf constant exponent",
            |x| x.powf(Dual::from_f64(2.5)),
            1.7,
            1.7f64.powf(2.5),
            2.5 * 1.7f64.powf(1.5),
        ),
        (
            "powf negative base, integer exponent",
            |x| x.powf(Dual::from_f64(3.0)),
            -2.0,
            -8.0,
            12.0,
        ),
        (
            "x^x",
            |x| x.powf(x),
            1.3,
            1.3f64.powf(1.3),
            1.3f64.powf(1.3) * (1.3f64.ln() + 1.0),
        ),
        (
            "log base 3",
            |x| x.log(Dual::from_f64(3.0)),
            5.0,
            5f64.ln() / 3f64.ln(),
            1.0 / (5.0 * 3f64.ln()),
        ),
        ("sin", |x| x.sin(), 0.9, 0.9f64.sin(), 0.9f64.cos()),
        ("cos", |x| x.cos(), 0.9, 0.9f64.cos(), -0.9f64.sin()),
        (
            "sin_cos.0",
            |x| x.sin_cos().0,
            2.1,
            2.1f64.sin(),
            2.1f64.cos(),
        ),
        (
            "sin_cos.1",
            |x| x.sin_cos().1,
            2.1,
            2.1f64.cos(),
            -2.1f64.sin(),
        ),
        ("tan", |x| x.tan(), 1.1, 1.1f64.tan(), sec2(1.1)),
        ("asin", |x| x.asin(), 0.6, 0.6f64.asin(), 1.0 / 0.8),
        ("acos", |x| x.acos(), -0.6, (-0.6f64).acos(), -1.0 / 0.8),
        ("atan", |x| x.atan(), 2.0, 2f64.atan(), 0.2),
        ("sinh", |x| x.sinh(), 0.8, 0.8f64.sinh(), 0.8f64.cosh()),
        ("cosh", |x| x.cosh(), -0.8, 0.8f64.cosh(), -0.8f64.sinh()),
        (
            "tanh",
            |x| x.tanh(),
            0.6,
            0.6f64.tanh(),
            1.0 / (0.6f64.cosh() * 0.6f64.cosh()),
        ),
        ("asinh", |x| x.asinh(), 0.75, 0.75f64.asinh(), 0.8),
        ("acosh", |x| x.acosh(), 1.25, 1.25f64.acosh(), 1.0 / 0.75),
        ("atanh", |x| x.atanh(), 0.5, 0.5f64.atanh(), 1.0 / 0.75),
        ("abs of a negative", |x| x.abs(), -2.0, 2.0, -1.0),
        ("abs of a positive", |x| x.abs(), 3.0, 3.0, 1.0),
        // The registry's derivative at the kink, which the rules use too (JAX takes 1 there).
        ("abs at zero", |x| x.abs(), 0.0, 0.0, 0.0),
        ("floor", |x| x.floor(), 2.7, 2.0, 0.0),
        ("ceil", |x| x.ceil(), 2.2, 3.0, 0.0),
        ("round", |x| x.round(), -2.6, -3.0, 0.0),
        ("trunc", |x| x.trunc(), -2.6, -2.0, 0.0),
        ("signum", |x| x.signum(), -2.6, -1.0, 0.0),
        ("fract", |x| x.fract(), 2.75, 0.75, 1.0),
        ("to_degrees", |x| x.to_degrees(), PI, 180.0, 180.0 / PI),
        ("to_radians", |x| x.to_radians(), 90.0, PI / 2.0, PI / 180.0),
        ("neg", |x| -x, 1.5, -1.5, -1.0),
        (
            "clamp above",
            |x| x.clamp(Dual::from_f64(0.0), Dual::from_f64(3.0)),
            5.0,
            3.0,
            0.0,
        ),
        (
            "clamp inside",
            |x| x.clamp(Dual::from_f64(0.0), Dual::from_f64(3.0)),
            1.0,
            1.0,
            1.0,
        ),
        (
            "copysign",
            |x| x.copysign(Dual::from_f64(-1.0)),
            2.0,
            -2.0,
            -1.0,
        ),
        ("x*x*x", |x| x * x * x, 1.5, 3.375, 6.75),
        ("1/x", |x| Dual::one() / x, 4.0, 0.25, -1.0 / 16.0),
    ]
}

/// `(name, f, x, y, f(x, y), ∂f/∂x, ∂f/∂y)` in closed form.
type BinaryCase<T> = (&'static str, Binary<T>, f64, f64, f64, f64, f64);

fn binary_cases<T: Element>() -> Vec<BinaryCase<T>> {
    vec![
        ("add", |x, y| x + y, 1.5, -2.0, -0.5, 1.0, 1.0),
        ("sub", |x, y| x - y, 1.5, -2.0, 3.5, 1.0, -1.0),
        ("mul", |x, y| x * y, 1.5, -2.0, -3.0, -2.0, 1.5),
        ("div", |x, y| x / y, 3.0, -2.0, -1.5, -0.5, -0.75),
        ("rem", |x, y| x % y, 7.5, 2.0, 1.5, 1.0, -3.0),
        ("rem negative", |x, y| x % y, -7.5, 2.0, -1.5, 1.0, 3.0),
        (
            "powf",
            |x, y| x.powf(y),
            1.7,
            2.3,
            1.7f64.powf(2.3),
            2.3 * 1.7f64.powf(1.3),
            1.7f64.powf(2.3) * 1.7f64.ln(),
        ),
        (
            "atan2",
            |y, x| y.atan2(x),
            0.8,
            -1.3,
            0.8f64.atan2(-1.3),
            -1.3 / (0.64 + 1.69),
            -0.8 / (0.64 + 1.69),
        ),
        ("hypot", |x, y| x.hypot(y), 3.0, 4.0, 5.0, 0.6, 0.8),
        (
            "log",
            |x, b| x.log(b),
            5.0,
            2.0,
            5f64.ln() / LN_2,
            1.0 / (5.0 * LN_2),
            -5f64.ln() / (2.0 * LN_2 * LN_2),
        ),
        ("max", |x, y| x.max(y), 1.0, 2.0, 2.0, 0.0, 1.0),
        ("min", |x, y| x.min(y), 1.0, 2.0, 1.0, 1.0, 0.0),
        (
            "abs_sub positive",
            |x, y| x.abs_sub(y),
            3.0,
            1.0,
            2.0,
            1.0,
            -1.0,
        ),
        (
            "abs_sub clipped",
            |x, y| x.abs_sub(y),
            1.0,
            3.0,
            0.0,
            0.0,
            0.0,
        ),
        (
            "mul_add as x*y + 1",
            |x, y| x.mul_add(y, Dual::one()),
            1.5,
            -2.0,
            -2.0,
            -2.0,
            1.5,
        ),
    ]
}

#[track_caller]
fn assert_rel(got: f64, want: f64, tol: f64, what: &str) {
    let ok = if want.is_finite() {
        (got - want).abs() <= tol * (1.0 + want.abs())
    } else {
        got == want
    };
    assert!(ok, "{what}: got {got}, want {want}");
}

fn check_unary<T: Element>(tol: f64) {
    for (name, f, x, value, deriv) in unary_cases::<T>() {
        let y = f(Dual::variable(T::from_f64(x)));
        assert_rel(
            y.re.to_real(),
            value,
            tol,
            &format!("{name} value [{}]", T::NAME),
        );
        assert_rel(
            y.du.to_real(),
            deriv,
            tol,
            &format!("{name}' [{}]", T::NAME),
        );
    }
}

fn check_binary<T: Element>(tol: f64) {
    for (name, f, x, y, value, dx, dy) in binary_cases::<T>() {
        let (x, y) = (T::from_f64(x), T::from_f64(y));
        let wrt_x = f(Dual::variable(x), Dual::constant(y));
        let wrt_y = f(Dual::constant(x), Dual::variable(y));
        let both = f(Dual::variable(x), Dual::variable(y));
        assert_rel(wrt_x.re.to_real(), value, tol, &format!("{name} value"));
        assert_rel(
            wrt_x.du.to_real(),
            dx,
            tol,
            &format!("∂{name}/∂x [{}]", T::NAME),
        );
        assert_rel(
            wrt_y.du.to_real(),
            dy,
            tol,
            &format!("∂{name}/∂y [{}]", T::NAME),
        );
        assert_rel(
            both.du.to_real(),
            dx + dy,
            tol,
            &format!("d{name} [{}]", T::NAME),
        );
    }
}

#[test]
fn float_methods_have_their_closed_form_derivatives_f64() {
    check_unary::<f64>(1e-12);
    check_binary::<f64>(1e-12);
}

#[test]
fn float_methods_have_their_closed_form_derivatives_f32() {
    check_unary::<f32>(2e-6);
    check_binary::<f32>(2e-6);
}

#[test]
fn mul_add_is_differentiable_in_all_three_arguments() {
    let (x, a, b) = (1.5, -2.0, 0.25);
    let y = Dual::new(x, 1.0).mul_add(Dual::new(a, 10.0), Dual::new(b, 100.0));
    assert_eq!(y.re, x * a + b);
    assert_eq!(y.du, a + 10.0 * x + 100.0);
}

/// `x + ε₁ + ε₂ + ε₃`: the `ε₁ε₂ε₃` part of `f` at it is `f'''(x)`.
fn third_order(x: f64) -> Dual<Dual<Dual<f64>>> {
    Dual::new(Dual::new(Dual::variable(x), Dual::one()), Dual::one())
}

#[test]
fn third_derivative_of_x4_at_2_is_48() {
    let x = third_order(2.0);
    let by_mul = x * x * x * x;
    assert_eq!(by_mul.re.re.re, 16.0);
    assert_eq!(by_mul.du.du.du, 48.0);
    // The lower derivatives sit in the other parts: 4x³ = 32 and 12x² = 48.
    assert_eq!(
        (by_mul.du.re.re, by_mul.re.du.re, by_mul.re.re.du),
        (32.0, 32.0, 32.0)
    );
    assert_eq!(
        (by_mul.du.du.re, by_mul.re.du.du, by_mul.du.re.du),
        (48.0, 48.0, 48.0)
    );
    assert_eq!(x.powi(4).du.du.du, 48.0);
    let by_powf = x.powf(Dual::from_f64(4.0));
    assert!((by_powf.du.du.du - 48.0).abs() < 1e-12, "{by_powf:?}");
}

#[test]
fn second_derivatives_by_nesting() {
    let x0 = 0.7_f64;
    let x = Dual::new(Dual::variable(x0), Dual::one());
    // (e^{sin x})'' = e^{sin x} (cos² x - sin x)
    let y = x.sin().exp();
    let want = x0.sin().exp() * (x0.cos().powi(2) - x0.sin());
    assert!((y.du.du - want).abs() < 1e-12, "{} vs {want}", y.du.du);
    // tanh'' = -2 tanh sech²
    let t = x0.tanh();
    assert!((x.tanh().du.du - (-2.0 * t * (1.0 - t * t))).abs() < 1e-12);
    // sqrt'' = -1/4 x^{-3/2}
    assert!((x.sqrt().du.du - (-0.25 * x0.powf(-1.5))).abs() < 1e-12);
    // In f32 too.
    let xf = Dual::new(Dual::variable(0.7_f32), Dual::one());
    assert!((xf.exp().du.du - 0.7f32.exp()).abs() < 1e-6);
}

#[test]
fn mixed_partial_by_nesting() {
    // f(x, y) = x y², ∂²f/∂x∂y = 2y.
    let (x0, y0) = (1.5_f64, -0.5);
    let x = Dual::new(Dual::variable(x0), Dual::zero());
    let y = Dual::new(Dual::constant(y0), Dual::one());
    let f = x * y * y;
    assert_eq!(f.du.du, 2.0 * y0);
    assert_eq!(f.du.re, 2.0 * x0 * y0); // ∂f/∂y
    assert_eq!(f.re.du, y0 * y0); // ∂f/∂x
}

#[test]
fn a_zero_tangent_stays_zero_where_the_local_derivative_is_infinite() {
    let zero = Dual::constant(0.0_f64);
    assert_eq!(zero.sqrt().du, 0.0);
    assert_eq!(zero.ln().du, 0.0);
    assert_eq!(zero.recip().du, 0.0);
    assert_eq!(zero.cbrt().du, 0.0);
    assert_eq!(Dual::constant(1.0_f64).asin().du, 0.0);
    assert_eq!(Dual::constant(-1.0_f64).atanh().du, 0.0);
    assert_eq!(zero.hypot(zero).du, 0.0);
    assert_eq!(zero.atan2(zero).du, 0.0);
    assert_eq!((zero / zero).du, 0.0);
    assert_eq!((zero * Dual::new(f64::INFINITY, 1.0)).du, 0.0);
    // A constant exponent never touches ln(x), so a negative base stays finite ...
    let y = Dual::variable(-2.0_f64).powf(Dual::constant(2.0));
    assert_eq!((y.re, y.du), (4.0, -4.0));
    // ... and, as in JAX, x^0 has derivative 0 in x and 0^p derivative 0 in p.
    assert_eq!(Dual::variable(0.0_f64).powf(Dual::constant(0.0)).du, 0.0);
    assert_eq!(zero.powf(Dual::variable(2.0)).du, 0.0);
    // A nonzero tangent does meet the infinity.
    assert_eq!(Dual::variable(0.0_f64).sqrt().du, f64::INFINITY);
    assert_eq!(Dual::variable(0.0_f64).ln().du, f64::INFINITY);
    assert_eq!(Dual::variable(0.0_f64).recip().du, f64::NEG_INFINITY);
}

#[test]
fn strong_mul_with_a_dual_zero() {
    let inf = Dual::new(f64::INFINITY, 1.0);
    let z = strong_mul(Dual::new(0.0, 0.0), inf);
    assert!(z.is_exact_zero(), "{z:?}");
    let nan = Dual::new(f64::NAN, f64::NAN);
    assert!(strong_mul(Dual::new(-0.0, 0.0), nan).is_exact_zero());
    // Only the primal part is zero: it stays a strong zero in the primal part of the product,
    // as the real product of the primal parts is, while the tangent part meets the infinity.
    let t = strong_mul(Dual::new(0.0, 1.0), inf);
    assert!(t.re == 0.0 && t.du == f64::INFINITY, "{t:?}");
    let p = strong_mul(Dual::new(2.0, 0.0), Dual::new(3.0, 1.0));
    assert_eq!((p.re, p.du), (6.0, 2.0));
    // Nested: zero only when every part is zero.
    let nested_zero: Dual<Dual<f64>> = Dual::zero();
    let nested_inf = Dual::new(inf, inf);
    assert!(strong_mul(nested_zero, nested_inf).is_exact_zero());
    let almost = Dual::new(Dual::new(0.0, 0.0), Dual::new(0.0, 1.0));
    assert!(!strong_mul(almost, nested_inf).is_exact_zero());
}

#[test]
fn comparisons_and_classification_follow_the_primal() {
    let a = Dual::new(1.0_f64, 5.0);
    let b = Dual::new(2.0_f64, -1.0);
    assert!(a < b);
    assert!(b >= Dual::new(2.0, -9.0));
    assert_eq!(a, Dual::new(1.0, -7.0));
    assert_eq!(a.partial_cmp(&Dual::new(f64::NAN, 0.0)), None);
    // relu by a branch: the tangent of the branch taken.
    let relu = |x: Dual<f64>| if x > Dual::zero() { x } else { Dual::zero() };
    assert_eq!(relu(Dual::new(-1.0, 3.0)).du, 0.0);
    assert_eq!(relu(Dual::new(1.0, 3.0)).du, 3.0);
    assert!(!Dual::new(1.0, f64::NAN).is_nan());
    assert!(Dual::new(f64::NAN, 0.0).is_nan());
    assert!(Dual::new(f64::INFINITY, 0.0).is_infinite());
    assert!(Dual::new(1.0, f64::INFINITY).is_finite());
    assert!(Dual::new(1e-310, 1.0).is_subnormal());
    assert!(Dual::new(-0.0, 1.0).is_sign_negative());
    assert_eq!(
        Dual::new(1.5, 9.0).integer_decode(),
        Float::integer_decode(1.5_f64)
    );
    assert_eq!(
        Dual::new(0.0_f64, 1.0).classify(),
        std::num::FpCategory::Zero
    );
}

#[test]
fn max_and_min_at_ties_and_nan() {
    let tie = Dual::new(1.0_f64, 2.0).max(Dual::new(1.0, 4.0));
    assert_eq!((tie.re, tie.du), (1.0, 3.0));
    let tie = Dual::new(1.0_f64, 2.0).min(Dual::new(1.0, 4.0));
    assert_eq!((tie.re, tie.du), (1.0, 3.0));
    let m = Dual::new(f64::NAN, 1.0).max(Dual::new(1.0, 5.0));
    assert_eq!((m.re, m.du), (1.0, 5.0));
    let m = Dual::new(1.0, 5.0).min(Dual::new(f64::NAN, 1.0));
    assert_eq!((m.re, m.du), (1.0, 5.0));
}

#[test]
fn constants_and_identities() {
    type D = Dual<f64>;
    for c in [
        D::nan(),
        D::infinity(),
        D::neg_infinity(),
        D::max_value(),
        D::epsilon(),
    ] {
        assert_eq!(c.du, 0.0);
    }
    assert_eq!(D::epsilon().re, f64::EPSILON);
    assert_eq!(D::min_positive_value().re, f64::MIN_POSITIVE);
    assert_eq!(D::min_value().re, f64::MIN);
    assert!(D::neg_zero().re.is_sign_negative());
    assert!(D::zero().is_zero());
    assert!(!D::new(0.0, 1.0).is_zero());
    assert!(D::one().is_one());
    assert!(!D::new(1.0, 1.0).is_one());
    assert!(!D::new(1.0, 1.0).is_exact_zero());
    assert!(!D::new(1.0, 0.0).is_exact_zero());
    assert!(D::new(-0.0, 0.0).is_exact_zero());
    assert_eq!((D::default().re, D::default().du), (0.0, 0.0));
    let c = D::constant(2.5);
    let v = D::variable(2.5);
    assert_eq!((c.re, c.du, v.re, v.du), (2.5, 0.0, 2.5, 1.0));
}

#[test]
fn element_impl() {
    assert_eq!(<Dual<f64> as Element>::NAME, "Dual");
    assert_eq!(<Dual<f32> as Element>::FD_EPS, f32::FD_EPS);
    assert_eq!(<Dual<Dual<f64>> as Element>::GRAD_TOL, f64::GRAD_TOL);
    let c = <Dual<f32> as Element>::from_f64(0.1);
    assert_eq!((c.re, c.du), (0.1_f32, 0.0));
    assert_eq!(Dual::new(0.1_f32, 7.0).to_real(), 0.1_f32 as f64);
    let nested = Dual::new(Dual::new(2.5_f64, 1.0), Dual::new(3.0, 4.0));
    assert_eq!(nested.to_real(), 2.5);
}

#[test]
fn conversions_take_the_primal_and_make_constants() {
    let x = Dual::new(2.7_f64, 9.0);
    assert_eq!(x.to_i64(), Some(2));
    assert_eq!(x.to_u8(), Some(2));
    assert_eq!(x.to_f64(), Some(2.7));
    assert_eq!(x.to_f32(), Some(2.7_f32));
    assert_eq!(Dual::new(-1.0_f64, 0.0).to_u32(), None);
    let c = <Dual<f64> as NumCast>::from(3_u8).unwrap();
    assert_eq!((c.re, c.du), (3.0, 0.0));
    let c = <Dual<f32> as NumCast>::from(x).unwrap();
    assert_eq!((c.re, c.du), (2.7_f32, 0.0));
    let p = Dual::<f64>::from_str_radix("1.25", 10).unwrap();
    assert_eq!((p.re, p.du), (1.25, 0.0));
    assert!(Dual::<f64>::from_str_radix("one", 10).is_err());
}

#[test]
fn display() {
    assert_eq!(Dual::new(1.5_f64, 2.0).to_string(), "1.5 + 2ε");
    assert_eq!(format!("{:.2}", Dual::new(1.0_f64, -2.0)), "1.00 + -2.00ε");
    let nested = Dual::new(Dual::new(1.0_f64, 2.0), Dual::new(3.0, 4.0));
    assert_eq!(nested.to_string(), "(1 + 2ε) + (3 + 4ε)ε");
}

#[test]
fn sums_products_and_assign_ops() {
    let x = Dual::variable(2.0_f64);
    let xs = [x, x, x];
    let p: Dual<f64> = xs.iter().product();
    assert_eq!((p.re, p.du), (8.0, 12.0));
    let s: Dual<f64> = xs.into_iter().sum();
    assert_eq!((s.re, s.du), (6.0, 3.0));
    let mut y = x;
    y *= x; // x²
    y += Dual::constant(1.0); // x² + 1
    y -= x; // x² - x + 1
    y /= x; // x - 1 + 1/x: derivative 1 - 1/x² = 0.75
    assert_eq!((y.re, y.du), (1.5, 0.75));
    y %= Dual::constant(1.0);
    assert_eq!((y.re, y.du), (0.5, 0.75));
}

/// `f(x) = (x² + 2) / x = x + 2/x`, elementwise, on a tensor of duals seeded with direction `v`.
#[test]
fn tensor_of_duals_gives_the_directional_derivative() {
    let xs = [1.0, 2.0, -3.0];
    let v = [0.5, -1.0, 2.0];
    let x = Tensor::from_vec(
        xs.iter().zip(&v).map(|(&a, &b)| Dual::new(a, b)).collect(),
        &[3],
    );
    let two = Dual::constant(2.0);
    let y = (&x * &x + two) / &x;
    for ((yi, &xi), &vi) in y.to_vec().iter().zip(&xs).zip(&v) {
        assert!((yi.re - (xi + 2.0 / xi)).abs() < 1e-14);
        assert!((yi.du - (1.0 - 2.0 / (xi * xi)) * vi).abs() < 1e-14, "{yi}");
    }
    // Scalars on the left, broadcasting against a constant tensor.
    let z = two * &x - Tensor::from_vec(vec![Dual::constant(1.0); 2], &[2, 1]);
    assert_eq!(z.shape(), &[2, 3]);
    assert_eq!(z.to_vec()[4].du, -2.0);
    let w = Dual::constant(1.0) / x.clone();
    assert_eq!(w.to_vec()[1].du, 0.25); // d(1/x) = -v/x² at x = 2, v = -1
    let mut acc = x.clone();
    acc *= &x;
    acc += Dual::constant(1.0);
    assert_eq!(acc.to_vec()[2].du, 2.0 * -3.0 * 2.0);
    // Element methods through map.
    let e = x.map(|a| a.exp());
    assert!((e.to_vec()[0].du - 0.5 * 1f64.exp()).abs() < 1e-14);
    // A second-order directional derivative: x³ along v twice is 6 x v².
    let x2 = Tensor::from_vec(
        xs.iter()
            .zip(&v)
            .map(|(&a, &b)| Dual::new(Dual::new(a, b), Dual::new(b, 0.0)))
            .collect(),
        &[3],
    );
    let c = &(&x2 * &x2) * &x2;
    for ((ci, &xi), &vi) in c.to_vec().iter().zip(&xs).zip(&v) {
        assert_eq!(ci.du.du, 6.0 * xi * vi * vi);
    }
}

#[test]
fn ndarray_scalar_operand() {
    let a = ndarray::arr1(&[Dual::variable(1.5_f64), Dual::constant(2.0)]);
    let b = &a * Dual::constant(2.0);
    assert_eq!((b[0].re, b[0].du, b[1].du), (3.0, 2.0, 0.0));
    let dot = a.dot(&a);
    assert_eq!((dot.re, dot.du), (6.25, 3.0));
}

/// The rules are generic over the element: gradient checks pass for tensors of duals.
#[test]
fn rules_check_on_dual_elements() {
    type D = Dual<f64>;
    let f = grad_fn(
        |a: &[Tensor<D>]| &a[0] * &a[1],
        |a: &[Tensor<D>], t: &[Tensor<D>]| {
            mul_jvp(&a[0], &a[1], &(&a[0] * &a[1]), Some(&t[0]), Some(&t[1]))
        },
        |a: &[Tensor<D>], g: &Tensor<D>| {
            vec![
                mul_vjp_lhs(g, a[0].shape(), &a[1]),
                mul_vjp_rhs(g, &a[0], a[1].shape()),
            ]
        },
    );
    let x = Tensor::<D>::rand_uniform(&[2, 3], D::from_f64(-1.0), D::from_f64(1.0), 1);
    let y = Tensor::<D>::rand_uniform(&[3], D::from_f64(-1.0), D::from_f64(1.0), 2);
    check_grad(&f, &[x, y], D::FD_EPS, D::GRAD_TOL, D::GRAD_TOL).unwrap();
}

/// `x` seeded with tangent `v`.
fn seeded<T: Element>(x: &[f64], v: &[f64]) -> Tensor<Dual<T>> {
    let data = x
        .iter()
        .zip(v)
        .map(|(&a, &b)| Dual::new(T::from_f64(a), T::from_f64(b)))
        .collect();
    Tensor::from_vec(data, &[x.len()])
}

/// `(2x - 1)·x / 4 + 1/x - (5 - x)`, written with bare `f64` literals on every side of every
/// operator, for the owned and borrowed forms of both operands.
#[allow(clippy::op_ref)] // the borrowed scalars are what is exercised
fn literal_code(x: &Tensor<Dual<f64>>) -> Tensor<Dual<f64>> {
    let y = 2.0 * x - 1.0;
    let z = &(&y * x) / 4.0 + 1.0 / x;
    let w = &5.0 - x.clone();
    let w = &w * &1.0 + x.clone() * 0.0;
    z - w
}

fn literal_code_f32(x: &Tensor<Dual<f32>>) -> Tensor<Dual<f32>> {
    let y = 2.0 * x - 1.0;
    let z = &(&y * x) / 4.0 + 1.0 / x;
    z - (5.0 - x.clone())
}

#[test]
fn plain_literals_on_tensors_of_duals_are_constants() {
    let xs = [1.0, 2.0, -3.0];
    let v = [0.5, -1.0, 2.0];
    let value = |x: f64| (2.0 * x - 1.0) * x / 4.0 + 1.0 / x - (5.0 - x);
    let slope = |x: f64| (4.0 * x - 1.0) / 4.0 - 1.0 / (x * x) + 1.0;
    let y = literal_code(&seeded(&xs, &v));
    let y32 = literal_code_f32(&seeded(&xs, &v));
    for (i, (&x, &vi)) in xs.iter().zip(&v).enumerate() {
        let (yi, y32i) = (y.to_vec()[i], y32.to_vec()[i]);
        assert_rel(yi.re, value(x), 1e-14, "f64 value");
        assert_rel(yi.du, slope(x) * vi, 1e-14, "f64 tangent");
        assert_rel(y32i.re.into(), value(x), 1e-6, "f32 value");
        assert_rel(y32i.du.into(), slope(x) * vi, 1e-6, "f32 tangent");
    }
}

/// `x³/2 - 2x` on nested duals with `f64` literals: the second derivative `3x` in `du.du`.
#[test]
fn plain_literals_on_nested_duals() {
    let xs = [1.5_f64, -0.5];
    let x = Tensor::from_vec(
        xs.iter()
            .map(|&a| Dual::new(Dual::variable(a), Dual::one()))
            .collect(),
        &[2],
    );
    let y = &(&(0.5 * &x) * &x) * &x - &x * 2.0 + 1.0;
    for (yi, &a) in y.to_vec().iter().zip(&xs) {
        assert_rel(yi.re.re, a * a * a / 2.0 - 2.0 * a + 1.0, 1e-14, "value");
        assert_rel(yi.re.du, 1.5 * a * a - 2.0, 1e-14, "first derivative");
        assert_eq!(yi.du.du, 3.0 * a, "second derivative");
    }
    let x = Tensor::from_vec(vec![Dual::new(Dual::variable(1.5_f32), Dual::one())], &[1]);
    let y = 1.0 + &(&(&x * 0.5) * &x) * &x - 2.0 * &x;
    assert_eq!(y.item().du.du, 4.5);
}

/// Code generic over the element, run with `Dual<f64>` elements: `exp(x²)/2 - 3x + 1`.
fn generic_code<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    let half = T::from_f64(0.5);
    // The element type of `ones` is only inferred from its use below.
    let ones = Tensor::zeros(x.shape()) + T::one();
    (x * x).exp() * half - x * T::from_f64(3.0) + ones
}

#[test]
fn generic_element_code_gives_directional_derivatives_on_duals() {
    let xs = [0.3, -1.2, 0.8];
    let v = [1.0, 0.5, -2.0];
    let y = generic_code(&seeded::<f64>(&xs, &v));
    for (yi, (&x, &vi)) in y.to_vec().iter().zip(xs.iter().zip(&v)) {
        assert_rel(yi.re, (x * x).exp() / 2.0 - 3.0 * x + 1.0, 1e-14, "value");
        assert_rel(yi.du, (x * (x * x).exp() - 3.0) * vi, 1e-14, "tangent");
    }
    let y = generic_code(&seeded::<f32>(&xs, &v));
    for (yi, (&x, &vi)) in y.to_vec().iter().zip(xs.iter().zip(&v)) {
        assert_rel(
            yi.du.into(),
            (x * (x * x).exp() - 3.0) * vi,
            1e-6,
            "f32 tangent",
        );
    }
}
