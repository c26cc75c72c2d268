//! The trigonometric functions and their inverses.

use super::*;

/// The sine; the derivative is `cos x`.
pub mod sin {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.vsin()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        x.vcos()
    }

    /// A tangent or cotangent `d` through the function: `d` times the derivative, a zero `d`
    /// staying zero where the derivative is infinite.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn tangent<T: Element>(d: T, at: Input<T>) -> T {
        strong_mul(d, derivative(at))
    }

    /// The function, in a pass of a loop with `kernels`: the fast `f32` form in a fast pass
    /// (see [`Kernels`]).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value_in<T: Element>(x: T, kernels: &Kernels) -> T {
        x.vsin_in(kernels)
    }

    /// [`tangent`], in a pass of a loop with `kernels`.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn tangent_in<T: Element>(d: T, Input(x): Input<T>, kernels: &Kernels) -> T {
        strong_mul(d, x.vcos_in(kernels))
    }
}

/// The cosine; the derivative is `-sin x`.
pub mod cos {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.vcos()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        -x.vsin()
    }

    /// A tangent or cotangent `d` through the function: `d` times the derivative, a zero `d`
    /// staying zero where the derivative is infinite.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn tangent<T: Element>(d: T, at: Input<T>) -> T {
        strong_mul(d, derivative(at))
    }

    /// The function, in a pass of a loop with `kernels`: the fast `f32` form in a fast pass
    /// (see [`Kernels`]).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value_in<T: Element>(x: T, kernels: &Kernels) -> T {
        x.vcos_in(kernels)
    }

    /// [`tangent`], in a pass of a loop with `kernels`.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn tangent_in<T: Element>(d: T, Input(x): Input<T>, kernels: &Kernels) -> T {
        strong_mul(d, -x.vsin_in(kernels))
    }
}

/// The tangent; the derivative is `1 + y²`.
pub mod tan {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.vtan()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Output(y): Output<T>) -> T {
        T::one() + y * y
    }

    /// A tangent or cotangent `d` through the function: `d` times the derivative, a zero `d`
    /// staying zero where the derivative is infinite.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn tangent<T: Element>(d: T, at: Output<T>) -> T {
        strong_mul(d, derivative(at))
    }

    /// The function, in a pass of a loop with `kernels`: the fast `f32` form in a fast pass
    /// (see [`Kernels`]).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value_in<T: Element>(x: T, kernels: &Kernels) -> T {
        x.vtan_in(kernels)
    }

    /// [`tangent`], in a pass of a loop with `kernels` (the same in every pass: the derivative
    /// reads the output).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn tangent_in<T: Element>(d: T, at: Output<T>, kernels: &Kernels) -> T {
        let _ = kernels;
        tangent(d, at)
    }
}

/// The inverse sine on `[-1, 1]`; the derivative is `1 / √((1 - x)(1 + x))`.
pub mod asin {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::asin(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        one_minus_square(x).sqrt().recip()
    }

    chain_rule!(Input);
}

/// The inverse cosine on `[-1, 1]`; the derivative is `-1 / √((1 - x)(1 + x))`.
pub mod acos {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::acos(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        -one_minus_square(x).sqrt().recip()
    }

    chain_rule!(Input);
}

/// The inverse tangent; the derivative is `1 / (1 + x²)`, written `r² / (1 + r²)` with `r = 1/x`
/// for `|x| > 1` so that `x²` does not overflow.
pub mod atan {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::atan(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        if x.abs() > T::one() {
            let r = x.recip();
            let r2 = r * r;
            r2 / (T::one() + r2)
        } else {
            (T::one() + x * x).recip()
        }
    }

    chain_rule!(Input);
}
