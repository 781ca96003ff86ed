//! The application's state as declarations record it: the type a handler's `#[state]`
//! parameter takes, so a server can be checked against the state its application gives.

use std::any::TypeId;

use super::context::Context;

/// A type, as a declaration's `#[state]` parameter names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateType {
    /// The type's identity.
    pub id: TypeId,
    /// Its name, for messages.
    pub name: &'static str,
}

/// How a declaration records its state's type: a fn, since `TypeId::of` is not const.
pub type StateTypeFn = fn() -> StateType;

/// The [`StateType`] of `T`.
pub fn state_type<T: 'static>() -> StateType {
    StateType {
        id: TypeId::of::<T>(),
        name: std::any::type_name::<T>(),
    }
}

/// The state of a `#[state]` parameter, from the request's context. A registry is built for
/// one state type and a server for the same one, so the state is always there; a handler
/// called by hand with another (`Context::detached`) panics, which the registry answers as
/// the handler's failure.
pub fn state_of<T: 'static>(ctx: &Context) -> &T {
    ctx.state::<T>().unwrap_or_else(|| {
        panic!(
            "the handler takes the state `{}`, and its request carries another",
            std::any::type_name::<T>()
        )
    })
}
