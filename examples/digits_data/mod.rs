//! The UCI digits shipped as `data/digits.csv.gz`, shared by the `digits` and `cnn_digits`
//! examples: loading, the fixed train/test split, minibatches and accuracy.
//!
//! The data is the "Optical Recognition of Handwritten Digits" set of the UCI Machine Learning
//! Repository (E. Alpaydin and C. Kaynak, CC BY 4.0, see `data/README.md`): 1,797 grey-level
//! 8×8 images with labels 0..9.

use std::io::Read;

use rune_ad::prelude::*;

/// Pixels per image (8×8).
pub const PIXELS: usize = 64;
/// Digit classes, 0..9.
pub const CLASSES: usize = 10;
/// Images in the training part of the split; the remaining 360 are the test set.
const TRAIN: usize = 1437;
/// The seed of the shuffle that fixes the split.
const SPLIT_SEED: u64 = 2024;

/// Images scaled to `[0, 1]` (row-major, 64 per image) and their labels.
pub struct Digits {
    pixels: Vec<f32>,
    labels: Vec<i64>,
}

impl Digits {
    /// Reads `data/digits.csv.gz`: 64 pixel values in 0..=16, then the label, per line.
    pub fn load() -> Digits {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/digits.csv.gz");
        let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("opening {path}: {e}"));
        let mut text = String::new();
        flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .unwrap_or_else(|e| panic!("decompressing {path}: {e}"));
        let mut digits = Digits {
            pixels: Vec::new(),
            labels: Vec::new(),
        };
        for (line_no, line) in text.lines().enumerate() {
            let fields: Vec<u8> = line
                .split(',')
                .map(|f| f.trim().parse().expect("a small non-negative integer"))
                .collect();
            assert_eq!(fields.len(), PIXELS + 1, "line {}: 65 fields", line_no + 1);
            digits
                .pixels
                .extend(fields[..PIXELS].iter().map(|&v| f32::from(v) / 16.0));
            digits.labels.push(i64::from(fields[PIXELS]));
        }
        digits
    }

    /// The row numbers of the training set (1,437) and of the test set (360), fixed by a
    /// seeded shuffle so that every run and both examples use the same split.
    pub fn split(&self) -> (Vec<usize>, Vec<usize>) {
        let mut train = permutation(self.labels.len(), SPLIT_SEED);
        let test = train.split_off(TRAIN);
        (train, test)
    }

    /// The images at `rows` as `[rows.len(), 64]` and their labels as `[rows.len(), 1]`.
    pub fn batch(&self, rows: &[usize]) -> (Tensor<f32>, Tensor<i64>) {
        let mut pixels = Vec::with_capacity(rows.len() * PIXELS);
        for &r in rows {
            pixels.extend_from_slice(&self.pixels[r * PIXELS..(r + 1) * PIXELS]);
        }
        let labels = rows.iter().map(|&r| self.labels[r]).collect();
        (
            Tensor::from_vec(pixels, &[rows.len(), PIXELS]),
            Tensor::from_vec(labels, &[rows.len(), 1]),
        )
    }
}

/// The fraction of rows of `logits: [N, 10]` whose largest entry is at the label's position.
pub fn accuracy(logits: &Tensor<f32>, labels: &Tensor<i64>) -> f64 {
    let predicted = logits.argmax(1).to_vec();
    let right = predicted
        .iter()
        .zip(labels.to_vec())
        .filter(|&(p, l)| *p == l)
        .count();
    right as f64 / labels.len() as f64
}

/// `0..n` in an order fixed by `seed`: sorted by keys drawn with `Tensor::rand_uniform`.
fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let keys = Tensor::<f64>::rand_uniform(&[n], 0.0, 1.0, seed).to_vec();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| keys[a].total_cmp(&keys[b]));
    order
}
