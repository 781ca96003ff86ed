//! Notes as their rows hold them: tags as JSON, a row as a note, a stored row as it was
//! indexed, sorted values by prefix.

use super::*;

/// Tags as stored in `notes.tags`: a JSON array of strings.
pub(super) fn tags_to_json<'a>(tags: impl Iterator<Item = &'a str>) -> String {
    serde_json::Value::Array(tags.map(serde_json::Value::from).collect()).to_string()
}

pub(super) fn tags_from_json(row: &Row<'_>, column: usize) -> rusqlite::Result<Vec<String>> {
    let text: String = row.get(column)?;
    serde_json::from_str(&text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(column, Type::Text, Box::new(e)))
}

/// A note from a row of `id, title, tags, body, created_at, updated_at, version`.
pub(super) fn note_from_row(row: &Row<'_>) -> rusqlite::Result<Note> {
    Ok(Note {
        id: row.get(0)?,
        title: row.get(1)?,
        tags: tags_from_json(row, 2)?,
        body: row.get(3)?,
        created_at: row.get(4)?,
        updated_at: row.get(5)?,
        version: row.get(6)?,
    })
}

pub(super) fn sql_limit(limit: usize) -> i64 {
    i64::try_from(limit.min(MAX_LIMIT)).unwrap_or(0)
}

/// Up to `limit` values from a sorted `query` (bound to `prefix`) that start with `prefix`.
/// Comparing in Rust rather than with LIKE or GLOB keeps `%`, `_`, `*`, `?` and `[` literal.
pub(super) fn sorted_with_prefix(
    conn: &Connection,
    sql: &str,
    prefix: &str,
    limit: usize,
) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query([prefix])?;
    let mut out = Vec::new();
    while out.len() < limit.min(MAX_LIMIT) {
        let Some(row) = rows.next()? else { break };
        let value: String = row.get(0)?;
        // Values >= prefix that start with it come first in sort order, so the first one
        // that does not ends the run.
        if !value.starts_with(prefix) {
            break;
        }
        out.push(value);
    }
    Ok(out)
}
