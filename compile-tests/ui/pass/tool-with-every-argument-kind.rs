use pkb_core::{Context, Registry, ToolError, pkb_tool};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Output {
    /// A summary of what was received.
    summary: String,
}

/// Takes one argument of every kind.
#[pkb_tool(idempotent, text = output_text)]
async fn every_kind(
    ctx: &Context,
    /// A title.
    #[arg(trim, single_line, min_len = 1, max_len = 120)]
    title: String,
    /// Some tags.
    #[arg(default, trim, max_items = 20, item_min_len = 1, item_max_len = 40)]
    tags: Vec<String>,
    /// A count.
    #[arg(default = 10, min = 1, max = 50)]
    limit: u32,
    /// A switch.
    #[arg(default)]
    verbose: bool,
    /// An optional text: its rules hold when it is given.
    #[arg(default, trim, single_line, min_len = 1, max_len = 20)]
    nickname: Option<String>,
    /// An optional list.
    #[arg(default, max_items = 3, item_max_len = 10)]
    aliases: Option<Vec<String>>,
    /// An optional number.
    #[arg(default, min = 1)]
    expect_version: Option<u64>,
) -> Result<Output, ToolError> {
    let _ = ctx;
    Ok(Output {
        summary: format!("{title} {tags:?} {limit} {verbose} {nickname:?} {aliases:?} {expect_version:?}"),
    })
}

fn output_text(output: &Output) -> String {
    output.summary.clone()
}

fn main() {
    let registry: Registry = Registry::collect().unwrap();
    let tool = registry.tool("every_kind").unwrap();
    assert_eq!(tool.args.len(), 7);
}
