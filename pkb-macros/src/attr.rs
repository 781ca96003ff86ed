//! Parsing of the macros' own arguments: `#[pkb_tool(read_only, title = "...")]` and siblings.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::{Ident, LitBool, LitStr, Path};

/// A value given in the attribute, with the span of its key for diagnostics.
pub struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

/// Arguments of `#[pkb_tool(...)]`.
#[derive(Default)]
pub struct ToolAttr {
    /// `crate = "path"`: where the generated code finds `pkb_core` (serde's pattern), for a
    /// crate that reaches it through another name or a re-export.
    pub krate: Option<Path>,
    /// `collect = false`: left out of `Registry::collect()`, served only when named.
    pub collect: Option<Spanned<bool>>,
    pub name: Option<LitStr>,
    pub title: Option<LitStr>,
    pub description: Option<LitStr>,
    pub read_only: Option<Spanned<bool>>,
    pub destructive: Option<Spanned<bool>>,
    pub idempotent: Option<Spanned<bool>>,
    pub open_world: Option<Spanned<bool>>,
    pub text: Option<Path>,
    /// `extend_schema = path`: a `fn() -> serde_json::Value` giving keywords added to the
    /// input schema, and enforced with it.
    pub extend_schema: Option<Path>,
}

/// Arguments of `#[pkb_resource(...)]`.
#[derive(Default)]
pub struct ResourceAttr {
    /// `crate = "path"`: where the generated code finds `pkb_core` (serde's pattern), for a
    /// crate that reaches it through another name or a re-export.
    pub krate: Option<Path>,
    /// `collect = false`: left out of `Registry::collect()`, served only when named.
    pub collect: Option<Spanned<bool>>,
    pub uri: Option<LitStr>,
    pub name: Option<LitStr>,
    pub title: Option<LitStr>,
    pub description: Option<LitStr>,
    pub mime_type: Option<LitStr>,
    pub complete: Vec<(Ident, Path)>,
}

/// Arguments of `#[pkb_prompt(...)]`.
#[derive(Default)]
pub struct PromptAttr {
    /// `crate = "path"`: where the generated code finds `pkb_core` (serde's pattern), for a
    /// crate that reaches it through another name or a re-export.
    pub krate: Option<Path>,
    /// `collect = false`: left out of `Registry::collect()`, served only when named.
    pub collect: Option<Spanned<bool>>,
    pub name: Option<LitStr>,
    pub title: Option<LitStr>,
    pub description: Option<LitStr>,
    pub complete: Vec<(Ident, Path)>,
}

const TOOL_KEYS: &str = "`crate`, `collect`, `name`, `title`, `description`, `read_only`, `destructive`, `idempotent`, `open_world`, `text`, `extend_schema`";
const RESOURCE_KEYS: &str =
    "`crate`, `collect`, `uri`, `name`, `title`, `description`, `mime_type`, `complete`";
const PROMPT_KEYS: &str = "`crate`, `collect`, `name`, `title`, `description`, `complete`";

/// Parses `#[pkb_tool(...)]` arguments, collecting every error.
pub fn parse_tool(args: TokenStream, errors: &mut Vec<syn::Error>) -> ToolAttr {
    let mut attr = ToolAttr::default();
    let parser = syn::meta::parser(|meta| {
        let key = meta_key(&meta)?;
        match key.as_str() {
            "crate" => set_once(&mut attr.krate, &meta, &key, crate_path(&meta)?),
            "collect" => set_once(&mut attr.collect, &meta, &key, flag(&meta)?),
            "name" => set_once(&mut attr.name, &meta, &key, lit_str(&meta)?),
            "title" => set_once(&mut attr.title, &meta, &key, lit_str(&meta)?),
            "description" => set_once(&mut attr.description, &meta, &key, lit_str(&meta)?),
            "read_only" => set_once(&mut attr.read_only, &meta, &key, flag(&meta)?),
            "destructive" => set_once(&mut attr.destructive, &meta, &key, flag(&meta)?),
            "idempotent" => set_once(&mut attr.idempotent, &meta, &key, flag(&meta)?),
            "open_world" => set_once(&mut attr.open_world, &meta, &key, flag(&meta)?),
            "text" => {
                let path: Path = meta.value()?.parse()?;
                set_once(&mut attr.text, &meta, &key, path)
            }
            "extend_schema" => {
                let path: Path = meta.value()?.parse()?;
                set_once(&mut attr.extend_schema, &meta, &key, path)
            }
            _ => Err(unknown(&meta, &key, "pkb_tool", TOOL_KEYS)),
        }
    });
    run(parser, args, errors);
    attr
}

/// Parses `#[pkb_resource(...)]` arguments, collecting every error.
pub fn parse_resource(args: TokenStream, errors: &mut Vec<syn::Error>) -> ResourceAttr {
    let mut attr = ResourceAttr::default();
    let parser = syn::meta::parser(|meta| {
        let key = meta_key(&meta)?;
        match key.as_str() {
            "crate" => set_once(&mut attr.krate, &meta, &key, crate_path(&meta)?),
            "collect" => set_once(&mut attr.collect, &meta, &key, flag(&meta)?),
            "uri" => set_once(&mut attr.uri, &meta, &key, lit_str(&meta)?),
            "name" => set_once(&mut attr.name, &meta, &key, lit_str(&meta)?),
            "title" => set_once(&mut attr.title, &meta, &key, lit_str(&meta)?),
            "description" => set_once(&mut attr.description, &meta, &key, lit_str(&meta)?),
            "mime_type" => set_once(&mut attr.mime_type, &meta, &key, lit_str(&meta)?),
            "complete" => parse_complete(&meta, &mut attr.complete),
            _ => Err(unknown(&meta, &key, "pkb_resource", RESOURCE_KEYS)),
        }
    });
    run(parser, args, errors);
    attr
}

/// Parses `#[pkb_prompt(...)]` arguments, collecting every error.
pub fn parse_prompt(args: TokenStream, errors: &mut Vec<syn::Error>) -> PromptAttr {
    let mut attr = PromptAttr::default();
    let parser = syn::meta::parser(|meta| {
        let key = meta_key(&meta)?;
        match key.as_str() {
            "crate" => set_once(&mut attr.krate, &meta, &key, crate_path(&meta)?),
            "collect" => set_once(&mut attr.collect, &meta, &key, flag(&meta)?),
            "name" => set_once(&mut attr.name, &meta, &key, lit_str(&meta)?),
            "title" => set_once(&mut attr.title, &meta, &key, lit_str(&meta)?),
            "description" => set_once(&mut attr.description, &meta, &key, lit_str(&meta)?),
            "complete" => parse_complete(&meta, &mut attr.complete),
            _ => Err(unknown(&meta, &key, "pkb_prompt", PROMPT_KEYS)),
        }
    });
    run(parser, args, errors);
    attr
}

/// `crate = "some::path"`: a path written as a string, as serde takes it.
fn crate_path(meta: &syn::meta::ParseNestedMeta) -> syn::Result<Path> {
    let lit: LitStr = meta.value()?.parse()?;
    lit.parse().map_err(|_| {
        syn::Error::new(
            lit.span(),
            "expected a path to pkb_core, such as \"my_facade::pkb_core\"",
        )
    })
}

fn run(
    parser: impl syn::parse::Parser<Output = ()>,
    args: TokenStream,
    errors: &mut Vec<syn::Error>,
) {
    if let Err(error) = parser.parse2(args) {
        errors.push(error);
    }
}

/// `complete(var = path, ...)`: a completion provider per variable or argument.
fn parse_complete(meta: &ParseNestedMeta, out: &mut Vec<(Ident, Path)>) -> syn::Result<()> {
    meta.parse_nested_meta(|inner| {
        let ident = inner.path.get_ident().cloned().ok_or_else(|| {
            inner.error("expected an argument name, as in `complete(id = fn_path)`")
        })?;
        if out.iter().any(|(seen, _)| *seen == ident) {
            return Err(inner.error(format!("duplicate completion for `{ident}`")));
        }
        let path: Path = inner.value()?.parse()?;
        out.push((ident, path));
        Ok(())
    })
}

fn meta_key(meta: &ParseNestedMeta) -> syn::Result<String> {
    meta.path
        .get_ident()
        .map(Ident::to_string)
        .ok_or_else(|| meta.error("expected a key such as `name` or `title`"))
}

fn unknown(meta: &ParseNestedMeta, key: &str, macro_name: &str, keys: &str) -> syn::Error {
    meta.error(format!(
        "unknown `{macro_name}` argument `{key}`; expected one of: {keys}"
    ))
}

fn set_once<T>(
    slot: &mut Option<T>,
    meta: &ParseNestedMeta,
    key: &str,
    value: T,
) -> syn::Result<()> {
    if slot.is_some() {
        return Err(meta.error(format!("duplicate argument `{key}`: give it once")));
    }
    *slot = Some(value);
    Ok(())
}

fn lit_str(meta: &ParseNestedMeta) -> syn::Result<LitStr> {
    let lit: LitStr = meta.value()?.parse()?;
    if lit.value().trim().is_empty() {
        return Err(syn::Error::new(lit.span(), "this string must not be empty"));
    }
    Ok(lit)
}

/// A flag: bare `read_only` means true; `read_only = false` is also accepted.
fn flag(meta: &ParseNestedMeta) -> syn::Result<Spanned<bool>> {
    let span = meta
        .path
        .get_ident()
        .map_or_else(Span::call_site, Ident::span);
    if meta.input.peek(syn::Token![=]) {
        let lit: LitBool = meta.value()?.parse()?;
        Ok(Spanned {
            value: lit.value,
            span,
        })
    } else {
        Ok(Spanned { value: true, span })
    }
}
