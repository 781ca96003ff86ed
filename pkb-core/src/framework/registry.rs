//! The registry: the tools, resources and prompts a server serves, sorted by name, with their
//! MCP descriptions computed once ([`Catalog`]), behind a handle typed by the application
//! state they take ([`Registry`]).

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::ops::Deref;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use futures::FutureExt;
use rmcp::model::{
    JsonObject, Prompt, PromptArgument, PromptMessage, Resource, ResourceTemplate, Tool,
    ToolAnnotations,
};
use serde_json::Value;

use super::completion::{Completion, CompletionTarget, MAX_COMPLETIONS};
use super::context::Context;
use super::declarations::{Declaration, Declarations};
use super::prompt::{PromptDef, PromptError};
use super::resource::{ResourceBody, ResourceDef, ResourceError};
use super::schema::{extend_schema, input_schema};
use super::schema_violations::schema_violations;
use super::state::state_type;
use super::tool::{ToolDef, ToolReply, tool_error, tool_invalid};

/// A mistake in the declarations, reported when the registry is built (at startup).
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Two declarations of one kind share a name.
    #[error("two {kind}s are named `{name}`: rename one with `name = \"...\"`")]
    DuplicateName {
        /// `tool`, `resource` or `prompt`.
        kind: &'static str,
        /// The name.
        name: String,
    },
    /// A declaration's handler takes another application state than the server's: one
    /// collected from a linked crate (a set named with `declarations!` is checked when it
    /// compiles).
    #[error("the {kind} `{name}` takes the state `{needs}`, and this server's is `{serves}`")]
    WrongState {
        /// `tool`, `resource` or `prompt`.
        kind: &'static str,
        /// Its name.
        name: &'static str,
        /// The state its handler takes.
        needs: &'static str,
        /// The state the server's application gives.
        serves: &'static str,
    },
    /// A tool's `extend_schema` does not make a usable JSON Schema.
    #[error("the input schema of tool `{tool}` is unusable: {problem}")]
    UnusableSchema {
        /// The tool.
        tool: &'static str,
        /// What is wrong.
        problem: String,
    },
}

/// One tool: its definition, its MCP description, and the validator of its whole input schema
/// when `extend_schema` added rules the argument specs do not enforce themselves.
struct RegisteredTool {
    def: &'static ToolDef,
    /// Made on first use ([`RegisteredTool::tool`]), except for a tool with an extension.
    tool: OnceLock<Tool>,
    schema_rules: Option<SchemaRules>,
}

impl RegisteredTool {
    /// Its MCP description. Deriving the input and output schemas of every tool (schemars)
    /// took about a tenth of a cold start, for descriptions only `tools/list` (and the
    /// terminal's `tools`) read: they are made when first asked for.
    fn tool(&self) -> &Tool {
        self.tool
            .get_or_init(|| describe_tool(self.def, input_schema(self.def.args)))
    }
}

/// A tool's whole input schema, for the rules its extension adds; compiled on the tool's first
/// call ([`SchemaRules::validator`]).
struct SchemaRules {
    schema: Value,
    validator: OnceLock<Result<jsonschema::Validator, String>>,
}

impl SchemaRules {
    /// Compiling checks the schema against the 2020-12 meta-schema first, and building that
    /// meta-schema's own validator took about 1.5 ms, a third of a cold start: so it waits for
    /// the first call that needs it, except in debug builds ([`register_tool`]).
    fn validator(&self) -> &Result<jsonschema::Validator, String> {
        self.validator.get_or_init(|| {
            jsonschema::draft202012::new(&self.schema).map_err(|error| error.to_string())
        })
    }
}

/// The tools, resources and prompts a server serves, for an application whose state is `S`
/// (`Registry` alone is `Registry<()>`, for handlers that take no state): a cheap handle on
/// their [`Catalog`], which it dereferences to.
pub struct Registry<S: ?Sized = ()> {
    catalog: Arc<Catalog>,
    state: PhantomData<fn(&S)>,
}

impl<S: Send + Sync + 'static> Registry<S> {
    /// Serves `declarations`: their MCP descriptions computed once, tools and prompts sorted
    /// by name, resources by URI. Refuses two of a kind with one name, a tool whose schema
    /// extension is unusable, and a collected declaration that takes another state.
    pub fn new(declarations: Declarations<S>) -> Result<Self, RegistryError> {
        let serves = state_type::<S>();
        for declaration in declarations.iter() {
            if let Some(needs) = declaration.state()
                && needs.id != serves.id
            {
                return Err(RegistryError::WrongState {
                    kind: declaration.kind(),
                    name: declaration.name(),
                    needs: needs.name,
                    serves: serves.name,
                });
            }
        }
        Ok(Self {
            catalog: Arc::new(Catalog::new(declarations.iter())?),
            state: PhantomData,
        })
    }

    /// Serves every declaration linked crates left to be collected:
    /// [`Declarations::collected`].
    pub fn collect() -> Result<Self, RegistryError> {
        Self::new(Declarations::collected())
    }
}

impl<S: ?Sized> Registry<S> {
    /// The catalog it serves, shared.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }
}

impl<S: ?Sized> Clone for Registry<S> {
    fn clone(&self) -> Self {
        Self {
            catalog: Arc::clone(&self.catalog),
            state: PhantomData,
        }
    }
}

impl<S: ?Sized> Deref for Registry<S> {
    type Target = Catalog;

    fn deref(&self) -> &Catalog {
        &self.catalog
    }
}

/// Every tool, resource and prompt a server serves, with their MCP descriptions: a
/// [`Registry`] without its state's type, as the server and the transports hold it.
pub struct Catalog {
    tools: BTreeMap<&'static str, RegisteredTool>,
    resources: Vec<&'static ResourceDef>,
    prompts: BTreeMap<&'static str, &'static PromptDef>,
    /// Whether [`Catalog::prepare_in_background`] has been asked.
    preparing: AtomicBool,
}

impl Catalog {
    fn new(declarations: impl Iterator<Item = Declaration>) -> Result<Self, RegistryError> {
        let mut registry = Self {
            tools: BTreeMap::new(),
            resources: Vec::new(),
            prompts: BTreeMap::new(),
            preparing: AtomicBool::new(false),
        };
        for declaration in declarations {
            // Whether its name was free among those of its kind.
            let fresh = match declaration {
                Declaration::Tool(def) => registry
                    .tools
                    .insert(def.name, register_tool(def)?)
                    .is_none(),
                Declaration::Resource(def) => {
                    let clash = registry
                        .resources
                        .iter()
                        .any(|r| r.uri == def.uri || r.name == def.name);
                    registry.resources.push(def);
                    !clash
                }
                Declaration::Prompt(def) => registry.prompts.insert(def.name, def).is_none(),
            };
            if !fresh {
                return Err(RegistryError::DuplicateName {
                    kind: declaration.kind(),
                    name: declaration.name().into(),
                });
            }
        }
        registry.resources.sort_by_key(|r| r.uri);
        Ok(registry)
    }

    /// Makes what is otherwise made on first use (the tools' descriptions, the validators of
    /// extended schemas) on tokio's blocking pool, once per process: the server asks when a
    /// client has its initialize answer, so that neither the cold start nor the first
    /// `tools/list` or `edit` waits for it.
    pub fn prepare_in_background(self: &Arc<Self>) {
        if self.preparing.swap(true, Ordering::Relaxed) {
            return;
        }
        let catalog = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            for registered in catalog.tools.values() {
                registered.tool();
            }
            for rules in catalog
                .tools
                .values()
                .filter_map(|r| r.schema_rules.as_ref())
            {
                let _ = rules.validator();
            }
        });
    }

    /// The tools as MCP describes them, sorted by name.
    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.tools.values().map(RegisteredTool::tool)
    }

    /// Whether it holds any tool (without describing one).
    pub fn has_tools(&self) -> bool {
        !self.tools.is_empty()
    }

    /// One tool's definition.
    pub fn tool(&self, name: &str) -> Option<&'static ToolDef> {
        self.tools.get(name).map(|registered| registered.def)
    }

    /// One tool as MCP describes it.
    pub fn tool_description(&self, name: &str) -> Option<&Tool> {
        self.tools.get(name).map(RegisteredTool::tool)
    }

    /// Runs a tool. `None` when no tool has that name. A panic in the handler becomes an
    /// `isError` result: it never reaches the protocol.
    pub async fn call_tool(
        &self,
        ctx: Context,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Option<ToolReply> {
        let registered = self.tools.get(name)?;
        let def = registered.def;
        if let Some(rules) = &registered.schema_rules {
            let validator = match rules.validator() {
                Ok(validator) => validator,
                Err(problem) => {
                    tracing::error!(tool = def.name, %problem, "the tool's extended input schema does not compile");
                    return Some(Ok(tool_error(format!(
                        "internal error: the input schema of the `{}` tool is unusable",
                        def.name
                    ))));
                }
            };
            if let Err(invalid) =
                schema_violations(validator, &rules.schema, def.args, arguments.as_ref())
            {
                return Some(tool_invalid(invalid));
            }
        }
        super::activity::CALLS.mark();
        let call = AssertUnwindSafe((def.call)(ctx, arguments)).catch_unwind();
        let reply = call.await.unwrap_or_else(|_| {
            tracing::error!(tool = def.name, "tool handler panicked");
            Ok(tool_error(format!(
                "internal error: the `{}` tool failed unexpectedly",
                def.name
            )))
        });
        super::activity::CALLS.mark();
        Some(reply)
    }

    /// Resources with a fixed URI.
    pub fn static_resources(&self) -> impl Iterator<Item = Resource> + '_ {
        self.resources
            .iter()
            .filter(|r| !r.is_template())
            .map(|def| {
                let mut resource =
                    Resource::new(def.uri, def.name).with_description(def.description);
                if let Some(title) = def.title {
                    resource = resource.with_title(title);
                }
                if let Some(mime) = def.mime_type {
                    resource = resource.with_mime_type(mime);
                }
                resource
            })
    }

    /// Resource templates.
    pub fn resource_templates(&self) -> impl Iterator<Item = ResourceTemplate> + '_ {
        self.resources
            .iter()
            .filter(|r| r.is_template())
            .map(|def| {
                let mut template =
                    ResourceTemplate::new(def.uri, def.name).with_description(def.description);
                if let Some(title) = def.title {
                    template = template.with_title(title);
                }
                if let Some(mime) = def.mime_type {
                    template = template.with_mime_type(mime);
                }
                template
            })
    }

    /// The resource a URI names, with its variable values. Fixed URIs win over templates.
    pub fn resolve_resource(&self, uri: &str) -> Option<(&'static ResourceDef, Vec<String>)> {
        let mut ordered: Vec<_> = self.resources.iter().collect();
        ordered.sort_by_key(|r| r.is_template());
        ordered
            .into_iter()
            .find_map(|def| def.match_uri(uri).map(|values| (*def, values)))
    }

    /// Reads a resource: its MIME type and text. A panic becomes a failure, not a crash.
    pub async fn read_resource(
        &self,
        ctx: Context,
        uri: &str,
    ) -> Result<(Option<&'static str>, ResourceBody), ResourceError> {
        let (def, values) = self.resolve_resource(uri).ok_or(ResourceError::NotFound)?;
        let read = AssertUnwindSafe((def.read)(ctx, values)).catch_unwind();
        let body = read.await.unwrap_or_else(|_| {
            tracing::error!(resource = def.name, "resource handler panicked");
            Err(ResourceError::Failed(
                "internal error: reading the resource failed".into(),
            ))
        })?;
        Ok((def.mime_type, body))
    }

    /// The prompts as MCP describes them, sorted by name.
    pub fn prompts(&self) -> impl Iterator<Item = Prompt> + '_ {
        self.prompts.values().map(|def| {
            let arguments = def
                .args
                .iter()
                .map(|arg| {
                    let mut argument = PromptArgument::new(arg.name);
                    argument.description = Some(arg.description.to_string());
                    argument.required = Some(arg.default.is_none());
                    argument
                })
                .collect();
            let mut prompt = Prompt::new(def.name, Some(def.description), Some(arguments));
            prompt.title = def.title.map(str::to_string);
            prompt
        })
    }

    /// One prompt's definition.
    pub fn prompt(&self, name: &str) -> Option<&'static PromptDef> {
        self.prompts.get(name).copied()
    }

    /// Renders a prompt. `None` when no prompt has that name.
    pub async fn get_prompt(
        &self,
        ctx: Context,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Option<Result<Vec<PromptMessage>, PromptError>> {
        let def = self.prompt(name)?;
        let get = AssertUnwindSafe((def.get)(ctx, arguments)).catch_unwind();
        Some(get.await.unwrap_or_else(|_| {
            tracing::error!(prompt = def.name, "prompt handler panicked");
            Err(PromptError(
                "internal error: the prompt failed unexpectedly".into(),
            ))
        }))
    }

    /// Completes a resource template variable (`uri_template` given) or a prompt argument.
    pub async fn complete(
        &self,
        ctx: Context,
        target: CompletionTarget<'_>,
        argument: &str,
        value: String,
    ) -> Completion {
        let providers = match target {
            CompletionTarget::Prompt(name) => self.prompt(name).map(|p| p.completions),
            CompletionTarget::ResourceTemplate(uri) => self
                .resources
                .iter()
                .find(|r| r.uri == uri)
                .map(|r| r.completions),
        };
        let Some(provider) = providers
            .unwrap_or_default()
            .iter()
            .find(|c| c.argument == argument)
        else {
            return Completion::default();
        };
        let complete = AssertUnwindSafe((provider.complete)(ctx, value)).catch_unwind();
        let mut values = complete.await.unwrap_or_default();
        let has_more = values.len() > MAX_COMPLETIONS;
        values.truncate(MAX_COMPLETIONS);
        Completion { values, has_more }
    }
}

/// A tool as the registry holds it, with its schema extended and compiled when it has an
/// extension.
fn register_tool(def: &'static ToolDef) -> Result<RegisteredTool, RegistryError> {
    let unusable = |problem: String| RegistryError::UnusableSchema {
        tool: def.name,
        problem,
    };
    let Some(extension) = def.extend_schema else {
        return Ok(RegisteredTool {
            def,
            tool: OnceLock::new(),
            schema_rules: None,
        });
    };
    // An extension is merged now, so that one that does not fit stops the registry.
    let derived = input_schema(def.args);
    let extended = extend_schema(&derived, extension()).map_err(unusable)?;
    let rules = SchemaRules {
        schema: Value::Object(extended.clone()),
        validator: OnceLock::new(),
    };
    // A debug build (every test) compiles it now, so that a bad extension still stops the
    // registry at startup where it is written and tried.
    if cfg!(debug_assertions)
        && let Err(problem) = rules.validator()
    {
        return Err(unusable(problem.clone()));
    }
    Ok(RegisteredTool {
        def,
        tool: OnceLock::from(describe_tool(def, Arc::new(extended))),
        schema_rules: Some(rules),
    })
}

fn describe_tool(def: &ToolDef, input_schema: Arc<JsonObject>) -> Tool {
    let annotations = ToolAnnotations::new()
        .read_only(def.annotations.read_only)
        .destructive(def.annotations.destructive)
        .idempotent(def.annotations.idempotent)
        .open_world(def.annotations.open_world);
    let mut tool = Tool::new(def.name, def.description, input_schema).with_annotations(annotations);
    if let Some(schema) = (def.output_schema)() {
        tool = tool.with_raw_output_schema(schema);
    }
    if let Some(title) = def.title {
        tool = tool.with_title(title);
    }
    tool
}

// PKB's declarations as a registry holds them.
#[cfg(all(test, feature = "notes"))]
mod tests {
    use super::Registry;

    #[test]
    fn the_registry_holds_the_contract_sorted_by_name() {
        let registry = Registry::new(crate::notes_declarations()).unwrap();
        let tools: Vec<&str> = registry.tools().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            tools,
            [
                "delete",
                "echo",
                "edit",
                "fetch",
                "history",
                "restore",
                "search",
                "summarize",
                "summarize_and_save",
                "write"
            ]
        );
        let templates: Vec<String> = registry
            .resource_templates()
            .map(|t| t.uri_template)
            .collect();
        assert_eq!(templates, ["pkb://notes/{id}", "pkb://notes/{id}/history"]);
        let fixed: Vec<String> = registry.static_resources().map(|r| r.uri).collect();
        assert_eq!(fixed, ["pkb://notes"]);
        let prompts: Vec<String> = registry.prompts().map(|p| p.name).collect();
        assert_eq!(prompts, ["quick_capture"]);
    }
}
