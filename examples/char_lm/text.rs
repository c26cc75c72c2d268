//! The text the `char_lm` example learns: Jane Austen's "Pride and Prejudice" (1813, public
//! domain), shipped as `data/pride-and-prejudice.txt.gz` (see `data/README.md`), as character
//! ids; its first 90% trains the model and the last 10% validates it.

use std::io::Read;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rune_ad::prelude::*;

/// The share of the text, from its start, that the model trains on.
const TRAIN_SHARE: f64 = 0.9;

/// The text as ids into its sorted distinct characters.
pub struct Text {
    chars: Vec<char>,
    ids: Vec<i64>,
    split: usize,
}

impl Text {
    /// Reads and decompresses `data/pride-and-prejudice.txt.gz`.
    pub fn load() -> Text {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/data/pride-and-prejudice.txt.gz"
        );
        let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("opening {path}: {e}"));
        let mut text = String::new();
        flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .unwrap_or_else(|e| panic!("decompressing {path}: {e}"));
        let mut chars: Vec<char> = text.chars().collect();
        chars.sort_unstable();
        chars.dedup();
        let ids: Vec<i64> = text
            .chars()
            .map(|c| chars.binary_search(&c).expect("a character of the text") as i64)
            .collect();
        let split = (ids.len() as f64 * TRAIN_SHARE) as usize;
        Text { chars, ids, split }
    }

    /// The number of distinct characters.
    pub fn vocab(&self) -> usize {
        self.chars.len()
    }

    /// The ids of the training text.
    pub fn train(&self) -> &[i64] {
        &self.ids[..self.split]
    }

    /// The ids of the validation text.
    pub fn validation(&self) -> &[i64] {
        &self.ids[self.split..]
    }

    /// The ids of the characters of `s`, each of which must occur in the text.
    pub fn encode(&self, s: &str) -> Vec<i64> {
        s.chars()
            .map(|c| {
                let id = self.chars.binary_search(&c);
                id.unwrap_or_else(|_| panic!("{c:?} does not occur in the text")) as i64
            })
            .collect()
    }

    /// The characters of `ids`.
    pub fn decode(&self, ids: &[i64]) -> String {
        ids.iter().map(|&id| self.chars[id as usize]).collect()
    }
}

/// The windows of `len` characters of `ids` starting at `starts`, `[starts.len(), len]`, and
/// each one's next characters (the window shifted by one), `[starts.len(), len, 1]`.
pub fn windows(ids: &[i64], starts: &[usize], len: usize) -> (Tensor<i64>, Tensor<i64>) {
    let mut inputs = Vec::with_capacity(starts.len() * len);
    let mut targets = Vec::with_capacity(starts.len() * len);
    for &start in starts {
        inputs.extend_from_slice(&ids[start..start + len]);
        targets.extend_from_slice(&ids[start + 1..start + len + 1]);
    }
    (
        Tensor::from_vec(inputs, &[starts.len(), len]),
        Tensor::from_vec(targets, &[starts.len(), len, 1]),
    )
}

/// `batch` windows of `len` characters at random places in `ids`, as [`windows`] gives them.
pub fn random_windows(
    ids: &[i64],
    batch: usize,
    len: usize,
    rng: &mut ChaCha8Rng,
) -> (Tensor<i64>, Tensor<i64>) {
    let starts: Vec<usize> = (0..batch)
        .map(|_| rng.random_range(0..ids.len() - len))
        .collect();
    windows(ids, &starts, len)
}

/// The starts of the non-overlapping windows of `len` characters that cover `ids` (but for the
/// last character, and a remainder shorter than a window), each with its next characters.
pub fn tiling(ids: &[i64], len: usize) -> Vec<usize> {
    (0..(ids.len() - 1) / len).map(|k| k * len).collect()
}
