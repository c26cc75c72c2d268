//! A progress bar (`indicatif`) on standard output, shared by the `digits`, `cnn_digits` and
//! `char_lm` examples: drawn in place on a terminal, hidden otherwise, where the lines the
//! examples report are printed as they come, one at a time.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar of `len` steps on standard output: `{prefix} [=====>    ]   12/45  {message}  eta 9s`.
pub fn bar(len: usize, prefix: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stdout());
    let style =
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos:>4}/{len}  {msg}  eta {eta}")
            .expect("a valid template")
            .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(prefix.to_string());
    bar
}

/// Prints `line` above the bar on a terminal, or as a line of its own when the bar is hidden.
pub fn report(bar: &ProgressBar, line: &str) {
    if bar.is_hidden() {
        println!("{line}");
    } else {
        bar.println(line);
    }
}
