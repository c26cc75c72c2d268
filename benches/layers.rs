//! The products of W5's attention and W6's convolutions alone, forward and backward, at those
//! programs' shapes (`f32`), for comparison with PyTorch's eager kernels on one thread.
//!
//! - `bmm_*`: batched matmul of `[8, 4, 64, 32]` heads. `qk` is `q · kᵀ` (`[8,4,64,32]` by
//!   `[8,4,32,64]`), `pv` is `p · v` (`[8,4,64,64]` by `[8,4,64,32]`); `_fwd` is the product,
//!   `_bwd` both operands' VJPs. The `_heads` entries take the operands as W5 makes them: the
//!   query, key and value heads are views of one `[8, 64, 384]` projection (a column slice of
//!   each row, permuted to `[B, H, T, DH]`), the key transposed besides; the others take
//!   row-major operands.
//! - `softmax_*`: softmax of `[8, 4, 64, 64]` scores along the last axis and its VJP.
//! - `conv*`: `conv2d` with 3×3 kernels and padding 1; `conv1` is `[32,3,32,32]` by `[16,3,3,3]`,
//!   `conv2` is `[32,16,16,16]` by `[32,16,3,3]`; `_fwd` the convolution, `_bwd` the input's and
//!   the weight's VJPs.
//!
//! `cargo bench -p rune-benches --bench layers`, then
//! `python3 benches/layers_torch.py` measures the same with `torch` and prints both systems'
//! medians and their ratio (it reads criterion's estimates of the last run). Pin both to one
//! core (`taskset -c 1`) and set `OMP_NUM_THREADS=1` for PyTorch.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use rune_ad::__private::rules::{
    conv2d_vjp_input, conv2d_vjp_weight, matmul_vjp_lhs, matmul_vjp_rhs, softmax_vjp,
};
use rune_ad::Tensor;

const B: usize = 8;
const T: usize = 64;
const H: usize = 4;
const DH: usize = 32;

fn rand(shape: &[usize], seed: u64) -> Tensor<f32> {
    Tensor::rand_uniform(shape, -1.0, 1.0, seed)
}

/// Head `j` of a `[B, T, 3·H·DH]` projection, as W5's `heads`: `[B, H, T, DH]`, a view.
fn heads(qkv: &Tensor<f32>, j: usize) -> Tensor<f32> {
    let d = H * DH;
    qkv.shrink(&[(0, B), (0, T), (j * d, (j + 1) * d)])
        .reshape(&[B, T, H, DH])
        .permute(&[0, 2, 1, 3])
}

/// `a · b` and both VJPs under `name`.
fn product(c: &mut Criterion, name: &str, a: &Tensor<f32>, b: &Tensor<f32>) {
    let mut group = c.benchmark_group("layers_f32");
    group.sample_size(30);
    let g = rand(a.matmul(b).shape(), 9);
    group.bench_function(format!("{name}_fwd"), |bench| {
        bench.iter(|| black_box(a).matmul(black_box(b)))
    });
    group.bench_function(format!("{name}_bwd"), |bench| {
        bench.iter(|| {
            (
                matmul_vjp_lhs(black_box(&g), a.shape(), b),
                matmul_vjp_rhs(black_box(&g), a, b.shape()),
            )
        })
    });
    group.finish();
}

/// `conv2d(x, w, 1, 1)` and both VJPs under `name`.
fn conv(c: &mut Criterion, name: &str, x: &[usize], w: &[usize]) {
    let mut group = c.benchmark_group("layers_f32");
    group.sample_size(30);
    let (x, w) = (rand(x, 1), rand(w, 2));
    let g = rand(x.conv2d(&w, 1, 1).shape(), 3);
    group.bench_function(format!("{name}_fwd"), |bench| {
        bench.iter(|| black_box(&x).conv2d(black_box(&w), 1, 1))
    });
    group.bench_function(format!("{name}_bwd"), |bench| {
        bench.iter(|| {
            (
                conv2d_vjp_input(black_box(&g), x.shape(), &w, 1, 1),
                conv2d_vjp_weight(black_box(&g), &x, w.shape(), 1, 1),
            )
        })
    });
    group.finish();
}

fn layers(c: &mut Criterion) {
    let (q, v) = (rand(&[B, H, T, DH], 4), rand(&[B, H, T, DH], 6));
    let kt = rand(&[B, H, DH, T], 7);
    let p = rand(&[B, H, T, T], 8);
    product(c, "bmm_qk", &q, &kt);
    product(c, "bmm_pv", &p, &v);
    let qkv = rand(&[B, T, 3 * H * DH], 10);
    let (qh, kh, vh) = (heads(&qkv, 0), heads(&qkv, 1), heads(&qkv, 2));
    product(c, "bmm_qk_heads", &qh, &kh.t());
    product(c, "bmm_pv_heads", &p, &vh);
    let mut group = c.benchmark_group("layers_f32");
    group.sample_size(30);
    let (y, gy) = (p.softmax(-1), rand(p.shape(), 11));
    group.bench_function("softmax_fwd", |bench| {
        bench.iter(|| black_box(&p).softmax(-1))
    });
    group.bench_function("softmax_bwd", |bench| {
        bench.iter(|| softmax_vjp(black_box(&gy), &y, -1))
    });
    group.finish();
    conv(c, "conv1", &[32, 3, 32, 32], &[16, 3, 3, 3]);
    conv(c, "conv2", &[32, 16, 16, 16], &[32, 16, 3, 3]);
}

criterion_group!(benches, layers);
criterion_main!(benches);
