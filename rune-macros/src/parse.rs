//! Parsing: the attribute's options and the function's signature model (which parameters are
//! differentiated, what the function returns).

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{FnArg, Ident, ItemFn, Meta, Pat, ReturnType, Token, Type};

use crate::diag::Errors;

/// Options of `#[differentiable(..)]`.
#[derive(Default)]
pub struct Options {
    /// `has_aux`: the function returns `(value, aux)` and only `value` is differentiated.
    pub has_aux: bool,
    /// `checkpoint`: callers recompute this function's forward pass in their backward pass
    /// instead of keeping its intermediates.
    pub checkpoint: bool,
    /// `custom_vjp = rule`: `rule(params.., cotangent) -> grads` replaces the derived VJP.
    pub custom_vjp: Option<syn::Path>,
    /// `custom_jvp = rule`: `rule(params.., tangents..) -> tangent` replaces the derived JVP.
    pub custom_jvp: Option<syn::Path>,
    /// `hvp`: also generate `f_hvp` for a function on a concrete element type (generic
    /// functions always get it).
    pub hvp: bool,
}

/// Parses the attribute's arguments, recording unknown ones.
pub fn options(args: TokenStream, errors: &mut Errors) -> Options {
    let mut options = Options::default();
    let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args) {
        Ok(m) => m,
        Err(e) => {
            errors.push(e);
            return options;
        }
    };
    for meta in metas {
        match &meta {
            Meta::Path(p) if p.is_ident("has_aux") => options.has_aux = true,
            Meta::Path(p) if p.is_ident("checkpoint") => options.checkpoint = true,
            Meta::Path(p) if p.is_ident("hvp") => options.hvp = true,
            Meta::NameValue(nv)
                if nv.path.is_ident("custom_vjp") || nv.path.is_ident("custom_jvp") =>
            {
                let rule = match &nv.value {
                    syn::Expr::Path(p) if p.qself.is_none() => Some(p.path.clone()),
                    other => {
                        errors.at(other, "name the rule function: `custom_vjp = my_rule`");
                        None
                    }
                };
                if nv.path.is_ident("custom_vjp") {
                    options.custom_vjp = rule;
                } else {
                    options.custom_jvp = rule;
                }
            }
            _ => errors.at(
                &meta,
                "unknown argument of #[differentiable]; supported: `has_aux`, `checkpoint`, `hvp`, \
                 `custom_vjp = rule`, `custom_jvp = rule`",
            ),
        }
    }
    if let (Some(vjp), None) = (&options.custom_vjp, &options.custom_jvp) {
        // A custom VJP says the body's derivative is not the one wanted; forward mode derived
        // from the body would then disagree with reverse mode without a word.
        errors.at(
            vjp,
            "`custom_vjp` needs a forward-mode rule beside it: add `custom_jvp = rule`, \
             `rule(params.., tangents..) -> tangent`, so that `f_jvp` and the forward mode of \
             callers agree with the custom reverse mode",
        );
    }
    options
}

/// How a parameter is passed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Passing {
    /// `&Tensor<E>`
    Borrowed,
    /// `Tensor<E>`
    Owned,
}

/// One parameter of the function.
pub struct Param {
    pub ident: Ident,
    /// The parameter's type as written.
    pub ty: Type,
    /// Whether the pattern had `mut`.
    pub mutable: bool,
    /// `Some` for a differentiated tensor parameter.
    pub active: Option<Active>,
}

/// A differentiated parameter.
pub struct Active {
    pub passing: Passing,
    /// The element type `E` of `Tensor<E>` (for a struct, its `Differentiable::Elem`).
    pub elem: Type,
    /// A structure of tensors (`#[derive(Differentiable)]`) rather than one tensor.
    pub structure: bool,
    /// A number (`f32`/`f64`, by value or reference) of a function returning a number: a 0-d
    /// tensor inside, a number in the generated functions' signatures.
    pub scalar: bool,
    /// How a structure parameter enters the generated passes.
    pub entry: Entry,
}

/// How a structure parameter enters the generated passes: as it is, or as the owned
/// `Differentiable` value it copies into (cheap: tensors share their buffers).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    AsIs,
    /// `&[X]` as the `Vec<X>` it copies into.
    SliceToVec,
    /// `Option<&X>` as the `Option<X>` it clones into.
    OptionCloned,
}

/// Whether a parameter of type `ty` (behind any reference) is taken for a `Differentiable`
/// structure: a named type that is not a number, a tensor of masks or indices, one of the
/// standard containers, or a generic parameter of the function.
fn is_structure(ty: &Type, generics: &syn::Generics) -> bool {
    let Type::Path(p) = ty else { return false };
    if p.qself.is_some() {
        return false;
    }
    let Some(last) = p.path.segments.last() else {
        return false;
    };
    let name = last.ident.to_string();
    let constant = [
        "f32",
        "f64",
        "i8",
        "i16",
        "i32",
        "i64",
        "i128",
        "isize",
        "u8",
        "u16",
        "u32",
        "u64",
        "u128",
        "usize",
        "bool",
        "char",
        "str",
        "String",
        "Vec",
        "Option",
        "Box",
        "Rc",
        "Arc",
        "HashMap",
        "BTreeMap",
        "HashSet",
        "BTreeSet",
        "Range",
        "PhantomData",
        "Result",
        "Tensor",
        "Dual",
    ];
    let generic = generics.type_params().any(|t| t.ident == name);
    !constant.contains(&name.as_str()) && !generic
}

/// Whether a return type can be a tensor: `Tensor<..>`, or a name the macro cannot see through
/// (an alias, `Self::Output`), but not a number, a structure or a standard container.
fn returns_tensor_like(ty: &Type, generics: &syn::Generics) -> bool {
    match ty {
        Type::Paren(p) => returns_tensor_like(&p.elem, generics),
        Type::Group(g) => returns_tensor_like(&g.elem, generics),
        Type::Path(p) => {
            let Some(last) = p.path.segments.last() else {
                return false;
            };
            if last.ident == "Tensor" {
                return true;
            }
            let numbers = [
                "f32", "f64", "bool", "usize", "isize", "i32", "i64", "u32", "u64",
            ];
            !numbers.contains(&last.ident.to_string().as_str())
                && !is_structure(ty, generics)
                && !["Vec", "Option", "Result", "String", "Box"]
                    .contains(&last.ident.to_string().as_str())
        }
        _ => false,
    }
}

/// `X` of `Option<X>` or `Option<&X>` when `X` is a differentiated tensor or structure: an
/// optional parameter (its gradient is an `Option`).
fn option_inner<'t>(ty: &'t Type, generics: &syn::Generics) -> Option<&'t Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last().filter(|s| s.ident == "Option")?;
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let Some(syn::GenericArgument::Type(t)) = args.args.first() else {
        return None;
    };
    let inner = match t {
        Type::Reference(r) if r.mutability.is_none() => &*r.elem,
        Type::Reference(_) => return None,
        other => other,
    };
    let tensor = tensor_elem(inner).is_some_and(|e| !is_nondiff_elem(e));
    (tensor || is_structure(inner, generics)).then_some(inner)
}

/// `(T, E)` of `Result<T, E>`.
fn result_parts(ty: &Type) -> Option<(Type, Type)> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last().filter(|s| s.ident == "Result")?;
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let mut types = args.args.iter().filter_map(|a| match a {
        syn::GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    });
    Some((types.next()?, types.next()?))
}

/// Whether `ty` is `Option<&X>`.
fn option_of_ref(ty: &Type) -> bool {
    let Type::Path(p) = ty else { return false };
    let Some(last) = p.path.segments.last().filter(|s| s.ident == "Option") else {
        return false;
    };
    matches!(&last.arguments, syn::PathArguments::AngleBracketed(args)
        if matches!(args.args.first(), Some(syn::GenericArgument::Type(Type::Reference(_)))))
}

/// `f32` or `f64`.
fn is_float(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && (p.path.is_ident("f32") || p.path.is_ident("f64")))
}

/// `ty` as a user writes it (`Option<&Tensor<f64>>`), for messages.
pub fn type_text(ty: &Type) -> String {
    ty.to_token_stream()
        .to_string()
        .replace(" < ", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace("& ", "&")
        .replace(" ,", ",")
        .replace(" ;", ";")
}

/// Whether `ty` is a `Vec` or an array of differentiated tensors or structures: a structure of
/// parameters too (its gradient is a `Vec` or an array of the same shape).
fn is_collection(ty: &Type, generics: &syn::Generics) -> bool {
    let element = match ty {
        Type::Array(a) => &*a.elem,
        Type::Slice(s) => &*s.elem,
        Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return false;
            };
            match &last.arguments {
                syn::PathArguments::AngleBracketed(args) if last.ident == "Vec" => {
                    match args.args.first() {
                        Some(syn::GenericArgument::Type(t)) => t,
                        _ => return false,
                    }
                }
                _ => return false,
            }
        }
        _ => return false,
    };
    !matches!(element, Type::Reference(_))
        && (holds_float_tensor(element)
            || is_structure(element, generics)
            || is_collection(element, generics))
}

/// Whether a tensor of a differentiable element type or a structure appears anywhere in `ty`
/// (not counting functions and trait objects): such a parameter must be differentiated or
/// marked `#[nodiff]`, never silently a constant.
fn holds_differentiable(ty: &Type, generics: &syn::Generics) -> bool {
    struct Finder<'g>(bool, &'g syn::Generics);
    impl<'a> syn::visit::Visit<'a> for Finder<'_> {
        fn visit_type(&mut self, t: &'a Type) {
            match t {
                Type::BareFn(_) | Type::ImplTrait(_) | Type::TraitObject(_) => {}
                _ => {
                    if tensor_elem(t).is_some_and(|e| !is_nondiff_elem(e))
                        || is_structure(t, self.1)
                    {
                        self.0 = true;
                    }
                    syn::visit::visit_type(self, t);
                }
            }
        }
    }
    let mut f = Finder(false, generics);
    syn::visit::Visit::visit_type(&mut f, ty);
    f.0
}

/// Whether a tensor of a differentiable element type appears anywhere in `ty`.
fn holds_float_tensor(ty: &Type) -> bool {
    struct Finder(bool);
    impl<'a> syn::visit::Visit<'a> for Finder {
        fn visit_type(&mut self, t: &'a Type) {
            if tensor_elem(t).is_some_and(|e| !is_nondiff_elem(e)) {
                self.0 = true;
            }
            syn::visit::visit_type(self, t);
        }
    }
    let mut f = Finder(false);
    syn::visit::Visit::visit_type(&mut f, ty);
    f.0
}

/// What the function returns.
#[allow(clippy::large_enum_variant)] // one per macro invocation
pub enum Returns {
    /// One tensor.
    Single(Type),
    /// A tuple of tensors.
    Tuple(Vec<Type>),
    /// `(value, aux)` under `has_aux`.
    Aux { value: Type, aux: Type },
}

/// The signature model.
pub struct Signature {
    pub params: Vec<Param>,
    pub returns: Returns,
    /// The error type `E` of a function returning `Result<value, E>` (its body uses `?` and ends
    /// with `Ok(value)`): every generated function returns a `Result` with it.
    pub fallible: Option<Type>,
    /// The function returns a number (`f32`/`f64`): its value, tangent and cotangent are numbers.
    pub scalar_out: bool,
}

/// `Tensor<E>` → `E`, for a path whose last segment is `Tensor` with one type argument.
fn tensor_elem(ty: &Type) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    if p.qself.is_some() {
        return None;
    }
    let last = p.path.segments.last()?;
    if last.ident != "Tensor" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first() {
        Some(syn::GenericArgument::Type(t)) if args.args.len() == 1 => Some(t),
        _ => None,
    }
}

/// Element types that are never differentiated (masks and indices).
fn is_nondiff_elem(elem: &Type) -> bool {
    let text = elem.to_token_stream().to_string();
    matches!(
        text.as_str(),
        "bool" | "i8" | "i16" | "i32" | "i64" | "isize" | "u8" | "u16" | "u32" | "u64" | "usize"
    )
}

/// Builds the signature model, removing `#[nodiff]` from the function's parameters.
pub fn signature(func: &mut ItemFn, options: &Options, errors: &mut Errors) -> Option<Signature> {
    let generics = func.sig.generics.clone();
    // A function returning `Result<value, E>` is differentiated as one returning `value`.
    let fallible = match &mut func.sig.output {
        ReturnType::Type(_, t) => result_parts(t),
        ReturnType::Default => None,
    };
    let value_output = match (&fallible, &func.sig.output) {
        (Some((value, _)), _) => ReturnType::Type(Default::default(), Box::new(value.clone())),
        (None, output) => output.clone(),
    };
    let fallible = fallible.map(|(_, e)| e);
    // A function returning a number differentiates its number parameters.
    let scalar_out = matches!(&value_output, ReturnType::Type(_, t) if is_float(t));
    let sig = &mut func.sig;
    for (what, present) in [
        ("async", sig.asyncness.is_some()),
        ("unsafe", sig.unsafety.is_some()),
        ("const", sig.constness.is_some()),
        ("variadic", sig.variadic.is_some()),
    ] {
        if present {
            errors.at(
                sig.fn_token,
                format!("#[differentiable] does not support {what} functions"),
            );
        }
    }
    let mut params = Vec::new();
    for input in sig.inputs.iter_mut() {
        let attrs = match input {
            FnArg::Typed(pt) => &mut pt.attrs,
            FnArg::Receiver(r) => &mut r.attrs,
        };
        let mut nodiff = false;
        attrs.retain(|a| {
            if a.path().is_ident("nodiff") {
                nodiff = true;
                false
            } else {
                true
            }
        });
        // `self` is a parameter named `self` of type `Self`, `&Self` (or as written).
        let (ident, mutable, ty) = match &*input {
            FnArg::Receiver(r) => (
                Ident::new("self", r.self_token.span),
                r.mutability.is_some(),
                (*r.ty).clone(),
            ),
            FnArg::Typed(pt) => match &*pt.pat {
                Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    (pi.ident.clone(), pi.mutability.is_some(), (*pt.ty).clone())
                }
                other => {
                    errors.at(
                        other,
                        "parameters of a #[differentiable] function must be plain names",
                    );
                    continue;
                }
            },
        };
        let (inner, passing, mutable_ref) = match &ty {
            Type::Reference(r) => (&*r.elem, Passing::Borrowed, r.mutability.is_some()),
            other => (other, Passing::Owned, false),
        };
        let active = match tensor_elem(inner) {
            None if scalar_out && !nodiff && !mutable_ref && is_float(inner) => Some(Active {
                passing,
                elem: inner.clone(),
                structure: false,
                scalar: true,
                entry: Entry::AsIs,
            }),
            Some(elem) if !nodiff && !is_nondiff_elem(elem) => {
                if mutable_ref {
                    errors.at(
                        &ty,
                        "a differentiated parameter cannot be `&mut Tensor`: take `&Tensor` or \
                         `Tensor` and return the new value (or mark it #[nodiff])",
                    );
                    continue;
                }
                Some(Active {
                    passing,
                    elem: elem.clone(),
                    structure: false,
                    scalar: false,
                    entry: Entry::AsIs,
                })
            }
            None if !nodiff
                && (is_structure(inner, &generics) || is_collection(inner, &generics)) =>
            {
                if mutable_ref {
                    errors.at(
                        &ty,
                        "a differentiated parameter cannot be `&mut`: take `&Model` or `Model` \
                         (or mark it #[nodiff])",
                    );
                    continue;
                }
                Some(Active {
                    passing,
                    elem: match inner {
                        Type::Slice(sl) => {
                            let e = &sl.elem;
                            syn::parse_quote!(<::std::vec::Vec<#e> as ::rune_ad::__private::Differentiable>::Elem)
                        }
                        _ => {
                            syn::parse_quote!(<#inner as ::rune_ad::__private::Differentiable>::Elem)
                        }
                    },
                    structure: true,
                    scalar: false,
                    entry: if matches!(inner, Type::Slice(_)) {
                        Entry::SliceToVec
                    } else {
                        Entry::AsIs
                    },
                })
            }
            None if !nodiff && option_inner(inner, &generics).is_some() => {
                let owned = Signature::grad_type_of(inner);
                Some(Active {
                    passing,
                    elem: syn::parse_quote!(<#owned as ::rune_ad::__private::Differentiable>::Elem),
                    structure: true,
                    scalar: false,
                    entry: if option_of_ref(inner) {
                        Entry::OptionCloned
                    } else {
                        Entry::AsIs
                    },
                })
            }
            None if !nodiff && holds_differentiable(&ty, &generics) => {
                errors.at(
                    &ty,
                    format!(
                        "#[differentiable] cannot differentiate a parameter of type `{}`: take a \
                         `Tensor`, `&Tensor`, a `Differentiable` structure, or a `Vec`, array or \
                         slice of them, or mark it `#[nodiff]` to make it a constant",
                        type_text(&ty)
                    ),
                );
                continue;
            }
            _ => None,
        };
        params.push(Param {
            ident,
            ty,
            mutable,
            active,
        });
    }
    if !params.iter().any(|p| p.active.is_some()) && errors.is_empty() {
        errors.at(
            &sig.ident,
            "a #[differentiable] function needs at least one differentiated parameter: a \
             `Tensor<T>`, `&Tensor<T>` or `Differentiable` structure without #[nodiff]",
        );
    }
    let returns = match &value_output {
        ReturnType::Default => {
            errors.at(
                &sig.ident,
                "a #[differentiable] function must return a tensor or a tuple of tensors",
            );
            return None;
        }
        ReturnType::Type(_, ty) => match (&**ty, options.has_aux) {
            (Type::Tuple(t), true) if t.elems.len() == 2 => Returns::Aux {
                value: t.elems[0].clone(),
                aux: t.elems[1].clone(),
            },
            (other, true) => {
                errors.at(
                    other,
                    "#[differentiable(has_aux)] needs the function to return a pair \
                     `(Tensor<T>, Aux)`",
                );
                return None;
            }
            (Type::Tuple(t), false) if !t.elems.is_empty() => {
                Returns::Tuple(t.elems.iter().cloned().collect())
            }
            (other, false) => {
                if !scalar_out && !returns_tensor_like(other, &generics) {
                    errors.at(
                        other,
                        format!(
                            "a #[differentiable] function returns a tensor, a tuple of tensors or \
                             a number (`f32`, `f64`), not `{}`",
                            type_text(other)
                        ),
                    );
                    return None;
                }
                Returns::Single(other.clone())
            }
        },
    };
    Some(Signature {
        params,
        returns,
        fallible,
        scalar_out,
    })
}

impl Signature {
    /// The differentiated parameters.
    pub fn active(&self) -> impl Iterator<Item = (&Param, &Active)> {
        self.params
            .iter()
            .filter_map(|p| p.active.as_ref().map(|a| (p, a)))
    }

    /// The number of outputs that are differentiated.
    pub fn outputs(&self) -> usize {
        match &self.returns {
            Returns::Single(_) | Returns::Aux { .. } => 1,
            Returns::Tuple(ts) => ts.len(),
        }
    }

    /// The full return type.
    pub fn return_type(&self) -> TokenStream {
        match &self.returns {
            Returns::Single(t) => quote!(#t),
            Returns::Tuple(ts) => quote!((#(#ts,)*)),
            Returns::Aux { value, aux } => quote!((#value, #aux)),
        }
    }

    /// The type of the differentiated value(s): the return type without the aux.
    pub fn value_type(&self) -> TokenStream {
        match &self.returns {
            Returns::Single(t) | Returns::Aux { value: t, .. } => quote!(#t),
            Returns::Tuple(ts) => quote!((#(#ts,)*)),
        }
    }

    /// The cotangent type: `&Tensor<E>`, or a tuple of them.
    pub fn cotangent_type(&self) -> TokenStream {
        match &self.returns {
            Returns::Single(t) | Returns::Aux { value: t, .. } => quote!(&#t),
            Returns::Tuple(ts) => quote!((#(&#ts,)*)),
        }
    }

    /// The gradient type of parameter `p` (its tensor type, owned).
    pub fn grad_type(p: &Param) -> TokenStream {
        Self::grad_type_of(&p.ty)
    }

    /// The gradient type of a parameter of type `ty`: itself, owned (`Option<&X>` → `Option<X>`,
    /// `&[X]` → `Vec<X>`).
    pub fn grad_type_of(ty: &Type) -> TokenStream {
        if let Type::Path(p) = ty {
            if let Some(last) = p.path.segments.last().filter(|s| s.ident == "Option") {
                if let syn::PathArguments::AngleBracketed(args) = &last.arguments {
                    if let Some(syn::GenericArgument::Type(Type::Reference(r))) = args.args.first()
                    {
                        let inner = &r.elem;
                        return quote!(::core::option::Option<#inner>);
                    }
                }
            }
        }
        match ty {
            // A slice's gradient is a `Vec` of its elements' gradients.
            Type::Reference(r) if matches!(&*r.elem, Type::Slice(_)) => {
                let Type::Slice(s) = &*r.elem else {
                    unreachable!("matched")
                };
                let elem = &s.elem;
                quote!(::std::vec::Vec<#elem>)
            }
            Type::Reference(r) => r.elem.to_token_stream(),
            other => other.to_token_stream(),
        }
    }

    /// The gradients' type: one gradient, or a tuple in parameter order.
    pub fn grads_type(&self) -> TokenStream {
        let types: Vec<_> = self.active().map(|(p, _)| Self::grad_type(p)).collect();
        if types.len() == 1 {
            types[0].clone()
        } else {
            quote!((#(#types,)*))
        }
    }

    /// The slot type of each parameter in a pullback's result.
    pub fn slot_types(&self) -> Vec<TokenStream> {
        self.params
            .iter()
            .map(|p| match p.active {
                Some(_) => Self::grad_type(p),
                None => quote!(::rune_ad::__private::NoGrad),
            })
            .collect()
    }
}
