//! Examples live under `[[example]]` targets.
