use pkb_core::{Contents, Registry, ToolError, pkb_tool};

/// Draws a chart.
#[pkb_tool(read_only)]
async fn chart(
    /// What to draw.
    #[arg(max_len = 100)]
    title: String,
) -> Result<Contents, ToolError> {
    Ok(Contents::text(title).image("iVBORw0KGgo=", "image/png"))
}

/// Describes the chart, as a caption before its blocks.
fn caption(contents: &Contents) -> String {
    format!("{} blocks", contents.blocks().len())
}

/// Draws a chart, with a caption.
#[pkb_tool(read_only, text = caption)]
async fn captioned_chart() -> Result<Contents, ToolError> {
    Ok(Contents::default().audio("UklGRg==", "audio/wav"))
}

fn main() {
    let registry: Registry = Registry::collect().unwrap();
    // Content blocks are not structured output: no outputSchema.
    assert!(registry.tool_description("chart").unwrap().output_schema.is_none());
    assert!(registry.tool("captioned_chart").is_some());
}
