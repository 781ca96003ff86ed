// One runtime and one in-memory store for every input: building them per input would
// drown the signal in setup.
use std::sync::OnceLock;

use pkb_core::store::{NoteDraft, PutMode, Store};

pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
    })
}

#[allow(dead_code, reason = "each target uses one of the two stores")]
pub fn store() -> &'static Store {
    static STORE: OnceLock<Store> = OnceLock::new();
    STORE.get_or_init(|| pkb_core::store::sqlite::open_in_memory(true).expect("in-memory store"))
}

/// A store where common words hold more notes than FTS5's own ranking is left with, so that
/// queries also take the vocabulary's routes (exact terms, lookups, the scan).
#[allow(dead_code, reason = "each target uses one of the two stores")]
pub fn searched_store() -> &'static Store {
    static STORE: OnceLock<Store> = OnceLock::new();
    STORE.get_or_init(|| {
        const WORDS: &[&str] = &[
            "deploy", "deployment", "Deployed", "café", "cafe", "Über", "uber", "group", "grow",
            "alpha", "alphabet", "x1", "x10", "naïve", "rare", "ok", "o",
        ];
        let store = pkb_core::store::sqlite::open_in_memory(true).expect("in-memory store");
        let mut state = 0x9e37_79b9_u64;
        let mut next = |n: usize| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            ((state >> 33) as usize) % n
        };
        let drafts: Vec<NoteDraft> = (0..6_000)
            .map(|i| {
                let mut body = vec!["common"];
                body.extend((0..8).map(|_| WORDS[next(WORDS.len())]));
                NoteDraft {
                    id: format!("n{i}"),
                    title: WORDS[next(WORDS.len())].to_owned(),
                    tags: vec![format!("t{}", i % 3)],
                    body: body.join(" "),
                }
            })
            .collect();
        runtime()
            .block_on(store.put_many(drafts, PutMode::CreateOnly))
            .expect("load");
        store
    })
}
