//! GradBench's JSON-lines protocol: one response line for every message line, written and
//! flushed before the next message is read; exit at end of input.
use std::io::{self, BufRead, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};

use serde::Serialize;
use serde_json::Value;

use crate::evals::{self, Outcome};

/// The name this tool gives in its answer to `start`.
pub const TOOL_NAME: &str = "rune-ad";

#[derive(Serialize)]
struct Start {
    id: i64,
    tool: &'static str,
}

#[derive(Serialize)]
struct Define {
    id: i64,
    success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Serialize)]
struct Timing {
    name: &'static str,
    nanoseconds: u64,
}

#[derive(Serialize)]
struct Evaluated {
    id: i64,
    success: bool,
    output: Value,
    timings: Vec<Timing>,
}

#[derive(Serialize)]
struct Failed {
    id: i64,
    success: bool,
    error: String,
}

#[derive(Serialize)]
struct Acknowledge {
    id: Value,
}

/// Answers every line of `input` on `output`, flushing after each, until end of input.
///
/// # Errors
/// Only reading or writing errors: a malformed message is answered, not fatal.
pub fn serve(input: impl BufRead, mut output: impl Write) -> io::Result<()> {
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        respond(&line, &mut output)?;
        output.write_all(b"\n")?;
        output.flush()?;
    }
    Ok(())
}

/// Writes the one-line response to one message (without the newline).
///
/// # Errors
/// Only writing errors.
pub fn respond(line: &str, out: &mut impl Write) -> io::Result<()> {
    let message: Value = match serde_json::from_str(line) {
        Ok(message) => message,
        Err(e) => {
            eprintln!("rune-ad: a message is not JSON ({e}): {line:.200}");
            return write(out, &Acknowledge { id: Value::Null });
        }
    };
    let Some(id) = message.get("id").and_then(Value::as_i64) else {
        eprintln!("rune-ad: a message has no integer id: {line:.200}");
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        return write(out, &Acknowledge { id });
    };
    let text = |key: &str| message.get(key).and_then(Value::as_str).unwrap_or("");
    match text("kind") {
        "start" => write(
            out,
            &Start {
                id,
                tool: TOOL_NAME,
            },
        ),
        "define" => {
            let module = text("module");
            let success = evals::MODULES.contains(&module);
            let error = (!success).then(|| format!("module {module} not implemented"));
            write(out, &Define { id, success, error })
        }
        "evaluate" => {
            let input = message.get("input").unwrap_or(&Value::Null);
            match evaluate(text("module"), text("function"), input) {
                Ok(Outcome { output, timings }) => write(
                    out,
                    &Evaluated {
                        id,
                        success: true,
                        output,
                        timings: timings
                            .into_iter()
                            .map(|nanoseconds| Timing {
                                name: "evaluate",
                                nanoseconds,
                            })
                            .collect(),
                    },
                ),
                Err(error) => {
                    eprintln!("rune-ad: evaluate {id} failed: {error}");
                    write(
                        out,
                        &Failed {
                            id,
                            success: false,
                            error,
                        },
                    )
                }
            }
        }
        kind => {
            if kind == "analysis" && message.get("valid") == Some(&Value::Bool(false)) {
                eprintln!(
                    "rune-ad: the eval found the output of {} invalid: {}",
                    message.get("of").unwrap_or(&Value::Null),
                    text("error")
                );
            }
            write(out, &Acknowledge { id: id.into() })
        }
    }
}

/// [`evals::evaluate`], with a panic turned into an error message.
fn evaluate(module: &str, function: &str, input: &Value) -> Result<Outcome, String> {
    catch_unwind(AssertUnwindSafe(|| {
        evals::evaluate(module, function, input)
    }))
    .unwrap_or_else(|payload| {
        let reason = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        Err(format!("{module}.{function} panicked: {reason}"))
    })
}

fn write(out: &mut impl Write, response: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, response).map_err(io::Error::from)
}
