//! Five-layer grading.
