//! The GradBench tool: answers the eval's messages on stdin, one line each on stdout.
//!
//! ```sh
//! gradbench run --eval "..." --tool "target/release/rune-gradbench"
//! ```
use std::io;

#[global_allocator]
static GLOBAL: rune_gradbench::Allocator = mimalloc::MiMalloc;

fn main() -> io::Result<()> {
    rune_gradbench::keep_freed_memory();
    let stdin = io::stdin().lock();
    let stdout = io::stdout().lock();
    rune_gradbench::protocol::serve(stdin, io::BufWriter::new(stdout))
}
