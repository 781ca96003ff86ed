use pkb_core::pkb_tool;

/// Not a fn.
#[pkb_tool]
struct Noop;

fn main() {}
