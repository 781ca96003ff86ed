//! `#[arg(...)]` on a fn parameter: the constraints of one argument, declared once.

use proc_macro2::Span;
use syn::{Attribute, Expr, Lit, LitInt};

/// A constraint with the span of its key, so a misplaced rule is reported where it is written.
pub struct Rule<T> {
    pub value: T,
    pub span: Span,
}

/// How the default of an optional argument is written.
pub enum DefaultValue {
    /// `default`: the type's `Default`.
    Implied(Span),
    /// `default = expr`.
    Given(Box<Expr>),
}

/// Every rule `#[arg(...)]` accepts. `None` means the rule was not given.
#[derive(Default)]
pub struct ArgRules {
    /// The argument's name in the schema and the call, when not the Rust identifier's.
    pub name: Option<Rule<String>>,
    /// The HTTP header (`Mcp-Param-{header}`) that mirrors the argument (SEP-2243).
    pub header: Option<Rule<String>>,
    pub trim: Option<Rule<()>>,
    pub single_line: Option<Rule<()>>,
    pub min_len: Option<Rule<u64>>,
    pub max_len: Option<Rule<u64>>,
    pub min_items: Option<Rule<u64>>,
    pub max_items: Option<Rule<u64>>,
    pub item_min_len: Option<Rule<u64>>,
    pub item_max_len: Option<Rule<u64>>,
    pub min: Option<Rule<f64>>,
    pub max: Option<Rule<f64>>,
    pub default: Option<DefaultValue>,
}

impl ArgRules {
    /// The span of the first rule given, default included, for "no rules allowed here" errors.
    pub fn first_span(&self) -> Option<Span> {
        use syn::spanned::Spanned;
        [
            self.name.as_ref().map(|r| r.span),
            self.header.as_ref().map(|r| r.span),
            self.trim.as_ref().map(|r| r.span),
            self.single_line.as_ref().map(|r| r.span),
            self.min_len.as_ref().map(|r| r.span),
            self.max_len.as_ref().map(|r| r.span),
            self.min_items.as_ref().map(|r| r.span),
            self.max_items.as_ref().map(|r| r.span),
            self.item_min_len.as_ref().map(|r| r.span),
            self.item_max_len.as_ref().map(|r| r.span),
            self.min.as_ref().map(|r| r.span),
            self.max.as_ref().map(|r| r.span),
            self.default.as_ref().map(|d| match d {
                DefaultValue::Implied(span) => *span,
                DefaultValue::Given(expr) => expr.span(),
            }),
        ]
        .into_iter()
        .flatten()
        .next()
    }
}

const ARG_KEYS: &str = "`name`, `header`, `default`, `trim`, `single_line`, `min_len`, `max_len`, `min_items`, `max_items`, `item_min_len`, `item_max_len`, `min`, `max`";

/// Parses every `#[arg(...)]` attribute in `attrs`, collecting errors.
pub fn parse(attrs: &[Attribute], errors: &mut Vec<syn::Error>) -> ArgRules {
    let mut rules = ArgRules::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("arg")) {
        let result = attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .ok_or_else(|| meta.error(format!("expected one of: {ARG_KEYS}")))?;
            let span = meta
                .path
                .get_ident()
                .map_or_else(Span::call_site, |i| i.span());
            let dup = || meta.error(format!("duplicate rule `{key}`: give it once"));
            macro_rules! once {
                ($slot:expr, $value:expr) => {{
                    if $slot.is_some() {
                        return Err(dup());
                    }
                    $slot = Some(Rule {
                        value: $value,
                        span,
                    });
                    Ok(())
                }};
            }
            match key.as_str() {
                "name" => once!(rules.name, wire_name(&meta)?),
                "header" => once!(rules.header, header_name(&meta)?),
                "trim" => once!(rules.trim, ()),
                "single_line" => once!(rules.single_line, ()),
                "min_len" => once!(rules.min_len, count(&meta)?),
                "max_len" => once!(rules.max_len, count(&meta)?),
                "min_items" => once!(rules.min_items, count(&meta)?),
                "max_items" => once!(rules.max_items, count(&meta)?),
                "item_min_len" => once!(rules.item_min_len, count(&meta)?),
                "item_max_len" => once!(rules.item_max_len, count(&meta)?),
                "min" => once!(rules.min, number(&meta)?),
                "max" => once!(rules.max, number(&meta)?),
                "default" => {
                    if rules.default.is_some() {
                        return Err(dup());
                    }
                    rules.default = Some(if meta.input.peek(syn::Token![=]) {
                        DefaultValue::Given(Box::new(meta.value()?.parse()?))
                    } else {
                        DefaultValue::Implied(span)
                    });
                    Ok(())
                }
                _ => Err(meta.error(format!(
                    "unknown `arg` rule `{key}`; expected one of: {ARG_KEYS}"
                ))),
            }
        });
        if let Err(error) = result {
            errors.push(error);
        }
    }
    check_bounds(&rules, errors);
    rules
}

fn check_bounds(rules: &ArgRules, errors: &mut Vec<syn::Error>) {
    let pairs = [
        (&rules.min_len, &rules.max_len, "min_len", "max_len"),
        (&rules.min_items, &rules.max_items, "min_items", "max_items"),
        (
            &rules.item_min_len,
            &rules.item_max_len,
            "item_min_len",
            "item_max_len",
        ),
    ];
    for (low, high, low_key, high_key) in pairs {
        if let (Some(low), Some(high)) = (low, high)
            && low.value > high.value
        {
            errors.push(syn::Error::new(
                low.span,
                format!(
                    "`{low_key}` ({}) is greater than `{high_key}` ({})",
                    low.value, high.value
                ),
            ));
        }
    }
    if let (Some(low), Some(high)) = (&rules.min, &rules.max)
        && low.value > high.value
    {
        errors.push(syn::Error::new(
            low.span,
            format!(
                "`min` ({}) is greater than `max` ({})",
                low.value, high.value
            ),
        ));
    }
}

/// `name = "resourceUri"`: a name MCP clients can send (1 to 128 ASCII letters, digits, `_`,
/// `-` and `.`), such as a camelCase one a Rust identifier should not have.
fn wire_name(meta: &syn::meta::ParseNestedMeta) -> syn::Result<String> {
    let lit: syn::LitStr = meta.value()?.parse()?;
    let name = lit.value();
    let valid = (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !valid {
        return Err(syn::Error::new(
            lit.span(),
            "argument names are 1 to 128 characters of ASCII letters, digits, `_`, `-` and `.`",
        ));
    }
    Ok(name)
}

/// `header = "Region"`: the argument also travels as the HTTP header `Mcp-Param-Region`, so
/// gateways can route on it without reading the body. A header name is an HTTP token.
fn header_name(meta: &syn::meta::ParseNestedMeta) -> syn::Result<String> {
    let lit: syn::LitStr = meta.value()?.parse()?;
    let name = lit.value();
    // RFC 9110's `tchar`.
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(syn::Error::new(
            lit.span(),
            "a header name is an HTTP token: ASCII letters, digits and any of !#$%&'*+-.^_`|~, such as \"Region\"",
        ));
    }
    Ok(name)
}

fn count(meta: &syn::meta::ParseNestedMeta) -> syn::Result<u64> {
    let lit: LitInt = meta.value()?.parse()?;
    lit.base10_parse()
}

/// A number literal, optionally negative: `min = -5`, `max = 2.5`.
fn number(meta: &syn::meta::ParseNestedMeta) -> syn::Result<f64> {
    let input = meta.value()?;
    let negative = input.peek(syn::Token![-]);
    if negative {
        input.parse::<syn::Token![-]>()?;
    }
    let value = match input.parse::<Lit>()? {
        Lit::Int(int) => int.base10_parse::<f64>()?,
        Lit::Float(float) => float.base10_parse::<f64>()?,
        other => return Err(syn::Error::new(other.span(), "expected a number")),
    };
    Ok(if negative { -value } else { value })
}
