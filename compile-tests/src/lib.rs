//! Nothing to build: the compile tests are in `tests/compiletest.rs`, their cases in `ui/`.
