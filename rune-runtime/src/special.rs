//! Special functions of one real number in `f64`: the inverse error function and the polygamma
//! functions `ψ⁽ⁿ⁾` (`n = 0` is the digamma function). `erf`, `erfc` and `lgamma` come from the
//! `libm` crate (a port of musl's, correctly rounded in most cases); these two it lacks.
//!
//! Both are computed in `f64`; the `f32` functions of [`Element`](crate::Element) round the `f64`
//! result, which is then correct to the last bit in all but rare cases.
//!
//! - [`erfinv`]: Giles' single-precision approximation ("Approximating the erfinv function",
//!   GPU Computing Gems, 2011) refined by Halley steps on `erf(z) - x` (two, or up to eight
//!   within 2⁻²⁴ of ±1, outside Giles' range), with the residual
//!   written as `(1 - x) - erfc(z)` for `x > 1/2` so that it keeps its relative precision as
//!   `x → 1`. `erfinv(±1) = ±∞`, NaN outside `[-1, 1]`.
//! - [`polygamma`]: the asymptotic expansion in Bernoulli numbers for `x ≥ 12 + n`, the recurrence
//!   `ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁾(x + 1) - (-1)ⁿ n! / x^(n+1)` below that, and the reflection formulas for
//!   `n ≤ 1` at negative `x`. At the poles (`x = 0, -1, -2, ..`) the result is `+∞` for odd `n`
//!   (where both sides agree) and NaN for even `n`, as SciPy gives for negative integers. Accurate
//!   to a few ulps in absolute terms; near the digamma function's root `1.4616..` the relative
//!   error grows as the value goes to zero.

use std::f64::consts::PI;

/// `B_{2k}` for `k = 1..=10`.
const BERNOULLI: [f64; 10] = [
    1.0 / 6.0,
    -1.0 / 30.0,
    1.0 / 42.0,
    -1.0 / 30.0,
    5.0 / 66.0,
    -691.0 / 2730.0,
    7.0 / 6.0,
    -3617.0 / 510.0,
    43867.0 / 798.0,
    -174611.0 / 330.0,
];

/// `n!` as `f64`.
fn factorial(n: u32) -> f64 {
    (1..=n).map(f64::from).product()
}

/// `x` reduced to `r = x - round(x)` in `[-1/2, 1/2]` (exactly) for the reflection formulas, so
/// that `tan(πx) = tan(πr)` and `sin²(πx) = sin²(πr)` keep their
/// relative precision near the poles.
fn reduced(x: f64) -> f64 {
    x - x.round()
}

/// The polygamma function `ψ⁽ⁿ⁾(x)`, the `n + 1`-th derivative of `ln Γ(x)`.
pub fn polygamma(n: u32, x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x <= 0.0 && x == x.floor() {
        return if n % 2 == 1 { f64::INFINITY } else { f64::NAN };
    }
    if x == f64::INFINITY {
        return if n == 0 { f64::INFINITY } else { 0.0 };
    }
    if x < 0.0 && n <= 1 {
        let r = reduced(x);
        return if n == 0 {
            // ψ(x) = ψ(1 - x) - π cot(πx)
            polygamma(0, 1.0 - x) - PI / (PI * r).tan()
        } else {
            // ψ'(x) = -ψ'(1 - x) + π² / sin²(πx)
            let s = (PI * r).sin();
            -polygamma(1, 1.0 - x) + PI * PI / (s * s)
        };
    }
    let nf = factorial(n);
    // (-1)^n n!: the recurrence's term is sign·n!/x^(n+1).
    let sign = if n.is_multiple_of(2) { 1.0 } else { -1.0 };
    let bound = 12.0 + f64::from(n);
    let mut x = x;
    let mut shift = 0.0;
    while x < bound {
        shift -= sign * nf / x.powi(n as i32 + 1);
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    let asymptotic = if n == 0 {
        // ln x - 1/(2x) - Σ B_2k / (2k x^2k)
        let mut sum = 0.0;
        let mut power = inv2;
        for (k, b) in BERNOULLI.iter().enumerate() {
            sum += b / (2.0 * (k as f64 + 1.0)) * power;
            power *= inv2;
        }
        x.ln() - 0.5 * inv - sum
    } else {
        // (-1)^(n+1) [ (n-1)!/x^n + n!/(2x^(n+1)) + Σ B_2k (2k+n-1)! / ((2k)! x^(2k+n)) ]
        let xn = inv.powi(n as i32);
        let mut sum = factorial(n - 1) * xn + 0.5 * nf * xn * inv;
        // (2k + n - 1)! / (2k)!, updated from k to k + 1.
        let mut ratio = factorial(n + 1) / 2.0;
        let mut power = xn * inv2;
        for (k, b) in BERNOULLI.iter().enumerate() {
            let k = k as f64 + 1.0;
            sum += b * ratio * power;
            ratio *= (2.0 * k + f64::from(n)) * (2.0 * k + f64::from(n) + 1.0)
                / ((2.0 * k + 1.0) * (2.0 * k + 2.0));
            power *= inv2;
        }
        -sign * sum
    };
    asymptotic + shift
}

/// The inverse error function: `erf(erfinv(x)) = x` for `x` in `[-1, 1]`.
pub fn erfinv(x: f64) -> f64 {
    if x.is_nan() || x.abs() > 1.0 {
        return f64::NAN;
    }
    if x.abs() == 1.0 {
        return x * f64::INFINITY;
    }
    if x == 0.0 {
        return x;
    }
    let a = x.abs();
    // Giles' approximation (relative error about 4e-7 in f32 arithmetic).
    let mut w = -((1.0 - a) * (1.0 + a)).ln();
    let p = if w < 5.0 {
        w -= 2.5;
        [
            2.810_226_36e-08,
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ]
        .iter()
        .fold(0.0, |p, c| c + p * w)
    } else {
        w = w.sqrt() - 3.0;
        [
            -0.000_200_214_257,
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ]
        .iter()
        .fold(0.0, |p, c| c + p * w)
    };
    let mut z = p * a;
    let two_over_sqrt_pi = 2.0 / PI.sqrt();
    // Two steps from Giles' guess reach full precision for `1 - x` above 2⁻²⁴ (his range);
    // closer to 1 the guess is rougher and a few more are needed.
    for _ in 0..8 {
        let residual = if a <= 0.5 {
            libm::erf(z) - a
        } else {
            (1.0 - a) - libm::erfc(z)
        };
        let slope = two_over_sqrt_pi * (-z * z).exp();
        // Halley's step for erf(z) = a, whose second derivative is -2z·slope.
        let step = residual / (slope + z * residual);
        z -= step;
        if step.abs() <= 1e-17 * z {
            break;
        }
    }
    z.copysign(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfinv_inverts_erf() {
        for &x in &[
            1e-300,
            1e-10,
            0.1,
            0.3,
            0.5,
            0.7,
            0.9,
            0.99,
            0.999_999,
            1.0 - 1e-12,
        ] {
            let z = erfinv(x);
            assert!((libm::erf(z) - x).abs() <= 2e-16 * x, "{x}: {z}");
            assert_eq!(erfinv(-x), -z);
        }
        // Near 1 the inverse is pinned by erfc: erfc(erfinv(1 - d)) = d.
        for &d in &[1e-5, 1e-10, 1e-15] {
            // The distance of the f64 nearest 1 - d from 1, exactly.
            let d = 1.0 - (1.0 - d);
            let z = erfinv(1.0 - d);
            assert!((libm::erfc(z) - d).abs() <= 1e-14 * d, "{d}: {z}");
        }
    }

    #[test]
    fn polygamma_known_values() {
        // ψ(1) = -γ, ψ(1/2) = -γ - 2 ln 2, ψ'(1) = π²/6, ψ''(1) = -2ζ(3), ψ'(1/2) = π²/2.
        let gamma = 0.577_215_664_901_532_9;
        let zeta3 = 1.202_056_903_159_594_3;
        let close = |a: f64, b: f64| (a - b).abs() <= 4e-15 * (1.0 + b.abs());
        assert!(close(polygamma(0, 1.0), -gamma));
        assert!(close(
            polygamma(0, 0.5),
            -gamma - 2.0 * std::f64::consts::LN_2
        ));
        assert!(close(polygamma(1, 1.0), PI * PI / 6.0));
        assert!(close(polygamma(1, 0.5), PI * PI / 2.0));
        assert!(close(polygamma(2, 1.0), -2.0 * zeta3));
        // ψ(-1/2) = ψ(1/2) + 2 (ψ(x + 1) = ψ(x) + 1/x).
        assert!(close(
            polygamma(0, -0.5),
            -gamma - 2.0 * std::f64::consts::LN_2 + 2.0
        ));
        // ψ'(-1/2) = ψ'(1/2) + 4 (ψ'(x) = ψ'(x + 1) + 1/x²).
        assert!(close(polygamma(1, -0.5), PI * PI / 2.0 + 4.0));
        // Large x: ψ(x) ≈ ln x - 1/(2x).
        let x = 1e10;
        assert!(close(polygamma(0, x), x.ln() - 0.5 / x));
        assert_eq!(polygamma(1, 0.0), f64::INFINITY);
        assert!(polygamma(0, -2.0).is_nan());
    }
}
