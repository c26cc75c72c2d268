//! `data::DataLoader`: every example once per epoch, pairs kept together, the same batches for
//! the same seed and epoch, and a small training loop over it, as a user writes one.

use rune_ad::data::DataLoader;
use rune_ad::optim::{AdamW, Schedule};
use rune_ad::prelude::*;

/// Inputs whose row `i` is `(i, −i)`, and labels `i`: a batch shows which examples it holds.
fn numbered(n: usize) -> (Tensor<f64>, Tensor<i64>) {
    let x = (0..n).flat_map(|i| [i as f64, -(i as f64)]).collect();
    (
        Tensor::from_vec(x, &[n, 2]),
        Tensor::from_vec((0..n as i64).collect(), &[n]),
    )
}

#[test]
fn a_shuffled_epoch_holds_every_example_once_with_its_label() {
    let (x, y) = numbered(11);
    let loader = DataLoader::new((&x, &y), 4).shuffle(3);
    assert_eq!(loader.len(), 3);
    let mut orders = Vec::new();
    for epoch in 0..3 {
        let batches: Vec<_> = loader.epoch(epoch).collect();
        assert_eq!(
            batches
                .iter()
                .map(|(xb, _)| xb.shape()[0])
                .collect::<Vec<_>>(),
            [4, 4, 3]
        );
        let mut seen = Vec::new();
        for (xb, yb) in &batches {
            let (rows, labels) = (xb.to_vec(), yb.to_vec());
            for (k, &label) in labels.iter().enumerate() {
                // The row is the label's: the parts are selected at the same positions.
                assert_eq!(rows[2 * k], label as f64);
                assert_eq!(rows[2 * k + 1], -(label as f64));
            }
            seen.extend(labels);
        }
        orders.push(seen.clone());
        seen.sort_unstable();
        assert_eq!(seen, (0..11).collect::<Vec<i64>>());
    }
    // Each epoch is shuffled, and differently.
    assert_ne!(orders[0], (0..11).collect::<Vec<i64>>());
    assert_ne!(orders[0], orders[1]);
    assert_ne!(orders[1], orders[2]);
    // The same seed and epoch give the same batches; another seed, others.
    let again = DataLoader::new((&x, &y), 4).shuffle(3);
    let labels = |l: &DataLoader<(&Tensor<f64>, &Tensor<i64>)>, e| {
        l.epoch(e)
            .flat_map(|(_, yb)| yb.to_vec())
            .collect::<Vec<_>>()
    };
    assert_eq!(labels(&again, 1), orders[1]);
    assert_ne!(
        labels(&DataLoader::new((&x, &y), 4).shuffle(4), 1),
        orders[1]
    );
}

#[test]
fn in_order_and_dropping_the_short_batch() {
    let (x, _) = numbered(7);
    let loader = DataLoader::new(x.clone(), 3);
    let firsts: Vec<f64> = loader.epoch(0).map(|b| b.to_vec()[0]).collect();
    assert_eq!(firsts, [0.0, 3.0, 6.0]);
    let dropping = DataLoader::new(x, 3).drop_last();
    assert_eq!((dropping.len(), dropping.epoch(5).count()), (2, 2));
    // A `Vec` of examples batches as a `Vec`.
    let names: Vec<String> = (0..5).map(|i| format!("file{i}")).collect();
    let batches: Vec<Vec<String>> = DataLoader::new(names, 2).epoch(0).collect();
    assert_eq!(batches[2], ["file4"]);
}

#[test]
#[should_panic(expected = "the parts hold [5, 4] examples")]
fn parts_of_different_lengths_are_refused() {
    let (x, _) = numbered(5);
    let (_, y) = numbered(4);
    let _ = DataLoader::new((x, y), 2);
}

#[derive(Clone, Differentiable)]
struct Line {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

#[differentiable]
fn mse(m: &Line, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
    (x.matmul(&m.w) + &m.b - y).square().mean()
}

#[test]
fn a_training_loop_over_shuffled_batches_fits_a_line() {
    // y = 2 x₀ − x₁ + 0.5 on 64 points, minibatches of 8, AdamW with a cosine schedule and no
    // decay: the fit recovers the coefficients.
    let x = Tensor::<f64>::rand_uniform(&[64, 2], -1.0, 1.0, 1);
    let truth = Tensor::from_vec(vec![2.0, -1.0], &[2, 1]);
    let y = x.matmul(&truth) + 0.5;
    let loader = DataLoader::new((&x, &y), 8).shuffle(11);
    let mut model = Line {
        w: Tensor::zeros(&[2, 1]),
        b: Tensor::zeros(&[1]),
    };
    let epochs = 60;
    let steps = epochs * loader.len();
    let mut opt = AdamW::new(0.05)
        .weight_decay(0.0)
        .schedule(Schedule::cosine(0.05, 0.001, steps));
    for epoch in 0..epochs as u64 {
        for (xb, yb) in loader.epoch(epoch) {
            let g = mse_grad(&model, &xb, &yb);
            opt.step(&mut model, &g);
        }
    }
    let w = model.w.to_vec();
    assert!(
        (w[0] - 2.0).abs() < 1e-2 && (w[1] + 1.0).abs() < 1e-2,
        "{w:?}"
    );
    assert!((model.b.item() - 0.5).abs() < 1e-2, "{}", model.b.item());
}
