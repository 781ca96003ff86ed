//! Code generation for the three macros. Generated code names only `::core`, `::std` and
//! `::pkb_core::__private` paths (or those under `crate = "..."`), and on any error the user's
//! fn is emitted unchanged beside the errors, with no registration.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, LitStr, Path, ReturnType, Type};

use crate::arg::DefaultValue;
use crate::ast::{self, Argument, Handler, Param};
use crate::attr;
use crate::uri_template;

/// `#[pkb_tool]`.
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Vec::new();
    let attr = attr::parse_tool(args, &mut errors);
    let handler = match ast::from_syn(item, "pkb_tool", &mut errors) {
        Ok(handler) => handler,
        Err(tokens) => return with_errors(tokens, errors).into(),
    };
    let description = description(&handler, attr.description.as_ref(), "tool", &mut errors);
    check_argument_docs(&handler, &mut errors);
    let name = registered_name(&handler, attr.name.as_ref(), &mut errors);
    if let (Some(ro), Some(de)) = (&attr.read_only, &attr.destructive)
        && ro.value
        && de.value
    {
        errors.push(syn::Error::new(
            de.span,
            "a tool cannot be both `read_only` and `destructive`: a read-only tool changes nothing; drop one of them",
        ));
    }
    let ret = return_type(&handler, "Result<T, ToolError>", &mut errors);
    if !errors.is_empty() {
        return with_errors(TokenStream::new(), errors).with_item(&handler);
    }
    let ret = ret.expect("checked above");
    let flag = |f: &Option<attr::Spanned<bool>>| f.as_ref().is_some_and(|f| f.value);
    let (read_only, destructive, idempotent, open_world) = (
        flag(&attr.read_only),
        flag(&attr.destructive),
        flag(&attr.idempotent),
        flag(&attr.open_world),
    );
    let title = option_str(attr.title.as_ref().map(LitStr::value));
    let specs = arg_specs(&handler);
    let checks = argument_checks(&handler, ArgumentUse::Tool, ret);
    let specialization = specialization(ArgumentUse::Tool);
    let (bindings, call_args) = bind_arguments(&handler, quote!(__pkb::tool_invalid));
    let fn_ident = &handler.item.sig.ident;
    let text = match &attr.text {
        Some(path) => quote_spanned! {path.span()=>
            {
                let __text: fn(&<#ret as __pkb::ToolReturn>::Output) -> ::std::string::String = #path;
                ::core::option::Option::Some(__text)
            }
        },
        None => quote!(::core::option::Option::None),
    };
    let extend_schema = match &attr.extend_schema {
        Some(path) => quote_spanned! {path.span()=>
            {
                let __extend: fn() -> __pkb::Value = #path;
                ::core::option::Option::Some(__extend)
            }
        },
        None => quote!(::core::option::Option::None),
    };
    let output_schema = quote_spanned! {ret.span()=> __pkb::output_schema_of::<#ret>};
    let item = &handler.item;
    let krate = crate_path(attr.krate.as_ref());
    let (declaration, declared) = declaration_item(&handler, &krate);
    let state = state_field(&handler);
    let submit = collected(
        attr.collect.as_ref(),
        quote!(__pkb::inventory::submit! { __pkb::ToolRegistration(&__PKB_TOOL) }),
    );
    quote! {
        #item

        #declaration = {
            use #krate::__private as __pkb;
            #specialization
            #checks
            static __PKB_ARGS: &[__pkb::ArgSpec] = &[#(#specs),*];
            fn __pkb_call(
                ctx: __pkb::Context,
                arguments: ::core::option::Option<__pkb::JsonObject>,
            ) -> __pkb::BoxFuture<'static, __pkb::ToolReply> {
                ::std::boxed::Box::pin(async move {
                    #bindings
                    let __result: #ret = #fn_ident(#call_args).await;
                    (&__PkbType::<#ret>::NEW).__pkb_reply(__result, #text)
                })
            }
            static __PKB_TOOL: __pkb::ToolDef = __pkb::ToolDef {
                module: ::core::module_path!(),
                name: #name,
                title: #title,
                description: #description,
                args: __PKB_ARGS,
                annotations: __pkb::Annotations {
                    read_only: #read_only,
                    destructive: #destructive,
                    idempotent: #idempotent,
                    open_world: #open_world,
                },
                output_schema: #output_schema,
                extend_schema: #extend_schema,
                state: #state,
                call: __pkb_call,
            };
            #submit
            #declared(__pkb::Declaration::Tool(&__PKB_TOOL))
        };
    }
}

/// `#[pkb_resource]`.
pub fn resource(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Vec::new();
    let attr = attr::parse_resource(args, &mut errors);
    let handler = match ast::from_syn(item, "pkb_resource", &mut errors) {
        Ok(handler) => handler,
        Err(tokens) => return with_errors(tokens, errors).into(),
    };
    let description = description(&handler, attr.description.as_ref(), "resource", &mut errors);
    let name = registered_name(&handler, attr.name.as_ref(), &mut errors);
    let ret = return_type(&handler, "Result<String, ResourceError>", &mut errors);
    let template = match &attr.uri {
        None => {
            errors.push(syn::Error::new(
                Span::call_site(),
                "missing `uri`: add `uri = \"scheme://path\"` or a template such as `uri = \"pkb://notes/{id}\"`",
            ));
            None
        }
        Some(uri) => match uri_template::parse(&uri.value()) {
            Ok(template) => {
                check_template_bindings(&handler, uri, &template.variables, &mut errors);
                Some(template)
            }
            Err(message) => {
                errors.push(syn::Error::new(uri.span(), message));
                None
            }
        },
    };
    // Without a well-formed template, its variables are unknown: binding and completion checks
    // would only repeat the error above.
    if let Some(template) = &template {
        check_completions(
            &attr.complete,
            &template.variables,
            "a variable of the URI template",
            &mut errors,
        );
    }
    let uri_template::UriTemplate {
        literals,
        variables,
    } = template.unwrap_or_default();
    for argument in handler.arguments() {
        if let Some(span) = argument.rules.first_span() {
            errors.push(syn::Error::new(
                span,
                "`#[arg]` rules apply to tool and prompt arguments; a template variable is always a non-empty string",
            ));
        }
    }
    if !errors.is_empty() {
        return with_errors(TokenStream::new(), errors).with_item(&handler);
    }
    let ret = ret.expect("checked above");
    let uri = attr.uri.expect("checked above");
    let title = option_str(attr.title.as_ref().map(LitStr::value));
    let mime_type = option_str(attr.mime_type.as_ref().map(LitStr::value));
    let checks = argument_checks(&handler, ArgumentUse::Resource, ret);
    let specialization = specialization(ArgumentUse::Resource);
    let state_binding = state_binding(&handler);
    let call_args = handler.params.iter().map(|param| match param {
        Param::Context => quote!(&ctx),
        Param::State(_) => quote!(__pkb_state),
        Param::Argument(argument) => {
            let index = variables
                .iter()
                .position(|v| argument.ident == v)
                .expect("checked by check_template_bindings");
            let ty = &argument.ty;
            quote!((&__PkbType::<#ty>::NEW).__pkb_variable(&mut __variables, #index))
        }
    });
    let (completion_fns, completions) = completion_providers(&attr.complete);
    let fn_ident = &handler.item.sig.ident;
    let item = &handler.item;
    let krate = crate_path(attr.krate.as_ref());
    let (declaration, declared) = declaration_item(&handler, &krate);
    let state = state_field(&handler);
    let submit = collected(
        attr.collect.as_ref(),
        quote!(__pkb::inventory::submit! { __pkb::ResourceRegistration(&__PKB_RESOURCE) }),
    );
    quote! {
        #item

        #declaration = {
            use #krate::__private as __pkb;
            #specialization
            #checks
            #completion_fns
            fn __pkb_read(
                ctx: __pkb::Context,
                variables: ::std::vec::Vec<::std::string::String>,
            ) -> __pkb::BoxFuture<'static, ::core::result::Result<__pkb::ResourceBody, __pkb::ResourceError>> {
                ::std::boxed::Box::pin(async move {
                    #state_binding
                    let mut __variables = variables;
                    let __result: #ret = #fn_ident(#(#call_args),*).await;
                    (&__PkbType::<#ret>::NEW).__pkb_finish(__result)
                })
            }
            static __PKB_RESOURCE: __pkb::ResourceDef = __pkb::ResourceDef {
                module: ::core::module_path!(),
                uri: #uri,
                name: #name,
                title: #title,
                description: #description,
                mime_type: #mime_type,
                literals: &[#(#literals),*],
                variables: &[#(#variables),*],
                read: __pkb_read,
                state: #state,
                completions: &[#(#completions),*],
            };
            #submit
            #declared(__pkb::Declaration::Resource(&__PKB_RESOURCE))
        };
    }
}

/// `declarations![path, ...]`: each path's last segment turned into the static its attribute
/// made beside the fn, so a path to anything else fails to compile at that path.
pub fn declarations(input: TokenStream) -> TokenStream {
    let parser = syn::punctuated::Punctuated::<Path, syn::Token![,]>::parse_terminated;
    let paths = match syn::parse::Parser::parse2(parser, input) {
        Ok(paths) => paths,
        Err(error) => return error.to_compile_error(),
    };
    let mut errors = Vec::new();
    let statics: Vec<Path> = paths
        .into_iter()
        .filter_map(|mut path| {
            let last = path.segments.last_mut()?;
            if !last.arguments.is_none() {
                errors.push(syn::Error::new_spanned(
                    &last.arguments,
                    "a declaration is named by the path to its fn, without generic arguments",
                ));
                return None;
            }
            last.ident = declaration_ident(&last.ident);
            Some(path)
        })
        .collect();
    if !errors.is_empty() {
        return with_errors(TokenStream::new(), errors).into();
    }
    // Each name is added where it was written, so a declaration whose handler takes another
    // state than the set's fails to compile at that name.
    let additions = statics
        .iter()
        .map(|path| quote_spanned!(path.span()=> .with(&#path)));
    quote! {
        ::pkb_core::Declarations::new() #(#additions)*
    }
}

/// `#[pkb_prompt]`.
pub fn prompt(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Vec::new();
    let attr = attr::parse_prompt(args, &mut errors);
    let handler = match ast::from_syn(item, "pkb_prompt", &mut errors) {
        Ok(handler) => handler,
        Err(tokens) => return with_errors(tokens, errors).into(),
    };
    let description = description(&handler, attr.description.as_ref(), "prompt", &mut errors);
    check_argument_docs(&handler, &mut errors);
    for header in handler.arguments().filter_map(|a| a.rules.header.as_ref()) {
        errors.push(syn::Error::new(
            header.span,
            "`header` applies to tool arguments: a prompt's arguments do not travel in HTTP headers",
        ));
    }
    let name = registered_name(&handler, attr.name.as_ref(), &mut errors);
    let ret = return_type(
        &handler,
        "Result<Vec<PromptMessage>, PromptError>",
        &mut errors,
    );
    let argument_names: Vec<String> = handler.arguments().map(wire_name).collect();
    check_completions(
        &attr.complete,
        &argument_names,
        "an argument of the prompt",
        &mut errors,
    );
    if !errors.is_empty() {
        return with_errors(TokenStream::new(), errors).with_item(&handler);
    }
    let ret = ret.expect("checked above");
    let title = option_str(attr.title.as_ref().map(LitStr::value));
    let specs = arg_specs(&handler);
    let checks = argument_checks(&handler, ArgumentUse::Prompt, ret);
    let specialization = specialization(ArgumentUse::Prompt);
    let (bindings, call_args) = bind_arguments(&handler, quote!(__pkb::prompt_invalid));
    let (completion_fns, completions) = completion_providers(&attr.complete);
    let fn_ident = &handler.item.sig.ident;
    let item = &handler.item;
    let krate = crate_path(attr.krate.as_ref());
    let (declaration, declared) = declaration_item(&handler, &krate);
    let state = state_field(&handler);
    let submit = collected(
        attr.collect.as_ref(),
        quote!(__pkb::inventory::submit! { __pkb::PromptRegistration(&__PKB_PROMPT) }),
    );
    quote! {
        #item

        #declaration = {
            use #krate::__private as __pkb;
            #specialization
            #checks
            #completion_fns
            static __PKB_ARGS: &[__pkb::ArgSpec] = &[#(#specs),*];
            fn __pkb_get(
                ctx: __pkb::Context,
                arguments: ::core::option::Option<__pkb::JsonObject>,
            ) -> __pkb::BoxFuture<'static, ::core::result::Result<::std::vec::Vec<__pkb::PromptMessage>, __pkb::PromptError>> {
                ::std::boxed::Box::pin(async move {
                    #bindings
                    let __result: #ret = #fn_ident(#call_args).await;
                    (&__PkbType::<#ret>::NEW).__pkb_finish(__result)
                })
            }
            static __PKB_PROMPT: __pkb::PromptDef = __pkb::PromptDef {
                module: ::core::module_path!(),
                name: #name,
                title: #title,
                description: #description,
                args: __PKB_ARGS,
                get: __pkb_get,
                state: #state,
                completions: &[#(#completions),*],
            };
            #submit
            #declared(__pkb::Declaration::Prompt(&__PKB_PROMPT))
        };
    }
}

/// The user's tokens followed by every error as `compile_error!`.
struct Emitted(TokenStream, Vec<syn::Error>);

fn with_errors(tokens: TokenStream, errors: Vec<syn::Error>) -> Emitted {
    Emitted(tokens, errors)
}

impl Emitted {
    /// Emits the user's (cleaned) fn so IDEs keep resolving it.
    fn with_item(self, handler: &Handler) -> TokenStream {
        let item = &handler.item;
        Emitted(quote!(#item), self.1).into()
    }
}

impl From<Emitted> for TokenStream {
    fn from(Emitted(tokens, errors): Emitted) -> Self {
        let mut combined: Option<syn::Error> = None;
        for error in errors {
            match &mut combined {
                Some(all) => all.combine(error),
                None => combined = Some(error),
            }
        }
        let errors = combined.map(|e| e.to_compile_error());
        quote!(#tokens #errors)
    }
}

fn description(
    handler: &Handler,
    given: Option<&LitStr>,
    kind: &str,
    errors: &mut Vec<syn::Error>,
) -> String {
    if let Some(given) = given {
        return given.value();
    }
    handler.doc.clone().unwrap_or_else(|| {
        errors.push(syn::Error::new(
            handler.item.sig.ident.span(),
            format!(
                "missing doc comment: it is the {kind}'s description for the model; add `/// What it does.` above the fn, or `description = \"...\"`"
            ),
        ));
        String::new()
    })
}

fn check_argument_docs(handler: &Handler, errors: &mut Vec<syn::Error>) {
    let mut seen = Vec::new();
    let mut seen_headers = Vec::new();
    for argument in handler.arguments() {
        let name = wire_name(argument);
        if seen.contains(&name) {
            let span = argument
                .rules
                .name
                .as_ref()
                .map_or_else(|| argument.ident.span(), |rule| rule.span);
            errors.push(syn::Error::new(
                span,
                format!(
                    "two arguments are named `{name}`: give one another `#[arg(name = \"...\")]`"
                ),
            ));
        }
        seen.push(name);
        if let Some(header) = &argument.rules.header {
            let folded = header.value.to_ascii_lowercase();
            if seen_headers.contains(&folded) {
                errors.push(syn::Error::new(
                    header.span,
                    format!(
                        "two arguments travel in the header `Mcp-Param-{}` (header names ignore case): give one another `header`",
                        header.value
                    ),
                ));
            }
            seen_headers.push(folded);
        }
        if argument.doc.is_none() {
            errors.push(syn::Error::new(
                argument.ident.span(),
                format!(
                    "missing doc comment on argument `{}`: it is the argument's description in the schema; add `/// ...` above it",
                    unraw(&argument.ident)
                ),
            ));
        }
    }
}

fn registered_name(
    handler: &Handler,
    given: Option<&LitStr>,
    errors: &mut Vec<syn::Error>,
) -> String {
    let name = given.map_or_else(|| unraw(&handler.item.sig.ident), LitStr::value);
    let valid = (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !valid {
        let span = given.map_or_else(|| handler.item.sig.ident.span(), LitStr::span);
        errors.push(syn::Error::new(
            span,
            "names are 1 to 128 characters of ASCII letters, digits, `_`, `-` and `.`",
        ));
    }
    name
}

fn return_type<'a>(
    handler: &'a Handler,
    expected: &str,
    errors: &mut Vec<syn::Error>,
) -> Option<&'a Type> {
    match &handler.item.sig.output {
        ReturnType::Type(_, ty) => Some(ty),
        ReturnType::Default => {
            errors.push(syn::Error::new(
                handler.item.sig.paren_token.span.close(),
                format!("missing return type: add `-> {expected}`"),
            ));
            None
        }
    }
}

/// Every `{var}` of the template is bound to an argument of the same name, and back.
fn check_template_bindings(
    handler: &Handler,
    uri: &LitStr,
    variables: &[String],
    errors: &mut Vec<syn::Error>,
) {
    for variable in variables {
        if !handler.arguments().any(|a| a.ident == variable) {
            errors.push(syn::Error::new(
                uri.span(),
                format!("template variable `{{{variable}}}` has no matching argument: add `{variable}: String` to the fn"),
            ));
        }
    }
    for argument in handler.arguments() {
        let name = unraw(&argument.ident);
        if !variables.contains(&name) {
            let message = if variables.is_empty() {
                format!(
                    "argument `{name}` has no URI template variable to bind: add `{{{name}}}` to `uri`, or remove the argument"
                )
            } else {
                format!(
                    "argument `{name}` is not a variable of the URI template: add `{{{name}}}` to `uri`, or remove the argument"
                )
            };
            errors.push(syn::Error::new(argument.ident.span(), message));
        }
    }
}

fn check_completions(
    complete: &[(Ident, Path)],
    names: &[String],
    what: &str,
    errors: &mut Vec<syn::Error>,
) {
    for (ident, _) in complete {
        let name = unraw(ident);
        if !names.contains(&name) {
            errors.push(syn::Error::new(
                ident.span(),
                format!(
                    "`{name}` is not {what}; expected one of: {}",
                    names.join(", ")
                ),
            ));
        }
    }
}

/// Where the expansion finds `pkb_core`: `crate = "..."`, else `::pkb_core`.
/// The static a declaration is named by, beside the fn and with its visibility:
/// `__pkb_declaration_<fn>`, which `declarations![...]` names for a path to the fn. Its type
/// says which application state the handler takes (`DeclaredWith<T>`), or that it takes none
/// (`Declared`). Returns the item up to its `=`, and the constructor of its value (inside the
/// initializer, where `__pkb` is in scope).
fn declaration_item(handler: &Handler, krate: &TokenStream) -> (TokenStream, TokenStream) {
    let vis = &handler.item.vis;
    let ident = declaration_ident(&handler.item.sig.ident);
    let (ty, declared) = match handler.state() {
        Some(state) => (
            quote!(#krate::__private::DeclaredWith<#state>),
            quote!(__pkb::DeclaredWith::<#state>::new),
        ),
        None => (quote!(#krate::__private::Declared), quote!(__pkb::Declared)),
    };
    (
        quote! {
            #[doc(hidden)]
            #[allow(non_upper_case_globals, dead_code)]
            #vis static #ident: #ty
        },
        declared,
    )
}

/// The definition's `state` field: the type of the application state the handler takes.
fn state_field(handler: &Handler) -> TokenStream {
    match handler.state() {
        Some(state) => quote!(::core::option::Option::Some(__pkb::state_type::<#state>)),
        None => quote!(::core::option::Option::None),
    }
}

/// Binds the handler's state, taken from the request's context: `__pkb_state`.
fn state_binding(handler: &Handler) -> TokenStream {
    match handler.state() {
        Some(state) => quote! {
            let __pkb_state: &#state = __pkb::state_of::<#state>(&ctx);
        },
        None => TokenStream::new(),
    }
}

/// The name of the static holding the declaration of the fn `ident`.
pub fn declaration_ident(ident: &Ident) -> Ident {
    format_ident!("__pkb_declaration_{}", ident, span = ident.span())
}

/// The registration for `Registry::collect()`, unless the attribute said `collect = false`.
fn collected(collect: Option<&attr::Spanned<bool>>, submit: TokenStream) -> TokenStream {
    match collect {
        Some(flag) if !flag.value => TokenStream::new(),
        _ => submit,
    }
}

fn crate_path(given: Option<&syn::Path>) -> TokenStream {
    given.map_or_else(|| quote!(::pkb_core), |path| quote!(#path))
}

/// An argument's name in the schema and the call: `#[arg(name = "...")]`, else its identifier.
fn wire_name(argument: &Argument) -> String {
    argument
        .rules
        .name
        .as_ref()
        .map_or_else(|| unraw(&argument.ident), |rule| rule.value.clone())
}

fn unraw(ident: &Ident) -> String {
    let name = ident.to_string();
    name.strip_prefix("r#").map(str::to_string).unwrap_or(name)
}

fn option_str(value: Option<String>) -> TokenStream {
    match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    }
}

fn option_count(rule: Option<&crate::arg::Rule<u64>>) -> TokenStream {
    match rule {
        Some(rule) => {
            let value = rule.value as usize;
            quote!(::core::option::Option::Some(#value))
        }
        None => quote!(::core::option::Option::None),
    }
}

fn option_number(rule: Option<&crate::arg::Rule<f64>>) -> TokenStream {
    match rule {
        Some(rule) => {
            let value = rule.value;
            quote!(::core::option::Option::Some(#value))
        }
        None => quote!(::core::option::Option::None),
    }
}

/// One `ArgSpec` literal per client argument.
fn arg_specs(handler: &Handler) -> Vec<TokenStream> {
    handler
        .arguments()
        .enumerate()
        .map(|(index, argument)| {
            let name = wire_name(argument);
            let description = argument.doc.clone().unwrap_or_default();
            let ty = &argument.ty;
            let rules = &argument.rules;
            let trim = rules.trim.is_some();
            let single_line = rules.single_line.is_some();
            let min_len = option_count(rules.min_len.as_ref());
            let max_len = option_count(rules.max_len.as_ref());
            let min_items = option_count(rules.min_items.as_ref());
            let max_items = option_count(rules.max_items.as_ref());
            let item_min_len = option_count(rules.item_min_len.as_ref());
            let item_max_len = option_count(rules.item_max_len.as_ref());
            let min = option_number(rules.min.as_ref());
            let max = option_number(rules.max.as_ref());
            let default = match &rules.default {
                None => quote!(::core::option::Option::None),
                Some(default) => {
                    let value = match default {
                        DefaultValue::Implied(span) => {
                            quote_spanned!(*span=> <#ty as ::core::default::Default>::default())
                        }
                        DefaultValue::Given(expr) => quote_spanned!(expr.span()=> #expr),
                    };
                    let default_fn = format_ident!("__pkb_default_{}", index);
                    quote!({
                        fn #default_fn() -> __pkb::Value {
                            let value: #ty = #value;
                            __pkb::default_json(value)
                        }
                        ::core::option::Option::Some(#default_fn)
                    })
                }
            };
            let header = option_str(rules.header.as_ref().map(|rule| rule.value.clone()));
            quote! {
                __pkb::ArgSpec {
                    name: #name,
                    header: #header,
                    description: #description,
                    rules: __pkb::ArgRules {
                        trim: #trim,
                        single_line: #single_line,
                        min_len: #min_len,
                        max_len: #max_len,
                        min_items: #min_items,
                        max_items: #max_items,
                        item_min_len: #item_min_len,
                        item_max_len: #item_max_len,
                        min: #min,
                        max: #max,
                    },
                    default: #default,
                    // Through `__pkb_typed`, see `specialization`; a closure because the
                    // choice of impl is a method call, which a static cannot make.
                    schema: |generator| {
                        let typed = (&__PkbType::<#ty>::NEW).__pkb_typed(__PKB_ARGS[#index]);
                        (typed.schema)(generator)
                    },
                    accepts: |value| {
                        let typed = (&__PkbType::<#ty>::NEW).__pkb_typed(__PKB_ARGS[#index]);
                        (typed.accepts)(value)
                    },
                }
            }
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq)]
enum ArgumentUse {
    Tool,
    Resource,
    Prompt,
}

/// Compile-time checks spanned on the user's tokens: the compiler reports a wrong type at the
/// argument (or at the rule that does not fit it), not inside generated code.
fn argument_checks(handler: &Handler, usage: ArgumentUse, ret: &Type) -> TokenStream {
    let mut checks = TokenStream::new();
    for argument in handler.arguments() {
        let ty = &argument.ty;
        let rules = &argument.rules;
        checks.extend(match usage {
            ArgumentUse::Tool => quote_spanned!(ty.span()=> __pkb::assert_argument::<#ty>();),
            ArgumentUse::Resource => {
                quote_spanned!(ty.span()=> __pkb::assert_template_variable::<#ty>();)
            }
            ArgumentUse::Prompt => {
                quote_spanned!(ty.span()=> __pkb::assert_prompt_argument::<#ty>();)
            }
        });
        let mut rule_check = |span: Option<Span>, check: &str| {
            if let Some(span) = span {
                let check = Ident::new(check, span);
                // The compiler reports an unmet bound at the type argument, so the type is
                // re-located at the rule: the caret lands on `max_len`, not on `u32`.
                let ty = relocate(ty.to_token_stream(), span);
                checks.extend(quote_spanned!(span=> __pkb::#check::<#ty>();));
            }
        };
        rule_check(rules.min_len.as_ref().map(|r| r.span), "assert_has_length");
        rule_check(rules.max_len.as_ref().map(|r| r.span), "assert_has_length");
        rule_check(
            rules.single_line.as_ref().map(|r| r.span),
            "assert_has_lines",
        );
        rule_check(rules.trim.as_ref().map(|r| r.span), "assert_trimmable");
        rule_check(rules.min_items.as_ref().map(|r| r.span), "assert_has_items");
        rule_check(rules.max_items.as_ref().map(|r| r.span), "assert_has_items");
        rule_check(
            rules.item_min_len.as_ref().map(|r| r.span),
            "assert_has_string_items",
        );
        rule_check(
            rules.item_max_len.as_ref().map(|r| r.span),
            "assert_has_string_items",
        );
        rule_check(rules.header.as_ref().map(|r| r.span), "assert_header_value");
        rule_check(rules.min.as_ref().map(|r| r.span), "assert_is_number");
        rule_check(rules.max.as_ref().map(|r| r.span), "assert_is_number");
    }
    // The return type, at the user's tokens. A tool's is checked where its `output_schema`
    // is taken.
    checks.extend(match usage {
        ArgumentUse::Tool => TokenStream::new(),
        ArgumentUse::Resource => {
            quote_spanned!(ret.span()=> let _ = <#ret as __pkb::ResourceReturn>::into_body;)
        }
        ArgumentUse::Prompt => {
            quote_spanned!(ret.span()=> let _ = <#ret as __pkb::PromptReturn>::into_messages;)
        }
    });
    quote! {
        #[allow(dead_code)]
        fn __pkb_type_checks() {
            #checks
        }
    }
}

/// `tokens` with every token's location moved to `span`, keeping its name resolution.
fn relocate(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let TokenTree::Group(group) = &token {
                let mut inner = Group::new(group.delimiter(), relocate(group.stream(), span));
                inner.set_span(group.span().located_at(span));
                token = TokenTree::Group(inner);
            } else {
                token.set_span(token.span().located_at(span));
            }
            token
        })
        .collect()
}

/// Autoref specialization (dtolnay/case-studies, `autoref-specialization`). Generated code
/// reaches each argument and return type `T` through `(&__PkbType::<T>::NEW).__pkb_*(..)`.
/// When `T` passes its check in `__pkb_type_checks`, the call resolves to the checked impl
/// (`__PkbArgument`, `__PkbVariable`, `__PkbReturn`), which does the work. When it fails, the
/// call resolves instead to `__PkbUnchecked`, whose bodies never run (the build has already
/// failed) but which lets the rest of the expansion type-check: the compiler reports the
/// mistake once, at the user's type, instead of again for every use inside generated code.
fn specialization(usage: ArgumentUse) -> TokenStream {
    let reply = match usage {
        ArgumentUse::Tool => quote!(__pkb::ToolReply),
        ArgumentUse::Resource => {
            quote!(::core::result::Result<__pkb::ResourceBody, __pkb::ResourceError>)
        }
        ArgumentUse::Prompt => quote! {
            ::core::result::Result<::std::vec::Vec<__pkb::PromptMessage>, __pkb::PromptError>
        },
    };
    let common = quote! {
        struct __PkbType<T>(::core::marker::PhantomData<T>);
        impl<T> __PkbType<T> {
            const NEW: Self = Self(::core::marker::PhantomData);
        }
        impl<T> __PkbUnchecked for &__PkbType<T> {}
    };
    let arguments = quote! {
        #[allow(dead_code)]
        trait __PkbArgument<T> {
            fn __pkb_typed(&self, spec: __pkb::ArgSpec) -> __pkb::ArgSpec;
            fn __pkb_take(
                &self,
                value: ::core::option::Option<__pkb::Value>,
                spec: &__pkb::ArgSpec,
            ) -> ::core::result::Result<T, #reply>;
        }
        impl<T: __pkb::ToolArgument> __PkbArgument<T> for __PkbType<T> {
            fn __pkb_typed(&self, spec: __pkb::ArgSpec) -> __pkb::ArgSpec {
                __pkb::ArgSpec {
                    schema: __pkb::arg_schema::<T>,
                    accepts: __pkb::arg_accepts::<T>,
                    ..spec
                }
            }
            fn __pkb_take(
                &self,
                value: ::core::option::Option<__pkb::Value>,
                spec: &__pkb::ArgSpec,
            ) -> ::core::result::Result<T, #reply> {
                __pkb::from_validated(value, spec).map_err(__pkb_invalid)
            }
        }
    };
    let unchecked_arguments = quote! {
        fn __pkb_typed(&self, _: __pkb::ArgSpec) -> __pkb::ArgSpec {
            ::core::unreachable!()
        }
        fn __pkb_take<T>(
            &self,
            _: ::core::option::Option<__pkb::Value>,
            _: &__pkb::ArgSpec,
        ) -> ::core::result::Result<T, #reply> {
            ::core::unreachable!()
        }
    };
    match usage {
        ArgumentUse::Tool => quote! {
            #common
            #arguments
            use __pkb::tool_invalid as __pkb_invalid;
            trait __PkbReturn<R: __pkb::ToolReturn> {
                fn __pkb_reply(
                    &self,
                    result: R,
                    text: ::core::option::Option<fn(&R::Output) -> ::std::string::String>,
                ) -> #reply;
            }
            impl<R: __pkb::ToolReturn> __PkbReturn<R> for __PkbType<R> {
                fn __pkb_reply(
                    &self,
                    result: R,
                    text: ::core::option::Option<fn(&R::Output) -> ::std::string::String>,
                ) -> #reply {
                    __pkb::tool_reply(result, text)
                }
            }
            #[allow(dead_code)]
            trait __PkbUnchecked {
                #unchecked_arguments
                fn __pkb_reply<R>(
                    &self,
                    _: R,
                    _: ::core::option::Option<fn(&()) -> ::std::string::String>,
                ) -> #reply {
                    ::core::unreachable!()
                }
            }
        },
        ArgumentUse::Prompt => quote! {
            #common
            #arguments
            use __pkb::prompt_invalid as __pkb_invalid;
            trait __PkbReturn<R> {
                fn __pkb_finish(&self, result: R) -> #reply;
            }
            impl<R: __pkb::PromptReturn> __PkbReturn<R> for __PkbType<R> {
                fn __pkb_finish(&self, result: R) -> #reply {
                    __pkb::PromptReturn::into_messages(result)
                }
            }
            #[allow(dead_code)]
            trait __PkbUnchecked {
                #unchecked_arguments
                fn __pkb_finish<R>(&self, _: R) -> #reply {
                    ::core::unreachable!()
                }
            }
        },
        ArgumentUse::Resource => quote! {
            #common
            #[allow(dead_code)]
            trait __PkbVariable {
                fn __pkb_variable(
                    &self,
                    values: &mut [::std::string::String],
                    index: usize,
                ) -> ::std::string::String;
            }
            impl __PkbVariable for __PkbType<::std::string::String> {
                fn __pkb_variable(
                    &self,
                    values: &mut [::std::string::String],
                    index: usize,
                ) -> ::std::string::String {
                    __pkb::take_variable(values, index)
                }
            }
            trait __PkbReturn<R> {
                fn __pkb_finish(&self, result: R) -> #reply;
            }
            impl<R: __pkb::ResourceReturn> __PkbReturn<R> for __PkbType<R> {
                fn __pkb_finish(&self, result: R) -> #reply {
                    __pkb::ResourceReturn::into_body(result)
                }
            }
            #[allow(dead_code)]
            trait __PkbUnchecked {
                fn __pkb_variable<T>(&self, _: &mut [::std::string::String], _: usize) -> T {
                    ::core::unreachable!()
                }
                fn __pkb_finish<R>(&self, _: R) -> #reply {
                    ::core::unreachable!()
                }
            }
        },
    }
}

/// Validation of the arguments, then `let name: T = ...;` for each, and the call's argument
/// list in declaration order.
fn bind_arguments(handler: &Handler, invalid: TokenStream) -> (TokenStream, TokenStream) {
    let state_binding = state_binding(handler);
    let mut bindings = quote! {
        #state_binding
        let mut __values = match __pkb::validate_args(__PKB_ARGS, arguments) {
            ::core::result::Result::Ok(values) => values.into_iter(),
            ::core::result::Result::Err(invalid) => return #invalid(invalid),
        };
    };
    let mut call_args = Vec::new();
    let mut index = 0usize;
    for param in &handler.params {
        match param {
            Param::Context => call_args.push(quote!(&ctx)),
            Param::State(_) => call_args.push(quote!(__pkb_state)),
            Param::Argument(argument) => {
                let ty = &argument.ty;
                let local = format_ident!("__pkb_arg_{}", index);
                bindings.extend(quote! {
                    let #local: #ty = match (&__PkbType::<#ty>::NEW).__pkb_take(__values.next(), &__PKB_ARGS[#index]) {
                        ::core::result::Result::Ok(value) => value,
                        ::core::result::Result::Err(reply) => return reply,
                    };
                });
                call_args.push(quote!(#local));
                index += 1;
            }
        }
    }
    (bindings, quote!(#(#call_args),*))
}

fn completion_providers(complete: &[(Ident, Path)]) -> (TokenStream, Vec<TokenStream>) {
    let mut fns = TokenStream::new();
    let mut entries = Vec::new();
    for (index, (ident, path)) in complete.iter().enumerate() {
        let fn_ident = format_ident!("__pkb_complete_{}", index);
        let call = quote_spanned!(path.span()=> #path(&ctx, prefix).await);
        fns.extend(quote! {
            fn #fn_ident(
                ctx: __pkb::Context,
                prefix: ::std::string::String,
            ) -> __pkb::BoxFuture<'static, ::std::vec::Vec<::std::string::String>> {
                ::std::boxed::Box::pin(async move { #call })
            }
        });
        let name = unraw(ident);
        entries.push(quote!(__pkb::CompletionDef { argument: #name, complete: #fn_ident }));
    }
    (fns, entries)
}
