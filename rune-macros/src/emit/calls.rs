//! Calls of other functions: the call of a callee's `fwd` or `tangent`, through a stand-in that
//! turns a callee that is not `#[differentiable]` into one error at the call.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::Ident;

use super::{rt, Carrier, Emitter, Host, Mode};
use crate::ir::{CallArg, Callee, OutShape, Val};
use crate::lower::path_tokens;
use crate::names::{hidden, val_ident};

/// The local items and trait through which a call of something that is not `#[differentiable]`
/// is one error, `message` at the call: a trait implemented by the types of every
/// `#[differentiable]` function (`DifferentiableFunction`) and nothing else.
fn check_trait(message: &str, label: &str) -> (TokenStream, Ident) {
    let rt = rt();
    let name = hidden("Differentiable");
    let f = hidden("F");
    let items = quote! {
        #[diagnostic::on_unimplemented(message = #message, label = #label)]
        trait #name {}
        #[diagnostic::do_not_recommend]
        impl<#f: ?::core::marker::Sized + #rt::DifferentiableFunction> #name for #f {}
    };
    (items, name)
}

/// A stand-in for entry point `entry` of a callee that is not `#[differentiable]`: it takes
/// the call's arguments (after `&self` for a method) and returns what a real one would, so that
/// the caller type-checks around the single error of the check. `bounds` are added to its
/// where-clause. Its values are of the caller's `carrier`: a function of numbers passes and
/// receives numbers where others pass tensors.
fn fallback_fn(
    entry: &Ident,
    args: &[CallArg],
    method: bool,
    shape: &OutShape,
    mode: Mode,
    bounds: &[TokenStream],
    carrier: Carrier,
) -> TokenStream {
    let rt = rt();
    let mut generics = Vec::new();
    let mut params = Vec::new();
    let mut slots = Vec::new();
    let mut bounds = bounds.to_vec();
    let mut elem = None;
    for (i, a) in args.iter().enumerate() {
        if method && i == 0 {
            params.push(quote!(&self));
            if let CallArg::Struct { .. } = a {
                let target = quote!(Self::__rune_Target);
                slots.push(target.clone());
                bounds.push(quote!(#target: #rt::Differentiable));
                elem.get_or_insert(quote!(<#target as #rt::Differentiable>::Elem));
            } else {
                slots.push(quote!(#rt::NoGrad));
            }
            continue;
        }
        let g = hidden(&format!("A{i}"));
        let by_ref = |ty: TokenStream, borrowed: bool| {
            if borrowed {
                quote!(_: &#ty)
            } else {
                quote!(_: #ty)
            }
        };
        match a {
            CallArg::Val { borrowed, .. } => {
                generics.push(quote!(#g: #rt::Element));
                let value = carrier.value_type(&quote!(#g));
                params.push(by_ref(value.clone(), *borrowed));
                slots.push(value);
                elem.get_or_insert(quote!(#g));
            }
            CallArg::Struct { borrowed, .. } => {
                generics.push(quote!(#g: #rt::Differentiable));
                params.push(by_ref(quote!(#g), *borrowed));
                slots.push(quote!(#g));
                elem.get_or_insert(quote!(<#g as #rt::Differentiable>::Elem));
            }
            CallArg::Const(_) => {
                generics.push(quote!(#g));
                params.push(quote!(_: #g));
                slots.push(quote!(#rt::NoGrad));
            }
            CallArg::Array { borrowed, .. } => {
                generics.push(quote!(#g: #rt::NumberArray));
                params.push(by_ref(quote!(#g), *borrowed));
                slots.push(quote!(#g));
                elem.get_or_insert(quote!(<#g as #rt::NumberArray>::Elem));
            }
        }
    }
    let elem = elem.expect("a call has a differentiated argument");
    let tensor = carrier.value_type(&elem);
    let tensors = || std::iter::repeat(tensor.clone());
    let value = shape.arrange(&mut tensors());
    let cotangent = cotangent_of(shape, &mut tensors());
    let (ret, body) = match mode {
        // A function pointer is a pullback (`FnOnce + Clone`) of a type that names no bound.
        Mode::Reverse => (
            quote!((#value, fn(#cotangent) -> (#(#slots,)*))),
            quote!((::core::unreachable!(), |_| ::core::unreachable!())),
        ),
        Mode::Tangent | Mode::Value => {
            for i in 0..args.len() {
                let t = hidden(&format!("T{i}"));
                generics.push(t.to_token_stream());
                params.push(quote!(_: #t));
            }
            (quote!((#value, #value)), quote!(::core::unreachable!()))
        }
    };
    let bounds = (!bounds.is_empty()).then(|| quote!(where #(#bounds),*));
    quote! {
        fn #entry<#(#generics),*>(#(#params),*) -> #ret #bounds { #body }
    }
}

impl Emitter<'_> {
    /// Whether root `root` is a parameter that is a reference (`model: &M`, `&self`).
    fn reference_root(&self, root: usize) -> bool {
        let name = &self.body.roots[root];
        self.sig
            .params
            .iter()
            .any(|p| p.ident == *name && matches!(p.ty, syn::Type::Reference(_)))
    }

    /// A call's arguments, as the callee's entry points take them.
    pub(super) fn call_args(&self, args: &[CallArg]) -> Vec<TokenStream> {
        args.iter()
            .map(|a| match a {
                // A parameter that is a reference is passed as it is: `&model` would be a
                // `&&M`, which a callee generic over `M` would take for `M = &Model`.
                CallArg::Struct { root, path, .. }
                    if path.is_empty() && self.reference_root(*root) =>
                {
                    path_tokens(&self.body.roots[*root], path)
                }
                a => call_arg(a, &self.body.roots),
            })
            .collect()
    }
}

fn call_arg(a: &CallArg, roots: &[Ident]) -> TokenStream {
    match a {
        CallArg::Struct {
            root,
            path,
            borrowed,
        } => {
            let p = path_tokens(&roots[*root], path);
            if *borrowed {
                quote!(&#p)
            } else {
                quote!(::core::clone::Clone::clone(&#p))
            }
        }
        // As the tensor, or its number where the callee takes a number.
        CallArg::Val { val, borrowed } => {
            let v = val_ident(*val);
            let rt = rt();
            if *borrowed {
                quote!(#rt::arg(&#v))
            } else {
                quote!(#rt::arg(::core::clone::Clone::clone(&#v)))
            }
        }
        CallArg::Const(t) | CallArg::Array { tokens: t, .. } => t.tokens().clone(),
    }
}

pub(super) fn bind_outs(idents: &[Ident], shape: &OutShape) -> TokenStream {
    shape.arrange(&mut idents.iter().map(|i| i.to_token_stream()))
}

/// The cotangent a callee's pullback takes for results that nest as `shape`, from one owned
/// cotangent (or its type) a value: each result by reference, a result that is a tuple
/// (`(gw, gb)` of `g_value_and_grad`) as a reference to the tuple of its cotangents.
pub(super) fn cotangent_of(
    shape: &OutShape,
    leaves: &mut impl Iterator<Item = TokenStream>,
) -> TokenStream {
    match shape {
        OutShape::One => {
            let leaf = shape.arrange(leaves);
            quote!(&#leaf)
        }
        OutShape::Tuple(parts) => {
            let parts = parts.iter().map(|p| {
                let part = p.arrange(leaves);
                quote!(&#part)
            });
            quote!((#(#parts,)*))
        }
    }
}

impl Emitter<'_> {
    /// A call's results the body reads as tensors: all but those kept whole (bound to `_`, or
    /// a structure read by its parts), which stay as the callee returns them.
    pub(super) fn read_outs<'o>(&'o self, outs: &'o [Val]) -> impl Iterator<Item = Val> + 'o {
        outs.iter().copied().filter(|o| !self.body.kept_whole(*o))
    }

    /// Whether a call is this function calling itself: `f(..)` in a free function,
    /// `Self::f(..)` or `self.f(..)` in an `impl` block.
    pub(super) fn is_recursive(&self, callee: &Callee, args: &[CallArg]) -> bool {
        let name = self.api().name();
        match (callee, self.host) {
            (Callee::Function { path, .. }, Host::Free) => path.is_ident(name),
            (Callee::Associated { ty, name: n, .. }, Host::Impl) => {
                ty.is_ident("Self") && n == name
            }
            (Callee::Method { name: n, .. }, Host::Impl) => {
                n == name
                    && matches!(args.first(), Some(CallArg::Struct { root, path, .. })
                        if path.is_empty() && self.body.roots[*root] == "self")
            }
            _ => false,
        }
    }

    /// The expression calling entry point `kind` (`fwd` or `tangent`) of `callee` with `values`
    /// (the arguments, then in forward mode their tangents). Unless the call is recursive, it
    /// goes through a stand-in that takes over when the callee is not `#[differentiable]`; the
    /// reverse pass then reports that as one error naming the callee. In `Mode::Value` (the
    /// plain function calling `fwd` for its results) the call is the reverse pass's without
    /// the check, which the reverse pass reports.
    pub(super) fn call_expr(
        &self,
        callee: &Callee,
        kind: &str,
        args: &[CallArg],
        mut values: Vec<TokenStream>,
        shape: &OutShape,
        mode: Mode,
    ) -> TokenStream {
        let kind = self.api().kind(kind);
        let recursive = self.is_recursive(callee, args);
        let check = mode == Mode::Reverse && !self.is_twin;
        let mode = match mode {
            Mode::Value => Mode::Reverse,
            mode => mode,
        };
        let name = callee.name();
        match callee {
            Callee::Function { path, turbofish } => {
                let entry = format_ident!("{}", kind);
                if recursive {
                    return quote!(#name::#entry #turbofish (#(#values),*));
                }
                let fallback = hidden("not_differentiable");
                let resolved = hidden("callee");
                let stand_in = fallback_fn(&entry, args, false, shape, mode, &[], self.carrier());
                let check = check.then(|| {
                    let text = name.to_string();
                    let message = match generated_from(&text) {
                        Some(base) if text.ends_with("_value_and_grad") => format!(
                            "`{name}` is differentiated when `{base}` has `{base}_hvp`, which its \
                             rules run, and its differentiated parameters are tensors and \
                             numbers: mark `{base}` `#[differentiable(hvp)]` or write it generic \
                             over its element type (or call `{base}` and `{base}_grad`)"
                        ),
                        Some(base) if text.ends_with("_vjp") => format!(
                            "`{name}` is differentiated when `{base}` has `{base}_hvp` (generic \
                             over its element type, or marked `#[differentiable(hvp)]`), whose \
                             dual numbers its rules run, has one differentiated parameter (a \
                             tensor, or a structure when `{base}` is generic) and returns one \
                             tensor: write `{base}` so, or call `{name}` outside the \
                             differentiated function"
                        ),
                        Some(base) if text.ends_with("_hvp") => format!(
                            "`{name}` is differentiated when `{base}` is generic over its element \
                             type (`<T: Element>`), which its rules run on dual numbers, has \
                             one differentiated parameter (a tensor or a structure) and returns \
                             one tensor: write `{base}` so, or call `{name}` outside the \
                             differentiated function"
                        ),
                        Some(base) if text.ends_with("_grad") || text.ends_with("_jvp") => {
                            format!(
                                "`{name}` is differentiated when `{base}` has `{base}_hvp`, which its \
                                 rules run: mark `{base}` `#[differentiable(hvp)]`, or write it \
                                 generic over its element type (`<T: Element>`); its parameters \
                                 must be tensors, numbers and structures deriving \
                                 `Differentiable` (generic over the element type)"
                            )
                        }
                        Some(base) => format!(
                            "`{name}` is what #[differentiable] generates from `{base}`; of those, \
                             only `{base}_grad`, `{base}_jvp`, `{base}_value_and_grad` (of a \
                             function with `{base}_hvp`), `{base}_vjp`, `{base}_hvp` and \
                             `let (y, pb) = {base}_pullback(..)` can be called inside a \
                             differentiated function so far: call `{name}` outside it, or wrap \
                             the differentiated argument in `stop_gradient(..)` to use its value \
                             as a constant"
                        ),
                        None => format!(
                            "`{name}` is not #[differentiable]: add #[differentiable] to it, or \
                             wrap the differentiated argument in `stop_gradient(..)`"
                        ),
                    };
                    let (items, bound) = check_trait(&message, "called with differentiated values");
                    let f = hidden("F");
                    let check_fn = hidden("check");
                    quote! {
                        #items
                        fn #check_fn<#f: ?::core::marker::Sized + #bound>() {}
                        #check_fn::<#resolved>();
                    }
                });
                // The stand-in is named like the callee in an outer block; the callee's own type,
                // where it exists, shadows it in the inner one.
                quote!({
                    mod #fallback {
                        pub struct #name {}
                        impl #name {
                            pub #stand_in
                        }
                    }
                    use #fallback::#name as #resolved;
                    {
                        use #path as #resolved;
                        #check
                        #resolved::#entry #turbofish (#(#values),*)
                    }
                })
            }
            Callee::Associated { turbofish, .. } | Callee::Method { turbofish, .. } => {
                let entry = format_ident!("{}_{}", name, kind);
                let method = matches!(callee, Callee::Method { .. });
                let head = match callee {
                    Callee::Associated { ty, .. } => quote!(#ty::#entry),
                    _ => {
                        values.remove(0);
                        // A field, an element or an owned parameter is borrowed: the real
                        // method takes `&self`, so it is found before the stand-in, which
                        // takes `&&self` (see below).
                        let receiver = self.receiver(&args[0]);
                        quote!(#receiver.#entry)
                    }
                };
                if recursive {
                    return quote!(#head #turbofish (#(#values),*));
                }
                // A trait in scope gives every type the entry point; the type's own one takes
                // precedence where it exists. For a structure's method the stand-in is the
                // trait's on references: the type's own (inherent, or a trait's: `impl Module
                // for Linear`, `M: Module`), which takes `&self`, matches the receiver `&T` as
                // it is, before the stand-in, which takes `&&T` and matches only once the
                // receiver is borrowed again (a trait's method and a stand-in found at the same
                // step would be ambiguous).
                let (items, bounds) = if check {
                    let text = name.to_string();
                    let message = match generated_from(&text) {
                        Some(base)
                            if ["_grad", "_jvp", "_vjp", "_hvp"]
                                .iter()
                                .any(|kind| text.ends_with(kind)) =>
                        {
                            format!(
                                "`{name}` is differentiated when `{base}` is a method of an \
                                 `impl` block under #[differentiable] (not on the method alone), \
                                 generic over its element type (`impl<T: Element> Critic<T>`), \
                                 which gives `{base}` the `{base}_hvp` its rules run (`_vjp` and \
                                 `_hvp`: of a method with one differentiated parameter, returning \
                                 one tensor)"
                            )
                        }
                        Some(base) => format!(
                            "`{name}` is what #[differentiable] generates from `{base}`; of a \
                             method's, only `{base}_grad`, `{base}_value_and_grad`, \
                             `{base}_jvp`, `{base}_vjp`, `{base}_hvp` and `let (y, pb) = \
                             self.{base}_pullback(..)` can be called inside a differentiated \
                             function so far: call `{name}` outside it, or wrap the \
                             differentiated argument in `stop_gradient(..)`"
                        ),
                        None if method => format!(
                            "`{name}` is not a #[differentiable] method of `{{Self}}`: add \
                             #[differentiable] to it or to its `impl` block"
                        ),
                        None => format!(
                            "`{name}` is not a #[differentiable] associated function of \
                             `{{Self}}`: add #[differentiable] to it or to its `impl` block, or \
                             wrap the differentiated argument in `stop_gradient(..)`"
                        ),
                    };
                    let (items, bound) = check_trait(&message, "called with differentiated values");
                    (items, vec![quote!(Self::__rune_Target: #bound)])
                } else {
                    (quote!(), vec![])
                };
                let stand_in =
                    fallback_fn(&entry, args, method, shape, mode, &bounds, self.carrier());
                let fallback = hidden("Fallback");
                let x = hidden("X");
                let borrowed_structure =
                    method && matches!(args[0], CallArg::Struct { borrowed: true, .. });
                let implementor = if borrowed_structure {
                    quote!(&#x)
                } else {
                    quote!(#x)
                };
                // `__rune_Target`: the type whose entry point the stand-in stands for.
                quote!({
                    #items
                    #[allow(non_camel_case_types)]
                    trait #fallback {
                        type __rune_Target: ?::core::marker::Sized;
                        #stand_in
                    }
                    impl<#x: ?::core::marker::Sized> #fallback for #implementor {
                        type __rune_Target = #x;
                    }
                    #head #turbofish (#(#values),*)
                })
            }
        }
    }
}

impl Emitter<'_> {
    /// A call of the callee itself, as the user wrote it (`g(x)`, `Model::g(m, x)`,
    /// `model.g(x)`), with the arguments the entry points take: what the plain function, which
    /// computes values only, runs.
    pub(super) fn plain_call_expr(&self, callee: &Callee, args: &[CallArg]) -> TokenStream {
        let mut values = self.call_args(args);
        match callee {
            Callee::Function { path, turbofish } => quote!(#path #turbofish (#(#values),*)),
            Callee::Associated {
                ty,
                name,
                turbofish,
            } => quote!(#ty::#name #turbofish (#(#values),*)),
            Callee::Method { name, turbofish } => {
                values.remove(0);
                let receiver = self.receiver(&args[0]);
                quote!(#receiver.#name #turbofish (#(#values),*))
            }
        }
    }

    /// A method call's receiver: a parameter that is a reference (`m: &M`, `&self`) as it is,
    /// a field, an element or an owned parameter borrowed (or cloned, where the method takes
    /// it by value), a constant in parentheses.
    fn receiver(&self, arg: &CallArg) -> TokenStream {
        match arg {
            CallArg::Struct {
                root,
                path,
                borrowed,
            } => {
                let p = path_tokens(&self.body.roots[*root], path);
                match *borrowed {
                    true if path.is_empty() && self.reference_root(*root) => p,
                    true => quote!((&#p)),
                    false => quote!(::core::clone::Clone::clone(&#p)),
                }
            }
            CallArg::Const(t) => quote!((#t)),
            CallArg::Val { .. } | CallArg::Array { .. } => {
                unreachable!("a receiver is a structure or a constant")
            }
        }
    }
}

/// The function whose generated entry point `name` is (`critic` for `critic_grad`), by the
/// entry points' suffixes.
fn generated_from(name: &str) -> Option<&str> {
    [
        "_value_and_grad",
        "_grad",
        "_vjp",
        "_jvp",
        "_pullback",
        "_hvp",
    ]
    .iter()
    .find_map(|suffix| name.strip_suffix(suffix))
    .filter(|base| !base.is_empty())
}
