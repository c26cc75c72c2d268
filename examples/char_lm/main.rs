//! A character-level transformer language model, trained on Jane Austen's "Pride and
//! Prejudice" with gradients that `#[differentiable]` generates at compile time.
//!
//! The model (`model.rs`, shared with `tests/char_lm.rs`, which checks its gradient against
//! finite differences) is built from `rune_ad::nn`'s layers as a `#[derive(Differentiable)]`
//! structure holding a `Vec` of blocks:
//!
//! ```text
//! ids [N, L]  → token embedding + position embedding          [N, L, 64]
//!   → 4 × pre-norm block:  x + attention(layer_norm(x)),        4 heads, causal mask
//!                          h + mlp(layer_norm(h))               64 → 256 → 64, tanh
//!   → layer_norm → linear head                                 [N, L, vocab] logits
//! ```
//!
//! and its loss, the mean cross-entropy of each next character, is a `#[differentiable]`
//! method, so `model.loss_value_and_grad(&ids, &targets)` returns the loss and its gradient as
//! another `CharLm`. Training draws batches of random windows from the first 90% of the text
//! (a seeded ChaCha8 generator) and steps `AdamW` under a warm-up-then-cosine `Schedule`, the
//! gradient clipped to norm 1 by `clip_grad_norm`.
//!
//! Run it with
//!
//! ```sh
//! cargo run --release --example char_lm
//! ```
//!
//! It shows a progress bar on a terminal (a line per evaluation otherwise), reports the loss on
//! the last 10% of the text every 100 steps, writes the training and validation curves to
//! `target/char-lm-training.svg`, and ends with a sample of text generated from the model and
//! the validation loss over the whole held-out text. Everything runs on one thread by default;
//! `--features parallel` splits the large matrix products and elementwise loops across rayon's
//! threads (`RAYON_NUM_THREADS`). It asserts a validation loss below 1.6 nats per character.
//!
//! `cargo run --release --example char_lm -- --time [STEPS]` only times `STEPS` training steps
//! (100 by default, after ten not timed) and prints milliseconds per step (wall time, and the
//! mean time on the CPU where Linux tells it), to compare with
//! `benches/char_lm_torch.py`, the same model and step in PyTorch eager.

mod model;
#[path = "../progress/mod.rs"]
mod progress;
mod text;
#[path = "../training_plot/mod.rs"]
mod training_plot;

use std::time::Instant;

use model::{CharLm, Config};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rune_ad::nn::Init;
use rune_ad::optim::{clip_grad_norm, AdamW, Schedule};
use rune_ad::prelude::*;
use text::Text;
use training_plot::Panel;

const CONTEXT: usize = 64;
const WIDTH: usize = 64;
const HEADS: usize = 4;
const LAYERS: usize = 4;
const BATCH: usize = 32;
const STEPS: usize = 2000;
const WARMUP: usize = 100;
const LEARNING_RATE: f64 = 3e-3;
const MIN_LEARNING_RATE: f64 = 3e-4;
const WEIGHT_DECAY: f32 = 0.01;
const MAX_GRAD_NORM: f32 = 1.0;
const EVAL_EVERY: usize = 100;
/// Windows of the validation text evaluated every `EVAL_EVERY` steps (the whole of it at the end).
const EVAL_WINDOWS: usize = 256;
/// The softmax temperature of the generated sample: below one, likelier characters are favoured.
const TEMPERATURE: f32 = 0.8;
/// The validation loss, in nats per character, that training must reach.
const BOUND: f64 = 1.6;

fn main() {
    let text = Text::load();
    let config = Config {
        vocab: text.vocab(),
        context: CONTEXT,
        width: WIDTH,
        heads: HEADS,
        layers: LAYERS,
    };
    let mut model = CharLm::<f32>::new(config, &mut Init::new(0));
    println!(
        "char_lm: {} characters ({} distinct), {} for training; {} parameters, {} threads",
        text.train().len() + text.validation().len(),
        text.vocab(),
        text.train().len(),
        model.parameters(),
        rune_ad::parallel::threads()
    );

    let schedule = Schedule::warmup_cosine(LEARNING_RATE, MIN_LEARNING_RATE, WARMUP, STEPS);
    let mut optimizer = AdamW::new(LEARNING_RATE as f32)
        .weight_decay(WEIGHT_DECAY)
        .schedule(schedule);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    if let Some(steps) = timed_steps() {
        time_steps(steps, &mut model, &mut optimizer, &text, &mut rng);
        return;
    }
    let all_validation = text::tiling(text.validation(), CONTEXT);
    let some_validation: Vec<usize> = all_validation
        .iter()
        .step_by(all_validation.len().div_ceil(EVAL_WINDOWS))
        .copied()
        .collect();

    let mut train_curve = Vec::new();
    let mut validation_curve = Vec::new();
    let bar = progress::bar(STEPS, "training");
    let start = Instant::now();
    let mut interval_loss = 0.0;
    for step in 1..=STEPS {
        let loss = train_step(&mut model, &mut optimizer, &text, &mut rng);
        interval_loss += f64::from(loss);
        bar.set_message(format!("loss {loss:.3}"));
        bar.inc(1);
        if step % EVAL_EVERY == 0 {
            let train = interval_loss / EVAL_EVERY as f64;
            let validation = validation_loss(&model, &text, &some_validation);
            interval_loss = 0.0;
            progress::report(
                &bar,
                &format!(
                    "step {step:>4}/{STEPS}  train loss {train:.4}  validation loss \
                     {validation:.4}  ({:.0} s)",
                    start.elapsed().as_secs_f64()
                ),
            );
            train_curve.push((step as f64, train));
            validation_curve.push((step as f64, validation));
        }
    }
    bar.finish_and_clear();
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "trained {STEPS} steps in {seconds:.1} s ({:.1} ms a step, evaluations included)",
        1e3 * seconds / STEPS as f64
    );

    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/target/char-lm-training.svg");
    let panels = [Panel {
        title: "cross-entropy (nats per character)",
        x_label: "step",
        curves: vec![
            ("train (mean of the last 100 steps)", train_curve),
            ("validation", validation_curve),
        ],
    }];
    training_plot::write_svg(path.as_ref(), &panels)
        .unwrap_or_else(|e| panic!("writing {path}: {e}"));
    println!("plot: {path}");

    let prompt = "It is a truth universally acknowledged, that ";
    let sample = generate(
        &model,
        &text,
        prompt,
        400,
        &mut ChaCha8Rng::seed_from_u64(2),
    );
    println!("sample:\n{sample}\n");

    let validation = validation_loss(&model, &text, &all_validation);
    println!(
        "validation loss: {validation:.4} nats per character over {} windows of {CONTEXT}",
        all_validation.len()
    );
    assert!(
        validation < BOUND,
        "the validation loss {validation} is not below {BOUND}"
    );
}

/// One step on a batch of random windows of the training text: the loss and its gradient,
/// clipped, then AdamW's update. Returns the batch's loss.
fn train_step(
    model: &mut CharLm<f32>,
    optimizer: &mut AdamW<f32>,
    text: &Text,
    rng: &mut ChaCha8Rng,
) -> f32 {
    let (ids, targets) = text::random_windows(text.train(), BATCH, CONTEXT, rng);
    let (loss, mut grad) = model.loss_value_and_grad(&ids, &targets);
    clip_grad_norm(&mut grad, MAX_GRAD_NORM);
    optimizer.step(model, &grad);
    loss.item()
}

/// The number of steps to time when the example runs as `char_lm -- --time [STEPS]` (100 by
/// default), `None` without arguments.
fn timed_steps() -> Option<usize> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => None,
        ["--time"] => Some(100),
        ["--time", steps] => Some(steps.parse().expect("a number of steps after --time")),
        _ => panic!("unknown arguments {args:?}: the only option is --time [STEPS]"),
    }
}

/// Times `steps` training steps after ten unmeasured ones, and prints the median and the mean
/// in milliseconds (as `benches/char_lm_torch.py` does for PyTorch).
fn time_steps(
    steps: usize,
    model: &mut CharLm<f32>,
    optimizer: &mut AdamW<f32>,
    text: &Text,
    rng: &mut ChaCha8Rng,
) {
    for _ in 0..10 {
        train_step(model, optimizer, text, rng);
    }
    let cpu_start = cpu_seconds();
    let mut times: Vec<f64> = (0..steps)
        .map(|_| {
            let start = Instant::now();
            train_step(model, optimizer, text, rng);
            start.elapsed().as_secs_f64()
        })
        .collect();
    let cpu = cpu_seconds()
        .zip(cpu_start)
        .map(|(end, start)| format!(", on the CPU {:.2} ms", 1e3 * (end - start) / steps as f64))
        .unwrap_or_default();
    times.sort_by(f64::total_cmp);
    println!(
        "rune-ad, {} thread(s): {:.2} ms a step (median of {steps}), mean {:.2} ms{cpu}",
        rune_ad::parallel::threads(),
        1e3 * times[steps / 2],
        1e3 * times.iter().sum::<f64>() / steps as f64
    );
}

/// The time the calling thread has spent running, from Linux's `/proc/thread-self/schedstat`
/// (`None` elsewhere): unlike the wall time, it leaves out the time other programs held the core.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanoseconds: f64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(nanoseconds * 1e-9)
}

/// The mean loss of the validation windows starting at `starts`, in batches of `BATCH`.
fn validation_loss(model: &CharLm<f32>, text: &Text, starts: &[usize]) -> f64 {
    let total: f64 = starts
        .chunks(BATCH)
        .map(|chunk| {
            let (ids, targets) = text::windows(text.validation(), chunk, CONTEXT);
            f64::from(model.loss(&ids, &targets).item()) * chunk.len() as f64
        })
        .sum();
    total / starts.len() as f64
}

/// `prompt` followed by `count` characters, each drawn from the model's softmax (of the logits
/// divided by `TEMPERATURE`) given the `CONTEXT` characters before it.
fn generate(
    model: &CharLm<f32>,
    text: &Text,
    prompt: &str,
    count: usize,
    rng: &mut ChaCha8Rng,
) -> String {
    let mut ids = text.encode(prompt);
    let vocab = text.vocab();
    for _ in 0..count {
        let window = &ids[ids.len().saturating_sub(CONTEXT)..];
        let len = window.len();
        let logits = model.logits(&Tensor::from_vec(window.to_vec(), &[1, len]));
        let last = logits.shrink(&[(0, 1), (len - 1, len), (0, vocab)]);
        let probabilities = (last.reshape(&[vocab]) / TEMPERATURE).softmax(0).to_vec();
        let mut u: f32 = rng.random();
        let next = probabilities
            .iter()
            .position(|&p| {
                u -= p;
                u < 0.0
            })
            .unwrap_or(vocab - 1);
        ids.push(next as i64);
    }
    text.decode(&ids)
}
