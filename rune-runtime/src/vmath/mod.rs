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
//! Fast kernels with a fallback: `f32` `sin`, `cos` and `tan` have a fast form for `|x| ≤ 6000`
//! ([`trig::sin_cos_f32_fast`], [`trig::tan_f32_fast`]) beside the full-range one, whose exact
//! reduction is half to two thirds of its cost. A branch per element would stop vectorisation, so the loops branch per block:
//! each block runs once with [`Kernels::fast`], whose kernels note an argument out of their
//! range, and again with [`Kernels::exact`] only if one did ([`fast_then_exact`]). The
//! closures, scalar forms (`value_in`, `tangent_in`) and element methods (`vsin_in`, ..) take
//! the [`Kernels`] of the pass, a constant in each of the two loops once inlined; a dual number
//! hands them to its parts. The fast form gives the full-range one's bits in its range, so
//! results do not depend on the blocks.
//!
//! Each kernel's accuracy is stated in its module and asserted by its tests over sweeps of the
//! inputs and the special values. The default tests sweep sparsely;
//! `cargo test -p rune-runtime --release --lib vmath -- --ignored` runs the dense sweeps (every
//! eleventh `f32` bit pattern and millions of `f64` points, about two minutes).

use std::cell::Cell;

mod dd;
pub mod exp_log;
pub mod extreme;
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

/// Which kernels one pass of an elementwise loop runs, and whether a fast kernel met an
/// argument outside its range.
///
/// `sin`, `cos` and `tan` of `f32` have a fast form for arguments of everyday size (`|x| ≤`
/// [`trig::FAST_MAX_F32`], a Cody–Waite reduction) beside the full-range one, which computes
/// the exact reduction in every lane as well and selects per lane (a branch per element would
/// stop vectorisation). The loops run each block of elements once with [`Kernels::fast`]; a
/// fast kernel notes an argument outside its range, and only then is the block run again with
/// [`Kernels::exact`] ([`fast_then_exact`]). The fast form gives the full-range one's bits
/// wherever it is in range, so a block's results do not depend on which pass gave them, nor on
/// the other elements of the block.
///
/// The closures of fused regions take it and hand it to the scalar forms (`value_in` and
/// `tangent_in` of the functions of `scalar`), which hand it to the element methods
/// (`Element::vsin_in`, ..): after inlining, each pass's loop sees a constant and has no
/// branch per element. Dual numbers hand it to their parts (so `Dual<f32>` takes the fast
/// forms too); other kernels and `f64` ignore it.
#[derive(Debug)]
pub struct Kernels {
    exact: bool,
    outside: Cell<bool>,
}

impl Kernels {
    /// The fast kernels, noting arguments outside their range.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub const fn fast() -> Kernels {
        Kernels {
            exact: false,
            outside: Cell::new(false),
        }
    }

    /// The full-range kernels.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub const fn exact() -> Kernels {
        Kernels {
            exact: true,
            outside: Cell::new(false),
        }
    }

    /// Whether these are the full-range kernels.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn is_exact(&self) -> bool {
        self.exact
    }

    /// Notes whether a fast kernel's argument was outside its range.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn note_outside(&self, outside: bool) {
        self.outside.set(self.outside.get() | outside);
    }

    /// Whether a fast kernel has met an argument outside its range.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn met_outside(&self) -> bool {
        self.outside.get()
    }
}

/// Runs `pass` with the fast kernels and, if one of them met an argument outside its range,
/// again with the full-range ones, returning the last pass's result ([`Kernels`]). `pass`
/// must compute the same values whichever pass it is (it does, through the scalar forms) and
/// leave nothing behind that the second pass does not overwrite.
///
/// Debug builds run the full-range pass alone: one copy of each loop compiles faster, and
/// gives the same results.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn fast_then_exact<R>(mut pass: impl FnMut(&Kernels) -> R) -> R {
    #[cfg(not(debug_assertions))]
    {
        let fast = Kernels::fast();
        let r = pass(&fast);
        if !fast.met_outside() {
            return r;
        }
    }
    pass(&Kernels::exact())
}

/// Leaves the upper halves of the vector registers clean (`vzeroupper`) after code that may
/// leave them dirty: faer's assembly kernels return without clearing them, and every SSE
/// instruction after that (the runtime outside [`vectorised`] is compiled for baseline x86-64)
/// pays the AVX-SSE transition penalty until something clears them. Nothing elsewhere.
#[inline]
pub(crate) fn clear_upper_vector_state() {
    #[cfg(target_arch = "x86_64")]
    x86::clear_upper();
}

/// The `#[target_feature]` functions behind [`vectorised`] and [`clear_upper_vector_state`]:
/// the runtime's one `unsafe`.
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

    /// `vzeroupper`, where the CPU has AVX.
    pub(super) fn clear_upper() {
        #[target_feature(enable = "avx")]
        fn zeroupper() {
            std::arch::x86_64::_mm256_zeroupper();
        }
        if is_x86_feature_detected!("avx") {
            // SAFETY: the CPU has AVX, which `zeroupper` enables.
            unsafe { zeroupper() }
        }
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
    use super::{exp_log, fast_then_exact, trig, vectorised_at, Kernels, Level};
    use crate::Element;

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
        let in_range: Vec<f32> = ys
            .iter()
            .copied()
            .filter(|x| x.abs() <= trig::FAST_MAX_F32)
            .collect();
        same!(
            &in_range,
            trig::sin_f32_fast,
            trig::cos_f32_fast,
            trig::tan_f32_fast
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

    #[test]
    fn a_fast_pass_notes_an_argument_outside_the_range_of_its_kernels() {
        let max = trig::FAST_MAX_F32;
        let above = f32::from_bits(max.to_bits() + 1);
        for (x, outside) in [
            (0.5f32, false),
            (-max, false),
            (max, false),
            (above, true),
            (-above, true),
            (1e30, true),
            (f32::INFINITY, true),
            (f32::NAN, true),
        ] {
            for f in [f32::vsin_in, f32::vcos_in, f32::vtan_in] {
                let fast = Kernels::fast();
                let _ = f(x, &fast);
                assert_eq!(fast.met_outside(), outside, "{x:e}");
                let exact = Kernels::exact();
                let _ = f(x, &exact);
                assert!(!exact.met_outside(), "{x:e}");
            }
            // In range, each pass gives the full-range function's bits.
            let want = (trig::sin_f32(x), trig::cos_f32(x), trig::tan_f32(x));
            for k in [Kernels::fast(), Kernels::exact()] {
                if !outside || k.is_exact() {
                    let same =
                        |a: f32, b: f32| a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan();
                    assert!(same(x.vsin_in(&k), want.0), "{x:e}");
                    assert!(same(x.vcos_in(&k), want.1), "{x:e}");
                    assert!(same(x.vtan_in(&k), want.2), "{x:e}");
                }
            }
        }
        // f64 ignores the kernels' pass.
        let fast = Kernels::fast();
        assert_eq!(1e300f64.vsin_in(&fast), trig::sin_f64(1e300));
        assert_eq!(1e300f64.vtan_in(&fast), trig::tan_f64(1e300));
        assert!(!fast.met_outside());
    }

    #[test]
    fn a_block_with_one_huge_argument_runs_again_with_the_full_range_kernels() {
        // Blocks of small arguments, one with a huge argument among them, and one of NaN.
        let blocks: [Vec<f32>; 3] = [
            (0..64).map(|i| i as f32 * 0.37 - 11.0).collect(),
            (0..64)
                .map(|i| {
                    if i == 40 {
                        7.729_179e28
                    } else {
                        i as f32 * 91.0
                    }
                })
                .collect(),
            vec![f32::NAN; 64],
        ];
        for xs in &blocks {
            let mut passes = Vec::new();
            let out = fast_then_exact(|k| {
                passes.push(k.is_exact());
                xs.iter()
                    .map(|x| (x.vsin_in(k), x.vcos_in(k), x.vtan_in(k)))
                    .collect::<Vec<_>>()
            });
            for (x, (s, c, t)) in xs.iter().zip(out) {
                let want = trig::sin_cos_f32(*x);
                let want_t = trig::tan_f32(*x);
                assert!(
                    t.to_bits() == want_t.to_bits() || (t.is_nan() && want_t.is_nan()),
                    "tan {x:e}"
                );
                assert!(
                    s.to_bits() == want.0.to_bits() || (s.is_nan() && want.0.is_nan()),
                    "sin {x:e}"
                );
                assert!(
                    c.to_bits() == want.1.to_bits() || (c.is_nan() && want.1.is_nan()),
                    "cos {x:e}"
                );
            }
            // Release builds run the fast pass first and the exact one only when needed;
            // debug builds the exact one alone.
            let in_range = xs.iter().all(|x| x.abs() <= trig::FAST_MAX_F32);
            let want_passes: &[bool] = match (cfg!(debug_assertions), in_range) {
                (true, _) => &[true],
                (false, true) => &[false],
                (false, false) => &[false, true],
            };
            assert_eq!(passes, want_passes);
        }
    }
}
