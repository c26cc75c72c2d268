//! Iterator adaptors that pick positions (`skip`, `take`, `step_by`, with `rev` and `enumerate`
//! around them), zips of three sequences and `product`, over `Vec` fields of structures, local
//! `Vec`s and arrays of numbers, in small models written as users write them. Every variant is
//! checked against finite differences and the dot-product test (`check_variants!`), and the
//! values against the same loops written by hand.

mod support;

use rune_ad::prelude::*;
use support::check_variants;

#[derive(Clone, Differentiable)]
struct Dense {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

#[derive(Clone, Differentiable)]
struct Tower {
    input: Dense,
    blocks: Vec<Dense>,
}

impl Tower {
    /// The input layer, then the first `depth` blocks; every other block (from the first) adds
    /// its input back (a residual connection), and the later ones are plain.
    #[differentiable]
    fn forward(&self, x: &Tensor<f64>, #[nodiff] depth: usize) -> Tensor<f64> {
        let mut h = (x.matmul(&self.input.w) + &self.input.b).tanh();
        for (i, block) in self.blocks.iter().take(depth).enumerate() {
            let z = (h.matmul(&block.w) + &block.b).tanh();
            h = if i % 2 == 0 { z + &h } else { z };
        }
        // A penalty on the weights of every other block, and of all but the first.
        let every_other: Tensor<f64> = self
            .blocks
            .iter()
            .step_by(2)
            .map(|b| b.w.square().sum())
            .sum();
        let later: Tensor<f64> = self.blocks.iter().skip(1).map(|b| b.b.square().sum()).sum();
        h.square().mean() + every_other * 0.01 + later * 0.1
    }
}

#[differentiable]
fn tower_loss(model: &Tower, #[nodiff] x: &Tensor<f64>, #[nodiff] depth: usize) -> Tensor<f64> {
    model.forward(x, depth)
}

fn dense(rows: usize, cols: usize, seed: u64) -> Dense {
    Dense {
        w: Tensor::rand_normal(&[rows, cols], 0.0, 0.5, seed),
        b: Tensor::rand_normal(&[cols], 0.0, 0.2, seed + 100),
    }
}

#[test]
fn skip_take_and_step_by_over_a_vec_field() {
    let model = Tower {
        input: dense(3, 4, 1),
        blocks: (0..5).map(|i| dense(4, 4, 10 + i)).collect(),
    };
    let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 2);
    for depth in [0, 3, 5, 9] {
        check_variants!(
            tower_loss, tower_loss_value_and_grad, tower_loss_grad, tower_loss_vjp,
            tower_loss_jvp, tower_loss_pullback;
            [model];
            (&model, &x, depth)
        );
        // The same loops by hand.
        let mut h = (x.matmul(&model.input.w) + &model.input.b).tanh();
        for (i, block) in model.blocks.iter().enumerate().take(depth) {
            let z = (h.matmul(&block.w) + &block.b).tanh();
            h = if i % 2 == 0 { z + &h } else { z };
        }
        let mut every_other = 0.0;
        for i in (0..5).step_by(2) {
            every_other += model.blocks[i].w.square().sum().item();
        }
        let mut later = 0.0;
        for i in 1..5 {
            later += model.blocks[i].b.square().sum().item();
        }
        let want = h.square().mean().item() + every_other * 0.01 + later * 0.1;
        let got = tower_loss(&model, &x, depth).item();
        assert!((got - want).abs() < 1e-12, "depth {depth}: {got} vs {want}");
    }
}

#[derive(Clone, Differentiable)]
struct Triples {
    a: Vec<Tensor<f64>>,
    b: Vec<Tensor<f64>>,
    c: Vec<Tensor<f64>>,
}

/// Three sequences zipped as `izip!` nests them, walked backwards from the second-to-last
/// position with their positions numbered.
#[differentiable]
fn triple_products(t: &Triples) -> Tensor<f64> {
    let total: Tensor<f64> =
        t.a.iter()
            .zip(t.b.iter().zip(t.c.iter()))
            .map(|(x, (y, z))| (x * y * z).sum())
            .sum();
    let mut weighted = Tensor::scalar(0.0);
    for (k, (x, y)) in t.a.iter().zip(&t.b).rev().skip(1).enumerate() {
        weighted += (x * y).sum() * (k as f64 + 1.0);
    }
    total + weighted
}

#[test]
fn a_zip_of_three_and_rev_skip_enumerate() {
    let vecs = |seed: u64| -> Vec<Tensor<f64>> {
        (0..4)
            .map(|i| Tensor::rand_normal(&[3], 0.0, 1.0, seed + i))
            .collect()
    };
    let t = Triples {
        a: vecs(1),
        b: vecs(20),
        c: vecs(40),
    };
    check_variants!(
        triple_products, triple_products_value_and_grad, triple_products_grad,
        triple_products_vjp, triple_products_jvp, triple_products_pullback;
        [t];
        (&t)
    );
    let dot = |x: &Tensor<f64>, y: &Tensor<f64>| (x * y).sum().item();
    let total: f64 = (0..4)
        .map(|i| (&t.a[i] * &t.b[i] * &t.c[i]).sum().item())
        .sum();
    // Reversed, the second-to-last position first: 2, 1, 0, numbered 1, 2, 3.
    let weighted: f64 = [2, 1, 0]
        .iter()
        .enumerate()
        .map(|(k, &i)| dot(&t.a[i], &t.b[i]) * (k as f64 + 1.0))
        .sum();
    assert!((triple_products(&t).item() - (total + weighted)).abs() < 1e-12);
}

/// Local `Vec`s: the hidden states of a recurrence, every other one read, and the last three.
#[differentiable]
fn recurrence(w: &Tensor<f64>, #[nodiff] x0: &Tensor<f64>) -> Tensor<f64> {
    let mut states = Vec::new();
    let mut h = x0.clone();
    for _ in 0..7 {
        h = h.matmul(w).tanh();
        states.push(h.clone());
    }
    let even: Tensor<f64> = states.iter().step_by(2).map(|s| s.sum()).sum();
    let tail: Tensor<f64> = states.iter().rev().take(3).map(|s| s.square().sum()).sum();
    even + tail
}

#[test]
fn step_by_and_take_over_a_local_vec() {
    let w = Tensor::rand_normal(&[3, 3], 0.0, 0.6, 5);
    let x0 = Tensor::rand_normal(&[1, 3], 0.0, 1.0, 6);
    check_variants!(
        recurrence, recurrence_value_and_grad, recurrence_grad, recurrence_vjp,
        recurrence_jvp, recurrence_pullback;
        [w];
        (&w, &x0)
    );
    let mut states = Vec::new();
    let mut h = x0.clone();
    for _ in 0..7 {
        h = h.matmul(&w).tanh();
        states.push(h.clone());
    }
    let even: f64 = [0, 2, 4, 6].iter().map(|&i| states[i].sum().item()).sum();
    let tail: f64 = [6, 5, 4]
        .iter()
        .map(|&i| states[i].square().sum().item())
        .sum();
    assert!((recurrence(&w, &x0).item() - (even + tail)).abs() < 1e-12);
}

/// `product` of the numbers of an array past the first, and of every other one.
#[differentiable]
fn products(x: [f64; 5]) -> f64 {
    let tail: f64 = x.iter().skip(1).product();
    let odd: f64 = x.iter().step_by(2).map(|v| v + 1.0).product();
    tail + odd
}

#[test]
fn product_of_numbers_through_skip_and_step_by() {
    let x = [1.5, -0.5, 2.0, 0.25, 3.0];
    let tail = -0.5 * 2.0 * 0.25 * 3.0;
    let odd = 2.5 * 3.0 * 4.0;
    let (v, g) = products_value_and_grad(x);
    assert_eq!(v, products(x));
    assert!((v - (tail + odd)).abs() < 1e-12);
    // By hand: d tail/dx_i = tail / x_i for i >= 1; d odd/dx_i = odd / (x_i + 1) for even i.
    let mut want = [0.0; 5];
    for i in 1..5 {
        want[i] += tail / x[i];
    }
    for i in [0, 2, 4] {
        want[i] += odd / (x[i] + 1.0);
    }
    for i in 0..5 {
        assert!((g[i] - want[i]).abs() < 1e-12, "{g:?} vs {want:?}");
    }
    let u = [0.3, -1.0, 0.5, 2.0, 0.1];
    let (_, t) = products_jvp(x, &u);
    let inner: f64 = (0..5).map(|i| want[i] * u[i]).sum();
    assert!((t - inner).abs() < 1e-12);
}

/// A loop over the blocks inside a loop over the blocks, both binding `block`: the inner one
/// shadows the outer (it was taken for an assignment to the outer, a structure).
#[differentiable]
fn nested_same_name(model: &Tower, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let mut h = (x.matmul(&model.input.w) + &model.input.b).tanh();
    for block in model.blocks.iter().rev() {
        h = (h.matmul(&block.w) + &block.b).tanh();
        let mut g = h.clone();
        for block in model.blocks.iter().skip(3) {
            g = (g.matmul(&block.w) + &block.b).sin();
        }
        h = &h + &g * 0.5;
    }
    h.square().mean()
}

#[test]
fn nested_loops_over_one_field_with_one_name() {
    let model = Tower {
        input: dense(3, 4, 3),
        blocks: (0..4).map(|i| dense(4, 4, 30 + i)).collect(),
    };
    let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 9);
    check_variants!(
        nested_same_name, nested_same_name_value_and_grad, nested_same_name_grad,
        nested_same_name_vjp, nested_same_name_jvp, nested_same_name_pullback;
        [model];
        (&model, &x)
    );
}
