//! The results: one table for people, the same as JSON for machines.

use serde_json::{Value, json};

/// How a figure is measured; all values are stored in the base unit named here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A duration, in microseconds.
    Micros,
    /// A rate, per second.
    PerSec,
    /// Memory, in KiB.
    Kib,
    /// A retrieval measure between 0 and 1, such as nDCG@10.
    Score,
    /// A size, in bytes.
    Bytes,
}

impl Unit {
    fn key(self) -> &'static str {
        match self {
            Unit::Micros => "us",
            Unit::PerSec => "per_s",
            Unit::Kib => "KiB",
            Unit::Score => "score",
            Unit::Bytes => "bytes",
        }
    }

    /// A value for people.
    pub fn show(self, v: f64) -> String {
        match self {
            Unit::Micros if v < 1_000.0 => format!("{v:.1} µs"),
            Unit::Micros if v < 1_000_000.0 => format!("{:.2} ms", v / 1e3),
            Unit::Micros => format!("{:.2} s", v / 1e6),
            Unit::PerSec => format!("{v:.0}/s"),
            Unit::Kib => format!("{:.1} MiB", v / 1024.0),
            Unit::Score => format!("{v:.3}"),
            Unit::Bytes => format!("{:.1} KB", v / 1e3),
        }
    }
}

/// One line of the table: one or two figures (p50 and p99) for the server and the floor.
#[derive(Debug, Clone)]
pub struct Row {
    /// The group, such as `fresh store (3 notes)`.
    pub section: String,
    /// What was measured.
    pub label: String,
    /// The unit of every figure.
    pub unit: Unit,
    /// The server's figures.
    pub server: Vec<f64>,
    /// The floor's figures, where it ran the same workload.
    pub floor: Option<Vec<f64>>,
}

/// A target of the issue, checked against this run.
#[derive(Debug, Clone)]
pub struct Target {
    /// What it requires.
    pub name: String,
    /// The figure measured, for people.
    pub measured: String,
    /// Whether it holds; `None` when it states a figure rather than a bound.
    pub holds: Option<bool>,
}

/// Everything a run measured.
#[derive(Debug, Default)]
pub struct Report {
    /// Where and how it ran, as (key, value).
    pub machine: Vec<(String, String)>,
    /// The measurements, in order.
    pub rows: Vec<Row>,
    /// The targets.
    pub targets: Vec<Target>,
}

fn ratios(row: &Row) -> Option<Vec<f64>> {
    let floor = row.floor.as_ref()?;
    Some(
        row.server
            .iter()
            .zip(floor)
            .map(|(s, f)| if *f > 0.0 { s / f } else { f64::NAN })
            .collect(),
    )
}

fn joined(values: &[f64], show: impl Fn(f64) -> String) -> String {
    values
        .iter()
        .map(|v| show(*v))
        .collect::<Vec<_>>()
        .join(" / ")
}

impl Report {
    /// Adds a row.
    pub fn row(
        &mut self,
        section: &str,
        label: &str,
        unit: Unit,
        server: Vec<f64>,
        floor: Option<Vec<f64>>,
    ) {
        self.rows.push(Row {
            section: section.to_owned(),
            label: label.to_owned(),
            unit,
            server,
            floor,
        });
    }

    /// The table, as markdown.
    pub fn table(&self) -> String {
        let mut out = String::new();
        for (key, value) in &self.machine {
            out.push_str(&format!("{key}: {value}\n"));
        }
        out.push('\n');
        let lines: Vec<[String; 4]> = self
            .rows
            .iter()
            .map(|row| {
                let show = |v: f64| row.unit.show(v);
                [
                    format!("{}: {}", row.section, row.label),
                    joined(&row.server, show),
                    row.floor
                        .as_ref()
                        .map_or_else(|| "-".to_owned(), |f| joined(f, show)),
                    ratios(row)
                        .map_or_else(|| "-".to_owned(), |r| joined(&r, |x| format!("{x:.2}x"))),
                ]
            })
            .collect();
        let header = [
            "measure".to_owned(),
            "pkb-server".to_owned(),
            "floor".to_owned(),
            "ratio".to_owned(),
        ];
        let mut widths = [0; 4];
        for line in std::iter::once(&header).chain(&lines) {
            for (w, cell) in widths.iter_mut().zip(line) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let render = |line: &[String; 4]| {
            let cells: Vec<String> = line
                .iter()
                .zip(widths)
                .enumerate()
                .map(|(i, (cell, w))| {
                    if i == 0 {
                        format!("{cell:<w$}")
                    } else {
                        format!("{cell:>w$}")
                    }
                })
                .collect();
            format!("| {} |\n", cells.join(" | "))
        };
        out.push_str(&render(&header));
        let rule: Vec<String> = widths
            .iter()
            .enumerate()
            .map(|(i, w)| {
                if i == 0 {
                    "-".repeat(*w)
                } else {
                    format!("{}:", "-".repeat(w - 1))
                }
            })
            .collect();
        out.push_str(&format!("| {} |\n", rule.join(" | ")));
        for line in &lines {
            out.push_str(&render(line));
        }
        out.push_str("\nTargets (ratios are pkb-server / floor, measured in this run):\n\n");
        for target in &self.targets {
            let verdict = match target.holds {
                Some(true) => "holds",
                Some(false) => "MISSED",
                None if target.measured.starts_with("not measured") => "n/a",
                None => "stated",
            };
            out.push_str(&format!(
                "- [{verdict}] {}: {}\n",
                target.name, target.measured
            ));
        }
        out
    }

    /// The same, as JSON.
    pub fn json(&self) -> Value {
        let machine: serde_json::Map<String, Value> = self
            .machine
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|row| {
                json!({
                    "section": row.section,
                    "measure": row.label,
                    "unit": row.unit.key(),
                    "server": row.server,
                    "floor": row.floor,
                    "ratio": ratios(row),
                })
            })
            .collect();
        let targets: Vec<Value> = self
            .targets
            .iter()
            .map(|t| json!({"target": t.name, "measured": t.measured, "holds": t.holds}))
            .collect();
        json!({ "machine": machine, "rows": rows, "targets": targets })
    }
}
