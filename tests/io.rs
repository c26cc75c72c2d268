//! Models that leave the process: safetensors files (ours read by hand as Python would, and
//! Python's layout written by hand and loaded), checkpoints that resume training bit for bit,
//! serde in JSON and a binary format, and ndarray conversions; every error case by its message.

use rune_ad::ndarray::{arr0, arr2, Array1, Array3, ArrayD, IxDyn};
use rune_ad::optim::Adam;
use rune_ad::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Differentiable, Serialize, Deserialize)]
struct Layer {
    w: Tensor<f32>,
    b: Tensor<f32>,
}

/// A whole small model: hidden layers in a `Vec`, an output layer, and a constant.
#[derive(Clone, Debug, PartialEq, Differentiable, Serialize, Deserialize)]
struct Mlp {
    hidden: Vec<Layer>,
    output: Layer,
    #[nodiff]
    scale: f32,
}

#[differentiable]
impl Layer {
    fn forward(&self, x: &Tensor<f32>) -> Tensor<f32> {
        x.matmul(&self.w) + &self.b
    }
}

#[differentiable]
impl Mlp {
    fn forward(&self, x: &Tensor<f32>) -> Tensor<f32> {
        let mut h = x.clone();
        for layer in &self.hidden {
            h = layer.forward(&h).tanh();
        }
        self.output.forward(&h) * 1.0
    }

    fn loss(&self, #[nodiff] x: &Tensor<f32>, #[nodiff] y: &Tensor<f32>) -> Tensor<f32> {
        let d = self.forward(x) - y;
        (&d * &d).mean()
    }
}

impl Layer {
    fn new(inputs: usize, outputs: usize, seed: u64) -> Layer {
        Layer {
            w: Tensor::rand_normal(&[inputs, outputs], 0.0, 0.5, seed),
            b: Tensor::rand_normal(&[outputs], 0.0, 0.1, seed + 100),
        }
    }
}

/// `3 → 4 → 5 → 2`, drawn from `seed`.
fn mlp(seed: u64) -> Mlp {
    Mlp {
        hidden: vec![Layer::new(3, 4, seed), Layer::new(4, 5, seed + 1)],
        output: Layer::new(5, 2, seed + 2),
        scale: 1.0,
    }
}

fn data() -> (Tensor<f32>, Tensor<f32>) {
    let x = Tensor::rand_normal(&[16, 3], 0.0, 1.0, 7);
    let y = Tensor::rand_normal(&[16, 2], 0.0, 1.0, 8);
    (x, y)
}

/// A path in the system's temporary directory, unique to this process and test.
#[cfg(feature = "safetensors")]
fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("rune-ad-io-{}-{name}", std::process::id()))
}

/// The leaves' bits: equality of two models without `f32`'s `==` forgiving signed zeros.
fn bits(model: &Mlp) -> Vec<Vec<u32>> {
    model
        .leaves()
        .iter()
        .map(|t| t.to_vec().iter().map(|x| x.to_bits()).collect())
        .collect()
}

#[cfg(feature = "safetensors")]
mod safetensors_files {
    use super::*;
    use rune_ad::io::{self, load_safetensors, load_safetensors_bytes, save_safetensors};

    /// A trained model saved and loaded into another of the same architecture is the same
    /// model: same leaves, same outputs.
    #[test]
    fn a_trained_model_round_trips_through_a_file() {
        let (x, y) = data();
        let mut model = mlp(1);
        let mut adam = Adam::new(0.01);
        for _ in 0..20 {
            let grad = model.loss_grad(&x, &y);
            adam.step(&mut model, &grad);
        }
        let path = temp_path("trained.safetensors");
        save_safetensors(&model, &path).unwrap();
        let mut loaded = mlp(50);
        assert_ne!(bits(&loaded), bits(&model));
        load_safetensors(&mut loaded, &path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(bits(&loaded), bits(&model));
        assert_eq!(loaded.forward(&x).to_vec(), model.forward(&x).to_vec());
    }

    /// Our file read as Python's `safetensors` reads it: an 8-byte little-endian header
    /// length, a JSON header of names, dtypes, shapes and byte ranges, then little-endian data.
    #[test]
    fn the_file_is_in_python_layout() {
        let model = mlp(3);
        let bytes = io::safetensors_bytes(&model).unwrap();
        let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + header_len]).unwrap();
        let data = &bytes[8 + header_len..];
        let names = [
            "hidden.0.w",
            "hidden.0.b",
            "hidden.1.w",
            "hidden.1.b",
            "output.w",
            "output.b",
        ];
        assert_eq!(io::tensor_names(&model), names);
        let entries = header.as_object().unwrap();
        assert_eq!(entries.len(), names.len());
        for (name, leaf) in names.iter().zip(model.leaves()) {
            let entry = &entries[*name];
            assert_eq!(entry["dtype"], "F32");
            let shape: Vec<usize> = serde_json::from_value(entry["shape"].clone()).unwrap();
            assert_eq!(shape, leaf.shape());
            let offsets: Vec<usize> =
                serde_json::from_value(entry["data_offsets"].clone()).unwrap();
            let values: Vec<f32> = data[offsets[0]..offsets[1]]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                .collect();
            assert_eq!(values, leaf.to_vec(), "{name}");
        }
    }

    /// A file as PyTorch's `save_file(model.state_dict(), ..)` writes it, byte by byte: header
    /// with `__metadata__`, padded with spaces to 8 bytes, tensors in its order.
    fn python_file(entries: &[(&str, &str, &[usize], Vec<u8>)]) -> Vec<u8> {
        let mut header = String::from(r#"{"__metadata__":{"format":"pt"}"#);
        let mut offset = 0;
        for (name, dtype, shape, data) in entries {
            header += &format!(
                r#","{name}":{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{offset},{}]}}"#,
                offset + data.len()
            );
            offset += data.len();
        }
        header.push('}');
        while header.len() % 8 != 0 {
            header.push(' ');
        }
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend(header.as_bytes());
        for (_, _, _, data) in entries {
            file.extend(data);
        }
        file
    }

    fn le_f32(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn le_f64(values: &[f64]) -> Vec<u8> {
        values.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn a_file_in_python_layout_loads() {
        // 1.0f32 is 0x3f800000: little-endian, its bytes are 00 00 80 3f.
        assert_eq!(le_f32(&[1.0]), [0x00, 0x00, 0x80, 0x3f]);
        let w: Vec<f32> = (0..6).map(|i| i as f32 * 0.25 - 0.5).collect();
        let b = [1.5_f32, -2.0];
        let file = python_file(&[
            ("layers.1.b", "F32", &[2], le_f32(&b)),
            ("layers.0.w", "F32", &[3, 2], le_f32(&w)),
            ("layers.0.b", "F32", &[2], le_f32(&[0.0, 1.0])),
            ("layers.1.w", "F32", &[2, 2], le_f32(&[1.0, 2.0, 3.0, 4.0])),
        ]);

        #[derive(Clone, Differentiable)]
        struct Net {
            layers: Vec<Layer>,
        }
        let mut net = Net {
            layers: vec![Layer::new(3, 2, 1), Layer::new(2, 2, 2)],
        };
        load_safetensors_bytes(&mut net, &file).unwrap();
        assert_eq!(net.layers[0].w.shape(), &[3, 2]);
        assert_eq!(net.layers[0].w.to_vec(), w);
        assert_eq!(net.layers[0].b.to_vec(), [0.0, 1.0]);
        assert_eq!(net.layers[1].w.to_vec(), [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(net.layers[1].b.to_vec(), b);
        // Row-major: w[i][j] is element 2i + j.
        assert_eq!(net.layers[0].w.as_array()[[2, 1]], w[5]);

        // And at f64.
        let mut w64 = Tensor::<f64>::zeros(&[2, 2]);
        let file = python_file(&[("", "F64", &[2, 2], le_f64(&[0.1, 0.2, 0.3, 1e300]))]);
        load_safetensors_bytes(&mut w64, &file).unwrap();
        assert_eq!(w64.to_vec(), [0.1, 0.2, 0.3, 1e300]);
    }

    /// Every mismatch at once, each naming the tensor, what the file has and what the model
    /// expects; and the model untouched.
    #[test]
    fn mismatches_are_all_reported_and_the_model_is_untouched() {
        let file = python_file(&[
            ("hidden.0.w", "F32", &[4, 3], le_f32(&[0.0; 12])),
            ("hidden.0.b", "F64", &[4], le_f64(&[0.0; 4])),
            ("hidden.1.w", "F64", &[5], le_f64(&[0.0; 5])),
            ("output.w", "F32", &[5, 2], le_f32(&[0.0; 10])),
            ("output.b", "F32", &[2], le_f32(&[0.0; 2])),
            ("hidden.2.w", "F32", &[5, 5], le_f32(&[0.0; 25])),
        ]);
        let mut model = mlp(1);
        let before = bits(&model);
        let error = load_safetensors_bytes(&mut model, &file).unwrap_err();
        assert_eq!(
            error.problems(),
            [
                "`hidden.0.w`: shape [4, 3] in the file, [3, 4] in the model",
                "`hidden.0.b`: dtype F64 in the file, F32 in the model",
                "`hidden.1.w`: dtype F64 and shape [5] in the file, F32 and [4, 5] in the model",
                "`hidden.1.b`: missing from the file (the model has F32 of shape [5])",
                "`hidden.2.w`: in the file (F32 of shape [5, 5]) but not in the model",
            ]
        );
        assert!(error
            .to_string()
            .starts_with("cannot load safetensors data: 5 problems\n  - `hidden.0.w`: shape"));
        assert_eq!(bits(&model), before);
    }

    #[test]
    fn a_truncated_or_missing_file_is_an_error() {
        let bytes = io::safetensors_bytes(&mlp(1)).unwrap();
        let mut model = mlp(2);
        let before = bits(&model);
        for cut in [0, 5, 20, bytes.len() - 1] {
            let error = load_safetensors_bytes(&mut model, &bytes[..cut]).unwrap_err();
            assert!(
                error
                    .to_string()
                    .starts_with("cannot load safetensors data: not a valid safetensors file: "),
                "{error}"
            );
        }
        assert_eq!(bits(&model), before);
        let path = temp_path("absent.safetensors");
        let error = load_safetensors(&mut model, &path).unwrap_err();
        assert!(error
            .to_string()
            .starts_with(&format!("cannot load {}: ", path.display())));
        assert!(std::error::Error::source(&error).is_some());
    }
}

#[cfg(feature = "safetensors")]
mod resuming {
    use super::*;
    use rune_ad::io::{load_checkpoint, load_checkpoint_bytes, save_checkpoint};
    use rune_ad::optim::{OptimizerState, Sgd};

    /// `steps` steps of `optimizer` on a minibatch that changes each step.
    fn train<O>(model: &mut Mlp, optimizer: &mut O, steps: std::ops::Range<u64>)
    where
        O: FnMut(&mut Mlp, &Mlp),
    {
        for step in steps {
            let x = Tensor::rand_normal(&[8, 3], 0.0, 1.0, 1000 + step);
            let y = Tensor::rand_normal(&[8, 2], 0.0, 1.0, 2000 + step);
            let grad = model.loss_grad(&x, &y);
            optimizer(model, &grad);
        }
    }

    /// A run stopped after 7 of 15 steps and resumed from its checkpoint in a fresh model and
    /// optimizer ends with the very bits of a run that never stopped.
    #[test]
    fn adam_resumes_bit_for_bit() {
        let mut straight = mlp(1);
        let mut adam = Adam::new(0.01_f32).betas(0.8, 0.99);
        train(&mut straight, &mut |m, g| adam.step(m, g), 0..15);

        let mut first = mlp(1);
        let mut adam = Adam::new(0.01_f32).betas(0.8, 0.99);
        train(&mut first, &mut |m, g| adam.step(m, g), 0..7);
        let path = temp_path("adam.safetensors");
        save_checkpoint(&first, &adam, &path).unwrap();
        drop((first, adam));

        let mut resumed = mlp(99);
        let mut adam = Adam::new(0.5_f32);
        load_checkpoint(&mut resumed, &mut adam, &path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!((adam.lr, adam.beta1, adam.beta2), (0.01, 0.8, 0.99));
        assert_eq!(adam.numbers()[5], 7.0, "the step count");
        train(&mut resumed, &mut |m, g| adam.step(m, g), 7..15);
        assert_eq!(bits(&resumed), bits(&straight));
    }

    /// Without the optimizer's state the resumed run differs: the test above can fail.
    #[test]
    fn resuming_without_the_moments_differs() {
        let mut straight = mlp(1);
        let mut adam = Adam::new(0.01_f32);
        train(&mut straight, &mut |m, g| adam.step(m, g), 0..10);
        let mut resumed = mlp(1);
        let mut adam = Adam::new(0.01_f32);
        train(&mut resumed, &mut |m, g| adam.step(m, g), 0..5);
        let mut adam = Adam::new(0.01_f32);
        train(&mut resumed, &mut |m, g| adam.step(m, g), 5..10);
        assert_ne!(bits(&resumed), bits(&straight));
    }

    #[test]
    fn sgd_with_momentum_resumes_bit_for_bit() {
        let mut straight = mlp(1);
        let mut sgd = Sgd::new(0.05_f32).momentum(0.9);
        train(&mut straight, &mut |m, g| sgd.step(m, g), 0..12);
        let mut resumed = mlp(1);
        let mut sgd = Sgd::new(0.05_f32).momentum(0.9);
        train(&mut resumed, &mut |m, g| sgd.step(m, g), 0..4);
        let bytes = rune_ad::io::checkpoint_bytes(&resumed, &sgd).unwrap();
        let (mut resumed, mut sgd) = (mlp(5), Sgd::new(1.0_f32));
        load_checkpoint_bytes(&mut resumed, &mut sgd, &bytes).unwrap();
        train(&mut resumed, &mut |m, g| sgd.step(m, g), 4..12);
        assert_eq!(bits(&resumed), bits(&straight));
    }

    /// A checkpoint taken before the first step has no moments, and loading it clears any.
    #[test]
    fn a_checkpoint_before_the_first_step_has_no_moments() {
        let fresh = Adam::new(0.01_f32);
        let bytes = rune_ad::io::checkpoint_bytes(&mlp(1), &fresh).unwrap();
        let mut model = mlp(2);
        let mut adam = Adam::new(0.01_f32);
        train(&mut model, &mut |m, g| adam.step(m, g), 0..3);
        assert!(adam.buffers().is_some());
        load_checkpoint_bytes(&mut model, &mut adam, &bytes).unwrap();
        assert!(adam.buffers().is_none());
        assert_eq!(bits(&model), bits(&mlp(1)));
    }

    /// A network of batch norms in a `Vec` and behind a box: a user's `#[buffer]` and
    /// `BatchNorm`'s running statistics, wherever they sit, go into a checkpoint after the
    /// leaves and come back, and a resumed run goes on bit for bit.
    #[derive(Clone, Differentiable)]
    struct Normed {
        norms: Vec<rune_ad::nn::BatchNorm<f32>>,
        tail: rune_ad::nn::Sequential<f32>,
        /// A user's buffer: a count of examples per feature, say.
        #[buffer]
        seen: Tensor<f32>,
    }

    #[differentiable]
    fn normed_loss(m: &Normed, #[nodiff] x: &Tensor<f32>) -> Tensor<f32> {
        let mut h = x.clone();
        for bn in &m.norms {
            h = bn.forward(&h).tanh();
        }
        m.tail.forward(&h).square().mean()
    }

    fn normed(seed: u64) -> Normed {
        let mut init = rune_ad::nn::Init::new(seed);
        Normed {
            norms: vec![
                rune_ad::nn::BatchNorm::new(3),
                rune_ad::nn::BatchNorm::new(3),
            ],
            tail: rune_ad::nn::Sequential::new()
                .push(rune_ad::nn::Linear::new(3, 3, &mut init))
                .push(rune_ad::nn::BatchNorm::new(3)),
            seen: Tensor::zeros(&[3]),
        }
    }

    /// One step: the running statistics and the user's count move, then Adam.
    fn normed_step(m: &mut Normed, adam: &mut Adam<f32>, step: u64) {
        let x = rune_ad::nn::Init::new(100 + step).uniform::<f32>(&[5, 3], 1.0);
        let g = normed_loss_grad(m, &x);
        let mut h = x.clone();
        for bn in &mut m.norms {
            bn.update_stats(&h);
            h = bn.forward(&h).tanh();
        }
        m.seen = &m.seen + 5.0;
        adam.step(m, &g);
    }

    #[test]
    fn buffers_in_a_vec_and_behind_a_box_resume_bit_for_bit() {
        let mut straight = normed(1);
        let mut adam = Adam::new(0.01_f32);
        (0..6).for_each(|k| normed_step(&mut straight, &mut adam, k));
        let paths: Vec<String> = straight.buffers("").into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            paths,
            [
                "norms[0].running_mean",
                "norms[0].running_var",
                "norms[1].running_mean",
                "norms[1].running_var",
                "tail.layers[1].running_mean",
                "tail.layers[1].running_var",
                "seen",
            ]
        );
        let mut first = normed(1);
        let mut adam = Adam::new(0.01_f32);
        (0..3).for_each(|k| normed_step(&mut first, &mut adam, k));
        let bytes = rune_ad::io::checkpoint_bytes(&first, &adam).unwrap();
        let (mut resumed, mut adam) = (normed(7), Adam::new(0.5_f32));
        load_checkpoint_bytes(&mut resumed, &mut adam, &bytes).unwrap();
        assert_eq!(resumed.seen.to_vec(), [15.0; 3]);
        (3..6).for_each(|k| normed_step(&mut resumed, &mut adam, k));
        let state = |m: &Normed| -> Vec<u32> {
            let buffers = m.buffers("");
            m.leaves()
                .into_iter()
                .chain(buffers.into_iter().map(|(_, t)| t))
                .flat_map(|t| t.to_vec())
                .map(f32::to_bits)
                .collect()
        };
        assert_eq!(state(&resumed), state(&straight));
        // The running statistics moved: the comparison above covers them.
        assert_ne!(straight.norms[1].running_var.to_vec(), [1.0; 3]);
    }

    #[test]
    fn a_checkpoint_of_another_optimizer_or_model_is_refused() {
        let mut model = mlp(1);
        let mut sgd = Sgd::new(0.1_f32).momentum(0.5);
        train(&mut model, &mut |m, g| sgd.step(m, g), 0..2);
        let bytes = rune_ad::io::checkpoint_bytes(&model, &sgd).unwrap();

        let mut adam = Adam::new(0.01_f32);
        let error = load_checkpoint_bytes(&mut mlp(1), &mut adam, &bytes).unwrap_err();
        let problems = error.problems();
        assert_eq!(
            &problems[..4],
            [
                "`optimizer.beta1`: missing from the file (the optimizer has F64 of shape [])",
                "`optimizer.beta2`: missing from the file (the optimizer has F64 of shape [])",
                "`optimizer.eps`: missing from the file (the optimizer has F64 of shape [])",
                "`optimizer.momentum`: in the file (F64 of shape []) but not in the optimizer",
            ]
        );
        assert!(problems.contains(
            &"`optimizer.nesterov`: in the file (F64 of shape []) but not in the optimizer"
                .to_owned()
        ));
        assert!(problems.contains(
            &"`optimizer.momentum`: in the file (F64 of shape []) but not in the optimizer"
                .to_owned()
        ));
        assert!(problems.contains(
            &"`optimizer.momentum_buffer.hidden.0.w`: in the file (F32 of shape [3, 4]) but not \
              in the optimizer"
                .to_owned()
        ));
        assert!(adam.buffers().is_none());

        let mut small = Mlp {
            hidden: vec![Layer::new(3, 4, 1)],
            output: Layer::new(4, 2, 3),
            scale: 1.0,
        };
        let error = load_checkpoint_bytes(&mut small, &mut sgd, &bytes).unwrap_err();
        assert_eq!(
            error.problems()[0],
            "`model.output.w`: shape [5, 2] in the file, [4, 2] in the model"
        );
        assert!(error.problems().contains(
            &"`optimizer.momentum_buffer.hidden.1.b`: in the file (F32 of shape [5]) but not in \
              the optimizer"
                .to_owned()
        ));
    }
}

mod serde_formats {
    use super::*;
    use rune_ad::io::{deserialize, from_json};

    #[test]
    fn tensors_of_every_element_type_round_trip_through_json() {
        let f = Tensor::from_vec(vec![0.1_f32, -2.5, 3.0e-7, 1.0e30, 0.0, -0.0], &[2, 3]);
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(
            json,
            r#"{"shape":[2,3],"data":[0.1,-2.5,3e-7,1e+30,0.0,-0.0]}"#
        );
        let back: Tensor<f32> = from_json(&json).unwrap();
        assert_eq!(back.shape(), f.shape());
        let to_bits = |t: &Tensor<f32>| t.to_vec().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(to_bits(&back), to_bits(&f));

        let d = Tensor::from_vec(vec![0.1_f64, std::f64::consts::PI, 1e-310], &[3, 1]);
        let back: Tensor<f64> = from_json(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(back, d);

        let i = Tensor::from_vec(vec![i64::MIN, -1, 0, i64::MAX], &[2, 2]);
        assert_eq!(
            serde_json::to_string(&i).unwrap(),
            r#"{"shape":[2,2],"data":[-9223372036854775808,-1,0,9223372036854775807]}"#
        );
        let back: Tensor<i64> = from_json(&serde_json::to_string(&i).unwrap()).unwrap();
        assert_eq!(back, i);

        let b = Tensor::from_vec(vec![true, false], &[2]);
        let back: Tensor<bool> = from_json(&serde_json::to_string(&b).unwrap()).unwrap();
        assert_eq!(back, b);

        let s = Tensor::scalar(2.0_f64);
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"shape":[],"data":[2.0]}"#
        );
        let back: Tensor<f64> = from_json(r#"{"shape":[],"data":[2.0]}"#).unwrap();
        assert_eq!((back.shape(), back.item()), (&[][..], 2.0));
    }

    /// A transposed tensor (not row-major in memory) serialises in row-major order.
    #[test]
    fn a_strided_tensor_serialises_row_major() {
        let t = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).t();
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            r#"{"shape":[3,2],"data":[1.0,4.0,2.0,5.0,3.0,6.0]}"#
        );
    }

    #[test]
    fn a_trained_model_round_trips_through_json_and_postcard() {
        let (x, y) = data();
        let mut model = mlp(1);
        model.scale = 0.5;
        let mut adam = Adam::new(0.01);
        for _ in 0..5 {
            let grad = model.loss_grad(&x, &y);
            adam.step(&mut model, &grad);
        }
        let json = serde_json::to_string(&model).unwrap();
        let from_text: Mlp = from_json(&json).unwrap();
        assert_eq!(bits(&from_text), bits(&model));
        assert_eq!(from_text.scale, 0.5);

        let binary = postcard::to_allocvec(&model).unwrap();
        let from_binary: Mlp = postcard::from_bytes(&binary).unwrap();
        assert_eq!(bits(&from_binary), bits(&model));
        assert_eq!(from_binary, model);
        // Four bytes a number, and little more.
        let numbers: usize = model.leaves().iter().map(|t| t.len()).sum();
        assert!(binary.len() < numbers * 4 + 64, "{} bytes", binary.len());
    }

    #[test]
    fn data_that_does_not_fill_its_shape_names_the_field_and_the_shape() {
        let mut model: serde_json::Value = serde_json::to_value(mlp(1)).unwrap();
        model["hidden"][1]["w"]["data"]
            .as_array_mut()
            .unwrap()
            .pop();
        let error = from_json::<Mlp>(&model.to_string()).unwrap_err();
        assert_eq!(error.path(), "hidden[1].w");
        assert!(
            error
                .message()
                .starts_with("a tensor of shape [4, 5] holds 20 elements, but its data has 19"),
            "{error}"
        );
        assert!(error
            .to_string()
            .starts_with("at `hidden[1].w`: a tensor of shape [4, 5]"));

        let mut model: serde_json::Value = serde_json::to_value(mlp(1)).unwrap();
        model["output"]["b"]["shape"] = serde_json::json!([3]);
        let error = from_json::<Mlp>(&model.to_string()).unwrap_err();
        assert_eq!(error.path(), "output.b");
        assert!(error
            .message()
            .starts_with("a tensor of shape [3] holds 3 elements, but its data has 2"));

        let huge = r#"{"shape":[4294967296,4294967296,4294967296],"data":[]}"#;
        let error = from_json::<Tensor<f32>>(huge).unwrap_err();
        assert!(error.message().starts_with(
            "shape [4294967296, 4294967296, 4294967296] holds more elements than a tensor can"
        ));
    }

    #[test]
    fn malformed_or_truncated_json_names_the_field() {
        let json = serde_json::to_string(&mlp(1)).unwrap();
        let cut = json.find(r#""output""#).unwrap() + 30;
        let error = from_json::<Mlp>(&json[..cut]).unwrap_err();
        assert!(error.path().starts_with("output.w"), "{error}");
        assert!(error.message().starts_with("EOF while parsing"), "{error}");

        let error = from_json::<Tensor<f64>>(r#"{"shape":[2],"data":[1.0,"x"]}"#).unwrap_err();
        assert_eq!(error.path(), "data[1]");
        assert!(error
            .message()
            .starts_with("invalid type: string \"x\", expected f64"));

        let error =
            from_json::<Tensor<f64>>(r#"{"shape":[1],"data":[1.0],"dtype":"f64"}"#).unwrap_err();
        assert!(
            error.message().starts_with("unknown field `dtype`"),
            "{error}"
        );

        let error = from_json::<Tensor<f64>>(r#"{"shape":[1]}"#).unwrap_err();
        assert!(
            error.message().starts_with("missing field `data`"),
            "{error}"
        );

        let error = from_json::<Tensor<f64>>(r#"{"shape":[1],"data":[1.0]} 3"#).unwrap_err();
        assert!(
            error.message().starts_with("trailing characters"),
            "{error}"
        );
    }

    /// Every prefix of a binary file is refused with an error, never a panic or a model.
    #[test]
    fn every_truncation_of_a_binary_file_is_an_error() {
        let binary = postcard::to_allocvec(&mlp(1)).unwrap();
        for cut in 0..binary.len() {
            let result: Result<Mlp, _> =
                deserialize(&mut postcard::Deserializer::from_bytes(&binary[..cut]));
            let error = result.unwrap_err();
            assert!(
                error.message().contains("end of")
                    || error.message().starts_with("a tensor of shape"),
                "cut at {cut}: {error}"
            );
        }
    }

    /// The optimizer serialises too: a run resumed from a postcard copy of its model and
    /// Adam ends with the bits of one that never stopped.
    #[test]
    fn adam_round_trips_through_postcard_and_resumes_bit_for_bit() {
        let (x, y) = data();
        let mut straight = mlp(1);
        let mut adam = Adam::new(0.01_f32);
        for _ in 0..8 {
            let grad = straight.loss_grad(&x, &y);
            adam.step(&mut straight, &grad);
        }
        let mut model = mlp(1);
        let mut adam = Adam::new(0.01_f32);
        for _ in 0..3 {
            let grad = model.loss_grad(&x, &y);
            adam.step(&mut model, &grad);
        }
        let saved = postcard::to_allocvec(&(&model, &adam)).unwrap();
        let (mut model, mut adam): (Mlp, Adam<f32>) = postcard::from_bytes(&saved).unwrap();
        for _ in 3..8 {
            let grad = model.loss_grad(&x, &y);
            adam.step(&mut model, &grad);
        }
        assert_eq!(bits(&model), bits(&straight));
        let json = serde_json::to_string(&adam).unwrap();
        assert!(
            json.starts_with(
                r#"{"lr":0.01,"beta1":0.9,"beta2":0.999,"eps":1e-8,"weight_decay":0.0,"schedule":null,"state":{"steps":8,"#
            ),
            "{json}"
        );
    }
}

mod ndarray_interop {
    use super::*;

    #[test]
    fn arrays_of_any_dimension_convert_without_copies() {
        let a = arr2(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
        let pointer = a.as_ptr();
        let t = Tensor::from(a);
        assert_eq!(t.shape(), &[2, 3]);
        assert_eq!(t.as_slice().unwrap().as_ptr(), pointer, "moved, not copied");
        assert_eq!(t.to_vec(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);

        let t: Tensor<f32> =
            Array3::from_shape_fn((2, 1, 3), |(i, _, k)| (i * 3 + k) as f32).into();
        assert_eq!(t.shape(), &[2, 1, 3]);
        assert_eq!(t.to_vec(), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let t = Tensor::from(arr0(7_i64));
        assert_eq!((t.shape(), t.item()), (&[][..], 7));
        let t = Tensor::from(Array1::from(vec![true, false]));
        assert_eq!(t.to_vec(), [true, false]);

        // A view is copied.
        let a = arr2(&[[1.0, 2.0], [3.0, 4.0]]);
        let t = Tensor::from(&a.t());
        assert_eq!(t.to_vec(), [1.0, 3.0, 2.0, 4.0]);
    }

    #[test]
    fn tensors_convert_back_without_copies_where_they_can() {
        let t = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
        let pointer = t.as_slice().unwrap().as_ptr();
        let view = t.as_array();
        assert_eq!(view.as_ptr(), pointer, "a view");
        assert_eq!(view[[1, 0]], 3.0);

        // The only owner gives its storage away; a shared one is copied and left as it was.
        let shared = t.clone();
        let copied = t.into_array();
        assert_ne!(copied.as_ptr(), pointer);
        let owned: ArrayD<f64> = shared.into();
        assert_eq!(owned.as_ptr(), pointer, "moved, not copied");
        assert_eq!(owned.shape(), &[2, 2]);
        assert_eq!(copied, owned);

        let t = Tensor::from_vec(vec![5_i64, 6, 7], &[3]);
        let pointer = t.as_slice().unwrap().as_ptr();
        let v: Vec<i64> = t.into();
        assert_eq!((v.as_slice(), v.as_ptr()), (&[5, 6, 7][..], pointer));

        // Not row-major in memory: copied, in row-major order.
        let t = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).t();
        assert!(t.as_slice().is_none());
        assert_eq!(t.clone().into_vec(), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(
            t.to_array(),
            ArrayD::from_shape_vec(IxDyn(&[3, 2]), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]).unwrap()
        );
    }

    #[test]
    fn vecs_and_slices_become_1d_tensors() {
        let v = vec![1.5_f32, 2.5];
        let pointer = v.as_ptr();
        let t = Tensor::from(v);
        assert_eq!(
            (t.shape(), t.as_slice().unwrap().as_ptr()),
            (&[2][..], pointer)
        );
        let t = Tensor::from(&[1.0_f64, 2.0, 3.0][..]);
        assert_eq!((t.shape(), t.to_vec()), (&[3][..], vec![1.0, 2.0, 3.0]));
        let t: Tensor<f64> = Vec::new().into();
        assert_eq!((t.shape(), t.len()), (&[0][..], 0));
    }
}
