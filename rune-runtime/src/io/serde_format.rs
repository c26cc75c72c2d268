//! serde support: a [`Tensor`] is its shape and its row-major data, `{"shape": [2, 3], "data":
//! [..]}` in JSON, so a model deriving `Serialize` and `Deserialize` goes to any serde format.
//! A tensor whose data does not fill its shape is refused, naming both; [`from_json`] and
//! [`deserialize`] add the path of the field at fault.

use std::fmt;

use ndarray::{ArrayD, ArrayViewD, IxDyn};
use serde::de::{DeserializeOwned, Error as _};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::tensor::Tensor;

/// The elements of a tensor, as a sequence in row-major order.
struct Elements<'a, T>(ArrayViewD<'a, T>);

impl<T: Serialize> Serialize for Elements<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
}

/// `{shape, data}`, the data in row-major order whatever the memory layout.
impl<T: Serialize> Serialize for Tensor<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut tensor = serializer.serialize_struct("Tensor", 2)?;
        tensor.serialize_field("shape", self.shape())?;
        tensor.serialize_field("data", &Elements(self.view()))?;
        tensor.end()
    }
}

/// A tensor as a file holds it, before its data is checked against its shape.
#[derive(Deserialize)]
#[serde(rename = "Tensor", deny_unknown_fields)]
struct Stored<T> {
    shape: Vec<usize>,
    data: Vec<T>,
}

/// Refuses data that does not fill the shape (or a shape no tensor can have), so that a
/// malformed file never becomes a tensor of another shape.
impl<'de, T: Deserialize<'de>> Deserialize<'de> for Tensor<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Stored { shape, data } = Stored::<T>::deserialize(deserializer)?;
        let holds = shape
            .iter()
            .try_fold(1usize, |n, &axis| n.checked_mul(axis));
        match holds {
            Some(holds) if holds == data.len() => {}
            Some(holds) => {
                return Err(D::Error::custom(format!(
                    "a tensor of shape {shape:?} holds {holds} elements, but its data has {}",
                    data.len()
                )))
            }
            None => {
                return Err(D::Error::custom(format!(
                    "shape {shape:?} holds more elements than a tensor can"
                )))
            }
        }
        ArrayD::from_shape_vec(IxDyn(&shape), data)
            .map(Tensor::from_array)
            .map_err(|e| D::Error::custom(format!("a tensor of shape {shape:?}: {e}")))
    }
}

/// A value that could not be deserialised: where (the path of the field, `layers[1].w`) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeserializeError {
    path: String,
    message: String,
}

impl DeserializeError {
    /// The path of the field at fault (`layers[1].w.data`), `.` for the value itself.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What was wrong, as the format and the tensor said it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for DeserializeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at `{}`: {}", self.path, self.message)
    }
}

impl std::error::Error for DeserializeError {}

/// Deserialises a `D` from any serde deserializer, naming the field at fault in the error.
///
/// ```
/// use rune_runtime::{io, Tensor};
/// let mut json = serde_json::Deserializer::from_str(r#"{"shape": [2, 2], "data": [1.0, 2.0, 3.0]}"#);
/// let error = io::deserialize::<Tensor<f64>, _>(&mut json).unwrap_err();
/// assert_eq!(error.path(), ".");
/// assert!(error.message().starts_with("a tensor of shape [2, 2] holds 4 elements, but its data has 3"));
/// ```
///
/// # Errors
/// When the input is malformed, or is not a `D` (a tensor whose data does not fill its shape).
pub fn deserialize<'de, D, De>(deserializer: De) -> Result<D, DeserializeError>
where
    D: Deserialize<'de>,
    De: Deserializer<'de>,
{
    serde_path_to_error::deserialize(deserializer).map_err(|e| DeserializeError {
        path: e.path().to_string(),
        message: e.into_inner().to_string(),
    })
}

/// Deserialises a `D` from JSON ([`deserialize`]), refusing anything after the value.
///
/// # Errors
/// When the text is malformed, or is not a `D`.
pub fn from_json<D: DeserializeOwned>(text: &str) -> Result<D, DeserializeError> {
    let mut json = serde_json::Deserializer::from_str(text);
    let value = deserialize(&mut json)?;
    json.end().map_err(|e| DeserializeError {
        path: ".".to_owned(),
        message: e.to_string(),
    })?;
    Ok(value)
}
