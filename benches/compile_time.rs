//! How long rustc takes to check a long `#[differentiable]` function, against the same function
//! without the attribute (docs/guarantees.md, "Long and deep bodies").
//!
//! `cargo bench -p rune-benches --bench compile_time` writes a small crate under
//! `target/compile-time/` holding a body of `let`s without `#[differentiable]`, with it (fused,
//! the default) and with `#[differentiable(fuse = false)]`, and times `cargo check` of each
//! (incremental compilation off, the dependencies checked beforehand, the median of three runs).
//! It prints the times and their ratios to the plain function's for 500 and 2,000 `let`s, for
//! two shapes of body: a chain in which each value is read once (`let v1 = &v0 * 1.0001 + 0.5;`
//! ..: one fused region) and one in which each is read twice
//! (`let v8 = (&v7 * 0.999 + &v1).sin();` ..: a region a `let`).
//!
//! Then it times `cargo build` (debug) of a file of 50 small differentiable functions written the
//! way users write them (a dense layer's loss, a loop, a branch on a value, a softmax
//! cross-entropy, a W2-like update), against the same file without the attribute, and prints
//! the size of the expansion (tokens of the 50 generated items against the source's). The
//! generated entry points are `#[inline]`, so a build compiles only those something calls: the
//! file is built again with every function's `value_and_grad` used, and with every entry point
//! used.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const LENGTHS: [usize; 2] = [500, 2000];
const RUNS: usize = 3;
const FUSED: &str = "#[differentiable]";
const UNFUSED: &str = "#[differentiable(fuse = false)]";
/// The public entry points of a function on a concrete element type without `hvp`.
const ENTRY_POINTS: [&str; 5] = ["value_and_grad", "grad", "vjp", "jvp", "pullback"];

/// The shape of a long body.
#[derive(Clone, Copy)]
enum Shape {
    /// Each value read once, by the next `let`: a tree, one fused region.
    Chain,
    /// Each value read twice, by the next `let` and by the one seven on: a region a `let`.
    ReadTwice,
}

/// The body of `lets` `let`s of `shape`, under `attribute` (`#[differentiable]`,
/// `#[differentiable(fuse = false)]`) or none.
fn source(shape: Shape, lets: usize, attribute: Option<&str>) -> String {
    let mut s = String::from("use rune_ad::prelude::*;\n\n");
    if let Some(attribute) = attribute {
        s.push_str(attribute);
        s.push('\n');
    }
    s.push_str("pub fn f(x: &Tensor<f64>) -> Tensor<f64> {\n");
    match shape {
        Shape::Chain => {
            s.push_str("    let v0 = x * 1.0;\n");
            for i in 1..lets {
                s.push_str(&format!("    let v{i} = &v{} * 1.0001 + 0.5;\n", i - 1));
            }
        }
        Shape::ReadTwice => {
            for i in 0..7 {
                s.push_str(&format!("    let v{i} = x * 1.{i};\n"));
            }
            for i in 7..lets {
                s.push_str(&format!(
                    "    let v{i} = (&v{} * 0.999 + &v{}).sin();\n",
                    i - 1,
                    i - 7
                ));
            }
        }
    }
    s.push_str(&format!("    v{}\n}}\n", lets - 1));
    s
}

/// The body templates of the 50-function file: `{i}` is the function's number.
const TEMPLATES: [&str; 5] = [
    "pub fn loss{i}(w: &Tensor<f32>, b: &Tensor<f32>, #[nodiff] x: &Tensor<f32>, #[nodiff] y: &Tensor<f32>) -> Tensor<f32> {
    let h = (x.matmul(w) + b).tanh();
    let d = h - y;
    (&d * &d).mean()
}",
    "pub fn loss{i}(x: &Tensor<f64>, #[nodiff] steps: usize) -> Tensor<f64> {
    let mut y = x.clone();
    for _ in 0..steps {
        y = y.sin() * 0.5 + &y * 0.25;
    }
    y.sum()
}",
    "pub fn loss{i}(x: &Tensor<f64>, w: &Tensor<f64>) -> Tensor<f64> {
    let s = x.matmul(w);
    if s.sum().item() > 0.0 {
        (s.exp() * 0.5).sum()
    } else {
        (&s * &s + 1.0).ln().mean()
    }
}",
    "pub fn loss{i}(w: &Tensor<f32>, #[nodiff] x: &Tensor<f32>, #[nodiff] t: &Tensor<f32>) -> Tensor<f32> {
    let logits = x.matmul(w);
    -(logits.log_softmax(-1) * t).sum() / 8.0
}",
    "pub fn loss{i}(x: &Tensor<f64>) -> Tensor<f64> {
    let mut x = x.clone();
    let mut acc = Tensor::scalar(0.0);
    for _ in 0..4 {
        x = &x * 0.9 + 0.1 * x.tanh();
        acc += (x.sin() * x.exp() / (1.0 + &x * &x)).sum();
    }
    acc
}",
];

/// The 50-function file, with `#[differentiable]` on each function or without it (and then
/// without the parameters' `#[nodiff]`).
fn fifty(differentiable: bool) -> String {
    let mut s = String::from("use rune_ad::prelude::*;\n\n");
    for i in 0..50 {
        let f = TEMPLATES[i % TEMPLATES.len()].replace("{i}", &i.to_string());
        if differentiable {
            s.push_str(FUSED);
            s.push('\n');
            s.push_str(&f);
        } else {
            s.push_str(&f.replace("#[nodiff] ", ""));
        }
        s.push_str("\n\n");
    }
    s
}

/// The differentiable 50-function file and a function that takes the address of each
/// function's `entries` (`value_and_grad`, ..), so that the build compiles them: the generated
/// entry points are `#[inline]`, built only where they are used.
fn fifty_used(entries: &[&str]) -> String {
    let mut s = fifty(true);
    s.push_str("pub fn entry_points() -> Vec<*const ()> {\n    vec![\n");
    for i in 0..50 {
        for entry in entries {
            s.push_str(&format!("        loss{i}_{entry} as *const (),\n"));
        }
    }
    s.push_str("    ]\n}\n");
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
    cargo(dir, target, "check")
}

/// The time of `cargo {command} --lib` in `dir`.
fn cargo(dir: &Path, target: &Path, command: &str) -> f64 {
    let start = Instant::now();
    let status = Command::new(env!("CARGO"))
        .args([command, "--quiet", "--lib"])
        .current_dir(dir)
        .env("CARGO_INCREMENTAL", "0")
        .env("CARGO_TARGET_DIR", target)
        .status()
        .expect("run cargo check");
    assert!(
        status.success(),
        "cargo {command} failed in {}",
        dir.display()
    );
    start.elapsed().as_secs_f64()
}

fn median_check(dir: &Path, target: &Path, lib: &str) -> f64 {
    median(dir, target, lib, "check")
}

fn median(dir: &Path, target: &Path, lib: &str, command: &str) -> f64 {
    let mut times: Vec<f64> = (0..RUNS)
        .map(|_| {
            // A fresh write, so that cargo compiles the crate again.
            std::fs::write(dir.join("src/lib.rs"), lib).expect("write lib.rs");
            cargo(dir, target, command)
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
    let small = source(Shape::Chain, 2, Some(FUSED));
    std::fs::write(dir.join("src/lib.rs"), &small).expect("write lib.rs");
    check(&dir, &target);

    for (shape, name) in [
        (Shape::Chain, "a chain of lets (each value read once)"),
        (Shape::ReadTwice, "lets whose values are each read twice"),
    ] {
        println!("compile_time: cargo check of {name}, median of {RUNS}");
        println!(
            "{:>6} {:>10} {:>10} {:>7} {:>12} {:>7}",
            "lets", "plain (s)", "fused (s)", "ratio", "unfused (s)", "ratio"
        );
        for lets in LENGTHS {
            let plain = median_check(&dir, &target, &source(shape, lets, None));
            let fused = median_check(&dir, &target, &source(shape, lets, Some(FUSED)));
            let unfused = median_check(&dir, &target, &source(shape, lets, Some(UNFUSED)));
            println!(
                "{lets:>6} {plain:>10.2} {fused:>10.2} {:>7.1} {unfused:>12.2} {:>7.1}",
                fused / plain,
                unfused / plain
            );
        }
    }

    // The 50 functions, built in debug; the dependencies built beforehand.
    std::fs::write(dir.join("src/lib.rs"), &small).expect("write lib.rs");
    cargo(&dir, &target, "build");
    let (plain_src, fused_src) = (fifty(false), fifty(true));
    let plain = median(&dir, &target, &plain_src, "build");
    let fused = median(&dir, &target, &fused_src, "build");
    let one = median(&dir, &target, &fifty_used(&["value_and_grad"]), "build");
    let all = median(&dir, &target, &fifty_used(&ENTRY_POINTS), "build");
    println!("compile_time: cargo build (debug) of 50 functions, median of {RUNS}");
    println!(
        "{:>10} {:>10} {:>7} {:>16} {:>16}",
        "plain (s)", "fused (s)", "ratio", "source tokens", "expanded tokens"
    );
    let expanded = expanded_tokens(&dir, &target)
        .map_or_else(|| "n/a (no nightly)".to_string(), |n| n.to_string());
    println!(
        "{plain:>10.2} {fused:>10.2} {:>7.1} {:>16} {expanded:>16}",
        fused / plain,
        tokens(&plain_src),
    );
    println!("the same file with each function's entry points used (their addresses taken)");
    println!("{:>30} {:>10} {:>7}", "used", "fused (s)", "ratio");
    println!("{:>30} {one:>10.2} {:>7.1}", "value_and_grad", one / plain);
    println!(
        "{:>30} {all:>10.2} {:>7.1}",
        ENTRY_POINTS.join(" "),
        all / plain
    );
}

/// The number of tokens of `src`, counted as rustc's lexer would roughly split it: identifiers,
/// literals and punctuation.
fn tokens(src: &str) -> usize {
    let mut n = 0;
    let mut in_word = false;
    for c in src.chars() {
        if c.is_alphanumeric() || c == '_' || c == '.' && in_word {
            if !in_word {
                n += 1;
            }
            in_word = true;
        } else {
            in_word = false;
            if !c.is_whitespace() {
                n += 1;
            }
        }
    }
    n
}

/// The tokens of the probe crate's expansion, where a nightly toolchain can print it
/// (`-Zunpretty=expanded`).
fn expanded_tokens(dir: &Path, target: &Path) -> Option<usize> {
    let out = Command::new("rustup")
        .args([
            "run",
            "nightly",
            "cargo",
            "rustc",
            "--quiet",
            "--lib",
            "--",
            "-Zunpretty=expanded",
        ])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target.join("nightly"))
        .output();
    match out {
        Ok(out) if out.status.success() => Some(tokens(&String::from_utf8_lossy(&out.stdout))),
        _ => None,
    }
}
