//! Any bytes as a search query (and as a required tag): search never fails and never panics.
#![no_main]

#[path = "shared.rs"]
mod shared;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (query, tag) = text.split_once('\u{1}').unwrap_or((&text, ""));
    let tags: Vec<String> = if tag.is_empty() { Vec::new() } else { vec![tag.to_string()] };
    let result = shared::runtime().block_on(shared::searched_store().search(query, &tags, 10));
    if let Err(error) = result {
        panic!("search {query:?} failed: {error}");
    }
});
