//! How long rustc takes to check a long `#[differentiable]` function, against the same function
//! without the attribute (docs/guarantees.md, "Long and deep bodies").
//!
//! `cargo bench -p rune-benches --bench compile_time` writes two small crates under
//! `target/compile-time/`, each a chain of `let`s (`let v1 = &v0 * 1.0001 + 0.5;` ..) with and
//! without `#[differentiable]`, and times `cargo check` of each (incremental compilation off,
//! the dependencies checked beforehand, the median of three runs). It prints the times and
//! their ratio for 500 and 2,000 `let`s.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const LENGTHS: [usize; 2] = [500, 2000];
const RUNS: usize = 3;

fn source(lets: usize, attribute: bool) -> String {
    let mut s = String::from("use rune_ad::prelude::*;\n\n");
    if attribute {
        s.push_str("#[differentiable]\n");
    }
    s.push_str("pub fn f(x: &Tensor<f64>) -> Tensor<f64> {\n    let v0 = x * 1.0;\n");
    for i in 1..lets {
        s.push_str(&format!("    let v{i} = &v{} * 1.0001 + 0.5;\n", i - 1));
    }
    s.push_str(&format!("    v{}\n}}\n", lets - 1));
    s
}

fn write_crate(dir: &Path, root: &Path) {
    std::fs::create_dir_all(dir.join("src")).expect("create the crate's directory");
    let manifest = format!(
        "[package]\nname = \"compile-time-probe\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\nrune-ad = {{ path = {:?} }}\n\n[workspace]\n",
        root.display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).expect("write Cargo.toml");
}

fn check(dir: &Path, target: &Path) -> f64 {
    let start = Instant::now();
    let status = Command::new(env!("CARGO"))
        .args(["check", "--quiet", "--lib"])
        .current_dir(dir)
        .env("CARGO_INCREMENTAL", "0")
        .env("CARGO_TARGET_DIR", target)
        .status()
        .expect("run cargo check");
    assert!(status.success(), "cargo check failed in {}", dir.display());
    start.elapsed().as_secs_f64()
}

fn median_check(dir: &Path, target: &Path, lib: &str) -> f64 {
    let mut times: Vec<f64> = (0..RUNS)
        .map(|_| {
            // A fresh write, so that cargo checks the crate again.
            std::fs::write(dir.join("src/lib.rs"), lib).expect("write lib.rs");
            check(dir, target)
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[RUNS / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; a filter that is not ours means another bench was asked.
    if let Some(filter) = std::env::args().skip(1).find(|a| !a.starts_with('-')) {
        if !"compile_time".contains(&filter) {
            return;
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf();
    let base = root.join("target/compile-time");
    let dir = base.join("probe");
    let target = base.join("target");
    write_crate(&dir, &root);
    std::fs::write(dir.join("src/lib.rs"), source(2, true)).expect("write lib.rs");
    check(&dir, &target);

    println!("compile_time: cargo check of a chain of lets, median of {RUNS}");
    println!(
        "{:>6} {:>12} {:>12} {:>7}",
        "lets", "plain (s)", "macro (s)", "ratio"
    );
    for lets in LENGTHS {
        let plain = median_check(&dir, &target, &source(lets, false));
        let with = median_check(&dir, &target, &source(lets, true));
        println!("{lets:>6} {plain:>12.2} {with:>12.2} {:>7.1}", with / plain);
    }
}
