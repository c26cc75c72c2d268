//! The `digits` example's training, data-parallel over the ranks of an MPI job: each rank
//! computes the gradient of its shard of every batch, and `rune_ad::distributed::DataParallel`
//! combines them into the whole batch's before the same Adam step on every rank.
//!
//! The model, the seeds, the batches of 32 and the schedule are `digits`'s, so the run follows
//! the single-process one: the same loss after each epoch up to rounding (the gradient of a
//! batch is summed in another order) and the same test accuracy, 0.9806. With 2 ranks each
//! computes 16 examples of each batch; with 3, 11, 11 and 10.
//!
//! Build it and run it on 2 ranks with
//!
//! ```sh
//! cargo build --release --features mpi --example digits_ddp
//! mpirun -np 2 target/release/examples/digits_ddp
//! ```
//!
//! (as root, add `--allow-run-as-root`; with more ranks than cores, `--oversubscribe`). Rank 0
//! prints one line per epoch, as `digits` does, the time per training step, and the test
//! accuracy; the ranks' parameters are checked to be identical at the end. docs/scaling.md
//! says what each step communicates and how to run on a cluster.

mod digits_data;
mod digits_mlp;

use std::time::Instant;

use digits_data::{accuracy, Digits, CLASSES, PIXELS};
use digits_mlp::{logits, loss, loss_value_and_grad, Mlp};
use rune_ad::data::DataLoader;
use rune_ad::distributed::{abort_on_panic, check_same_parameters, mpi, DataParallel};
use rune_ad::nn::{Init, Linear};
use rune_ad::optim::Adam;

const HIDDEN: usize = 128;
const EPOCHS: usize = 20;
/// The global batch: each rank computes its shard of it.
const BATCH_SIZE: usize = 32;
const LEARNING_RATE: f32 = 3e-3;

fn main() {
    let universe = mpi::initialize().expect("MPI is initialised once");
    // A panic on one rank ends the job rather than leaving the others waiting for it.
    abort_on_panic();
    let world = universe.world();

    // Every rank loads the whole data set: it is small, and every rank evaluates the model.
    let digits = Digits::load();
    let (train_rows, test_rows) = digits.split();
    let (train_x, train_y) = digits.batch(&train_rows);
    let (test_x, test_y) = digits.batch(&test_rows);

    let mut init = Init::new(1);
    let mut model = Mlp {
        hidden: vec![Linear::new(PIXELS, HIDDEN, &mut init)],
        output: Linear::new(HIDDEN, CLASSES, &mut init),
    };
    let dp = DataParallel::new(&world, &mut model);
    let main_rank = dp.rank() == 0;
    if main_rank {
        println!(
            "digits: {} training images, {} test images; MLP {PIXELS} → {HIDDEN} → {CLASSES}; \
             {} ranks, batches of {BATCH_SIZE} split between them",
            train_rows.len(),
            test_rows.len(),
            dp.ranks()
        );
    }
    let mut adam = Adam::new(LEARNING_RATE);

    // The same shuffle on every rank, and the same as `digits`'s: every rank sees the same
    // global batches, and computes its shard of each.
    let loader = DataLoader::new((&train_x, &train_y), BATCH_SIZE).shuffle(100);
    let mut training = std::time::Duration::ZERO;
    for epoch in 1..=EPOCHS {
        let start = Instant::now();
        for batch in loader.epoch(epoch as u64) {
            dp.step(
                &mut model,
                &batch,
                |model, (x, y)| loss_value_and_grad(model, &x, &y),
                |model, grad| adam.step(model, grad),
            );
        }
        training += start.elapsed();
        if main_rank {
            let train_loss = loss(&model, &train_x, &train_y).item();
            println!(
                "epoch {epoch:>2}/{EPOCHS}  loss {train_loss:.4}  train acc {:.4}  test acc {:.4}",
                accuracy(&logits(&model, &train_x), &train_y),
                accuracy(&logits(&model, &test_x), &test_y)
            );
        }
    }

    let hash = check_same_parameters(&world, &model);
    if main_rank {
        let steps = EPOCHS * loader.len();
        println!(
            "{steps} steps, {:.3} ms per step on {} rank{}; parameters identical on every \
             rank (hash {hash:#018x})",
            training.as_secs_f64() * 1e3 / steps as f64,
            dp.ranks(),
            if dp.ranks() == 1 { "" } else { "s" }
        );
        let acc = accuracy(&logits(&model, &test_x), &test_y);
        println!("test accuracy: {acc:.4}");
        assert!(acc >= 0.95, "test accuracy {acc} is below 0.95");
    }
}
