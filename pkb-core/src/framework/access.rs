//! What a request needs to be allowed, and what its credentials allow. What a request needs is
//! decided from the declarations, not from a list of names, so a tool added with `#[pkb_tool]`
//! is protected by its own annotations; what the scopes are called is the application's to say.

use std::borrow::Cow;

use super::registry::Catalog;
use crate::identity::User;

/// The access a request needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// Anyone authenticated: the handshake, listings of what the server offers, pings.
    Open,
    /// Reading the application's data: read-only tools, resources, prompts, completions and
    /// subscriptions.
    Read,
    /// Changing it: every tool whose annotations do not say read-only.
    Write,
}

/// What a request's credentials allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Scopes {
    /// Reading the application's data.
    pub read: bool,
    /// Changing it (and reading it).
    pub write: bool,
}

impl Scopes {
    /// Read and write.
    pub const ALL: Scopes = Scopes {
        read: true,
        write: true,
    };
    /// Read only.
    pub const READ_ONLY: Scopes = Scopes {
        read: true,
        write: false,
    };

    /// Whether these scopes allow `access`. Writing implies reading.
    pub fn allows(self, access: Access) -> bool {
        match access {
            Access::Open => true,
            Access::Read => self.read || self.write,
            Access::Write => self.write,
        }
    }
}

/// The OAuth scope names an application gives reading and changing its data, as tokens carry
/// them and `WWW-Authenticate` asks for them: PKB's are `notes:read` and `notes:write`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeNames {
    /// The scope that allows reading.
    pub read: Cow<'static, str>,
    /// The scope that allows changing (and reading).
    pub write: Cow<'static, str>,
}

impl ScopeNames {
    /// Scope names known when the program is written.
    pub const fn new(read: &'static str, write: &'static str) -> Self {
        Self {
            read: Cow::Borrowed(read),
            write: Cow::Borrowed(write),
        }
    }

    /// The scopes named in a list of scope names; names of neither are ignored.
    pub fn scopes_of<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Scopes {
        let mut scopes = Scopes::default();
        for name in names {
            if name == self.read {
                scopes.read = true;
            } else if name == self.write {
                scopes.write = true;
            }
        }
        scopes
    }

    /// The scope a request of `access` needs, as `WWW-Authenticate` names it.
    pub fn needed_for(&self, access: Access) -> Option<&str> {
        match access {
            Access::Open => None,
            Access::Read => Some(&self.read),
            Access::Write => Some(&self.write),
        }
    }

    /// The space-separated names of `scopes`, as a token's `scope` claim spells them.
    pub fn names_of(&self, scopes: Scopes) -> String {
        match (scopes.read, scopes.write) {
            (_, true) => format!("{} {}", self.read, self.write),
            (true, false) => self.read.to_string(),
            (false, false) => String::new(),
        }
    }

    /// Both names, reading first: what a server's metadata lists as supported.
    pub fn all(&self) -> [&str; 2] {
        [&self.read, &self.write]
    }
}

/// The user a request acts for and what it may do. Put into the HTTP request's extensions
/// by the transport once its credentials checked out; the server picks the user's state from
/// it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// Whose data.
    pub user: User,
    /// What the credentials allow.
    pub scopes: Scopes,
}

impl Catalog {
    /// The access a JSON-RPC request for `method` needs; for `tools/call`, that of the tool
    /// named `tool`. A tool that does not exist needs [`Access::Open`]: its call is answered as
    /// unknown, and changes nothing.
    pub fn required_access(&self, method: &str, tool: Option<&str>) -> Access {
        match method {
            "tools/call" => match tool.and_then(|name| self.tool(name)) {
                Some(tool) if tool.annotations.read_only => Access::Read,
                Some(_) => Access::Write,
                None => Access::Open,
            },
            // What needs no access to the data: the handshake, the lists of what the server
            // offers, and the messages that only steer the connection.
            "initialize" | "ping" | "server/discover" | "tools/list" | "prompts/list"
            | "logging/setLevel" => Access::Open,
            method if method.starts_with("notifications/") => Access::Open,
            // Everything else, a method added later included, reads at least: a new method
            // is never open by mistake.
            _ => Access::Read,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Access, ScopeNames, Scopes};

    #[test]
    fn write_implies_read_and_read_is_not_write() {
        assert!(Scopes::READ_ONLY.allows(Access::Read));
        assert!(!Scopes::READ_ONLY.allows(Access::Write));
        let names = ScopeNames::new("notes:read", "notes:write");
        let write_only = names.scopes_of(["notes:write"]);
        assert!(write_only.allows(Access::Read));
        let nothing = names.scopes_of(["openid", "profile"]);
        assert!(!nothing.allows(Access::Read));
        assert!(nothing.allows(Access::Open));
        assert_eq!(names.names_of(Scopes::ALL), "notes:read notes:write");
        assert_eq!(names.names_of(Scopes::READ_ONLY), "notes:read");
    }

    #[cfg(feature = "notes")]
    #[test]
    fn tools_need_what_their_annotations_say() {
        use crate::Registry;

        let registry = Registry::new(crate::notes_declarations()).unwrap();
        for tool in registry.tools() {
            let read_only = tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false);
            let expected = if read_only {
                Access::Read
            } else {
                Access::Write
            };
            assert_eq!(
                registry.required_access("tools/call", Some(&tool.name)),
                expected,
                "{}",
                tool.name
            );
        }
        assert_eq!(
            registry.required_access("tools/call", Some("write")),
            Access::Write
        );
        assert_eq!(
            registry.required_access("tools/call", Some("no-such-tool")),
            Access::Open
        );
        assert_eq!(
            registry.required_access("resources/read", None),
            Access::Read
        );
        assert_eq!(registry.required_access("tools/list", None), Access::Open);
        assert_eq!(
            registry.required_access("some/future-method", None),
            Access::Read
        );
        assert_eq!(
            registry.required_access("notifications/initialized", None),
            Access::Open
        );
        assert_eq!(registry.required_access("initialize", None), Access::Open);
    }
}
