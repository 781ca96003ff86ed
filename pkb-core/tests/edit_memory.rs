//! An edit refused for the body it would make costs no more memory than the note: `replace`
//! with `all` of a short text by a long one is refused before the result is built (a body of
//! 100,000,000 characters was built, 402 MiB a call, before the length check).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use pkb_core::note::Note;
use pkb_core::note_edit::{BodyChange, EditRefusal, NoteEdit};

/// The system allocator, counting the most bytes held at once.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; only counters are kept.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let held = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(held, Ordering::Relaxed);
        // SAFETY: the caller's layout, as the caller promised it.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn replacing_everywhere_past_the_limit_is_refused_before_the_body_is_built() {
    let note = Note {
        id: "n".into(),
        title: "N".into(),
        tags: Vec::new(),
        body: "a".repeat(10_000),
        created_at: "2026-01-01T00:00:00.000Z".into(),
        updated_at: "2026-01-01T00:00:00.000Z".into(),
        version: 1,
    };
    let edit = NoteEdit {
        body: Some(BodyChange::Replace {
            old: "a".into(),
            new: "b".repeat(10_000),
            all: true,
        }),
        ..NoteEdit::default()
    };
    let before = HELD.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let refused = edit.apply_to(&note);
    assert_eq!(refused, Err(EditRefusal::BodyTooLong(100_000_000)));
    let grew = PEAK.load(Ordering::Relaxed) - before;
    assert!(grew < 1 << 20, "the refusal held {grew} bytes at its peak");
}
