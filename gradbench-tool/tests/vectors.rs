//! The tool reproduces every reference output in `vectors/` (GradBench's own evals run against
//! its hand-written C++ tool): through the binary and the protocol, to GradBench's tolerance
//! and to a strict relative one.
mod common;

use common::{assert_close, assert_gradbench_valid, numbers_alike, run_tool, vector_file};
use serde_json::{json, Value};

/// Relative tolerance against an exact reference: the outputs agree to rounding (about
/// 1e-15); GradBench's own 1e-4 accepts, for instance, an all-zero lse gradient.
const RTOL: f64 = 1e-9;

/// Sends every workload of `file` through the tool (primal, then derivative) with
/// `min_runs` runs and no minimum time, and checks each answer.
fn reproduce(file: &str, min_runs: u64) {
    let vectors = vector_file(file);
    let module = vectors["module"].as_str().unwrap();
    let workloads = vectors["workloads"].as_array().unwrap();
    let mut messages = vec![
        json!({"id": 0, "kind": "start", "eval": module}).to_string(),
        json!({"id": 1, "kind": "define", "module": module}).to_string(),
    ];
    let mut expected = Vec::new();
    for w in workloads {
        let mut input = w["input"].clone();
        input["min_runs"] = json!(min_runs);
        input["min_seconds"] = json!(0.0);
        for part in ["primal", "derivative"] {
            let id = messages.len();
            messages.push(
                json!({"id": id, "kind": "evaluate", "module": module,
                       "function": w[part]["function"], "input": input,
                       "description": w["description"]})
                .to_string(),
            );
            // The ode reference gradient is the exact ODE solution's, not RK4's (docs/GRADBENCH.md
            // §7.5): the strict check uses the exact derivative of the RK4 scheme.
            let strict = w[part]
                .get("rk4_float64_output")
                .unwrap_or(&w[part]["expected_output"]);
            expected.push((
                id,
                format!("{file} {} {part}", w["description"]),
                w[part]["expected_output"].clone(),
                strict.clone(),
            ));
        }
    }
    let responses = run_tool(&messages);
    assert_eq!(responses.len(), messages.len(), "one response per message");
    assert_eq!(responses[0], r#"{"id":0,"tool":"rune-ad"}"#);
    assert_eq!(responses[1], r#"{"id":1,"success":true}"#);
    for (id, at, reference, strict) in expected {
        let response: Value = serde_json::from_str(&responses[id]).unwrap();
        assert_eq!(response["id"], json!(id), "{at}: id");
        assert_eq!(response["success"], json!(true), "{at}: {response}");
        assert!(response.get("error").is_none(), "{at}: error with success");
        let timings = response["timings"].as_array().unwrap();
        assert!(
            timings.len() as u64 >= min_runs,
            "{at}: {} runs",
            timings.len()
        );
        for t in timings {
            assert_eq!(t["name"], "evaluate");
            assert!(t["nanoseconds"].is_u64(), "{at}: timing {t}");
        }
        let output = &response["output"];
        assert_gradbench_valid(&numbers_alike(output, &reference, &at), &at);
        assert_strictly_close(output, &strict, &at);
    }
}

/// `output` within [`RTOL`] of `strict`, each part of an object (gmm's four gradients, ba's
/// errors and their count) on its own scale.
fn assert_strictly_close(output: &Value, strict: &Value, at: &str) {
    match strict {
        Value::Object(parts) => {
            for (key, part) in parts {
                assert_strictly_close(&output[key], part, &format!("{at}.{key}"));
            }
        }
        strict => assert_close(&numbers_alike(output, strict, at), RTOL, at),
    }
}

#[test]
fn lse_small() {
    reproduce("lse-small-n10.json", 3);
}

#[test]
fn lse_default_n2500() {
    reproduce("lse-default-n2500.json", 1);
}

#[test]
fn llsq_small_with_a_zero_point() {
    reproduce("llsq-small-n9-m4.json", 3);
}

#[test]
fn llsq_every_default_workload() {
    reproduce("llsq-default-all.json", 1);
}

#[test]
fn gmm_small_with_prior_terms() {
    reproduce("gmm-small-d4-k3-n20-m2-g0.7.json", 3);
}

#[test]
fn gmm_default_2_5() {
    reproduce("gmm-default-2_5_1000.json", 1);
}

#[test]
fn gmm_default_10_5() {
    reproduce("gmm-default-10_5_1000.json", 1);
}

#[test]
fn kmeans_small() {
    reproduce("kmeans-small-k3-n12-d2.json", 3);
}

#[test]
fn kmeans_default_k10_n1000_d8() {
    reproduce("kmeans-default-k10-n1000-d8.json", 1);
}

#[test]
fn ode_small_where_rk4_and_the_exact_solution_differ() {
    reproduce("ode-small-n4-n8-s2-s3.json", 3);
}

#[test]
fn ode_default_n1000() {
    reproduce("ode-default-n1000-s1-s10.json", 1);
}

#[test]
fn ht_small_complicated() {
    reproduce("ht-small-complicated-hand1.json", 3);
}

#[test]
fn ht_small_simple() {
    reproduce("ht-small-simple-hand1.json", 3);
}

#[test]
fn ht_default_hand1() {
    reproduce("ht-default-hand1.json", 1);
}

/// An `ht` input whose fields do not fit is answered with an error naming the field, and the
/// session goes on.
#[test]
fn ht_bad_inputs_name_the_field() {
    let good = vector_file("ht-small-complicated-hand1.json")["workloads"][0]["input"].clone();
    let mut cases = Vec::new();
    let mut short_theta = good.clone();
    short_theta["theta"].as_array_mut().unwrap().pop();
    cases.push((short_theta, "theta has 25 entries, expected 26"));
    let mut short_weights = good.clone();
    short_weights["data"]["model"]["weights"][3]
        .as_array_mut()
        .unwrap()
        .pop();
    cases.push((short_weights, "data.model.weights: row 3 has 21 entries"));
    let mut far_triangle = good.clone();
    far_triangle["data"]["correspondences"][7] = json!(5000);
    cases.push((far_triangle, "data.correspondences[7] is 5000"));
    let mut late_parent = good.clone();
    late_parent["data"]["model"]["parents"][2] = json!(9);
    cases.push((late_parent, "data.model.parents[2] is 9"));
    let mut one_u = good.clone();
    one_u["us"][4].as_array_mut().unwrap().pop();
    cases.push((one_u, "us: row 4 has 1 entries, expected 2"));
    let messages: Vec<String> = cases
        .iter()
        .enumerate()
        .map(|(id, (input, _))| {
            json!({"id": id, "kind": "evaluate", "module": "ht", "function": "jacobian",
                   "input": input})
            .to_string()
        })
        .collect();
    let responses = run_tool(&messages);
    assert_eq!(responses.len(), cases.len(), "one response per message");
    for ((_, expected), response) in cases.iter().zip(&responses) {
        let response: Value = serde_json::from_str(response).unwrap();
        assert_eq!(response["success"], json!(false), "{response}");
        let error = response["error"].as_str().unwrap();
        assert!(
            error.starts_with("ht: ") && error.contains(expected),
            "{error}"
        );
    }
}

#[test]
fn ba_small_with_a_zero_rotation() {
    reproduce("ba-small-p10-p12-zero-rotation.json", 3);
}

#[test]
fn ba_default_ba1_ba2() {
    reproduce("ba-default-ba1-ba2.json", 1);
}

#[test]
fn det_small_by_recursion_alone() {
    reproduce("det-small-l2-l3-l4.json", 3);
}

#[test]
fn det_default_l5_to_l9() {
    reproduce("det-default-l5-to-l9.json", 1);
}

#[test]
fn lstm_small_with_one_layer() {
    reproduce("lstm-small-l1-l2-c21-c30.json", 3);
}

#[test]
fn lstm_default_l2_l4_l6_c1024() {
    reproduce("lstm-default-l2-l4-l6-c1024.json", 1);
}

/// With the defaults of a real run (`min_runs` 1, `min_seconds` 1), a fast function runs
/// many times and the runs add up to at least a second.
#[test]
fn default_timing_controls_run_for_a_second() {
    let input = json!({"x": [0.5, 0.25, 1.0], "min_runs": 1, "min_seconds": 1});
    let responses = run_tool(&[
        json!({"id": 0, "kind": "evaluate", "module": "lse", "function": "primal", "input": input})
            .to_string(),
    ]);
    let response: Value = serde_json::from_str(&responses[0]).unwrap();
    let timings = response["timings"].as_array().unwrap();
    let total: u64 = timings
        .iter()
        .map(|t| t["nanoseconds"].as_u64().unwrap())
        .sum();
    assert!(timings.len() > 100, "{} runs", timings.len());
    assert!(total >= 1_000_000_000, "{total} ns measured");
}
