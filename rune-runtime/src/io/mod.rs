//! Models that leave the process: saving a [`Differentiable`] structure and loading it back,
//! in the formats other frameworks read.
//!
//! - **safetensors** (feature `safetensors`, on by default): `save_safetensors` writes a
//!   model's leaves as a `.safetensors` file named by [`tensor_names`] (`layers.0.w`, PyTorch's
//!   `state_dict` names), which PyTorch and Hugging Face load as they are;
//!   `load_safetensors` reads one back into a model, checking every name, dtype and shape
//!   first and reporting every mismatch at once. `save_checkpoint` and `load_checkpoint`
//!   keep an optimizer's state beside the model, so that training resumes exactly where it
//!   stopped.
//! - **serde** (feature `serde`): `Tensor<T>` serialises as its shape and its data, so a model
//!   deriving `Serialize`/`Deserialize` goes to any serde format. `from_json` and
//!   `deserialize` name the field at fault when a file is malformed.
//!
//! The leaves (the differentiated tensors) go to a safetensors file, and after them the buffers
//! (`#[buffer]` fields: a batch norm's running statistics, PyTorch's buffers); other
//! `#[nodiff]` fields are part of the model's code, not of its state, and loading leaves them
//! as they are.
//! Loading fills a model that the program has built with the right architecture (its `Vec`s of
//! layers of the right lengths), as PyTorch's `load_state_dict` does, and leaves it untouched
//! when anything does not match.

use crate::model::Differentiable;

#[cfg(feature = "safetensors")]
mod safetensors_file;
#[cfg(feature = "serde")]
mod serde_format;

#[cfg(feature = "safetensors")]
pub use self::safetensors_file::{
    checkpoint_bytes, load_checkpoint, load_checkpoint_bytes, load_safetensors,
    load_safetensors_bytes, safetensors_bytes, save_checkpoint, save_safetensors,
    SafetensorsElement,
};
#[cfg(feature = "serde")]
pub use self::serde_format::{deserialize, from_json, DeserializeError};

/// The name of each leaf of `model` in a saved file, in leaf order: its path with indices as
/// dotted segments, `layers.0.w` for `layers[0].w`, as PyTorch names a `state_dict`'s entries.
///
/// ```
/// use rune_runtime::{io::tensor_names, Tensor};
/// let layers = vec![Tensor::<f64>::zeros(&[2]), Tensor::zeros(&[3])];
/// assert_eq!(tensor_names(&layers), vec!["0", "1"]);
/// ```
pub fn tensor_names<D: Differentiable>(model: &D) -> Vec<String> {
    model
        .leaf_paths("")
        .iter()
        .map(|p| name_of_path(p))
        .collect()
}

/// `layers[0].w` → `layers.0.w`; `[1].b` → `1.b`.
pub(crate) fn name_of_path(path: &str) -> String {
    let mut name = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '[' if name.is_empty() => {}
            '[' => name.push('.'),
            ']' => {}
            c => name.push(c),
        }
    }
    name
}

/// Why a model could not be loaded: every problem found, each naming the tensor (or field) and,
/// for a mismatch, what the file holds and what the model expects.
#[cfg(feature = "safetensors")]
#[derive(Debug)]
pub struct LoadError {
    what: String,
    problems: Vec<String>,
    source: Option<std::io::Error>,
}

#[cfg(feature = "safetensors")]
impl LoadError {
    /// Problems found in `what` (a file's path, or a description of a buffer).
    pub(crate) fn new(what: impl Into<String>, problems: Vec<String>) -> Self {
        LoadError {
            what: what.into(),
            problems,
            source: None,
        }
    }

    /// The file `what` could not be read.
    pub(crate) fn io(what: impl Into<String>, error: std::io::Error) -> Self {
        LoadError {
            what: what.into(),
            problems: vec![error.to_string()],
            source: Some(error),
        }
    }

    /// Each problem, one sentence each (`` `layers.0.w`: shape [3, 2] in the file, the model's
    /// is [2, 3] ``): names in the model's leaf order first, then names the model lacks.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}

#[cfg(feature = "safetensors")]
impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.problems.as_slice() {
            [one] => write!(f, "cannot load {}: {one}", self.what),
            all => {
                write!(f, "cannot load {}: {} problems", self.what, all.len())?;
                for problem in all {
                    write!(f, "\n  - {problem}")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(feature = "safetensors")]
impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::name_of_path;

    #[test]
    fn paths_become_dotted_names() {
        assert_eq!(name_of_path("layers[0].w"), "layers.0.w");
        assert_eq!(name_of_path("blocks[2].heads[1].q"), "blocks.2.heads.1.q");
        assert_eq!(name_of_path("[3].b"), "3.b");
        assert_eq!(name_of_path("w"), "w");
    }
}
