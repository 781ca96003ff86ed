//! The floor: the least a JSON-RPC server on stdio can do for the same workload.
//!
//! One thread reads a line, parses it with serde_json, answers `echo`, `fetch`, `search` and
//! `write` from a `HashMap` of notes (and, for `search`, the benchmark's small inverted index),
//! and writes one line. It answers with the same shapes as `pkb-server` (structured content plus
//! the pretty-printed text item, the `resources/list_changed` notification when `write` creates a
//! note), so that both sides move the same bytes and pass the same checks. No durability, no
//! concurrency, no schema validation: whatever `pkb-server` costs above this is the price of
//! being a real MCP server.

use std::collections::HashMap;
use std::io::{BufRead, Write};

use pkb_core::note::{derive_id, normalize_tags, now_rfc3339};
use serde_json::{Value, json};

use crate::corpus::{self, Index, Note};

struct Stored {
    note: Note,
    created_at: String,
    updated_at: String,
}

struct Floor {
    notes: HashMap<String, Stored>,
    /// Ids by note number, for the index.
    ids: Vec<String>,
    index: Index,
}

impl Floor {
    fn new(preload: usize) -> Self {
        let mut all = corpus::seed_notes();
        if preload > 0 {
            all.extend(corpus::generate(preload).1);
        }
        let index = Index::new(&all);
        let now = now_rfc3339();
        let ids = all.iter().map(|n| n.id.clone()).collect();
        let notes = all
            .into_iter()
            .map(|note| {
                let stored = Stored {
                    note,
                    created_at: now.clone(),
                    updated_at: now.clone(),
                };
                (stored.note.id.clone(), stored)
            })
            .collect();
        Floor { notes, ids, index }
    }

    /// The result of a tools/call, and whether a note was created.
    fn call(&mut self, name: &str, args: &Value) -> (Value, bool) {
        let text_arg = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default();
        match name {
            "echo" => {
                let text = text_arg("text");
                (
                    tool_ok(json!({ "text": text }), Some(text.to_owned())),
                    false,
                )
            }
            "fetch" => {
                let id = text_arg("id").trim();
                match self.notes.get(id) {
                    Some(stored) => (tool_ok(json!({ "note": note_json(stored) }), None), false),
                    None => (tool_error(format!("No note found with ID: {id}")), false),
                }
            }
            "search" => {
                let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(10) as usize;
                let results: Vec<Value> = self
                    .index
                    .search(text_arg("query"))
                    .into_iter()
                    .take(limit)
                    .map(|n| {
                        let note = &self.notes[&self.ids[n as usize]].note;
                        json!({
                            "id": note.id,
                            "title": note.title,
                            "tags": note.tags,
                            "uri": format!("pkb://notes/{}", note.id),
                            "score": 1.0,
                        })
                    })
                    .collect();
                (tool_ok(json!({ "results": results }), None), false)
            }
            "write" => {
                let title = text_arg("title").trim().to_owned();
                let id = derive_id(&title);
                let overwrite = args.get("overwrite").and_then(Value::as_bool) == Some(true);
                let exists = self.notes.contains_key(&id);
                if exists && !overwrite {
                    let text = format!("note exists: {id}; pass overwrite=true to replace");
                    return (tool_error(text), false);
                }
                let tags: Vec<String> = args
                    .get("tags")
                    .and_then(Value::as_array)
                    .map(|t| {
                        t.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                let note = Note {
                    id: id.clone(),
                    title: title.clone(),
                    tags: normalize_tags(&tags),
                    body: text_arg("body").to_owned(),
                };
                let now = now_rfc3339();
                if !exists {
                    // Replacing would leave stale index entries; the benchmark only creates.
                    self.index.add(self.ids.len() as u32, &note);
                    self.ids.push(id.clone());
                }
                let created_at = match self.notes.get(&id) {
                    Some(old) => old.created_at.clone(),
                    None => now.clone(),
                };
                self.notes.insert(
                    id.clone(),
                    Stored {
                        note,
                        created_at,
                        updated_at: now,
                    },
                );
                let output = json!({ "id": id, "title": title, "created": !exists });
                (tool_ok(output, Some(format!("saved: {id}"))), !exists)
            }
            _ => (tool_error(format!("unknown tool: {name}")), false),
        }
    }
}

fn note_json(stored: &Stored) -> Value {
    json!({
        "id": stored.note.id,
        "title": stored.note.title,
        "tags": stored.note.tags,
        "body": stored.note.body,
        "created_at": stored.created_at,
        "updated_at": stored.updated_at,
    })
}

fn tool_ok(structured: Value, text: Option<String>) -> Value {
    let text =
        text.unwrap_or_else(|| serde_json::to_string_pretty(&structured).unwrap_or_default());
    json!({
        "content": [{ "type": "text", "text": text }],
        "structuredContent": structured,
        "isError": false,
    })
}

fn tool_error(text: String) -> Value {
    json!({ "content": [{ "type": "text", "text": text }], "isError": true })
}

fn write_line(out: &mut impl Write, message: &Value) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    out.write_all(&bytes)?;
    out.flush()
}

/// Serves stdin/stdout until stdin closes. `preload` generated notes follow the seed notes.
pub fn serve(preload: usize) -> std::io::Result<()> {
    let mut floor = Floor::new(preload);
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            let error = json!({"jsonrpc": "2.0", "id": null,
                "error": {"code": -32700, "message": "parse error"}});
            write_line(&mut out, &error)?;
            continue;
        };
        let Some(id) = message.get("id").cloned() else {
            continue; // a notification
        };
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let result = match method {
            "initialize" => json!({
                "protocolVersion": params.get("protocolVersion").cloned()
                    .unwrap_or_else(|| json!("2025-11-25")),
                "capabilities": { "tools": {} },
                "serverInfo": { "name": "pkb-floor", "version": env!("CARGO_PKG_VERSION") },
            }),
            "ping" => json!({}),
            "tools/call" => {
                let name = params
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let args = params.get("arguments").cloned().unwrap_or(Value::Null);
                let (result, created) = floor.call(name, &args);
                if created {
                    let note = json!({"jsonrpc": "2.0",
                        "method": "notifications/resources/list_changed"});
                    write_line(&mut out, &note)?;
                }
                result
            }
            _ => {
                let error = json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": format!("method not found: {method}")}});
                write_line(&mut out, &error)?;
                continue;
            }
        };
        write_line(
            &mut out,
            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
        )?;
    }
}
