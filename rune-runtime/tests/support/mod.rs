//! Helpers shared by the runtime's test files.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// The message `f` panics with.
///
/// # Panics
/// When `f` does not panic.
pub fn panic_message<R>(f: impl FnOnce() -> R) -> String {
    let err = catch_unwind(AssertUnwindSafe(f))
        .err()
        .expect("expected a panic");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap()
}
