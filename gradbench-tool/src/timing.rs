//! GradBench's timing loop: run one function until at least `min_runs` runs and `min_seconds`
//! of measured time, one timing per run.
use std::hint::black_box;
use std::time::Instant;

use serde::Deserialize;

/// The timing controls every input of the five evals carries.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
pub struct Runs {
    /// The least number of runs (GradBench's default is 1).
    #[serde(default = "one_run")]
    pub min_runs: usize,
    /// The least total measured time in seconds; any JSON number (`1` and `0.0` both occur).
    #[serde(default = "one_second")]
    pub min_seconds: f64,
}

fn one_run() -> usize {
    1
}

fn one_second() -> f64 {
    1.0
}

impl Runs {
    /// Exactly one run, whatever its time: for `hello`, whose inputs carry no controls.
    pub const ONCE: Runs = Runs {
        min_runs: 1,
        min_seconds: 0.0,
    };
}

/// Runs `f` until both controls hold (at least once) and returns the last run's result with
/// the duration of every run in nanoseconds, in run order.
///
/// Only the calls of `f` are timed: the loop's own bookkeeping is not. The input `f` reads is
/// passed through [`black_box`] so that no run can be hoisted out of the loop.
pub fn measure<I, O>(runs: Runs, input: &I, mut f: impl FnMut(&I) -> O) -> (O, Vec<u64>) {
    let mut timings = Vec::with_capacity(runs.min_runs.clamp(1024, 1 << 20));
    let mut total = 0.0;
    loop {
        let start = Instant::now();
        let out = black_box(f(black_box(input)));
        let elapsed = start.elapsed();
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        timings.push(nanos);
        total += nanos as f64 * 1e-9;
        if timings.len() >= runs.min_runs && total >= runs.min_seconds {
            return (out, timings);
        }
    }
}
