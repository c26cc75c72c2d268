//! Branch-free `exp`, `exp_m1`, `ln`, `ln_1p`, `tanh` and `powf` for `f32` and `f64`, written
//! for element-wise loops that LLVM vectorises (AVX2 and AVX-512 alike).
//!
//! # Contract
//!
//! - Each kernel is `#[inline(always)]` (in release builds; see the module `vmath`), takes and returns plain
//!   floats and is straight-line code: special cases are selects, not branches; no table, no call
//!   (no libm, no `mul_add`, no `round`). It uses `+ - * /`, comparisons, `abs`, `copysign`,
//!   `clamp` (which keeps a NaN), and 64-bit integer adds and shifts on `to_bits`/`from_bits`,
//!   which both AVX2 and AVX-512 have. Rounding to an integer is the 1.5·2^52 shift, whose low bits
//!   give the integer too; integer to float is the 2^52 shift (AVX2 has no 64-bit conversions).
//! - No FMA, and Rust never contracts `a * b + c`: a result is the same to the bit at every
//!   CPU feature level, scalar or vector.
//! - Special values are std's: NaN in gives NaN out, ±0, ±∞ and subnormal inputs and results
//!   are as std (glibc) gives them: `exp` overflows to +∞ and underflows through the subnormals
//!   to +0, `ln(±0) = -∞`, `ln(x < 0) = NaN`, `ln_1p(-1) = -∞`, `exp_m1(-0) = tanh(-0) =
//!   ln_1p(-0) = -0`, `tanh(±large) = ±1`, `exp_m1(-large) = -1`; `powf` follows C99 Annex F
//!   (`pow(x, ±0) = 1` even for a NaN x, `pow(1, y) = 1`, `pow(-1, ±∞) = 1`, a negative x with
//!   an integer y gives the signed result and with a finite non-integer y NaN, ±0 and ±∞
//!   bases by the parity and sign of y).
//!
//! # Method
//!
//! Polynomials are minimax (Remez, relative error) on the reduced interval, evaluated by
//! Horner's rule; the errors quoted are with the coefficients rounded to `f64`.
//!
//! `exp`, `ln` and `ln_1p` for `f32` compute in `f32` (16 lanes with AVX-512, 8 with AVX2), with
//! the reductions exact and the polynomials accurate to 2^-26.5 or better; their results are
//! within 1 ulp of std's `f64` function rounded to `f32` (measured, see the table below):
//!
//! - `exp`: k = round(x / ln 2) by the 1.5·2^23 shift, r = x - k ln 2 by Cody–Waite with ln 2 =
//!   LN2_HI + LN2_LO, LN2_HI of 15 bits (k LN2_HI and x - k LN2_HI are exact for |k| ≤ 150),
//!   e^r = 1 + (r + r² Q(r)) with Q of degree 4 (2^-26.5 with its coefficients in `f32`), times
//!   2^k as two exact powers of two, so that only the last product rounds, to a subnormal or
//!   ∞; x is clamped to [-104, 89], beyond which the result is 0 or +∞.
//! - `ln`: x = 2^k m from the bits (subnormals scaled by 2^23 first), m in [√½, √2),
//!   f = m - 1 exact, ln m = f - (f²/2 - f³ P(f)) with P of degree 8 (2^-28.1), and no
//!   division; ln x = k LN2_HI + (ln m + k LN2_LO), fdlibm's order.
//! - `ln_1p`: 1 + x = u + c exactly (two-sum), u = 2^k (1 + f); where k = 0, f = x exactly and
//!   `ln`'s formula applies to it; elsewhere |ln_1p x| > 0.34 and c / u, below 1.5 ulp of the
//!   result, is added as c 2^-k (1 - f (1 - f)) (relative error below 0.07).
//!
//! `exp_m1`, `tanh` and `powf` for `f32` work in `f64` and round once at the end. Their
//! polynomials are accurate to about 2^-36, so a result is the correctly rounded one unless the
//! exact value lies within about 2^-12 ulp of a rounding boundary, and the error is never above
//! 0.5 + 2^-11 ulp. In `f64` an `f32` subnormal is normal and `exp`'s results down to 2^-150 are
//! exact products, so subnormal inputs and results need no special path.
//!
//! - `exp_m1`: k = round(x / ln 2), r = x - k ln 2 (|r| ≤ ln 2 / 2; with |k| ≤ 150 one `f64`
//!   ln 2 suffices), e^x - 1 = (2^k - 1) + 2^k (e^r - 1) with e^r - 1 = r + r² Q(r), Q of
//!   degree 6 (2^-34.2); the sum cancels by at most a factor 4 (at k = 1), harmless in `f64`,
//!   and is e^r - 1 itself at k = 0.
//! - `tanh`: n / (n + 2) with n = e^{2|x|} - 1 from `exp_m1`'s core, sign copied; |x| is
//!   clamped to 10 (tanh rounds to 1 from 9.01).
//! - `powf`: e^{y ln|x|} with an `f64` ln (x = 2^k m, s = f / (2 + f), ln m = 2 atanh s = 2s +
//!   s³ S(s²) with S of degree 4, 2^-43) and `f64` exp, y ln|x| clamped to ±200. For a result
//!   in `f32`'s range |y ln x| < 104, so its absolute error is below 2^-36 and the result's
//!   relative error below 2^-35.
//!
//! The `f64` kernels carry the rounding errors that matter in double-double form and round
//! once at the end, so that most results are within 0.5 + ε ulp:
//!
//! - `exp`: Cody–Waite reduction with ln 2 = LN2_HI + LN2_LO, LN2_HI of 42 bits (k LN2_HI and
//!   x - k LN2_HI are exact), r = rh - rl with its rounding error kept;
//!   e^r - 1 = r + r²/2 + r³ Q(r), Q of degree 9 (2^-53 on Q, which weighs r²/6 ≤ 2^-5.6),
//!   r² exact by Dekker's product, kept as h + l; result (1 + h + l) 2^k with the sum rounded
//!   once and 2^k applied as two exact powers of two, so that the one rounding is the final
//!   one down to the subnormals (there the 53-bit value is rounded again: at most 1 ulp).
//!   x is clamped to [-746, 710].
//! - `exp_m1`: the same core; e^x - 1 = 2^k (h + l + (1 - 2^-k)), with 1 - 2^-k split
//!   exactly into two doubles and added to h by exact two-sums before the one rounding.
//! - `ln`: fdlibm's form: f, s as for `f32`, ln m = f - (f²/2 - s (f²/2 + s² S(s²))) with S of
//!   degree 6 (2^-50.9), plus k ln 2 in two parts; subnormals are scaled by 2^54 first.
//! - `ln_1p`: 1 + x = u + c exactly (two-sum), u = 2^k (1 + f); where k = 0, f = x exactly
//!   and `ln`'s formula applies to it; elsewhere |ln_1p x| > 0.34, and c / u is added as
//!   c 2^-k (1 - s)² (1 + s²) (1 / (1 + f) = (1 - s)² / (1 - s²), the dropped s⁴ is below
//!   2^-10 of a term below 2^-53 of the result), so one division.
//! - `tanh`: n = e^{2|x|} - 1 as a double-double from `exp_m1`'s core (|x| clamped to 22),
//!   w = 2 / (n + 2) by one division corrected to double-double with a Dekker product,
//!   tanh |x| = n w / 2 with the product n·w exact: no cancellation at any |x|.
//! - `powf`: ln|x| as a double-double of relative error below 2^-65 (s = f / (2 + f) to
//!   double-double by a Dekker residual, 1 / (2 + f) = (1 - s) / 2; 2 atanh s = 2s + 2s³/3 +
//!   2s⁵/5 + s⁷ P(s²) with the first three terms in double-double and P of degree 6, 2^-50 on
//!   P, which weighs s⁶/7 ≤ 2^-18), times y by a Dekker product to z = zh + zl; zl enters
//!   `exp`'s reduction. For a finite nonzero result |z| < 746, so the error of z is below
//!   2^-55.5 and adds at most 0.1 ulp to `exp`'s. |y| is clamped to 2^900 (the result is then
//!   0 or ∞ unless |x| = 1), z to [-746, 710]; the special cases are selected at the end.
//!
//! # Accuracy
//!
//! Maximum error measured, in ulps of the result's format. `f32`: all 2^32 inputs (in the
//! tests: every 11th bit pattern, plus 2^21 patterns around each threshold) against std's
//! `f64` function of the input rounded to `f32`; for the kernels that work in `f64`, the count
//! is of the inputs whose result differs from that reference. `powf_f32`: 2^26 random pairs (y ln|x| uniform over the
//! finite range, negative x with integer y) and a grid of special cases. `f64`: 2^26 inputs
//! per function, log-spaced over the whole domain and uniform over the ranges that matter,
//! against glibc; and 10^5 against the correctly rounded value (mpmath), as a real number.
//!
//! | kernel   | `f32`             | `f64` vs glibc | `f64` vs exact                 |
//! |----------|-------------------|----------------|--------------------------------|
//! | `exp`    | 1                 | 1              | 0.52 (0.75 if subnormal)       |
//! | `exp_m1` | 1 (2716 of 2^32)  | 1              | 0.56                           |
//! | `ln`     | 1                 | 1              | 0.77                           |
//! | `ln_1p`  | 1                 | 1              | 0.86                           |
//! | `tanh`   | 1 (2398 of 2^32)  | 2              | 0.54 (glibc's own: 1.89)       |
//! | `powf`   | 1                 | 1              | 0.55 (0.74 if subnormal)       |
//!
//! The tests assert these bounds: 1 ulp, and 2 for `tanh_f64` against glibc (whose own error
//! reaches 1.89 ulp).
//!
//! # Cost
//!
//! A loop over 10^6 elements on a 2.3 GHz Xeon (AVX-512, shared machine) takes 0.9–1.2 ns
//! per `f32` element for the unary kernels evaluated in `f64` (std: 3–12 ns); `exp_f32` and
//! `ln_f32`, in `f32`, take 0.55–0.65 of the time of their former `f64`-evaluated versions
//! measured in the same run; `powf_f32` takes 3.2 ns. Per `f64` element: 1.5–2.4 ns for `exp`,
//! `exp_m1`, `ln`, `ln_1p`, 4.4 ns for `tanh_f64` and 10 ns for `powf_f64` (std: 5–20 ns).
//! AVX2 takes 1.5–2 times as long.

use std::f64::consts::{FRAC_1_SQRT_2, LN_2, LOG2_E};

use super::dd::{fast_two_sum, two_prod, two_sum_f32};

/// 1.5 · 2^52: `(v + ROUND_SHIFT) - ROUND_SHIFT` rounds `v` (|v| < 2^51) to the nearest integer,
/// and the low bits of `v + ROUND_SHIFT` hold that integer.
const ROUND_SHIFT: f64 = 6755399441055744.0;
const TWO52: f64 = 4503599627370496.0;
const TWO53: f64 = 9007199254740992.0;
const TWO54: f64 = 18014398509481984.0;
/// ln 2 to 42 bits, so that `k · LN2_HI` is exact for |k| < 2^11; `LN2_LO` is the rest.
const LN2_HI: f64 = 0.6931471805598903;
const LN2_LO: f64 = 5.497923018708371e-14;
/// 2/3 as a double-double.
const TWO_THIRDS_HI: f64 = 0.6666666666666666;
const TWO_THIRDS_LO: f64 = 3.700743415417188e-17;
/// |y| above this gives an infinite or zero power for every x ≠ ±1, and keeps `y · ln x` finite.
const POW_Y_MAX: f64 = f64::from_bits((1023 + 900) << 52);

// Minimax coefficients: Remez exchange for the relative error in 80-digit arithmetic, on the
// reduced intervals |r| ≤ 0.34658 and s² ≤ 0.02944; the error quoted is the one with the
// coefficients rounded to `f64`.

/// (e^r - 1 - r - r²/2) / r³, degree 9: 2^-53.0.
const EXP_Q: [f64; 10] = [
    0.16666666666666669,
    0.04166666666666666,
    0.008333333333330072,
    0.0013888888888900555,
    0.00019841269863010944,
    2.4801587275150004e-05,
    2.755726851921305e-06,
    2.755732960510845e-07,
    2.510035985954732e-08,
    2.0893975065491027e-09,
];
/// (2 atanh(s) / s - 2) / s² in z = s², degree 6: 2^-50.9.
const LOG_S: [f64; 7] = [
    0.666666666666667,
    0.39999999999899116,
    0.28571428626132195,
    0.22222211111582835,
    0.18182890678303074,
    0.15331673737577833,
    0.14617002548594527,
];
/// (2 atanh(s) - 2s - 2s³/3 - 2s⁵/5) / s⁷ in z = s², degree 6: 2^-50.0.
const LOG_P7: [f64; 7] = [
    0.285714285714286,
    0.22222222222140545,
    0.18181818226127963,
    0.15384606382208427,
    0.13334202496928982,
    0.11721798508816643,
    0.11566512598992504,
];
/// (e^r - 1 - r) / r², degree 6: 2^-34.2.
const EXPM1_32_Q: [f64; 7] = [
    0.5000000000020881,
    0.16666666718775724,
    0.04166666640539693,
    0.008333298557030034,
    0.0013888923741509002,
    0.0001989922556535913,
    2.4820873811692508e-05,
];
/// (2 atanh(s) / s - 2) / s² in z = s², degree 4: 2^-36.4.
const LOG32_S: [f64; 5] = [
    0.6666666666737827,
    0.39999998793772046,
    0.28571755158317225,
    0.22191366110005098,
    0.19363258375120218,
];

/// c[0] + x (c[1] + x (c[2] + …)), in `f64` or `f32`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn horner<T, const N: usize>(x: T, c: &[T; N]) -> T
where
    T: Copy + std::ops::Mul<Output = T> + std::ops::Add<Output = T>,
{
    c[..N - 1]
        .iter()
        .rev()
        .fold(c[N - 1], |acc, &ci| acc * x + ci)
}

/// `v` rounded to the nearest integer, as `f64` and as a two's complement `u64`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn round_int(v: f64) -> (f64, u64) {
    let t = v + ROUND_SHIFT;
    (
        t - ROUND_SHIFT,
        t.to_bits().wrapping_sub(ROUND_SHIFT.to_bits()),
    )
}

/// 2^k for -1022 ≤ k ≤ 1023.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn pow2(k: u64) -> f64 {
    f64::from_bits(k.wrapping_add(1023) << 52)
}

/// v · 2^k for v near 1 and -2044 ≤ k ≤ 2046, as v · 2^⌊k/2⌋ · 2^⌈k/2⌉: only the last
/// product can round (to a subnormal or to ∞).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn scale(v: f64, k: u64) -> f64 {
    let b = k.wrapping_add(2046);
    let e1 = b >> 1;
    v * f64::from_bits(e1 << 52) * f64::from_bits((b - e1) << 52)
}

/// `a + b = s + e` exactly (Knuth).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `x = 2^(e - 1023) · m` with m in [√½, √2), for a positive normal `x`: (e, m).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn decompose(x: f64) -> (u64, f64) {
    const OFFSET: u64 = 0x3ff0_0000_0000_0000 - FRAC_1_SQRT_2.to_bits();
    let ix = x.to_bits();
    let e = ix.wrapping_add(OFFSET) >> 52;
    (
        e,
        f64::from_bits(ix.wrapping_sub(e.wrapping_sub(1023) << 52)),
    )
}

/// `e - 1023` as `f64`, for e < 2^52.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn unbias(e: u64) -> f64 {
    f64::from_bits(TWO52.to_bits() | e) - (TWO52 + 1023.0)
}

/// (k, m) with `x = 2^k · m`, m in [√½, √2), for a positive finite `x` (subnormals too).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn decompose_scaled(x: f64) -> (f64, f64) {
    let sub = x < f64::MIN_POSITIVE;
    let (e, m) = decompose(if sub { x * TWO54 } else { x });
    let k = unbias(e);
    (if sub { k - 54.0 } else { k }, m)
}

/// `y` where ln is finite at `x`, else ln's special value.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn ln_special(x: f64, y: f64) -> f64 {
    let special = if x == 0.0 {
        f64::NEG_INFINITY
    } else if x < 0.0 {
        f64::NAN
    } else {
        x
    };
    if x > 0.0 && x < f64::INFINITY {
        y
    } else {
        special
    }
}

/// Reduction for e^(x + xlo), |x| ≤ 746, |xlo| ≤ 2^-40 |x|: `(k, h, l)` with
/// e^(x + xlo) = 2^k · (1 + h + l), h + l = e^r - 1, r = x + xlo - k ln 2, |r| ≤ ln 2 / 2.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn exp_core(x: f64, xlo: f64) -> (u64, f64, f64) {
    let (kf, k) = round_int(x * LOG2_E);
    let rh = x - kf * LN2_HI;
    let rl = kf * LN2_LO - xlo;
    let r = rh - rl;
    let dr = (rh - r) - rl;
    let (sq, sqe) = two_prod(r, r);
    let half = 0.5 * sq;
    let h = r + half;
    let l = (r - h) + half;
    let tail = (0.5 * sqe + r * sq * horner(r, &EXP_Q)) + dr * (1.0 + r);
    (k, h, l + tail)
}

/// ln x as a double-double, relative error below 2^-65, for a positive finite `x`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn ln_dd(x: f64) -> (f64, f64) {
    let (k, m) = decompose_scaled(x);
    // ln m = 2 atanh(s), s = f / (2 + f) = sh + sl.
    let f = m - 1.0;
    let dh = 2.0 + f;
    let dl = (2.0 - dh) + f;
    let sh = f / dh;
    let (p, pe) = two_prod(sh, dh);
    // 1 / (2 + f) = (1 - s) / 2
    let sl = (((f - p) - pe) - sh * dl) * (0.5 - 0.5 * sh);
    let (s2h, s2l) = two_prod(sh, sh);
    let (s3h, s3e) = two_prod(s2h, sh);
    let s3l = s3e + s2l * sh;
    // 2s³/3 (with its sl term 2s²·sl)
    let (bh, be) = two_prod(TWO_THIRDS_HI, s3h);
    let bl = be + (TWO_THIRDS_HI * s3l + TWO_THIRDS_LO * s3h) + 2.0 * s2h * sl;
    // 2s⁵/5 (with 2s⁴·sl)
    let (s5h, s5e) = two_prod(s3h, s2h);
    let s5l = s5e + s3l * s2h + s3h * s2l;
    let t5 = 0.4 * s5h + (0.4 * s5l + 2.0 * (s2h * s2h) * sl);
    let t7 = s5h * s2h * horner(s2h, &LOG_P7);
    let (a1, a1e) = fast_two_sum(2.0 * sh, bh);
    let (a2, a2e) = fast_two_sum(a1, t5);
    let (hi, e2) = two_sum(k * LN2_HI, a2);
    let lo = e2 + (a2e + (a1e + (k * LN2_LO + (2.0 * sl + (bl + t7)))));
    fast_two_sum(hi, lo)
}

/// Whether |y| (`ay`) is an integer, and whether it is an odd one (infinity is even).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn int_parity(ay: f64) -> (bool, bool) {
    let t = ay + TWO52;
    let is_int = t - TWO52 == ay || ay >= TWO52;
    let low = if ay < TWO52 {
        t.to_bits()
    } else {
        ay.to_bits()
    };
    (is_int, is_int && ay < TWO53 && low & 1 == 1)
}

/// x^y from `r` = e^(y ln|x|) (valid for finite nonzero x): the sign, and the special cases.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn pow_fixup(x: f64, y: f64, r: f64) -> f64 {
    let ax = x.abs();
    let ay = y.abs();
    let (is_int, is_odd) = int_parity(ay);
    let zero_or_inf = if (ax == 0.0) == (y < 0.0) {
        f64::INFINITY
    } else {
        0.0
    };
    let r = if ax == 0.0 || ax == f64::INFINITY {
        zero_or_inf
    } else {
        r
    };
    let r = if x.is_sign_negative() && is_odd {
        -r
    } else {
        r
    };
    let nan = x.is_nan() || y.is_nan() || (x < 0.0 && x > f64::NEG_INFINITY && !is_int);
    let r = if nan { f64::NAN } else { r };
    let one = y == 0.0 || x == 1.0 || (ax == 1.0 && ay == f64::INFINITY);
    if one {
        1.0
    } else {
        r
    }
}

/// e^r - 1 for |r| ≤ ln 2 / 2, relative error 2^-36.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn exp_m1_poly32(r: f64) -> f64 {
    r + r * r * horner(r, &EXPM1_32_Q)
}

/// e^x for |x| ≤ 200, relative error 2^-36 (for the `f32` kernels).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn exp32(x: f64) -> f64 {
    let (kf, k) = round_int(x * LOG2_E);
    (1.0 + exp_m1_poly32(x - kf * LN_2)) * pow2(k)
}

/// e^x - 1 for -20 ≤ x ≤ 89, relative error 2^-36 (for the `f32` kernels).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn exp_m1_32(x: f64) -> f64 {
    let (kf, k) = round_int(x * LOG2_E);
    let p = pow2(k);
    (p - 1.0) + p * exp_m1_poly32(x - kf * LN_2)
}

/// ln x for a positive normal `x`, relative error 2^-43 (for the `f32` kernels).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn ln32(x: f64) -> f64 {
    let (e, m) = decompose(x);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    unbias(e) * LN_2 + (2.0 * s + s * z * horner(z, &LOG32_S))
}

/// 1.5 · 2^23: `(v + ROUND_SHIFT_F32) - ROUND_SHIFT_F32` rounds `v` (|v| < 2^22) to the nearest
/// integer, and the low bits of `v + ROUND_SHIFT_F32` hold that integer.
const ROUND_SHIFT_F32: f32 = 12_582_912.0;
const TWO23_F32: f32 = 8_388_608.0;
/// ln 2 to 15 bits, so that `k · LN2_HI_F32` is exact for |k| < 2^9; `LN2_LO_F32` is the rest.
const LN2_HI_F32: f32 = 0.693_145_75;
const LN2_LO_F32: f32 = 1.428_606_8e-6;

/// (e^r - 1 - r) / r², degree 4, on |r| ≤ 0.3473: e^r to 2^-26.5 with the coefficients in `f32`.
const EXP_Q_F32: [f32; 5] = [
    0.5,
    0.166_665_76,
    0.041_666_854,
    0.008_363_26,
    0.001_390_133_5,
];
/// (ln(1 + f) - f + f²/2) / f³, degree 8, on f in [√½ - 1, √2 - 1]: ln(1 + f) to 2^-28.1 with
/// the coefficients in `f32`.
const LN_P_F32: [f32; 9] = [
    0.333_333_3,
    -0.249_999_94,
    0.200_007_16,
    -0.166_680_63,
    0.142_492_74,
    -0.124_199_69,
    0.116_773_48,
    -0.115_161_15,
    0.070_386_4,
];

/// `(p, k)` with e^x = 2^k (1 + p), for -104 ≤ x ≤ 89 (or NaN): k = round(x / ln 2),
/// r = x - k ln 2 by Cody–Waite (`k · LN2_HI_F32` and the first difference exact), |r| ≤ 0.3466,
/// p = e^r - 1 = r + r² Q(r).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn exp_core_f32(x: f32) -> (f32, i32) {
    let t = x * std::f32::consts::LOG2_E + ROUND_SHIFT_F32;
    let kf = t - ROUND_SHIFT_F32;
    let k = t.to_bits().wrapping_sub(ROUND_SHIFT_F32.to_bits()) as i32;
    let r = (x - kf * LN2_HI_F32) - kf * LN2_LO_F32;
    (r + r * r * horner(r, &EXP_Q_F32), k)
}

/// v · 2^k for v near 1 and -150 ≤ k ≤ 128, as v · 2^⌊k/2⌋ · 2^⌈k/2⌉: only the last product
/// can round (to a subnormal or to ∞).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn scale_f32(v: f32, k: i32) -> f32 {
    let k1 = k >> 1;
    let p1 = f32::from_bits(((k1 + 127) as u32) << 23);
    let p2 = f32::from_bits(((k - k1 + 127) as u32) << 23);
    v * p1 * p2
}

/// `x = 2^(e - 127) · m` with m in [√½, √2), for a positive normal `x`: (e, m).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn decompose_f32(x: f32) -> (u32, f32) {
    const OFFSET: u32 = 0x3f80_0000 - 0x3f35_04f3;
    let ix = x.to_bits();
    let e = ix.wrapping_add(OFFSET) >> 23;
    (
        e,
        f32::from_bits(ix.wrapping_sub(e.wrapping_sub(127) << 23)),
    )
}

/// k ln 2 + ln(1 + f) + corr for f in [√½ - 1, √2 - 1] (or NaN) and a small correction `corr`,
/// in fdlibm's order: k ln 2 in two parts, ln(1 + f) = f - (f²/2 - f³ P(f)).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn ln_f32_core(k: f32, f: f32, corr: f32) -> f32 {
    let hfsq = 0.5 * (f * f);
    let tail = f * f * f * horner(f, &LN_P_F32) + (k * LN2_LO_F32 + corr);
    k * LN2_HI_F32 + (f - (hfsq - tail))
}

/// `y` where ln is finite at `x`, else ln's special value.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn ln_special_f32(x: f32, y: f32) -> f32 {
    let special = if x == 0.0 {
        f32::NEG_INFINITY
    } else if x < 0.0 {
        f32::NAN
    } else {
        x
    };
    if x > 0.0 && x < f32::INFINITY {
        y
    } else {
        special
    }
}

/// e^x.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn exp_f32(x: f32) -> f32 {
    let (p, k) = exp_core_f32(x.clamp(-104.0, 89.0));
    scale_f32(1.0 + p, k)
}

/// e^x - 1, accurate near 0.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn exp_m1_f32(x: f32) -> f32 {
    let y = exp_m1_32(f64::from(x).clamp(-20.0, 89.0)) as f32;
    if x == 0.0 {
        x
    } else {
        y
    }
}

/// Natural logarithm.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn ln_f32(x: f32) -> f32 {
    // Subnormals are scaled into the normal range first.
    let sub = x < f32::MIN_POSITIVE;
    let (e, m) = decompose_f32(if sub { x * TWO23_F32 } else { x });
    let k = e as i32 - if sub { 127 + 23 } else { 127 };
    ln_special_f32(x, ln_f32_core(k as f32, m - 1.0, 0.0))
}

/// ln(1 + x), accurate near 0.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn ln_1p_f32(x: f32) -> f32 {
    // 1 + x = u + c exactly; ln(1 + x) = ln u + c / u, u = 2^k (1 + f).
    let (u, c) = two_sum_f32(1.0, x);
    let (e, m) = decompose_f32(u);
    let k = e as i32 - 127;
    // Where u is in [√½, √2) (k = 0), f = x exactly and no correction is needed.
    let f = if k == 0 { x } else { m - 1.0 };
    // c / u = c 2^-k / (1 + f), 1 / (1 + f) ≈ 1 - f (1 - f) (relative error below 0.07 on a
    // term below 1.5 ulp of the result); 2^-k is 0 for k ≥ 127.
    let inv = f32::from_bits(254u32.saturating_sub(e) << 23);
    let corr = if k == 0 {
        0.0
    } else {
        c * inv * (1.0 - f * (1.0 - f))
    };
    let y = ln_special_f32(u, ln_f32_core(k as f32, f, corr));
    if x == 0.0 {
        x
    } else {
        y
    }
}

/// Hyperbolic tangent.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn tanh_f32(x: f32) -> f32 {
    let e = exp_m1_32(2.0 * f64::from(x).abs().clamp(0.0, 10.0));
    ((e / (e + 2.0)) as f32).copysign(x)
}

/// x^y with the special cases of C99 Annex F (as `f32::powf`).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn powf_f32(x: f32, y: f32) -> f32 {
    let (x, y) = (f64::from(x), f64::from(y));
    let z = (y * ln32(x.abs())).clamp(-200.0, 200.0);
    pow_fixup(x, y, exp32(z)) as f32
}

/// e^x.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn exp_f64(x: f64) -> f64 {
    let (k, h, l) = exp_core(x.clamp(-746.0, 710.0), 0.0);
    let (vh, vl) = fast_two_sum(1.0, h);
    scale(vh + (vl + l), k)
}

/// e^x - 1, accurate near 0.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn exp_m1_f64(x: f64) -> f64 {
    let (k, h, l) = exp_core(x.clamp(-40.0, 710.0), 0.0);
    // e^x - 1 = 2^k (h + l + 1 - 2^-k), 1 - 2^-k = u + ue exactly; 2^-k is 0 for k ≥ 1023.
    let inv = f64::from_bits((1023i64.wrapping_sub(k as i64).max(0) as u64) << 52);
    let (u, ue) = two_sum(1.0, -inv);
    let (vh, vl) = two_sum(u, h);
    let y = scale(vh + (vl + (l + ue)), k);
    if x == 0.0 {
        x
    } else {
        y
    }
}

/// Natural logarithm.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn ln_f64(x: f64) -> f64 {
    let (k, m) = decompose_scaled(x);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let hfsq = 0.5 * f * f;
    let y = k * LN2_HI + (f - (hfsq - (s * (hfsq + z * horner(z, &LOG_S)) + k * LN2_LO)));
    ln_special(x, y)
}

/// ln(1 + x), accurate near 0.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn ln_1p_f64(x: f64) -> f64 {
    // 1 + x = u + c exactly; ln(1 + x) = ln u + c / u, u = 2^k (1 + f).
    let (u, c) = two_sum(1.0, x);
    let (e, m) = decompose(u);
    let k = unbias(e);
    // Where u is in [√½, √2) (k = 0), f = x exactly and no correction is needed.
    let f = if k == 0.0 { x } else { m - 1.0 };
    let c = if k == 0.0 { 0.0 } else { c };
    let s = f / (2.0 + f);
    let z = s * s;
    let hfsq = 0.5 * f * f;
    // c / u = c 2^-k / (1 + f), 1 / (1 + f) = (1 - s)² / (1 - s²); 2^-k is 0 for k ≥ 1023.
    let inv = f64::from_bits((2046 - e.min(2046)) << 52);
    let one_s = 1.0 - s;
    let corr = c * inv * (one_s * one_s) * (1.0 + z);
    let y = k * LN2_HI + (f - (hfsq - (s * (hfsq + z * horner(z, &LOG_S)) + (k * LN2_LO + corr))));
    let y = ln_special(u, y);
    if x == 0.0 {
        x
    } else {
        y
    }
}

/// Hyperbolic tangent.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn tanh_f64(x: f64) -> f64 {
    let (k, h, l) = exp_core(2.0 * x.abs().clamp(0.0, 22.0), 0.0);
    // n = e^2|x| - 1 = 2^k (h + l + 1 - 2^-k), tanh |x| = n / (n + 2)
    let p = pow2(k);
    let (vh, vl) = two_sum(1.0 - pow2(k.wrapping_neg()), h);
    let (vh, vl) = fast_two_sum(vh, vl + l);
    let (nh, nl) = (vh * p, vl * p);
    let (dh, dl) = two_sum(nh, 2.0);
    let dl = dl + nl;
    // w = 2 / d = wh + wl (and 1 / d = wh / 2 to first order), tanh |x| = n w / 2
    let wh = 2.0 / dh;
    let (q, qe) = two_prod(wh, dh);
    let wl = (((2.0 - q) - qe) - wh * dl) * (0.5 * wh);
    let (p, pe) = two_prod(nh, wh);
    let t = 0.5 * (p + (pe + (nl * wh + nh * wl)));
    t.copysign(x)
}

/// x^y with the special cases of C99 Annex F (as `f64::powf`).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn powf_f64(x: f64, y: f64) -> f64 {
    let yc = if y.abs() > POW_Y_MAX {
        POW_Y_MAX.copysign(y)
    } else {
        y
    };
    let (lh, ll) = ln_dd(x.abs());
    let (ph, pe) = two_prod(yc, lh);
    let (zh, zl) = fast_two_sum(ph, pe + yc * ll);
    let out = !(-746.0..=710.0).contains(&zh);
    let (k, h, l) = exp_core(zh.clamp(-746.0, 710.0), if out { 0.0 } else { zl });
    let (vh, vl) = fast_two_sum(1.0, h);
    pow_fixup(x, y, scale(vh + (vl + l), k))
}

#[cfg(test)]
mod tests {
    //! Each kernel against std (glibc): `f32` kernels against the `f64` function of the input
    //! rounded to `f32`, `f64` kernels against the `f64` function itself, distance in ulps.
    //! The dense sweeps are ignored in debug builds; run them with
    //! `cargo test -p rune-runtime --release --lib vmath -- --ignored --nocapture`.

    use super::*;
    use std::thread;

    /// Position of `x` on the line of `f32` values, ±0 both at 0.
    fn key32(x: f32) -> i64 {
        let b = x.to_bits();
        let m = i64::from(b & 0x7fff_ffff);
        if b >> 31 == 1 {
            -m
        } else {
            m
        }
    }

    fn key64(x: f64) -> i128 {
        let b = x.to_bits();
        let m = i128::from(b & 0x7fff_ffff_ffff_ffff);
        if b >> 63 == 1 {
            -m
        } else {
            m
        }
    }

    /// Distance in ulps; a NaN against a number, or a zero of the wrong sign, is `u64::MAX`.
    fn ulp32(got: f32, want: f32) -> u64 {
        if got.is_nan() || want.is_nan() {
            return if got.is_nan() && want.is_nan() {
                0
            } else {
                u64::MAX
            };
        }
        if got == want && got.to_bits() != want.to_bits() {
            return u64::MAX;
        }
        (key32(got) - key32(want)).unsigned_abs()
    }

    fn ulp64(got: f64, want: f64) -> u64 {
        if got.is_nan() || want.is_nan() {
            return if got.is_nan() && want.is_nan() {
                0
            } else {
                u64::MAX
            };
        }
        if got == want && got.to_bits() != want.to_bits() {
            return u64::MAX;
        }
        u64::try_from((key64(got) - key64(want)).unsigned_abs()).unwrap_or(u64::MAX)
    }

    /// The largest `err(i)` for i in 0..n, and its i, computed on all cores.
    fn worst(n: u64, err: impl Fn(u64) -> u64 + Sync) -> (u64, u64) {
        let threads = thread::available_parallelism().map_or(1, |t| t.get() as u64);
        thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let err = &err;
                    s.spawn(move || {
                        (t..n)
                            .step_by(threads as usize)
                            .map(|i| (err(i), i))
                            .max()
                            .unwrap_or((0, 0))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .max()
                .unwrap()
        })
    }

    /// SplitMix64.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        /// Uniform in [a, b).
        fn uniform(&mut self, a: f64, b: f64) -> f64 {
            a + (b - a) * ((self.next() >> 11) as f64 / TWO53)
        }

        /// Log-uniform magnitude in [2^lo, 2^hi) (subnormal where 2^lo is), positive.
        fn log_uniform(&mut self, lo: i32, hi: i32) -> f64 {
            let e = lo + (self.next() % (hi - lo) as u64) as i32;
            let m = f64::from_bits(self.next() >> 12 | 1.0f64.to_bits());
            // Two factors so that 2^e below 2^-1022 is not flushed.
            m * 2f64.powi(e / 2) * 2f64.powi(e - e / 2)
        }

        fn sign(&mut self) -> f64 {
            if self.next() & 1 == 0 {
                1.0
            } else {
                -1.0
            }
        }
    }

    struct Unary32 {
        name: &'static str,
        f: fn(f32) -> f32,
        reference: fn(f64) -> f64,
        /// std's own `f32` function, for the special values.
        std: fn(f32) -> f32,
        bound: u64,
        /// Inputs around which every bit pattern is checked (thresholds of the function).
        edges: &'static [f32],
    }

    const UNARY32: [Unary32; 5] = [
        Unary32 {
            name: "exp_f32",
            f: exp_f32,
            reference: f64::exp,
            std: f32::exp,
            bound: 1,
            edges: &[
                0.0, -0.0, 88.72284, -87.33655, -103.27893, -103.97208, 0.3465736,
                // k = 127, 128: 2^k as two factors.
                88.0, 88.38,
            ],
        },
        Unary32 {
            name: "exp_m1_f32",
            f: exp_m1_f32,
            reference: f64::exp_m1,
            std: f32::exp_m1,
            bound: 1,
            edges: &[
                0.0, -0.0, 88.72284, -17.32868, 0.3465736, -0.3465736, 1.0397208,
            ],
        },
        Unary32 {
            name: "ln_f32",
            f: ln_f32,
            reference: f64::ln,
            std: f32::ln,
            bound: 1,
            edges: &[
                1.0,
                std::f32::consts::FRAC_1_SQRT_2,
                std::f32::consts::SQRT_2,
                f32::MIN_POSITIVE,
                1e-45,
                f32::MAX,
            ],
        },
        Unary32 {
            name: "ln_1p_f32",
            f: ln_1p_f32,
            reference: f64::ln_1p,
            std: f32::ln_1p,
            bound: 1,
            edges: &[
                0.0,
                -0.0,
                1.8626451e-9,
                -1.8626451e-9,
                -0.29289323,
                0.41421357,
                -1.0,
                // 1 + x rounds to x (the correction c / u is 1 / x), and 2^-k becomes 0.
                16_777_216.0,
                1.701_411_8e38,
            ],
        },
        Unary32 {
            name: "tanh_f32",
            f: tanh_f32,
            reference: f64::tanh,
            std: f32::tanh,
            bound: 1,
            edges: &[0.0, -0.0, 9.010913, -9.010913, 0.5493061, 1e-45],
        },
    ];

    /// Every `step`-th bit pattern plus 2·`half` patterns around each edge: (max ulp, count).
    fn check_unary32(k: &Unary32, step: u64, half: u64) -> (u64, u64) {
        let strided = (1u64 << 32).div_ceil(step);
        let n = strided + 2 * half * k.edges.len() as u64;
        let input = |i: u64| {
            if i < strided {
                f32::from_bits((i * step) as u32)
            } else {
                let j = i - strided;
                let centre = u64::from(k.edges[(j / (2 * half)) as usize].to_bits());
                f32::from_bits((centre + j % (2 * half)).saturating_sub(half) as u32)
            }
        };
        let (max, at) = worst(n, |i| {
            let x = input(i);
            ulp32((k.f)(x), (k.reference)(f64::from(x)) as f32)
        });
        let x = input(at);
        println!(
            "{}: max {max} ulp over {n} inputs (at {x:e}: {:e}, want {:e})",
            k.name,
            (k.f)(x),
            (k.reference)(f64::from(x)) as f32
        );
        assert!(
            max <= k.bound,
            "{}: {max} ulp at x = {x:e} ({:#010x})",
            k.name,
            x.to_bits()
        );
        (max, n)
    }

    #[test]
    fn f32_unary_sparse_sweep() {
        for k in &UNARY32 {
            check_unary32(k, 4099, 2000);
        }
    }

    /// About 4·10^8 inputs per function (every 11th bit pattern); a few seconds each in release.
    #[test]
    #[ignore = "dense: cargo test -p rune-runtime --release --lib vmath -- --ignored"]
    fn f32_unary_dense_sweep() {
        for k in &UNARY32 {
            check_unary32(k, 11, 1 << 20);
        }
    }

    struct Unary64 {
        name: &'static str,
        f: fn(f64) -> f64,
        reference: fn(f64) -> f64,
        bound: u64,
        input: fn(&mut Rng) -> f64,
    }

    const UNARY64: [Unary64; 5] = [
        Unary64 {
            name: "exp_f64",
            f: exp_f64,
            reference: f64::exp,
            bound: 1,
            input: |r| match r.next() % 4 {
                0 => r.uniform(-746.0, 710.0),
                1 => r.uniform(-745.2, -707.0),
                2 => r.sign() * r.log_uniform(-1074, 0),
                _ => f64::from_bits(r.next()),
            },
        },
        Unary64 {
            name: "exp_m1_f64",
            f: exp_m1_f64,
            reference: f64::exp_m1,
            bound: 1,
            input: |r| match r.next() % 4 {
                0 => r.uniform(-40.0, 710.0),
                1 => r.uniform(-2.0, 2.0),
                2 => r.sign() * r.log_uniform(-1074, 1),
                _ => f64::from_bits(r.next()),
            },
        },
        Unary64 {
            name: "ln_f64",
            f: ln_f64,
            reference: f64::ln,
            bound: 1,
            input: |r| match r.next() % 4 {
                0 => r.uniform(0.7, 1.42),
                1 => 1.0 + r.sign() * r.log_uniform(-60, -2),
                2 => f64::from_bits(r.next() >> 1),
                _ => f64::from_bits(r.next()),
            },
        },
        Unary64 {
            name: "ln_1p_f64",
            f: ln_1p_f64,
            reference: f64::ln_1p,
            bound: 1,
            input: |r| match r.next() % 4 {
                0 => r.uniform(-1.0, 1.0),
                1 => -r.log_uniform(-1074, 0),
                2 => r.log_uniform(-1074, 1024),
                _ => f64::from_bits(r.next()),
            },
        },
        Unary64 {
            name: "tanh_f64",
            f: tanh_f64,
            reference: f64::tanh,
            bound: 2,
            input: |r| match r.next() % 3 {
                0 => r.uniform(-23.0, 23.0),
                1 => r.sign() * r.log_uniform(-1074, 5),
                _ => f64::from_bits(r.next()),
            },
        },
    ];

    fn check_unary64(k: &Unary64, n: u64) {
        let input = |i: u64| (k.input)(&mut Rng(i));
        let (max, at) = worst(n, |i| {
            let x = input(i);
            ulp64((k.f)(x), (k.reference)(x))
        });
        let x = input(at);
        println!(
            "{}: max {max} ulp over {n} inputs (at {x:e}: {:e}, want {:e})",
            k.name,
            (k.f)(x),
            (k.reference)(x)
        );
        assert!(
            max <= k.bound,
            "{}: {max} ulp at x = {x:e} ({:#018x})",
            k.name,
            x.to_bits()
        );
    }

    #[test]
    fn f64_unary_sampled() {
        for k in &UNARY64 {
            check_unary64(k, 1 << 20);
        }
    }

    #[test]
    #[ignore = "dense: cargo test -p rune-runtime --release --lib vmath -- --ignored"]
    fn f64_unary_dense() {
        for k in &UNARY64 {
            check_unary64(k, 1 << 26);
        }
    }

    const SPECIAL32: [f32; 22] = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        1e-45,
        -1e-45,
        1e-30,
        -1e-30,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        1.0,
        -1.0,
        -2.0,
        20.0,
        -20.0,
        100.0,
        -100.0,
        1e30,
        f32::MAX,
        f32::MIN,
    ];

    const SPECIAL64: [f64; 22] = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        5e-324,
        -5e-324,
        1e-300,
        -1e-300,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        1.0,
        -1.0,
        -2.0,
        40.0,
        -40.0,
        800.0,
        -800.0,
        1e300,
        f64::MAX,
        f64::MIN,
    ];

    /// Inputs whose results are exact or special: ours must equal std's bit for bit (any NaN).
    #[test]
    fn special_values_match_std() {
        for k in &UNARY32 {
            for x in SPECIAL32 {
                let (got, want) = ((k.f)(x), (k.std)(x));
                let exact = !want.is_finite() || want == 0.0 || want.abs() == 1.0 || want == x;
                if exact {
                    assert_eq!(
                        ulp32(got, want),
                        0,
                        "{}({x:e}) = {got:e}, std {want:e}",
                        k.name
                    );
                }
            }
        }
        for k in &UNARY64 {
            for x in SPECIAL64 {
                let (got, want) = ((k.f)(x), (k.reference)(x));
                let exact = !want.is_finite() || want == 0.0 || want.abs() == 1.0 || want == x;
                if exact {
                    assert_eq!(
                        ulp64(got, want),
                        0,
                        "{}({x:e}) = {got:e}, std {want:e}",
                        k.name
                    );
                }
            }
        }
        // The cases named in the contract, explicitly.
        assert_eq!(exp_f32(-100.0), (-100f64).exp() as f32);
        assert!(exp_f32(-100.0) > 0.0 && exp_f32(-100.0) < f32::MIN_POSITIVE);
        assert_eq!(exp_f32(89.0), f32::INFINITY);
        assert_eq!(exp_f64(-740.0), (-740f64).exp());
        assert_eq!(exp_f64(710.0), f64::INFINITY);
        assert_eq!(ln_f32(0.0), f32::NEG_INFINITY);
        assert_eq!(ln_f64(-0.0), f64::NEG_INFINITY);
        assert!(ln_f32(-1e-45).is_nan() && ln_f64(-1e-300).is_nan());
        assert_eq!(ln_1p_f32(-1.0), f32::NEG_INFINITY);
        assert_eq!(ln_1p_f64(-1.0), f64::NEG_INFINITY);
        assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(tanh_f64(-0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(exp_m1_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(exp_m1_f64(-0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!((tanh_f32(-30.0), tanh_f64(30.0)), (-1.0, 1.0));
    }

    /// x, y pairs covering the special cases of C99 Annex F and their neighbours.
    fn pow_grid() -> Vec<(f64, f64)> {
        let mut xs = vec![
            0.0,
            f64::INFINITY,
            f64::NAN,
            1.0,
            0.5,
            2.0,
            3.0,
            0.999,
            1.001,
        ];
        xs.extend([
            5e-324,
            1e-300,
            1e-45,
            1e-10,
            7.5,
            1e10,
            1e38,
            1e300,
            f64::MAX,
        ]);
        let ys = [
            0.0,
            f64::INFINITY,
            f64::NAN,
            1.0,
            2.0,
            3.0,
            0.5,
            1.5,
            -7.0,
            1e-300,
            0.1,
            4503599627370497.0,
            9007199254740994.0,
            8388609.0,
            16777216.0,
            1e10,
            1e300,
        ];
        let mut grid = Vec::new();
        for &x in &xs {
            for &y in &ys {
                for (sx, sy) in [(1.0, 1.0), (-1.0, 1.0), (1.0, -1.0), (-1.0, -1.0)] {
                    grid.push((sx * x, sy * y));
                }
            }
        }
        grid
    }

    #[test]
    fn powf_special_cases_match_std() {
        for (x, y) in pow_grid() {
            let (got, want) = (powf_f64(x, y), x.powf(y));
            let exact = !want.is_finite() || want == 0.0 || want.abs() == 1.0;
            let bound = if exact { 0 } else { 1 };
            assert!(
                ulp64(got, want) <= bound,
                "powf_f64({x:e}, {y:e}) = {got:e}, std {want:e}"
            );
            let (x, y) = (x as f32, y as f32);
            let (got, want) = (powf_f32(x, y), x.powf(y));
            let reference = f64::from(x).powf(f64::from(y)) as f32;
            let exact = !want.is_finite() || want == 0.0 || want.abs() == 1.0;
            assert!(
                if exact {
                    ulp32(got, want) == 0
                } else {
                    ulp32(got, reference) <= 1
                },
                "powf_f32({x:e}, {y:e}) = {got:e}, std {want:e}"
            );
        }
        assert_eq!(powf_f64(-2.0, 3.0), -8.0);
        assert_eq!(powf_f32(-2.0, 3.0), -8.0);
        assert_eq!(powf_f64(-0.0, -3.0), f64::NEG_INFINITY);
        assert_eq!(powf_f32(-0.0, -2.0), f32::INFINITY);
        assert_eq!(powf_f64(f64::NAN, 0.0), 1.0);
        assert_eq!(powf_f32(1.0, f32::NAN), 1.0);
        assert_eq!(powf_f64(-1.0, f64::NEG_INFINITY), 1.0);
        assert!(powf_f64(-8.0, 1.0 / 3.0).is_nan() && powf_f32(-0.5, 0.5).is_nan());
        assert_eq!(
            powf_f64(f64::NEG_INFINITY, -3.0).to_bits(),
            (-0.0f64).to_bits()
        );
    }

    /// Random pairs: y ln|x| uniform over the range of finite nonzero results (so the largest
    /// results, and subnormal ones, are as frequent as any), half with a negative x and an
    /// integer y, and a plain grid-like part with x in (0, 10], y in [-10, 10].
    fn pow_input(r: &mut Rng, z_range: (f64, f64), e_range: (i32, i32)) -> (f64, f64) {
        match r.next() % 3 {
            0 => {
                let x = r.log_uniform(e_range.0, e_range.1);
                (x, r.uniform(z_range.0, z_range.1) / x.ln())
            }
            1 => {
                let x = r.log_uniform(-8, 8);
                let y = (r.uniform(z_range.0, z_range.1) / x.ln()).round();
                (-x, y)
            }
            _ => (r.uniform(0.0, 10.0), r.uniform(-10.0, 10.0)),
        }
    }

    fn check_powf_f64(n: u64) {
        let input = |i: u64| pow_input(&mut Rng(i), (-745.0, 709.7), (-1074, 1024));
        let (max, at) = worst(n, |i| {
            let (x, y) = input(i);
            ulp64(powf_f64(x, y), x.powf(y))
        });
        let (x, y) = input(at);
        println!("powf_f64: max {max} ulp over {n} pairs (at {x:e}, {y:e})");
        assert!(max <= 1, "powf_f64({x:e}, {y:e}): {max} ulp");
    }

    fn check_powf_f32(n: u64) {
        let input = |i: u64| {
            let (x, y) = pow_input(&mut Rng(i), (-103.9, 88.7), (-149, 128));
            (x as f32, y as f32)
        };
        let (max, at) = worst(n, |i| {
            let (x, y) = input(i);
            ulp32(powf_f32(x, y), f64::from(x).powf(f64::from(y)) as f32)
        });
        let (x, y) = input(at);
        println!("powf_f32: max {max} ulp over {n} pairs (at {x:e}, {y:e})");
        assert!(max <= 1, "powf_f32({x:e}, {y:e}): {max} ulp");
    }

    #[test]
    fn powf_sampled() {
        check_powf_f64(1 << 20);
        check_powf_f32(1 << 20);
    }

    #[test]
    #[ignore = "dense: cargo test -p rune-runtime --release --lib vmath -- --ignored"]
    fn powf_dense() {
        check_powf_f64(1 << 26);
        check_powf_f32(1 << 26);
    }
}
