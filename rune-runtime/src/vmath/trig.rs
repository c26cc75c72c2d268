//! Branch-free, auto-vectorisable `sin`, `cos`, `tan` and `sin_cos` for `f32` and `f64`.
//!
//! Every function is `#[inline(always)]` (in release builds; see the module `vmath`), takes and returns
//! plain floats and lowers to straight-line arithmetic, integer and bit operations and selects: no
//! calls, no loops, no table loads with a computed index. An element-wise loop over any of them
//! vectorises (checked for AVX-512 and AVX2 + FMA: 16 or 8 `f32` lanes, 8 or 4 `f64` lanes). No FMA
//! is used and Rust does not contract `a * b + c`, so the results are bit-identical at every CPU
//! feature level.
//!
//! # Range reduction
//!
//! The `f64` functions use one exact reduction for every finite argument, in every lane, and
//! the `f32` ones use it above 6000; there is no slow path. (An out-of-line `#[cold]` path for
//! huge arguments is not an option: LLVM refuses to vectorise a loop body with a call in it,
//! even a conditional one.)
//! With `a = |x| = m · 2^E`, `x · 2/π mod 4` is computed in integers, Payne–Hanek style: the bits
//! of 2/π from the first one whose product with `a` is not a multiple of 4 are cut out of a
//! table of 2/π bits (words picked with selects, then funnel shifts), multiplied by the integer
//! significand `m` in 32-bit limbs (`vpmuludq`), and the low bits of the product are
//! `a · 2/π mod 4` in fixed point. Rounding that to the nearest integer gives the quadrant `q`
//! and a signed fraction in [-1/2, 1/2), which is converted exactly to floating point (integer
//! bits placed in a significand) and multiplied by π/2, giving `y` with `|y| ≤ π/4`.
//!
//! * `f32`, exact: a 96-bit window of 2/π (selects among 5 table words), 3 products; `y` in
//!   `f64` with an absolute error below 2^-68. The smallest `|y|` over all `f32` is 2^-29.2 (at
//!   `x = 16367173 · 2^72 ≈ 7.73e28`, found by a scan of all `f32`), so the relative error is
//!   below 2^-39. For `|x| < 2^-30`, `y = x`.
//! * `f32`, `sin`, `cos` and `sin_cos`: in `f32` up to `|x| ≤ 6000` (Cody–Waite): k =
//!   round(|x|·2/π) < 2^12, π/2 in five `f32` parts, the first four of at most 12 bits so that
//!   their products with k are exact, the first two summing to π/2 rounded to `f32` so that
//!   `|x| - k·C1 - k·C2` is exact, the next two subtracted by exact two-sums, the last one into
//!   the low part: `y = yh + yl` in `f32`, relative error below 2^-40 (test-checked against the
//!   `f64` reduction). Above 6000 the exact `f32` reduction, its `f64` result split into
//!   `yh + yl`. Both are computed in every lane and one is selected, so that a loop stays
//!   branch-free; the exact one is two thirds of the cost.
//! * `f32`, `tan`: up to 6000 a Cody–Waite reduction in `f64`: k = round(|x|·2/π) < 2^12, π/2
//!   in two parts, the first of 31 bits so that `k·C1` and `|x| - k·C1` are exact, the second
//!   subtracted with one rounding: `y` with an error below 2^-74.4 + 2^-53·|y|, relative below
//!   2^-46.5 (|y| > 2^-28 there; a scan of every `f32` up to 6000 measured 2^-53.0). Above 6000
//!   the exact `f32` reduction; both are computed in every lane and one is selected.
//! * `f32`, the fast forms `sin_f32_fast`, `cos_f32_fast`, `sin_cos_f32_fast` and
//!   `tan_f32_fast`: the Cody–Waite reductions alone, valid up to [`FAST_MAX_F32`] (6000) and
//!   there bit-identical to `sin_f32`, `cos_f32`, `sin_cos_f32` and `tan_f32`, in a third
//!   (`tan`: a half) of their time. The elementwise loops run each block of elements with them
//!   first and note whether any argument was outside their range; only such a block is run
//!   again with the full-range functions ([`Kernels`](super::Kernels),
//!   [`fast_then_exact`](super::fast_then_exact)). Since the two agree in range, results do not
//!   depend on how the elements fall into blocks.
//! * `f64`: a 192-bit window (a barrel shifter of selects over 20 table words, 31 selects),
//!   11 products; `y` as a double-double `yh + yl`, via Dekker's exact product with the
//!   two-part π/2, with an absolute error below 2^-125 (test-checked against mpmath). The
//!   smallest `|y|` over all `f64` is 2^-60.9 (at `x = 6381956970095103 · 2^797`), so the
//!   relative error is below 2^-64. For `|x| < 2^-27`, `y = x`.
//!
//! # Kernels
//!
//! Minimax polynomials on `|y| ≤ π/4` in `z = y²` (Remez, coefficients rounded one at a time
//! with the rest refitted):
//!
//! * `f32` `sin`, `cos`, `sin_cos` (in `f32`, 16 lanes with AVX-512): `sin y = yh + (yh·z·S(z)
//!   + yl)` with `S` of degree 3 (relative error 2^-28.1 with the coefficients in `f32`) and
//!   `cos y = 1 - z/2 + (z²·C(z) - yh·yl)` with `C` of degree 2 (2^-30.2), `z = yh²`, `1 - z/2`
//!   kept as a value and its rounding error; each computes both and selects by quadrant, so
//!   `sin_f32`, `cos_f32` and `sin_cos_f32` agree bit for bit and a loop using both `sin` and
//!   `cos` of one argument computes them once.
//! * `tan_f32` (evaluated in `f64`, rounded once to `f32`): `sin y = y · (1 + z·S(z))` and
//!   `cos y = 1 + z·C(z)`, `S` and `C` of degree 3 (degree 9 and 8 in `y`), relative errors
//!   2^-37.5 and 2^-33.8; `tan y` is `sin/cos` (or `-cos/sin` in odd quadrants) divided in
//!   `f64`.
//! * `f64`: `sin(yh + yl) = yh + yh³·S(z) + yl·(1 - z/2)`, `S` of degree 5 (13 in `y`),
//!   relative error 2^-57.9; `cos(yh + yl) = 1 - z/2 + z²·C(z) - yh·yl` with `1 - z/2` kept as
//!   a value and its rounding error, `C` of degree 5 (14 in `y`), relative error 2^-63.9;
//!   `tan` divides the two double-double results with one correction step (exact residual by
//!   Dekker's product).
//!
//! Quadrants are applied with selects and sign flips, the sign of `x` for the odd functions
//! by a sign-bit xor; infinite and NaN arguments give NaN through `+ x · 0`. Special values
//! follow std: `sin(±0) = ±0`, `tan(±0) = ±0`, `cos(±0) = 1`, `sin x = tan x = x` for
//! subnormal and tiny `x`, NaN for ±∞ and NaN.
//!
//! # Measured accuracy
//!
//! * `f32`, all 2^32 arguments, against the `f64` std function of the argument rounded to
//!   `f32`: `sin`, `cos`, `tan` at most 1 ulp; the fast forms give the same bits as `sin_f32`,
//!   `cos_f32` and `tan_f32` for every argument up to `FAST_MAX_F32` (same sweep).
//! * `f64`, against glibc (std): at most 1 ulp for `sin`, `cos` and `tan` over 10^6 mixed
//!   arguments (random significands at every exponent, log-uniform magnitudes, near multiples
//!   of π/2) and 2^28 more in the ignored dense test; against mpmath on hard cases
//!   (`6381956970095103 · 2^797`, `1e22`, `f64::MAX`, ...): at most 1 ulp, where glibc is 8 ulp
//!   off for `cos` and 14 for `tan` at the first one. The bounds asserted are 1 ulp for `sin`
//!   and `cos`, 2 for `tan`.
//!
//! The exhaustive and dense tests are ignored by default:
//! `cargo test -p rune-runtime --release --lib vmath::trig -- --ignored`.

use std::f64::consts::FRAC_PI_2;

use super::dd::{fast_two_sum, two_prod, two_prod_split, two_sum_f32};

const M32: u64 = 0xffff_ffff;

/// Bits of 2/π after 55 zero bits: bit `n` (from the top of word 0) is bit `n - 54` of 2/π
/// (bit 1 has weight 1/2).
const TWO_OVER_PI_F32: [u64; 5] = [
    0x0000_0000_0000_0145,
    0xf306_dc9c_882a_53f8,
    0x4eaf_a3ea_69bb_81b6,
    0xc52b_3278_8720_83fc,
    0xa2c7_57bd_778a_c36e,
];

/// Bits of 2/π after 81 zero bits: bit `n` is bit `n - 80` of 2/π.
const TWO_OVER_PI_F64: [u64; 20] = [
    0x0000_0000_0000_0000,
    0x0000_517c_c1b7_2722,
    0x0a94_fe13_abe8_fa9a,
    0x6ee0_6db1_4acc_9e21,
    0xc820_ff28_b1d5_ef5d,
    0xe2b0_db92_371d_2126,
    0xe970_0324_9775_04e8,
    0xc90e_7f0e_f58e_5894,
    0xd39f_7441_1afa_975d,
    0xa242_74ce_3813_5a2f,
    0xbf20_9cc8_eb1c_c1a9,
    0x9cfa_4e42_2fc5_defc,
    0x941d_8ffc_4bff_ef02,
    0xcc07_f797_88c5_ad05,
    0x368f_b69b_3f67_93e5,
    0x84db_a7a3_1fb3_4f2f,
    0xf516_ba93_dd63_f5f2,
    0xf8bd_9e83_9cfb_c529,
    0x4975_35fd_afd8_8fc6,
    0xae84_2b01_9823_7e3d,
];

/// Low part of π/2: `FRAC_PI_2 + PI_2_LO` is π/2 to about 2^-107.
const PI_2_LO: f64 = 6.123_233_995_736_766e-17;
/// `FRAC_PI_2` split into two halves of 26 significant bits for exact products.
const PI_2_HI_H: f64 = 1.570_796_310_901_641_8;
const PI_2_HI_L: f64 = FRAC_PI_2 - PI_2_HI_H;

/// `tan_f32`'s kernels, evaluated in f64 on |y| ≤ π/4: sin y = y·(1 + z·S(z)), cos y = 1 + z·C(z),
/// z = y². Relative errors 2^-37.5 and 2^-33.8.
const SIN_F32: [f64; 4] = [
    -0.166_666_666_407_866_43,
    0.008_333_329_303_629_866,
    -0.000_198_393_118_774_052_95,
    2.718_117_872_251_560_6e-6,
];
const COS_F32: [f64; 4] = [
    -0.499_999_996_943_505_5,
    0.041_666_620_342_948_22,
    -0.001_388_668_119_940_052_3,
    2.438_352_505_124_153_6e-5,
];
/// f32 kernels in f32 on |y| ≤ π/4 · 1.001: sin y = y + y·z·S(z) (2^-28.1 with the
/// coefficients in f32), cos y = 1 - z/2 + z²·C(z) (2^-30.2), z = y².
const SIN_F32N: [f32; 4] = [
    -0.166_666_67,
    0.008_333_332,
    -0.000_198_400_77,
    2.724_879_8e-6,
];
const COS_F32N: [f32; 3] = [0.041_666_664, -0.001_388_83, 2.454_710_2e-5];
/// π/2 = C1 + C2 + C3 + C4 + C5 (to 2^-78): C1 + C2 is π/2 rounded to `f32`, C1 of 8 bits,
/// C2, C3 and C4 of at most 12.
const PI_2_C1_F32: f32 = 1.570_312_5;
const PI_2_C2_F32: f32 = 0.000_483_870_5;
const PI_2_C3_F32: f32 = -4.371_395_3e-8;
const PI_2_C4_F32: f32 = 2.563_283e-12;
const PI_2_C5_F32: f32 = 6.123_234e-17;
/// The largest argument of the fast `f32` kernels ([`sin_cos_f32_fast`], [`tan_f32_fast`], ..):
/// up to it the Cody–Waite reductions are exact enough (k < 2^12).
pub const FAST_MAX_F32: f32 = 6000.0;
/// 1.5 · 2^23, for rounding to an integer in `f32`.
const ROUND_SHIFT_F32: f32 = 12_582_912.0;
/// π/2 = C1 + C2 (to 2^-87.8) for `tan_f32`'s reduction in `f64`: C1 of 31 bits, so that `k·C1`
/// is exact for k < 2^22.
const PI_2_C1_TAN: f64 = 1.570_796_326_734_125_6;
const PI_2_C2_TAN: f64 = 6.077_100_506_506_192e-11;
/// 1.5 · 2^52, for rounding to an integer in `f64`.
const ROUND_SHIFT_F64: f64 = 6_755_399_441_055_744.0;
/// f64 kernels on |y| ≤ π/4: sin y = y + y³·S(z) (relative error 2^-57.9),
/// cos y = 1 - z/2 + z²·C(z) (relative error 2^-63.9).
const SIN_F64: [f64; 6] = [
    -0.166_666_666_666_666_3,
    0.008_333_333_333_321_84,
    -0.000_198_412_698_293_585_28,
    2.755_731_353_851_423e-6,
    -2.505_073_438_925_581_6e-8,
    1.589_543_328_916_819e-10,
];
const COS_F64: [f64; 6] = [
    0.041_666_666_666_666_595,
    -0.001_388_888_888_887_334,
    2.480_158_728_899_978_2e-5,
    -2.755_731_421_617_017_5e-7,
    2.087_570_525_578_262_3e-9,
    -1.135_874_102_823_497_8e-11,
];

/// `v · 2^-k` for an integer `v < 2^52`, exactly: `v` is placed in the significand of
/// `2^(52-k)`, which is then subtracted.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn scaled_u52(v: u64, k: u64) -> f64 {
    let base = (1075 - k) << 52;
    f64::from_bits(base | v) - f64::from_bits(base)
}

/// `v · 2^-k - 1/2` for an integer `v < 2^52`, exactly (as `scaled_u52`, the subtraction of
/// 1/2 being exact too since `v · 2^-k < 1`).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn scaled_u52_minus_half(v: u64, k: u64) -> f64 {
    let base = (1075 - k) << 52;
    f64::from_bits(base | v) - (f64::from_bits(base) + 0.5)
}

/// The high word of `(hi:lo) << s` for `s < 64`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn shl_funnel(hi: u64, lo: u64, s: u64) -> u64 {
    (hi << s) | lo.checked_shr((64 - s) as u32).unwrap_or(0)
}

/// Reduces `a = |x|` to `(y, q)` with `a = (4k + q)·π/2 + y`, `|y| ≤ π/4`, `y` in f64 with
/// an absolute error below 2^-68, a relative one below 2^-39 (|y| > 2^-29.3 for every finite
/// f32). Meaningless for infinite or NaN `a` (the callers add `nan_or_zero(x)`).
///
/// `a = m · 2^(e-150)` with `m < 2^24`; the 96 bits of 2/π starting at bit `e - 151` (the
/// earlier ones add multiples of 4 to `a · 2/π`) are cut from the table with selects and
/// funnel shifts, multiplied by `m` exactly in 32-bit limbs, and the low 96 bits of the
/// product are `a · 2/π mod 4` in fixed point with 94 fraction bits. Below 2^-30 the window
/// would hold too few bits of 2/π; there `y = a`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn reduce_f32(a: f32) -> (f64, u64) {
    let ux = u64::from(a.to_bits());
    let m = (ux & 0x7f_ffff) | 0x80_0000;
    // Bit offset of the window in the table; wraps for tiny `a`, whose result is not used.
    let o = (ux >> 23).wrapping_sub(97);
    let s = o & 63;
    let t = &TWO_OVER_PI_F32;
    let (t0, t1, t2) = if o < 64 {
        (t[0], t[1], t[2])
    } else if o < 128 {
        (t[1], t[2], t[3])
    } else {
        (t[2], t[3], t[4])
    };
    let hi = shl_funnel(t0, t1, s);
    let lo = shl_funnel(t1, t2, s);
    let p0 = m * (lo >> 32);
    let p1 = m * (hi & M32) + (p0 >> 32);
    let p2 = m * (hi >> 32) + (p1 >> 32);
    // Round to the nearest quadrant: the fraction becomes signed, in [-1/2, 1/2).
    let top = (p2 & M32) + (1 << 29);
    let q = (top >> 30) & 3;
    let f = scaled_u52_minus_half(top & 0x3fff_ffff, 30)
        + (scaled_u52(p1 & M32, 62) + scaled_u52(p0 & M32, 94));
    if a < 1.0 / (1u64 << 30) as f32 {
        (f64::from(a), 0)
    } else {
        (f * FRAC_PI_2, q)
    }
}

/// `TWO_OVER_PI_F64[i..i + 4]` for `i ≤ 16` (any words for other `i`), by selects: a
/// barrel shifter over the bits of `i`, written out as scalars (an indexed load or a copy
/// loop would become gathers, which LLVM does not emit, nor vectorise around, for AVX2).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn table_words_f64(i: u64) -> [u64; 4] {
    let t = &TWO_OVER_PI_F64;
    let pick = |bit: u64, on: u64, off: u64| if i & bit != 0 { on } else { off };
    // After each stage w[k] is t[k + (the bits of i handled so far)].
    let w8 = [
        pick(8, t[8], t[0]),
        pick(8, t[9], t[1]),
        pick(8, t[10], t[2]),
        pick(8, t[11], t[3]),
        pick(8, t[12], t[4]),
        pick(8, t[13], t[5]),
        pick(8, t[14], t[6]),
        pick(8, t[15], t[7]),
        pick(8, t[16], t[8]),
        pick(8, t[17], t[9]),
        pick(8, t[18], t[10]),
    ];
    let w4 = [
        pick(4, w8[4], w8[0]),
        pick(4, w8[5], w8[1]),
        pick(4, w8[6], w8[2]),
        pick(4, w8[7], w8[3]),
        pick(4, w8[8], w8[4]),
        pick(4, w8[9], w8[5]),
        pick(4, w8[10], w8[6]),
    ];
    let w2 = [
        pick(2, w4[2], w4[0]),
        pick(2, w4[3], w4[1]),
        pick(2, w4[4], w4[2]),
        pick(2, w4[5], w4[3]),
        pick(2, w4[6], w4[4]),
    ];
    let w1 = [
        pick(1, w2[1], w2[0]),
        pick(1, w2[2], w2[1]),
        pick(1, w2[3], w2[2]),
        pick(1, w2[4], w2[3]),
    ];
    [
        pick(16, t[16], w1[0]),
        pick(16, t[17], w1[1]),
        pick(16, t[18], w1[2]),
        pick(16, t[19], w1[3]),
    ]
}

/// Reduces `a = |x|` to `(yh, yl, q)` with `a = (4k + q)·π/2 + yh + yl`, `|yh + yl| ≤ π/4`,
/// `|yl| ≤ ulp(yh)`, with an absolute error below 2^-125 + 2^-100·|y|, so a relative one below
/// 2^-64 (|y| > 2^-61 for every finite f64). NaN for infinite or NaN `a`.
///
/// `a = m · 2^(e-1075)` with `m < 2^53`; the 192 bits of 2/π starting at bit `e - 1076` are
/// cut from the table (four words picked by `table_words_f64`, two funnel shifts each),
/// multiplied by `m` in 32-bit limbs, and the low 192 bits of the product are
/// `a · 2/π mod 4` with 190 fraction bits, of which the top 126 are converted. Below 2^-27,
/// `y = a`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn reduce_f64(a: f64) -> (f64, f64, u64) {
    let ux = a.to_bits();
    let e = ux >> 52;
    let m = (ux & ((1 << 52) - 1)) | (1 << 52);
    // Bit offset of the window in the table; wraps for tiny `a`, whose result is not used.
    let o = e.wrapping_sub(996);
    let s = o & 63;
    let [t0, t1, t2, t3] = table_words_f64(o >> 6);
    let wh = shl_funnel(t0, t1, s);
    let wm = shl_funnel(t1, t2, s);
    let wl = shl_funnel(t2, t3, s);
    let w = [wl & M32, wl >> 32, wm & M32, wm >> 32, wh & M32, wh >> 32];
    let (ml, mh) = (m & M32, m >> 32);
    // Limb k of m·w gets lo(ml·w[k]) + hi(ml·w[k-1]) + mh·w[k-1] + the carry.
    let p0 = ml * w[0];
    let p1 = ml * w[1];
    let p2 = ml * w[2];
    let p3 = ml * w[3];
    let p4 = ml * w[4];
    let p5 = ml * w[5];
    let acc1 = (p1 & M32) + (p0 >> 32) + mh * w[0];
    let acc2 = (p2 & M32) + (p1 >> 32) + mh * w[1] + (acc1 >> 32);
    let acc3 = (p3 & M32) + (p2 >> 32) + mh * w[2] + (acc2 >> 32);
    let acc4 = (p4 & M32) + (p3 >> 32) + mh * w[3] + (acc3 >> 32);
    let acc5 = (p5 & M32) + (p4 >> 32) + mh * w[4] + (acc4 >> 32);
    let top = (acc5 & M32) + (1 << 29);
    let q = (top >> 30) & 3;
    // The signed fraction (top30 - 2^29)·2^-30 + r4·2^-62 + r3·2^-94 + r2·2^-126 as a
    // double-double.
    let (a1, e1) = fast_two_sum(
        scaled_u52_minus_half(top & 0x3fff_ffff, 30),
        scaled_u52(acc4 & M32, 62),
    );
    let (a2, e2) = fast_two_sum(a1, scaled_u52(acc3 & M32, 94));
    let lo = e1 + (e2 + scaled_u52(acc2 & M32, 126));
    let (p, pe) = two_prod_split(a2, FRAC_PI_2, (PI_2_HI_H, PI_2_HI_L));
    let (yh, yl) = fast_two_sum(p, pe + (a2 * PI_2_LO + lo * FRAC_PI_2));
    let yh = yh + a * 0.0;
    if a < 1.0 / (1u64 << 27) as f64 {
        (a, 0.0, 0)
    } else {
        (yh, yl, q)
    }
}

/// `(sin y, cos y)` for `|y| ≤ π/4`, in f64, for `tan_f32`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn kernels_f32(y: f64) -> (f64, f64) {
    let z = y * y;
    let s = y * (1.0 + z * (SIN_F32[0] + z * (SIN_F32[1] + z * (SIN_F32[2] + z * SIN_F32[3]))));
    let c = 1.0 + z * (COS_F32[0] + z * (COS_F32[1] + z * (COS_F32[2] + z * COS_F32[3])));
    (s, c)
}

/// `(sin y, cos y)` in `f32` for `y = yh + yl`, `|y| ≤ π/4 + 2^-11`, `|yl| ≤ ulp(yh)`:
/// `sin y = yh + (yh·z·S(z) + yl)` and `cos y = 1 - z/2 + (z²·C(z) - yh·yl)` with `z = yh²`,
/// `1 - z/2` kept as a value and its rounding error.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn kernels_f32_native(yh: f32, yl: f32) -> (f32, f32) {
    let z = yh * yh;
    let s = yh
        + (yh * z * (SIN_F32N[0] + z * (SIN_F32N[1] + z * (SIN_F32N[2] + z * SIN_F32N[3]))) + yl);
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    let c = w
        + (((1.0 - w) - hz)
            + (z * z * (COS_F32N[0] + z * (COS_F32N[1] + z * COS_F32N[2])) - yh * yl));
    (s, c)
}

/// Reduces `a = |x| ≤ FAST_MAX_F32` to `(yh, yl, q)` with `a = (4k + q)·π/2 + yh + yl`, in
/// `f32`, by Cody–Waite: k = round(a·2/π) < 2^12, and π/2 in five parts, the first four of at
/// most 12 bits, so that `k·C1` .. `k·C4` are exact; `C1 + C2` is π/2 rounded to 24 bits, so
/// `a - k·C1 - k·C2` is exact too, the subtractions of `k·C3` and `k·C4` are exact two-sums and
/// `k·C5` goes into the low part. Above `FAST_MAX_F32` (and for infinite or NaN `a`) the
/// result is meaningless.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn reduce_f32_fast(a: f32) -> (f32, f32, u32) {
    let t = a * std::f32::consts::FRAC_2_PI + ROUND_SHIFT_F32;
    let kf = t - ROUND_SHIFT_F32;
    let k = t.to_bits().wrapping_sub(ROUND_SHIFT_F32.to_bits());
    let t2 = (a - kf * PI_2_C1_F32) - kf * PI_2_C2_F32;
    let (yh, e3) = two_sum_f32(t2, -(kf * PI_2_C3_F32));
    let (yh, e4) = two_sum_f32(yh, -(kf * PI_2_C4_F32));
    let yl = (e3 + e4) - kf * PI_2_C5_F32;
    (yh, yl, k & 3)
}

/// Reduces `a = |x| ≤ FAST_MAX_F32` to `(y, q)` with `a = (4k + q)·π/2 + y`, in `f64`, for
/// `tan_f32`, by Cody–Waite: k = round(a·2/π) < 2^12, and π/2 in two parts, the first of 31
/// bits, so that `k·C1` and `a - k·C1` are exact; `k·C2` is subtracted with one rounding. The
/// error is below 2^-74.4 + 2^-53·|y|, so the relative one below 2^-46.5, since |y| > 2^-28 for
/// every `f32` from π/4 to `FAST_MAX_F32` (a scan of them all, which measured 2^-53.0 against
/// the exact reduction). Below π/4, `y = a` exactly. Above
/// `FAST_MAX_F32` (and for infinite or NaN `a`) the result is meaningless.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn reduce_tan_f32_fast(a: f32) -> (f64, u64) {
    let a = f64::from(a);
    let t = a * std::f64::consts::FRAC_2_PI + ROUND_SHIFT_F64;
    let kf = t - ROUND_SHIFT_F64;
    let k = t.to_bits().wrapping_sub(ROUND_SHIFT_F64.to_bits());
    ((a - kf * PI_2_C1_TAN) - kf * PI_2_C2_TAN, k & 3)
}

/// Reduces `a = |x|` to `(y, q)` for `tan_f32`: `reduce_tan_f32_fast` up to `FAST_MAX_F32`,
/// the exact `reduce_f32` above. Both are computed and one selected per lane.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn reduce_tan_f32(a: f32) -> (f64, u64) {
    let fast = reduce_tan_f32_fast(a);
    let exact = reduce_f32(a);
    if a <= FAST_MAX_F32 {
        fast
    } else {
        exact
    }
}

/// Reduces `a = |x|` to `(yh, yl, q)` as `reduce_f32_fast` up to `FAST_MAX_F32`, and above by
/// the exact reduction `reduce_f32` (in `f64`), split into two `f32`. Both are computed and
/// one selected per lane.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn reduce_f32_native(a: f32) -> (f32, f32, u32) {
    let fast = reduce_f32_fast(a);
    let (y, q) = reduce_f32(a);
    let y1 = y as f32;
    let y2 = (y - f64::from(y1)) as f32;
    if a <= FAST_MAX_F32 {
        fast
    } else {
        (y1, y2, q as u32)
    }
}

/// `sin(yh + yl)` as an unevaluated sum `(hi, lo)`, `|lo| ≤ ulp(hi)`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn sin_kernel_f64(yh: f64, yl: f64) -> (f64, f64) {
    let z = yh * yh;
    let v = z * yh;
    let r = SIN_F64[1] + z * (SIN_F64[2] + z * (SIN_F64[3] + z * (SIN_F64[4] + z * SIN_F64[5])));
    // sin(yh + yl) = yh + yh³·S(z) + yl·(1 - z/2), neglecting yl·z²/24 < 2^-58·|yh|.
    fast_two_sum(yh, v * SIN_F64[0] + (v * z * r + yl * (1.0 - 0.5 * z)))
}

/// `cos(yh + yl)` as an unevaluated sum `(hi, lo)`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn cos_kernel_f64(yh: f64, yl: f64) -> (f64, f64) {
    let z = yh * yh;
    let r = COS_F64[0]
        + z * (COS_F64[1]
            + z * (COS_F64[2] + z * (COS_F64[3] + z * (COS_F64[4] + z * COS_F64[5]))));
    // cos(yh + yl) = 1 - z/2 + z²·C(z) - yh·yl (neglecting yl·yh³/6), with 1 - z/2 split into
    // w + its rounding error.
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    fast_two_sum(w, ((1.0 - w) - hz) + (z * z * r - yh * yl))
}

/// `v` with its sign flipped if bit 0 of `flip` is set.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn flip_f64(v: f64, flip: u64) -> f64 {
    f64::from_bits(v.to_bits() ^ (flip << 63))
}

/// `v` with its sign flipped if bit 0 of `flip` is set.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn flip_f32(v: f32, flip: u32) -> f32 {
    f32::from_bits(v.to_bits() ^ (flip << 31))
}

/// ±0 for finite `x`, NaN for infinite or NaN `x`: added to a result that is not -0, it makes
/// the result NaN exactly when it should be.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn nan_or_zero(x: f32) -> f32 {
    x * 0.0
}

/// `v` with the sign of `x` multiplied in (`v · sign(x)` for odd functions).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn odd_f32(v: f32, x: f32) -> f32 {
    f32::from_bits(v.to_bits() ^ (x.to_bits() & 0x8000_0000))
}

/// As `odd_f32`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn odd_f64(v: f64, x: f64) -> f64 {
    f64::from_bits(v.to_bits() ^ (x.to_bits() & (1 << 63)))
}

/// Sine of `x` (radians), within 1 ulp for every `f32`. Branch-free; see the module doc.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn sin_f32(x: f32) -> f32 {
    sin_cos_f32(x).0
}

/// Cosine of `x` (radians), within 1 ulp for every `f32`. Branch-free; see the module doc.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn cos_f32(x: f32) -> f32 {
    sin_cos_f32(x).1
}

/// Tangent of `x` (radians), within 1 ulp for every `f32`. Branch-free; see the module doc.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn tan_f32(x: f32) -> f32 {
    tan_reduced_f32(x, reduce_tan_f32(x.abs()))
}

/// [`tan_f32`] for `|x| ≤ FAST_MAX_F32`, bit-identical to it there, without the exact
/// reduction. Above `FAST_MAX_F32` (and for infinite or NaN `x`) the result is meaningless:
/// callers check the bound with [`beyond_fast_f32`] (see [`Kernels`](super::Kernels)).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn tan_f32_fast(x: f32) -> f32 {
    tan_reduced_f32(x, reduce_tan_f32_fast(x.abs()))
}

/// `tan x` from the reduction `(y, q)` of `|x|`: `sin y / cos y`, or `-cos y / sin y` in odd
/// quadrants, divided in `f64` and rounded once.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn tan_reduced_f32(x: f32, (y, q): (f64, u64)) -> f32 {
    let (s, c) = kernels_f32(y);
    let odd = q & 1;
    let (n, d) = if odd == 0 { (s, c) } else { (c, s) };
    odd_f32(flip_f64(n / d, odd) as f32 + nan_or_zero(x), x)
}

/// `(sin x, cos x)` with one range reduction; bit-identical to `(sin_f32(x), cos_f32(x))`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn sin_cos_f32(x: f32) -> (f32, f32) {
    sin_cos_reduced_f32(x, reduce_f32_native(x.abs()))
}

/// `(sin x, cos x)` for `|x| ≤ FAST_MAX_F32`, bit-identical to [`sin_cos_f32`] there, without
/// the exact reduction: about a third of its time. Above `FAST_MAX_F32` (and for infinite or
/// NaN `x`) the results are meaningless: callers check the bound (see
/// [`Kernels`](super::Kernels)).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn sin_cos_f32_fast(x: f32) -> (f32, f32) {
    sin_cos_reduced_f32(x, reduce_f32_fast(x.abs()))
}

/// Whether `x` is out of the fast forms' range: `|x| > FAST_MAX_F32`, infinite or NaN.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn beyond_fast_f32(x: f32) -> bool {
    // One integer comparison of the magnitudes' bits (infinities and NaNs are above every
    // finite float): `a > FAST_MAX_F32 || a.is_nan()` became a branch in the loops.
    x.to_bits() & 0x7fff_ffff > FAST_MAX_F32.to_bits()
}

/// [`sin_f32`] for `|x| ≤ FAST_MAX_F32`, as [`sin_cos_f32_fast`].
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn sin_f32_fast(x: f32) -> f32 {
    sin_cos_f32_fast(x).0
}

/// [`cos_f32`] for `|x| ≤ FAST_MAX_F32`, as [`sin_cos_f32_fast`].
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn cos_f32_fast(x: f32) -> f32 {
    sin_cos_f32_fast(x).1
}

/// `(sin x, cos x)` from the reduction `(yh, yl, q)` of `|x|`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn sin_cos_reduced_f32(x: f32, (yh, yl, q): (f32, f32, u32)) -> (f32, f32) {
    let (s, c) = kernels_f32_native(yh, yl);
    let (vs, vc) = if q & 1 == 0 { (s, c) } else { (c, s) };
    let nan = nan_or_zero(x);
    (
        odd_f32(flip_f32(vs, q >> 1) + nan, x),
        flip_f32(vc, ((q + 1) >> 1) & 1) + nan,
    )
}

/// Sine of `x` (radians), within 1 ulp (of glibc and of mpmath on every argument tested).
/// Branch-free; see the module doc.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn sin_f64(x: f64) -> f64 {
    let (yh, yl, q) = reduce_f64(x.abs());
    let (sh, sl) = sin_kernel_f64(yh, yl);
    let (ch, cl) = cos_kernel_f64(yh, yl);
    let v = if q & 1 == 0 { sh + sl } else { ch + cl };
    odd_f64(flip_f64(v, q >> 1), x)
}

/// Cosine of `x` (radians), within 1 ulp (of glibc and of mpmath on every argument tested).
/// Branch-free; see the module doc.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn cos_f64(x: f64) -> f64 {
    let (yh, yl, q) = reduce_f64(x.abs());
    let (sh, sl) = sin_kernel_f64(yh, yl);
    let (ch, cl) = cos_kernel_f64(yh, yl);
    let v = if q & 1 == 0 { ch + cl } else { sh + sl };
    flip_f64(v, ((q + 1) >> 1) & 1)
}

/// Tangent of `x` (radians), within 2 ulp (1 measured, against glibc and mpmath).
/// Branch-free; see the module doc.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn tan_f64(x: f64) -> f64 {
    let (yh, yl, q) = reduce_f64(x.abs());
    let (sh, sl) = sin_kernel_f64(yh, yl);
    let (ch, cl) = cos_kernel_f64(yh, yl);
    let odd = q & 1;
    let (nh, nl, dh, dl) = if odd == 0 {
        (sh, sl, ch, cl)
    } else {
        (ch, cl, sh, sl)
    };
    // (nh + nl)/(dh + dl) with a relative error near 2^-100 before the final rounding:
    // t = nh/dh, then one correction with the residual n - t·d, t·dh taken exactly.
    let inv = 1.0 / dh;
    let t = nh * inv;
    let (p, pe) = two_prod(t, dh);
    let r = ((nh - p) - pe) + (nl - t * dl);
    odd_f64(flip_f64(t + r * inv, odd), x)
}

/// `(sin x, cos x)` with one range reduction; bit-identical to `(sin_f64(x), cos_f64(x))`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn sin_cos_f64(x: f64) -> (f64, f64) {
    let (yh, yl, q) = reduce_f64(x.abs());
    let (sh, sl) = sin_kernel_f64(yh, yl);
    let (ch, cl) = cos_kernel_f64(yh, yl);
    let (s, c) = (sh + sl, ch + cl);
    let (vs, vc) = if q & 1 == 0 { (s, c) } else { (c, s) };
    (
        odd_f64(flip_f64(vs, q >> 1), x),
        flip_f64(vc, ((q + 1) >> 1) & 1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::{PI, TAU};

    /// Distance in ulps (0 for two NaNs, `u64::MAX` for one NaN; ±0 are 0 apart).
    fn ulps_f32(a: f32, b: f32) -> u64 {
        if a.is_nan() || b.is_nan() {
            return if a.is_nan() && b.is_nan() {
                0
            } else {
                u64::MAX
            };
        }
        let key = |v: f32| {
            let i = i64::from(v.to_bits() as i32);
            if i < 0 {
                i64::from(i32::MIN) - i
            } else {
                i
            }
        };
        key(a).abs_diff(key(b))
    }

    fn ulps_f64(a: f64, b: f64) -> u64 {
        if a.is_nan() || b.is_nan() {
            return if a.is_nan() && b.is_nan() {
                0
            } else {
                u64::MAX
            };
        }
        let key = |v: f64| {
            let i = v.to_bits() as i64;
            if i < 0 {
                i64::MIN - i
            } else {
                i
            }
        };
        key(a).abs_diff(key(b))
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

        /// Uniform in [0, 1).
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// The worst case for reducing an f32 (|x mod π/2| = 2^-29.2), found by a scan of all f32.
    const HARD_F32: [f32; 6] = [
        7.729_179e28,
        2.199_938_5e10,
        1.545_835_8e29,
        252.898_21,
        4.638_183_4e25,
        1.522_789e12,
    ];

    /// Largest ulp errors of sin, cos, tan against the f64 std functions rounded to f32, with an
    /// argument where each occurs, over `xs`; asserts that `sin_cos_f32` matches bit for bit,
    /// and so do the fast forms (`sin`, `cos`, `sin_cos`, `tan`) up to `FAST_MAX_F32`.
    fn max_ulps_f32(xs: impl Iterator<Item = f32>) -> [(u64, f32); 3] {
        let mut worst = [(0, 0.0); 3];
        for x in xs {
            let (s, c, t) = (sin_f32(x), cos_f32(x), tan_f32(x));
            let sc = sin_cos_f32(x);
            assert_eq!(
                (sc.0.to_bits(), sc.1.to_bits()),
                (s.to_bits(), c.to_bits()),
                "sin_cos_f32({x:e})"
            );
            if x.abs() <= FAST_MAX_F32 {
                let fast = sin_cos_f32_fast(x);
                assert_eq!(
                    (fast.0.to_bits(), fast.1.to_bits()),
                    (s.to_bits(), c.to_bits()),
                    "sin_cos_f32_fast({x:e})"
                );
                assert_eq!(
                    sin_f32_fast(x).to_bits(),
                    s.to_bits(),
                    "sin_f32_fast({x:e})"
                );
                assert_eq!(
                    cos_f32_fast(x).to_bits(),
                    c.to_bits(),
                    "cos_f32_fast({x:e})"
                );
                assert_eq!(
                    tan_f32_fast(x).to_bits(),
                    t.to_bits(),
                    "tan_f32_fast({x:e})"
                );
            }
            let xd = f64::from(x);
            let refs = [xd.sin() as f32, xd.cos() as f32, xd.tan() as f32];
            for (k, v) in [s, c, t].into_iter().enumerate() {
                let u = ulps_f32(v, refs[k]);
                if u > worst[k].0 {
                    worst[k] = (u, x);
                }
            }
        }
        worst
    }

    fn max_ulps_f64(xs: impl Iterator<Item = f64>) -> [(u64, f64); 3] {
        let mut worst = [(0, 0.0); 3];
        for x in xs {
            let (s, c, t) = (sin_f64(x), cos_f64(x), tan_f64(x));
            let sc = sin_cos_f64(x);
            assert_eq!(
                (sc.0.to_bits(), sc.1.to_bits()),
                (s.to_bits(), c.to_bits()),
                "sin_cos_f64({x:e})"
            );
            for (k, (v, r)) in [(s, x.sin()), (c, x.cos()), (t, x.tan())]
                .into_iter()
                .enumerate()
            {
                let u = ulps_f64(v, r);
                if u > worst[k].0 {
                    worst[k] = (u, x);
                }
            }
        }
        worst
    }

    fn assert_bounds<T: std::fmt::Debug>(what: &str, worst: [(u64, T); 3], bounds: [u64; 3]) {
        println!(
            "{what}: max ulp sin {:?}, cos {:?}, tan {:?}",
            worst[0], worst[1], worst[2]
        );
        for (k, name) in ["sin", "cos", "tan"].into_iter().enumerate() {
            assert!(
                worst[k].0 <= bounds[k],
                "{what}: {name} is {} ulp off at {:?}",
                worst[k].0,
                worst[k].1
            );
        }
    }

    /// ≈1e6 f32: every exponent (subnormals included) with random significands, near 0,
    /// near multiples of π/2, moderate, random bit patterns, hard cases and boundaries.
    fn mixed_f32() -> Vec<f32> {
        let mut rng = Rng(0x7219_2a1b);
        let mut v: Vec<f32> = HARD_F32.to_vec();
        let tiny = 1.0 / (1u64 << 30) as f32;
        for c in [
            tiny,
            f32::MIN_POSITIVE,
            f32::MAX,
            std::f32::consts::FRAC_PI_2,
            std::f32::consts::PI,
        ] {
            for d in -3..=3 {
                v.push(f32::from_bits(c.to_bits().wrapping_add_signed(d)));
            }
        }
        for e in 0..255u32 {
            for _ in 0..400 {
                v.push(f32::from_bits((e << 23) | (rng.next() as u32 & 0x7f_ffff)));
            }
        }
        for _ in 0..100_000 {
            v.push(2f64.powf(-40.0 * rng.unit()) as f32);
        }
        for k in 1..=50_000u32 {
            let c = (f64::from(k) * FRAC_PI_2) as f32;
            for d in -2..=2 {
                v.push(f32::from_bits(c.to_bits().wrapping_add_signed(d)));
            }
        }
        for j in 0..2_000 {
            // k·π/2 for k up to 2^127.
            let k = (2f64.powf(127.0 * f64::from(j) / 2000.0) * (1.0 + rng.unit())).round();
            v.push((k * FRAC_PI_2) as f32);
        }
        for _ in 0..150_000 {
            v.push((200.0 * rng.unit() - 100.0) as f32);
        }
        while v.len() < 1_000_000 {
            let x = f32::from_bits(rng.next() as u32);
            if x.is_finite() {
                v.push(x);
            }
        }
        for i in 0..v.len() / 2 {
            v[2 * i] = -v[2 * i];
        }
        v
    }

    #[test]
    fn f32_special_values() {
        let nan = f32::NAN;
        for x in [
            f32::INFINITY,
            f32::NEG_INFINITY,
            nan,
            -nan,
            f32::from_bits(0x7fc0_1234),
        ] {
            assert!(sin_f32(x).is_nan() && cos_f32(x).is_nan() && tan_f32(x).is_nan());
            let (s, c) = sin_cos_f32(x);
            assert!(s.is_nan() && c.is_nan());
        }
        for x in [0.0f32, -0.0] {
            assert_eq!(sin_f32(x).to_bits(), x.to_bits());
            assert_eq!(tan_f32(x).to_bits(), x.to_bits());
            assert_eq!(cos_f32(x), 1.0);
            assert_eq!(sin_cos_f32(x).0.to_bits(), x.to_bits());
        }
        // Subnormals and tiny arguments: sin x = tan x = x, cos x = 1 (as std rounds them).
        let mut rng = Rng(3);
        for i in 0..20_000 {
            let b = if i < 10_000 {
                i
            } else {
                rng.next() as u32 & 0x007f_ffff
            };
            let b = b | (rng.next() as u32 & 0x8000_0000);
            for x in [
                f32::from_bits(b),
                f32::from_bits(b + (0x0180_0000 << (i % 4))),
            ] {
                assert_eq!(sin_f32(x).to_bits(), x.to_bits(), "sin_f32({x:e})");
                assert_eq!(tan_f32(x).to_bits(), x.to_bits(), "tan_f32({x:e})");
                assert_eq!(cos_f32(x), 1.0, "cos_f32({x:e})");
            }
        }
        assert_bounds(
            "f32 special",
            max_ulps_f32([f32::MAX, -f32::MAX, f32::MIN_POSITIVE, 1.0, -1.0].into_iter()),
            [1, 1, 1],
        );
    }

    /// ≈1e6 mixed arguments against the f64 std functions; a couple of seconds in debug.
    #[test]
    fn f32_mixed_points() {
        assert_bounds(
            "f32 mixed 1e6",
            max_ulps_f32(mixed_f32().into_iter()),
            [1, 1, 1],
        );
    }

    /// Every f32 (2^32 bit patterns), on all cores. Run with
    /// `cargo test -p rune-runtime --release --lib vmath::trig -- --ignored`.
    #[test]
    #[ignore = "exhaustive, minutes in release"]
    fn f32_exhaustive() {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
        let chunk = (1u64 << 32).div_ceil(threads);
        let results: Vec<[(u64, f32); 3]> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (lo, hi) = (t * chunk, ((t + 1) * chunk).min(1 << 32));
                    scope.spawn(move || max_ulps_f32((lo..hi).map(|b| f32::from_bits(b as u32))))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut worst = [(0, 0.0); 3];
        for r in results {
            for k in 0..3 {
                if r[k].0 > worst[k].0 {
                    worst[k] = r[k];
                }
            }
        }
        assert_bounds("f32 exhaustive", worst, [1, 1, 1]);
    }

    /// The fast forms give the full-range functions' bits over `[-FAST_MAX_F32, FAST_MAX_F32]`
    /// (every 1999th bit pattern, the 2^16 patterns below the bound and the special values),
    /// and both stay within 1 ulp there.
    #[test]
    fn f32_fast_forms_agree_with_the_full_range_ones_in_range() {
        let edge = FAST_MAX_F32.to_bits();
        let points = (0..=edge)
            .step_by(1999)
            .chain(edge - (1 << 16)..=edge)
            .map(f32::from_bits)
            .flat_map(|x| [x, -x]);
        assert_bounds("f32 fast range", max_ulps_f32(points), [1, 1, 1]);
        for x in [0.0f32, -0.0, 1e-40, FAST_MAX_F32, -FAST_MAX_F32] {
            let (s, c) = sin_cos_f32_fast(x);
            assert_eq!(s.to_bits(), sin_f32(x).to_bits(), "{x:e}");
            assert_eq!(c.to_bits(), cos_f32(x).to_bits(), "{x:e}");
            assert_eq!(tan_f32_fast(x).to_bits(), tan_f32(x).to_bits(), "{x:e}");
        }
        // Subnormal and tiny arguments: tan x = x in the fast form too.
        for b in (0..0x0100_0000u32)
            .step_by(997)
            .chain([0x3000_0000, 0x3800_0000])
        {
            for x in [f32::from_bits(b), -f32::from_bits(b)] {
                assert_eq!(tan_f32_fast(x).to_bits(), x.to_bits(), "{x:e}");
            }
        }
        // Infinite and NaN arguments give NaN in the fast forms too.
        for x in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
            let (s, c) = sin_cos_f32_fast(x);
            assert!(s.is_nan() && c.is_nan(), "{x:e}");
            assert!(tan_f32_fast(x).is_nan(), "{x:e}");
        }
    }

    /// The f32 and f64 reductions agree on f32 arguments (f32: absolute error < 2^-68).
    #[test]
    fn f32_reduction_matches_f64_reduction() {
        for x in mixed_f32() {
            let a = x.abs();
            if !a.is_finite() {
                continue;
            }
            let (y, q) = reduce_f32(a);
            let (yh, yl, q64) = reduce_f64(f64::from(a));
            assert_eq!(q, q64, "quadrant of {x:e}");
            assert!(
                ((y - yh) - yl).abs() <= yh.abs() * 2f64.powi(-38),
                "{x:e}: {y:e} vs {yh:e}"
            );
        }
    }

    /// `tan_f32`'s fast reduction against the `f64` one over `xs` (all in `[0, FAST_MAX_F32]`):
    /// the largest relative error of `y` with its argument, and the smallest `|y|` of an
    /// argument above π/4 (below, `y` is the argument, exactly). The quadrant
    /// may differ by one near an odd multiple of π/4, where `k` is rounded the other way.
    fn tan_reduction_error(xs: impl Iterator<Item = f32>) -> ((f64, f32), f64) {
        let mut worst = (0.0, 0.0);
        let mut smallest = f64::INFINITY;
        for a in xs {
            let (y, q) = reduce_tan_f32_fast(a);
            let (yh, yl, q64) = reduce_f64(f64::from(a));
            let (sh, sl) = match (q as i64 - q64 as i64).rem_euclid(4) {
                0 => (0.0, 0.0),
                1 => (FRAC_PI_2, PI_2_LO),
                3 => (-FRAC_PI_2, -PI_2_LO),
                _ => panic!("quadrant of {a:e}: {q} against {q64}"),
            };
            let want = yh - sh;
            assert!(want.abs() < 0.786, "{a:e}: y = {want:e}");
            let err = ((y - want) - (yl - sl)).abs();
            if err > worst.0 * want.abs() {
                worst = (err / want.abs(), a);
            }
            if a > std::f32::consts::FRAC_PI_4 {
                smallest = smallest.min(want.abs());
            }
        }
        (worst, smallest)
    }

    /// `tan_f32`'s fast reduction within 2^-50 of the `f64` one, relatively, over the mixed
    /// points in range, every `f32` within 50 ulp of a multiple of π/2 up to `FAST_MAX_F32` and
    /// the 10^5 below it.
    #[test]
    fn tan_f32_fast_reduction_matches_f64_reduction() {
        let edge = FAST_MAX_F32.to_bits();
        let near_pi_2 = (1..=3_819u32).flat_map(|k| {
            let c = (f64::from(k) * FRAC_PI_2) as f32;
            (-50..=50).map(move |d| f32::from_bits(c.to_bits().wrapping_add_signed(d)))
        });
        let points = mixed_f32()
            .into_iter()
            .map(f32::abs)
            .filter(|a| *a <= FAST_MAX_F32)
            .chain(near_pi_2)
            .chain((edge - 100_000..=edge).map(f32::from_bits));
        let (worst, smallest) = tan_reduction_error(points);
        println!(
            "tan f32 fast reduction: relative error 2^{:.1} at {:e}, smallest |y| 2^{:.1}",
            worst.0.log2(),
            worst.1,
            smallest.log2()
        );
        assert!(worst.0 <= 2f64.powi(-50), "{worst:?}");
    }

    /// As `tan_f32_fast_reduction_matches_f64_reduction`, over every `f32` in
    /// `[0, FAST_MAX_F32]`, and the smallest `|y|` there (of an argument above π/4) is above
    /// 2^-28, as `reduce_tan_f32_fast`'s error bound takes it. Run with
    /// `cargo test -p rune-runtime --release --lib vmath::trig -- --ignored`.
    #[test]
    #[ignore = "exhaustive over the fast range, seconds in release"]
    fn tan_f32_fast_reduction_exhaustive() {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u32;
        let end = FAST_MAX_F32.to_bits() + 1;
        let chunk = end.div_ceil(threads);
        let results: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (lo, hi) = (t * chunk, ((t + 1) * chunk).min(end));
                    scope.spawn(move || tan_reduction_error((lo..hi).map(f32::from_bits)))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut worst = (0.0, 0.0);
        let mut smallest = f64::INFINITY;
        for (w, s) in results {
            if w.0 > worst.0 {
                worst = w;
            }
            smallest = smallest.min(s);
        }
        println!(
            "tan f32 fast reduction, every f32: relative error 2^{:.1} at {:e}, smallest |y| \
             2^{:.1}",
            worst.0.log2(),
            worst.1,
            smallest.log2()
        );
        assert!(worst.0 <= 2f64.powi(-50), "{worst:?}");
        assert!(smallest > 2f64.powi(-28), "{smallest:e}");
    }

    /// The `f32` reduction (Cody–Waite up to `FAST_MAX_F32`, the exact one above) against
    /// the `f64` one: the same quadrant, `yh + yl` within 2^-40 of `y` relatively. Over the
    /// mixed points and every `f32` around the switch between the two reductions.
    #[test]
    fn f32_native_reduction_matches_f64_reduction() {
        let edge = FAST_MAX_F32.to_bits();
        let around = (edge - 100_000..edge + 100_000).map(f32::from_bits);
        let near_pi_2 = (1..=3_900u32).flat_map(|k| {
            let c = (f64::from(k) * FRAC_PI_2) as f32;
            (-50..=50).map(move |d| f32::from_bits(c.to_bits().wrapping_add_signed(d)))
        });
        let mut worst = (0.0, 0.0);
        for x in mixed_f32().into_iter().chain(around).chain(near_pi_2) {
            let a = x.abs();
            if !a.is_finite() {
                continue;
            }
            let (yh, yl, q) = reduce_f32_native(a);
            let (y, yl64, q64) = reduce_f64(f64::from(a));
            // Cody–Waite may round k the other way near an odd multiple of π/4.
            let y = (y + yl64)
                - match (i64::from(q) - q64 as i64).rem_euclid(4) {
                    0 => 0.0,
                    1 => FRAC_PI_2,
                    3 => -FRAC_PI_2,
                    _ => panic!("quadrant of {x:e}: {q} against {q64}"),
                };
            assert!(y.abs() < 0.786, "{x:e}: y = {y:e}");
            let got = f64::from(yh) + f64::from(yl);
            let rel = ((got - y) / y).abs();
            if rel > worst.0 {
                worst = (rel, x);
            }
        }
        println!(
            "f32 reduction: relative error 2^{:.1} at {:e}",
            worst.0.log2(),
            worst.1
        );
        assert!(worst.0 <= 2f64.powi(-40), "{worst:?}");
    }

    /// (x, q, y as a double-double, sin, cos, tan), from mpmath at 4000 bits (reference values
    /// that happen to be near π/4 and 1/√2, not approximations of them).
    #[allow(clippy::type_complexity, clippy::approx_constant)]
    fn hard_f64() -> Vec<(f64, u64, f64, f64, f64, f64, f64)> {
        vec![
            // The worst case for reduction among all f64: |x mod π/2| = 2^-60.9.
            (
                6381956970095103.0 * 2f64.powi(797),
                1,
                4.687165924254628e-19,
                -4.3720557429382733e-36,
                1.0,
                -4.687165924254628e-19,
                -2.133485385753704e+18,
            ),
            (
                1e+22,
                3,
                0.5506189342358097,
                -7.985621383147488e-18,
                -0.8522008497671888,
                0.523214785395139,
                -1.6287782256068988,
            ),
            (
                FRAC_PI_2,
                1,
                -6.123233995736766e-17,
                1.4973849048591698e-33,
                1.0,
                6.123233995736766e-17,
                1.633123935319537e+16,
            ),
            (
                f64::MAX,
                2,
                -0.004961975150787273,
                -3.656438180407946e-19,
                0.004961954789184062,
                -0.9999876894265599,
                -0.004962015874444895,
            ),
            (
                5.319372648e+255,
                1,
                0.006255206378910342,
                2.945525316847829e-19,
                0.9999804362603689,
                -0.00625516558711416,
                -159.86474256098998,
            ),
            (
                1e+300,
                3,
                -0.613076157357336,
                1.2100878101071674e-17,
                -0.8178819121159085,
                -0.5753861119575491,
                1.4214488238747245,
            ),
            (
                2f64.powi(1023),
                2,
                -0.5981659040720844,
                1.7488698628038262e-18,
                0.563127779850884,
                -0.826369834614148,
                -0.6814476476066215,
            ),
            (
                3.0,
                2,
                -0.14159265358979323,
                -1.1442377452219664e-17,
                0.1411200080598672,
                -0.9899924966004454,
                -0.1425465430742778,
            ),
            (
                PI,
                2,
                -1.2246467991473532e-16,
                2.9947698097183397e-33,
                1.2246467991473532e-16,
                -1.0,
                -1.2246467991473532e-16,
            ),
            (
                TAU,
                0,
                -2.4492935982947064e-16,
                5.989539619436679e-33,
                -2.4492935982947064e-16,
                1.0,
                -2.4492935982947064e-16,
            ),
            (
                7.450580596923828e-09,
                0,
                7.450580596923828e-09,
                0.0,
                7.450580596923828e-09,
                1.0,
                7.450580596923828e-09,
            ),
            (
                7.450580596923827e-09,
                0,
                7.450580596923827e-09,
                0.0,
                7.450580596923827e-09,
                1.0,
                7.450580596923827e-09,
            ),
            (
                1570796.3267948965,
                0,
                -1.1159560906804355e-10,
                -6.428300609896336e-27,
                -1.1159560906804355e-10,
                1.0,
                -1.1159560906804355e-10,
            ),
            (
                1570796326794896.5,
                0,
                -0.11923132169163975,
                -4.746086559204395e-18,
                -0.11894902153438383,
                0.9929003627132044,
                -0.11979955492144566,
            ),
            (
                0.7853981633974483,
                0,
                0.7853981633974483,
                0.0,
                0.7071067811865475,
                0.7071067811865476,
                0.9999999999999999,
            ),
            (
                0.7853981633974484,
                1,
                -0.7853981633974483,
                4.9789962505147994e-17,
                0.7071067811865476,
                0.7071067811865475,
                1.0000000000000002,
            ),
            (
                1.0,
                1,
                -0.5707963267948967,
                4.9789962505147994e-17,
                0.8414709848078965,
                0.5403023058681398,
                1.5574077246549023,
            ),
            (1e-300, 0, 1e-300, 0.0, 1e-300, 1.0, 1e-300),
            (5e-324, 0, 5e-324, 0.0, 5e-324, 1.0, 5e-324),
            (
                9.223372036854776e+18,
                1,
                -0.011800350373953921,
                2.368162963887625e-19,
                0.9999303766734422,
                0.011800076512800236,
                84.73931296875567,
            ),
            (
                1.8e+16,
                0,
                0.2754542641845079,
                -1.2462125701153545e-17,
                0.2719841042209645,
                0.9623017442835274,
                0.28263910549540533,
            ),
            (
                3.4028234663852886e+38,
                0,
                -0.5490493299574543,
                3.2090273467496727e-17,
                -0.5218765233336585,
                0.8530210398303042,
                -0.6117979498342481,
            ),
            (
                7.729179e+28,
                1,
                -0.5523267487452166,
                3.2861349219270213e-17,
                0.8513060536223658,
                0.524669422651934,
                1.6225570175586974,
            ),
            (
                355.0,
                2,
                3.014435336405372e-05,
                3.6561928943731756e-22,
                -3.014435335948845e-05,
                -0.999999999545659,
                3.0144353373184265e-05,
            ),
            (
                103993.0,
                0,
                -1.912933577959042e-05,
                -8.709227241069465e-23,
                -1.9129335778423752e-05,
                0.9999999998170342,
                -1.9129335781923763e-05,
            ),
            (
                1.25 * 2f64.powi(996),
                2,
                0.6747326124824296,
                3.692285914557801e-18,
                -0.6246885430977185,
                -0.7808740129639672,
                0.7999863393155897,
            ),
        ]
    }

    /// The reduction against mpmath, the functions against mpmath's correctly rounded values
    /// (glibc itself is 8 ulp off cos and 14 ulp off tan at the first argument).
    #[test]
    fn f64_hard_cases() {
        for (x, q, rh, rl, s, c, t) in hard_f64() {
            let (yh, yl, yq) = reduce_f64(x);
            assert_eq!(yq, q, "quadrant of {x:e}");
            let err = ((yh - rh) + (yl - rl)).abs();
            // Limbs below 2^-126 are dropped: absolute error < 2^-125 (|y| > 2^-61 for every f64).
            let bound = 2f64.powi(-125) + rh.abs() * 2f64.powi(-100);
            assert!(err <= bound, "reduction of {x:e}: {yh:e} + {yl:e}");
            for x in [x, -x] {
                let sign = x.signum();
                assert!(
                    ulps_f64(sin_f64(x), sign * s) <= 1,
                    "sin_f64({x:e}) = {:e}",
                    sin_f64(x)
                );
                assert!(
                    ulps_f64(cos_f64(x), c) <= 1,
                    "cos_f64({x:e}) = {:e}",
                    cos_f64(x)
                );
                assert!(
                    ulps_f64(tan_f64(x), sign * t) <= 1,
                    "tan_f64({x:e}) = {:e}",
                    tan_f64(x)
                );
            }
        }
    }

    #[test]
    fn f64_special_values() {
        for x in [
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::from_bits(0x7ff8_0000_0000_1234),
        ] {
            assert!(sin_f64(x).is_nan() && cos_f64(x).is_nan() && tan_f64(x).is_nan());
            let (s, c) = sin_cos_f64(x);
            assert!(s.is_nan() && c.is_nan());
        }
        for x in [0.0f64, -0.0] {
            assert_eq!(sin_f64(x).to_bits(), x.to_bits());
            assert_eq!(tan_f64(x).to_bits(), x.to_bits());
            assert_eq!(cos_f64(x), 1.0);
            assert_eq!(sin_cos_f64(x).0.to_bits(), x.to_bits());
        }
        let mut rng = Rng(4);
        for i in 0..20_000u64 {
            let b = if i < 10_000 {
                i
            } else {
                rng.next() & 0x000f_ffff_ffff_ffff
            };
            let b = b | (rng.next() & (1 << 63));
            for x in [
                f64::from_bits(b),
                f64::from_bits(b + (0x0100_0000_0000_0000 << (i % 4))),
            ] {
                assert_eq!(sin_f64(x).to_bits(), x.to_bits(), "sin_f64({x:e})");
                assert_eq!(tan_f64(x).to_bits(), x.to_bits(), "tan_f64({x:e})");
                assert_eq!(cos_f64(x), 1.0, "cos_f64({x:e})");
            }
        }
    }

    /// ≈1e6 arguments against glibc (std): random significands over log-uniform magnitudes
    /// from 2^-1074 to 2^1024, near multiples of π/2, and the exponents where the reduction
    /// changes table words.
    fn mixed_f64(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Rng(seed);
        let mut v = Vec::with_capacity(n);
        for e in 0..2047u64 {
            for _ in 0..8 {
                v.push(f64::from_bits((e << 52) | (rng.next() >> 12)));
            }
        }
        for k in 1..=20_000u32 {
            let c = f64::from(k) * FRAC_PI_2;
            for d in -2..=2 {
                v.push(f64::from_bits(c.to_bits().wrapping_add_signed(d)));
            }
        }
        while v.len() < n {
            let e = (rng.next() % 2047) << 52;
            v.push(f64::from_bits(e | (rng.next() >> 12)));
        }
        for i in 0..v.len() / 2 {
            v[2 * i] = -v[2 * i];
        }
        v
    }

    #[test]
    fn f64_mixed_points() {
        assert_bounds(
            "f64 mixed 1e6 vs glibc",
            max_ulps_f64(mixed_f64(1_000_000, 5).into_iter()),
            [1, 1, 2],
        );
    }

    /// 2^28 points drawn as in `f64_mixed_points` (other seeds, split over the cores) against
    /// glibc. Run with `cargo test -p rune-runtime --release --lib vmath::trig -- --ignored`.
    #[test]
    #[ignore = "dense, a minute in release"]
    fn f64_dense() {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
        let per = (1usize << 28) / threads as usize;
        let results: Vec<[(u64, f64); 3]> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| scope.spawn(move || max_ulps_f64(mixed_f64(per, 100 + t).into_iter())))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut worst = [(0, 0.0); 3];
        for r in results {
            for k in 0..3 {
                if r[k].0 > worst[k].0 {
                    worst[k] = r[k];
                }
            }
        }
        assert_bounds("f64 dense vs glibc", worst, [1, 1, 2]);
    }
}
