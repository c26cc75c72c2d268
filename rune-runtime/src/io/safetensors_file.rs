//! The safetensors format (Hugging Face's): a JSON header naming each tensor with its dtype,
//! shape and byte range, then the tensors' little-endian, row-major bytes. Read and written by
//! the `safetensors` crate; here, the mapping between a model's leaves and a file's entries.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors, View};

use super::{name_of_path, tensor_names, LoadError};
use crate::element::Element;
use crate::model::Differentiable;
use crate::optim::OptimizerState;
use crate::tensor::Tensor;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// An element type a safetensors file stores: `f32` (dtype `F32`) and `f64` (`F64`).
pub trait SafetensorsElement: Element + sealed::Sealed {
    /// The dtype of the file's entries.
    #[doc(hidden)]
    const DTYPE: Dtype;
    /// Appends `self`'s little-endian bytes to `out`.
    #[doc(hidden)]
    fn push_le_bytes(self, out: &mut Vec<u8>);
    /// The value of `bytes`, little-endian, exactly the element's size.
    #[doc(hidden)]
    fn from_le_slice(bytes: &[u8]) -> Self;
}

macro_rules! safetensors_element {
    ($t:ty, $dtype:ident) => {
        impl SafetensorsElement for $t {
            const DTYPE: Dtype = Dtype::$dtype;
            fn push_le_bytes(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn from_le_slice(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("one element's bytes"))
            }
        }
    };
}

safetensors_element!(f32, F32);
safetensors_element!(f64, F64);

/// One tensor encoded for a file.
struct Encoded {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl Encoded {
    fn of<T: SafetensorsElement>(tensor: &Tensor<T>) -> Self {
        let size = std::mem::size_of::<T>();
        let mut bytes = Vec::with_capacity(tensor.len() * size);
        // Logical row-major order, whatever the memory layout.
        for &x in tensor.view() {
            x.push_le_bytes(&mut bytes);
        }
        Encoded {
            dtype: T::DTYPE,
            shape: tensor.shape().to_vec(),
            bytes,
        }
    }
}

impl View for &Encoded {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// The tensor an entry of the file holds, its dtype and shape already checked.
fn decode<T: SafetensorsElement>(view: &TensorView<'_>) -> Tensor<T> {
    let data = view
        .data()
        .chunks_exact(std::mem::size_of::<T>())
        .map(T::from_le_slice)
        .collect();
    Tensor::from_vec(data, view.shape())
}

/// A file's bytes from named tensors.
fn serialize(entries: &[(String, Encoded)]) -> std::io::Result<Vec<u8>> {
    safetensors::serialize(entries.iter().map(|(name, e)| (name.as_str(), e)), None)
        .map_err(|e| std::io::Error::other(format!("safetensors: {e}")))
}

/// What an entry of the file must be.
struct Expected {
    name: String,
    dtype: Dtype,
    shape: Vec<usize>,
    /// "the model" or "the optimizer", in messages.
    owner: &'static str,
}

/// The entries of a file, by name; a file that is not one gives the error.
fn parse<'a>(what: &str, bytes: &'a [u8]) -> Result<BTreeMap<String, TensorView<'a>>, LoadError> {
    let file = SafeTensors::deserialize(bytes)
        .map_err(|e| LoadError::new(what, vec![format!("not a valid safetensors file: {e}")]))?;
    Ok(file.tensors().into_iter().collect())
}

/// Every problem of `file` against `expected`: missing entries, wrong dtypes or shapes (in the
/// order of `expected`), then entries nobody expects (by name).
fn mismatches(file: &BTreeMap<String, TensorView<'_>>, expected: &[Expected]) -> Vec<String> {
    let mut problems = Vec::new();
    for e in expected {
        let Some(view) = file.get(&e.name) else {
            problems.push(format!(
                "`{}`: missing from the file ({} has {} of shape {:?})",
                e.name, e.owner, e.dtype, e.shape
            ));
            continue;
        };
        let (dtype, shape) = (view.dtype(), view.shape());
        match (dtype == e.dtype, shape == e.shape.as_slice()) {
            (true, true) => {}
            (true, false) => problems.push(format!(
                "`{}`: shape {shape:?} in the file, {:?} in {}",
                e.name, e.shape, e.owner
            )),
            (false, true) => problems.push(format!(
                "`{}`: dtype {dtype} in the file, {} in {}",
                e.name, e.dtype, e.owner
            )),
            (false, false) => problems.push(format!(
                "`{}`: dtype {dtype} and shape {shape:?} in the file, {} and {:?} in {}",
                e.name, e.dtype, e.shape, e.owner
            )),
        }
    }
    let known: BTreeSet<&str> = expected.iter().map(|e| e.name.as_str()).collect();
    // PyTorch's batch norms keep a count of the batches seen beside their running statistics
    // (`num_batches_tracked`, int64), which only matters without a momentum; ours have one.
    let counter = |name: &str| {
        name.strip_suffix("num_batches_tracked")
            .is_some_and(|stem| known.contains(format!("{stem}running_mean").as_str()))
    };
    for (name, view) in file {
        if !known.contains(name.as_str()) && !counter(name) {
            let owner = if name.starts_with("optimizer.") {
                "the optimizer"
            } else {
                "the model"
            };
            problems.push(format!(
                "`{name}`: in the file ({} of shape {:?}) but not in {owner}",
                view.dtype(),
                view.shape()
            ));
        }
    }
    problems
}

/// A model's entries in a file: its leaves, named by [`tensor_names`], then its buffers
/// ([`Differentiable::buffers`]), named the same way.
fn model_entries<D: Differentiable>(model: &D) -> Vec<(String, &Tensor<D::Elem>)> {
    let buffers = model.buffers("");
    tensor_names(model)
        .into_iter()
        .zip(model.leaves())
        .chain(
            buffers
                .into_iter()
                .map(|(path, t)| (name_of_path(&path), t)),
        )
        .collect()
}

/// The entries a model's leaves and buffers must match, their names prefixed by `prefix`.
fn expected_leaves<D>(model: &D, prefix: &str) -> Vec<Expected>
where
    D: Differentiable,
    D::Elem: SafetensorsElement,
{
    model_entries(model)
        .into_iter()
        .map(|(name, leaf)| Expected {
            name: format!("{prefix}{name}"),
            dtype: D::Elem::DTYPE,
            shape: leaf.shape().to_vec(),
            owner: "the model",
        })
        .collect()
}

/// Replaces the leaves of `model`, then its buffers, with the file's entries, in that order.
fn assign_leaves<D>(model: &mut D, views: Vec<&TensorView<'_>>)
where
    D: Differentiable,
    D::Elem: SafetensorsElement,
{
    let mut views = views.into_iter();
    for (leaf, view) in model.leaves_mut().into_iter().zip(&mut views) {
        *leaf = decode(view);
    }
    for ((_, buffer), view) in model.buffers_mut("").into_iter().zip(views) {
        *buffer = decode(view);
    }
}

/// `model`'s leaves as the bytes of a safetensors file, each named by [`tensor_names`]
/// (`layers.0.w`) with dtype `F32` or `F64`, and its buffers after them, named the same way
/// (`bn.running_mean`).
///
/// # Errors
/// When the safetensors crate cannot lay the file out (a header over its 100 MB limit).
pub fn safetensors_bytes<D>(model: &D) -> std::io::Result<Vec<u8>>
where
    D: Differentiable,
    D::Elem: SafetensorsElement,
{
    let entries: Vec<(String, Encoded)> = model_entries(model)
        .into_iter()
        .map(|(name, t)| (name, Encoded::of(t)))
        .collect();
    serialize(&entries)
}

/// Writes `model`'s leaves to a safetensors file at `path` ([`safetensors_bytes`]); PyTorch
/// reads it with `safetensors.torch.load_file(path)` and `model.load_state_dict(..)`.
///
/// # Errors
/// When the file cannot be written.
pub fn save_safetensors<D>(model: &D, path: impl AsRef<Path>) -> std::io::Result<()>
where
    D: Differentiable,
    D::Elem: SafetensorsElement,
{
    std::fs::write(path, safetensors_bytes(model)?)
}

/// Loads the safetensors file at `path` into `model`, whose architecture must be the file's:
/// every leaf's name ([`tensor_names`]) and every buffer's must be in the file, with its dtype
/// and shape, and the file must hold nothing else (but a PyTorch batch norm's
/// `num_batches_tracked` beside a `running_mean`). On any mismatch `model` is left as it was and the error
/// lists every mismatch.
///
/// # Errors
/// When the file cannot be read, is not a safetensors file, or does not match `model`.
pub fn load_safetensors<D>(model: &mut D, path: impl AsRef<Path>) -> Result<(), LoadError>
where
    D: Differentiable,
    D::Elem: SafetensorsElement,
{
    let path = path.as_ref();
    let what = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| LoadError::io(what.clone(), e))?;
    load_leaves(model, &what, &bytes)
}

/// [`load_safetensors`] from the bytes of a file.
///
/// # Errors
/// When `bytes` are not a safetensors file or do not match `model`.
pub fn load_safetensors_bytes<D>(model: &mut D, bytes: &[u8]) -> Result<(), LoadError>
where
    D: Differentiable,
    D::Elem: SafetensorsElement,
{
    load_leaves(model, "safetensors data", bytes)
}

fn load_leaves<D>(model: &mut D, what: &str, bytes: &[u8]) -> Result<(), LoadError>
where
    D: Differentiable,
    D::Elem: SafetensorsElement,
{
    let file = parse(what, bytes)?;
    let expected = expected_leaves(model, "");
    let problems = mismatches(&file, &expected);
    if !problems.is_empty() {
        return Err(LoadError::new(what, problems));
    }
    assign_leaves(model, expected.iter().map(|e| &file[&e.name]).collect());
    Ok(())
}

/// The bytes of a checkpoint: `model`'s leaves and buffers as `model.<name>`, and `optimizer`'s state as
/// `optimizer.<number>` (0-d `F64` tensors: `optimizer.lr`, `optimizer.step`, ...) and
/// `optimizer.<buffer>.<name>` (one per leaf: `optimizer.exp_avg.layers.0.w`).
///
/// # Errors
/// When the safetensors crate cannot lay the file out (a header over its 100 MB limit).
pub fn checkpoint_bytes<D, O>(model: &D, optimizer: &O) -> std::io::Result<Vec<u8>>
where
    D: Differentiable,
    D::Elem: SafetensorsElement,
    O: OptimizerState<Elem = D::Elem>,
{
    let names = tensor_names(model);
    let mut entries: Vec<(String, Encoded)> = model_entries(model)
        .into_iter()
        .map(|(name, t)| (format!("model.{name}"), Encoded::of(t)))
        .collect();
    for (number, value) in optimizer.number_names().iter().zip(optimizer.numbers()) {
        entries.push((
            format!("optimizer.{number}"),
            Encoded::of(&Tensor::scalar(value)),
        ));
    }
    if let Some(buffers) = optimizer.buffers() {
        for (buffer, tensors) in optimizer.buffer_names().iter().zip(buffers) {
            for (name, tensor) in names.iter().zip(tensors) {
                entries.push((format!("optimizer.{buffer}.{name}"), Encoded::of(tensor)));
            }
        }
    }
    serialize(&entries)
}

/// Writes a checkpoint of a training run, `model` and `optimizer`'s state together, to `path`
/// ([`checkpoint_bytes`] says what it holds). [`load_checkpoint`] resumes the run.
///
/// # Errors
/// When the file cannot be written.
pub fn save_checkpoint<D, O>(
    model: &D,
    optimizer: &O,
    path: impl AsRef<Path>,
) -> std::io::Result<()>
where
    D: Differentiable,
    D::Elem: SafetensorsElement,
    O: OptimizerState<Elem = D::Elem>,
{
    std::fs::write(path, checkpoint_bytes(model, optimizer)?)
}

/// Loads a checkpoint that [`save_checkpoint`] wrote into `model` and `optimizer`: the next
/// step is then exactly the one the saved run would have taken. Every entry is checked first
/// (names, dtypes and shapes against `model`, the optimizer's numbers and buffers) and on any
/// mismatch neither is changed and the error lists every one.
///
/// # Errors
/// When the file cannot be read, is not a safetensors file, or does not match `model` and
/// `optimizer`.
pub fn load_checkpoint<D, O>(
    model: &mut D,
    optimizer: &mut O,
    path: impl AsRef<Path>,
) -> Result<(), LoadError>
where
    D: Differentiable,
    D::Elem: SafetensorsElement,
    O: OptimizerState<Elem = D::Elem>,
{
    let path = path.as_ref();
    let what = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| LoadError::io(what.clone(), e))?;
    load_training(model, optimizer, &what, &bytes)
}

/// [`load_checkpoint`] from the bytes of a file.
///
/// # Errors
/// When `bytes` are not a safetensors file or do not match `model` and `optimizer`.
pub fn load_checkpoint_bytes<D, O>(
    model: &mut D,
    optimizer: &mut O,
    bytes: &[u8],
) -> Result<(), LoadError>
where
    D: Differentiable,
    D::Elem: SafetensorsElement,
    O: OptimizerState<Elem = D::Elem>,
{
    load_training(model, optimizer, "checkpoint data", bytes)
}

fn load_training<D, O>(
    model: &mut D,
    optimizer: &mut O,
    what: &str,
    bytes: &[u8],
) -> Result<(), LoadError>
where
    D: Differentiable,
    D::Elem: SafetensorsElement,
    O: OptimizerState<Elem = D::Elem>,
{
    let file = parse(what, bytes)?;
    let leaves = expected_leaves(model, "model.");
    let mut expected: Vec<Expected> = Vec::new();
    for number in optimizer.number_names() {
        expected.push(Expected {
            name: format!("optimizer.{number}"),
            dtype: Dtype::F64,
            shape: Vec::new(),
            owner: "the optimizer",
        });
    }
    // The buffers are all there or all absent (an optimizer before its first step has none).
    let names = tensor_names(model);
    let has_buffers = optimizer.buffer_names().iter().any(|buffer| {
        let prefix = format!("optimizer.{buffer}.");
        file.keys().any(|name| name.starts_with(&prefix))
    });
    let buffers_at = expected.len() + leaves.len();
    if has_buffers {
        for buffer in optimizer.buffer_names() {
            for (name, leaf) in names.iter().zip(&leaves) {
                expected.push(Expected {
                    name: format!("optimizer.{buffer}.{name}"),
                    dtype: D::Elem::DTYPE,
                    shape: leaf.shape.clone(),
                    owner: "the optimizer",
                });
            }
        }
    }
    expected.splice(0..0, leaves);
    let problems = mismatches(&file, &expected);
    if !problems.is_empty() {
        return Err(LoadError::new(what, problems));
    }
    // The model's entries (leaves, then its own buffers) come first.
    let model_count = buffers_at - optimizer.number_names().len();
    let numbers: Vec<f64> = expected[model_count..buffers_at]
        .iter()
        .map(|e| decode::<f64>(&file[&e.name]).item())
        .collect();
    let buffers = has_buffers.then(|| {
        expected[buffers_at..]
            .chunks(names.len().max(1))
            .map(|chunk| chunk.iter().map(|e| decode(&file[&e.name])).collect())
            .collect()
    });
    optimizer
        .restore(&numbers, buffers)
        .map_err(|problem| LoadError::new(what, vec![problem]))?;
    assign_leaves(
        model,
        expected[..model_count]
            .iter()
            .map(|e| &file[&e.name])
            .collect(),
    );
    Ok(())
}
