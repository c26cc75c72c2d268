//! The indexing ops a loss reads its parameters through (a bundle adjustment's cameras per
//! observation, an embedding's rows), each beside the plain Rust loop that does the same work:
//! `gather` of a list from a list and its gradient (an add into zeros), and `embedding` of
//! 64-wide rows and its gradient. The gradient is the generated one, of a loss reading the
//! picked values once, so it includes the read and the add.
//!
//! `cargo bench -p rune-benches --bench indexing -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use rune_ad::prelude::*;

#[differentiable]
fn picked(x: &Tensor<f64>, #[nodiff] idx: &Tensor<i64>, #[nodiff] w: &Tensor<f64>) -> Tensor<f64> {
    (x.gather(0, idx) * w).sum()
}

#[differentiable]
fn looked_up(
    table: &Tensor<f64>,
    #[nodiff] ids: &Tensor<i64>,
    #[nodiff] w: &Tensor<f64>,
) -> Tensor<f64> {
    (embedding(ids, table) * w).sum()
}

/// `x[idx[j]]` for every `j`, and the gradient `Σ_j w[j] e_{idx[j]}`, by hand.
fn by_hand_gather(x: &[f64], idx: &[i64], w: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let picked = idx.iter().map(|&i| x[i as usize]).collect();
    let mut grad = vec![0.0; x.len()];
    for (&i, &wj) in idx.iter().zip(w) {
        grad[i as usize] += wj;
    }
    (picked, grad)
}

/// The rows at `ids` of a `[rows, dim]` table, and the gradient of `Σ w ⊙ rows`, by hand.
fn by_hand_rows(table: &[f64], dim: usize, ids: &[i64], w: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut out = Vec::with_capacity(ids.len() * dim);
    let mut grad = vec![0.0; table.len()];
    for (j, &i) in ids.iter().enumerate() {
        let row = i as usize * dim..(i as usize + 1) * dim;
        out.extend_from_slice(&table[row.clone()]);
        for (g, &wk) in grad[row].iter_mut().zip(&w[j * dim..(j + 1) * dim]) {
            *g += wk;
        }
    }
    (out, grad)
}

fn bench(c: &mut Criterion) {
    let (n, m) = (100_000, 400_000);
    let x = Tensor::<f64>::rand_normal(&[n], 0.0, 1.0, 1);
    let idx = Tensor::<i64>::from_vec((0..m).map(|j| ((j * 7919) % n) as i64).collect(), &[m]);
    let w = Tensor::<f64>::rand_normal(&[m], 0.0, 1.0, 2);
    let (hand_picked, hand_grad) = by_hand_gather(&x.to_vec(), &idx.to_vec(), &w.to_vec());
    assert_eq!(x.gather(0, &idx).to_vec(), hand_picked);
    assert_eq!(picked_grad(&x, &idx, &w).to_vec(), hand_grad);

    let (rows, dim, ids) = (10_000, 64, 20_000);
    let table = Tensor::<f64>::rand_normal(&[rows, dim], 0.0, 1.0, 3);
    let id = Tensor::<i64>::from_vec(
        (0..ids).map(|j| ((j * 7919) % rows) as i64).collect(),
        &[ids],
    );
    let wr = Tensor::<f64>::rand_normal(&[ids, dim], 0.0, 1.0, 4);
    let (hand_rows, hand_grad) = by_hand_rows(&table.to_vec(), dim, &id.to_vec(), &wr.to_vec());
    assert_eq!(embedding(&id, &table).to_vec(), hand_rows);
    assert_eq!(looked_up_grad(&table, &id, &wr).to_vec(), hand_grad);

    let mut group = c.benchmark_group("indexing");
    let (xs, is, ws) = (x.to_vec(), idx.to_vec(), w.to_vec());
    group.bench_function("gather/rune", |b| b.iter(|| black_box(&x).gather(0, &idx)));
    group.bench_function("gather/by_hand", |b| {
        b.iter(|| {
            black_box(&is)
                .iter()
                .map(|&i| xs[i as usize])
                .collect::<Vec<f64>>()
        })
    });
    group.bench_function("gather_grad/rune", |b| {
        b.iter(|| picked_grad(black_box(&x), &idx, &w))
    });
    group.bench_function("gather_grad/by_hand", |b| {
        b.iter(|| by_hand_gather(black_box(&xs), &is, &ws))
    });
    let (ts, ids_v, wrs) = (table.to_vec(), id.to_vec(), wr.to_vec());
    group.bench_function("embedding/rune", |b| {
        b.iter(|| embedding(&id, black_box(&table)))
    });
    group.bench_function("embedding_grad/rune", |b| {
        b.iter(|| looked_up_grad(black_box(&table), &id, &wr))
    });
    group.bench_function("embedding_grad/by_hand", |b| {
        b.iter(|| by_hand_rows(black_box(&ts), dim, &ids_v, &wrs))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
