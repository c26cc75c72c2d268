//! What the tests share: running the tool binary on a list of messages, reading the vector
//! files, and GradBench's comparison rule beside a strict one.
#![allow(dead_code)] // each test file uses its own part of this module

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

/// The path of a file in `vectors/`.
pub fn vector_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("vectors")
        .join(name)
}

/// A vector file, parsed.
pub fn vector_file(name: &str) -> Value {
    let text = std::fs::read_to_string(vector_path(name)).expect("vector file");
    serde_json::from_str(&text).expect("vector file is JSON")
}

/// Runs the tool binary with `messages` (one per line) on its stdin, closes it, and returns
/// the lines it wrote; asserts that it exits with status 0 at end of input.
pub fn run_tool(messages: &[String]) -> Vec<String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rune-gradbench"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the tool");
    let mut stdin = child.stdin.take().expect("stdin");
    let input: String = messages.iter().map(|m| format!("{m}\n")).collect();
    let writer = std::thread::spawn(move || {
        stdin.write_all(input.as_bytes()).expect("write messages");
    });
    let output = child.wait_with_output().expect("tool output");
    writer.join().expect("writer thread");
    assert!(
        output.status.success(),
        "the tool exited with {}",
        output.status
    );
    String::from_utf8(output.stdout)
        .expect("UTF-8 output")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Every number in `v`, in a fixed order (object keys sorted), with the structure checked
/// against `reference` exactly as GradBench's eval does: same JSON types (an integer where a
/// float is expected is accepted), same array lengths, same object keys.
pub fn numbers_alike(v: &Value, reference: &Value, at: &str) -> Vec<(f64, f64)> {
    match (v, reference) {
        (Value::Number(a), Value::Number(b)) => {
            vec![(a.as_f64().unwrap(), b.as_f64().unwrap())]
        }
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{at}: array length");
            a.iter()
                .zip(b)
                .enumerate()
                .flat_map(|(i, (x, y))| numbers_alike(x, y, &format!("{at}[{i}]")))
                .collect()
        }
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<_> = a.keys().collect();
            let mut expected: Vec<_> = b.keys().collect();
            keys.sort();
            expected.sort();
            assert_eq!(keys, expected, "{at}: object keys");
            expected
                .into_iter()
                .flat_map(|k| numbers_alike(&a[k], &b[k], &format!("{at}.{k}")))
                .collect()
        }
        _ => panic!("{at}: {v} is not of the reference's JSON type ({reference})"),
    }
}

/// GradBench's rule (docs/GRADBENCH.md §5): `|a − b| / max(1, |a| + |b|) ≤ 1e-4` for every pair.
pub fn assert_gradbench_valid(pairs: &[(f64, f64)], at: &str) {
    for (i, &(a, b)) in pairs.iter().enumerate() {
        assert!(
            (a - b).abs() / (a.abs() + b.abs()).max(1.0) <= 1e-4,
            "{at}: entry {i} is {a}, the reference {b}"
        );
    }
}

/// The strict rule: `max |a − b| ≤ rtol · max |b|` over the whole output (exact when the
/// reference is all zeros).
pub fn assert_close(pairs: &[(f64, f64)], rtol: f64, at: &str) {
    let scale = pairs.iter().map(|p| p.1.abs()).fold(0.0, f64::max);
    for (i, &(a, b)) in pairs.iter().enumerate() {
        assert!(
            (a - b).abs() <= rtol * scale,
            "{at}: entry {i} is {a}, the reference {b} (scale {scale:e}, rtol {rtol:e})"
        );
    }
}
