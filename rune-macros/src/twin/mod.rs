//! The dual twin stage: for `#[differentiable(hvp)]` on a function of a concrete element type,
//! the same function on dual numbers (`Tensor<f64>` → `Tensor<Dual<f64>>`), lowered, fused and
//! emitted as a function of its own, whose gradient `f_hvp` runs (forward over reverse). A
//! function generic over its element type needs no twin: `f_hvp` instantiates it with dual
//! numbers. A method's twin reads the fields of `self` through bindings that lift its tensors
//! ([`fields`]). Constant code that reads only real values runs on real numbers there
//! ([`primal`]).

use quote::quote;
use syn::visit_mut::VisitMut;
use syn::ItemFn;

use crate::diag::Errors;
use crate::emit::{Emitter, Generated, Host};
use crate::parse::{self, Options};
use crate::{analyse, fuse, lower};

mod fields;
mod primal;

/// The function again on dual numbers (`Tensor<f64>` → `Tensor<Dual<f64>>`), whose hidden
/// gradient (`f::dual_grad`) is what `f_hvp` runs: forward over reverse.
pub fn dual_twin(
    original: &ItemFn,
    elem: &syn::Type,
    host: Host,
    fuses: bool,
    checkpoint: bool,
) -> Option<Generated> {
    let mut twin = original.clone();
    twin.attrs.retain(|a| !a.path().is_ident("doc"));
    let mut rewrite = ToDual {
        elem: quote!(#elem).to_string(),
        dual: syn::parse_quote!(::rune_ad::__private::Dual<#elem>),
    };
    rewrite.visit_item_fn_mut(&mut twin);
    numbers_to_dual(&mut twin, &rewrite);
    fields::bind_self_fields(&mut twin);
    let mut errors = Errors::default();
    // A checkpoint recomputes in the twin too: its forward pass on dual numbers keeps twice
    // the memory of the real one.
    let options = Options {
        checkpoint,
        ..Options::default()
    };
    let mut func = twin;
    let sig = parse::signature(&mut func, &options, &mut errors)?;
    let mut body = lower::lower(&sig, &func.block, &mut errors);
    primal::compute_on_primals(&mut body, &sig.params);
    if fuses {
        fuse::fuse(&mut body, false);
    }
    let analysis = analyse::analyse(&body, &mut errors);
    if !errors.is_empty() {
        return None;
    }
    // The twin's own plain function is not needed (its body would call the plain callees).
    let emitter = Emitter {
        func: &func,
        sig: &sig,
        body: &body,
        analysis: &analysis,
        options: &options,
        hvp_twin: false,
        is_twin: true,
        numbers: false,
        host,
        trait_method: None,
        inherent: None,
        regions: Default::default(),
    };
    let mut generated = emitter.emit();
    generated.hidden.extend(emitter.region_items().hidden);
    Some(generated)
}

/// In a function of numbers (one returning `f64`, `[f64; N]` or a tuple of them), the numbers of
/// its signature become dual numbers: each differentiated parameter (`a: f64` → `a:
/// Dual<f64>`, `x: &[f64]` → `x: &[Dual<f64>]`) and the result. A `#[nodiff]` number stays a
/// constant of `E`, and so does every number the body makes: tensors of `Dual<E>` take them.
fn numbers_to_dual(twin: &mut ItemFn, rewrite: &ToDual) {
    struct Numbers<'a>(&'a ToDual);
    impl VisitMut for Numbers<'_> {
        fn visit_type_mut(&mut self, ty: &mut syn::Type) {
            if let syn::Type::Path(p) = ty {
                if p.qself.is_none() && p.path.is_ident(&self.0.elem) {
                    *ty = self.0.dual.clone();
                    return;
                }
            }
            syn::visit_mut::visit_type_mut(self, ty);
        }
    }
    let syn::ReturnType::Type(_, out) = &mut twin.sig.output else {
        return;
    };
    let returns_numbers = |ty: &syn::Type| {
        let text = quote!(#ty).to_string();
        !text.contains("Tensor") && text.contains(&rewrite.elem)
    };
    if !returns_numbers(out) {
        return;
    }
    Numbers(rewrite).visit_type_mut(out);
    for input in &mut twin.sig.inputs {
        if let syn::FnArg::Typed(t) = input {
            if !t.attrs.iter().any(|a| a.path().is_ident("nodiff")) {
                Numbers(rewrite).visit_type_mut(&mut t.ty);
            }
        }
    }
}

/// Rewrites the element type `E` to `Dual<E>` where a body names it as a tensor's element:
/// `Tensor<E>` in types and paths (`let y: Tensor<E>`, `Tensor::<E>::zeros`) and the target of
/// `cast` (`mask.cast::<E>()`, `Tensor::<bool>::cast::<E>(&mask)`), so that a mask cast to
/// numbers meets the twin's dual tensors as dual numbers; a cast to the other real type becomes
/// a cast to its dual numbers. A tensor built from values of `E`
/// (`Tensor::<E>::from_vec(vec![..], ..)`, `full`, `scalar`, ...) is built as written and cast
/// to a constant of `Dual<E>`. Scalars of type `E` stay: tensors of `Dual<E>` take them as
/// constants.
struct ToDual {
    elem: String,
    dual: syn::Type,
}

/// The constructors of `Tensor<E>` that take values of `E`.
const FROM_VALUES: &[&str] = &[
    "from_vec",
    "scalar",
    "full",
    "arange_step",
    "linspace",
    "rand_uniform",
    "rand_normal",
];

impl ToDual {
    /// True when the first generic argument is the element type.
    fn names_elem(&self, args: &syn::AngleBracketedGenericArguments) -> bool {
        matches!(args.args.first(), Some(syn::GenericArgument::Type(t))
            if quote!(#t).to_string() == self.elem)
    }

    /// Replaces the first generic argument by the dual type when it is the element type; true
    /// if it did.
    fn retarget(&self, args: &mut syn::AngleBracketedGenericArguments) -> bool {
        let names = self.names_elem(args);
        if names {
            args.args[0] = syn::GenericArgument::Type(self.dual.clone());
        }
        names
    }

    /// Retargets a `cast`'s turbofish: to the dual type for the element type, and to the dual
    /// numbers of the other real type (`cast::<f32>()` in a function on `f64`), whose tangents
    /// then survive the cast; a cast to a real type would drop them.
    fn retarget_cast(&self, args: &mut syn::AngleBracketedGenericArguments) {
        if self.retarget(args) {
            return;
        }
        if let Some(syn::GenericArgument::Type(t)) = args.args.first_mut() {
            let name = quote!(#t).to_string();
            if name == "f32" || name == "f64" {
                *t = syn::parse_quote!(::rune_ad::__private::Dual<#t>);
            }
        }
    }

    /// True for `Tensor::<E>::ctor(..)` with `ctor` one of [`FROM_VALUES`], and for
    /// `Tensor::ctor(..)` without a turbofish whose values are written as float literals of
    /// `E` (`Tensor::scalar(0.0)`, `Tensor::full(&s, 1.0)`, `Tensor::from_vec(vec![1.0], ..)`):
    /// tensors of `E` in the function, which the twin's dual tensors would otherwise meet as
    /// tensors of `E` (a mismatch of element types in code the user did not write). A
    /// constructor whose values are not literals (`Tensor::from_vec(values, ..)`) keeps the
    /// type its values give it.
    fn builds_from_values(&self, call: &syn::ExprCall) -> bool {
        let syn::Expr::Path(p) = &*call.func else {
            return false;
        };
        let segments: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
        let [.., tensor, ctor] = segments.as_slice() else {
            return false;
        };
        if tensor.ident != "Tensor" || !FROM_VALUES.contains(&ctor.ident.to_string().as_str()) {
            return false;
        }
        match &tensor.arguments {
            syn::PathArguments::AngleBracketed(args) => self.names_elem(args),
            syn::PathArguments::None => call.args.iter().any(|a| self.float_literal_of_elem(a)),
            syn::PathArguments::Parenthesized(_) => false,
        }
    }

    /// A float literal without a suffix or with `E`'s (negated or not), or a `vec![..]` or
    /// array whose first element is one.
    fn float_literal_of_elem(&self, e: &syn::Expr) -> bool {
        let literal = |lit: &syn::Lit| matches!(lit, syn::Lit::Float(f) if f.suffix().is_empty() || f.suffix() == self.elem);
        match e {
            syn::Expr::Lit(l) => literal(&l.lit),
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => {
                self.float_literal_of_elem(&u.expr)
            }
            syn::Expr::Reference(r) => self.float_literal_of_elem(&r.expr),
            syn::Expr::Array(a) => a
                .elems
                .first()
                .is_some_and(|f| self.float_literal_of_elem(f)),
            // `vec![a, b, ..]` and `vec![a; n]`: the first expression.
            syn::Expr::Macro(m) if m.mac.path.is_ident("vec") => m
                .mac
                .parse_body_with(|input: syn::parse::ParseStream| {
                    let first: syn::Expr = input.parse()?;
                    input.parse::<proc_macro2::TokenStream>()?;
                    Ok(first)
                })
                .is_ok_and(|f| self.float_literal_of_elem(&f)),
            _ => false,
        }
    }
}

impl VisitMut for ToDual {
    fn visit_path_segment_mut(&mut self, seg: &mut syn::PathSegment) {
        if let syn::PathArguments::AngleBracketed(args) = &mut seg.arguments {
            if seg.ident == "cast" {
                self.retarget_cast(args);
                return;
            }
            if seg.ident == "Tensor" && self.retarget(args) {
                return;
            }
        }
        syn::visit_mut::visit_path_segment_mut(self, seg);
    }

    fn visit_expr_method_call_mut(&mut self, call: &mut syn::ExprMethodCall) {
        if call.method == "cast" {
            if let Some(args) = &mut call.turbofish {
                self.retarget_cast(args);
            }
        }
        syn::visit_mut::visit_expr_method_call_mut(self, call);
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::Call(call) = e {
            if self.builds_from_values(call) {
                for arg in &mut call.args {
                    self.visit_expr_mut(arg);
                }
                // A constructor without a turbofish is given `E`'s.
                if let syn::Expr::Path(p) = &mut *call.func {
                    let n = p.path.segments.len();
                    let tensor = &mut p.path.segments[n - 2];
                    if tensor.arguments.is_none() {
                        let elem: syn::Type =
                            syn::parse_str(&self.elem).expect("the element type parses");
                        tensor.arguments =
                            syn::PathArguments::AngleBracketed(syn::parse_quote!(::<#elem>));
                    }
                }
                let dual = &self.dual;
                *e = syn::parse_quote!(#call.cast::<#dual>());
                return;
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}
