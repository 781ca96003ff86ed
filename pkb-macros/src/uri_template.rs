//! The grammar of a resource URI template: literal text and `{variable}`s. The only place it is
//! parsed; the generated `ResourceDef` carries the pieces, which the runtime only matches.

/// A URI template split at its variables.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct UriTemplate {
    /// The literal text around the variables: one more piece than there are variables.
    pub literals: Vec<String>,
    /// The variable names, in order.
    pub variables: Vec<String>,
}

/// Splits `template`, or says what is malformed.
pub fn parse(template: &str) -> Result<UriTemplate, String> {
    let mut literals = Vec::new();
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find(['{', '}']) {
        if rest[open..].starts_with('}') {
            return Err("unmatched `}` in the URI template".into());
        }
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .ok_or("unclosed `{` in the URI template: write `{name}`")?;
        let name = &after[..close];
        let valid = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            return Err(format!(
                "`{{{name}}}` is not a template variable: use `{{name}}` with a Rust identifier"
            ));
        }
        if names.iter().any(|n| n == name) {
            return Err(format!("template variable `{{{name}}}` appears twice"));
        }
        if after[..close].is_empty() || after[close + 1..].starts_with('{') {
            return Err("two template variables must be separated by literal text".into());
        }
        literals.push(rest[..open].to_string());
        names.push(name.to_string());
        rest = &after[close + 1..];
    }
    literals.push(rest.to_string());
    Ok(UriTemplate {
        literals,
        variables: names,
    })
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn variables(template: &str) -> Result<Vec<String>, String> {
        parse(template).map(|t| t.variables)
    }

    #[test]
    fn finds_variables_in_order() {
        assert_eq!(variables("pkb://notes/{id}").unwrap(), ["id"]);
        assert_eq!(variables("a://{x}/b/{y}").unwrap(), ["x", "y"]);
        assert!(variables("pkb://notes").unwrap().is_empty());
    }

    #[test]
    fn splits_literals_around_variables() {
        assert_eq!(
            parse("a://{x}/b/{y}").unwrap().literals,
            ["a://", "/b/", ""]
        );
        assert_eq!(parse("pkb://notes").unwrap().literals, ["pkb://notes"]);
    }

    #[test]
    fn rejects_malformed_templates() {
        assert!(variables("a://{x").is_err());
        assert!(variables("a://x}").is_err());
        assert!(variables("a://{}").is_err());
        assert!(variables("a://{x}{y}").is_err());
        assert!(variables("a://{x}/{x}").is_err());
        assert!(variables("a://{1x}").is_err());
    }
}
