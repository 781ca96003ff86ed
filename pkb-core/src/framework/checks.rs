//! Compile-time checks the macros emit at the user's own tokens, so a wrong type or a rule
//! that does not fit its argument is reported where it is written, with a way to fix it.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

/// A type a tool argument can have: it deserializes from JSON and describes itself as a schema.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument: it must implement `serde::Deserialize` and `schemars::JsonSchema`",
    label = "not deserializable, or has no JSON Schema",
    note = "derive both on your own types, or use `String`, a number, `bool` or `Vec<String>`"
)]
pub trait ToolArgument: DeserializeOwned + JsonSchema + Send + 'static {}
impl<T: DeserializeOwned + JsonSchema + Send + 'static> ToolArgument for T {}

/// Types whose length is counted in characters.
#[diagnostic::on_unimplemented(
    message = "`min_len` and `max_len` apply to `String` arguments, not to `{Self}`",
    label = "this rule needs a `String` argument",
    note = "use `min_items`/`max_items` for a list and `min`/`max` for a number"
)]
pub trait HasLength {}
impl HasLength for String {}
impl<T: HasLength> HasLength for Option<T> {}

/// Text, or lists of it, that can be held to one line.
#[diagnostic::on_unimplemented(
    message = "`single_line` applies to `String` and `Vec<String>` arguments, not to `{Self}`",
    label = "this rule needs a string argument"
)]
pub trait HasLines {}
impl HasLines for String {}
impl HasLines for Vec<String> {}
impl<T: HasLines> HasLines for Option<T> {}

/// Types that can be trimmed.
#[diagnostic::on_unimplemented(
    message = "`trim` applies to `String` and `Vec<String>` arguments, not to `{Self}`",
    label = "this rule needs a string argument"
)]
pub trait Trimmable {}
impl Trimmable for String {}
impl Trimmable for Vec<String> {}
impl<T: Trimmable> Trimmable for Option<T> {}

/// List types.
#[diagnostic::on_unimplemented(
    message = "`min_items` and `max_items` apply to `Vec` arguments, not to `{Self}`",
    label = "this rule needs a list argument",
    note = "use `min_len`/`max_len` for a string and `min`/`max` for a number"
)]
pub trait HasItems {}
impl<T> HasItems for Vec<T> {}
impl<T: HasItems> HasItems for Option<T> {}

/// Lists of strings.
#[diagnostic::on_unimplemented(
    message = "`item_min_len` and `item_max_len` apply to `Vec<String>` arguments, not to `{Self}`",
    label = "this rule needs a list of strings"
)]
pub trait HasStringItems {}
impl HasStringItems for Vec<String> {}
impl<T: HasStringItems> HasStringItems for Option<T> {}

/// Number types.
#[diagnostic::on_unimplemented(
    message = "`min` and `max` apply to number arguments, not to `{Self}`",
    label = "this rule needs a number argument",
    note = "use `min_len`/`max_len` for a string and `min_items`/`max_items` for a list"
)]
pub trait IsNumber {}
macro_rules! numbers {
    ($($t:ty),*) => { $(impl IsNumber for $t {})* };
}
numbers!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64);
// An optional argument's rules hold when it is given; `null` and absence are left alone.
impl<T: IsNumber> IsNumber for Option<T> {}

/// Types an HTTP header can carry: strings, integers and booleans (SEP-2243).
#[diagnostic::on_unimplemented(
    message = "`header` applies to `String`, integer and `bool` arguments, not to `{Self}`",
    label = "a header carries a string, an integer or a boolean"
)]
pub trait HeaderValue {}
impl HeaderValue for String {}
impl HeaderValue for bool {}
macro_rules! header_integers {
    ($($t:ty),*) => { $(impl HeaderValue for $t {})* };
}
header_integers!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

/// Prompt arguments are strings on the wire.
#[diagnostic::on_unimplemented(
    message = "prompt arguments are strings: use `String`, not `{Self}`",
    label = "must be `String`"
)]
pub trait PromptArgumentType: ToolArgument {}
impl PromptArgumentType for String {}

/// Template variables are strings.
#[diagnostic::on_unimplemented(
    message = "URI template variables are strings: use `String`, not `{Self}`",
    label = "must be `String`"
)]
pub trait TemplateVariable {}
impl TemplateVariable for String {}

/// Checks that `T` can be a tool argument.
pub fn assert_argument<T: ToolArgument>() {}
/// Checks that `T` takes length rules.
pub fn assert_has_length<T: HasLength>() {}
/// Checks that `T` takes `single_line`.
pub fn assert_has_lines<T: HasLines>() {}
/// Checks that `T` can be trimmed.
pub fn assert_trimmable<T: Trimmable>() {}
/// Checks that `T` takes item-count rules.
pub fn assert_has_items<T: HasItems>() {}
/// Checks that `T` takes item-length rules.
pub fn assert_has_string_items<T: HasStringItems>() {}
/// Checks that `T` takes number rules.
pub fn assert_is_number<T: IsNumber>() {}
/// Checks that `T` can travel in a header.
pub fn assert_header_value<T: HeaderValue>() {}
/// Checks that `T` can be a prompt argument.
pub fn assert_prompt_argument<T: PromptArgumentType>() {}
/// Checks that `T` can hold a template variable.
pub fn assert_template_variable<T: TemplateVariable>() {}
