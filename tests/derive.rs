//! `#[derive(Differentiable)]`: leaves in declaration order through nested structs, `Vec`s and
//! arrays, `#[nodiff]` fields kept as constants, generic and tuple structs, and the provided
//! leafwise arithmetic.

use rune_ad::prelude::*;

#[derive(Clone, Debug, PartialEq, Differentiable)]
struct Layer<T: Element> {
    w: Tensor<T>,
    b: Tensor<T>,
}

#[derive(Clone, Debug, PartialEq, Differentiable)]
struct Encoder {
    #[nodiff]
    name: String,
    w: Tensor<f64>,
}

#[derive(Clone, Debug, PartialEq, Differentiable)]
struct Model {
    enc: Encoder,
    layers: Vec<Layer<f64>>,
    #[nodiff]
    dropout: f64,
    heads: [Tensor<f64>; 2],
}

#[derive(Clone, Debug, PartialEq, Differentiable)]
struct Pair(Tensor<f32>, #[nodiff] usize, Layer<f32>);

/// Generic over a whole parameter type, not only the element, with a where-clause of its own.
#[derive(Clone, Debug, PartialEq, Differentiable)]
struct Ensemble<P>
where
    P: std::fmt::Debug,
{
    members: Vec<P>,
    #[nodiff]
    weights: Vec<f64>,
}

/// No field's type shows the element type: it is read from `Encoder`'s.
#[derive(Clone, Debug, PartialEq, Differentiable)]
struct Twin {
    left: Encoder,
    right: Vec<Encoder>,
}

#[derive(Clone, Debug, PartialEq, Differentiable)]
struct Keyword {
    r#type: Tensor<f64>,
}

fn t(data: &[f64]) -> Tensor<f64> {
    Tensor::from_vec(data.to_vec(), &[data.len()])
}

fn layer(w: &[f64], b: &[f64]) -> Layer<f64> {
    Layer { w: t(w), b: t(b) }
}

fn model() -> Model {
    Model {
        enc: Encoder {
            name: "encoder".to_owned(),
            w: Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]),
        },
        layers: vec![layer(&[5.0, 6.0], &[7.0]), layer(&[8.0], &[9.0, 10.0])],
        dropout: 0.5,
        heads: [t(&[11.0]), t(&[12.0, 13.0])],
    }
}

fn flat(value: &impl Differentiable<Elem = f64>) -> Vec<f64> {
    value
        .leaves()
        .iter()
        .flat_map(|leaf| leaf.to_vec())
        .collect()
}

#[test]
fn leaves_come_in_declaration_order_through_nesting() {
    let m = model();
    assert_eq!(flat(&m), (1..=13).map(f64::from).collect::<Vec<_>>());
    let shapes: Vec<_> = m.leaves().iter().map(|l| l.shape().to_vec()).collect();
    let expected: [&[usize]; 7] = [&[2, 2], &[2], &[1], &[1], &[2], &[1], &[2]];
    assert_eq!(shapes, expected);
}

#[test]
fn leaf_paths_name_fields_indices_and_nesting() {
    let m = model();
    assert_eq!(
        m.leaf_paths(""),
        [
            "enc.w",
            "layers[0].w",
            "layers[0].b",
            "layers[1].w",
            "layers[1].b",
            "heads[0]",
            "heads[1]",
        ]
    );
    assert_eq!(m.leaf_paths("model")[1], "model.layers[0].w");
    assert_eq!(m.layers.leaf_paths("layers")[3], "layers[1].b");
    assert_eq!(m.leaf_paths("").len(), m.leaves().len());
}

#[test]
fn leaves_mut_writes_through_in_the_same_order() {
    let mut m = model();
    for (i, leaf) in m.leaves_mut().into_iter().enumerate() {
        *leaf *= (i + 1) as f64;
    }
    assert_eq!(m.enc.w, Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]));
    assert_eq!(m.layers[0].b, t(&[21.0]));
    assert_eq!(m.heads[1], t(&[84.0, 91.0]));
}

#[test]
fn zeros_like_zeroes_leaves_and_clones_constants() {
    let m = model();
    let z = m.zeros_like();
    assert!(flat(&z).iter().all(|&v| v == 0.0));
    assert_eq!(flat(&z).len(), 13);
    for (zero, leaf) in z.leaves().into_iter().zip(m.leaves()) {
        assert_eq!(zero.shape(), leaf.shape());
    }
    assert_eq!(z.enc.name, "encoder");
    assert_eq!(z.dropout, 0.5);
}

#[test]
fn add_scale_and_axpy_work_leafwise() {
    let m = model();
    let values = flat(&m);

    let doubled = m.add(&m);
    assert_eq!(
        flat(&doubled),
        values.iter().map(|v| 2.0 * v).collect::<Vec<_>>()
    );
    assert_eq!(doubled.enc.name, "encoder");
    assert_eq!(doubled.dropout, 0.5);

    let scaled = m.scale(-0.5);
    assert_eq!(
        flat(&scaled),
        values.iter().map(|v| -0.5 * v).collect::<Vec<_>>()
    );

    let mut acc = m.clone();
    acc.axpy(3.0, &m.scale(2.0));
    assert_eq!(
        flat(&acc),
        values.iter().map(|v| 7.0 * v).collect::<Vec<_>>()
    );
    // Constants come from `self`, whatever `other` holds.
    let mut other = m.clone();
    other.dropout = 0.1;
    other.enc.name.clear();
    acc.axpy(1.0, &other);
    assert_eq!((acc.dropout, acc.enc.name.as_str()), (0.5, "encoder"));
}

#[test]
fn generic_struct_takes_its_element_type_from_the_parameter() {
    let single = Layer {
        w: Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]),
        b: Tensor::scalar(3.0),
    };
    let scaled = single.scale(2.0_f32);
    assert_eq!(scaled.w.to_vec(), [2.0_f32, 4.0]);
    assert_eq!(scaled.b.item(), 6.0_f32);
    assert_eq!(single.leaf_paths(""), ["w", "b"]);

    let ensemble = Ensemble {
        members: vec![layer(&[1.0], &[2.0]), layer(&[3.0], &[4.0])],
        weights: vec![0.25, 0.75],
    };
    assert_eq!(flat(&ensemble.add(&ensemble)), [2.0, 4.0, 6.0, 8.0]);
    assert_eq!(
        ensemble.leaf_paths(""),
        [
            "members[0].w",
            "members[0].b",
            "members[1].w",
            "members[1].b"
        ]
    );
    assert_eq!(ensemble.zeros_like().weights, [0.25, 0.75]);
}

#[test]
fn nested_structs_alone_give_the_element_type() {
    let encoder = model().enc;
    let twin = Twin {
        left: encoder.clone(),
        right: vec![encoder.scale(2.0)],
    };
    assert_eq!(twin.leaf_paths(""), ["left.w", "right[0].w"]);
    assert_eq!(flat(&twin), [1.0, 2.0, 3.0, 4.0, 2.0, 4.0, 6.0, 8.0]);
}

#[test]
fn tuple_struct_paths_use_field_indices() {
    let pair = Pair(
        Tensor::from_vec(vec![1.0, 2.0], &[2]),
        7,
        Layer {
            w: Tensor::from_vec(vec![3.0], &[1]),
            b: Tensor::from_vec(vec![4.0], &[1]),
        },
    );
    assert_eq!(pair.leaf_paths(""), ["0", "2.w", "2.b"]);
    assert_eq!(pair.leaf_paths("pair"), ["pair.0", "pair.2.w", "pair.2.b"]);
    let z = pair.zeros_like();
    assert_eq!(z.1, 7);
    assert_eq!(z.2.w.to_vec(), [0.0_f32]);
}

#[test]
fn raw_identifier_fields_keep_their_plain_name_in_paths() {
    let k = Keyword { r#type: t(&[1.0]) };
    assert_eq!(k.leaf_paths(""), ["type"]);
}
