//! The generated entry points: the hidden `fwd` and `tangent` that callers' passes call, and the
//! public `f_vjp`, `f_jvp`, `f_grad`, `f_value_and_grad`, `f_pullback` and `f_hvp`, written
//! around them; and the stubs written in their place when the function has errors.
//!
//! [`EntryPoint`] lists them once. [`Api::declare`] gives each one's declaration (its name,
//! parameters and return type, from the signature alone); [`Emitter::emit`] writes that with
//! the real body, [`Emitter::stubs`] with one that never runs, so that callers of a function
//! with errors type-check against the same items and see its one error, not a cascade.

use proc_macro2::Span;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::{Ident, ItemFn};

use super::{lints, rt, Api, Emitter, Generated, Host, Inherent, TraitMethod};
use crate::parse::{single_ident, Param, Returns, Signature};

/// A generated entry point.
#[derive(Clone, Copy)]
pub(super) enum EntryPoint {
    /// `fwd` (hidden): the value and a pullback that returns one gradient slot per parameter.
    Fwd,
    /// `dual_fwd` (hidden), of a function generic over its element type: `fwd`, for the
    /// dual-number twins of its callers.
    DualFwd,
    /// `dual_tangent` (hidden): likewise `tangent`.
    DualTangent,
    /// `tangent` (hidden): the value and its tangent, from one tangent slot per parameter.
    Tangent,
    /// `f_hvp`: the gradient and the Hessian times directions.
    Hvp,
    /// `f_pullback`: the value and a pullback callable many times.
    Pullback,
    /// `f_vjp`: the value and a cotangent pulled back.
    Vjp,
    /// `f_jvp`: the value and a tangent pushed forward.
    Jvp,
    /// `f_value_and_grad`.
    ValueAndGrad,
    /// `f_grad` (in a dual-number twin, the hidden `dual_grad` that `f_hvp` runs).
    Grad,
}

impl EntryPoint {
    /// Every entry point, in the order they are written.
    pub(super) const ALL: [EntryPoint; 10] = [
        EntryPoint::Fwd,
        EntryPoint::DualFwd,
        EntryPoint::DualTangent,
        EntryPoint::Tangent,
        EntryPoint::Hvp,
        EntryPoint::Pullback,
        EntryPoint::Vjp,
        EntryPoint::Jvp,
        EntryPoint::ValueAndGrad,
        EntryPoint::Grad,
    ];

    /// The kind of a hidden entry point (`fwd` in `f::fwd`), the suffix of a public one (`vjp`
    /// in `f_vjp`).
    fn suffix(self) -> &'static str {
        match self {
            EntryPoint::Fwd => "fwd",
            EntryPoint::DualFwd => "dual_fwd",
            EntryPoint::DualTangent => "dual_tangent",
            EntryPoint::Tangent => "tangent",
            EntryPoint::Hvp => "hvp",
            EntryPoint::Pullback => "pullback",
            EntryPoint::Vjp => "vjp",
            EntryPoint::Jvp => "jvp",
            EntryPoint::ValueAndGrad => "value_and_grad",
            EntryPoint::Grad => "grad",
        }
    }
}

/// An entry point's declaration: everything but its body.
#[derive(Clone)]
pub(super) struct Decl {
    /// Written among the hidden entry points (see [`Generated`]).
    pub(super) hidden: bool,
    /// The doc comment (or `#[doc(hidden)]`), `#[inline]`, the lints and `#[track_caller]`.
    pub(super) attrs: TokenStream,
    /// The same without `#[inline]`, for a declaration without a body (in a trait).
    pub(super) prototype_attrs: TokenStream,
    pub(super) name: Ident,
    /// The parameters, as written between the parentheses.
    pub(super) params: TokenStream,
    pub(super) ret: TokenStream,
    /// A body of the return type that never runs, for the stubs.
    pub(super) stub: TokenStream,
    /// Bounds of this entry point alone, added to the function's where-clause (what `f_hvp`
    /// needs of a structure parameter, so that a structure without it fails at a call of
    /// `f_hvp`, not at the function).
    pub(super) bounds: Vec<syn::WherePredicate>,
}

/// The parameter of `f_jvp` holding the tangent of differentiated parameter `p`.
fn tangent_param(p: &Param) -> Ident {
    format_ident!("{}_tangent", p.ident, span = Span::mixed_site())
}

/// The parameter of `f_vjp` holding the cotangent.
fn cotangent() -> Ident {
    Ident::new("cotangent", Span::mixed_site())
}

impl Api<'_> {
    /// The declaration of `entry`, or `None` when this function does not get it.
    pub(super) fn declare(&self, entry: EntryPoint) -> Option<Decl> {
        let rt = rt();
        let sig = self.sig;
        // Parameters as declared (without `#[nodiff]`), keeping `mut` only where the body may
        // need it (constants); wrappers pass every parameter through unchanged.
        let params_decl: Vec<TokenStream> = sig
            .params
            .iter()
            .map(|p| {
                let (ident, ty) = (&p.ident, &p.ty);
                let m = (p.mutable && p.active.is_none()).then(|| quote!(mut));
                quote!(#m #ident: #ty)
            })
            .collect();
        let params_plain: Vec<TokenStream> = sig
            .params
            .iter()
            .map(|p| {
                let (ident, ty) = (&p.ident, &p.ty);
                quote!(#ident: #ty)
            })
            .collect();
        let ret = sig.return_type();
        let cot_ty = sig.cotangent_type();
        let slot_types = sig.slot_types();
        let grads_ty = sig.grads_type();
        let tangent_ty = sig.value_type();
        // Tangent slots: differentiated parameters take `&Tensor` or `NoTangent`; others ignore
        // theirs.
        let tangent_slots: Vec<TokenStream> = sig
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let slot = crate::names::tangent_param(i);
                match &p.active {
                    Some(a) if a.structure => {
                        let ty = Signature::grad_type(p);
                        quote!(#slot: impl #rt::StructTangentSlot<#ty>)
                    }
                    Some(a) if a.array => {
                        let ty = Signature::grad_type(p);
                        quote!(#slot: impl #rt::ArrayTangentSlot<#ty>)
                    }
                    Some(a) => {
                        let e = &a.elem;
                        quote!(#slot: impl #rt::TangentSlot<#e>)
                    }
                    None => quote!(#slot: impl #rt::IgnoredTangent),
                }
            })
            .collect();
        let pullback_ty =
            quote!(impl ::core::ops::FnOnce(#cot_ty) -> (#(#slot_types,)*) + ::core::clone::Clone);
        // A function returning `Result<value, E>`: every generated function returns a `Result`.
        let fwd_ret = self.fallible_type(quote!((#ret, #pullback_ty)));
        let tangent_ret = self.fallible_type(quote!((#ret, #tangent_ty)));
        // The public entry points give a function returning an array its value, tangent and
        // cotangent as arrays; the hidden ones carry tuples.
        let (entry_ret, entry_cot) = (sig.entry_return_type(), sig.entry_cotangent_type());
        let entry_tangent = sig.entry_value_type();
        let jvp_ret = self.fallible_type(quote!((#entry_ret, #entry_tangent)));
        let grads_ret = self.fallible_type(quote!((#entry_ret, #grads_ty)));
        // A function generic over its element type serves dual-number twins of its callers
        // directly: its dual entry points are its own.
        let generic_elem = sig
            .active()
            .next()
            .is_some_and(|(_, a)| self.generic_over(&a.elem));
        // Gradients need a one-element value: tuple-valued functions get `f_vjp` and `f_jvp` only.
        let one_element = !matches!(sig.returns, Returns::Tuple(_));
        let twin = self.is_twin;
        // A stub returning a closure returns one; the others never return.
        let closure_stub =
            self.ok(quote!((::core::unreachable!(), |_: #cot_ty| ::core::unreachable!())));
        let unreachable = quote!(::core::unreachable!());
        let link = self.link();
        // The parameters, the return type, the stub, and the doc comment of a public entry
        // point (a hidden one, which callers' passes call, has none).
        let (params, ret, stub, doc) = match entry {
            EntryPoint::Fwd => (quote!(#(#params_decl),*), fwd_ret, closure_stub, None),
            EntryPoint::DualFwd if generic_elem && !twin => {
                (quote!(#(#params_plain),*), fwd_ret, closure_stub, None)
            }
            EntryPoint::DualTangent if generic_elem && !twin => (
                quote!(#(#params_plain,)* #(#tangent_slots),*),
                tangent_ret,
                unreachable,
                None,
            ),
            EntryPoint::Tangent => (
                quote!(#(#params_decl,)* #(#tangent_slots),*),
                tangent_ret,
                unreachable,
                None,
            ),
            EntryPoint::Hvp => {
                self.hvp_elem()?;
                let directions = self.hvp_directions();
                (
                    quote!(#(#params_plain,)* #(#directions),*),
                    quote!((#grads_ty, #grads_ty)),
                    unreachable,
                    Some(format!(" The gradient of {link} and its Hessian times the given directions (forward over reverse: the reverse pass run on dual numbers).")),
                )
            }
            EntryPoint::Pullback if !twin => (
                quote!(#(#params_plain),*),
                self.fallible_type(
                    quote!((#entry_ret, impl ::core::ops::Fn(#entry_cot) -> #grads_ty)),
                ),
                self.ok(quote!((::core::unreachable!(), |_: #entry_cot| ::core::unreachable!()))),
                Some(format!(" The value of {link} and its pullback: a function that takes a cotangent of the value's shape and returns the gradients, callable many times (the forward pass runs once).")),
            ),
            EntryPoint::Vjp if !twin => {
                let cotangent = cotangent();
                (
                    quote!(#(#params_plain,)* #cotangent: #entry_cot),
                    grads_ret,
                    unreachable,
                    Some(format!(" Reverse mode of {link}: its value and the cotangent pulled back to each differentiated parameter.")),
                )
            }
            EntryPoint::Jvp if !twin => {
                let tangent_params = sig.active().map(|(p, a)| {
                    let t = tangent_param(p);
                    // A list of numbers `&[f64]` takes its tangent as a slice too.
                    if a.array && a.entry == crate::parse::Entry::SliceToVec {
                        let ty = &p.ty;
                        return quote!(#t: #ty);
                    }
                    let ty = Signature::grad_type(p);
                    quote!(#t: &#ty)
                });
                (
                    quote!(#(#params_plain,)* #(#tangent_params),*),
                    jvp_ret,
                    unreachable,
                    Some(format!(" Forward mode of {link}: its value and the directional derivative along the given tangents.")),
                )
            }
            EntryPoint::ValueAndGrad if one_element && !twin => (
                quote!(#(#params_plain),*),
                grads_ret,
                unreachable,
                Some(format!(" The value of {link} and its gradient (the value must have one element).")),
            ),
            EntryPoint::Grad if one_element => {
                let grad_ret = match &sig.returns {
                    Returns::Aux { aux, .. } => quote!((#grads_ty, #aux)),
                    _ => grads_ty.clone(),
                };
                (
                    quote!(#(#params_plain),*),
                    self.fallible_type(grad_ret),
                    unreachable,
                    Some(format!(" The gradient of {link} (whose value must have one element).")),
                )
            }
            _ => return None,
        };
        let lints = lints();
        // A twin has only what `f_hvp` runs: its gradient, hidden.
        let (hidden, name, doc, track_caller) = match doc.filter(|_| !twin) {
            Some(doc) => {
                let track_caller = matches!(
                    entry,
                    EntryPoint::Hvp | EntryPoint::Vjp | EntryPoint::ValueAndGrad | EntryPoint::Grad
                )
                .then(|| quote!(#[track_caller]));
                let name = self.public_name(entry.suffix());
                (false, name, quote!(#[doc = #doc]), track_caller)
            }
            None => (
                true,
                self.hidden_name(entry.suffix()),
                quote!(#[doc(hidden)]),
                None,
            ),
        };
        let bounds = match entry {
            EntryPoint::Hvp => self.hvp_bounds(),
            _ => Vec::new(),
        };
        Some(Decl {
            bounds,
            hidden,
            attrs: quote!(#doc #[inline] #lints #track_caller),
            prototype_attrs: quote!(#doc #lints #track_caller),
            name,
            params,
            ret: super::capturing(ret, self.trait_method),
            stub,
        })
    }

    /// The item `decl` with `body`.
    pub(super) fn write(&self, decl: &Decl, body: TokenStream) -> TokenStream {
        let Decl {
            attrs,
            name,
            params,
            ret,
            ..
        } = decl;
        let vis = &self.func.vis;
        let mut generics = match self.trait_method {
            Some(t) => t.bounded(&self.func.sig.generics),
            None => self.func.sig.generics.clone(),
        };
        if !decl.bounds.is_empty() {
            let clause = generics.make_where_clause();
            clause.predicates.extend(decl.bounds.iter().cloned());
        }
        let where_clause = &generics.where_clause;
        quote! {
            #attrs
            #vis fn #name #generics (#params) -> #ret #where_clause {
                #body
            }
        }
    }
}

impl Generated {
    /// `item`, among the hidden or the public entry points as `decl` says.
    fn push(&mut self, decl: &Decl, item: TokenStream) {
        if decl.hidden {
            self.hidden.extend(item);
        } else {
            self.public.extend(item);
        }
    }
}

/// Whether `ty` is a plain number or `bool` (passed by copy).
fn is_copy_number(ty: &syn::Type) -> bool {
    const NUMBERS: &[&str] = &[
        "f32", "f64", "bool", "usize", "isize", "u8", "u16", "u32", "u64", "i8", "i16", "i32",
        "i64",
    ];
    single_ident(ty).is_some_and(|i| NUMBERS.iter().any(|n| i == n))
}

impl Api<'_> {
    /// `let __rune_expected = ..;`: the plain function's value on the same arguments when values
    /// are checked (`CHECK_VALUES`, debug builds), for [`check_same_value`], run by `original`.
    /// Nothing is checked for a function with a parameter that cannot be passed twice (`&mut`,
    /// or owned and not known to be `Clone`).
    pub(super) fn expected_value(&self, original: &TokenStream) -> Option<TokenStream> {
        let rt = rt();
        let mut args = Vec::new();
        for p in &self.sig.params {
            let ident = &p.ident;
            let arg = match &p.ty {
                syn::Type::Reference(r) if r.mutability.is_none() => quote!(#ident),
                syn::Type::Reference(_) => return None,
                _ if p.active.is_some() => quote!(::core::clone::Clone::clone(&#ident)),
                ty if is_copy_number(ty) => quote!(#ident),
                _ => return None,
            };
            args.push(arg);
        }
        let turbofish = self.turbofish();
        Some(quote! {
            let __rune_expected = if #rt::CHECK_VALUES && ::core::cfg!(debug_assertions) {
                ::core::option::Option::Some(#original #turbofish (#(#args),*))
            } else {
                ::core::option::Option::None
            };
        })
    }

    /// `::<T, ..>` of the function's own generic parameters.
    fn turbofish(&self) -> TokenStream {
        let (_, ty_generics, _) = self.func.sig.generics.split_for_impl();
        ty_generics.as_turbofish().into_token_stream()
    }

    /// The body of public entry point `entry` (`f_pullback`, `f_vjp`, `f_jvp`,
    /// `f_value_and_grad` or `f_grad`; `None` for the others), written around the hidden `fwd`
    /// and `tangent` that `fwd` and `tangent` call. `expected`: see [`Self::expected_value`].
    pub(super) fn wrapper_body(
        &self,
        entry: EntryPoint,
        fwd: &TokenStream,
        tangent: &TokenStream,
        expected: Option<&TokenStream>,
    ) -> Option<TokenStream> {
        let rt = rt();
        let turbofish = self.turbofish();
        let name_str = self.name().to_string();
        let names: Vec<&Ident> = self.sig.params.iter().map(|p| &p.ident).collect();
        let cot_ty = self.sig.entry_cotangent_type();
        // A function returning an array: its value and tangent from the passes' tuples, its
        // cotangent into one.
        let arrays = self.sig.array_out.is_some();
        let entry_value =
            arrays.then(|| quote!(let __rune_value = #rt::array_value(__rune_value);));
        let entry_out = arrays.then(|| {
            quote!(let __rune_out = (#rt::array_value(__rune_out.0), #rt::array_value(__rune_out.1));)
        });
        let cotangent = cotangent();
        let cotangent_in = if arrays {
            quote!(#rt::array_cotangent(#cotangent))
        } else {
            cotangent.to_token_stream()
        };
        let active_indices: Vec<syn::Index> = self
            .sig
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.active.is_some())
            .map(|(i, _)| syn::Index::from(i))
            .collect();
        let grads_from_slots = if active_indices.len() == 1 {
            let i = &active_indices[0];
            quote!(__rune_slots.#i)
        } else {
            quote!((#(__rune_slots.#active_indices,)*))
        };
        let tangent_args: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .map(|p| match p.active {
                Some(_) => tangent_param(p).into_token_stream(),
                None => quote!(#rt::NoTangent),
            })
            .collect();
        let question = self.question();
        let has_aux = matches!(self.sig.returns, Returns::Aux { .. });
        let value_of = if has_aux {
            quote!(&__rune_value.0)
        } else {
            quote!(&__rune_value)
        };
        // With the `check-values` feature, in debug builds, each public entry point also runs the
        // plain function and checks that it returns exactly its value.
        let check = |variant: &str, value: TokenStream| {
            if expected.is_none() {
                return quote!();
            }
            let value = if has_aux {
                quote!(&(#value).0)
            } else {
                quote!(&#value)
            };
            // The plain function's value: inside `Ok` for a function returning a `Result` (an
            // error there is not compared), without the aux.
            let plain = if self.sig.fallible.is_some() {
                quote!(__rune_expected
                    .as_ref()
                    .and_then(|__rune_r| ::core::result::Result::as_ref(__rune_r).ok()))
            } else {
                quote!(__rune_expected.as_ref())
            };
            let expected = if has_aux {
                quote!(#plain.map(|__rune_e| &__rune_e.0))
            } else {
                plain
            };
            quote!(#rt::check_same_value(#name_str, #variant, #expected, #value);)
        };
        // The value and the gradients, `(__rune_value, __rune_grads)`.
        let value_and_grads = |variant: &str| {
            let check = check(variant, quote!(__rune_value));
            quote! {
                #expected
                let (__rune_value, __rune_pullback) = #fwd #turbofish (#(#names),*) #question;
                #check
                let __rune_seed = #rt::scalar_seed(#name_str, #value_of);
                let __rune_slots = __rune_pullback(&__rune_seed);
                let __rune_grads = #grads_from_slots;
            }
        };
        Some(match entry {
            EntryPoint::Pullback => {
                let check = check("pullback", quote!(__rune_value));
                let out = self.ok(quote! {
                    (__rune_value, move |#cotangent: #cot_ty| {
                        let __rune_slots = ::core::clone::Clone::clone(&__rune_pullback)(#cotangent_in);
                        #grads_from_slots
                    })
                });
                quote! {
                    #expected
                    let (__rune_value, __rune_pullback) = #fwd #turbofish (#(#names),*) #question;
                    #entry_value
                    #check
                    #out
                }
            }
            EntryPoint::Vjp => {
                let check = check("vjp", quote!(__rune_value));
                let out = self.ok(quote!((__rune_value, #grads_from_slots)));
                quote! {
                    #expected
                    let (__rune_value, __rune_pullback) = #fwd #turbofish (#(#names),*) #question;
                    #entry_value
                    #check
                    #rt::check_cotangent(#name_str, #value_of, &#cotangent);
                    let __rune_slots = __rune_pullback(#cotangent_in);
                    #out
                }
            }
            EntryPoint::Jvp => {
                let check = check("jvp", quote!(__rune_out.0));
                let out = self.ok(quote!(__rune_out));
                quote! {
                    #expected
                    let __rune_out = #tangent #turbofish (#(#names,)* #(#tangent_args),*) #question;
                    #entry_out
                    #check
                    #out
                }
            }
            EntryPoint::ValueAndGrad => {
                let value_and_grads = value_and_grads("value_and_grad");
                let out = self.ok(quote!((__rune_value, __rune_grads)));
                quote!(#value_and_grads #out)
            }
            EntryPoint::Grad => {
                let value_and_grads = value_and_grads("value_and_grad");
                let out = self.ok(if has_aux {
                    quote!((__rune_grads, __rune_value.1))
                } else {
                    quote!(__rune_grads)
                });
                quote!(#value_and_grads #out)
            }
            _ => return None,
        })
    }
}

impl Emitter<'_> {
    /// All generated items: the hidden entry points (for a free function, the items of the
    /// type of its name), then the public ones.
    pub fn emit(&self) -> Generated {
        let api = self.api();
        let turbofish = api.turbofish();
        let names: Vec<&Ident> = self.sig.params.iter().map(|p| &p.ident).collect();
        let reverse = self.reverse_body();
        let tangent = match &self.options.custom_jvp {
            Some(rule) => self.custom_tangent_body(rule),
            None => self.tangent_body(),
        };
        let tangent_path = api.hidden_path("tangent");
        // With a custom VJP or a checkpoint, callers reach this function through `fwd`, whose
        // pullback runs the rule or recomputes; its own entry points use the derived pass.
        let derived = if self.options.checkpoint || self.options.custom_vjp.is_some() {
            "fwd_derived"
        } else {
            "fwd"
        };
        let derived_path = api.hidden_path(derived);
        let entry_fwd = if self.options.custom_vjp.is_some() {
            api.hidden_path("fwd")
        } else {
            derived_path.clone()
        };
        let outer_fwd = match (&self.options.custom_vjp, self.options.checkpoint) {
            (Some(rule), _) => Some(self.custom_pullback_body(rule)),
            (None, true) => Some(self.checkpoint_body(&derived_path)),
            (None, false) => None,
        };
        // The derivatives stand for the original: it counts as used (a twin has none).
        let uses_original = (!self.is_twin).then(|| {
            let original = api.original_path();
            quote!(let _ = #original #turbofish;)
        });
        // A dual-number twin has no plain function of its own to compare with; where the plain
        // function runs fused code, the body as written is compared.
        let expected = (!self.is_twin)
            .then(|| {
                let original = if self.fuses_plain() {
                    api.hidden_path("original")
                } else {
                    api.original_path()
                };
                api.expected_value(&original)
            })
            .flatten();

        let mut generated = Generated {
            hidden: TokenStream::new(),
            public: TokenStream::new(),
        };
        for entry in EntryPoint::ALL {
            let Some(decl) = api.declare(entry) else {
                continue;
            };
            let body = match entry {
                EntryPoint::Fwd => match &outer_fwd {
                    // The derived pass is `fwd_derived`; `fwd` runs the rule or recomputes.
                    Some(outer) => {
                        let derived = Decl {
                            name: api.hidden_name(derived),
                            ..decl.clone()
                        };
                        generated.push(
                            &derived,
                            api.write(&derived, quote!(#uses_original #reverse)),
                        );
                        outer.clone()
                    }
                    None => quote!(#uses_original #reverse),
                },
                EntryPoint::DualFwd => {
                    let fwd_path = api.hidden_path("fwd");
                    quote!(#fwd_path #turbofish (#(#names),*))
                }
                EntryPoint::DualTangent => {
                    let slot_names: Vec<Ident> = (0..self.sig.params.len())
                        .map(crate::names::tangent_param)
                        .collect();
                    quote!(#tangent_path #turbofish (#(#names,)* #(#slot_names),*))
                }
                EntryPoint::Tangent => quote!(#uses_original #tangent),
                EntryPoint::Hvp => self.hvp_body(),
                wrapper => api
                    .wrapper_body(wrapper, &entry_fwd, &tangent_path, expected.as_ref())
                    .expect("every other entry point is a wrapper"),
            };
            generated.push(&decl, api.write(&decl, body));
        }
        if let Some(item) = api.hvp_opt_in() {
            generated.public.extend(item);
        }
        if self.fuses_plain() {
            generated.hidden.extend(self.original_item());
        }
        generated
    }

    /// The function as the user wrote it, hidden (`f::original`), where the plain function runs
    /// the fused code ([`Self::plain_body`]): its attributes but the doc comment, and its body.
    fn original_item(&self) -> TokenStream {
        let mut original = self.func.clone();
        original.sig.ident = self.api().hidden_name("original");
        original.attrs.retain(|a| !a.path().is_ident("doc"));
        original.attrs.push(syn::parse_quote!(#[doc(hidden)]));
        original.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
        if !original.attrs.iter().any(|a| a.path().is_ident("inline")) {
            original.attrs.push(syn::parse_quote!(#[inline]));
        }
        original.into_token_stream()
    }

    /// Every entry point's declaration with a body that never runs, emitted beside the errors so
    /// that callers do not see a cascade of missing-function errors. Without the function's
    /// options, a function on a concrete element type gets no `f_hvp` stub.
    pub fn stubs(
        func: &ItemFn,
        sig: &Signature,
        host: Host,
        trait_method: Option<&TraitMethod>,
        inherent: Option<&Inherent>,
    ) -> Generated {
        let api = Api {
            func,
            sig,
            host,
            is_twin: false,
            hvp_twin: false,
            trait_method,
            inherent,
        };
        let mut generated = Generated {
            hidden: TokenStream::new(),
            public: TokenStream::new(),
        };
        for decl in EntryPoint::ALL.into_iter().filter_map(|e| api.declare(e)) {
            generated.push(&decl, api.write(&decl, decl.stub.clone()));
        }
        generated
    }
}
