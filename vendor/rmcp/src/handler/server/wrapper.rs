mod json;
mod parameters;
pub use json::*;
pub use parameters::*;
