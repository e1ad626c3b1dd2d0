//! The files a person's message references (`@./notes.txt`), attached to
//! what is sent: text inline, images and PDFs as content blocks. A file
//! that cannot be read stops the send, naming the reference and its line.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use wield_llm::Block;

use crate::error::ChatError;
use crate::syntax::FileRef;

/// Most bytes one attached file may have.
pub const MAX_ATTACHMENT: u64 = 20 * 1024 * 1024;

/// The block `r` attaches, its relative path resolved against `base`.
pub(crate) fn attach(r: &FileRef, base: &Path) -> Result<Block, ChatError> {
    let path = resolve(&r.path, base);
    let fail = |why: String| ChatError::Attachment {
        reference: r.raw.clone(),
        line: r.line,
        why,
    };
    let real = std::fs::canonicalize(&path).map_err(|e| fail(format!("{}: {e}", path.display())))?;
    // The kernel's files are not documents (and `/proc/self/environ` would
    // send the process's secrets).
    if ["/proc", "/sys", "/dev"].iter().any(|p| real.starts_with(p)) {
        return Err(fail(format!("{} is a system file, not one to send", real.display())));
    }
    let meta = std::fs::metadata(&real).map_err(|e| fail(format!("{}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(fail(format!("{} is not a file", path.display())));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&real)
        .and_then(|f| f.take(MAX_ATTACHMENT + 1).read_to_end(&mut bytes))
        .map_err(|e| fail(format!("{}: {e}", path.display())))?;
    if bytes.len() as u64 > MAX_ATTACHMENT {
        return Err(fail(format!(
            "{} has more than the {MAX_ATTACHMENT} bytes an attachment may have",
            path.display()
        )));
    }
    let mime = r.mime.clone().unwrap_or_else(|| guess(&path).to_string());
    let data = || base64::engine::general_purpose::STANDARD.encode(&bytes);
    if mime.starts_with("image/") {
        return Ok(Block::Image {
            media_type: mime,
            data: data(),
        });
    }
    if mime == "application/pdf" {
        return Ok(Block::Document {
            media_type: mime,
            data: data(),
        });
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        fail(format!(
            "{} is not text; name its type with `;type=image/png` or `;type=application/pdf` if it is an image or a PDF",
            path.display()
        ))
    })?;
    Ok(Block::Text {
        text: format!("<file path=\"{}\">\n{}\n</file>", r.path, text.trim_end_matches('\n')),
    })
}

fn resolve(path: &str, base: &Path) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    base.join(path)
}

fn guess(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        _ => "text/plain",
    }
}
