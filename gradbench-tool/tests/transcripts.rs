//! Replays GradBench's recorded sessions (`vectors/transcript-*.jsonl`, `gradbench run -o`
//! logs) through the binary: one response per message, the same ids, the same fields in the
//! same order as the recorded tool's, and outputs the eval accepts.
mod common;

use std::fmt;

use common::{assert_close, assert_gradbench_valid, numbers_alike, run_tool, vector_path};
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{json, Value};

/// The keys of a JSON object in the order they are written (`serde_json::Value` sorts them).
fn keys_in_order(line: &str) -> Vec<String> {
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            while let Some((key, IgnoredAny)) = map.next_entry::<String, IgnoredAny>()? {
                keys.push(key);
            }
            Ok(keys)
        }
    }
    serde_json::Deserializer::from_str(line)
        .deserialize_map(Keys)
        .expect("a JSON object")
}

/// The recorded messages and responses of a transcript, as raw JSON text in log order.
fn transcript(name: &str) -> (Vec<String>, Vec<String>) {
    let text = std::fs::read_to_string(vector_path(name)).expect("transcript");
    let (mut messages, mut responses) = (Vec::new(), Vec::new());
    for line in text.lines() {
        // Each log line is `{ "elapsed": {...}, "message" | "response": <the line as sent> }`.
        let entry: Value = serde_json::from_str(line).expect("log line");
        let raw = line
            .split_once(r#""message": "#)
            .or_else(|| line.split_once(r#""response": "#))
            .map(|(_, rest)| rest.trim_end().trim_end_matches('}').trim_end())
            .expect("a message or a response");
        if entry.get("message").is_some() {
            messages.push(raw.to_owned());
        } else {
            responses.push(raw.to_owned());
        }
    }
    (messages, responses)
}

/// Replays `name` and checks each response against the recorded one; `same_order` when the
/// recorded tool wrote its fields in our order (GradBench's C++ tool: `id`, `success`,
/// `output`, `timings`), else only the same set. Returns our responses.
fn replay(name: &str, same_order: bool) -> Vec<Value> {
    let (messages, recorded) = transcript(name);
    let ours = run_tool(&messages);
    assert_eq!(
        ours.len(),
        recorded.len(),
        "{name}: one response per message"
    );
    let mut parsed = Vec::new();
    for (i, (mine, theirs)) in ours.iter().zip(&recorded).enumerate() {
        let (mut my_keys, mut their_keys) = (keys_in_order(mine), keys_in_order(theirs));
        // The recorded tool adds an unscored "prepare" timing; ours times only "evaluate".
        if !same_order {
            my_keys.sort();
            their_keys.sort();
        }
        assert_eq!(
            my_keys, their_keys,
            "{name}: response {i}: {mine} against {theirs}"
        );
        let (mine, theirs): (Value, Value) = (
            serde_json::from_str(mine).unwrap(),
            serde_json::from_str(theirs).unwrap(),
        );
        assert_eq!(mine["id"], theirs["id"], "{name}: response {i}");
        assert!(
            mine["id"].is_i64(),
            "{name}: id {} is not an integer",
            mine["id"]
        );
        if let Some(timings) = mine.get("timings") {
            let runs = timings.as_array().unwrap();
            let recorded_runs = theirs["timings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["name"] == "evaluate")
                .count();
            assert_eq!(runs.len(), recorded_runs, "{name}: response {i}: runs");
            assert!(runs
                .iter()
                .all(|t| keys_in_order(&t.to_string()) == ["name", "nanoseconds"]
                    && t["name"] == "evaluate"
                    && t["nanoseconds"].is_u64()));
        }
        parsed.push(mine);
    }
    parsed
}

#[test]
fn hello_replays_like_the_reference_tool() {
    let responses = replay("transcript-hello.jsonl", true);
    let (_, recorded) = transcript("transcript-hello.jsonl");
    for (mine, theirs) in responses.iter().zip(&recorded) {
        let theirs: Value = serde_json::from_str(theirs).unwrap();
        if let Some(output) = theirs.get("output") {
            assert_eq!(&mine["output"], output, "square and double are exact");
        }
    }
    assert_eq!(responses[0], json!({"id": 0, "tool": "rune-ad"}));
}

#[test]
fn llsq_replays_like_the_reference_tool() {
    let responses = replay("transcript-llsq-manual.jsonl", true);
    let (_, recorded) = transcript("transcript-llsq-manual.jsonl");
    for (mine, theirs) in responses.iter().zip(&recorded) {
        let theirs: Value = serde_json::from_str(theirs).unwrap();
        if let Some(output) = theirs.get("output") {
            let pairs = numbers_alike(&mine["output"], output, "llsq");
            assert_gradbench_valid(&pairs, "llsq");
            assert_close(&pairs, 1e-9, "llsq");
        }
    }
}

/// The recorded tool answered a zero gradient, which the eval's analysis rejected with the
/// reference values in its error text; ours is the softmax it asked for.
#[test]
fn lse_answers_what_the_invalid_session_expected() {
    let responses = replay("transcript-invalid.jsonl", false);
    let (messages, _) = transcript("transcript-invalid.jsonl");
    let analysis: Value = serde_json::from_str(&messages[5]).unwrap();
    assert_eq!(analysis["valid"], json!(false));
    let reference: Vec<f64> = analysis["error"]
        .as_str()
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect();
    assert_eq!(reference.len(), 5);
    let pairs = numbers_alike(&responses[4]["output"], &json!(reference), "lse gradient");
    assert_close(&pairs, 1e-9, "lse gradient");
    assert_eq!(responses[2]["output"], json!(2.158593600128579));
}

/// The recorded session asked for a module its tool lacked; this tool has kmeans, and
/// answers a module it lacks with the recorded fields.
#[test]
fn undefined_modules_are_declined_and_kmeans_is_defined() {
    let (messages, recorded) = transcript("transcript-undefined.jsonl");
    let ours = run_tool(&messages);
    assert_eq!(
        ours,
        [r#"{"id":0,"tool":"rune-ad"}"#, r#"{"id":1,"success":true}"#]
    );

    let unknown: Vec<String> = messages
        .iter()
        .map(|m| m.replace("kmeans", "nbody"))
        .collect();
    let ours = run_tool(&unknown);
    assert_eq!(ours.len(), 2);
    let mut keys = keys_in_order(&ours[1]);
    let mut recorded_keys = keys_in_order(&recorded[1]);
    keys.sort();
    recorded_keys.sort();
    assert_eq!(keys, recorded_keys);
    assert_eq!(
        ours[1],
        r#"{"id":1,"success":false,"error":"module nbody not implemented"}"#
    );
}

/// Bad messages get an answer with `success: false` and an error, and the session goes on:
/// an unknown function, an input that does not decode, a ragged matrix, centroids of another
/// dimension than the points, and a kind the protocol does not know.
#[test]
fn failures_are_answered_and_the_session_goes_on() {
    let evaluate = |id: u64, module: &str, function: &str, input: Value| {
        json!({"id": id, "kind": "evaluate", "module": module, "function": function,
               "input": input})
        .to_string()
    };
    let ok_input = json!({"x": [0.5, 0.25], "min_runs": 1, "min_seconds": 0});
    let messages = [
        evaluate(0, "lse", "hessian", ok_input.clone()),
        evaluate(1, "lse", "primal", json!({"y": [1.0]})),
        evaluate(
            2,
            "kmeans",
            "cost",
            json!({"points": [[0.0, 1.0], [2.0]], "centroids": [[0.0, 0.0]]}),
        ),
        evaluate(
            3,
            "kmeans",
            "cost",
            json!({"points": [[0.0, 1.0]], "centroids": [[0.0, 0.0, 0.0]]}),
        ),
        json!({"id": 4, "kind": "shutdown"}).to_string(),
        evaluate(5, "lse", "primal", ok_input),
    ];
    let responses: Vec<Value> = run_tool(&messages)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(responses.len(), 6);
    for (id, r) in responses.iter().enumerate().take(4) {
        assert_eq!(r["id"], json!(id));
        assert_eq!(r["success"], json!(false), "{r}");
        assert!(!r["error"].as_str().unwrap().is_empty());
        assert!(r.get("output").is_none());
    }
    assert!(responses[0]["error"].as_str().unwrap().contains("hessian"));
    assert!(responses[2]["error"].as_str().unwrap().contains("row 1"));
    assert!(responses[3]["error"]
        .as_str()
        .unwrap()
        .contains("expected 2"));
    assert_eq!(responses[4], json!({"id": 4}));
    let expected = (0.5f64.exp() + 0.25f64.exp()).ln();
    let value = responses[5]["output"].as_f64().unwrap();
    assert!(
        (value - expected).abs() <= 1e-15,
        "{value} against {expected}"
    );
}
