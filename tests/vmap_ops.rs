//! `vmap` through the ops whose batching rules are not elementwise: factorizations and
//! solvers, contractions (`dot`, `outer`, `einsum`), convolutions and pooling, and the ops
//! batched one call per example (`gather`, `scatter_add`, `embedding`, `norm`, `polyval`). Each batched
//! entry point against the function called once per example, and the per-example gradients
//! against central differences.

use rune_ad::prelude::*;

mod support;
use support::{assert_close, example};

/// The central difference of `f` at `x` along element `k`.
fn central(f: impl Fn(&Tensor<f64>) -> f64, x: &Tensor<f64>, k: usize) -> f64 {
    let eps = 1e-6;
    let at = |d: f64| {
        let mut v = x.to_vec();
        v[k] += d;
        f(&Tensor::from_vec(v, x.shape()))
    };
    (at(eps) - at(-eps)) / (2.0 * eps)
}

/// The terms of a Gaussian process' likelihood and more, from one kernel matrix `k` `[n, n]`
/// and one target `y` `[n, 1]`: every factorization and solver on one example's matrices.
#[differentiable(vmap)]
fn gp_terms(k: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
    let l = k.cholesky();
    let z = l.solve_triangular(y, true, false);
    let alpha = k.cho_solve(y);
    let fit = z.square().sum() + (y * &alpha).sum();
    let logdet = k.logabsdet() + l.diagonal().ln().sum() * 2.0;
    let spectrum = k.eigvalsh().ln().sum() + k.svdvals().max() + k.qr_r().diagonal().abs().sum();
    let rest = k.inv().trace() + k.solve(y).sum() + k.det().ln() + k.triu(1).sum();
    fit + logdet + spectrum * 0.5 + rest * 0.25 + k.lstsq(y).sum()
}

/// `count` symmetric positive-definite `[n, n]` matrices, `a aᵀ + n I`.
fn kernels(count: usize, n: usize, seed: u64) -> Tensor<f64> {
    let a = Tensor::<f64>::rand_uniform(&[count, n, n], -1.0, 1.0, seed);
    a.matmul(&a.transpose(-1, -2)) + Tensor::eye(n) * n as f64
}

#[test]
fn factorizations_and_solvers_batch() {
    let (b, n) = (4, 3);
    let ks = kernels(b, n, 1);
    let ys = Tensor::<f64>::rand_uniform(&[b, n, 1], -1.0, 1.0, 2);
    let (k0, y0) = (example(&ks, 0), example(&ys, 0));
    // Both batched, the matrix shared, the target shared.
    let both = gp_terms_vmap(Batch(&ks), Batch(&ys));
    let shared_k = gp_terms_vmap(&k0, Batch(&ys));
    let shared_y = gp_terms_vmap(Batch(&ks), &y0);
    assert_eq!(both.shape(), &[b]);
    for i in 0..b {
        let (k, y) = (example(&ks, i), example(&ys, i));
        assert_close(&example(&both, i), &gp_terms(&k, &y), 1e-12, "both");
        assert_close(&example(&shared_k, i), &gp_terms(&k0, &y), 1e-12, "k");
        assert_close(&example(&shared_y, i), &gp_terms(&k, &y0), 1e-12, "y");
    }
    // Per-example gradients, in both arguments, against each example's and central differences.
    let (gk, gy) = gp_terms_grad_vmap(Batch(&ks), Batch(&ys));
    assert_eq!(gk.shape(), &[b, n, n]);
    for i in 0..b {
        let (k, y) = (example(&ks, i), example(&ys, i));
        let (ek, ey) = gp_terms_grad(&k, &y);
        assert_close(&example(&gk, i), &ek, 1e-9, "dk");
        assert_close(&example(&gy, i), &ey, 1e-9, "dy");
        // A symmetric perturbation of the diagonal keeps `k` positive definite and symmetric.
        let fd = central(|k| gp_terms(k, &y).item(), &k, 4);
        assert!((example(&gk, i).to_vec()[4] - fd).abs() < 1e-6, "{fd}");
        let fd = central(|y| gp_terms(&k, y).item(), &y, 1);
        assert!((example(&gy, i).to_vec()[1] - fd).abs() < 1e-6, "{fd}");
    }
    // Forward mode along a batch of directions of the target.
    let dys = Tensor::<f64>::rand_uniform(&[b, n, 1], -1.0, 1.0, 3);
    let (_, slopes) = gp_terms_jvp_vmap(&k0, Batch(&ys), Tensor::zeros(&[n, n]), Batch(&dys));
    for i in 0..b {
        let (_, slope) = gp_terms_jvp(
            &k0,
            &example(&ys, i),
            &Tensor::zeros(&[n, n]),
            &example(&dys, i),
        );
        assert_close(&example(&slopes, i), &slope, 1e-10, "slope");
    }
}

/// `dot`, `outer` and `einsum` (written out and implicit) of one example's vectors `[n]` and
/// matrix `[n, n]`.
#[differentiable(vmap)]
fn contractions(a: &Tensor<f64>, b: &Tensor<f64>, m: &Tensor<f64>) -> Tensor<f64> {
    let d = a.dot(b);
    let o = a.outer(b);
    let q = einsum("i,ij->j", a, m);
    let r = einsum("ij,jk", m, &o);
    d * q.sum() + r.tanh().sum() + o.square().mean()
}

#[test]
fn contractions_batch() {
    let (b, n) = (5, 3);
    let xs = Tensor::<f64>::rand_uniform(&[b, n], -1.0, 1.0, 10);
    let ws = Tensor::<f64>::rand_uniform(&[b, n], -1.0, 1.0, 11);
    let m = Tensor::<f64>::rand_uniform(&[n, n], -1.0, 1.0, 12);
    let w0 = example(&ws, 0);
    let values = contractions_vmap(Batch(&xs), Batch(&ws), &m);
    let shared = contractions_vmap(Batch(&xs), &w0, &m);
    let (ga, gb, gm) = contractions_grad_vmap(Batch(&xs), &w0, &m);
    assert_eq!(gm.shape(), &[b, n, n]);
    for i in 0..b {
        let x = example(&xs, i);
        let one = contractions(&x, &example(&ws, i), &m);
        assert_close(&example(&values, i), &one, 1e-12, "value");
        assert_close(
            &example(&shared, i),
            &contractions(&x, &w0, &m),
            1e-12,
            "shared",
        );
        let (ea, eb, em) = contractions_grad(&x, &w0, &m);
        assert_close(&example(&ga, i), &ea, 1e-12, "da");
        assert_close(&example(&gb, i), &eb, 1e-12, "db");
        assert_close(&example(&gm, i), &em, 1e-12, "dm");
        let fd = central(|m| contractions(&x, &w0, m).item(), &m, 5);
        assert!((example(&gm, i).to_vec()[5] - fd).abs() < 1e-7);
    }
}

/// A small convolutional classifier of one image `[channels, height, width]`.
#[derive(Clone, Differentiable)]
struct Cnn {
    conv: Tensor<f32>,
    head: Tensor<f32>,
}

#[differentiable(vmap)]
fn cnn_loss(
    net: &Cnn,
    #[nodiff] image: &Tensor<f32>,
    #[nodiff] target: &Tensor<f32>,
) -> Tensor<f32> {
    let h = image.expand_dims(0).conv2d(&net.conv, 1, 1).relu(); // [1, 4, 6, 6]
    let h = h.max_pool2d(2, 2).avg_pool2d(3, 3); // [1, 4, 1, 1]
    let logits = h.reshape(&[1, 4]).matmul(&net.head); // [1, 3]
    -(logits.log_softmax(-1) * target).sum()
}

fn cnn(seed: u64) -> Cnn {
    Cnn {
        conv: Tensor::rand_uniform(&[4, 2, 3, 3], -0.5, 0.5, seed),
        head: Tensor::rand_uniform(&[4, 3], -0.5, 0.5, seed + 1),
    }
}

#[test]
fn convolutions_and_pooling_batch_in_f32() {
    let b = 5;
    let net = cnn(20);
    let images = Tensor::<f32>::rand_uniform(&[b, 2, 6, 6], -1.0, 1.0, 21);
    let targets = Tensor::<f32>::rand_uniform(&[b, 3], 0.0, 1.0, 22);
    // Shared weights: the images merged into one convolution.
    let losses = cnn_loss_vmap(&net, Batch(&images), Batch(&targets));
    // Per-example gradients: each example's own copy of the weights.
    let grads = cnn_loss_grad_vmap(&net, Batch(&images), Batch(&targets));
    assert_eq!(grads.conv.shape(), &[b, 4, 2, 3, 3]);
    for i in 0..b {
        let (x, t) = (example(&images, i), example(&targets, i));
        assert_close(&example(&losses, i), &cnn_loss(&net, &x, &t), 1e-5, "loss");
        let g = cnn_loss_grad(&net, &x, &t);
        assert_close(&example(&grads.conv, i), &g.conv, 1e-5, "conv");
        assert_close(&example(&grads.head, i), &g.head, 1e-5, "head");
    }
    // An ensemble of networks on one image.
    let members: Vec<Cnn> = (0..3).map(|k| cnn(30 + 2 * k)).collect();
    let ensemble = Cnn {
        conv: stack(&members.iter().map(|m| &m.conv).collect::<Vec<_>>(), 0),
        head: stack(&members.iter().map(|m| &m.head).collect::<Vec<_>>(), 0),
    };
    let (x, t) = (example(&images, 0), example(&targets, 0));
    let (losses, grads) = cnn_loss_value_and_grad_vmap(Batch(&ensemble), &x, &t);
    for (k, member) in members.iter().enumerate() {
        let (v, g) = cnn_loss_value_and_grad(member, &x, &t);
        assert_close(&example(&losses, k), &v, 1e-5, "member loss");
        assert_close(&example(&grads.conv, k), &g.conv, 1e-5, "member conv");
    }
}

/// Ops batched one call per example: `gather`, `scatter_add`, `embedding`, `norm` and `polyval`, with
/// indices that may be batched too.
#[differentiable(vmap)]
fn lookups(x: &Tensor<f64>, table: &Tensor<f64>, #[nodiff] idx: &Tensor<i64>) -> Tensor<f64> {
    let picked = x.gather(1, idx); // [3, 1]
    let rows = embedding(idx, table); // [3, 1, 2]
    let spread = x.scatter_add(1, idx, &picked.exp());
    let fit = polyval(&table.reshape(&[10]), &x.tanh()); // [3, 4]
    picked.sum() * x.norm() + rows.square().sum() + spread.tanh().sum() + fit.mean()
}

#[test]
fn gathers_scatters_and_norms_batch() {
    let b = 4;
    let xs = Tensor::<f64>::rand_uniform(&[b, 3, 4], -1.0, 1.0, 40);
    let table = Tensor::<f64>::rand_uniform(&[5, 2], -1.0, 1.0, 41);
    let idxs = Tensor::<i64>::from_vec(vec![0, 3, 1, 2, 2, 0, 3, 3, 1, 0, 1, 2], &[b, 3, 1]);
    let values = lookups_vmap(Batch(&xs), &table, Batch(&idxs));
    let (gx, gt) = lookups_grad_vmap(Batch(&xs), &table, Batch(&idxs));
    assert_eq!(gt.shape(), &[b, 5, 2]);
    let shared = example(&idxs, 1);
    let with_shared = lookups_vmap(Batch(&xs), &table, &shared);
    for i in 0..b {
        let (x, idx) = (example(&xs, i), example(&idxs, i));
        assert_close(
            &example(&values, i),
            &lookups(&x, &table, &idx),
            1e-12,
            "value",
        );
        let shared_value = lookups(&x, &table, &shared);
        assert_close(
            &example(&with_shared, i),
            &shared_value,
            1e-12,
            "shared indices",
        );
        let (ex, et) = lookups_grad(&x, &table, &idx);
        assert_close(&example(&gx, i), &ex, 1e-12, "dx");
        assert_close(&example(&gt, i), &et, 1e-12, "dtable");
        let fd = central(|x| lookups(x, &table, &idx).item(), &x, 6);
        assert!((example(&gx, i).to_vec()[6] - fd).abs() < 1e-7);
    }
}

/// A loss generic over its element type: `f_hvp`, so also `f_hvp_vmap` (`broadcast_to` is no
/// cast to another element type).
#[differentiable(vmap)]
fn curvy<T: Element>(w: &Tensor<T>, #[nodiff] x: &Tensor<T>) -> Tensor<T> {
    let spread = w.sum_axes(&[0], true).broadcast_to(w.shape());
    (x.matmul(w).tanh() * x.matmul(w)).sum() + (spread * w).square().sum()
}

/// The same on a concrete element type, under `hvp`.
#[differentiable(vmap, hvp)]
fn curvy64(w: &Tensor<f64>, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let spread = w.sum_axes(&[0], true).broadcast_to(w.shape());
    (x.matmul(w).tanh() * x.matmul(w)).sum() + (spread * w).square().sum()
}

#[test]
fn per_example_hessian_vector_products() {
    let w = Tensor::<f64>::rand_uniform(&[3, 2], -1.0, 1.0, 50);
    let xs = Tensor::<f64>::rand_uniform(&[4, 3], -1.0, 1.0, 51);
    let vs = Tensor::<f64>::rand_uniform(&[4, 3, 2], -1.0, 1.0, 52);
    let (gs, hvs) = curvy_hvp_vmap(&w, Batch(&xs), Batch(&vs));
    let (gs64, hvs64) = curvy64_hvp_vmap(&w, Batch(&xs), Batch(&vs));
    // One direction shared by every example.
    let v0 = example(&vs, 0);
    let (_, shared) = curvy_hvp_vmap(&w, Batch(&xs), &v0);
    assert_eq!(hvs.shape(), &[4, 3, 2]);
    for i in 0..4 {
        let (x, v) = (example(&xs, i), example(&vs, i));
        let (g, hv) = curvy_hvp(&w, &x, &v);
        assert_close(&example(&gs, i), &g, 1e-12, "gradient");
        assert_close(&example(&hvs, i), &hv, 1e-12, "hvp");
        assert_close(&example(&gs64, i), &g, 1e-12, "gradient (hvp option)");
        assert_close(&example(&hvs64, i), &hv, 1e-12, "hvp (hvp option)");
        assert_close(
            &example(&shared, i),
            &curvy_hvp(&w, &x, &v0).1,
            1e-12,
            "shared",
        );
        // Against central differences of the gradient along v.
        let eps = 1e-5;
        let at = |d: f64| curvy_grad(&(&w + &(&v * d)), &x);
        let fd = (at(eps) - at(-eps)) / (2.0 * eps);
        assert_close(&example(&hvs, i), &fd, 1e-7, "differences");
    }
    // In f32 too.
    let (w32, xs32, vs32) = (w.cast::<f32>(), xs.cast::<f32>(), vs.cast::<f32>());
    let (_, hv32) = curvy_hvp_vmap(&w32, Batch(&xs32), Batch(&vs32));
    assert_close(&hv32, &hvs.cast::<f32>(), 1e-5, "f32");
}

/// Indices computed in the body (`argmax`, batched one call per example) and used to gather.
#[differentiable(vmap)]
fn row_maxima(x: &Tensor<f64>) -> Tensor<f64> {
    let k = x.argmax(-1);
    x.gather(1, &k.expand_dims(1)).sum()
}

#[test]
fn indices_computed_in_the_body_batch() {
    let xs = Tensor::<f64>::rand_uniform(&[5, 3, 4], -1.0, 1.0, 60);
    let values = row_maxima_vmap(Batch(&xs));
    let grads = row_maxima_grad_vmap(Batch(&xs));
    for i in 0..5 {
        let x = example(&xs, i);
        // By hand: the sum of each row's largest element, whose gradient is one-hot there.
        let rows: Vec<Vec<f64>> = x.to_vec().chunks(4).map(<[f64]>::to_vec).collect();
        let by_hand: f64 = rows
            .iter()
            .map(|r| r.iter().cloned().fold(f64::MIN, f64::max))
            .sum();
        assert!((example(&values, i).item() - by_hand).abs() < 1e-12);
        let one_hot: Vec<f64> = rows
            .iter()
            .flat_map(|r| {
                let m = r.iter().cloned().fold(f64::MIN, f64::max);
                r.iter().map(move |&v| if v == m { 1.0 } else { 0.0 })
            })
            .collect();
        assert_eq!(example(&grads, i).to_vec(), one_hot);
    }
}

/// The squares of the elements an index list picks from one example (an index twice counts
/// twice), batched one call per example.
#[differentiable(vmap)]
fn picked(x: &Tensor<f64>, #[nodiff] idx: &Tensor<i64>) -> Tensor<f64> {
    x.gather(0, idx).square().sum()
}

/// A weighted sum over a batch whose examples are themselves differentiated: `Batch(x)` of a
/// parameter inside a differentiated function.
#[differentiable]
fn weighted_picks(
    x: &Tensor<f64>,
    #[nodiff] idx: &Tensor<i64>,
    #[nodiff] weights: &Tensor<f64>,
) -> Tensor<f64> {
    (picked_vmap(Batch(x), idx) * weights).sum()
}

#[test]
fn a_differentiated_batch_inside_a_loss() {
    let x = Tensor::rand_normal(&[4, 5], 0.0, 1.0, 90);
    let idx = Tensor::<i64>::from_vec(vec![0, 2, 2, 4], &[4]);
    let weights = Tensor::from_vec(vec![1.0, -0.5, 2.0, 0.25], &[4]);
    support::check_variants!(
        weighted_picks,
        weighted_picks_value_and_grad,
        weighted_picks_grad,
        weighted_picks_vjp,
        weighted_picks_jvp,
        weighted_picks_pullback;
        [x];
        (&x, &idx, &weights)
    );
    // By hand: ∂/∂x[b, j] = 2 w[b] x[b, j] times how often `j` is picked.
    let counts = [1.0, 0.0, 2.0, 0.0, 1.0];
    let (xs, ws) = (x.to_vec(), weights.to_vec());
    let got = weighted_picks_grad(&x, &idx, &weights).to_vec();
    for b in 0..4 {
        for j in 0..5 {
            let expected = 2.0 * ws[b] * xs[b * 5 + j] * counts[j];
            assert!((got[b * 5 + j] - expected).abs() < 1e-12, "[{b}, {j}]");
        }
    }
}
