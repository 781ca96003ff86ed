//! What `/mcp` checks of a request's headers before its message is served, in the words the
//! official SDKs' servers use: the media types it accepts and sends, the revision it names,
//! and the 2026-07-28 revision's routing headers (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`),
//! which must agree with the body so that a proxy routing on them routes what is served.

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use http::HeaderMap;
use http::header::{ACCEPT, CONTENT_TYPE};
use rmcp::model::{JsonObject, ProtocolVersion};
use serde_json::Value;

/// The header naming the revision a request is of.
pub(super) const PROTOCOL_VERSION: &str = "mcp-protocol-version";
const METHOD: &str = "Mcp-Method";
const NAME: &str = "Mcp-Name";
const PARAM_PREFIX: &str = "Mcp-Param-";
const BASE64_PREFIX: &str = "=?base64?";
const BASE64_SUFFIX: &str = "?=";

/// `value` split at each `delimiter` outside a quoted string.
fn split_unquoted(value: &str, delimiter: char) -> impl Iterator<Item = &str> {
    let mut quoted = false;
    let mut escaped = false;
    value.split(move |character| {
        if escaped {
            escaped = false;
        } else if quoted && character == '\\' {
            escaped = true;
        } else if character == '"' {
            quoted = !quoted;
        } else if !quoted && character == delimiter {
            return true;
        }
        false
    })
}

/// Whether a `q` weight leaves its media range wanted: only an explicit zero excludes it; a
/// weight RFC 9110 cannot read is ignored.
fn wanted(quality: &str) -> bool {
    let (whole, fraction) = quality.split_once('.').unwrap_or((quality, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|digit| digit.is_ascii_digit()) {
        return true;
    }
    whole != "0" || fraction.bytes().any(|digit| digit != b'0')
}

/// Whether `Accept` lists `media_type` itself (wildcards do not count), with a weight above 0.
pub(super) fn accepts(headers: &HeaderMap, media_type: &str) -> bool {
    headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| split_unquoted(value, ','))
        .any(|entry| {
            let mut parts = split_unquoted(entry, ';');
            let essence = parts.next().unwrap_or_default().trim();
            essence.eq_ignore_ascii_case(media_type)
                && parts.all(|parameter| match parameter.split_once('=') {
                    Some((name, value)) if name.trim().eq_ignore_ascii_case("q") => {
                        wanted(value.trim())
                    }
                    _ => true,
                })
        })
}

/// Whether the body is declared JSON.
pub(super) fn sent_as_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// What is wrong with the revision header, if anything: it must be text naming a revision
/// this server knows, unless the request names its own revision in its `_meta`.
pub(super) fn version_problem(headers: &HeaderMap, own_revision: bool) -> Option<String> {
    let value = headers.get(PROTOCOL_VERSION)?;
    let Ok(version) = value.to_str() else {
        return Some("Bad Request: Invalid MCP-Protocol-Version header encoding".into());
    };
    let known = ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .any(|known| known.as_str() == version);
    (!known && !own_revision)
        .then(|| format!("Bad Request: Unsupported MCP-Protocol-Version: {version}"))
}

/// The revision header's text, when it is text.
pub(super) fn version(headers: &HeaderMap) -> Option<&str> {
    headers.get(PROTOCOL_VERSION)?.to_str().ok()
}

/// Whether a revision names the stateless revision or a later one.
pub(super) fn is_stateless(version: &str) -> bool {
    version >= ProtocolVersion::V_2026_07_28.as_str()
}

/// Whether an event stream of this revision opens with a priming event: from 2025-11-25 on
/// (an absent header is 2025-03-26's).
pub(super) fn primes(version: Option<&str>) -> bool {
    !matches!(
        version,
        None | Some("2024-11-05" | "2025-03-26" | "2025-06-18")
    )
}

/// The one value of the header `name`: two are refused, as a proxy might read either.
fn single<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, String> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(format!("duplicate {name} header"));
    }
    value
        .to_str()
        .map(Some)
        .map_err(|_| format!("{name} header contains invalid characters"))
}

/// A header value as sent: plain, or `=?base64?…?=` for what a header cannot carry plainly.
fn decoded(value: &str) -> Option<String> {
    match value
        .strip_prefix(BASE64_PREFIX)
        .and_then(|inner| inner.strip_suffix(BASE64_SUFFIX))
    {
        Some(inner) => String::from_utf8(BASE64_STANDARD.decode(inner).ok()?).ok(),
        None => Some(value.to_owned()),
    }
}

/// The param a method's `Mcp-Name` repeats, if it has one.
fn named_param(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// A primitive argument as its header carries it.
fn header_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// Each `x-mcp-header` a tool's input schema sets on a property reached through `properties`
/// alone: the path of property names, and the header's name.
fn param_headers(schema: &JsonObject) -> Vec<(Vec<&str>, &str)> {
    fn walk<'a>(
        properties: Option<&'a Value>,
        path: &mut Vec<&'a str>,
        out: &mut Vec<(Vec<&'a str>, &'a str)>,
    ) {
        let Some(Value::Object(properties)) = properties else {
            return;
        };
        for (name, property) in properties {
            path.push(name);
            if let Some(Value::String(header)) = property.get("x-mcp-header")
                && !header.is_empty()
            {
                out.push((path.clone(), header));
            }
            walk(property.get("properties"), path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(schema.get("properties"), &mut Vec::new(), &mut out);
    out
}

/// Checks the 2026-07-28 routing headers of a request or notification against its body;
/// `tool_schema` is the called tool's input schema. The error says what disagrees.
pub(super) fn check_routing_headers(
    headers: &HeaderMap,
    method: &str,
    params: &Value,
    tool_schema: Option<&JsonObject>,
) -> Result<(), String> {
    match single(headers, METHOD)? {
        None => return Err("missing required Mcp-Method header".into()),
        Some(sent) if sent != method => {
            return Err(format!(
                "Mcp-Method header `{sent}` does not match body method `{method}`"
            ));
        }
        Some(_) => {}
    }
    if let Some(expected) = named_param(method).and_then(|key| params.get(key)?.as_str()) {
        let Some(sent) = single(headers, NAME)? else {
            return Err(format!("missing required Mcp-Name header for `{method}`"));
        };
        let sent = decoded(sent).ok_or("Mcp-Name header is not valid Base64")?;
        if sent != expected {
            return Err(format!(
                "Mcp-Name header `{sent}` does not match body value `{expected}`"
            ));
        }
    }
    let (Some(schema), "tools/call") = (tool_schema, method) else {
        return Ok(());
    };
    let arguments = params.get("arguments");
    for (path, header) in param_headers(schema) {
        let full = format!("{PARAM_PREFIX}{header}");
        let property = path.join(".");
        let argument = arguments
            .and_then(|arguments| path.iter().try_fold(arguments, |value, key| value.get(key)))
            .filter(|value| !value.is_null())
            .and_then(header_text);
        match (single(headers, &full)?, argument) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(format!(
                    "unexpected {full} header for absent or null `{property}`"
                ));
            }
            (None, Some(_)) => return Err(format!("missing {full} header for `{property}`")),
            (Some(sent), Some(expected)) => {
                let sent =
                    decoded(sent).ok_or_else(|| format!("{full} header is not valid Base64"))?;
                if sent != expected {
                    return Err(format!(
                        "{full} header `{sent}` does not match body value `{expected}`"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Checks an `initialize`'s `Mcp-Method` under a 2026-07-28 header: if sent, it says
/// `initialize`.
pub(super) fn check_initialize_method(headers: &HeaderMap) -> Result<(), String> {
    match single(headers, METHOD)? {
        Some(sent) if sent != "initialize" => Err(format!(
            "Mcp-Method header `{sent}` does not match body method `initialize`"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use serde_json::json;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn accept_counts_listed_types_with_a_weight_above_zero() {
        let sent = headers(&[("accept", "application/json;q=0.5, text/event-stream")]);
        assert!(accepts(&sent, "application/json") && accepts(&sent, "text/event-stream"));
        let refused = headers(&[("accept", "application/json;q=0.000, */*")]);
        assert!(!accepts(&refused, "application/json"));
        assert!(!accepts(&refused, "text/event-stream"), "no wildcards");
        let quoted = headers(&[("accept", "text/plain;x=\"a,application/json\"")]);
        assert!(!accepts(&quoted, "application/json"));
    }

    #[test]
    fn routing_headers_must_agree_with_the_body() {
        let params = json!({"name": "find", "arguments": {"region": "eu", "n": 3}});
        let schema: JsonObject = serde_json::from_value(json!({"properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}}}))
        .unwrap();
        let good = headers(&[
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?ZmluZA==?="),
            ("mcp-param-region", "eu"),
        ]);
        assert_eq!(
            check_routing_headers(&good, "tools/call", &params, Some(&schema)),
            Ok(())
        );
        let missing = headers(&[("mcp-method", "tools/call"), ("mcp-name", "find")]);
        assert_eq!(
            check_routing_headers(&missing, "tools/call", &params, Some(&schema)),
            Err("missing Mcp-Param-Region header for `region`".into())
        );
        let twice = headers(&[("mcp-method", "tools/call"), ("mcp-method", "tools/call")]);
        assert_eq!(
            check_routing_headers(&twice, "tools/call", &params, None),
            Err("duplicate Mcp-Method header".into())
        );
        assert_eq!(
            check_routing_headers(&HeaderMap::new(), "tools/list", &json!({}), None),
            Err("missing required Mcp-Method header".into())
        );
    }

    #[test]
    fn priming_begins_with_2025_11_25() {
        assert!(!primes(None) && !primes(Some("2025-06-18")));
        assert!(primes(Some("2025-11-25")) && primes(Some("2026-07-28")));
    }
}
