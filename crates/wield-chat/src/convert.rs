//! A document as the conversation a model is sent: the system prompt and
//! [`wield_llm::Message`]s.
//!
//! - The last `@System:` message is the system prompt; other roles than
//!   System, You and Assistant are left out.
//! - In a person's message the final tool results come first (providers
//!   want them before text), `(error)` ones with `is_error`; placeholders
//!   of the cycle are not results.
//! - In a reply thinking comes first (Anthropic wants it there; Flemma
//!   writes it last). A signature is kept for the provider that made it:
//!   `anthropic` and `vertex` signatures as signatures, an `openai` one
//!   (a base64 JSON reasoning item) as its encrypted content and item id,
//!   a redacted block as Anthropic's redacted data. `.chat` signatures
//!   name only the provider, so the caller says which model they count as
//!   made by (the one the document is sent to).
//! - An abort marker is sent as `<!-- MESSAGE -->` text in a reply of text
//!   only, and left out of one with tool uses (no text may follow them).

use base64::Engine as _;
use serde_json::Value;
use wield_llm::{Block, Message, Origin, ResultPart, Role, Thinking};

use crate::error::ChatError;
use crate::syntax::{Document, Segment, Speaker, ThinkingBlock, ThinkingKind};

/// A document's conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct Conversation {
    pub system: Option<String>,
    pub messages: Vec<Message>,
}

/// How to read signatures.
#[derive(Clone, Debug, Default)]
pub struct ConvertOptions {
    /// The model the conversation goes to: thinking signed by its provider
    /// counts as made by this model (see [`Thinking::made_by`]).
    pub model: Option<String>,
    /// Where the person's file references (`@./notes.txt`) are read from:
    /// the document's directory. `None` sends them as text only.
    pub base_dir: Option<std::path::PathBuf>,
    /// The directory references inside it are opened beneath (links may
    /// not lead out of it): the workspace. `None`: the document's directory.
    pub workspace: Option<std::path::PathBuf>,
}

/// The provider kind (`wield_llm::Kind::name`) a `.chat` signature's
/// provider tag stands for.
pub fn provider_kind(tag: &str) -> &str {
    match tag {
        "openai" => "openai-responses",
        "vertex" | "gemini" => "gemini",
        other => other,
    }
}

impl Document<'_> {
    /// The conversation to send. Fails while an error-severity diagnostic
    /// stands or a tool use has no final result, saying which and where.
    pub fn conversation(&self, options: &ConvertOptions) -> Result<Conversation, ChatError> {
        let blocking = self.blocking();
        if !blocking.is_empty() {
            return Err(ChatError::Blocked {
                diagnostics: blocking.into_iter().cloned().collect(),
            });
        }
        let unresolved = self.unresolved();
        if !unresolved.is_empty() {
            return Err(ChatError::Unresolved {
                calls: unresolved.into_iter().map(|c| (c.id, c.line, c.status)).collect(),
            });
        }
        let base = options.base_dir.as_deref();
        let attach = base.map(|base| (base, options.workspace.as_deref().unwrap_or(base)));
        self.build(options, attach)
    }

    /// The conversation as it stands, whatever the diagnostics: tool uses
    /// without a final result stay without one, and blocks that could not
    /// be read are left out.
    pub fn conversation_unchecked(&self, options: &ConvertOptions) -> Conversation {
        self.build(options, None).unwrap_or_else(|_| Conversation {
            system: None,
            messages: Vec::new(),
        })
    }

    /// The conversation, with the files the person's messages reference
    /// attached from `attach`'s base directory, opened beneath its
    /// workspace (none when `None`).
    fn build(&self, options: &ConvertOptions, attach: Option<Attach<'_>>) -> Result<Conversation, ChatError> {
        let mut system = None;
        let mut messages: Vec<Message> = Vec::new();
        for m in &self.messages {
            let (role, content) = match m.speaker {
                Speaker::System => {
                    let text: Vec<&str> = m
                        .segments
                        .iter()
                        .filter_map(|s| match s {
                            Segment::Text(t) => Some(t.text.as_ref()),
                            _ => None,
                        })
                        .collect();
                    let text = text.concat().trim().to_string();
                    system = (!text.is_empty()).then_some(text);
                    continue;
                }
                Speaker::You => (Role::User, user_blocks(&m.segments, attach)?),
                Speaker::Assistant => (Role::Assistant, assistant_blocks(&m.segments, options)),
                Speaker::Other(_) => continue,
            };
            if content.is_empty() {
                continue;
            }
            match messages.last_mut() {
                Some(last) if last.role == role => last.content.extend(content),
                _ => messages.push(Message { role, content }),
            }
        }
        Ok(Conversation { system, messages })
    }
}

/// Text as sent: without the blank lines around it.
fn text_block(text: &str) -> Option<Block> {
    let trimmed = text.trim_end();
    let start = trimmed
        .split_inclusive('\n')
        .take_while(|l| l.trim().is_empty())
        .map(str::len)
        .sum::<usize>();
    let text = &trimmed[start..];
    (!text.is_empty()).then(|| Block::Text { text: text.to_string() })
}

/// Where references are read from: the base directory of relative ones and
/// the workspace they are opened beneath.
type Attach<'a> = (&'a std::path::Path, &'a std::path::Path);

fn user_blocks(segments: &[Segment], attach: Option<Attach<'_>>) -> Result<Vec<Block>, ChatError> {
    let mut results = Vec::new();
    let mut texts = Vec::new();
    for s in segments {
        match s {
            Segment::Text(t) => {
                texts.extend(text_block(&t.text));
                if let Some((base, workspace)) = attach {
                    for r in &t.file_refs {
                        texts.push(crate::attach::attach(r, base, workspace)?);
                    }
                }
            }
            Segment::ToolResult(r) if r.is_final() && r.fence.is_some() => results.push(Block::ToolResult {
                tool_use_id: r.id.to_string(),
                content: vec![ResultPart::Text {
                    text: r.content().to_string(),
                }],
                is_error: r.status.is_some(),
            }),
            _ => {}
        }
    }
    results.extend(texts);
    Ok(results)
}

fn assistant_blocks(segments: &[Segment], options: &ConvertOptions) -> Vec<Block> {
    let has_tools = segments.iter().any(|s| matches!(s, Segment::ToolUse(_)));
    let mut thinking = Vec::new();
    let mut rest = Vec::new();
    for s in segments {
        match s {
            Segment::Text(t) => rest.extend(text_block(&t.text)),
            Segment::ToolUse(u) => {
                if let Some(input) = u.input() {
                    rest.push(Block::ToolUse {
                        id: u.id.to_string(),
                        name: u.name.to_string(),
                        input,
                    });
                }
            }
            Segment::Thinking(t) => thinking.push(Block::Thinking(thinking_of(t, options))),
            Segment::Aborted(a) if !has_tools => rest.push(Block::Text {
                text: format!("<!-- {} -->", a.message),
            }),
            Segment::Aborted(_) | Segment::ToolResult(_) => {}
        }
    }
    thinking.extend(rest);
    thinking
}

fn origin(tag: &str, options: &ConvertOptions) -> Option<Origin> {
    Some(Origin {
        provider: provider_kind(tag).to_string(),
        model: options.model.clone().unwrap_or_default(),
    })
}

fn thinking_of(t: &ThinkingBlock, options: &ConvertOptions) -> Thinking {
    let text = t.text().to_string();
    match &t.kind {
        ThinkingKind::Plain => Thinking {
            text,
            ..Thinking::default()
        },
        ThinkingKind::Redacted => Thinking {
            redacted_data: Some(text),
            origin: origin("anthropic", options),
            ..Thinking::default()
        },
        ThinkingKind::Signed { provider, signature } => {
            if provider == "openai"
                && let Some((encrypted, item_id)) = reasoning_item(signature)
            {
                return Thinking {
                    text,
                    redacted_data: Some(encrypted),
                    item_id,
                    origin: origin(provider, options),
                    ..Thinking::default()
                };
            }
            Thinking {
                text,
                signature: Some(signature.to_string()),
                origin: origin(provider, options),
                ..Thinking::default()
            }
        }
    }
}

/// An OpenAI signature: a Responses reasoning item as base64 JSON.
fn reasoning_item(signature: &str) -> Option<(String, Option<String>)> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(signature).ok()?;
    let item: Value = serde_json::from_slice(&bytes).ok()?;
    let encrypted = item.get("encrypted_content")?.as_str()?.to_string();
    let id = item.get("id").and_then(Value::as_str).map(str::to_string);
    Some((encrypted, id))
}
