//! The piecewise-constant functions, whose derivative is zero.

use super::*;

/// The derivative of a piecewise-constant function: zero for every tangent, even an infinite
/// or NaN one (as JAX's `stop_gradient`-like rules of `sign`, `floor` and `round`).
macro_rules! zero_derivative {
    () => {
        /// Its derivative, zero.
        #[inline]
        pub fn derivative<T: Element>(Input(_): Input<T>) -> T {
            T::zero()
        }

        /// A tangent or cotangent through the function: zero.
        #[inline]
        pub fn tangent<T: Element>(_d: T, Input(_): Input<T>) -> T {
            T::zero()
        }

        same_in_every_pass!(Input);
    };
}

/// The sign: `-1`, `0` or `1` (NaN kept, `sign(-0) = 0`, as NumPy); the derivative is zero.
pub mod sign {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        if x > T::zero() {
            T::one()
        } else if x < T::zero() {
            -T::one()
        } else if x == T::zero() {
            T::zero()
        } else {
            x
        }
    }

    zero_derivative!();
}

/// Rust's sign: `1` for `+0` and above, `-1` for `-0` and below, NaN kept; the derivative is
/// zero. [`sign`] is NumPy's, `0` at `±0`.
pub mod signum {
    use super::*;

    /// The function, `f64::signum`.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::signum(x)
    }

    zero_derivative!();
}

/// The largest integer not above `x`; the derivative is zero.
pub mod floor {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::floor(x)
    }

    zero_derivative!();
}

/// The smallest integer not below `x`; the derivative is zero.
pub mod ceil {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::ceil(x)
    }

    zero_derivative!();
}

/// The nearest integer, halves away from zero (as `f64::round`: `round(2.5) = 3`); the derivative
/// is zero. NumPy's, JAX's and PyTorch's `round` is [`round_ties_even`].
pub mod round {
    use super::*;

    /// The function, `f64::round`.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::round(x)
    }

    zero_derivative!();
}

/// The nearest integer, halves to even; the derivative is zero.
pub mod round_ties_even {
    use super::*;

    /// The function, `f64::round_ties_even`.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        let r = Float::round(x);
        let half = T::from_f64(0.5);
        if (r - x).abs() == half {
            // A tie, which `Float::round` takes away from zero: `x / 2` is exact, and rounding
            // it gives the even neighbour's half.
            let h = Float::round(x * half);
            h + h
        } else {
            r
        }
    }

    zero_derivative!();
}
