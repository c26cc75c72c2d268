//! `rune_ad::distributed` on 2 and 3 MPI ranks (feature `mpi`; `mpirun` on the path).
//!
//! This is a program of its own (`harness = false`): run by `cargo test --features mpi`, it
//! starts itself under `mpirun --oversubscribe -np N`, where each rank runs the checks of
//! `rank_checks` on its own values (all-reduce of a nested structure, broadcast, the parameter
//! check, structures that differ between ranks, sharding, `DataParallel` against one process)
//! and prints one line when all pass; it checks that a rank that panics ends the job
//! (`abort_on_panic`); and it runs the `digits` example in one process and `digits_ddp` on N
//! ranks and compares their losses and accuracies. Arguments that do not start with `-` select
//! the cases whose names contain them (`cargo test --features mpi --test distributed -- digits`).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rune_ad::data::DataLoader;
use rune_ad::distributed::mpi::collective::SystemOperation;
use rune_ad::distributed::mpi::traits::{Communicator, CommunicatorCollectives};
use rune_ad::distributed::{
    abort_on_panic, all_reduce_mean, all_reduce_sum, broadcast, check_same_parameters, mpi,
    parameter_hash, shard, shard_range, DataParallel,
};
use rune_ad::optim::Sgd;
use rune_ad::prelude::*;

/// The communicator of every rank.
type World = mpi::topology::SimpleCommunicator;
/// A case the parent runs, by name, on a number of ranks.
type Case = (&'static str, fn(usize));
/// A check each rank runs, by name.
type Check = (&'static str, fn(&World));

/// Set in the environment of the ranks this program starts: `checks` runs the rank's checks,
/// `panic` the job whose last rank panics.
const RANK_ROLE: &str = "RUNE_AD_DISTRIBUTED_TEST_RANK";
/// The longest a run under `mpirun` may take before it counts as hung.
const TIMEOUT: Duration = Duration::from_secs(600);
/// The longest the job with a panicking rank may take to end (it ends in about a second).
const PANIC_TIMEOUT: Duration = Duration::from_secs(60);

fn main() {
    match std::env::var(RANK_ROLE).as_deref() {
        Ok("checks") => return rank_checks(),
        Ok("panic") => return panicking_rank(),
        _ => {}
    }
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let cases: [Case; 3] = [
        ("collectives", collectives),
        ("a_panicking_rank_ends_the_job", panic_ends_the_job),
        ("digits_ddp_agrees_with_one_process", digits_agreement),
    ];
    let mut ran = 0;
    for (name, case) in cases {
        for ranks in [2, 3] {
            let full = format!("{name}_on_{ranks}_ranks");
            if filters.is_empty() || filters.iter().any(|f| full.contains(f.as_str())) {
                let start = Instant::now();
                case(ranks);
                println!(
                    "test {full} ... ok ({:.1} s)",
                    start.elapsed().as_secs_f64()
                );
                ran += 1;
            }
        }
    }
    println!("\ntest result: ok. {ran} passed");
}

// ---- the parent: runs and compares -------------------------------------------------------

/// Runs this program on `ranks` ranks and checks that every rank passed its checks.
fn collectives(ranks: usize) {
    let exe = std::env::current_exe().expect("the test program's path");
    let out = run(mpirun(ranks, &exe).env(RANK_ROLE, "checks"));
    for rank in 0..ranks {
        let line = format!("rank {rank} of {ranks}: all checks passed");
        assert!(
            out.contains(&line),
            "no line `{line}` in the output:\n{out}"
        );
    }
}

/// Runs this program on `ranks` ranks, the last of which panics while the others wait in a
/// collective: with `abort_on_panic` the job fails, with the panic's message, instead of hanging.
fn panic_ends_the_job(ranks: usize) {
    let exe = std::env::current_exe().expect("the test program's path");
    let (status, out, err) = finish(mpirun(ranks, &exe).env(RANK_ROLE, "panic"), PANIC_TIMEOUT);
    let status = status.unwrap_or_else(|| panic!("the job hung:\n{out}\n{err}"));
    assert!(!status.success(), "the job succeeded:\n{out}\n{err}");
    let message = format!("rank {} of {ranks} fails on purpose", ranks - 1);
    assert!(err.contains(&message), "no `{message}` in:\n{err}");
    assert!(
        !out.contains("all-reduced"),
        "a rank finished its all-reduce:\n{out}"
    );
}

/// Runs `digits` in one process and `digits_ddp` on `ranks` ranks: the loss after each epoch
/// agrees to the printed precision (the gradients are summed in another order, so the last
/// printed digit may differ by one), the final test accuracy is the same.
fn digits_agreement(ranks: usize) {
    let examples = examples_dir();
    let one = run(Command::new(examples.join("digits")).current_dir(env!("CARGO_MANIFEST_DIR")));
    let many = run(&mut mpirun(ranks, &examples.join("digits_ddp")));
    let (one_losses, many_losses) = (epoch_losses(&one), epoch_losses(&many));
    assert_eq!(one_losses.len(), 20, "20 epochs from digits:\n{one}");
    assert_eq!(many_losses.len(), 20, "20 epochs from digits_ddp:\n{many}");
    for (epoch, (a, b)) in one_losses.iter().zip(&many_losses).enumerate() {
        assert!(
            (a - b).abs() <= 1.5e-4,
            "epoch {}: loss {a} in one process, {b} on {ranks} ranks\n{one}\n{many}",
            epoch + 1
        );
    }
    let accuracy = |out: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix("test accuracy: "))
            .unwrap_or_else(|| panic!("no test accuracy in the output:\n{out}"))
            .to_owned()
    };
    assert_eq!(accuracy(&one), accuracy(&many), "{one}\n{many}");
    assert!(
        many.contains(&format!(
            "on {ranks} ranks; parameters identical on every rank"
        )),
        "{many}"
    );
}

/// The losses of the `epoch  k/20  loss x ...` lines.
fn epoch_losses(out: &str) -> Vec<f64> {
    out.lines()
        .filter(|l| l.starts_with("epoch"))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let at = words.iter().position(|&w| w == "loss").expect("a loss");
            words[at + 1].parse().expect("a number")
        })
        .collect()
}

/// `target/<profile>/examples`, where `cargo test` puts the examples beside the tests.
fn examples_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test program's path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("tests run from target/<profile>/deps")
        .join("examples");
    for name in ["digits", "digits_ddp"] {
        assert!(
            dir.join(name).exists(),
            "{} is missing: `cargo test --features mpi` builds the examples, \
             `cargo test --features mpi --test distributed` alone does not \
             (`cargo build --features mpi --examples` first)",
            dir.join(name).display()
        );
    }
    dir
}

/// `mpirun` for `ranks` ranks of `program`, with more ranks than cores allowed, and allowed as
/// root (CI runs in a container as root; OpenMPI refuses root otherwise).
fn mpirun(ranks: usize, program: &Path) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--oversubscribe", "-np", &ranks.to_string()])
        .arg(program)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

/// Runs `cmd` to its end and returns its standard output; panics with both outputs when it
/// fails or hangs.
fn run(cmd: &mut Command) -> String {
    match finish(cmd, TIMEOUT) {
        (Some(s), out, _) if s.success() => out,
        (Some(s), out, err) => panic!("{cmd:?} failed ({s}):\n{out}\n{err}"),
        (None, out, err) => panic!("{cmd:?} took more than {TIMEOUT:?}:\n{out}\n{err}"),
    }
}

/// Runs `cmd` to its end, or kills it after `timeout` (status `None`), and returns its status,
/// standard output and standard error.
fn finish(cmd: &mut Command, timeout: Duration) -> (Option<ExitStatus>, String, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("starting {cmd:?}: {e} (is MPI installed, `mpirun` on the path?)")
        });
    let read = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            pipe.read_to_string(&mut text).map(|_| text)
        })
    };
    let stdout = read(Box::new(child.stdout.take().expect("piped")));
    let stderr = read(Box::new(child.stderr.take().expect("piped")));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            break Some(status);
        }
        if start.elapsed() > timeout {
            child.kill().expect("killing the hung child");
            child.wait().expect("waiting for the killed child");
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = stdout.join().expect("reader").expect("utf-8 output");
    let stderr = stderr.join().expect("reader").expect("utf-8 output");
    (status, stdout, stderr)
}

// ---- each rank -------------------------------------------------------------------------------

/// A layer of a nested model.
#[derive(Clone, Differentiable)]
struct Block<T: Element> {
    w: Tensor<T>,
    b: Tensor<T>,
}

/// A nested model: a `Vec` and an array of structures, a map, an optional leaf, a 0-d leaf.
#[derive(Clone, Differentiable)]
struct Net<T: Element> {
    blocks: Vec<Block<T>>,
    heads: [Block<T>; 2],
    named: BTreeMap<String, Tensor<T>>,
    bias: Option<Tensor<T>>,
    scale: Tensor<T>,
}

/// A `Net` whose element `j` of leaf `k` is `factor · (100 k + j + 1)`: small integers, exact
/// in `f32`, so sums over ranks are exact. `blocks[0].w` is stored transposed and `bias`
/// permuted (not row-major), as a matrix product's gradient often is.
fn net<T: Element>(factor: f64) -> Net<T> {
    let mut leaf = 0;
    let mut tensor = |shape: &[usize]| {
        let n = shape.iter().product::<usize>();
        let k = leaf as f64;
        leaf += 1;
        Tensor::from_vec(
            (0..n)
                .map(|j| T::from_f64(factor * (100.0 * k + j as f64 + 1.0)))
                .collect(),
            shape,
        )
    };
    let w0 = tensor(&[4, 3]).t();
    assert!(w0.as_slice().is_none(), "a column-major leaf");
    let permuted = tensor(&[2, 3, 2]).permute(&[2, 0, 1]);
    assert!(permuted.as_slice().is_none(), "a permuted leaf");
    let mut block = |w: &[usize], b: &[usize]| (tensor(w), tensor(b));
    let (w1, b1) = block(&[4, 2], &[2]);
    let (w2, b2) = block(&[2, 1], &[1]);
    let (w3, b3) = block(&[2, 5], &[5]);
    let b0 = tensor(&[4]);
    let blocks = vec![Block { w: w0, b: b0 }, Block { w: w1, b: b1 }];
    let heads = [Block { w: w2, b: b2 }, Block { w: w3, b: b3 }];
    let named = BTreeMap::from([
        ("a".to_owned(), tensor(&[3])),
        ("b".to_owned(), tensor(&[])),
    ]);
    Net {
        blocks,
        heads,
        named,
        bias: Some(permuted),
        scale: tensor(&[]),
    }
}

/// Each leaf's shape and elements, widened to `f64`.
fn contents<T: Element>(n: &Net<T>) -> Vec<(Vec<usize>, Vec<f64>)> {
    n.leaves()
        .into_iter()
        .map(|l| {
            let values = l
                .to_vec()
                .into_iter()
                .map(|x| x.to_f64().unwrap())
                .collect();
            (l.shape().to_vec(), values)
        })
        .collect()
}

/// The message of the panic `f` raises, with the panic hook silenced while it runs.
fn panic_message(f: impl FnOnce()) -> String {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    let payload = result.expect_err("a panic");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

fn rank_checks() {
    let universe = mpi::initialize().expect("MPI is initialised once");
    let world = universe.world();
    let (rank, ranks) = (world.rank() as usize, world.size() as usize);
    let checks: [Check; 8] = [
        (
            "all_reduce of a nested f64 structure",
            all_reduce_nested::<f64>,
        ),
        (
            "all_reduce of a nested f32 structure",
            all_reduce_nested::<f32>,
        ),
        ("broadcast and check_same_parameters", broadcast_from_rank_0),
        ("diverged parameters are named", diverged_parameters),
        ("different structures are named", different_structures),
        (
            "every example once per epoch, batches sharded",
            sharded_batches,
        ),
        (
            "every example once per epoch, data set sharded",
            sharded_data_set,
        ),
        (
            "DataParallel::step is the one-process step",
            data_parallel_step,
        ),
    ];
    for (name, check) in checks {
        let outcome = std::panic::catch_unwind(|| check(&world));
        if outcome.is_err() {
            // The other ranks may be waiting in a collective: end the whole job.
            eprintln!("rank {rank} of {ranks}: check failed: {name}");
            world.abort(1);
        }
    }
    println!("rank {rank} of {ranks}: all checks passed");
}

/// The last rank panics; the others all-reduce, waiting for it.
fn panicking_rank() {
    let universe = mpi::initialize().expect("MPI is initialised once");
    abort_on_panic();
    let world = universe.world();
    let (rank, ranks) = (world.rank(), world.size());
    if rank == ranks - 1 {
        panic!("rank {rank} of {ranks} fails on purpose");
    }
    let mut value = Tensor::<f64>::ones(&[3]);
    all_reduce_sum(&world, &mut value);
    println!("rank {rank} all-reduced {:?}", value.to_vec());
}

fn all_reduce_nested<T: Element + mpi::datatype::Equivalence>(world: &World) {
    let (rank, ranks) = (world.rank() as f64, world.size() as f64);
    // Rank r holds (r + 1) times the base values: the sum is p (p + 1) / 2 times them, the
    // mean (p + 1) / 2 times.
    let mut sum = net::<T>(rank + 1.0);
    all_reduce_sum(world, &mut sum);
    assert_eq!(
        contents(&sum),
        contents(&net::<T>(ranks * (ranks + 1.0) / 2.0))
    );
    let mut mean = net::<T>(rank + 1.0);
    all_reduce_mean(world, &mut mean);
    assert_eq!(contents(&mean), contents(&net::<T>((ranks + 1.0) / 2.0)));
}

/// A layer with a buffer (a batch norm's running statistics).
#[derive(Clone, Differentiable)]
struct Normed {
    net: Net<f64>,
    bn: rune_ad::nn::BatchNorm<f64>,
}

fn broadcast_from_rank_0(world: &World) {
    let rank = world.rank() as f64;
    let mut params = net::<f64>(rank + 1.0);
    broadcast(world, &mut params);
    assert_eq!(contents(&params), contents(&net::<f64>(1.0)));
    // Buffers go too: every rank ends with rank 0's running statistics.
    let mut normed = Normed {
        net: net::<f64>(rank + 1.0),
        bn: rune_ad::nn::BatchNorm::new(3),
    };
    normed.bn.running_mean = Tensor::from_vec(vec![rank, rank + 0.5, -rank], &[3]);
    broadcast(world, &mut normed);
    assert_eq!(normed.bn.running_mean.to_vec(), [0.0, 0.5, 0.0]);
    assert_eq!(contents(&normed.net), contents(&net::<f64>(1.0)));
    let hash = check_same_parameters(world, &params);
    assert_eq!(hash, parameter_hash(&net::<f64>(1.0)));
    assert_ne!(hash, parameter_hash(&net::<f64>(2.0)));
}

fn diverged_parameters(world: &World) {
    let last = world.size() as usize - 1;
    let mut params = net::<f32>(1.0);
    if world.rank() as usize == last {
        params.blocks[1].b = Tensor::from_vec(vec![2.0, 3.0 + f32::EPSILON * 2.0], &[2]);
    }
    let message = panic_message(|| {
        check_same_parameters(world, &params);
    });
    let expected = "check_same_parameters: leaf `blocks[1].b` differs between rank 0";
    assert!(message.starts_with(expected), "{message}");
    assert!(
        message.contains(&format!("and rank {last} (hash")),
        "{message}"
    );
}

fn different_structures(world: &World) {
    let rank = world.rank();
    let mut shapes = net::<f64>(1.0);
    if rank == 1 {
        shapes.heads[1].w = Tensor::zeros(&[5, 2]);
    }
    let message = panic_message(|| all_reduce_sum(world, &mut shapes));
    assert!(
        message.starts_with("all_reduce_sum: the ranks hold different structures")
            && message.contains(
                "leaf 6 is `heads[1].w` f64 [2, 5] on rank 0 and `heads[1].w` f64 [5, 2] on rank 1"
            ),
        "{message}"
    );
    let mut count = net::<f64>(1.0);
    if rank == 2 || (rank == 1 && world.size() == 2) {
        count.blocks.pop();
    }
    let message = panic_message(|| broadcast(world, &mut count));
    let other = if world.size() == 2 { 1 } else { 2 };
    assert!(
        message.contains(&format!(
            "leaf 2 is `blocks[1].w` f64 [4, 2] on rank 0 and `heads[0].w` f64 [2, 1] on rank {other}"
        )) && message.contains(&format!("(12 leaves on rank 0, 10 on rank {other})")),
        "{message}"
    );
    // Buffers are part of the structure too.
    let mut normed = Normed {
        net: net::<f64>(1.0),
        bn: rune_ad::nn::BatchNorm::new(3),
    };
    if rank == 1 {
        normed.bn.running_var = Tensor::ones(&[4]);
    }
    let message = panic_message(|| broadcast(world, &mut normed));
    assert!(
        message.contains(
            "buffer `bn.running_var` f64 [3] on rank 0 and buffer `bn.running_var` f64 [4] on rank 1"
        ),
        "{message}"
    );
    // Every rank panicked before moving data: the communicator still works.
    let mut ok = net::<f64>(1.0);
    all_reduce_sum(world, &mut ok);
}

/// How many times each of `n` examples was seen on all ranks together.
fn counts_over_ranks(world: &World, seen: &[i64], n: usize) -> Vec<i64> {
    let mut mine = vec![0_i64; n];
    for &i in seen {
        mine[i as usize] += 1;
    }
    let mut all = vec![0_i64; n];
    world.all_reduce_into(&mine[..], &mut all[..], SystemOperation::sum());
    all
}

fn sharded_batches(world: &World) {
    let (rank, ranks) = (world.rank() as usize, world.size() as usize);
    // 23 examples in batches of 8: the last batch has 7, in shards of 4 and 3, or 3, 2 and 2.
    let n = 23;
    let ids = Tensor::from_vec((0..n as i64).collect(), &[n]);
    let tens: Vec<i64> = (0..n as i64).map(|i| 10 * i).collect();
    let loader = DataLoader::new((&ids, &tens), 8).shuffle(3);
    for epoch in 0..3 {
        let mut seen = Vec::new();
        for batch in loader.epoch(epoch) {
            let (x, y) = shard(world, &batch);
            assert_eq!(x.len(), shard_range(batch.0.len(), rank, ranks).len());
            // The parts of a tuple stay aligned.
            assert_eq!(x.to_vec().iter().map(|i| 10 * i).collect::<Vec<_>>(), y);
            // The shard is the batch's block at this rank's positions.
            let range = shard_range(batch.0.len(), rank, ranks);
            assert_eq!(x.to_vec(), batch.0.to_vec()[range].to_vec());
            seen.extend(x.to_vec());
        }
        assert_eq!(
            counts_over_ranks(world, &seen, n),
            vec![1; n],
            "epoch {epoch}"
        );
    }
}

fn sharded_data_set(world: &World) {
    // Each rank loads batches from its shard of the data set alone.
    let n = 17;
    let ids: Vec<i64> = (0..n as i64).collect();
    let mine = shard(world, &ids);
    let loader = DataLoader::new(mine, 4).shuffle(world.rank() as u64);
    for epoch in 0..2 {
        let seen: Vec<i64> = loader.epoch(epoch).flatten().collect();
        assert_eq!(
            counts_over_ranks(world, &seen, n),
            vec![1; n],
            "epoch {epoch}"
        );
    }
}

/// A linear model.
#[derive(Clone, Differentiable)]
struct Linear {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

#[differentiable]
fn mse(model: &Linear, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
    let d = x.matmul(&model.w) + &model.b - y;
    (&d * &d).mean()
}

fn data_parallel_step(world: &World) {
    let rank = world.rank() as u64;
    // Different initial parameters on each rank: `DataParallel::new` gives all rank 0's.
    let mut model = Linear {
        w: Tensor::rand_normal(&[3, 1], 0.0, 1.0, 10 + rank),
        b: Tensor::rand_normal(&[1], 0.0, 1.0, 20 + rank),
    };
    let dp = DataParallel::new(world, &mut model);
    let mut reference = Linear {
        w: Tensor::rand_normal(&[3, 1], 0.0, 1.0, 10),
        b: Tensor::rand_normal(&[1], 0.0, 1.0, 20),
    };
    assert_eq!(parameter_hash(&model), parameter_hash(&reference));
    let (mut sgd, mut reference_sgd) = (Sgd::new(0.05).momentum(0.9), Sgd::new(0.05).momentum(0.9));
    // Batches of 7 (shards 4, 3 or 3, 2, 2) and of 2 (an empty shard on the third rank).
    for (step, n) in [7, 7, 2, 7, 2].into_iter().enumerate() {
        let x = Tensor::<f64>::rand_normal(&[n, 3], 0.0, 1.0, 100 + step as u64);
        let y = Tensor::<f64>::rand_normal(&[n, 1], 0.0, 1.0, 200 + step as u64);
        let value = dp.step(
            &mut model,
            &(&x, &y),
            |m, (x, y)| mse_value_and_grad(m, &x, &y),
            |m, g| sgd.step(m, g),
        );
        let (expected, grad) = mse_value_and_grad(&reference, &x, &y);
        reference_sgd.step(&mut reference, &grad);
        assert!(
            (value - expected.item()).abs() <= 1e-14 * expected.item().abs(),
            "step {step}: loss {value} against {}",
            expected.item()
        );
        for (a, b) in model.leaves().into_iter().zip(reference.leaves()) {
            assert!(
                (a - b).abs().max().item() <= 1e-14,
                "step {step}: {a:?} against {b:?}"
            );
        }
    }
    check_same_parameters(world, &model);
}
