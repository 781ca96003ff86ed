//! A server that knows nothing of notes, built on the framework alone: it converts between
//! units of length, mass and temperature, on stdio.
//!
//! `cargo run -p pkb-examples --example unit_converter`. Its code uses only what
//! `pkb-core` offers without features (`default-features = false`): no HTTP, no store.

use pkb_core::transport::{self, stdio};
use pkb_core::{McpServer, Registry, Stateless, ToolError, declarations, pkb_tool};
use schemars::JsonSchema;
use serde::Serialize;

/// What a unit measures: only units of one kind convert into each other.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Quantity {
    Length,
    Mass,
    Temperature,
}

/// A unit: its symbol, and how a value in it becomes the base unit of its kind (metres,
/// kilograms, kelvin) as `value * scale + offset`.
struct Unit {
    symbol: &'static str,
    quantity: Quantity,
    scale: f64,
    offset: f64,
}

const fn unit(symbol: &'static str, quantity: Quantity, scale: f64, offset: f64) -> Unit {
    Unit {
        symbol,
        quantity,
        scale,
        offset,
    }
}

const UNITS: &[Unit] = &[
    unit("mm", Quantity::Length, 0.001, 0.0),
    unit("cm", Quantity::Length, 0.01, 0.0),
    unit("m", Quantity::Length, 1.0, 0.0),
    unit("km", Quantity::Length, 1000.0, 0.0),
    unit("in", Quantity::Length, 0.0254, 0.0),
    unit("ft", Quantity::Length, 0.3048, 0.0),
    unit("yd", Quantity::Length, 0.9144, 0.0),
    unit("mi", Quantity::Length, 1609.344, 0.0),
    unit("g", Quantity::Mass, 0.001, 0.0),
    unit("kg", Quantity::Mass, 1.0, 0.0),
    unit("oz", Quantity::Mass, 0.028_349_523_125, 0.0),
    unit("lb", Quantity::Mass, 0.453_592_37, 0.0),
    unit("K", Quantity::Temperature, 1.0, 0.0),
    unit("C", Quantity::Temperature, 1.0, 273.15),
    unit(
        "F",
        Quantity::Temperature,
        5.0 / 9.0,
        273.15 - 32.0 * 5.0 / 9.0,
    ),
];

fn find(symbol: &str) -> Result<&'static Unit, ToolError> {
    UNITS.iter().find(|u| u.symbol == symbol).ok_or_else(|| {
        let known: Vec<_> = UNITS.iter().map(|u| u.symbol).collect();
        ToolError::new(format!(
            "unknown unit `{symbol}`; known units: {}",
            known.join(", ")
        ))
    })
}

/// A converted value.
#[derive(Debug, Serialize, JsonSchema)]
struct Converted {
    /// The value in the unit asked for.
    value: f64,
    /// That unit's symbol.
    unit: String,
    /// What both units measure.
    quantity: Quantity,
}

/// Converts a value from one unit to another of the same kind: lengths (mm, cm, m, km, in,
/// ft, yd, mi), masses (g, kg, oz, lb) or temperatures (K, C, F).
#[pkb_tool(read_only, idempotent)]
async fn convert(
    /// The value to convert.
    #[arg(min = -1e12, max = 1e12)]
    value: f64,
    /// The unit it is in, such as `km`.
    #[arg(trim, min_len = 1, max_len = 8)]
    from: String,
    /// The unit wanted, such as `mi`.
    #[arg(trim, min_len = 1, max_len = 8)]
    to: String,
) -> Result<Converted, ToolError> {
    let (from, to) = (find(&from)?, find(&to)?);
    if from.quantity != to.quantity {
        return Err(ToolError::new(format!(
            "cannot convert {:?} ({}) to {:?} ({})",
            from.quantity, from.symbol, to.quantity, to.symbol
        )));
    }
    let base = value * from.scale + from.offset;
    Ok(Converted {
        value: (base - to.offset) / to.scale,
        unit: to.symbol.to_owned(),
        quantity: to.quantity,
    })
}

/// The units of one kind of quantity.
#[derive(Debug, Serialize, JsonSchema)]
struct UnitList {
    /// Their symbols.
    units: Vec<String>,
}

/// Lists the units `convert` knows for one kind of quantity: `length`, `mass` or
/// `temperature`.
#[pkb_tool(read_only, idempotent)]
async fn list_units(
    /// The kind of quantity.
    #[arg(trim, min_len = 1, max_len = 20)]
    quantity: String,
) -> Result<UnitList, ToolError> {
    let units: Vec<String> = UNITS
        .iter()
        .filter(|u| serde_json::to_value(u.quantity).ok() == Some(quantity.as_str().into()))
        .map(|u| u.symbol.to_owned())
        .collect();
    if units.is_empty() {
        return Err(ToolError::new(format!(
            "unknown quantity `{quantity}`; use length, mass or temperature"
        )));
    }
    Ok(UnitList { units })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::new(declarations![convert, list_units])?;
    let app = Stateless::new("unit-converter", env!("CARGO_PKG_VERSION"))
        .with_instructions("Converts lengths, masses and temperatures between units.");
    let server = McpServer::new(registry, app);
    let stop = std::future::pending();
    let (input, output) = transport::standard_streams();
    stdio::serve(&server, input, output, stop).await?;
    Ok(())
}
