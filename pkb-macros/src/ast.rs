//! The model of an annotated fn: its documentation, its context and state parameters, and its
//! arguments.

use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, FnArg, Ident, ItemFn, Lit, Meta, Pat, Type};

use crate::arg::{self, ArgRules};

/// One annotated fn, ready for validation and expansion.
pub struct Handler {
    /// The fn as the user wrote it, minus the attributes the macro consumes on parameters.
    pub item: ItemFn,
    /// The doc comment, joined and trimmed.
    pub doc: Option<String>,
    /// The parameters in declaration order.
    pub params: Vec<Param>,
}

/// A parameter: the framework's context, the application's state (`#[state] s: &T`, holding
/// `T`), or an argument the client sends.
pub enum Param {
    Context,
    State(Box<Type>),
    Argument(Box<Argument>),
}

/// An argument the client sends, with its schema rules.
pub struct Argument {
    pub ident: Ident,
    pub ty: Type,
    pub doc: Option<String>,
    pub rules: ArgRules,
}

impl Handler {
    /// The arguments alone, in order.
    pub fn arguments(&self) -> impl Iterator<Item = &Argument> {
        self.params.iter().filter_map(|p| match p {
            Param::Argument(a) => Some(&**a),
            Param::Context | Param::State(_) => None,
        })
    }

    /// The type of the application state the fn takes, if it takes one.
    pub fn state(&self) -> Option<&Type> {
        self.params.iter().find_map(|p| match p {
            Param::State(ty) => Some(&**ty),
            _ => None,
        })
    }
}

/// Parses `item` as an `async fn` for `macro_name`. On a hard parse failure the tokens are
/// returned untouched so they can be re-emitted.
pub fn from_syn(
    item: TokenStream,
    macro_name: &str,
    errors: &mut Vec<syn::Error>,
) -> Result<Handler, TokenStream> {
    let mut item: ItemFn = match syn::parse2(item.clone()) {
        Ok(item) => item,
        Err(_) => {
            errors.push(syn::Error::new(
                Span::call_site(),
                format!("`#[{macro_name}]` applies to an `async fn`"),
            ));
            return Err(item);
        }
    };
    let sig = &item.sig;
    if sig.asyncness.is_none() {
        errors.push(syn::Error::new(
            sig.fn_token.span,
            format!("`#[{macro_name}]` needs an `async fn`: add `async` before `fn`"),
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        let message =
            format!("`#[{macro_name}]` fns cannot be generic: use concrete argument types");
        // `new_spanned` underlines the whole `<...>` (or `where ...`), not just its first token.
        errors.push(match &sig.generics.where_clause {
            Some(where_clause) if sig.generics.params.is_empty() => {
                syn::Error::new_spanned(where_clause, message)
            }
            _ => syn::Error::new_spanned(&sig.generics, message),
        });
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(syn::Error::new(
            variadic.span(),
            "variadic arguments are not supported",
        ));
    }
    let doc = doc_of(&item.attrs);
    let mut params = Vec::new();
    let mut context_seen = false;
    let mut state_seen = false;
    for input in item.sig.inputs.iter_mut() {
        match input {
            FnArg::Receiver(receiver) => errors.push(syn::Error::new_spanned(
                &*receiver,
                format!(
                    "`#[{macro_name}]` fns are free functions: remove `self` and reach shared state through `ctx: &Context`"
                ),
            )),
            FnArg::Typed(pat_type) => {
                let rules = arg::parse(&pat_type.attrs, errors);
                let arg_doc = doc_of(&pat_type.attrs);
                let state_attr = pat_type
                    .attrs
                    .iter()
                    .find(|a| a.path().is_ident("state"))
                    .cloned();
                pat_type.attrs.retain(|a| {
                    !a.path().is_ident("arg") && !a.path().is_ident("doc") && !a.path().is_ident("state")
                });
                if let Some(attr) = state_attr {
                    if let Some(ty) = state_param(&attr, &pat_type.ty, &rules, state_seen, errors) {
                        params.push(Param::State(Box::new(ty)));
                    }
                    state_seen = true;
                    continue;
                }
                match context_kind(&pat_type.ty) {
                    ContextKind::Shared => {
                        if context_seen {
                            errors.push(syn::Error::new_spanned(
                                &pat_type.ty,
                                "only one `&Context` parameter is allowed",
                            ));
                        }
                        context_seen = true;
                        reject_rules_on_context(&rules, errors);
                        params.push(Param::Context);
                        continue;
                    }
                    ContextKind::Wrong(message) => {
                        errors.push(syn::Error::new_spanned(&pat_type.ty, message));
                        params.push(Param::Context);
                        continue;
                    }
                    ContextKind::NotContext => {}
                }
                let ident = match &*pat_type.pat {
                    Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => {
                        pat.ident.clone()
                    }
                    other => {
                        errors.push(syn::Error::new(
                            other.span(),
                            "arguments must be plain names such as `query: String`; patterns are not supported",
                        ));
                        continue;
                    }
                };
                if let Type::Reference(reference) = &*pat_type.ty {
                    errors.push(syn::Error::new_spanned(
                        reference,
                        "arguments are deserialized into owned values: use an owned type such as `String` instead of a reference",
                    ));
                    continue;
                }
                params.push(Param::Argument(Box::new(Argument {
                    ident,
                    ty: (*pat_type.ty).clone(),
                    doc: arg_doc,
                    rules,
                })));
            }
        }
    }
    Ok(Handler { item, doc, params })
}

/// The `T` of a `#[state] name: &T` parameter, or `None` after reporting why it is not one.
fn state_param(
    attr: &Attribute,
    ty: &Type,
    rules: &ArgRules,
    state_seen: bool,
    errors: &mut Vec<syn::Error>,
) -> Option<Type> {
    if !matches!(attr.meta, Meta::Path(_)) {
        errors.push(syn::Error::new_spanned(
            &attr.meta,
            "`#[state]` takes no arguments: write `#[state] store: &Store`",
        ));
        return None;
    }
    if state_seen {
        errors.push(syn::Error::new_spanned(
            attr,
            "only one `#[state]` parameter is allowed: the application gives one state",
        ));
        return None;
    }
    if let Some(span) = rules.first_span() {
        errors.push(syn::Error::new(
            span,
            "`#[arg]` rules apply to client arguments, not to the state",
        ));
    }
    match ty {
        Type::Reference(reference) if reference.mutability.is_none() => {
            Some((*reference.elem).clone())
        }
        Type::Reference(reference) => {
            errors.push(syn::Error::new_spanned(
                reference,
                "the state is shared by every request: take it as `&T`, not `&mut T`",
            ));
            None
        }
        other => {
            errors.push(syn::Error::new_spanned(
                other,
                "take the state by reference: `#[state] store: &Store`",
            ));
            None
        }
    }
}

enum ContextKind {
    Shared,
    Wrong(String),
    NotContext,
}

/// The context is recognised by its type, `&Context`; a `Context` taken any other way is an
/// error rather than silently becoming a client argument.
fn context_kind(ty: &Type) -> ContextKind {
    fn names_context(ty: &Type) -> bool {
        match ty {
            Type::Path(path) => path
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "Context" && s.arguments.is_none()),
            Type::Paren(inner) => names_context(&inner.elem),
            Type::Group(inner) => names_context(&inner.elem),
            _ => false,
        }
    }
    match ty {
        Type::Reference(reference) if names_context(&reference.elem) => {
            if reference.mutability.is_some() {
                ContextKind::Wrong(
                    "the context is shared: take it as `&Context`, not `&mut Context`".into(),
                )
            } else {
                ContextKind::Shared
            }
        }
        other if names_context(other) => {
            ContextKind::Wrong("take the context by reference: `ctx: &Context`".into())
        }
        _ => ContextKind::NotContext,
    }
}

fn reject_rules_on_context(rules: &ArgRules, errors: &mut Vec<syn::Error>) {
    if let Some(span) = rules.first_span() {
        errors.push(syn::Error::new(
            span,
            "`#[arg]` rules apply to client arguments, not to the context",
        ));
    }
}

/// The doc comment of `attrs` as one trimmed text, or `None` when there is none.
pub fn doc_of(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(expr) => match &expr.lit {
                    Lit::Str(s) => Some(s.value()),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .map(|line| {
            line.strip_prefix(' ')
                .unwrap_or(&line)
                .trim_end()
                .to_string()
        })
        .collect();
    // Source line breaks inside a paragraph are wrapping, not meaning: join them with spaces
    // and keep blank lines as paragraph breaks.
    let text = lines
        .split(|line| line.trim().is_empty())
        .map(|paragraph| {
            paragraph
                .iter()
                .map(|l| l.trim())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|paragraph| !paragraph.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    (!text.is_empty()).then_some(text)
}
