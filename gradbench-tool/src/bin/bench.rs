//! Times every default workload of the six evals, primal and derivative, through the same
//! timing loop as the tool, on inputs drawn like GradBench's generators (same sizes and
//! distributions, not the same numbers).
//!
//! ```sh
//! cargo run --release -p rune-gradbench --bin rune-gradbench-bench -- [EVAL ..] [--min-seconds S] [--published]
//! ```
//!
//! `--published` keeps only the workloads of docs/GRADBENCH.md §10's table. It prints one Markdown
//! row per workload: mean milliseconds of the primal and of the derivative (wall time, what
//! GradBench scores), the mean CPU time of a run of each (what the wall time would be on an
//! idle core), and the numbers of runs.
use std::process::ExitCode;

use rune_ad::prelude::*;
use rune_gradbench::evals::{ba, gmm, kmeans, llsq, lse, ode};
use rune_gradbench::timing::{measure, Runs};

/// Times a workload's primal and derivative: the duration of each run of each.
type TimePair = Box<dyn Fn(Runs) -> (Timed, Timed)>;

/// The wall time of each run and the mean CPU time of a run.
type Timed = (Vec<u64>, Option<f64>);

/// One workload: its eval, its description, and a closure timing primal and derivative.
struct Workload {
    eval: &'static str,
    description: String,
    published: bool,
    run: TimePair,
}

fn mean_ms(timings: &[u64]) -> f64 {
    timings.iter().map(|&t| t as f64).sum::<f64>() / timings.len() as f64 / 1e6
}

/// Nanoseconds this thread has spent on a CPU (the first field of Linux's
/// `/proc/thread-self/schedstat`), or `None` where that file is not available.
fn cpu_nanos() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `measure`, also returning the mean CPU time of a run in milliseconds: on a shared machine
/// the wall time of a run includes the time other processes held its core.
fn measure_with_cpu<I, O>(
    runs: Runs,
    input: &I,
    f: impl FnMut(&I) -> O,
) -> (Vec<u64>, Option<f64>) {
    let before = cpu_nanos();
    let timings = measure(runs, input, f).1;
    let cpu = before
        .zip(cpu_nanos())
        .map(|(b, a)| (a - b) as f64 / timings.len() as f64 / 1e6);
    (timings, cpu)
}

fn lse_workloads() -> Vec<Workload> {
    (0..10)
        .map(|i| {
            let n = 2500usize << i;
            let x = Tensor::rand_uniform(&[n], 0.0, 1.0, 31337 + i);
            Workload {
                eval: "lse",
                description: format!("n={n}"),
                published: n == 80_000 || n == 1_280_000,
                run: Box::new(move |runs| {
                    let primal = measure_with_cpu(runs, &x, |x| lse::logsumexp(x).item());
                    let gradient = measure_with_cpu(runs, &x, lse::logsumexp_grad);
                    (primal, gradient)
                }),
            }
        })
        .collect()
}

fn llsq_workloads() -> Vec<Workload> {
    [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8196, 16392]
        .into_iter()
        .enumerate()
        .map(|(i, n)| {
            let m = 128;
            let x = Tensor::rand_uniform(&[m], 0.0, 1.0, 31337 + i as u64);
            Workload {
                eval: "llsq",
                description: format!("n={n},m={m}"),
                published: n == 1024 || n == 16392,
                run: Box::new(move |runs| {
                    let primal = measure_with_cpu(runs, &x, |x| llsq::objective(x, n).item());
                    let gradient = measure_with_cpu(runs, &x, |x| llsq::objective_grad(x, n));
                    (primal, gradient)
                }),
            }
        })
        .collect()
}

fn gmm_workloads() -> Vec<Workload> {
    let order = [
        (2, 5),
        (2, 10),
        (2, 25),
        (10, 5),
        (2, 50),
        (10, 10),
        (20, 5),
        (32, 5),
        (2, 100),
        (20, 10),
        (10, 25),
        (32, 10),
        (64, 5),
        (10, 50),
        (20, 25),
        (64, 10),
        (32, 25),
        (10, 100),
        (20, 50),
        (32, 50),
        (64, 25),
        (20, 100),
        (32, 100),
        (64, 50),
        (64, 100),
    ];
    order
        .into_iter()
        .map(|(d, k)| {
            let n = 1000;
            let seed = 31337 + (d * 1000 + k) as u64;
            let problem = gmm::Problem {
                x: Tensor::rand_normal(&[n, d], 0.0, 1.0, seed),
                alpha: Tensor::rand_normal(&[k], 0.0, 1.0, seed + 1),
                mu: Tensor::rand_uniform(&[k, d], 0.0, 1.0, seed + 2),
                q: Tensor::rand_normal(&[k, d], 0.0, 1.0, seed + 3),
                l: Tensor::rand_normal(&[k, d * (d - 1) / 2], 0.0, 1.0, seed + 4),
                wishart: gmm::Wishart { gamma: 1.0, m: 0 },
            };
            Workload {
                eval: "gmm",
                description: format!("{d}_{k}_{n}"),
                published: (d, k) == (10, 25) || (d, k) == (64, 100),
                run: Box::new(move |runs| {
                    let primal = measure_with_cpu(runs, &problem, gmm::primal);
                    let jacobian = measure_with_cpu(runs, &problem, gmm::jacobian);
                    (primal, jacobian)
                }),
            }
        })
        .collect()
}

fn kmeans_workloads() -> Vec<Workload> {
    let order = [
        (10, 1000, 8),
        (10, 1000, 16),
        (10, 10000, 8),
        (100, 1000, 8),
        (10, 10000, 16),
        (100, 1000, 16),
        (100, 10000, 8),
        (1000, 1000, 8),
        (100, 10000, 16),
        (1000, 1000, 16),
        (1000, 10000, 8),
        (1000, 10000, 16),
    ];
    order
        .into_iter()
        .enumerate()
        .map(|(i, (k, n, d))| {
            let points = Tensor::rand_uniform(&[n, d], 0.0, 1.0, 31337 + i as u64);
            let centroids = points.shrink(&[(n - k, n), (0, d)]);
            Workload {
                eval: "kmeans",
                description: format!("k={k},n={n},d={d}"),
                published: (k, n, d) == (100, 10000, 8) || (k, n, d) == (1000, 10000, 16),
                run: Box::new(move |runs| {
                    let cost =
                        measure_with_cpu(runs, &centroids, |c| kmeans::cost(c, &points).item());
                    let dir = measure_with_cpu(runs, &centroids, |c| kmeans::direction(c, &points));
                    (cost, dir)
                }),
            }
        })
        .collect()
}

fn ode_workloads() -> Vec<Workload> {
    let order = [
        (1000, 1),
        (1000, 10),
        (10000, 1),
        (1000, 100),
        (10000, 10),
        (100000, 1),
        (10000, 100),
        (100000, 10),
        (100000, 100),
    ];
    order
        .into_iter()
        .enumerate()
        .map(|(i, (n, s))| {
            let x = Tensor::rand_uniform(&[n], 0.0, 1.0, 31337 + i as u64);
            Workload {
                eval: "ode",
                description: format!("n={n},s={s}"),
                published: (n, s) == (10000, 10) || (n, s) == (100000, 100),
                run: Box::new(move |runs| {
                    let primal = measure_with_cpu(runs, &x, |x| ode::solve(x, s));
                    let gradient = measure_with_cpu(runs, &x, |x| ode::last_component_grad(x, s));
                    (primal, gradient)
                }),
            }
        })
        .collect()
}

/// GradBench's default `ba` inputs (its data files ba1 to ba14): their sizes, each with the
/// camera, point, weight and feature that every one of those files holds.
fn ba_workloads() -> Vec<Workload> {
    let sizes = [
        (49, 7776, 31843),
        (21, 11315, 36455),
        (161, 48126, 182072),
        (372, 47423, 204472),
        (257, 65132, 225911),
        (539, 65220, 277273),
        (93, 61203, 287451),
        (88, 64298, 383937),
        (810, 88814, 393775),
        (1197, 126327, 563734),
        (1723, 156502, 678718),
        (253, 163691, 899155),
        (245, 198739, 1091386),
        (356, 226730, 1255268),
    ];
    sizes
        .into_iter()
        .enumerate()
        .map(|(i, (n, m, p))| {
            let input = serde_json::json!({
                "n": n, "m": m, "p": p,
                "cam": [-0.758453, -1.109613, -0.845551, 34.556073, 39.676747, 53.881673,
                        419.194514, 5.864426, -8.518870, 0.087812, 0.002739],
                "x": [7.203245, 0.001144, 3.023326],
                "w": 0.417022,
                "feat": [271.760969, 834.209256],
            });
            let (problem, _) = ba::prepare(&input).expect("a valid ba input");
            Workload {
                eval: "ba",
                description: format!("ba{}_n{n}_m{m}_p{p}", i + 1),
                published: false,
                run: Box::new(move |runs| {
                    let objective = measure_with_cpu(runs, &problem, ba::objective);
                    let jacobian = measure_with_cpu(runs, &problem, ba::jacobian);
                    (objective, jacobian)
                }),
            }
        })
        .collect()
}

#[global_allocator]
static GLOBAL: rune_gradbench::Allocator = mimalloc::MiMalloc;

fn main() -> ExitCode {
    rune_gradbench::keep_freed_memory();
    let mut evals = Vec::new();
    let mut runs = Runs {
        min_runs: 1,
        min_seconds: 1.0,
    };
    let mut published_only = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--min-seconds" | "--min-runs" => {
                let Some(value) = args.next() else {
                    eprintln!("{arg} needs a value");
                    return ExitCode::FAILURE;
                };
                let parsed = if arg == "--min-runs" {
                    value.parse().map(|n| runs.min_runs = n).is_ok()
                } else {
                    value.parse().map(|s| runs.min_seconds = s).is_ok()
                };
                if !parsed {
                    eprintln!("{arg}: not a number: {value}");
                    return ExitCode::FAILURE;
                }
            }
            "--published" => published_only = true,
            "lse" | "llsq" | "gmm" | "kmeans" | "ode" | "ba" => evals.push(arg),
            _ => {
                eprintln!(
                    "usage: rune-gradbench-bench [lse|llsq|gmm|kmeans|ode|ba ..] \
                     [--min-seconds S] [--min-runs N] [--published]"
                );
                return ExitCode::FAILURE;
            }
        }
    }
    if evals.is_empty() {
        evals = ["lse", "llsq", "gmm", "kmeans", "ode", "ba"]
            .map(String::from)
            .to_vec();
    }
    println!(
        "| eval | workload | primal ms | derivative ms | CPU ms (primal / derivative) | runs |"
    );
    println!("|---|---|---|---|---|---|");
    for eval in &evals {
        let workloads = match eval.as_str() {
            "lse" => lse_workloads(),
            "llsq" => llsq_workloads(),
            "gmm" => gmm_workloads(),
            "kmeans" => kmeans_workloads(),
            "ode" => ode_workloads(),
            _ => ba_workloads(),
        };
        for w in workloads.iter().filter(|w| w.published || !published_only) {
            let ((primal, primal_cpu), (derivative, derivative_cpu)) = (w.run)(runs);
            let cpu = |c: Option<f64>| c.map_or("-".to_owned(), |c| format!("{c:.4}"));
            println!(
                "| {} | {} | {:.4} | {:.4} | {} / {} | {} / {} |",
                w.eval,
                w.description,
                mean_ms(&primal),
                mean_ms(&derivative),
                cpu(primal_cpu),
                cpu(derivative_cpu),
                primal.len(),
                derivative.len()
            );
        }
    }
    ExitCode::SUCCESS
}
