//! The MCP server: answers the protocol from the [`Registry`] and the [`Store`].

// Sampling, logging and subscriptions are deprecated only for the stateless 2026-07-28
// revision, which PKB does not serve (see `supported_protocol_versions`).
#![allow(deprecated)]

use std::borrow::Cow;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, LazyLock, OnceLock};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CompletionInfo,
    CustomRequest, CustomResult, ErrorData, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Reference, Resource, ResourceContents, ServerCapabilities, SetLevelRequestParams,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer, ServerHandler};
use serde_json::json;

use crate::note::is_valid_id;
use crate::resources::note_uri;
use crate::store::Store;
use crate::{CompletionTarget, Context, Registry, ResourceError, Session};

/// The most entries in one page of resources/list.
pub const RESOURCES_PAGE_SIZE: usize = 100;

/// One client's MCP server over a store.
#[derive(Clone)]
pub struct PkbServer {
    registry: Arc<Registry>,
    store: Store,
    session: Arc<Session>,
    sampling_timeout: std::time::Duration,
    /// The client handle of the session, once `initialize` has succeeded.
    peer: Arc<OnceLock<Peer<RoleServer>>>,
}

impl PkbServer {
    /// A server answering from `registry` over `store`.
    pub fn new(registry: Arc<Registry>, store: Store) -> Self {
        Self {
            registry,
            store,
            session: Arc::default(),
            sampling_timeout: crate::summary::SAMPLING_TIMEOUT,
            peer: Arc::default(),
        }
    }

    /// The same server with another limit on how long a sampling request may take.
    pub fn with_sampling_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.sampling_timeout = timeout;
        self
    }

    /// The registry it serves.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The session's handle on its client, from the moment `initialize` succeeded (before its
    /// answer is written). `None` before that.
    pub(crate) fn peer(&self) -> Option<&Peer<RoleServer>> {
        self.peer.get()
    }

    /// Marks the session as closing (see [`Session::close`]): call it once the service is
    /// cancelled, so that calls waiting to notify the client or to sample its model answer at
    /// once.
    pub fn close_session(&self) {
        self.session.close();
    }

    fn context(&self, request: &RequestContext<RoleServer>) -> Context {
        let sampling = request
            .client_capabilities()
            .is_some_and(|caps| caps.sampling.is_some());
        Context::new(
            self.store.clone(),
            self.session.clone(),
            Some(request.peer.clone()),
            sampling,
        )
        .with_sampling_timeout(self.sampling_timeout)
    }

    /// Note entries after `after`, `limit` at most, and whether more follow.
    async fn note_resources(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<Resource>, Option<String>), ErrorData> {
        let mut notes = self
            .store
            .list(after, limit + 1)
            .await
            .map_err(|e| ErrorData::internal_error(format!("storage error: {e}"), None))?;
        let more = notes.len() > limit;
        notes.truncate(limit);
        let next = more
            .then(|| notes.last().map(|n| encode_cursor(&n.id)))
            .flatten();
        let resources = notes
            .into_iter()
            .map(|note| {
                Resource::new(note_uri(&note.id), note.id.clone())
                    .with_title(note.title)
                    .with_mime_type("text/markdown")
            })
            .collect();
        Ok((resources, next))
    }
}

const CURSOR_PREFIX: &str = "notes-after:";

/// This process's key for tagging cursors: a cursor carries the note ID it continues after
/// and a keyed hash of it, so one made up by a client, or issued by another process, is
/// refused rather than served.
static CURSOR_KEY: LazyLock<RandomState> = LazyLock::new(RandomState::new);

fn cursor_tag(last_id: &str) -> String {
    format!("{:016x}", CURSOR_KEY.hash_one(last_id))
}

fn encode_cursor(last_id: &str) -> String {
    let tag = cursor_tag(last_id);
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_PREFIX}{last_id}#{tag}"))
}

/// The note ID a cursor continues after, or `None` for a cursor this server never issued.
fn decode_cursor(cursor: &str) -> Option<String> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (id, tag) = text.strip_prefix(CURSOR_PREFIX)?.split_once('#')?;
    (is_valid_id(id) && tag == cursor_tag(id)).then(|| id.to_string())
}

fn invalid_params(message: impl Into<Cow<'static, str>>) -> ErrorData {
    ErrorData::invalid_params(message, None)
}

/// The MCP methods this server answers. A known method whose params fail to parse gets
/// -32602 (invalid params), not -32601 (method not found).
pub(crate) const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
];

impl ServerHandler for PkbServer {
    fn get_info(&self) -> InitializeResult {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .enable_prompts()
            .enable_completions()
            .enable_logging()
            .build();
        let mut info = InitializeResult::new(capabilities).with_instructions(
            "PKB is a personal knowledge base. Use `search` to find notes by words (it returns \
             IDs and titles), `fetch` to read one, and `write` to save one.",
        );
        let mut implementation = Implementation::from_build_env();
        implementation.name = "pkb".into();
        implementation.title = Some("PKB".into());
        implementation.version = env!("CARGO_PKG_VERSION").into();
        info.server_info = implementation;
        info
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        // A session is initialized once: a second `initialize` would renegotiate the version
        // under calls already answered in the first.
        if self.peer.get().is_some() {
            return Err(ErrorData::invalid_request(
                "the session is already initialized",
                None,
            ));
        }
        // rmcp's default, plus keeping the peer: `DirectCalls` answers from the first call
        // the client sends after this answer.
        context.peer.set_peer_info(request.clone());
        let result = self.negotiate_initialize(&request)?;
        if self.peer.set(context.peer).is_err() {
            tracing::warn!("initialize came twice at once; kept the first session's client handle");
        }
        Ok(result)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        // The stateless 2026-07-28 revision has no sampling, subscriptions or -32002.
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.registry.tools().cloned().collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let ctx = self.context(&context);
        match self
            .registry
            .call_tool(ctx, &request.name, request.arguments)
            .await
        {
            Some(result) => Ok(result.into()),
            None => Err(invalid_params(format!("unknown tool: {}", request.name))),
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let cursor = request.and_then(|r| r.cursor);
        // The first page starts with the fixed resources, then notes by ID; a cursor names
        // the last note ID a page held.
        let (mut resources, after) = match cursor {
            None => (self.registry.static_resources().collect::<Vec<_>>(), None),
            Some(cursor) => {
                let after = decode_cursor(&cursor).ok_or_else(|| {
                    invalid_params("invalid cursor: pass a nextCursor this server returned")
                })?;
                (Vec::new(), Some(after))
            }
        };
        let room = RESOURCES_PAGE_SIZE.saturating_sub(resources.len());
        let (notes, next_cursor) = self.note_resources(after.as_deref(), room).await?;
        resources.extend(notes);
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = next_cursor;
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(
            self.registry.resource_templates().collect(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        match self
            .registry
            .read_resource(self.context(&context), &uri)
            .await
        {
            Ok((mime_type, text)) => {
                let mut contents = ResourceContents::text(text, uri.clone());
                if let Some(mime_type) = mime_type {
                    contents = contents.with_mime_type(mime_type);
                }
                Ok(ReadResourceResult::new(vec![contents]).into())
            }
            Err(ResourceError::NotFound) => Err(ErrorData::resource_not_found(
                format!("resource not found: {uri}"),
                Some(json!({ "uri": uri })),
            )),
            Err(ResourceError::Failed(message)) => Err(ErrorData::internal_error(message, None)),
        }
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if self.registry.resolve_resource(&request.uri).is_none() {
            return Err(ErrorData::resource_not_found(
                format!("resource not found: {}", request.uri),
                Some(json!({ "uri": request.uri })),
            ));
        }
        self.session.subscribe(&request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session.unsubscribe(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(
            self.registry.prompts().collect(),
        ))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let ctx = self.context(&context);
        match self
            .registry
            .get_prompt(ctx, &request.name, request.arguments)
            .await
        {
            None => Err(invalid_params(format!("unknown prompt: {}", request.name))),
            Some(Err(error)) => Err(invalid_params(error.0)),
            Some(Ok(messages)) => {
                let mut result = GetPromptResult::new(messages);
                result.description = self
                    .registry
                    .prompt(&request.name)
                    .map(|p| p.description.to_string());
                Ok(result.into())
            }
        }
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let target = match &request.r#ref {
            Reference::Prompt(prompt) => {
                if self.registry.prompt(&prompt.name).is_none() {
                    return Err(invalid_params(format!("unknown prompt: {}", prompt.name)));
                }
                CompletionTarget::Prompt(&prompt.name)
            }
            Reference::Resource(template) => {
                if !self
                    .registry
                    .resource_templates()
                    .any(|known| known.uri_template == template.uri)
                {
                    return Err(invalid_params(format!(
                        "unknown resource template: {}",
                        template.uri
                    )));
                }
                CompletionTarget::ResourceTemplate(&template.uri)
            }
            _ => return Err(invalid_params("unsupported completion reference")),
        };
        let completion = self
            .registry
            .complete(
                self.context(&context),
                target,
                &request.argument.name,
                request.argument.value.clone(),
            )
            .await;
        let mut info = CompletionInfo::default();
        // The total is known only when every value is answered.
        info.total = (!completion.has_more).then_some(completion.values.len() as u32);
        info.has_more = Some(completion.has_more);
        info.values = completion.values;
        Ok(CompleteResult::new(info))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session.set_log_level(request.level);
        Ok(())
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if KNOWN_METHODS.contains(&request.method.as_str()) {
            Err(invalid_params(format!(
                "invalid params for {}",
                request.method
            )))
        } else {
            Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {}", request.method),
                None,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{decode_cursor, encode_cursor};

    #[test]
    fn cursors_round_trip_and_reject_forgeries() {
        assert_eq!(
            decode_cursor(&encode_cursor("todo")).as_deref(),
            Some("todo")
        );
        assert_eq!(decode_cursor("garbage!"), None);
        assert_eq!(decode_cursor(""), None);
        assert_eq!(decode_cursor(&base64_of("other:todo")), None);
        assert_eq!(decode_cursor(&base64_of("notes-after:BAD ID")), None);
        // Well formed, but not issued: no tag, or another ID's.
        assert_eq!(decode_cursor(&base64_of("notes-after:todo")), None);
        let other = super::cursor_tag("zzz");
        let forged = base64_of(&format!("notes-after:todo#{other}"));
        assert_eq!(decode_cursor(&forged), None);
    }

    fn base64_of(text: &str) -> String {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
    }
}
