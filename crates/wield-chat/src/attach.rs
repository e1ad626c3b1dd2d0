//! The files a person's message references (`@./notes.txt`), attached to
//! what is sent: text inline, images and PDFs as content blocks. A file
//! that cannot be read stops the send, naming the reference and its line.
//!
//! A referenced file may be one a model's commands can change, even while
//! the send is being put together (a background process swapping it for a
//! link to `/proc/self/environ`). So it is opened once, beneath a directory
//! handle: the workspace when the reference lies in it, else the directory
//! the reference names. Links are followed only while they stay beneath
//! that directory, the final name is opened without following a link, what
//! was opened is checked (a regular file, not on the kernel's procfs, sysfs
//! or devtmpfs), and the bytes sent are read from that same descriptor: the
//! path is never resolved again after the check.

use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

use base64::Engine as _;
use wield_llm::Block;
use wield_sandbox::fs::Confinement;

use crate::error::ChatError;
use crate::syntax::FileRef;

/// Most bytes one attached file may have.
pub const MAX_ATTACHMENT: u64 = 20 * 1024 * 1024;

/// The block `r` attaches, its relative path resolved against `base`, and
/// opened beneath `workspace` when it lies there.
pub(crate) fn attach(r: &FileRef, base: &Path, workspace: &Path) -> Result<Block, ChatError> {
    let fail = |why: String| ChatError::Attachment {
        reference: r.raw.clone(),
        line: r.line,
        why,
    };
    let path = resolve(&r.path, base).map_err(|e| fail(format!("cannot read the current directory: {e}")))?;
    let workspace = normal(&absolute(workspace).map_err(|e| fail(format!("cannot read the current directory: {e}")))?);
    let mut builder = Confinement::builder(&workspace);
    // A reference outside the workspace (`@~/x`, `@//etc/hosts`, `@../x`)
    // is the person's choice of a place: it is opened beneath the directory
    // it names, so a link there still cannot lead elsewhere.
    if !path.starts_with(&workspace)
        && let Some(dir) = path.parent()
    {
        builder = builder.read_root(dir);
    }
    let mut bytes = Vec::new();
    builder
        .build()
        .and_then(|conf| conf.open_ordinary(&path))
        .map_err(|e| fail(e.to_string()))
        .and_then(|(file, _)| {
            file.take(MAX_ATTACHMENT + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| fail(format!("{}: {e}", path.display())))
        })?;
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

/// The absolute path `path` names, without `.` or `..` (resolved by name:
/// the confinement walks the real directories, and refuses the path if a
/// link made `..` mean something else).
fn resolve(path: &str, base: &Path) -> std::io::Result<PathBuf> {
    if let Some(rest) = path.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return Ok(normal(&PathBuf::from(home).join(rest)));
    }
    Ok(normal(&absolute(&base.join(path))?))
}

fn absolute(path: &Path) -> std::io::Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    Ok(std::env::current_dir()?.join(path))
}

fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
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
