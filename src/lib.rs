//! rune-ad: automatic differentiation of tensor code by source transformation.
//!
//! Put `#[differentiable]` on an ordinary function over [`Tensor`]s and, at compile time, the
//! macro writes its derivatives beside it as plain Rust that calls the runtime's ops and their
//! derivative rules. Nothing is traced when the program runs: no tape, no hash map keyed by
//! tensors, no graph of boxed nodes. The generated gradient is the code a careful person would
//! write by hand.
//!
//! ```
//! use rune_ad::prelude::*;
//!
//! #[differentiable]
//! fn loss(w: &Tensor<f64>, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
//!     let d = x.matmul(w).tanh() - y;
//!     (&d * &d).mean()
//! }
//!
//! let w = Tensor::from_vec(vec![0.5, -0.5], &[2, 1]);
//! let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
//! let y = Tensor::from_vec(vec![0.0, 1.0], &[2, 1]);
//! let (value, grad) = loss_value_and_grad(&w, &x, &y);
//! assert_eq!(value.item(), loss(&w, &x, &y).item());
//! assert_eq!(grad.shape(), &[2, 1]);
//! ```
//!
//! # What is generated
//!
//! For `fn f(..) -> Tensor<T>` the macro keeps `f` as written and adds, with the same
//! visibility and generics:
//!
//! | function | returns |
//! |---|---|
//! | `f_value_and_grad(params)` | `(value, grads)`: the value must have one element |
//! | `f_grad(params)` | `grads` (one gradient, or a tuple in parameter order) |
//! | `f_vjp(params, cotangent)` | `(value, grads)` for any output shape |
//! | `f_jvp(params, tangents)` | `(value, tangent)`: one tangent per differentiated parameter |
//! | `f_pullback(params)` | `(value, pullback)`: the pullback serves many cotangents |
//! | `f_hvp(params, directions)` | `(grads, hessian · directions)`, for functions generic over their element type |
//!
//! A parameter is *differentiated* when its type is `Tensor<T>`, `&Tensor<T>`, a structure
//! that derives [`Differentiable`], a `Vec`, array or slice of them (gradient: a `Vec` or
//! array), or an `Option` of one (`Option<&Tensor<T>>`, gradient an `Option`), and it has no
//! `#[nodiff]`; in a function returning `f32`/`f64`, its `f32`/`f64` parameters and arrays of
//! them (`[f64; N]`, `&[f32; N]`) are differentiated too (gradients are numbers and arrays). Numbers (elsewhere), `usize`, slices of numbers,
//! `Tensor<i64>`, `Tensor<bool>` are constants; any other type holding a tensor or a structure
//! (a tuple of tensors) must be marked `#[nodiff]`.
//!
//! On a method (`fn forward(&self, ..)` of a type that derives [`Differentiable`]), the entry
//! points are methods of the same `impl` block: `model.forward_vjp(x, cotangent)`,
//! `model.forward_grad(x)`, `model.forward_jvp(x, &model_tangent, &x_tangent)`; `self` is a
//! differentiated structure parameter (a gradient of its type, a tangent `&Self`) unless marked
//! `#[nodiff]`. On an inherent `impl` block, the attribute applies to every function in it; an
//! associated function without `self` needs it there, since the attribute alone cannot tell it
//! from a free function.
//!
//! # How it works
//!
//! The body is lowered to a list of primitive ops in SSA form. *Activity analysis* keeps only
//! values that depend on a differentiated parameter and that the result depends on; only they
//! get tangents or adjoints, and constant code stays Rust, evaluated as written. The reverse
//! pass is split in two: `f::fwd` (hidden) runs the function and returns its value with a
//! pullback closure that owns the *residuals*, exactly the inputs, outputs and shapes that the
//! rules of the backward pass read, and nothing else; calling the pullback walks the ops in
//! reverse, applying each op's rule and adding into adjoints held in local variables. Inside
//! loops and branches, residuals go on typed stacks (pushed forward, popped backward), with the
//! branch taken and the trip count. Forward mode (`f::tangent`, hidden) follows each op with its
//! tangent rule. These two are associated functions of a hidden type named `f` beside the
//! function, which `use path::f;` imports with it, so that callers in other modules reach them
//! (for a method, they are `forward_fwd` and `forward_tangent` in its `impl` block).
//! `docs/expansion.md` shows the code written for a small function, a loop and calls.
//!
//! # What the body may contain
//!
//! `let` (with `mut`, shadowing, tuple patterns), assignment and `+= -= *= /=`, the operators
//! `+ - * /` (scalars on either side: see [below](#generic-code-and-float-literals)) and unary
//! `-`, the tensor methods and free functions of the op table ([`all_ops`]), [`stop_gradient`],
//! field access and indexing of structure parameters, blocks, `if`/`else`, `if let` and `match`
//! on constant conditions (which may read a tensor's value with `.item()`), `for` loops over
//! ranges, constants, `Vec` fields of structures and local `Vec`s of tensors (with `iter`,
//! `zip`, `enumerate`, `rev` and `map`), `fold`, `map(..).sum()` and `collect()` over them,
//! `while`, `while let` and `loop`, `break`, `continue` and `return`; local `Vec`s of
//! differentiated tensors (`push`, indexing, `stack(&outs, 0)`/`concat`); in a function
//! returning `Result<value, E>`, `?` on `try_` ops (`x.try_reshape(..)?`) and on calls of other
//! such functions, `return Err(..)` and a final `Ok(value)` (every generated function then
//! returns a `Result` with the same error); closures defined in
//! the body (inlined where they are called); `println!`, `assert!`, `dbg!` and `format!` reading
//! values (forward pass only); and calls of other `#[differentiable]` functions: by name, by
//! path or imported with `use`, generic or recursive; methods on structure parameters and their
//! fields and elements (`self.l1.forward(&h)`, `layer.forward(&h)` in
//! `for layer in &self.layers`), whose gradients flow into the caller's gradient at that path;
//! associated functions (`Self::f(..)`, `Model::f(..)`, told apart from a module path by the
//! capitalised segment before the name). Anything else is a compile error at the offending
//! token saying what is supported; calling a function or method that is not
//! `#[differentiable]` with a differentiated value is one error at the call that names it, and
//! reading a differentiated tensor's numbers (`item`, `to_vec`, indexing) into the result is an
//! error too, since its gradient would be lost.
//!
//! # Forward mode and composition
//!
//! ```
//! use rune_ad::prelude::*;
//!
//! #[differentiable]
//! fn layer<T: Element>(w: &Tensor<T>, x: &Tensor<T>) -> Tensor<T> {
//!     x.matmul(w).tanh()
//! }
//!
//! #[differentiable]
//! fn two_layers<T: Element>(w: &Tensor<T>, #[nodiff] x: &Tensor<T>) -> Tensor<T> {
//!     let h = layer(w, x);
//!     layer(w, &h).sum()
//! }
//!
//! let w = Tensor::<f64>::rand_normal(&[3, 3], 0.0, 0.3, 1);
//! let x = Tensor::<f64>::rand_normal(&[4, 3], 0.0, 1.0, 2);
//! let v = Tensor::<f64>::ones(&[3, 3]);
//! let (_, along_v) = two_layers_jvp(&w, &x, &v);
//! let grad = two_layers_grad(&w, &x);
//! // The directional derivative is the gradient's inner product with the direction.
//! assert!((along_v.item() - (&grad * &v).sum().item()).abs() < 1e-12);
//! ```
//!
//! # Generic code and float literals
//!
//! A function generic over its element type (`T: Element`) runs at `f32` and `f64`, and its
//! `f_hvp` runs it at `Dual<T>`. Float literals read in it as in code on a concrete type:
//!
//! ```
//! use rune_ad::prelude::*;
//!
//! #[differentiable]
//! fn loss<T: Element>(w: &Tensor<T>, #[nodiff] x: &Tensor<T>) -> Tensor<T> {
//!     let z = x.matmul(w);
//!     let h = (z.exp() + 1.0).ln() - 0.5;
//!     let margin = (1.0 - 2.0 * h).clamp(-3.0, 3.0).maximum(0.0);
//!     let weight = where_cond(&z.gt(0.0), &2.0, &1.0);
//!     (margin * weight).mean() + 1e-3 * w.powf(2.0).sum()
//! }
//!
//! let w = Tensor::<f64>::rand_normal(&[3, 2], 0.0, 0.5, 1);
//! let x = Tensor::<f64>::rand_normal(&[4, 3], 0.0, 1.0, 2);
//! let g64 = loss_grad(&w, &x);
//! let g32 = loss_grad(&w.cast::<f32>(), &x.cast::<f32>());
//! assert!((&g64 - &g32.cast::<f64>()).abs().max().item() < 1e-5);
//! let (g, _hv) = loss_hvp(&w, &x, &Tensor::ones(&[3, 2])); // the function at Dual<f64>
//! assert!((&g - &g64).abs().max().item() < 1e-12);
//! ```
//!
//! With `T` generic, as with every element type, a float literal can stand
//!
//! - on either side of `+ - * /` with a tensor, owned or borrowed (`x + 1.0`, `1.0 - &x`,
//!   `2.0 * x`, `x / 3.0`), and on the right of `+= -= *= /=`;
//! - in `x.powf(2.0)`, `x.clamp(-1.0, 1.0)`, `x.maximum(0.0)`, `x.minimum(1.5)`;
//! - in comparisons: `x.gt(0.0)`, `x.le(1.0)`, ...;
//! - in `where_cond(&mask, x, &0.0)`, and on both sides, `where_cond(&mask, &2.0, &1.0)`, when
//!   the result meets a tensor of `T` (or its type is otherwise known).
//!
//! There the literal is an `f64`, converted to `T` when the op runs (by `T::from_f64`: exact for
//! `f64`, rounded to nearest for `f32`, a constant with zero tangent for a dual number). The
//! scalars a tensor of `T` takes are `T` itself, `f64`, and `f32` when `T` is `f32` or a dual
//! number over it ([`FromScalar`]); a variable `s: T` goes wherever a literal does, except on the
//! left of an operator. What to write instead of the forms that do not compile:
//!
//! | instead of | write | because |
//! |---|---|---|
//! | `Tensor::scalar(1.0)`, `Tensor::full(shape, 1.0)` | `Tensor::scalar(T::from_f64(1.0))`, or the literal alone (`x + 1.0`) | they make a tensor of floats, not of `T` (the compile error says so) |
//! | `s * x` with `s: T` | `x * s` | on the left of a tensor Rust's orphan rule admits only `f64` and dual numbers |
//! | `s * 2.0` with `s: T` (scalar arithmetic) | `s * T::from_f64(2.0)` | `T`'s own arithmetic takes only `T` |
//! | `x * k` with `k: f32` | `x * T::from_f64(k.into())`, or the bound `T: Element + FromScalar<f32>` | only `f64` goes with every element type (the compile error says so) |
//!
//! On `Tensor<f64>` and tensors of dual numbers an unsuffixed literal is an `f64`, as it always
//! was. On `Tensor<f32>` it is one too, rounded to `f32` when the op runs: the same value as an
//! `f32` literal, but for a decimal within about 2⁻⁵³ (relative) of halfway between two `f32`s.
//! Concrete code needs no annotations, with three exceptions:
//!
//! - an `f32` *variable* on the left of a tensor (`k * x`): write `x * k`, or `f64::from(k) * x`;
//! - a literal bound to a variable, used beside an `f32` tensor and as the receiver of a float
//!   method (`let c = 0.5; .. &x * c ..; c.sqrt()`): its type is open until the end of the
//!   function, so write `let c: f32 = 0.5`;
//! - `where_cond` of two literals, or `Tensor::zeros(shape) + 1.0`, when nothing says the element
//!   type: name it (`where_cond::<f64, _, _>(..)`, `Tensor::<f64>::zeros(shape)`).
//!
//! A function on a concrete type with `#[differentiable(hvp)]` reads the same way in the copy on
//! dual numbers that its `f_hvp` runs: there `Tensor<f64>` and `cast::<f64>` name `Dual<f64>`
//! (and likewise for `f32`), tensors built from `f64` values (`Tensor::<f64>::from_vec`, `full`,
//! `scalar`, ...) become constants of `Dual<f64>`, and `f64` literals and scalars stay as
//! written.
//!
//! # Models, loops and optimizers
//!
//! ```
//! use rune_ad::optim::Adam;
//! use rune_ad::prelude::*;
//!
//! #[derive(Clone, Differentiable)]
//! struct Layer {
//!     w: Tensor<f64>,
//!     b: Tensor<f64>,
//! }
//!
//! #[derive(Clone, Differentiable)]
//! struct Mlp {
//!     layers: Vec<Layer>,
//! }
//!
//! #[differentiable]
//! fn mse(model: &Mlp, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
//!     let mut h = x.clone();
//!     for layer in &model.layers {
//!         h = (h.matmul(&layer.w) + &layer.b).tanh();
//!     }
//!     let d = h - y;
//!     (&d * &d).mean()
//! }
//!
//! let mut model = Mlp {
//!     layers: vec![
//!         Layer { w: Tensor::rand_normal(&[2, 8], 0.0, 0.5, 1), b: Tensor::zeros(&[8]) },
//!         Layer { w: Tensor::rand_normal(&[8, 1], 0.0, 0.5, 2), b: Tensor::zeros(&[1]) },
//!     ],
//! };
//! let x = Tensor::from_vec(vec![0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], &[4, 2]);
//! let y = Tensor::from_vec(vec![0.0, 0.5, 0.5, 0.0], &[4, 1]);
//! let before = mse(&model, &x, &y).item();
//! let mut adam = Adam::new(0.05);
//! for _ in 0..200 {
//!     let grad = mse_grad(&model, &x, &y); // a value of type `Mlp`
//!     adam.step(&mut model, &grad);
//! }
//! assert!(mse(&model, &x, &y).item() < before / 10.0);
//! ```
//!
//! The same model with methods, and a helper from another module:
//!
//! ```
//! use rune_ad::prelude::*;
//!
//! mod activations {
//!     use rune_ad::prelude::*;
//!
//!     #[differentiable]
//!     pub fn softsign(x: &Tensor<f64>) -> Tensor<f64> {
//!         x / &(x.abs() + 1.0)
//!     }
//! }
//!
//! use activations::softsign;
//!
//! #[derive(Clone, Differentiable)]
//! struct Layer {
//!     w: Tensor<f64>,
//!     b: Tensor<f64>,
//! }
//!
//! #[derive(Clone, Differentiable)]
//! struct Mlp {
//!     layers: Vec<Layer>,
//! }
//!
//! #[differentiable]
//! impl Layer {
//!     fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
//!         softsign(&(x.matmul(&self.w) + &self.b))
//!     }
//! }
//!
//! #[differentiable]
//! impl Mlp {
//!     fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
//!         let mut h = x.clone();
//!         for layer in &self.layers {
//!             h = layer.forward(&h);
//!         }
//!         h
//!     }
//!
//!     fn mse(&self, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
//!         let d = self.forward(x) - y;
//!         (&d * &d).mean()
//!     }
//! }
//!
//! let model = Mlp {
//!     layers: vec![
//!         Layer { w: Tensor::rand_normal(&[2, 8], 0.0, 0.5, 1), b: Tensor::zeros(&[8]) },
//!         Layer { w: Tensor::rand_normal(&[8, 1], 0.0, 0.5, 2), b: Tensor::zeros(&[1]) },
//!     ],
//! };
//! let x = Tensor::from_vec(vec![0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], &[4, 2]);
//! let y = Tensor::from_vec(vec![0.0, 0.5, 0.5, 0.0], &[4, 1]);
//! let (loss, grad) = model.mse_value_and_grad(&x, &y); // grad: an `Mlp`
//! assert_eq!(loss.item(), model.mse(&x, &y).item());
//! assert_eq!(grad.layers[1].w.shape(), &[8, 1]);
//! // Forward mode along the model itself: the directional derivative is ⟨grad, model⟩.
//! let (_, along) = model.mse_jvp(&x, &y, &model);
//! let dot: f64 = grad.leaves().iter().zip(model.leaves()).map(|(g, p)| (*g * p).sum().item()).sum();
//! assert!((along.item() - dot).abs() < 1e-12);
//! ```
//!
//! # Saving and loading models
//!
//! [`io::save_safetensors`] writes a model's leaves to a `.safetensors` file, each named by its
//! path (`layers.0.w`, as PyTorch names a `state_dict`), which PyTorch and Hugging Face read as
//! it is; [`io::load_safetensors`] loads one into a model of the same architecture, checking
//! every name, dtype and shape first and naming every mismatch. [`io::save_checkpoint`] keeps
//! the optimizer's state beside the model, so that a resumed run takes exactly the steps the
//! stopped one would have:
//!
//! ```
//! use rune_ad::optim::Adam;
//! use rune_ad::prelude::*;
//!
//! #[derive(Clone, Differentiable)]
//! struct Layer {
//!     w: Tensor<f32>,
//!     b: Tensor<f32>,
//! }
//!
//! #[derive(Clone, Differentiable)]
//! struct Mlp {
//!     layers: Vec<Layer>,
//! }
//!
//! let mlp = |seed| Mlp {
//!     layers: vec![
//!         Layer { w: Tensor::rand_normal(&[2, 8], 0.0, 0.5, seed), b: Tensor::zeros(&[8]) },
//!         Layer { w: Tensor::rand_normal(&[8, 1], 0.0, 0.5, seed + 1), b: Tensor::zeros(&[1]) },
//!     ],
//! };
//! let model = mlp(1);
//! let path = std::env::temp_dir().join(format!("mlp-{}.safetensors", std::process::id()));
//! rune_ad::io::save_safetensors(&model, &path)?;
//! let names = rune_ad::io::tensor_names(&model);
//! assert_eq!(names, ["layers.0.w", "layers.0.b", "layers.1.w", "layers.1.b"]);
//!
//! let mut loaded = mlp(7); // the same architecture, other weights
//! rune_ad::io::load_safetensors(&mut loaded, &path)?;
//! assert_eq!(loaded.layers[0].w.to_vec(), model.layers[0].w.to_vec());
//!
//! // Another architecture is refused, and left as it was.
//! let mut wide = Mlp { layers: vec![Layer { w: Tensor::zeros(&[2, 16]), b: Tensor::zeros(&[16]) }] };
//! let error = rune_ad::io::load_safetensors(&mut wide, &path).unwrap_err();
//! assert_eq!(
//!     error.problems(),
//!     [
//!         "`layers.0.w`: shape [2, 8] in the file, [2, 16] in the model",
//!         "`layers.0.b`: shape [8] in the file, [16] in the model",
//!         "`layers.1.b`: in the file (F32 of shape [1]) but not in the model",
//!         "`layers.1.w`: in the file (F32 of shape [8, 1]) but not in the model",
//!     ]
//! );
//!
//! // A training run saved with its optimizer resumes bit for bit.
//! #[differentiable]
//! fn loss(model: &Mlp, #[nodiff] x: &Tensor<f32>) -> Tensor<f32> {
//!     let mut h = x.clone();
//!     for layer in &model.layers {
//!         h = (h.matmul(&layer.w) + &layer.b).tanh();
//!     }
//!     (&h * &h).mean()
//! }
//! let x = Tensor::rand_normal(&[4, 2], 0.0, 1.0, 3);
//! let (mut model, mut adam) = (mlp(1), Adam::new(0.01));
//! for _ in 0..5 {
//!     let grad = loss_grad(&model, &x);
//!     adam.step(&mut model, &grad);
//! }
//! rune_ad::io::save_checkpoint(&model, &adam, &path)?;
//! let (mut resumed, mut resumed_adam) = (mlp(9), Adam::new(0.01));
//! rune_ad::io::load_checkpoint(&mut resumed, &mut resumed_adam, &path)?;
//! let (grad, resumed_grad) = (loss_grad(&model, &x), loss_grad(&resumed, &x));
//! adam.step(&mut model, &grad);
//! resumed_adam.step(&mut resumed, &resumed_grad);
//! assert_eq!(resumed.layers[1].w.to_vec(), model.layers[1].w.to_vec());
//! std::fs::remove_file(&path)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! With the `serde` feature, `Tensor` (of `f32`, `f64`, `i64` or `bool`) and the optimizers
//! implement `Serialize` and `Deserialize` (a tensor is `{"shape": [2, 3], "data": [..]}`), so a
//! model deriving them goes to JSON or any binary serde format; `io::from_json` and
//! `io::deserialize` name the field at fault in a malformed file. Tensors convert to and from
//! [`ndarray`] arrays of any dimension, `Vec`s and slices, without copying where they can:
//!
//! ```
//! use rune_ad::ndarray::{array, Array2, Ix2};
//! use rune_ad::Tensor;
//!
//! let t = Tensor::from(array![[1.0, 2.0], [3.0, 4.0]]); // moved, not copied
//! let view: Array2<f64> = t.as_array().into_dimensionality::<Ix2>()?.to_owned();
//! assert_eq!(view[[1, 0]], 3.0);
//! let v: Vec<f64> = t.into(); // row-major; moved out when not shared
//! assert_eq!(v, [1.0, 2.0, 3.0, 4.0]);
//! let t = Tensor::from(v); // a 1-d tensor
//! assert_eq!(t.shape(), &[4]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! With the `mpi` feature, `rune_ad::distributed` trains data-parallel across the processes of
//! an MPI job: gradients all-reduced in one collective, parameters broadcast, batches sharded by
//! rank (docs/scaling.md).
//!
//! # Higher order, custom rules, checkpoints
//!
//! ```
//! use rune_ad::prelude::*;
//!
//! #[differentiable]
//! fn cubic<T: Element>(x: &Tensor<T>) -> Tensor<T> {
//!     (x * x * x).sum()
//! }
//!
//! let x = Tensor::from_vec(vec![1.0, 2.0], &[2]);
//! let (grad, hv) = cubic_hvp(&x, &Tensor::from_vec(vec![1.0, 0.0], &[2]));
//! assert_eq!(grad.to_vec(), vec![3.0, 12.0]); // 3x²
//! assert_eq!(hv.to_vec(), vec![6.0, 0.0]); // diag(6x) · e₀
//! assert_eq!(hessian(|x, v| cubic_hvp(x, v).1, &x).to_vec(), vec![6.0, 0.0, 0.0, 12.0]);
//!
//! /// The derivative of softplus, written as a rule: exact where the stable form has kinks.
//! fn softplus_rule(x: &Tensor<f64>, cotangent: &Tensor<f64>) -> Tensor<f64> {
//!     cotangent * &x.sigmoid()
//! }
//!
//! /// Forward mode gets its own rule: `rule(params.., tangents..) -> tangent`. A custom VJP
//! /// needs one (both modes must agree); a custom JVP alone leaves reverse mode derived.
//! fn softplus_tangent_rule(x: &Tensor<f64>, x_tangent: &Tensor<f64>) -> Tensor<f64> {
//!     x_tangent * &x.sigmoid()
//! }
//!
//! #[differentiable(custom_vjp = softplus_rule, custom_jvp = softplus_tangent_rule)]
//! fn softplus(x: &Tensor<f64>) -> Tensor<f64> {
//!     x.relu() + (-x.abs()).exp().log1p()
//! }
//!
//! let x = Tensor::from_vec(vec![0.0, 1000.0], &[2]);
//! let (_, g) = softplus_vjp(&x, &Tensor::ones(&[2]));
//! assert_eq!(g.to_vec(), vec![0.5, 1.0]);
//! let (_, t) = softplus_jvp(&x, &Tensor::ones(&[2]));
//! assert_eq!(t.to_vec(), vec![0.5, 1.0]);
//!
//! /// Callers recompute this block in their backward pass instead of keeping its intermediates.
//! #[differentiable(checkpoint)]
//! fn block(x: &Tensor<f64>) -> Tensor<f64> {
//!     x.sin().exp() * 0.5
//! }
//!
//! #[differentiable]
//! fn deep(x: &Tensor<f64>) -> Tensor<f64> {
//!     let mut h = x.clone();
//!     for _ in 0..10 {
//!         h = block(&h);
//!     }
//!     h.sum()
//! }
//!
//! let (value, pullback) = deep_pullback(&x.sin());
//! let g1 = pullback(&Tensor::scalar(1.0));
//! let g2 = pullback(&Tensor::scalar(2.0)); // a pullback serves many cotangents
//! assert_eq!((&g1 * 2.0).to_vec(), g2.to_vec());
//! assert!(value.item().is_finite());
//! ```
//!
//! A loss that also returns something to report (`has_aux`): the first element is
//! differentiated, the second passed through every entry point untouched.
//!
//! ```
//! use rune_ad::prelude::*;
//!
//! #[differentiable(has_aux)]
//! fn loss_and_residuals(w: &Tensor<f64>, #[nodiff] x: &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>) {
//!     let r = x * w - 1.0;
//!     ((&r * &r).sum(), r)
//! }
//!
//! let (w, x) = (Tensor::from_vec(vec![1.0, 2.0], &[2]), Tensor::from_vec(vec![3.0, 0.5], &[2]));
//! let ((loss, residuals), g) = loss_and_residuals_value_and_grad(&w, &x);
//! assert_eq!(residuals.to_vec(), vec![2.0, 0.0]);
//! assert_eq!(loss.item(), 4.0);
//! assert_eq!(g.to_vec(), vec![12.0, 0.0]); // 2 r x
//! let (g_again, _residuals) = loss_and_residuals_grad(&w, &x);
//! assert_eq!(g_again.to_vec(), g.to_vec());
//! ```
//!
//! Reverse over forward: forward mode by dual numbers inside a differentiable function, then
//! reverse mode through it (the gradient of a directional derivative is a Hessian-vector
//! product):
//!
//! ```
//! use rune_ad::prelude::*;
//!
//! #[differentiable]
//! fn cube_sum<T: Element>(x: &Tensor<T>) -> Tensor<T> {
//!     (x * x * x).sum()
//! }
//!
//! #[differentiable]
//! fn along<T: Element>(x: &Tensor<T>, #[nodiff] v: &Tensor<T>) -> Tensor<T> {
//!     tangent_of(&cube_sum(&dual_of(x, v)))
//! }
//!
//! let x = Tensor::from_vec(vec![1.0, 2.0], &[2]);
//! let v = Tensor::from_vec(vec![1.0, 1.0], &[2]);
//! assert_eq!(along_grad(&x, &v).to_vec(), vec![6.0, 12.0]); // diag(6x) v
//! ```
//!
//! # Checking gradients
//!
//! [`check_grad`] compares a function's JVP with central finite differences and its VJP with
//! its JVP (the dot-product test), as `jax.test_util.check_grads` does:
//!
//! ```
//! use rune_ad::prelude::*;
//!
//! #[differentiable]
//! fn f(x: &Tensor<f64>) -> Tensor<f64> {
//!     (x.sin() * x).cumsum(0)
//! }
//!
//! let checked = grad_fn(
//!     |a: &[Tensor<f64>]| f(&a[0]),
//!     |a: &[Tensor<f64>], t: &[Tensor<f64>]| f_jvp(&a[0], &t[0]).1,
//!     |a: &[Tensor<f64>], g: &Tensor<f64>| vec![f_vjp(&a[0], g).1],
//! );
//! let x = Tensor::from_vec(vec![0.3, -1.2, 2.0], &[3]);
//! check_grad(&checked, &[x], 1e-6, 1e-6, 1e-9).unwrap();
//! ```
//!
//! [`check_hvp`] does the same one order up: Hessian-vector products against finite differences
//! of the gradient, and their symmetry:
//!
//! ```
//! use rune_ad::prelude::*;
//!
//! #[differentiable]
//! fn g<T: Element>(x: &Tensor<T>) -> Tensor<T> {
//!     x.tanh().square().sum()
//! }
//!
//! let x = Tensor::from_vec(vec![0.3, -1.2, 2.0], &[3]);
//! check_hvp(
//!     |a: &[Tensor<f64>]| vec![g_grad(&a[0])],
//!     |a: &[Tensor<f64>], v: &[Tensor<f64>]| vec![g_hvp(&a[0], &v[0]).1],
//!     &[x],
//!     1e-5,
//!     1e-6,
//!     1e-8,
//! )
//! .unwrap();
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// The macros write `::rune_ad::..` paths; the crate's own layers (`nn`) use them too.
extern crate self as rune_ad;

#[cfg(feature = "mpi")]
pub mod distributed;
pub mod nn;

pub use rune_macros::{differentiable, Differentiable};
pub use rune_runtime::{
    add, all_ops, broadcast_shapes, check_grad, check_hvp, concat, data, div, dual_of, einsum,
    embedding, grad_fn, hessian, hessian_from_grad, hessian_of_numbers, hvp_from_grad, io, jacfwd,
    jacfwd_vmap, jacobian, jacrev, jacrev_vmap, mul, ndarray, neg, optim, parallel, polyval,
    primal_of, stack, stop_gradient, sub, sum_to_shape, tangent_of, try_add, try_concat, try_div,
    try_dual_of, try_einsum, try_embedding, try_mul, try_polyval, try_stack, try_sub,
    try_where_cond, where_cond, Batch, ClosureGradFn, CompareRhs, Detach, Differentiable, Dual,
    Element, FromScalar, GradCheckError, GradFn, Indices, NewShape, NumberMethods, OpInfo, Operand,
    OperandOf, OperandRef, RangeElement, Scalar, ShapeError, ShapeErrorKind, Tensor, VmapArg,
};

/// Everything a differentiable function usually needs.
pub mod prelude {
    pub use rune_macros::{differentiable, Differentiable};
    pub use rune_runtime::{
        add, all_ops, broadcast_shapes, check_grad, check_hvp, concat, div, dual_of, einsum,
        embedding, grad_fn, hessian, hessian_from_grad, hessian_of_numbers, hvp_from_grad, jacfwd,
        jacfwd_vmap, jacobian, jacrev, jacrev_vmap, mul, neg, polyval, primal_of, stack,
        stop_gradient, sub, sum_to_shape, tangent_of, try_add, try_concat, try_div, try_dual_of,
        try_einsum, try_embedding, try_mul, try_polyval, try_stack, try_sub, try_where_cond,
        where_cond, Batch, Differentiable, Dual, Element, FromScalar, GradCheckError,
        NumberMethods, ShapeError, ShapeErrorKind, Tensor, VmapArg,
    };
}

/// What generated code reaches the runtime through. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use rune_runtime::__private::*;
    pub use rune_runtime::*;
}

/// The README's examples, compiled as doc tests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
