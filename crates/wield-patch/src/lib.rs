//! The `*** Begin Patch` format: parsing, and placing an update's chunks in a
//! file's text.
//!
//! This crate is pure — text in, text or a typed error out, no file system —
//! so that it can be fuzzed and so that the caller can compute every file's
//! new content before writing any of them (a patch applies completely or not
//! at all; that guarantee, path confinement and atomic writes belong to the
//! caller).
//!
//! # The format
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path/new.rs
//! +line
//! *** Update File: path/old.rs
//! *** Move to: path/renamed.rs
//! @@ fn context_line
//!  unchanged line
//! -removed line
//! +added line
//! *** End of File
//! *** Delete File: path/gone.rs
//! *** End Patch
//! ```
//!
//! - `*** Add File: PATH` is followed by the file's lines, each prefixed `+`.
//! - `*** Update File: PATH`, optionally `*** Move to: PATH`, then one or
//!   more chunks. A chunk starts with `@@ CONTEXT` (a line to locate first;
//!   several consecutive `@@` lines narrow the location step by step), `@@`
//!   alone, or — for the first chunk — directly with its lines. Lines start
//!   with ' ' (kept), '-' (removed) or '+' (added). `*** End of File` after a
//!   chunk anchors it at the end of the file.
//! - `*** Delete File: PATH`.
//!
//! Also accepted: whitespace around marker lines; a heredoc wrapper around
//! the whole patch (`<<'EOF'` … `EOF`, `<<EOF`, `apply_patch <<'EOF'`); blank
//! lines between operations and chunks; an empty line inside a chunk as an
//! empty context line; a unified-diff range (`@@ -3,4 +3,5 @@ fn f`) as `@@`
//! context. Refused, with the 1-based line number and the list of valid
//! lines: an unknown header, an Update without chunks, a missing
//! `*** End Patch`, a patch without operations, a path used by two
//! operations (except that a path a Delete removed may be created again
//! once, by a later Add or `*** Move to`).
//!
//! # Matching
//!
//! [`apply_chunks`] places each chunk after the previous one. Its `@@`
//! context line is located first, then its old lines (context and removed
//! lines) after it, in passes of decreasing strictness, each over the whole
//! rest of the file before the next is tried:
//!
//! 1. exact;
//! 2. ignoring trailing whitespace;
//! 3. ignoring leading and trailing whitespace;
//! 4. also with Unicode punctuation folded to ASCII: dashes and minus signs,
//!    curly and angle quotes, primes, non-breaking and other wide spaces, the
//!    ellipsis; zero-width characters and the byte order mark dropped.
//!
//! An `@@` context line that no pass finds may also be a prefix or fragment
//! of the line (`@@ fn main` finds `fn main() {`). A chunk of only `+` lines
//! is inserted after its context line, or appended at the end of the file
//! when it has none. Repeated identical regions are matched in order, since
//! every search starts after the previous chunk. The search is linear in the
//! distance covered, with a per-pass index of the file for long jumps, so a
//! thousand chunks on a 10 MB file cost about one pass over it.
//!
//! Kept lines are copied from the file untouched (a fuzzy match never
//! rewrites them). When a chunk's lines matched only with leading whitespace
//! ignored, its added lines are re-indented by the offset between the file
//! and the patch on the matched lines; an offset that is not the same on
//! every line is refused rather than guessed. [`Applied::fuzzy`] lists every
//! chunk that needed a fuzzy pass, and which, for the caller to report.
//!
//! Lines end in LF, CRLF or a lone CR. Each kept line keeps its own ending;
//! an added line takes the ending of the removed line it replaces, and a pure
//! insertion the ending most of the file's lines have (CRLF files stay CRLF,
//! a mixed file keeps each line's). A missing final newline is added only
//! when a chunk reaches the end of the file. A chunk that cannot be placed
//! yields a [`MatchError`] naming the chunk, the lines it expected and the
//! closest region of the file.
//!
//! ```
//! let patch = wield_patch::parse(
//!     "*** Begin Patch\n*** Update File: greet.txt\n@@ fn greet\n-    hello\n+    goodbye\n*** End Patch\n",
//! )?;
//! let wield_patch::Operation::Update { path, chunks, .. } = &patch.ops[0] else { unreachable!() };
//! assert_eq!(path, "greet.txt");
//! let applied = wield_patch::apply_chunks("fn greet\n    hello\n", chunks)?;
//! assert_eq!(applied.text, "fn greet\n    goodbye\n");
//! assert!(applied.fuzzy.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod apply;
mod fold;
mod indent;
mod lines;
mod matcher;
mod mismatch;
mod parser;
mod patch;

pub use apply::{Applied, FuzzyMatch, apply_chunks};
pub use fold::Level;
pub use indent::Shift;
pub use mismatch::{MatchError, MismatchKind, Region};
pub use parser::{ParseError, ParseErrorKind, VALID_HEADERS, parse};
pub use patch::{Chunk, ChunkLine, Operation, Patch};
