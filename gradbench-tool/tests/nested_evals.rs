//! GradBench's `particle` and `saddle` evals, whose derivatives are nested, in their four
//! variants (`rr`, `rf`, `fr`, `ff`) through the binary and the protocol, checked as their
//! evals check them, against the outputs those evals expect.
mod common;

use common::{assert_close, assert_gradbench_valid, numbers_alike, run_tool};
use serde_json::{json, Value};

/// Runs one session of `module` on `input`, every variant, and checks each output against
/// `expected` (GradBench's rule, then to `1e-9` relative).
fn session(module: &str, input: Value, expected: Value) {
    let mut messages = vec![
        json!({"id": 0, "kind": "start", "eval": module}).to_string(),
        json!({"id": 1, "kind": "define", "module": module}).to_string(),
    ];
    let variants = ["rr", "ff", "fr", "rf"];
    for (k, function) in variants.iter().enumerate() {
        let mut input = input.clone();
        input["min_runs"] = json!(1);
        input["min_seconds"] = json!(0.0);
        messages.push(
            json!({"id": k + 2, "kind": "evaluate", "module": module, "function": function,
                   "input": input})
            .to_string(),
        );
    }
    let responses = run_tool(&messages);
    assert_eq!(responses.len(), messages.len(), "one response per message");
    assert_eq!(responses[1], r#"{"id":1,"success":true}"#);
    for (k, function) in variants.iter().enumerate() {
        let at = format!("{module} {function}");
        let response: Value = serde_json::from_str(&responses[k + 2]).unwrap();
        assert_eq!(response["success"], json!(true), "{at}: {response}");
        let pairs = numbers_alike(&response["output"], &expected, &at);
        assert_gradbench_valid(&pairs, &at);
        assert_close(&pairs, 1e-9, &at);
    }
}

#[test]
fn particle_in_every_order() {
    // The output GradBench's particle eval expects from w = 0.
    session("particle", json!({"w": 0.0}), json!(0.2071918746486116));
}

#[test]
fn saddle_in_every_order() {
    // The output GradBench's saddle eval expects from (1, 1).
    let e = 8.246324826140356e-06;
    session("saddle", json!({"start": [1.0, 1.0]}), json!([e, e, e, e]));
}
