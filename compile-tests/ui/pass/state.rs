// Handlers take the application's state with `#[state]`; a server whose `App` gives that
// state serves them, beside handlers that take none.
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pkb_core::{
    App, Context, McpServer, PromptError, Registry, ResourceError, ToolError, User,
    declarations, pkb_prompt, pkb_resource, pkb_tool,
};
use rmcp::model::{Implementation, PromptMessage, Role};

/// The application's state.
#[derive(Default)]
struct Counter(AtomicU64);

struct CounterApp(Arc<Counter>);

impl App for CounterApp {
    type State = Counter;

    fn state_for<'a>(
        &'a self,
        _user: &'a User,
    ) -> futures::future::BoxFuture<'a, Result<Arc<Counter>, String>> {
        Box::pin(async move { Ok(Arc::clone(&self.0)) })
    }

    fn implementation(&self) -> Implementation {
        Implementation::from_build_env()
    }
}

/// Counts one more.
#[pkb_tool(idempotent)]
async fn count(
    _ctx: &Context,
    #[state] counter: &Counter,
    /// How many.
    #[arg(default = 1, max = 10)]
    by: u64,
) -> Result<String, ToolError> {
    Ok(counter.0.fetch_add(by, Ordering::SeqCst).to_string())
}

/// The count.
#[pkb_resource(uri = "counter://now")]
async fn now(#[state] counter: &Counter) -> Result<String, ResourceError> {
    Ok(counter.0.load(Ordering::SeqCst).to_string())
}

/// Asks about the count.
#[pkb_prompt]
async fn ask(#[state] counter: &Counter) -> Result<Vec<PromptMessage>, PromptError> {
    let text = format!("The count is {}.", counter.0.load(Ordering::SeqCst));
    Ok(vec![PromptMessage::new_text(Role::User, text)])
}

/// Takes no state: served by any server.
#[pkb_tool(read_only)]
async fn ping() -> Result<String, ToolError> {
    Ok("pong".into())
}

fn main() {
    let registry = Registry::new(declarations![count, now, ask, ping]).unwrap();
    let counter = Arc::new(Counter::default());
    let _server = McpServer::new(registry.clone(), CounterApp(Arc::clone(&counter)));
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let ctx = Context::detached(Counter::default());
    let args = serde_json::json!({"by": 2}).as_object().cloned();
    let reply = runtime
        .block_on(registry.call_tool(ctx.clone(), "count", args))
        .unwrap()
        .unwrap();
    assert_ne!(reply.is_error, Some(true));
    // A request carrying another state: the handler's failure, not a crash.
    let wrong = Context::detached(String::from("not a counter"));
    let reply = runtime
        .block_on(registry.call_tool(wrong, "count", None))
        .unwrap()
        .unwrap();
    assert_eq!(reply.is_error, Some(true));
}
