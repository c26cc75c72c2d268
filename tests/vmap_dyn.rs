//! `vmap` through trait objects: layers of several types in one `Vec<Box<dyn Stage>>`, under a
//! trait marked `#[differentiable(dyn)]` whose method is under `vmap`. A batched function loops
//! over the boxes and calls each layer's batched twin through the box. Per-example values and
//! gradients against the same function called on each example, and against central
//! differences; an ensemble of pipelines (every leaf batched) against each member.

use rune_ad::prelude::*;

#[differentiable(dyn)]
pub trait Stage {
    #[differentiable(vmap)]
    fn apply(&self, x: &Tensor<f64>) -> Tensor<f64>;

    /// A provided method, batched from this body for every stage.
    #[differentiable(vmap)]
    fn energy(&self, x: &Tensor<f64>) -> Tensor<f64> {
        self.apply(x).square().sum()
    }
}

#[derive(Clone, Differentiable)]
pub struct Dense {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

#[differentiable]
impl Stage for Dense {
    #[differentiable(vmap)]
    fn apply(&self, x: &Tensor<f64>) -> Tensor<f64> {
        (x.matmul(&self.w) + &self.b).tanh()
    }
}

#[derive(Clone, Differentiable)]
pub struct Gate {
    g: Tensor<f64>,
}

#[differentiable]
impl Stage for Gate {
    #[differentiable(vmap)]
    fn apply(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x * (x * &self.g).sigmoid()
    }
}

#[derive(Clone, Differentiable)]
pub struct Pipeline {
    stages: Vec<Box<dyn Stage>>,
}

#[differentiable(vmap)]
fn pipeline_loss(
    p: &Pipeline,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    let mut h = x.clone();
    for stage in &p.stages {
        h = stage.apply(&h);
    }
    let last = p.stages.len() - 1;
    (h - y).square().sum() + p.stages[last].energy(x) * 0.1
}

fn example(t: &Tensor<f64>, i: usize) -> Tensor<f64> {
    t.index_select(0, &[i]).squeeze(0)
}

#[track_caller]
fn assert_close(got: &Tensor<f64>, want: &Tensor<f64>, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}");
    for (a, b) in got.to_vec().iter().zip(want.to_vec()) {
        assert!(
            (a - b).abs() <= 1e-12 * b.abs().max(1.0),
            "{what}: {a} against {b}"
        );
    }
}

fn pipeline(seed: u64) -> Pipeline {
    Pipeline {
        stages: vec![
            Box::new(Dense {
                w: Tensor::rand_uniform(&[3, 3], -0.9, 0.9, seed),
                b: Tensor::rand_uniform(&[3], -0.5, 0.5, seed + 1),
            }),
            Box::new(Gate {
                g: Tensor::rand_uniform(&[3], -1.0, 1.0, seed + 2),
            }),
            Box::new(Dense {
                w: Tensor::rand_uniform(&[3, 3], -0.9, 0.9, seed + 3),
                b: Tensor::rand_uniform(&[3], -0.5, 0.5, seed + 4),
            }),
        ],
    }
}

/// The leaves of a pipeline's stage `k`, as the type inside the box.
fn dense(p: &Pipeline, k: usize) -> &Dense {
    p.stages[k].downcast_ref::<Dense>().expect("a dense stage")
}

#[test]
fn boxed_stages_batch_through_their_twins() {
    let p = pipeline(1);
    let xs = Tensor::<f64>::rand_uniform(&[4, 3], -1.0, 1.0, 10);
    let ys = Tensor::<f64>::rand_uniform(&[4, 3], -1.0, 1.0, 11);
    let outs = p.stages[1].apply_vmap(Batch(&xs));
    let energies = p.stages[0].energy_vmap(Batch(&xs));
    let (values, grads) = pipeline_loss_value_and_grad_vmap(&p, Batch(&xs), Batch(&ys));
    for i in 0..4 {
        let (x, y) = (example(&xs, i), example(&ys, i));
        assert_close(&example(&outs, i), &p.stages[1].apply(&x), "gate");
        let d = dense(&p, 0);
        let by_hand = (x.matmul(&d.w) + &d.b).tanh().square().sum();
        assert_close(&example(&energies, i), &by_hand, "energy");
        assert_close(&example(&values, i), &pipeline_loss(&p, &x, &y), "value");
        let g = pipeline_loss_grad(&p, &x, &y);
        for k in [0, 2] {
            assert_close(&example(&dense(&grads, k).w, i), &dense(&g, k).w, "w");
            assert_close(&example(&dense(&grads, k).b, i), &dense(&g, k).b, "b");
        }
        let gate = |p: &Pipeline| {
            p.stages[1]
                .downcast_ref::<Gate>()
                .expect("a gate")
                .g
                .clone()
        };
        assert_close(&example(&gate(&grads), i), &gate(&g), "g");
        // Central differences of one weight of the last stage.
        let eps = 1e-6;
        let moved = |delta: f64| {
            let mut m = p.clone();
            let d = dense(&m, 2);
            let mut w = d.w.to_vec();
            w[5] += delta;
            let b = d.b.clone();
            m.stages[2] = Box::new(Dense {
                w: Tensor::from_vec(w, &[3, 3]),
                b,
            });
            pipeline_loss(&m, &x, &y).item()
        };
        let fd = (moved(eps) - moved(-eps)) / (2.0 * eps);
        let got = example(&dense(&grads, 2).w, i).to_vec()[5];
        assert!((got - fd).abs() < 1e-7, "{got} against {fd}");
    }
}

#[test]
fn an_ensemble_of_boxed_pipelines_batches_every_leaf() {
    let members = [pipeline(20), pipeline(30)];
    let stacked = |k: usize, pick: &dyn Fn(&Pipeline, usize) -> Tensor<f64>| {
        stack(&[&pick(&members[0], k), &pick(&members[1], k)], 0)
    };
    let w = |p: &Pipeline, k: usize| dense(p, k).w.clone();
    let b = |p: &Pipeline, k: usize| dense(p, k).b.clone();
    let g = |p: &Pipeline, k: usize| {
        p.stages[k]
            .downcast_ref::<Gate>()
            .expect("a gate")
            .g
            .clone()
    };
    let ensemble = Pipeline {
        stages: vec![
            Box::new(Dense {
                w: stacked(0, &w),
                b: stacked(0, &b),
            }),
            Box::new(Gate { g: stacked(1, &g) }),
            Box::new(Dense {
                w: stacked(2, &w),
                b: stacked(2, &b),
            }),
        ],
    };
    let x = Tensor::<f64>::rand_uniform(&[3], -1.0, 1.0, 40);
    let y = Tensor::<f64>::rand_uniform(&[3], -1.0, 1.0, 41);
    let (losses, grads) = pipeline_loss_value_and_grad_vmap(Batch(&ensemble), &x, &y);
    for (k, member) in members.iter().enumerate() {
        assert_close(
            &example(&losses, k),
            &pipeline_loss(member, &x, &y),
            "member",
        );
        let want = pipeline_loss_grad(member, &x, &y);
        assert_close(
            &example(&dense(&grads, 0).w, k),
            &dense(&want, 0).w,
            "member w",
        );
    }
}
