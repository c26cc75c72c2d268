//! What every program shares: the gradient checksums of docs/PROGRAMS.md §4, the timing rules of §3
//! and the JSON line of `bench_jax.py`, so that the figures of rune-ad, the hand-written
//! baselines, JAX and PyTorch read side by side.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use rune_ad::__private::workload_tensor;
use rune_ad::prelude::*;
use serde_json::{json, Map, Value};

/// One gradient tensor as the checksums read it: its name in the scripts' `grads` field, its
/// shape (the checksum weights `r` take it) and its elements in f64.
pub struct NamedGrad {
    pub name: String,
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
}

impl NamedGrad {
    /// Converts a returned gradient (f32 or f64) to f64, as §4 says checksums are computed.
    pub fn new<T: Copy + Into<f64>>(name: impl Into<String>, g: &Tensor<T>) -> Self {
        NamedGrad {
            name: name.into(),
            shape: g.shape().to_vec(),
            data: g.to_vec().into_iter().map(Into::into).collect(),
        }
    }
}

/// A workload of docs/PROGRAMS.md, written once with rune-ad and, for some, once by hand.
///
/// `value_and_grad` returns the gradients as the system hands them over (tensors, structures,
/// vectors): converting them for the checksums is not part of the timed call.
pub trait Program {
    /// `w5` … `w12`.
    const ID: &'static str;
    /// `transformer`, `cnn`, …: the scripts' `name` field.
    const NAME: &'static str;
    /// `f32` or `f64`.
    const DTYPE: &'static str;
    type Grads;

    /// The loss alone: no tape, no pullback.
    fn forward(&self) -> f64;
    /// The loss and every gradient of the workload's table.
    fn value_and_grad(&self) -> (f64, Self::Grads);
    /// The gradients in the scripts' order and names.
    fn named(&self, grads: &Self::Grads) -> Vec<NamedGrad>;
}

/// `grad_sum`, `grad_l2`, `grad_dot` over every gradient, and `[sum, l2, dot]` per tensor.
pub struct Checksums {
    pub sum: f64,
    pub l2: f64,
    pub dot: f64,
    pub per: Vec<(String, [f64; 3])>,
}

/// The checksums of §4: `dot` weighs element `i` of each gradient by element `i` of the
/// generator's tensor of seed 99, range [-1, 1), of that gradient's shape.
pub fn checksums(grads: &[NamedGrad]) -> Checksums {
    let (mut sum, mut sq, mut dot) = (0.0, 0.0, 0.0);
    let mut per = Vec::with_capacity(grads.len());
    for g in grads {
        let r = workload_tensor::<f64>(&g.shape, 99, -1.0, 1.0).to_vec();
        let s: f64 = g.data.iter().sum();
        let q: f64 = g.data.iter().map(|v| v * v).sum();
        let w: f64 = g.data.iter().zip(&r).map(|(v, r)| v * r).sum();
        per.push((g.name.clone(), [s, q.sqrt(), w]));
        sum += s;
        sq += q;
        dot += w;
    }
    Checksums {
        sum,
        l2: sq.sqrt(),
        dot,
        per,
    }
}

/// The timing of one (workload, forward | value+grad) pair, as `bench()` in the scripts.
pub struct Timing {
    pub median_s: f64,
    pub min_s: f64,
    pub samples: usize,
    pub inner: usize,
}

fn env_seconds(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// §3: warm-up of at least `BENCH_WARMUP_S` (0.2 s) and 3 calls, an inner count so that a sample
/// lasts ~1 ms, samples for `BENCH_BUDGET_S` (1.0 s; 10 to 2000 of them), median and minimum.
pub fn bench<R>(mut f: impl FnMut() -> R) -> Timing {
    let warmup = env_seconds("BENCH_WARMUP_S", 0.2);
    let budget = env_seconds("BENCH_BUDGET_S", 1.0);
    let t0 = Instant::now();
    let mut n = 0usize;
    while n < 3 || t0.elapsed().as_secs_f64() < warmup {
        black_box(f());
        n += 1;
    }
    let per_call = t0.elapsed().as_secs_f64() / n as f64;
    let inner = ((1e-3 / per_call).round() as usize).max(1);
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.len() < 2000 && (samples.len() < 10 || start.elapsed().as_secs_f64() < budget) {
        let t = Instant::now();
        for _ in 0..inner {
            black_box(f());
        }
        samples.push(t.elapsed().as_secs_f64() / inner as f64);
    }
    samples.sort_by(f64::total_cmp);
    let m = samples.len();
    let median_s = if m % 2 == 1 {
        samples[m / 2]
    } else {
        0.5 * (samples[m / 2 - 1] + samples[m / 2])
    };
    Timing {
        median_s,
        min_s: samples[0],
        samples: m,
        inner,
    }
}

/// Writes each gradient as raw little-endian numbers of the workload's dtype to
/// `dir/<workload>.<tensor>.<dtype>` (`<workload>.<system>.<tensor>.<dtype>` for a system other
/// than rune-ad), as the scripts' `--grads` does, for an element-wise comparison.
pub fn dump_grads(dir: &Path, system: &str, id: &str, dtype: &str, grads: &[NamedGrad]) {
    std::fs::create_dir_all(dir).expect("the --grads directory can be created");
    for g in grads {
        let bytes: Vec<u8> = if dtype == "f32" {
            // Exact: the f64 values came from f32 gradients.
            g.data
                .iter()
                .flat_map(|&v| (v as f32).to_le_bytes())
                .collect()
        } else {
            g.data.iter().flat_map(|v| v.to_le_bytes()).collect()
        };
        let file = if system == "rune-ad" {
            format!("{id}.{}.{dtype}", g.name)
        } else {
            format!("{id}.{system}.{}.{dtype}", g.name)
        };
        std::fs::write(dir.join(file), bytes).expect("a gradient file can be written");
    }
}

/// Runs one program as §3 says (an untimed first call of each path, then the two timings) and
/// returns its JSON line in the fields of `bench_jax.py`; with `grads_dir`, also writes the
/// gradients there.
pub fn run<P: Program>(system: &str, program: &P, grads_dir: Option<&Path>) -> Value {
    let first = Instant::now();
    black_box(program.forward());
    let compile_fwd_s = first.elapsed().as_secs_f64();
    let first = Instant::now();
    black_box(program.value_and_grad());
    let compile_grad_s = first.elapsed().as_secs_f64();
    let fwd = bench(|| program.forward());
    let grad = bench(|| program.value_and_grad());
    let value_fwd = program.forward();
    let (value, grads) = program.value_and_grad();
    let named = program.named(&grads);
    if let Some(dir) = grads_dir {
        dump_grads(dir, system, P::ID, P::DTYPE, &named);
    }
    let c = checksums(&named);
    let per: Map<String, Value> = c
        .per
        .into_iter()
        .map(|(name, v)| (name, json!(v)))
        .collect();
    json!({
        "system": system,
        "workload": P::ID,
        "name": P::NAME,
        "dtype": P::DTYPE,
        "fwd_s": fwd.median_s,
        "fwd_min_s": fwd.min_s,
        "fwd_samples": fwd.samples,
        "fwd_inner": fwd.inner,
        "grad_s": grad.median_s,
        "grad_min_s": grad.min_s,
        "grad_samples": grad.samples,
        "grad_inner": grad.inner,
        "value_fwd": value_fwd,
        "value": value,
        "value_grad": value,
        "grad_sum": c.sum,
        "grad_l2": c.l2,
        "grad_dot": c.dot,
        "grads": per,
        "compile_fwd_s": compile_fwd_s,
        "compile_grad_s": compile_grad_s,
    })
}
