//! `programs [--only w5,w9] [--system rune-ad|hand] [--grads DIR]`: times W5–W12 of docs/PROGRAMS.md and prints one
//! JSON line per workload in the format of `bench_jax.py` (see docs/benchmarks.md).
//!
//! Run it pinned to one core, beside the JAX and PyTorch scripts:
//! `taskset -c 1 target/release/programs`.

use std::path::{Path, PathBuf};

use rune_benches::harness::{run, Program};
use rune_benches::{
    w10_gp::W10, w11_logreg::*, w12_mixture::*, w5_transformer::W5, w6_cnn::W6, w7_lstm::W7,
    w8_rk4::*, w9_nbody::*,
};

const ALL: [&str; 8] = ["w5", "w6", "w7", "w8", "w9", "w10", "w11", "w12"];
/// The workloads with a hand-written baseline.
const HAND: [&str; 4] = ["w8", "w9", "w11", "w12"];

fn usage() -> ! {
    eprintln!("usage: programs [--only w5,w9] [--system rune-ad|hand] [--grads DIR]");
    std::process::exit(2)
}

fn emit<P: Program>(system: &str, program: &P, grads: Option<&Path>) {
    println!("{}", run(system, program, grads));
}

fn main() {
    let mut only: Vec<String> = ALL.iter().map(|s| s.to_string()).collect();
    let mut system = "rune-ad".to_string();
    let mut grads: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--only" => {
                only = args
                    .next()
                    .unwrap_or_else(|| usage())
                    .split(',')
                    .map(String::from)
                    .collect()
            }
            "--system" => system = args.next().unwrap_or_else(|| usage()),
            "--grads" => grads = Some(args.next().unwrap_or_else(|| usage()).into()),
            _ => usage(),
        }
    }
    for id in &only {
        if !ALL.contains(&id.as_str()) {
            eprintln!("unknown workload {id}; the workloads are {}", ALL.join(","));
            std::process::exit(2);
        }
    }
    let hand = match system.as_str() {
        "rune-ad" => false,
        "hand" => true,
        _ => usage(),
    };
    let dir = grads.as_deref();
    for id in ALL.iter().filter(|id| only.iter().any(|o| o == *id)) {
        if hand && !HAND.contains(id) {
            eprintln!(
                "{id}: no hand-written baseline (there are: {})",
                HAND.join(",")
            );
            continue;
        }
        match (*id, hand) {
            ("w5", _) => emit(&system, &W5::default(), dir),
            ("w6", _) => emit(&system, &W6::default(), dir),
            ("w7", _) => emit(&system, &W7::default(), dir),
            ("w8", false) => emit(&system, &W8::default(), dir),
            ("w8", true) => emit(&system, &Rk4Hand::new(&W8::default()), dir),
            ("w9", false) => emit(&system, &W9::default(), dir),
            ("w9", true) => emit(&system, &NbodyHand::new(&W9::default()), dir),
            ("w10", _) => emit(&system, &W10::default(), dir),
            ("w11", false) => emit(&system, &W11::default(), dir),
            ("w11", true) => emit(&system, &LogregHand::new(&W11::default()), dir),
            ("w12", false) => emit(&system, &W12::default(), dir),
            ("w12", true) => emit(&system, &MixtureHand::new(&W12::default()), dir),
            _ => unreachable!("every id of ALL has an arm"),
        }
    }
}
