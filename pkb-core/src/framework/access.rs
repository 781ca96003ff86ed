//! What a request needs to be allowed: decided from the declarations, not from a list of
//! names, so a tool added with `#[pkb_tool]` is protected by its own annotations.

use serde_json::Value;

use super::registry::Registry;

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

impl Registry {
    /// The access a JSON-RPC request for `method` with `params` needs. A tool that does not
    /// exist needs [`Access::Open`]: its call is answered as unknown, and changes nothing.
    pub fn required_access(&self, method: &str, params: Option<&Value>) -> Access {
        match method {
            "tools/call" => {
                let name = params.and_then(|p| p.get("name")).and_then(Value::as_str);
                match name.and_then(|name| self.tool(name)) {
                    Some(tool) if tool.annotations.read_only => Access::Read,
                    Some(_) => Access::Write,
                    None => Access::Open,
                }
            }
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
    use serde_json::json;

    use super::Access;
    use crate::Registry;

    #[test]
    fn tools_need_what_their_annotations_say() {
        let registry = Registry::collect().unwrap();
        for tool in registry.tools() {
            let read_only = tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false);
            let params = json!({ "name": tool.name });
            let expected = if read_only {
                Access::Read
            } else {
                Access::Write
            };
            assert_eq!(
                registry.required_access("tools/call", Some(&params)),
                expected,
                "{}",
                tool.name
            );
        }
        let write = json!({ "name": "write" });
        assert_eq!(
            registry.required_access("tools/call", Some(&write)),
            Access::Write
        );
        let unknown = json!({ "name": "no-such-tool" });
        assert_eq!(
            registry.required_access("tools/call", Some(&unknown)),
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
