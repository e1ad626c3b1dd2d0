//! JSON string escaping for the large strings of tool results.
//!
//! The text `read` returns has an escape every few dozen bytes (a tab after
//! each line number, a newline after each line), so what an escape costs
//! matters as much as how fast clean bytes are scanned. Eight bytes are
//! tested at once and always stored whole into spare capacity, clean or
//! not; when one needs escaping, the output advances only past the clean
//! bytes before it, and its escape sequence is stored as one word from a
//! table. No call and no capacity check per run or per escape: one check
//! per block of input reserves the most that block can become.
//!
//! The output is byte for byte what `serde_json` writes (tested).

/// Input bytes per capacity check.
const BLOCK: usize = 1024;
/// The most a block can become: the last word may run up to seven bytes
/// past the block, every byte may become a six-byte `\u00XX`, and a store is
/// a whole word.
const BLOCK_ROOM: usize = (BLOCK + 7) * 6 + 8;

/// The spare capacity to reserve before escaping `len` bytes so that text
/// with up to one escape in eight bytes needs no second allocation.
pub fn escaped_capacity(len: usize) -> usize {
    len + len / 8 + 2 + BLOCK_ROOM
}

/// The escape sequence of each byte below 0x60 that JSON escapes, as the
/// low bytes of a word, and its length (0 for the bytes left as they are).
static ESCAPE: [(u64, usize); 0x60] = escape_table();

const fn escape_table() -> [(u64, usize); 0x60] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut table = [(0, 0); 0x60];
    let mut b = 0;
    while b < 0x20 {
        let seq = match b {
            0x08 => *b"\\b\0\0\0\0\0\0",
            0x09 => *b"\\t\0\0\0\0\0\0",
            0x0a => *b"\\n\0\0\0\0\0\0",
            0x0c => *b"\\f\0\0\0\0\0\0",
            0x0d => *b"\\r\0\0\0\0\0\0",
            _ => [b'\\', b'u', b'0', b'0', HEX[b >> 4], HEX[b & 15], 0, 0],
        };
        table[b] = (u64::from_le_bytes(seq), if seq[2] == 0 { 2 } else { 6 });
        b += 1;
    }
    table[b'"' as usize] = (u64::from_le_bytes(*b"\\\"\0\0\0\0\0\0"), 2);
    table[b'\\' as usize] = (u64::from_le_bytes(*b"\\\\\0\0\0\0\0\0"), 2);
    table
}

const LOWS: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `v` that is zero (exact: no carries cross
/// bytes).
#[inline]
fn zero_bytes(v: u64) -> u64 {
    !(((v & LOWS) + LOWS) | v) & HIGHS
}

/// The high bit of each byte of `w` that JSON escapes: a control character
/// (top three bits clear), `"` or `\\`. Exact, so the lowest flagged byte
/// is the first one to escape.
#[inline]
fn escapes(w: u64) -> u64 {
    zero_bytes(w & 0xe0e0_e0e0_e0e0_e0e0)
        | zero_bytes(w ^ 0x2222_2222_2222_2222)
        | zero_bytes(w ^ 0x5c5c_5c5c_5c5c_5c5c)
}

/// Append `s` to `out` as a JSON string, quotes included, escaped exactly
/// as `serde_json` escapes it.
pub fn push_json_string(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(escaped_capacity(bytes.len()));
    out.push(b'"');
    let mut at = 0;
    while at < bytes.len() {
        out.reserve(BLOCK_ROOM);
        at = escape_block(out, bytes, at, bytes.len().min(at + BLOCK));
    }
    out.push(b'"');
}

/// Escape `bytes` from `at` on into `out`'s spare capacity, stopping at the
/// first word boundary at or past `end`; returns where it stopped. The
/// caller has reserved [`BLOCK_ROOM`].
fn escape_block(out: &mut Vec<u8>, bytes: &[u8], mut at: usize, end: usize) -> usize {
    let base = out.len();
    let mut len = base;
    let spare = out.spare_capacity_mut().as_mut_ptr().cast::<u8>();
    // Where output `o` (counted from `base`) is stored.
    let store = |o: usize, word: [u8; 8]| {
        debug_assert!(o - base + 8 <= BLOCK_ROOM);
        // SAFETY: `spare` points at `out`'s spare capacity, of at least
        // BLOCK_ROOM bytes. This block reads at most BLOCK + 7 input bytes,
        // each of which adds at most six bytes of output, so `o - base`
        // never exceeds (BLOCK + 7) * 6 and the eight bytes stored at it
        // stay within BLOCK_ROOM. An unaligned store of plain bytes.
        unsafe { spare.add(o - base).cast::<[u8; 8]>().write_unaligned(word) }
    };
    while at < end {
        let Some(word) = bytes.get(at..at + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) else {
            break;
        };
        store(len, word);
        let mask = escapes(u64::from_le_bytes(word));
        if mask == 0 {
            at += 8;
            len += 8;
            continue;
        }
        let clean = (mask.trailing_zeros() / 8) as usize;
        at += clean;
        len += clean;
        let (seq, n) = ESCAPE[usize::from(bytes[at])];
        store(len, seq.to_le_bytes());
        len += n;
        at += 1;
    }
    // The last bytes of the string, fewer than a word.
    if at < end {
        for &b in &bytes[at..end] {
            match ESCAPE.get(usize::from(b)) {
                Some(&(seq, n)) if n > 0 => {
                    store(len, seq.to_le_bytes());
                    len += n;
                }
                _ => {
                    store(len, [b, 0, 0, 0, 0, 0, 0, 0]);
                    len += 1;
                }
            }
        }
        at = end;
    }
    // SAFETY: every byte from `base` to `len` was written above, and `len`
    // is within the capacity (see `store`).
    unsafe { out.set_len(len) };
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        push_json_string(&mut out, s);
        out
    }

    #[test]
    fn strings_are_escaped_exactly_as_serde_json_does() {
        // Every ASCII byte, alone and at every position of a word.
        for b in 0u8..0x80 {
            let c = char::from(b);
            for pad in 0..17 {
                let s = format!("{}{c}{}", "a".repeat(pad), "z".repeat(16 - pad));
                assert_eq!(escaped(&s), serde_json::to_vec(&s).unwrap(), "byte {b:#x} at {pad}");
            }
        }
        // Multi-byte characters, high bytes next to specials, long mixed
        // text across many blocks.
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let alphabet = [
            'a', '"', '\\', '\n', '\t', '\u{1}', '\u{1f}', '\u{7f}', 'é', '€', '𝄞', ' ', '\r',
        ];
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 1000, 1023, 1024, 1025, 5000, 20_000] {
            let s: String = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    alphabet[usize::try_from(seed % alphabet.len() as u64).unwrap()]
                })
                .collect();
            assert_eq!(escaped(&s), serde_json::to_vec(&s).unwrap(), "len {len}");
        }
    }

    #[test]
    fn the_worst_case_fills_each_block_to_its_bound() {
        // Every byte a six-byte escape, across block ends, after text
        // already in the buffer; then all clean; then one escape per word.
        for len in [BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 5] {
            for s in ["\u{1}".repeat(len), "x".repeat(len), "abcdefg\n".repeat(len / 8 + 1)] {
                let mut out = b"prefix".to_vec();
                push_json_string(&mut out, &s);
                let mut want = b"prefix".to_vec();
                want.extend(serde_json::to_vec(&s).unwrap());
                assert_eq!(out, want, "len {len}");
            }
        }
    }

    #[test]
    fn typical_text_needs_one_allocation() {
        let numbered: String = (1..=400).map(|i| format!("{i:>6}\tline {i} of the file\n")).collect();
        let mut out = Vec::with_capacity(escaped_capacity(numbered.len()));
        let before = out.as_ptr();
        push_json_string(&mut out, &numbered);
        assert_eq!(out.as_ptr(), before, "the buffer was reallocated");
        assert_eq!(out, serde_json::to_vec(&numbered).unwrap());
    }
}
