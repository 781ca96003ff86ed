// One runtime and one in-memory store for every input: building them per input would
// drown the signal in setup.
use std::sync::OnceLock;

use pkb_core::store::Store;

pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
    })
}

pub fn store() -> &'static Store {
    static STORE: OnceLock<Store> = OnceLock::new();
    STORE.get_or_init(|| Store::open_in_memory(true).expect("in-memory store"))
}
