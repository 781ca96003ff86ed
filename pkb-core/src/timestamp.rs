//! Dates as PKB writes them: RFC 3339 in UTC with a fixed millisecond fraction, one shape
//! everywhere (notes, tokens), so that stored dates sort as text.

/// The current time as RFC 3339 in UTC with millisecond precision, e.g. `2026-11-29T18:34:03.120Z`.
pub fn now_rfc3339() -> String {
    format_rfc3339(time::OffsetDateTime::now_utc())
}

/// Formats by hand so that the shape never varies: a fixed three-digit fraction and `Z`.
pub(crate) fn format_rfc3339(t: time::OffsetDateTime) -> String {
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}
