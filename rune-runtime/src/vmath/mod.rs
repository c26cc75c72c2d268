//! Vectorisable math: scalar kernels of the transcendental functions that LLVM vectorises inside
//! the elementwise loops, and the run-time CPU dispatch those loops run under.
//!
//! Every elementwise loop of the runtime (a fused region's value, tangent and adjoint, the
//! unary ops and their rules) runs inside [`vectorised`], which compiles it three times, for
//! AVX-512, for AVX2 with FMA and for baseline x86-64 ([`Level`]), and picks one at run time
//! with `is_x86_feature_detected!`. (`pulp`'s dispatch, which faer uses, hands the closure over
//! as integers, and LLVM then vectorised the plain `exp` loops but not the trigonometric ones.) The kernels ([`exp_log`], [`trig`]) are branch-free polynomial code with no call
//! inside, so the loops vectorise at every level. They use no fused multiply-add, and LLVM does
//! not contract `a * b + c` on its own: every level gives the same result, bit for bit.
//!
//! The kernels, the scalar forms and the element methods are `#[inline(always)]` in release
//! builds and plain `#[inline]` in debug builds: unoptimised code gives every inlined local a
//! stack slot of its own, and a fused chain of 820 `sin`s (`tests/long_bodies.rs`) overflowed
//! a test thread's stack with every kernel forced inline.
//!
//! `f32` and `f64` reach the kernels through the hidden math methods of
//! [`Element`](crate::Element) (`vexp`, `vsin`, ..), which the scalar forms of
//! [`crate::scalar`] call; dual numbers take theirs from those forms, element by element.
//!
//! Each kernel's accuracy is stated in its module and asserted by its tests over sweeps of the
//! inputs and the special values. The default tests sweep sparsely;
//! `cargo test -p rune-runtime --release --lib vmath -- --ignored` runs the dense sweeps (every
//! eleventh `f32` bit pattern and millions of `f64` points, about two minutes).

mod dd;
pub mod exp_log;
pub mod trig;

/// An instruction-set level the elementwise loops are compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Baseline x86-64 (SSE2), or any other architecture.
    Baseline,
    /// AVX2 with FMA, BMI1/2, LZCNT and POPCNT (x86-64-v3).
    Avx2,
    /// AVX-512 F, VL, DQ, BW and CD besides (x86-64-v4).
    Avx512,
}

impl Level {
    /// The widest level this CPU runs, detected once.
    pub fn detected() -> Level {
        #[cfg(target_arch = "x86_64")]
        {
            use std::sync::atomic::{AtomicU8, Ordering};
            static DETECTED: AtomicU8 = AtomicU8::new(0);
            match DETECTED.load(Ordering::Relaxed) {
                0 => {
                    let level = x86::detect();
                    DETECTED.store(level as u8 + 1, Ordering::Relaxed);
                    level
                }
                1 => Level::Baseline,
                2 => Level::Avx2,
                _ => Level::Avx512,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        Level::Baseline
    }
}

/// Runs `f` compiled for the widest vector instructions this CPU has ([`Level::detected`]).
///
/// Only what is inlined into `f` is compiled for those instructions: mark the closure
/// `#[inline(always)]`, and the functions it calls too (the element methods and scalar forms
/// are). Captured slices keep their aliasing information, so LLVM vectorises loops over them
/// as it would in a function of their own.
///
/// Debug builds run `f` as it is, compiled once: unoptimised code does not vectorise, and three
/// copies of every fused loop made the test suite's build several times slower. The levels'
/// agreement is tested through [`vectorised_at`], which always compiles all three.
#[inline(always)]
pub fn vectorised<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(debug_assertions)]
    {
        f()
    }
    #[cfg(not(debug_assertions))]
    {
        vectorised_at(Level::detected(), f)
    }
}

/// [`vectorised`] at `level`, or at the widest level this CPU has below it: for tests that
/// compare the levels.
#[inline(always)]
pub fn vectorised_at<R>(level: Level, f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        let level = match (level, Level::detected()) {
            (Level::Avx512, Level::Avx512) => Level::Avx512,
            (Level::Avx512 | Level::Avx2, Level::Avx512 | Level::Avx2) => Level::Avx2,
            _ => Level::Baseline,
        };
        match level {
            Level::Avx512 => x86::avx512(f),
            Level::Avx2 => x86::avx2(f),
            Level::Baseline => f(),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = level;
        f()
    }
}

/// The `#[target_feature]` functions behind [`vectorised`]: the runtime's one `unsafe`.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x86 {
    use super::Level;

    /// The widest level of this CPU.
    pub(super) fn detect() -> Level {
        let v3 = is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("bmi1")
            && is_x86_feature_detected!("bmi2")
            && is_x86_feature_detected!("lzcnt")
            && is_x86_feature_detected!("popcnt");
        let v4 = v3
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512cd");
        if v4 {
            Level::Avx512
        } else if v3 {
            Level::Avx2
        } else {
            Level::Baseline
        }
    }

    /// `f` at x86-64-v4. Callers check [`Level::detected`] first.
    #[inline(always)]
    pub(super) fn avx512<R>(f: impl FnOnce() -> R) -> R {
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx512cd")]
        #[target_feature(enable = "avx2,avx,fma,bmi1,bmi2,lzcnt,popcnt,sse4.2,sse4.1,ssse3,sse3")]
        fn run<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        // SAFETY: `vectorised_at` calls this only when `detect` found every feature `run`
        // enables.
        unsafe { run(f) }
    }

    /// `f` at x86-64-v3. Callers check [`Level::detected`] first.
    #[inline(always)]
    pub(super) fn avx2<R>(f: impl FnOnce() -> R) -> R {
        #[target_feature(enable = "avx2,avx,fma,bmi1,bmi2,lzcnt,popcnt,sse4.2,sse4.1,ssse3,sse3")]
        fn run<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        // SAFETY: `vectorised_at` calls this only when `detect` found every feature `run`
        // enables.
        unsafe { run(f) }
    }
}

#[cfg(test)]
mod tests {
    use super::{exp_log, trig, vectorised_at, Level};

    /// `f` over `xs` in one loop compiled at `level`.
    fn run<T: Copy + Default>(level: Level, xs: &[T], f: impl Fn(T) -> T) -> Vec<T> {
        let mut out = vec![T::default(); xs.len()];
        vectorised_at(
            level,
            #[inline(always)]
            || {
                for (o, &x) in out.iter_mut().zip(xs) {
                    *o = f(x);
                }
            },
        );
        out
    }

    #[test]
    fn every_level_gives_the_same_bits() {
        // Mixed magnitudes and signs, the special values, and subnormals.
        let mut xs: Vec<f64> = (0..20_000)
            .map(|i| {
                let u = f64::from(i) / 20_000.0;
                (u * 2.0 - 1.0) * 10f64.powf(u * 12.0 - 6.0)
            })
            .collect();
        xs.extend([
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e-310,
            1e300,
            0.5,
        ]);
        let ys: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
        let levels = [Level::Baseline, Level::Avx2, Level::Avx512];
        macro_rules! same {
            ($xs:expr, $($f:path),*) => {$(
                let base = run(Level::Baseline, $xs, $f);
                for level in levels {
                    let other = run(level, $xs, $f);
                    for (i, (a, b)) in base.iter().zip(&other).enumerate() {
                        assert!(
                            a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                            "{} at {:?}, x = {:e}: {a:e} against {b:e}",
                            stringify!($f), level, $xs[i]
                        );
                    }
                }
            )*};
        }
        same!(
            &ys,
            exp_log::exp_f32,
            exp_log::exp_m1_f32,
            exp_log::ln_f32,
            exp_log::ln_1p_f32
        );
        same!(
            &ys,
            exp_log::tanh_f32,
            trig::sin_f32,
            trig::cos_f32,
            trig::tan_f32
        );
        same!(
            &xs,
            exp_log::exp_f64,
            exp_log::exp_m1_f64,
            exp_log::ln_f64,
            exp_log::ln_1p_f64
        );
        same!(
            &xs,
            exp_log::tanh_f64,
            trig::sin_f64,
            trig::cos_f64,
            trig::tan_f64
        );
        let pow32 = |x: f32| exp_log::powf_f32(x.abs(), 1.7);
        let pow64 = |x: f64| exp_log::powf_f64(x.abs(), -2.3);
        same!(&ys, pow32);
        same!(&xs, pow64);
    }
}
