//! `read`: a text file with line numbers, a line range of a huge file
//! without loading it, or an image as an attachment.

use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};
use wield_core::{Access as CoreAccess, ConfigKey, Context, PathUse, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits};
use wield_sandbox::fs::{Access, Confinement, Kind};

use super::text::{LineReader, NumberedLines, SNIFF_BYTES, TextLines, binary_type, image_mime, into_text, read_head};
use super::{blocking, confinement, fail, human_size, mark_seen_as, parse, path_use, resolve_for_call};

/// Files estimated under this many tokens are returned whole.
const DEFAULT_SMALL_FILE_TOKENS: u64 = 2000;
/// Larger images are refused rather than attached.
const MAX_IMAGE_BYTES: u64 = 10 * 1024 * 1024;
/// Up to this size, a read cut by the output limits saves the full numbered
/// text (the core's saved-output notice); beyond it, only an offset hint.
const SAVE_FULL_CAP: u64 = 8 * 1024 * 1024;
/// Longer lines are cut (minified files), so one line cannot fill the output.
const MAX_LINE_BYTES: usize = 8 * 1024;

pub struct ReadTool {
    base: ToolBase,
}

impl Default for ReadTool {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Deserialize)]
struct Input {
    path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

impl ReadTool {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "read",
                    "Read a text file from the workspace, with line numbers (cat -n style). Use offset (1-based \
                     line) and limit (line count) to read part of a large file; small files are always returned \
                     whole. Output is cut at 2000 lines / 50 KB with a notice saying how to read on. Binary files \
                     are refused; PNG, JPEG, GIF and WebP images are returned as attachments. Lines longer \
                     than 8 KB are cut. Reading a file is \
                     required before writing or editing it.",
                    json!({
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "File path, relative to the workspace or absolute."},
                            "offset": {"type": ["integer", "null"], "minimum": 1, "description": "First line to read, 1-based (default 1)."},
                            "limit": {"type": ["integer", "null"], "minimum": 1, "description": "Maximum number of lines to read (default: up to the output limit)."}
                        },
                        "required": ["path", "offset", "limit"],
                        "additionalProperties": false
                    }),
                )
                .strict(true)
                .title("Read file"),
                ToolTraits {
                read_only: true,
                    groups: vec!["fs".into()],
                    ..ToolTraits::default()
                },
            ),
        }
    }
}

#[async_trait]
impl Tool for ReadTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    fn preview(&self, input: &Value, width: usize) -> String {
        let path = input.get("path").and_then(Value::as_str).unwrap_or("?");
        let offset = input.get("offset").and_then(Value::as_u64);
        let limit = input.get("limit").and_then(Value::as_u64);
        let range = match (offset, limit) {
            (None, None) => String::new(),
            (Some(o), None) => format!(" +{o}"),
            (o, Some(l)) => format!(" +{},{l}", o.unwrap_or(1)),
        };
        wield_core::one_line(&format!("read: {path}{range}"), width)
    }

    fn paths(&self, input: &Value) -> Vec<PathUse> {
        path_use(input, "path", None, CoreAccess::Read)
    }

    fn config_keys(&self) -> Vec<ConfigKey> {
        vec![ConfigKey::new("small_file_tokens")]
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let input: Input = match parse("read", input) {
            Ok(i) => i,
            Err(r) => return r,
        };
        let conf = match confinement(ctx) {
            Ok(c) => c,
            Err(r) => return r,
        };
        let small_tokens = ctx
            .config_value::<u64>("small_file_tokens")
            .unwrap_or(DEFAULT_SMALL_FILE_TOKENS);
        // Resolving is a few system calls; reading a small file is cheaper
        // than handing the work to the blocking pool and back, so only large
        // files (or whatever the kernel may make slow) leave this thread.
        let resolved = match resolve_for_call(ctx, &conf, &input.path, Access::Read) {
            Ok(r) => r,
            Err(e) => return fail(&e),
        };
        if resolved.kind() == Some(Kind::File) && resolved.size().is_some_and(|s| s <= INLINE_READ_BYTES) {
            return read(ctx, &conf, &input, resolved, small_tokens).unwrap_or_else(|r| r);
        }
        let ctx = ctx.clone();
        blocking(move || read(&ctx, &conf, &input, resolved, small_tokens).unwrap_or_else(|r| r)).await
    }
}

/// Regular files up to this size are read on the calling thread.
const INLINE_READ_BYTES: u64 = 256 * 1024;

fn read(
    ctx: &Context,
    conf: &Arc<Confinement>,
    input: &Input,
    resolved: wield_sandbox::fs::Resolved,
    small_tokens: u64,
) -> Result<ToolResult, ToolResult> {
    let io_err = |e: std::io::Error| ToolResult::error(format!("{}: {e}", input.path));
    let shown = conf.display_path(resolved.real_path());
    match resolved.kind() {
        None => return Err(ToolResult::error(not_found(conf, &input.path))),
        Some(Kind::Dir) => {
            return Err(ToolResult::error(format!(
                "{shown} is a directory: use ls to list it, or read a file inside it"
            )));
        }
        Some(_) => {}
    }
    let (mut file, meta) = conf.open_resolved_with_metadata(&resolved).map_err(|e| fail(&e))?;
    let size = meta.len();
    // A small file is read whole with one call and shown from memory; a
    // larger one (or one that grew past the bound meanwhile) is streamed.
    let mut whole_file = None;
    if size <= INLINE_READ_BYTES {
        let data = read_up_to(&mut file, usize::try_from(size).unwrap_or(0), INLINE_READ_BYTES + 1).map_err(io_err)?;
        if data.len() as u64 <= INLINE_READ_BYTES {
            whole_file = Some(data);
        } else {
            file.seek(SeekFrom::Start(0)).map_err(io_err)?;
        }
    }
    let streamed_head;
    let head = match &whole_file {
        Some(data) => &data[..data.len().min(SNIFF_BYTES)],
        None => {
            streamed_head = read_head(&mut file, SNIFF_BYTES).map_err(io_err)?;
            &streamed_head[..]
        }
    };
    if let Some(mime) = image_mime(head) {
        return image(ctx, resolved.real_path(), &shown, file, whole_file, &meta, mime);
    }
    if let Some(kind) = binary_type(head) {
        return Err(ToolResult::error(format!(
            "{shown} is a binary file ({kind}, {}); read shows text files only",
            human_size(size)
        ))
        .with_meta("size", size)
        .with_meta("binary", kind));
    }
    let whole = size / 4 < small_tokens;
    let (offset, limit) = if whole {
        (1, None)
    } else {
        (input.offset.unwrap_or(1).max(1), input.limit)
    };
    let range = Range {
        offset,
        limit,
        size,
        shown,
    };
    let result = match whole_file {
        Some(data) => match std::str::from_utf8(&data) {
            Ok(text) => show(ctx, range, TextLines::new(text, MAX_LINE_BYTES)),
            Err(_) => show(ctx, range, LineReader::new(&data[..], MAX_LINE_BYTES)),
        },
        None => {
            file.seek(SeekFrom::Start(0)).map_err(io_err)?;
            show(
                ctx,
                range,
                LineReader::new(BufReader::with_capacity(64 * 1024, file), MAX_LINE_BYTES),
            )
        }
    }
    .map_err(io_err)?;
    let result = result?;
    mark_seen_as(ctx, resolved.real_path(), &meta);
    Ok(result)
}

/// At most `limit` bytes from `file`, whose status gave its size as
/// `stated`: read into a buffer one byte larger, so a file of that size is
/// read with one call. A regular file returns less than asked only at its
/// end, so a read that stops at the stated size needs no second call to
/// find the end; one that stops elsewhere (the file shrank) reads on until
/// the end shows, and one that fills the buffer (it grew) reads on to the
/// limit.
fn read_up_to(file: &mut std::fs::File, stated: usize, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut data = vec![
        0;
        stated
            .saturating_add(1)
            .min(usize::try_from(limit).unwrap_or(usize::MAX))
    ];
    let mut filled = 0;
    loop {
        if filled == data.len() {
            // The file grew: read on, still bounded.
            (&mut *file)
                .take(limit.saturating_sub(filled as u64))
                .read_to_end(&mut data)?;
            return Ok(data);
        }
        match file.read(&mut data[filled..]) {
            Ok(0) => break,
            Ok(n) => {
                filled += n;
                if filled == stated {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    data.truncate(filled);
    Ok(data)
}

/// The lines `read` shows: where to start, how many, and of what.
struct Range {
    offset: u64,
    limit: Option<u64>,
    size: u64,
    shown: String,
}

/// Number the lines of `range` from `reader`, cut to the output limits.
/// The outer error is an I/O failure, the inner one a result for the model.
fn show(
    ctx: &Context,
    range: Range,
    mut reader: impl NumberedLines,
) -> std::io::Result<Result<ToolResult, ToolResult>> {
    let Range {
        offset,
        limit,
        size,
        shown,
    } = range;
    let skipped = reader.skip(offset - 1)?;
    let limits = ctx.limits;
    // Numbering adds about a quarter to source text.
    let mut out = Vec::with_capacity(usize::try_from(size.min(limits.max_bytes as u64)).unwrap_or(0) * 5 / 4 + 64);
    let mut last = offset - 1;
    let mut over: Option<Vec<u8>> = None;
    while limit.is_none_or(|l| last + 1 - offset < l) {
        let before = out.len();
        if !reader.push_next(&mut out, last + 1)? {
            break;
        }
        let count = usize::try_from(last + 1 - offset).unwrap_or(usize::MAX);
        if count > 0 && (count >= limits.max_lines || out.len() > limits.max_bytes) {
            over = Some(out.split_off(before));
            break;
        }
        last += 1;
    }
    if last < offset {
        if offset > 1 {
            return Ok(Err(ToolResult::error(format!(
                "offset {offset} is past the end of {shown}, which has {skipped} lines"
            ))));
        }
        return Ok(Ok(ToolResult::ok(format!("[{shown} is empty]"))
            .with_meta("path", shown)
            .with_meta("size", size)
            .with_meta("truncated", false)));
    }
    let at_end = reader.done()?;
    let mut result = match over {
        None => {
            let mut out = into_text(out);
            if !at_end && limit.is_some() {
                out.push_str(&format!(
                    "[Showing lines {offset}-{last}. The file continues: use offset={} to read more.]\n",
                    last + 1
                ));
            }
            ToolResult::ok(out).with_meta("truncated", false)
        }
        Some(pending) if offset == 1 && size <= SAVE_FULL_CAP => {
            // Number the whole range and let the core cut it, so the full
            // text is saved and the notice is the standard one.
            let mut full = out;
            full.extend_from_slice(&pending);
            let mut n = last + 1;
            while limit.is_none_or(|l| n < l) {
                if !reader.push_next(&mut full, n + 1)? {
                    break;
                }
                n += 1;
            }
            let cut = ctx.truncate_head(&into_text(full));
            let mut text = cut.text.clone();
            if let Some((_, shown_last)) = cut.shown {
                text.push_str(&format!("\n[Use offset={} to read on.]", shown_last + 1));
            }
            let mut r = ToolResult::ok(text);
            r.metadata.extend(cut.metadata());
            r
        }
        Some(_) => {
            let mut out = into_text(out);
            out.push_str(&format!(
                "[Showing lines {offset}-{last} ({} output limit). The file continues: use offset={} to read more.]\n",
                human_size(limits.max_bytes as u64),
                last + 1
            ));
            ToolResult::ok(out).with_meta("truncated", true)
        }
    };
    result = result
        .with_meta("path", shown)
        .with_meta("size", size)
        .with_meta("first_line", offset)
        .with_meta("last_line", last);
    Ok(Ok(result))
}

fn image(
    ctx: &Context,
    real: &Path,
    shown: &str,
    mut file: std::fs::File,
    whole_file: Option<Vec<u8>>,
    meta: &std::fs::Metadata,
    mime: &str,
) -> Result<ToolResult, ToolResult> {
    let size = meta.len();
    if size > MAX_IMAGE_BYTES {
        return Err(ToolResult::error(format!(
            "{shown} is an image ({mime}) of {}, larger than the {} that can be attached",
            human_size(size),
            human_size(MAX_IMAGE_BYTES)
        )));
    }
    // A small image was read whole already; a larger one is read now.
    let data = match whole_file {
        Some(data) => data,
        None => {
            let mut data = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            file.seek(SeekFrom::Start(0))
                .and_then(|_| file.read_to_end(&mut data))
                .map_err(|e| ToolResult::error(format!("{shown}: {e}")))?;
            data
        }
    };
    let encoded = base64::engine::general_purpose::STANDARD.encode(&data);
    mark_seen_as(ctx, real, meta);
    Ok(
        ToolResult::ok(format!("Image {shown} ({mime}, {}) attached.", human_size(size)))
            .with_meta("path", shown)
            .with_meta("size", size)
            .with_meta("truncated", false)
            .with_meta("attachments", json!([{"mime": mime, "data": encoded, "path": shown}])),
    )
}

/// "no such file", with names in the same directory that look alike.
fn not_found(conf: &Confinement, path: &str) -> String {
    let p = Path::new(path);
    let mut msg = format!("{path}: no such file or directory");
    let (Some(name), parent) = (p.file_name(), p.parent()) else {
        return msg;
    };
    let parent = match parent {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let want = name.to_string_lossy().to_lowercase();
    let stem = want.split('.').next().unwrap_or(&want).to_owned();
    let Ok(entries) = conf.read_dir(parent) else {
        return msg;
    };
    let near: Vec<String> = entries
        .iter()
        .map(|e| e.name.to_string_lossy().into_owned())
        .filter(|n| {
            let l = n.to_lowercase();
            l == want || (!stem.is_empty() && l.split('.').next() == Some(stem.as_str()))
        })
        .take(3)
        .map(|n| parent.join(n).display().to_string())
        .collect();
    if !near.is_empty() {
        msg.push_str(&format!(". Did you mean {}?", near.join(" or ")));
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_whole_even_when_it_grew_but_never_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let text: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &text).unwrap();
        let open = || std::fs::File::open(&path).unwrap();
        // As stated, smaller than stated (it shrank), larger (it grew),
        // empty as stated but not any more.
        assert_eq!(read_up_to(&mut open(), 5000, 10_000).unwrap(), text);
        assert_eq!(read_up_to(&mut open(), 8999, 10_000).unwrap(), text);
        assert_eq!(read_up_to(&mut open(), 99, 10_000).unwrap(), text);
        assert_eq!(read_up_to(&mut open(), 0, 10_000).unwrap(), text);
        // Past the limit: exactly the limit, so the caller sees the overrun.
        assert_eq!(read_up_to(&mut open(), 99, 4001).unwrap(), &text[..4001]);
        assert_eq!(read_up_to(&mut open(), 0, 1).unwrap(), &text[..1]);
        assert_eq!(read_up_to(&mut open(), 8999, 4001).unwrap(), &text[..4001]);
    }
}
