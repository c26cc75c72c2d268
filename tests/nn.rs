//! `nn`: each layer's forward pass against its formula written out, its gradients through the
//! macro in every variant (finite differences, the dot-product test), in `f32` against `f64`,
//! PyTorch's initial distributions, and a small model built from the layers as a user builds one.

mod support;

use rune_ad::nn::{
    BatchNorm, Conv2d, Dropout, Embedding, GruCell, Init, LayerNorm, Linear, LstmCell, Mlp,
    MultiHeadAttention, RmsNorm,
};
use rune_ad::prelude::*;
use support::check_variants;

#[track_caller]
fn assert_close(got: &Tensor<f64>, want: &[f64], tol: f64) {
    let got = got.to_vec();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{got:?} against {want:?}"
        );
    }
}

#[test]
fn linear_is_x_times_w_transposed_plus_b_in_pytorch_s_layout() {
    let layer = Linear {
        weight: Tensor::from_vec(vec![1.0, 2.0, 3.0, -1.0, 0.5, 0.0], &[2, 3]),
        bias: Tensor::from_vec(vec![0.25, -0.5], &[2]),
    };
    let x = Tensor::from_vec(vec![1.0, 1.0, 2.0], &[1, 3]);
    // [1·1 + 1·2 + 2·3 + 0.25, 1·(−1) + 1·0.5 + 0 − 0.5].
    assert_close(&layer.forward(&x), &[9.25, -1.0], 0.0);
    assert_eq!(layer.leaf_paths("fc"), ["fc.weight", "fc.bias"]);
}

#[test]
fn initialisation_is_pytorch_s_and_follows_the_seed() {
    let mut init = Init::new(5);
    let layer = Linear::<f64>::new(16, 8, &mut init);
    let bound = 1.0 / 4.0;
    for v in layer.weight.to_vec().iter().chain(&layer.bias.to_vec()) {
        assert!(v.abs() <= bound, "{v} outside ±{bound}");
    }
    // Spread over the interval: the sample's variance near bound²/3.
    let w = layer.weight.to_vec();
    let var = w.iter().map(|v| v * v).sum::<f64>() / w.len() as f64;
    assert!((var - bound * bound / 3.0).abs() < 0.01, "{var}");
    // The same seed, the same layer; another seed, another.
    let again = Linear::<f64>::new(16, 8, &mut Init::new(5));
    assert_eq!(again.weight.to_vec(), layer.weight.to_vec());
    let other = Linear::<f64>::new(16, 8, &mut Init::new(6));
    assert_ne!(other.weight.to_vec(), layer.weight.to_vec());
    // Embeddings are standard normal; norms start at one and zero.
    let emb = Embedding::<f64>::new(1000, 4, &mut init);
    let e = emb.weight.to_vec();
    let mean = e.iter().sum::<f64>() / e.len() as f64;
    let var = e.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / e.len() as f64;
    assert!(
        mean.abs() < 0.05 && (var - 1.0).abs() < 0.05,
        "{mean} {var}"
    );
    let ln = LayerNorm::<f32>::new(3);
    assert_eq!(
        (ln.weight.to_vec(), ln.bias.to_vec()),
        (vec![1.0; 3], vec![0.0; 3])
    );
}

#[test]
fn the_norms_and_the_embedding_follow_their_formulas() {
    let x = Tensor::from_vec(vec![1.0, 2.0, 4.0, -1.0, 0.0, 1.0], &[2, 3]);
    let mut ln = LayerNorm::<f64>::new(3);
    ln.weight = Tensor::from_vec(vec![1.0, 2.0, 0.5], &[3]);
    ln.bias = Tensor::from_vec(vec![0.0, 1.0, -1.0], &[3]);
    let mut want = Vec::new();
    for row in [[1.0, 2.0, 4.0], [-1.0, 0.0, 1.0]] {
        let mean = row.iter().sum::<f64>() / 3.0;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / 3.0;
        for (k, v) in row.iter().enumerate() {
            let (w, b) = ([1.0, 2.0, 0.5][k], [0.0, 1.0, -1.0][k]);
            want.push((v - mean) / (var + 1e-5).sqrt() * w + b);
        }
    }
    assert_close(&ln.forward(&x), &want, 1e-15);
    let rms = RmsNorm::<f64>::new(3);
    let mut want = Vec::new();
    for row in [[1.0, 2.0, 4.0], [-1.0, 0.0, 1.0]] {
        let ms = row.iter().map(|v| v * v).sum::<f64>() / 3.0;
        want.extend(row.iter().map(|v| v / (ms + f64::EPSILON).sqrt()));
    }
    assert_close(&rms.forward(&x), &want, 1e-15);
    let emb = Embedding {
        weight: Tensor::from_vec(vec![0.0, 1.0, 10.0, 11.0, 20.0, 21.0], &[3, 2]),
    };
    let ids = Tensor::from_vec(vec![2_i64, 0, 2], &[3]);
    assert_close(&emb.forward(&ids), &[20.0, 21.0, 0.0, 1.0, 20.0, 21.0], 0.0);
}

/// A small classifier from the layers: embedding, layer norm, an MLP, RMS norm on the logits.
#[derive(Clone, Differentiable)]
pub struct Classifier<T: Element> {
    embed: Embedding<T>,
    norm: LayerNorm<T>,
    mlp: Mlp<T>,
    out_norm: RmsNorm<T>,
}

#[differentiable]
impl<T: Element> Classifier<T> {
    fn loss(&self, #[nodiff] ids: &Tensor<i64>, #[nodiff] targets: &Tensor<T>) -> Tensor<T> {
        let h = self.norm.forward(&self.embed.forward(ids));
        let logits = self.out_norm.forward(&self.mlp.forward(&h));
        let log_probs = logits.log_softmax(-1);
        -(log_probs * targets).sum() / T::from_f64(ids.len() as f64)
    }
}

fn classifier(seed: u64) -> Classifier<f64> {
    let mut init = Init::new(seed);
    let mut model = Classifier {
        embed: Embedding::new(5, 4, &mut init),
        norm: LayerNorm::new(4),
        mlp: Mlp::new(&[4, 6, 3], &mut init),
        out_norm: RmsNorm::new(3),
    };
    // Norm parameters away from their initial ones, so that their gradients are general.
    model.norm.weight = init.uniform(&[4], 1.5);
    model.norm.bias = init.uniform(&[4], 0.5);
    model.out_norm.weight = init.uniform(&[3], 1.5);
    model
}

#[test]
fn a_model_of_layers_has_every_variant() {
    let m = classifier(1);
    let ids = Tensor::from_vec(vec![0_i64, 3, 3, 1, 4, 2], &[6]);
    let targets = Tensor::from_vec(
        (0..6)
            .flat_map(|i| (0..3).map(move |k| if k == i % 3 { 1.0 } else { 0.0 }))
            .collect(),
        &[6, 3],
    );
    check_variants!(
        Classifier::loss,
        Classifier::loss_value_and_grad,
        Classifier::loss_grad,
        Classifier::loss_vjp,
        Classifier::loss_jvp,
        Classifier::loss_pullback;
        [m];
        (&m, &ids, &targets)
    );
    // The embedding's gradient lands only on the rows of the ids used: a batch of ids 0 and 1
    // leaves rows 2 to 4 zero and moves rows 0 and 1.
    let some = Tensor::from_vec(vec![0_i64, 1], &[2]);
    let g = m.loss_grad(&some, &targets.index_select(0, &[0, 1]));
    let rows = g.embed.weight.to_vec();
    assert!(rows[8..].iter().all(|v| *v == 0.0), "{rows:?}");
    assert!(rows[..4].iter().any(|v| *v != 0.0) && rows[4..8].iter().any(|v| *v != 0.0));
    // f32 agrees with f64.
    let m32 = Classifier {
        embed: Embedding {
            weight: m.embed.weight.cast::<f32>(),
        },
        norm: LayerNorm {
            weight: m.norm.weight.cast::<f32>(),
            bias: m.norm.bias.cast::<f32>(),
            eps: 1e-5,
        },
        mlp: Mlp {
            layers: m
                .mlp
                .layers
                .iter()
                .map(|l| Linear {
                    weight: l.weight.cast::<f32>(),
                    bias: l.bias.cast::<f32>(),
                })
                .collect(),
        },
        out_norm: RmsNorm {
            weight: m.out_norm.weight.cast::<f32>(),
            eps: f64::EPSILON,
        },
    };
    let g64 = m.loss_grad(&ids, &targets);
    let g32 = m32.loss_grad(&ids, &targets.cast::<f32>());
    for (a, b) in g32.leaves().iter().zip(g64.leaves()) {
        for (x, y) in a.to_vec().iter().zip(b.to_vec()) {
            assert!(
                (f64::from(*x) - y).abs() < 1e-4 * y.abs().max(1.0),
                "{x} against {y}"
            );
        }
    }
}

fn sigmoid(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

/// Row `r` of `w` `[rows, cols]` times `v`.
fn row_dot(w: &[f64], cols: usize, r: usize, v: &[f64]) -> f64 {
    (0..cols).map(|j| w[r * cols + j] * v[j]).sum()
}

#[test]
fn the_recurrent_cells_follow_pytorch_s_equations() {
    let mut init = Init::new(9);
    let (inputs, hidden) = (3, 2);
    let x = init.uniform::<f64>(&[1, inputs], 1.0);
    let h = init.uniform::<f64>(&[1, hidden], 1.0);
    let c = init.uniform::<f64>(&[1, hidden], 1.0);
    let (xv, hv, cv) = (x.to_vec(), h.to_vec(), c.to_vec());
    // LSTM: gates i, f, g, o from W_ih x + b_ih + W_hh h + b_hh, row blocks of `hidden`.
    let lstm = LstmCell::<f64>::new(inputs, hidden, &mut init);
    let (wi, wh, bi, bh) = (
        lstm.weight_ih.to_vec(),
        lstm.weight_hh.to_vec(),
        lstm.bias_ih.to_vec(),
        lstm.bias_hh.to_vec(),
    );
    let gate =
        |r: usize| row_dot(&wi, inputs, r, &xv) + bi[r] + row_dot(&wh, hidden, r, &hv) + bh[r];
    let (mut h_want, mut c_want) = (Vec::new(), Vec::new());
    for (k, c_prev) in cv.iter().enumerate() {
        let i = sigmoid(gate(k));
        let f = sigmoid(gate(hidden + k));
        let g = gate(2 * hidden + k).tanh();
        let o = sigmoid(gate(3 * hidden + k));
        let c_next = f * c_prev + i * g;
        c_want.push(c_next);
        h_want.push(o * c_next.tanh());
    }
    let (h_next, c_next) = lstm.forward(&x, &h, &c);
    assert_close(&h_next, &h_want, 1e-14);
    assert_close(&c_next, &c_want, 1e-14);
    // GRU: r, z from both sides, n = tanh(W_in x + b_in + r (W_hn h + b_hn)).
    let gru = GruCell::<f64>::new(inputs, hidden, &mut init);
    let (wi, wh, bi, bh) = (
        gru.weight_ih.to_vec(),
        gru.weight_hh.to_vec(),
        gru.bias_ih.to_vec(),
        gru.bias_hh.to_vec(),
    );
    let side_i = |r: usize| row_dot(&wi, inputs, r, &xv) + bi[r];
    let side_h = |r: usize| row_dot(&wh, hidden, r, &hv) + bh[r];
    let want: Vec<f64> = (0..hidden)
        .map(|k| {
            let r = sigmoid(side_i(k) + side_h(k));
            let z = sigmoid(side_i(hidden + k) + side_h(hidden + k));
            let n = (side_i(2 * hidden + k) + r * side_h(2 * hidden + k)).tanh();
            (1.0 - z) * n + z * hv[k]
        })
        .collect();
    assert_close(&gru.forward(&x, &h), &want, 1e-14);
    // Conv2d: one output pixel of a 2×2 kernel, stride 1, no padding, is the window's sum of
    // products plus the bias.
    let conv = Conv2d::<f64>::new(1, 1, 2, 1, 0, &mut init);
    let image = init.uniform::<f64>(&[1, 1, 3, 3], 1.0);
    let (w, im) = (conv.weight.to_vec(), image.to_vec());
    let out = conv.forward(&image);
    assert_eq!(out.shape(), &[1, 1, 2, 2]);
    let first = w[0] * im[0] + w[1] * im[1] + w[2] * im[3] + w[3] * im[4] + conv.bias.item();
    assert!((out.to_vec()[0] - first).abs() < 1e-15);
}

/// A sequence model from the cells: an LSTM and a GRU side by side over a few steps (a loop),
/// a convolution over the input as an image, and a linear head.
#[derive(Clone, Differentiable)]
pub struct Sequence<T: Element> {
    lstm: LstmCell<T>,
    gru: GruCell<T>,
    conv: Conv2d<T>,
    head: Linear<T>,
}

#[differentiable]
impl<T: Element> Sequence<T> {
    fn loss(&self, #[nodiff] xs: &Tensor<T>, #[nodiff] image: &Tensor<T>) -> Tensor<T> {
        let (steps, n, hidden) = (xs.shape()[0], xs.shape()[1], self.gru.weight_hh.shape()[1]);
        let mut h = Tensor::zeros(&[n, hidden]);
        let mut c = Tensor::zeros(&[n, hidden]);
        let mut g = Tensor::zeros(&[n, hidden]);
        for t in 0..steps {
            let x = xs.index_select(0, &[t]).squeeze(0);
            let (h2, c2) = self.lstm.forward(&x, &h, &c);
            h = h2;
            c = c2;
            g = self.gru.forward(&x, &g);
        }
        let features = self.conv.forward(image).mean();
        (self.head.forward(&(h + g)) * features).square().sum()
    }
}

#[test]
fn a_sequence_model_of_cells_has_every_variant() {
    let mut init = Init::new(30);
    let m = Sequence::<f64> {
        lstm: LstmCell::new(3, 2, &mut init),
        gru: GruCell::new(3, 2, &mut init),
        conv: Conv2d::new(1, 2, 2, 1, 1, &mut init),
        head: Linear::new(2, 1, &mut init),
    };
    let xs = init.uniform::<f64>(&[3, 2, 3], 1.0);
    let image = init.uniform::<f64>(&[1, 1, 3, 3], 1.0);
    check_variants!(
        Sequence::loss,
        Sequence::loss_value_and_grad,
        Sequence::loss_grad,
        Sequence::loss_vjp,
        Sequence::loss_jvp,
        Sequence::loss_pullback;
        [m];
        (&m, &xs, &image)
    );
}

/// The model of `tests/fixtures/pytorch_state.py`, from `rune_ad::nn`: its parameters' names
/// are the PyTorch module's `state_dict` names.
#[derive(Clone, Differentiable)]
pub struct Saved {
    embed: Embedding<f32>,
    norm: LayerNorm<f32>,
    mlp: Mlp<f32>,
}

/// The expected output, as the fixture stores it.
#[derive(Clone, Differentiable)]
pub struct Expected {
    output: Tensor<f64>,
}

#[test]
fn a_state_dict_in_pytorch_s_layout_loads_and_gives_pytorch_s_output() {
    let mut init = Init::new(0);
    let mut model = Saved {
        embed: Embedding::new(6, 4, &mut init),
        norm: LayerNorm::new(4),
        mlp: Mlp::new(&[4, 8, 3], &mut init),
    };
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/");
    rune_ad::io::load_safetensors(&mut model, format!("{dir}pytorch_state.safetensors")).unwrap();
    let mut expected = Expected {
        output: Tensor::zeros(&[2, 3, 3]),
    };
    rune_ad::io::load_safetensors(&mut expected, format!("{dir}pytorch_outputs.safetensors"))
        .unwrap();
    let ids = Tensor::from_vec(vec![0_i64, 5, 2, 3, 3, 1], &[2, 3]);
    let h = model.norm.forward(&model.embed.forward(&ids));
    let out = model.mlp.forward(&h);
    assert_eq!(out.shape(), &[2, 3, 3]);
    for (a, b) in out.to_vec().iter().zip(expected.output.to_vec()) {
        assert!((f64::from(*a) - b).abs() < 1e-5, "{a} against {b}");
    }
    // Saved again, the names are PyTorch's.
    assert_eq!(
        rune_ad::io::tensor_names(&model),
        [
            "embed.weight",
            "norm.weight",
            "norm.bias",
            "mlp.layers.0.weight",
            "mlp.layers.0.bias",
            "mlp.layers.1.weight",
            "mlp.layers.1.bias"
        ]
    );
}

/// The module of `tests/fixtures/pytorch_modules.py`, from `rune_ad::nn`, its fields named as
/// the PyTorch module's attributes.
#[derive(Clone, Differentiable)]
pub struct Modules {
    embed: Embedding<f32>,
    attn: MultiHeadAttention<f32>,
    norm: LayerNorm<f32>,
    fc: Linear<f32>,
    bn: BatchNorm<f32>,
    gru: GruCell<f32>,
    lstm: LstmCell<f32>,
    conv: Conv2d<f32>,
}

impl Modules {
    fn new(init: &mut Init) -> Self {
        Modules {
            embed: Embedding::new(6, 4, init),
            attn: MultiHeadAttention::new(4, 2, init),
            norm: LayerNorm::new(4),
            fc: Linear::new(4, 8, init),
            bn: BatchNorm::new(8),
            gru: GruCell::new(8, 5, init),
            lstm: LstmCell::new(5, 3, init),
            conv: Conv2d::new(1, 2, 2, 1, 0, init),
        }
    }

    /// The PyTorch module's `forward`, in evaluation mode.
    fn forward(&self, ids: &Tensor<i64>, image: &Tensor<f32>) -> (Tensor<f32>, Tensor<f32>) {
        let h = self.embed.forward(ids);
        let a = self
            .attn
            .forward(&h, &MultiHeadAttention::<f32>::causal_mask(3));
        let h = self.norm.forward(&(h + a));
        let h = self
            .bn
            .forward(&self.fc.forward(&h).reshape(&[6, 8]))
            .tanh();
        let g = self.gru.forward(&h, &Tensor::zeros(&[6, 5]));
        let zeros = Tensor::zeros(&[6, 3]);
        let (out, _) = self.lstm.forward(&g, &zeros, &zeros);
        (out, self.conv.forward(image))
    }
}

/// The fixture's image and PyTorch's outputs.
#[derive(Clone, Differentiable)]
pub struct ModuleOutputs {
    image: Tensor<f64>,
    output: Tensor<f64>,
    conv: Tensor<f64>,
}

fn to_f32(t: &Tensor<f64>) -> Tensor<f32> {
    Tensor::from_vec(t.to_vec().iter().map(|v| *v as f32).collect(), t.shape())
}

#[test]
fn a_state_dict_that_pytorch_saved_loads_and_gives_pytorch_s_outputs() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/");
    let mut model = Modules::new(&mut Init::new(0));
    model.bn.training = false;
    // Every parameter and buffer by PyTorch's name; the batch norm's `num_batches_tracked`
    // accepted and left aside.
    rune_ad::io::load_safetensors(&mut model, format!("{dir}pytorch_modules.safetensors")).unwrap();
    let mut expected = ModuleOutputs {
        image: Tensor::zeros(&[1, 1, 3, 3]),
        output: Tensor::zeros(&[6, 3]),
        conv: Tensor::zeros(&[1, 2, 2, 2]),
    };
    rune_ad::io::load_safetensors(
        &mut expected,
        format!("{dir}pytorch_modules_outputs.safetensors"),
    )
    .unwrap();
    let ids = Tensor::from_vec(vec![0_i64, 5, 2, 3, 3, 1], &[2, 3]);
    let (out, conv) = model.forward(&ids, &to_f32(&expected.image));
    for (got, want) in [(out, &expected.output), (conv, &expected.conv)] {
        assert_eq!(got.shape(), want.shape());
        for (a, b) in got.to_vec().iter().zip(want.to_vec()) {
            assert!((f64::from(*a) - b).abs() < 1e-5, "{a} against {b}");
        }
    }
    // The running statistics PyTorch moved came in with the parameters: the batch norm's
    // output depends on them, so the comparison above covers them, and they are not the
    // initial zeros and ones.
    assert_ne!(model.bn.running_mean.to_vec(), [0.0; 8]);
    let paths: Vec<String> = model.buffers("").into_iter().map(|(p, _)| p).collect();
    assert_eq!(paths, ["bn.running_mean", "bn.running_var"]);
    // Saved again and loaded into a fresh model, everything comes back.
    let bytes = rune_ad::io::safetensors_bytes(&model).unwrap();
    let mut fresh = Modules::new(&mut Init::new(1));
    rune_ad::io::load_safetensors_bytes(&mut fresh, &bytes).unwrap();
    assert_eq!(fresh.bn.running_var.to_vec(), model.bn.running_var.to_vec());
    assert_eq!(fresh.lstm.weight_hh.to_vec(), model.lstm.weight_hh.to_vec());
    // A file of a batch norm of another width is refused, naming each entry at fault.
    let mut narrow = Modules::new(&mut Init::new(2));
    narrow.bn = BatchNorm::new(7);
    let err = rune_ad::io::load_safetensors_bytes(&mut narrow, &bytes)
        .unwrap_err()
        .to_string();
    assert!(err.contains("`bn.running_var`: shape [8]"), "{err}");
}

#[test]
fn attention_follows_its_formula_under_causal_and_padding_masks() {
    let (n, len, embed, heads) = (2, 3, 4, 2);
    let width = embed / heads;
    let mut init = Init::new(50);
    let mut att = MultiHeadAttention::<f64>::new(embed, heads, &mut init);
    att.in_proj_bias = init.uniform(&[3 * embed], 0.5);
    att.out_proj.bias = init.uniform(&[embed], 0.5);
    let x = init.uniform::<f64>(&[n, len, embed], 1.0);
    // Causal, and the second sequence's last position padded.
    let padded = Tensor::from_vec(vec![false, false, false, false, false, true], &[n, len]);
    let mask = MultiHeadAttention::<f64>::causal_mask(len)
        .or(&MultiHeadAttention::<f64>::padding_mask(&padded));
    let got = att.forward(&x, &mask).to_vec();
    // By hand: project, attend per head over the allowed positions, concatenate, project.
    let (xv, w, b) = (
        x.to_vec(),
        att.in_proj_weight.to_vec(),
        att.in_proj_bias.to_vec(),
    );
    let (wo, bo) = (att.out_proj.weight.to_vec(), att.out_proj.bias.to_vec());
    let proj = |s: usize, i: usize, r: usize| {
        b[r] + (0..embed)
            .map(|e| w[r * embed + e] * xv[(s * len + i) * embed + e])
            .sum::<f64>()
    };
    for s in 0..n {
        for i in 0..len {
            let mut mixed = vec![0.0; embed];
            for h in 0..heads {
                let lane = |base: usize, j: usize| -> Vec<f64> {
                    (0..width)
                        .map(|d| proj(s, j, base + h * width + d))
                        .collect()
                };
                let q = lane(0, i);
                let allowed: Vec<usize> = (0..len)
                    .filter(|&j| j <= i && !(s == 1 && j == 2))
                    .collect();
                let scores: Vec<f64> = allowed
                    .iter()
                    .map(|&j| {
                        let k = lane(embed, j);
                        q.iter().zip(&k).map(|(a, b)| a * b).sum::<f64>() / (width as f64).sqrt()
                    })
                    .collect();
                let top = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let total: f64 = scores.iter().map(|v| (v - top).exp()).sum();
                for (&j, sc) in allowed.iter().zip(&scores) {
                    let weight = (sc - top).exp() / total;
                    for (d, v) in lane(2 * embed, j).iter().enumerate() {
                        mixed[h * width + d] += weight * v;
                    }
                }
            }
            for o in 0..embed {
                let want = bo[o]
                    + (0..embed)
                        .map(|e| wo[o * embed + e] * mixed[e])
                        .sum::<f64>();
                let at = (s * len + i) * embed + o;
                assert!((got[at] - want).abs() < 1e-14, "{} against {want}", got[at]);
            }
        }
    }
}

/// A transformer block: attention with a residual, layer norm, a linear head.
#[derive(Clone, Differentiable)]
pub struct Block<T: Element> {
    attention: MultiHeadAttention<T>,
    norm: LayerNorm<T>,
    head: Linear<T>,
}

#[differentiable]
impl<T: Element> Block<T> {
    fn loss(&self, #[nodiff] x: &Tensor<T>, #[nodiff] mask: &Tensor<bool>) -> Tensor<T> {
        let h = self.norm.forward(&(self.attention.forward(x, mask) + x));
        self.head.forward(&h).square().mean()
    }
}

#[test]
fn a_transformer_block_has_every_variant() {
    let mut init = Init::new(60);
    let mut m = Block::<f64> {
        attention: MultiHeadAttention::new(4, 2, &mut init),
        norm: LayerNorm::new(4),
        head: Linear::new(4, 2, &mut init),
    };
    m.attention.in_proj_bias = init.uniform(&[12], 0.5);
    m.norm.weight = init.uniform(&[4], 1.5);
    let x = init.uniform::<f64>(&[2, 3, 4], 1.0);
    let mask = MultiHeadAttention::<f64>::causal_mask(3);
    check_variants!(
        Block::loss,
        Block::loss_value_and_grad,
        Block::loss_grad,
        Block::loss_vjp,
        Block::loss_jvp,
        Block::loss_pullback;
        [m];
        (&m, &x, &mask)
    );
}

#[test]
fn batch_norm_trains_on_batch_statistics_and_evaluates_on_running_ones() {
    let x = Tensor::from_vec(vec![1.0, 10.0, 3.0, 20.0, 8.0, 60.0], &[3, 2]);
    let mut bn = BatchNorm::<f64>::new(2);
    bn.weight = Tensor::from_vec(vec![2.0, 0.5], &[2]);
    bn.bias = Tensor::from_vec(vec![0.0, 1.0], &[2]);
    // Training: channel 0 has mean 4 and biased variance 26/3, channel 1 mean 30, var 1400/3.
    let (m0, v0, m1, v1) = (4.0, 26.0 / 3.0, 30.0, 1400.0 / 3.0);
    let z = |v: f64, m: f64, var: f64| (v - m) / (var + 1e-5_f64).sqrt();
    let want = [
        2.0 * z(1.0, m0, v0),
        0.5 * z(10.0, m1, v1) + 1.0,
        2.0 * z(3.0, m0, v0),
        0.5 * z(20.0, m1, v1) + 1.0,
        2.0 * z(8.0, m0, v0),
        0.5 * z(60.0, m1, v1) + 1.0,
    ];
    assert_close(&bn.forward(&x), &want, 1e-14);
    // The running statistics take a tenth of the batch's, with the unbiased variance.
    bn.update_stats(&x);
    assert_close(&bn.running_mean, &[0.4, 3.0], 1e-15);
    assert_close(
        &bn.running_var,
        &[0.9 + 0.1 * 13.0, 0.9 + 0.1 * 700.0],
        1e-13,
    );
    // Evaluation reads them instead.
    bn.training = false;
    let (rm, rv) = (bn.running_mean.to_vec(), bn.running_var.to_vec());
    let got = bn.forward(&x).to_vec();
    assert!((got[0] - 2.0 * z(1.0, rm[0], rv[0])).abs() < 1e-14);
    assert!((got[5] - (0.5 * z(60.0, rm[1], rv[1]) + 1.0)).abs() < 1e-14);
}

/// A convolutional classifier with batch norm and dropout, its mask drawn outside.
#[derive(Clone, Differentiable)]
pub struct ConvNet<T: Element> {
    conv: Conv2d<T>,
    bn: BatchNorm<T>,
    head: Linear<T>,
}

#[differentiable]
impl<T: Element> ConvNet<T> {
    fn loss(&self, #[nodiff] images: &Tensor<T>, #[nodiff] mask: &Tensor<T>) -> Tensor<T> {
        let n = images.shape()[0];
        let h = self.bn.forward(&self.conv.forward(images)).tanh();
        let features = h.reshape(&[n, 8]) * mask;
        self.head.forward(&features).square().mean()
    }
}

#[test]
fn a_convolutional_net_with_batch_norm_and_dropout_has_every_variant() {
    let mut init = Init::new(70);
    let mut m = ConvNet::<f64> {
        conv: Conv2d::new(1, 2, 2, 1, 0, &mut init),
        bn: BatchNorm::new(2),
        head: Linear::new(8, 1, &mut init),
    };
    m.bn.weight = init.uniform(&[2], 1.5);
    m.bn.bias = init.uniform(&[2], 0.5);
    let images = init.uniform::<f64>(&[3, 1, 3, 3], 1.0);
    let dropout = Dropout::new(0.5);
    let mask = dropout.mask::<f64>(&[3, 8], &mut init, true);
    for training in [true, false] {
        m.bn.training = training;
        if !training {
            m.bn.update_stats(&m.conv.forward(&images));
        }
        check_variants!(
            ConvNet::loss,
            ConvNet::loss_value_and_grad,
            ConvNet::loss_grad,
            ConvNet::loss_vjp,
            ConvNet::loss_jvp,
            ConvNet::loss_pullback;
            [m];
            (&m, &images, &mask)
        );
    }
    // The head's weights see nothing of a dropped feature: where the mask zeroes a feature in
    // every example, that weight's gradient is zero.
    let g = m.loss_grad(&images, &mask);
    let (mv, gw) = (mask.to_vec(), g.head.weight.to_vec());
    for f in 0..8 {
        if (0..3).all(|s| mv[s * 8 + f] == 0.0) {
            assert_eq!(gw[f], 0.0);
        }
    }
}

#[test]
fn a_dropout_mask_drops_about_p_and_scales_the_rest() {
    let dropout = Dropout::new(0.3);
    let mut rng = Init::new(80);
    let mask = dropout.mask::<f64>(&[100, 100], &mut rng, true).to_vec();
    let kept = mask.iter().filter(|v| **v != 0.0).count();
    assert!((kept as f64 / 10_000.0 - 0.7).abs() < 0.02, "{kept}");
    assert!(mask
        .iter()
        .all(|v| *v == 0.0 || (v - 1.0 / 0.7).abs() < 1e-15));
    // The same seed, the same mask; evaluation, ones.
    let again = dropout
        .mask::<f64>(&[100, 100], &mut Init::new(80), true)
        .to_vec();
    assert_eq!(again, mask);
    let eval = dropout.mask::<f32>(&[4], &mut rng, false).to_vec();
    assert_eq!(eval, [1.0; 4]);
}
