//! How long rustc takes to check a long `#[differentiable]` function, against the same function
//! without the attribute (docs/guarantees.md, "Long and deep bodies").
//!
//! `cargo bench -p rune-benches --bench compile_time` writes a small crate under
//! `target/compile-time/` holding a chain of `let`s (`let v1 = &v0 * 1.0001 + 0.5;` ..) without
//! `#[differentiable]`, with it (fused, the default) and with `#[differentiable(fuse = false)]`,
//! and times `cargo check` of each (incremental compilation off, the dependencies checked
//! beforehand, the median of three runs). It prints the times and their ratios to the plain
//! function's for 500 and 2,000 `let`s.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const LENGTHS: [usize; 2] = [500, 2000];
const RUNS: usize = 3;
const FUSED: &str = "#[differentiable]";
const UNFUSED: &str = "#[differentiable(fuse = false)]";

/// The chain, under `attribute` (`#[differentiable]`, `#[differentiable(fuse = false)]`) or
/// none.
fn source(lets: usize, attribute: Option<&str>) -> String {
    let mut s = String::from("use rune_ad::prelude::*;\n\n");
    if let Some(attribute) = attribute {
        s.push_str(attribute);
        s.push('\n');
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
    std::fs::write(dir.join("src/lib.rs"), source(2, Some(FUSED))).expect("write lib.rs");
    check(&dir, &target);

    println!("compile_time: cargo check of a chain of lets, median of {RUNS}");
    println!(
        "{:>6} {:>10} {:>10} {:>7} {:>12} {:>7}",
        "lets", "plain (s)", "fused (s)", "ratio", "unfused (s)", "ratio"
    );
    for lets in LENGTHS {
        let plain = median_check(&dir, &target, &source(lets, None));
        let fused = median_check(&dir, &target, &source(lets, Some(FUSED)));
        let unfused = median_check(&dir, &target, &source(lets, Some(UNFUSED)));
        println!(
            "{lets:>6} {plain:>10.2} {fused:>10.2} {:>7.1} {unfused:>12.2} {:>7.1}",
            fused / plain,
            unfused / plain
        );
    }
}
