//! Procedural macros of rune-ad.
