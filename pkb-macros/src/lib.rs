//! Attribute macros that turn one annotated `async fn` into a PKB tool, resource or prompt.
//!
//! The macros are re-exported by `pkb-core`, whose documentation (docs/framework.md) describes
//! every attribute argument. Each entry point is thin: arguments are parsed
//! ([`attr`]), the fn is modelled and checked ([`ast`]), and code is generated ([`expand`]).
//! On any error the user's fn is still emitted beside the `compile_error!`s, so IDEs keep
//! working, and nothing is registered.

mod arg;
mod ast;
mod attr;
mod expand;
mod uri_template;

use proc_macro::TokenStream;

/// Declares an MCP tool from an `async fn`. See `pkb_core::pkb_tool` for the arguments.
#[proc_macro_attribute]
pub fn pkb_tool(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool(args.into(), item.into()).into()
}

/// Declares an MCP resource or resource template from an `async fn`.
#[proc_macro_attribute]
pub fn pkb_resource(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::resource(args.into(), item.into()).into()
}

/// Declares an MCP prompt from an `async fn`.
#[proc_macro_attribute]
pub fn pkb_prompt(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::prompt(args.into(), item.into()).into()
}

/// Names the declarations a server serves: `declarations![word_count, my_app::notes_index]`,
/// each a path to a fn declared with one of the three attributes. See
/// `pkb_core::declarations`.
#[proc_macro]
pub fn declarations(input: TokenStream) -> TokenStream {
    expand::declarations(input.into()).into()
}
