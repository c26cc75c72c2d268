//! Handwritten digit recognition with a small neural network whose gradients are generated at
//! compile time by `#[differentiable]`.
//!
//! The model (`examples/digits_mlp/mod.rs`, shared with `digits_ddp`) is a multilayer
//! perceptron whose parameters live in a plain Rust struct,
//! `Mlp { hidden: Vec<Linear<f32>>, output: Linear<f32> }`, with `#[derive(Differentiable)]`;
//! its layers are `rune_ad::nn::Linear`, initialised as PyTorch's from a seeded `nn::Init`:
//!
//! ```text
//! image, 8×8 = 64 pixels
//!   → linear 64 → 128 → relu
//!   → linear 128 → 10                  logits, one per digit
//! ```
//!
//! The loss is the mean softmax cross-entropy, `−mean(log_softmax(logits)[label])`, written as
//! an ordinary function over tensors. `#[differentiable]` on it generates
//! `loss_value_and_grad`, which returns the loss of a minibatch together with its gradient with
//! respect to every weight and bias — as a value of the same `Mlp` struct — with no tape and no
//! run-time graph. `rune_ad::optim::Adam` then updates the whole struct in one call, on
//! minibatches from a seeded `rune_ad::data::DataLoader`.
//!
//! The data is the UCI "Optical Recognition of Handwritten Digits" set (E. Alpaydin and
//! C. Kaynak, CC BY 4.0, see `data/README.md`): 1,797 grey-level 8×8 images, shipped as
//! `data/digits.csv.gz`. A fixed-seed shuffle puts 1,437 of them in the training set and 360 in
//! the test set (the same split as the `cnn_digits` example).
//!
//! Run it with
//!
//! ```sh
//! cargo run --release --example digits
//! ```
//!
//! It trains for 20 epochs (a few seconds), printing a line with the loss and accuracy after
//! each one (under a progress bar over the batches when standard output is a terminal), writes
//! the training curves (plotted with `plotters`) to `target/digits-training.svg`, and ends with the accuracy on the 360 test images: 0.9806 with
//! the seeds below, about 0.98 with others; it asserts at least 0.95.
//!
//! The trained model is saved to `target/digits-model.safetensors` (tensors `hidden.0.weight`,
//! `hidden.0.bias`, `output.weight`, `output.bias`, in `torch.nn.Linear`'s layout; PyTorch loads
//! it with `safetensors.torch.load_file`).
//! With `--load` the example trains nothing: it loads that file into a model of the same
//! architecture and evaluates it, giving the same test accuracy:
//!
//! ```sh
//! cargo run --release --example digits -- --load
//! ```

mod digits_data;
mod digits_mlp;
mod progress;
mod training_plot;

use digits_data::{accuracy, Digits, CLASSES, PIXELS};
use digits_mlp::{logits, loss, loss_value_and_grad, Mlp};
use rune_ad::data::DataLoader;
use rune_ad::nn::{Init, Linear};
use rune_ad::optim::Adam;
use rune_ad::prelude::*;
use training_plot::Panel;

const HIDDEN: usize = 128;
const EPOCHS: usize = 20;
const BATCH_SIZE: usize = 32;
const LEARNING_RATE: f32 = 3e-3;

/// Loss and accuracy of the model on a whole data set.
#[derive(Clone, Copy)]
struct Scores {
    loss: f64,
    accuracy: f64,
}

fn evaluate(model: &Mlp, x: &Tensor<f32>, labels: &Tensor<i64>) -> Scores {
    Scores {
        loss: f64::from(loss(model, x, labels).item()),
        accuracy: accuracy(&logits(model, x), labels),
    }
}

fn main() {
    let load = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--load") => true,
        Some(other) => panic!("unknown argument {other:?}: the only option is --load"),
    };
    let digits = Digits::load();
    let (train_rows, test_rows) = digits.split();
    let (train_x, train_y) = digits.batch(&train_rows);
    let (test_x, test_y) = digits.batch(&test_rows);
    println!(
        "digits: {} training images, {} test images; MLP {PIXELS} → {HIDDEN} → {CLASSES}",
        train_rows.len(),
        test_rows.len()
    );

    let mut init = Init::new(1);
    let mut model = Mlp {
        hidden: vec![Linear::new(PIXELS, HIDDEN, &mut init)],
        output: Linear::new(HIDDEN, CLASSES, &mut init),
    };
    let saved = target_dir().join("digits-model.safetensors");
    if load {
        // The freshly drawn weights are replaced by the file's, checked name by name.
        rune_ad::io::load_safetensors(&mut model, &saved).unwrap_or_else(|e| {
            panic!("{e}\n(run the example without --load first to train and save the model)")
        });
        println!("loaded {}", saved.display());
        let acc = evaluate(&model, &test_x, &test_y).accuracy;
        println!("test accuracy: {acc:.4}");
        assert!(acc >= 0.95, "test accuracy {acc} is below 0.95");
        return;
    }
    let mut adam = Adam::new(LEARNING_RATE);
    let mut history: Vec<(Scores, Scores)> = Vec::new();

    // A new shuffle of the training set each epoch, from one seed.
    let loader = DataLoader::new((&train_x, &train_y), BATCH_SIZE).shuffle(100);
    let bar = progress::bar(EPOCHS * loader.len(), "training");
    for epoch in 1..=EPOCHS {
        for (x, y) in loader.epoch(epoch as u64) {
            let (value, grad) = loss_value_and_grad(&model, &x, &y);
            adam.step(&mut model, &grad);
            bar.set_message(format!(
                "epoch {epoch:>2}/{EPOCHS}  loss {:.4}",
                value.item()
            ));
            bar.inc(1);
        }
        let (train, test) = (
            evaluate(&model, &train_x, &train_y),
            evaluate(&model, &test_x, &test_y),
        );
        progress::report(
            &bar,
            &format!(
                "epoch {epoch:>2}/{EPOCHS}  loss {:.4}  train acc {:.4}  test acc {:.4}",
                train.loss, train.accuracy, test.accuracy
            ),
        );
        history.push((train, test));
    }
    bar.finish_and_clear();

    let path = plot(&history);
    println!("plot: {}", path.display());
    rune_ad::io::save_safetensors(&model, &saved)
        .unwrap_or_else(|e| panic!("writing {}: {e}", saved.display()));
    println!("model: {} (evaluate it again with --load)", saved.display());

    let acc = evaluate(&model, &test_x, &test_y).accuracy;
    println!("test accuracy: {acc:.4}");
    assert!(acc >= 0.95, "test accuracy {acc} is below 0.95");
}

/// Writes the loss and accuracy curves to `target/digits-training.svg` and returns its path.
fn plot(history: &[(Scores, Scores)]) -> std::path::PathBuf {
    let curves = |metric: fn(&Scores) -> f64| {
        let by_epoch = |pick: fn(&(Scores, Scores)) -> &Scores| {
            (1..)
                .zip(history)
                .map(|(epoch, scores)| (f64::from(epoch), metric(pick(scores))))
                .collect()
        };
        vec![("train", by_epoch(|s| &s.0)), ("test", by_epoch(|s| &s.1))]
    };
    let panels = [
        Panel {
            title: "cross-entropy loss",
            x_label: "epoch",
            curves: curves(|s| s.loss),
        },
        Panel {
            title: "accuracy",
            x_label: "epoch",
            curves: curves(|s| s.accuracy),
        },
    ];
    let path = target_dir().join("digits-training.svg");
    training_plot::write_svg(&path, &panels)
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path
}

/// `target/` of the repository, created if need be: where the plot and the model go.
fn target_dir() -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    dir
}
