//! `#[differentiable(dyn)]` on a trait: derivatives through `Box<dyn Trait>`, so that a model
//! holds layers of several types in one `Vec<Box<dyn Layer>>`, the way `nn.Sequential` does.
//!
//! The trait's entry points (`forward_fwd`, `forward_vjp`, ..) are generic (they return and take
//! `impl Trait`, with `where Self: Sized`), so a trait object cannot call them. Beside the trait
//! this writes:
//! - a hidden object-safe supertrait (`__RuneObjectLayer`) with one `fwd` and one `tangent` per
//!   differentiable method, whose pullback is an `Rc<dyn Fn>` and whose gradient and tangent of
//!   `self` are `Box<dyn Layer>`, and the `Differentiable` methods of the layer, boxed. A
//!   blanket impl gives it to every `Layer + Differentiable + 'static` type from that type's own
//!   entry points, so that an impl of the trait needs nothing more;
//! - `impl Clone`, `impl Differentiable` and `impl Layer` for `Box<dyn Layer>`, through the
//!   supertrait: the box is then a layer like any other, its gradient a box holding the
//!   gradient of the layer inside, and the entry points of a box are written around its `fwd`
//!   and `tangent` as for any method;
//! - `downcast_ref` on `dyn Layer`, to read a box's gradient as the layer type it holds.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::{FnArg, Ident, ItemFn, ItemTrait, Pat, TraitItem};

use super::api::EntryPoint;
use super::{rt, Api, Host, TraitMethod};
use crate::diag::Errors;
use crate::parse::{Passing, Returns, Signature};

/// A differentiable method of the trait, with its signature.
pub struct ObjectMethod {
    pub func: ItemFn,
    pub sig: Signature,
}

/// The name of the hidden supertrait of trait `name`.
pub fn object_trait(name: &Ident) -> Ident {
    format_ident!("__RuneObject{}", name)
}

/// The items written beside trait `tr` (as the user wrote it, without its supertrait) under
/// `#[differentiable(dyn)]`, whose differentiable methods are `methods`; `None` when the trait
/// cannot have them (the errors say why), and the trait is then written without the supertrait.
pub fn object_items(
    tr: &ItemTrait,
    methods: &[ObjectMethod],
    errors: &mut Errors,
) -> Option<TokenStream> {
    let before = errors.len();
    let rt = rt();
    let name = &tr.ident;
    let object = object_trait(name);
    let vis = &tr.vis;
    if tr
        .generics
        .params
        .iter()
        .any(|p| !matches!(p, syn::GenericParam::Type(_)))
    {
        errors.at(
            &tr.generics,
            "`#[differentiable(dyn)]` takes a trait whose generic parameters are types \
             (`Layer<T: Element>`): `Box<dyn Layer<T>>` has no lifetime or constant of its own",
        );
        return None;
    }
    let (impl_generics, ty_generics, where_clause) = tr.generics.split_for_impl();
    let names = Names {
        name,
        ty: quote!(#name #ty_generics),
        generics: &tr.generics,
    };
    let ty = &names.ty;
    for item in &tr.items {
        if !matches!(item, TraitItem::Fn(_)) {
            errors.at(
                item,
                "a `#[differentiable(dyn)]` trait has methods only: `Box<dyn Layer>` implements it \
                 by calling the layer inside",
            );
        }
    }
    let Some(elem) = element_type(methods) else {
        errors.at(
            name,
            "`#[differentiable(dyn)]` needs a differentiable method taking or returning a \
             `Tensor<E>`: `Box<dyn Layer>` holds tensors of that element type",
        );
        return None;
    };
    let boxed = quote!(::std::boxed::Box<dyn #ty>);
    let mut declarations = TokenStream::new();
    let mut blanket = TokenStream::new();
    let mut box_methods = TokenStream::new();
    for item in &tr.items {
        let TraitItem::Fn(method) = item else {
            continue;
        };
        let found = methods
            .iter()
            .find(|m| m.func.sig.ident == method.sig.ident);
        match found {
            Some(m) => {
                let Some(items) = method_items(&names, &object, m, errors) else {
                    continue;
                };
                declarations.extend(items.declarations);
                blanket.extend(items.blanket);
                box_methods.extend(items.box_methods);
            }
            None => box_methods.extend(forwarded(&names, method, errors)),
        }
    }
    // The batched twins (`__vmap_forward`), which the trait declares beside the methods.
    let declared = |m: &&ObjectMethod| {
        tr.items
            .iter()
            .any(|item| matches!(item, TraitItem::Fn(f) if f.sig.ident == m.func.sig.ident))
    };
    for m in methods.iter().filter(|m| !declared(m)) {
        if let Some(items) = method_items(&names, &object, m, errors) {
            declarations.extend(items.declarations);
            blanket.extend(items.blanket);
            box_methods.extend(items.box_methods);
        }
    }
    let message = format!(
        "`{{Self}}` cannot be a `{name}` of `Box<dyn {name}>`: a `#[differentiable(dyn)]` trait's \
         impls are `Differentiable` and `'static`"
    );
    let name_str = name.to_string();
    let leaves = quote!(::std::vec::Vec<&#rt::Tensor<#elem>>);
    let leaves_mut = quote!(::std::vec::Vec<&mut #rt::Tensor<#elem>>);
    let paths = quote!(::std::vec::Vec<::std::string::String>);
    let buffers = quote!(::std::vec::Vec<(::std::string::String, &#rt::Tensor<#elem>)>);
    let buffers_mut = quote!(::std::vec::Vec<(::std::string::String, &mut #rt::Tensor<#elem>)>);
    if errors.len() > before {
        return None;
    }
    let params = tr.generics.params.iter();
    let params = quote!(#(#params,)*);
    let predicates = where_clause.map(|w| {
        let p = w.predicates.iter();
        quote!(#(#p,)*)
    });
    Some(quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types, non_snake_case)]
        #[diagnostic::on_unimplemented(message = #message)]
        #vis trait #object #impl_generics: 'static #where_clause {
            fn __rune_clone_box(&self) -> #boxed;
            fn __rune_zeros_like(&self) -> #boxed;
            fn __rune_zero_tangent(&self) -> #boxed;
            fn __rune_as_tangent(&self) -> #boxed;
            fn __rune_leaves(&self) -> #leaves;
            fn __rune_leaves_mut(&mut self) -> #leaves_mut;
            fn __rune_leaf_paths(&self, prefix: &::core::primitive::str) -> #paths;
            fn __rune_buffers(&self, prefix: &::core::primitive::str) -> #buffers;
            fn __rune_buffers_mut(&mut self, prefix: &::core::primitive::str) -> #buffers_mut;
            fn __rune_any(&self) -> &dyn ::core::any::Any;
            #declarations
        }

        #[allow(unused, clippy::all, clippy::pedantic, clippy::nursery)]
        impl<#params __RuneLayer> #object #ty_generics for __RuneLayer
        where
            __RuneLayer: #ty + #rt::Differentiable + 'static,
            #predicates
        {
            fn __rune_clone_box(&self) -> #boxed {
                ::std::boxed::Box::new(::core::clone::Clone::clone(self))
            }
            fn __rune_zeros_like(&self) -> #boxed {
                ::std::boxed::Box::new(#rt::Differentiable::zeros_like(self))
            }
            fn __rune_zero_tangent(&self) -> #boxed {
                ::std::boxed::Box::new(#rt::Differentiable::zero_tangent(self))
            }
            fn __rune_as_tangent(&self) -> #boxed {
                ::std::boxed::Box::new(#rt::Differentiable::as_tangent(self))
            }
            fn __rune_leaves(&self) -> #leaves {
                #rt::object_leaves(#rt::Differentiable::leaves(self), #name_str)
            }
            fn __rune_leaves_mut(&mut self) -> #leaves_mut {
                #rt::object_leaves_mut(#rt::Differentiable::leaves_mut(self), #name_str)
            }
            fn __rune_leaf_paths(&self, prefix: &::core::primitive::str) -> #paths {
                #rt::Differentiable::leaf_paths(self, prefix)
            }
            fn __rune_buffers(&self, prefix: &::core::primitive::str) -> #buffers {
                let (paths, tensors): (#paths, _) =
                    #rt::Differentiable::buffers(self, prefix).into_iter().unzip();
                paths.into_iter().zip(#rt::object_leaves(tensors, #name_str)).collect()
            }
            fn __rune_buffers_mut(&mut self, prefix: &::core::primitive::str) -> #buffers_mut {
                let (paths, tensors): (#paths, _) =
                    #rt::Differentiable::buffers_mut(self, prefix).into_iter().unzip();
                paths.into_iter().zip(#rt::object_leaves_mut(tensors, #name_str)).collect()
            }
            fn __rune_any(&self) -> &dyn ::core::any::Any {
                self
            }
            #blanket
        }

        impl #impl_generics ::core::clone::Clone for #boxed #where_clause {
            fn clone(&self) -> Self {
                #object::__rune_clone_box(&**self)
            }
        }

        impl #impl_generics #rt::Differentiable for #boxed #where_clause {
            type Elem = #elem;
            fn zeros_like(&self) -> Self {
                #object::__rune_zeros_like(&**self)
            }
            fn zero_tangent(&self) -> Self {
                #object::__rune_zero_tangent(&**self)
            }
            fn as_tangent(&self) -> Self {
                #object::__rune_as_tangent(&**self)
            }
            fn leaves(&self) -> #leaves {
                #object::__rune_leaves(&**self)
            }
            fn leaves_mut(&mut self) -> #leaves_mut {
                #object::__rune_leaves_mut(&mut **self)
            }
            fn leaf_paths(&self, prefix: &::core::primitive::str) -> #paths {
                #object::__rune_leaf_paths(&**self, prefix)
            }
            fn buffers(&self, prefix: &::core::primitive::str) -> #buffers {
                #object::__rune_buffers(&**self, prefix)
            }
            fn buffers_mut(&mut self, prefix: &::core::primitive::str) -> #buffers_mut {
                #object::__rune_buffers_mut(&mut **self, prefix)
            }
        }

        impl #impl_generics #ty for #boxed #where_clause {
            #box_methods
        }

        impl #impl_generics dyn #ty #where_clause {
            /// The layer inside, if it is an `L` (a box's gradient holds the gradient of the
            /// layer inside, of the same type).
            #[allow(dead_code)]
            pub fn downcast_ref<L: #ty + 'static>(&self) -> ::core::option::Option<&L> {
                #object::__rune_any(self).downcast_ref::<L>()
            }
        }
    })
}

/// The element type of the trait's tensors: of the first tensor parameter or tensor returned.
fn element_type(methods: &[ObjectMethod]) -> Option<syn::Type> {
    methods.iter().find_map(|m| {
        m.sig
            .active()
            .find(|(_, a)| !a.structure)
            .map(|(_, a)| a.elem.clone())
            .or_else(|| {
                let returned = match &m.sig.returns {
                    Returns::Single(t) => Some(t),
                    Returns::Tuple(ts) => ts.first(),
                    Returns::Aux { value, .. } => Some(value),
                };
                returned.and_then(|t| crate::parse::tensor_elem(t).cloned())
            })
    })
}

/// The trait as the items name it.
struct Names<'a> {
    /// The trait's name, for messages.
    name: &'a Ident,
    /// The trait as a type, with its generic arguments (`Layer<T>`).
    ty: TokenStream,
    /// The trait's generics, which the impls for the box take.
    generics: &'a syn::Generics,
}

/// What one differentiable method adds to each item.
struct MethodItems {
    /// The supertrait's `fwd` and `tangent`.
    declarations: TokenStream,
    /// Their definitions for every layer type.
    blanket: TokenStream,
    /// The method and its entry points for `Box<dyn Trait>`.
    box_methods: TokenStream,
}

/// The items of differentiable method `m` of trait `name`, or `None` (with errors) for a method
/// a trait object cannot carry.
fn method_items(
    names: &Names,
    object: &Ident,
    m: &ObjectMethod,
    errors: &mut Errors,
) -> Option<MethodItems> {
    let rt = rt();
    let (func, sig) = (&m.func, &m.sig);
    let method = &func.sig.ident;
    let before = errors.len();
    if !func.sig.generics.params.is_empty() {
        errors.at(
            &func.sig.generics,
            "a method of a `#[differentiable(dyn)]` trait has no generic parameters: a trait \
             object calls it",
        );
    }
    if sig.fallible.is_some() || sig.array_out.is_some() || sig.scalar_out {
        errors.at(
            &func.sig.output,
            "a method of a `#[differentiable(dyn)]` trait returns a tensor or a tuple of tensors",
        );
    }
    if matches!(sig.returns, Returns::Aux { .. }) {
        errors.at(
            &func.sig.ident,
            "a method of a `#[differentiable(dyn)]` trait takes no `has_aux`",
        );
    }
    let Some(first) = sig.params.first().filter(|p| p.ident == "self") else {
        errors.at(
            &func.sig.ident,
            "a method of a `#[differentiable(dyn)]` trait takes `&self`",
        );
        return None;
    };
    if first.active.is_none() || !matches!(first.ty, syn::Type::Reference(_)) {
        errors.at(
            &func.sig.inputs,
            "a method of a `#[differentiable(dyn)]` trait takes `&self`, differentiated",
        );
    }
    let rest = &sig.params[1..];
    for p in rest {
        if p.active.as_ref().is_some_and(|a| a.structure || a.scalar) {
            errors.at(
                &p.ty,
                "a method of a `#[differentiable(dyn)]` trait takes tensors and constants besides \
                 `&self`: pass a structure's tensors, or mark it #[nodiff]",
            );
        }
    }
    if errors.len() > before {
        return None;
    }

    let (name, ty) = (names.name, &names.ty);
    let boxed = quote!(::std::boxed::Box<dyn #ty>);
    let fwd = format_ident!("__rune_object_{}_fwd", method);
    let tangent = format_ident!("__rune_object_{}_tangent", method);
    let params: Vec<TokenStream> = rest
        .iter()
        .map(|p| {
            let (ident, ty) = (&p.ident, &p.ty);
            quote!(#ident: #ty)
        })
        .collect();
    let args: Vec<&Ident> = rest.iter().map(|p| &p.ident).collect();
    let ret = sig.return_type();
    let cot = sig.cotangent_type();
    let value = sig.value_type();
    let slots: Vec<TokenStream> = sig.slot_types().into_iter().skip(1).collect();
    let slot_indices = (1..sig.params.len()).map(syn::Index::from);
    let active: Vec<&crate::parse::Param> = rest.iter().filter(|p| p.active.is_some()).collect();
    let tangent_params: Vec<TokenStream> = active
        .iter()
        .map(|p| {
            let t = format_ident!("__rune_tangent_of_{}", p.ident);
            let ty = Signature::grad_type(p);
            quote!(#t: &#ty)
        })
        .collect();
    // The concrete `tangent`'s slots: the tangents given, `NoTangent` for constants.
    let tangent_slots: Vec<TokenStream> = rest
        .iter()
        .map(|p| match p.active {
            Some(_) => format_ident!("__rune_tangent_of_{}", p.ident).into_token_stream(),
            None => quote!(#rt::NoTangent),
        })
        .collect();
    let pullback = quote!(::std::rc::Rc<dyn ::core::ops::Fn(#cot) -> (#boxed, #(#slots,)*)>);
    let declarations = quote! {
        fn #fwd(&self, #(#params),*) -> (#ret, #pullback);
        fn #tangent(&self, #(#params,)* __rune_self_tangent: &dyn #ty, #(#tangent_params),*)
            -> (#ret, #value);
    };
    let concrete_fwd = format_ident!("{}_fwd", method);
    let concrete_tangent = format_ident!("{}_tangent", method);
    let trait_method = format!("{name}::{method}");
    let blanket = quote! {
        fn #fwd(&self, #(#params),*) -> (#ret, #pullback) {
            let (__rune_value, __rune_pullback) =
                <__RuneLayer as #ty>::#concrete_fwd(self, #(#args),*);
            (__rune_value, ::std::rc::Rc::new(move |__rune_cotangent: #cot| {
                let __rune_slots = ::core::clone::Clone::clone(&__rune_pullback)(__rune_cotangent);
                (::std::boxed::Box::new(__rune_slots.0) as #boxed, #(__rune_slots.#slot_indices,)*)
            }))
        }
        fn #tangent(&self, #(#params,)* __rune_self_tangent: &dyn #ty, #(#tangent_params),*)
            -> (#ret, #value)
        {
            let __rune_self_tangent = #rt::object_tangent::<__RuneLayer>(
                #object::__rune_any(__rune_self_tangent),
                #trait_method,
            );
            <__RuneLayer as #ty>::#concrete_tangent(self, #(#args,)* __rune_self_tangent, #(#tangent_slots),*)
        }
    };
    Some(MethodItems {
        declarations,
        blanket,
        box_methods: box_entry_points(names, object, m, &fwd, &tangent, errors),
    })
}

/// The method and its entry points in `impl Trait for Box<dyn Trait>`: `fwd` and `tangent`
/// call the layer's through the supertrait; the public ones are written around them.
fn box_entry_points(
    names: &Names,
    object: &Ident,
    m: &ObjectMethod,
    fwd: &Ident,
    tangent: &Ident,
    errors: &mut Errors,
) -> TokenStream {
    let rt = rt();
    let (func, sig) = (&m.func, &m.sig);
    let ty = &names.ty;
    let trait_path: syn::Path = syn::parse_quote!(#ty);
    let trait_method = TraitMethod::new(Some(&trait_path), Some(names.generics), func);
    let api = Api {
        func,
        sig,
        host: Host::Impl,
        is_twin: false,
        hvp_twin: false,
        trait_method: Some(&trait_method),
        inherent: None,
    };
    let rest = &sig.params[1..];
    let args: Vec<&Ident> = rest.iter().map(|p| &p.ident).collect();
    let cot = sig.cotangent_type();
    let mut items = forwarded_fn(names, func, errors);
    let expected = api.expected_value(&api.original_path());
    for entry in EntryPoint::ALL {
        let Some(decl) = api.declare(entry) else {
            continue;
        };
        let body = match entry {
            EntryPoint::Fwd => quote! {
                let (__rune_value, __rune_pullback) = #object::#fwd(&**self, #(#args),*);
                (__rune_value, move |__rune_cotangent: #cot| __rune_pullback(__rune_cotangent))
            },
            EntryPoint::Tangent => {
                let self_slot = crate::names::tangent_param(0);
                let tangents = rest
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.active.is_some())
                    .map(|(i, p)| {
                        let slot = crate::names::tangent_param(i + 1);
                        let ident = &p.ident;
                        let primal = match p.active.as_ref().map(|a| a.passing) {
                            Some(Passing::Owned) => quote!(&#ident),
                            _ => quote!(#ident),
                        };
                        quote!(&#rt::TangentSlot::tangent_or_zeros(#slot, #primal))
                    });
                quote! {
                    let __rune_self_tangent = #rt::StructTangentSlot::tangent_or_zeros(#self_slot, self);
                    #object::#tangent(&**self, #(#args,)* &*__rune_self_tangent, #(#tangents),*)
                }
            }
            wrapper => {
                let Some(body) = api.wrapper_body(
                    wrapper,
                    &api.hidden_path("fwd"),
                    &api.hidden_path("tangent"),
                    expected.as_ref(),
                ) else {
                    errors.at(
                        &func.sig.ident,
                        "a method of a `#[differentiable(dyn)]` trait has no `hvp`",
                    );
                    continue;
                };
                body
            }
        };
        items.extend(api.write(&decl, body));
    }
    items
}

/// `method` of the trait, not differentiable, in `impl Trait for Box<dyn Trait>`: it calls the
/// layer's; a method a trait object cannot call keeps its default body.
fn forwarded(names: &Names, method: &syn::TraitItemFn, errors: &mut Errors) -> TokenStream {
    let sized = method.sig.generics.where_clause.as_ref().is_some_and(|w| {
        w.predicates
            .iter()
            .any(|p| quote!(#p).to_string().replace(' ', "") == "Self:Sized")
    });
    if sized || !method.sig.generics.params.is_empty() || method.sig.receiver().is_none() {
        if method.default.is_none() {
            errors.at(
                &method.sig.ident,
                "`Box<dyn ..>` cannot implement a required method that a trait object cannot \
                 call (generic, without `self`, or `where Self: Sized`): give it a default body",
            );
        }
        return TokenStream::new();
    }
    let func = ItemFn {
        attrs: Vec::new(),
        vis: syn::Visibility::Inherited,
        sig: method.sig.clone(),
        block: Box::new(syn::parse_quote!({})),
    };
    forwarded_fn(names, &func, errors)
}

/// `func` with a body that calls the layer inside the box.
fn forwarded_fn(names: &Names, func: &ItemFn, errors: &mut Errors) -> TokenStream {
    let mut sig = func.sig.clone();
    let mut args = Vec::new();
    for input in &mut sig.inputs {
        match input {
            FnArg::Receiver(r) => r.attrs.clear(),
            FnArg::Typed(t) => {
                t.attrs.clear();
                match &*t.pat {
                    Pat::Ident(i) => args.push(i.ident.clone()),
                    other => errors.at(
                        other,
                        "a method of a `#[differentiable(dyn)]` trait names each parameter",
                    ),
                }
            }
        }
    }
    let receiver = match sig.receiver() {
        Some(r) if r.mutability.is_some() => quote!(&mut **self),
        _ => quote!(&**self),
    };
    let (method, ty) = (&sig.ident, &names.ty);
    quote! {
        #sig {
            <dyn #ty as #ty>::#method(#receiver, #(#args),*)
        }
    }
}
