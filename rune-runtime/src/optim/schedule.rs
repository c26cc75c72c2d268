//! Learning-rate schedules: values an optimizer reads at each step (`Adam::new(..)
//! .schedule(Schedule::cosine(..))`), with PyTorch's formulas (`torch.optim.lr_scheduler`),
//! counted in optimizer steps from zero.

use std::f64::consts::PI;

/// A learning rate as a function of the number of steps taken before the current one.
///
/// ```
/// use rune_runtime::optim::Schedule;
///
/// let s = Schedule::step(0.1, 10, 0.5);
/// assert_eq!((s.lr(0), s.lr(9), s.lr(10), s.lr(25)), (0.1, 0.1, 0.05, 0.025));
/// let c = Schedule::cosine(1.0, 0.0, 100);
/// assert_eq!((c.lr(0), c.lr(50), c.lr(100), c.lr(200)), (1.0, 0.5, 0.0, 0.0));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Schedule(Kind);

/// The schedules, each with its formula.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
enum Kind {
    /// `base · gamma^⌊t / every⌋` (`StepLR`).
    Step { base: f64, every: usize, gamma: f64 },
    /// `base · gamma^t` (`ExponentialLR`).
    Exponential { base: f64, gamma: f64 },
    /// `min + (base − min)(1 + cos(π t / total)) / 2` up to `total`, `min` after
    /// (`CosineAnnealingLR`'s closed form, held at its end).
    Cosine { base: f64, min: f64, total: usize },
    /// `base · (t + 1) / warmup` for the first `warmup` steps, then the cosine from `base` to `min`
    /// over the remaining `total − warmup` (held at `min` after).
    WarmupCosine {
        base: f64,
        min: f64,
        warmup: usize,
        total: usize,
    },
    /// `OneCycleLR` (cosine annealing, two phases): from `max / div` up to `max` over the first
    /// `pct_start` of `total`, then down to `max / (div · final_div)`.
    OneCycle {
        max: f64,
        total: usize,
        pct_start: f64,
        div: f64,
        final_div: f64,
    },
}

impl Schedule {
    /// `StepLR(step_size = every, gamma)` from `base`.
    ///
    /// # Panics
    /// When `every` is zero.
    #[track_caller]
    pub fn step(base: f64, every: usize, gamma: f64) -> Schedule {
        assert!(
            every > 0,
            "Schedule::step: `every` is 0; it counts steps, at least 1"
        );
        Schedule(Kind::Step { base, every, gamma })
    }

    /// `ExponentialLR(gamma)` from `base`.
    pub fn exponential(base: f64, gamma: f64) -> Schedule {
        Schedule(Kind::Exponential { base, gamma })
    }

    /// `CosineAnnealingLR(T_max = total, eta_min = min)` from `base`.
    ///
    /// # Panics
    /// When `total` is zero.
    #[track_caller]
    pub fn cosine(base: f64, min: f64, total: usize) -> Schedule {
        assert!(
            total > 0,
            "Schedule::cosine: `total` is 0; it counts steps, at least 1"
        );
        Schedule(Kind::Cosine { base, min, total })
    }

    /// A linear warm-up over `warmup` steps to `base`, then the cosine down to `min` at `total`.
    ///
    /// # Panics
    /// When `warmup` is not below `total`.
    #[track_caller]
    pub fn warmup_cosine(base: f64, min: f64, warmup: usize, total: usize) -> Schedule {
        assert!(
            warmup < total,
            "Schedule::warmup_cosine: the warm-up ({warmup} steps) must end before `total` \
             ({total} steps)"
        );
        Schedule(Kind::WarmupCosine {
            base,
            min,
            warmup,
            total,
        })
    }

    /// `OneCycleLR(max_lr = max, total_steps = total)` with PyTorch's defaults: `pct_start`
    /// 0.3, `div_factor` 25, `final_div_factor` 10⁴.
    ///
    /// # Panics
    /// When `total` is below 2 (each phase needs a step).
    #[track_caller]
    pub fn one_cycle(max: f64, total: usize) -> Schedule {
        assert!(
            total >= 2,
            "Schedule::one_cycle: `total` is {total}; a cycle has two phases of at least one step"
        );
        Schedule(Kind::OneCycle {
            max,
            total,
            pct_start: 0.3,
            div: 25.0,
            final_div: 1e4,
        })
    }

    /// The learning rate of the step taken after `t` steps.
    pub fn lr(&self, t: usize) -> f64 {
        let cosine = |start: f64, end: f64, fraction: f64| {
            end + (start - end) * (1.0 + (PI * fraction.clamp(0.0, 1.0)).cos()) / 2.0
        };
        match self.0 {
            Kind::Step { base, every, gamma } => base * gamma.powf((t / every) as f64),
            Kind::Exponential { base, gamma } => base * gamma.powf(t as f64),
            Kind::Cosine { base, min, total } => cosine(base, min, t as f64 / total as f64),
            Kind::WarmupCosine {
                base,
                min,
                warmup,
                total,
            } => {
                if t < warmup {
                    base * (t + 1) as f64 / warmup as f64
                } else {
                    cosine(base, min, (t - warmup) as f64 / (total - warmup) as f64)
                }
            }
            Kind::OneCycle {
                max,
                total,
                pct_start,
                div,
                final_div,
            } => {
                let initial = max / div;
                let last = initial / final_div;
                let up_end = pct_start * total as f64 - 1.0;
                let down_end = total as f64 - 1.0;
                let t = t as f64;
                if t <= up_end {
                    cosine(initial, max, t / up_end)
                } else {
                    cosine(max, last, (t - up_end) / (down_end - up_end))
                }
            }
        }
    }
}
