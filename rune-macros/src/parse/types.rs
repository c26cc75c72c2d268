//! Questions about parameter and return types as written: which are tensors, structures,
//! collections or numbers, and their element types. The macro sees tokens, not types: these
//! answer from the syntax and the function's generics alone.

use quote::ToTokens;
use syn::Type;

/// Whether a parameter of type `ty` (behind any reference) is taken for a `Differentiable`
/// structure: a named type that is not a number, a tensor of masks or indices or one of the
/// standard containers, or a generic parameter of the function bounded by `Differentiable`.
pub(super) fn is_structure(ty: &Type, generics: &syn::Generics) -> bool {
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
    if generic {
        return p.path.segments.len() == 1 && bounded_by_differentiable(&last.ident, generics);
    }
    !constant.contains(&name.as_str())
}

/// Whether generic parameter `param` has a bound `Differentiable` (`M: Module + Differentiable`,
/// or in the where-clause): a structure whose type the caller chooses.
fn bounded_by_differentiable(param: &syn::Ident, generics: &syn::Generics) -> bool {
    let differentiable =
        |bounds: &syn::punctuated::Punctuated<syn::TypeParamBound, syn::Token![+]>| {
            bounds.iter().any(|b| {
                matches!(b, syn::TypeParamBound::Trait(t)
                if t.path.segments.last().is_some_and(|s| s.ident == "Differentiable"))
            })
        };
    let in_params = generics
        .type_params()
        .any(|t| t.ident == *param && differentiable(&t.bounds));
    let in_where = generics
        .where_clause
        .iter()
        .flat_map(|w| &w.predicates)
        .any(|p| {
            matches!(p, syn::WherePredicate::Type(t)
            if matches!(&t.bounded_ty, Type::Path(tp) if tp.path.is_ident(param))
                && differentiable(&t.bounds))
        });
    in_params || in_where
}

/// Whether a return type can be a tensor: `Tensor<..>`, or a name the macro cannot see through
/// (an alias, `Self::Output`), but not a number, a structure or a standard container.
pub(super) fn returns_tensor_like(ty: &Type, generics: &syn::Generics) -> bool {
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
pub(super) fn option_inner<'t>(ty: &'t Type, generics: &syn::Generics) -> Option<&'t Type> {
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
pub(super) fn result_parts(ty: &Type) -> Option<(Type, Type)> {
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
pub(super) fn option_of_ref(ty: &Type) -> bool {
    let Type::Path(p) = ty else { return false };
    let Some(last) = p.path.segments.last().filter(|s| s.ident == "Option") else {
        return false;
    };
    matches!(&last.arguments, syn::PathArguments::AngleBracketed(args)
        if matches!(args.args.first(), Some(syn::GenericArgument::Type(Type::Reference(_)))))
}

/// `f32` or `f64`, or their dual numbers `Dual<f64>` (as the dual-number twin of a function of
/// numbers takes them, `crate::twin`).
pub(super) fn is_float(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            if p.path.is_ident("f32") || p.path.is_ident("f64") {
                return true;
            }
            let Some(last) = p.path.segments.last().filter(|s| s.ident == "Dual") else {
                return false;
            };
            matches!(&last.arguments, syn::PathArguments::AngleBracketed(args)
                if matches!(args.args.first(), Some(syn::GenericArgument::Type(t)) if is_float(t)))
        }
        // A type passed through a `macro_rules!` fragment (`$t:ty`).
        Type::Group(g) => is_float(&g.elem),
        Type::Paren(p) => is_float(&p.elem),
        _ => false,
    }
}

/// `[f32; N]`, `[f64; N]`, a slice `[f64]` or a `Vec<f64>` (through `macro_rules!` groups).
pub(super) fn is_float_array(ty: &Type) -> bool {
    match ty {
        Type::Array(a) => is_float(&a.elem),
        Type::Slice(s) => is_float(&s.elem),
        Type::Path(_) => vec_element(ty).is_some_and(is_float),
        Type::Group(g) => is_float_array(&g.elem),
        Type::Paren(p) => is_float_array(&p.elem),
        _ => false,
    }
}

/// The number type of an array of numbers (`&[f64; 3]`, `&[f32]`, `Vec<f64>` → `f64`).
pub fn float_element(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Reference(r) => float_element(&r.elem),
        Type::Array(a) => Some(&*a.elem).filter(|e| is_float(e)),
        Type::Slice(s) => Some(&*s.elem).filter(|e| is_float(e)),
        Type::Path(_) => vec_element(ty).filter(|e| is_float(e)),
        Type::Group(g) => float_element(&g.elem),
        Type::Paren(p) => float_element(&p.elem),
        _ => None,
    }
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

/// `T` of `Vec<T>`.
fn vec_element(ty: &Type) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last().filter(|_| p.qself.is_none())?;
    match &last.arguments {
        syn::PathArguments::AngleBracketed(args) if last.ident == "Vec" => {
            match args.args.first() {
                Some(syn::GenericArgument::Type(t)) => Some(t),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether `ty` is a `Vec` or an array of differentiated tensors or structures: a structure of
/// parameters too (its gradient is a `Vec` or an array of the same shape).
pub(super) fn is_collection(ty: &Type, generics: &syn::Generics) -> bool {
    let element = match ty {
        Type::Array(a) => &*a.elem,
        Type::Slice(s) => &*s.elem,
        Type::Path(_) => {
            let Some(element) = vec_element(ty) else {
                return false;
            };
            element
        }
        _ => return false,
    };
    !matches!(element, Type::Reference(_))
        && (holds_float_tensor(element)
            || is_structure(element, generics)
            || is_collection(element, generics)
            || is_map(element, generics))
}

/// `V` of `BTreeMap<K, V>` or `HashMap<K, V>` (`HashMap<K, V, S>`).
fn map_value(ty: &Type) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last().filter(|_| p.qself.is_none())?;
    if last.ident != "BTreeMap" && last.ident != "HashMap" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let mut types = args.args.iter().filter_map(|a| match a {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    types.next()?;
    types.next()
}

/// Whether `ty` (behind a reference) is a `BTreeMap` or a `HashMap`: a structure parameter
/// indexed by key.
pub fn is_map_type(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => is_map_type(&r.elem),
        Type::Group(g) => is_map_type(&g.elem),
        other => map_value(other).is_some(),
    }
}

/// Whether `ty` is a `BTreeMap` or `HashMap` of differentiated tensors or structures: a
/// structure of parameters by name (its gradient is a map with the same keys).
pub(super) fn is_map(ty: &Type, generics: &syn::Generics) -> bool {
    map_value(ty).is_some_and(|value| {
        !matches!(value, Type::Reference(_))
            && (tensor_elem(value).is_some_and(|e| !is_nondiff_elem(e))
                || is_structure(value, generics)
                || is_collection(value, generics)
                || is_map(value, generics))
    })
}

/// Whether a tensor of a differentiable element type or a structure appears anywhere in `ty`
/// (not counting functions and trait objects): such a parameter must be differentiated or
/// marked `#[nodiff]`, never silently a constant.
pub(super) fn holds_differentiable(ty: &Type, generics: &syn::Generics) -> bool {
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

/// `Tensor<E>` → `E`, for a path whose last segment is `Tensor` with one type argument.
pub fn tensor_elem(ty: &Type) -> Option<&Type> {
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
pub(super) fn is_nondiff_elem(elem: &Type) -> bool {
    const NONDIFF: &[&str] = &[
        "bool", "i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize",
    ];
    single_ident(elem).is_some_and(|i| NONDIFF.iter().any(|n| i == n))
}

/// The name of a type written as one identifier (`f64`, `T`), if it is one.
pub fn single_ident(ty: &Type) -> Option<&syn::Ident> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.get_ident(),
        Type::Group(g) => single_ident(&g.elem),
        Type::Paren(p) => single_ident(&p.elem),
        _ => None,
    }
}

/// Whether `ty` is `target` or holds it (as a generic argument, an element, a referent).
pub fn contains_type(ty: &Type, target: &Type) -> bool {
    struct Finder<'t> {
        target: &'t Type,
        found: bool,
    }
    impl<'a> syn::visit::Visit<'a> for Finder<'_> {
        fn visit_type(&mut self, ty: &'a Type) {
            if ty == self.target {
                self.found = true;
            } else {
                syn::visit::visit_type(self, ty);
            }
        }
    }
    let mut f = Finder {
        target,
        found: false,
    };
    syn::visit::Visit::visit_type(&mut f, ty);
    f.found
}

/// Whether `ty` is or holds `Tensor<elem>` (by any path ending in `Tensor`).
pub fn contains_tensor_of(ty: &Type, elem: &Type) -> bool {
    struct Finder<'t> {
        elem: &'t Type,
        found: bool,
    }
    impl<'a> syn::visit::Visit<'a> for Finder<'_> {
        fn visit_path_segment(&mut self, seg: &'a syn::PathSegment) {
            if seg.ident == "Tensor" {
                if let syn::PathArguments::AngleBracketed(args) = &seg.arguments {
                    let is_elem = |a: &syn::GenericArgument| matches!(a, syn::GenericArgument::Type(t) if t == self.elem);
                    if args.args.len() == 1 && args.args.iter().all(is_elem) {
                        self.found = true;
                    }
                }
            }
            syn::visit::visit_path_segment(self, seg);
        }
    }
    let mut f = Finder { elem, found: false };
    syn::visit::Visit::visit_type(&mut f, ty);
    f.found
}
