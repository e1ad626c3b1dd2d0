//! The entries of visibility lists (`*` globs on tool names, `group:NAME`),
//! the lists that carry them with their origin, and one filter layer.

use std::fmt;

use crate::names::glob_match;
use crate::tool::ToolTraits;

use super::{PolicyError, Stage};

/// One entry of an `enabled` / `disabled` / `opt_in` / `deferred` list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A tool-name glob: `*` is the only wildcard, anchored at both ends,
    /// case-insensitive.
    Glob(String),
    /// `group:NAME`: every tool whose traits list the group.
    Group(String),
}

impl Entry {
    /// Parse one entry; `source` names the list for the error message.
    pub fn parse(text: &str, source: &str) -> Result<Self, PolicyError> {
        let t = text.trim();
        let invalid = |message: &str| PolicyError::InvalidEntry {
            list: source.to_owned(),
            entry: text.to_owned(),
            message: message.to_owned(),
        };
        if t.is_empty() {
            return Err(invalid("an entry must not be empty; remove it or write a tool name"));
        }
        if let Some(g) = t.strip_prefix("group:") {
            let g = g.trim();
            if g.is_empty() {
                return Err(invalid("`group:` needs a group name, e.g. `group:fs`"));
            }
            return Ok(Self::Group(g.to_owned()));
        }
        Ok(Self::Glob(t.to_owned()))
    }

    pub fn matches(&self, name: &str, traits: &ToolTraits) -> bool {
        match self {
            Self::Glob(g) => glob_match(g, name, true),
            Self::Group(g) => traits.in_group(g),
        }
    }

    /// Whether the entry names tools on purpose. A bare `*` (or `**`) selects
    /// everything by accident of being a wildcard, so it does not surface
    /// opt-in tools; a name, a narrower glob or a group does.
    pub fn is_explicit(&self) -> bool {
        match self {
            Self::Glob(g) => !g.chars().all(|c| c == '*'),
            Self::Group(_) => true,
        }
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Glob(g) => f.write_str(g),
            Self::Group(g) => write!(f, "group:{g}"),
        }
    }
}

/// A list of entries and where it came from (`[tools] disabled`,
/// `--exclude-tools`, `[agents.review.tools] enabled`, …), so a decision can
/// name the exact rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleList {
    pub source: String,
    pub entries: Vec<Entry>,
}

impl RuleList {
    /// Parse a list of entries; every entry must be valid.
    pub fn parse<S: AsRef<str>>(source: impl Into<String>, entries: &[S]) -> Result<Self, PolicyError> {
        let source = source.into();
        let entries = entries
            .iter()
            .map(|e| Entry::parse(e.as_ref(), &source))
            .collect::<Result<_, _>>()?;
        Ok(Self { source, entries })
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The first entry matching the tool.
    pub fn first_match(&self, name: &str, traits: &ToolTraits) -> Option<&Entry> {
        self.entries.iter().find(|e| e.matches(name, traits))
    }

    /// The first entry that matches the tool and names it explicitly.
    pub fn first_explicit_match(&self, name: &str, traits: &ToolTraits) -> Option<&Entry> {
        self.entries.iter().find(|e| e.is_explicit() && e.matches(name, traits))
    }

    /// `SOURCE: "ENTRY"`, the text a decision shows.
    pub fn rule(&self, entry: &Entry) -> String {
        format!("{}: \"{entry}\"", self.source)
    }

    fn summary(&self) -> String {
        const SHOWN: usize = 6;
        let mut names: Vec<String> = self.entries.iter().take(SHOWN).map(ToString::to_string).collect();
        if self.entries.len() > SHOWN {
            names.push(format!("… {} more", self.entries.len() - SHOWN));
        }
        names.join(", ")
    }
}

/// One filter stage: an optional `enabled` list (only matching tools stay;
/// absent or empty means no restriction) and `disabled` lists (matching
/// tools go, whatever `enabled` says).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    pub stage: Stage,
    /// The agent, mode or task name, when the stage has one.
    pub name: Option<String>,
    pub enabled: Option<RuleList>,
    pub disabled: Vec<RuleList>,
}

/// What a layer did with a tool.
pub(crate) enum LayerOutcome {
    /// Removed, with the rule.
    Out(String),
    /// Admitted by a matching `enabled` entry, with the rule.
    Admitted(String),
    /// The layer does not restrict this tool.
    Untouched,
}

impl Layer {
    pub fn new(stage: Stage) -> Self {
        Self {
            stage,
            name: None,
            enabled: None,
            disabled: Vec::new(),
        }
    }

    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    #[must_use]
    pub fn enabled(mut self, list: RuleList) -> Self {
        self.enabled = Some(list);
        self
    }

    #[must_use]
    pub fn disabled(mut self, list: RuleList) -> Self {
        self.disabled.push(list);
        self
    }

    /// Whether the layer restricts anything at all.
    pub fn is_empty(&self) -> bool {
        self.enabled.as_ref().is_none_or(RuleList::is_empty) && self.disabled.iter().all(RuleList::is_empty)
    }

    pub(crate) fn apply(&self, name: &str, traits: &ToolTraits) -> LayerOutcome {
        // Disabled is checked first: it wins over enabled within the layer.
        for list in &self.disabled {
            if let Some(e) = list.first_match(name, traits) {
                return LayerOutcome::Out(list.rule(e));
            }
        }
        match &self.enabled {
            Some(list) if !list.is_empty() => match list.first_match(name, traits) {
                Some(e) => LayerOutcome::Admitted(list.rule(e)),
                None => LayerOutcome::Out(format!("{}: no entry matches ({})", list.source, list.summary())),
            },
            _ => LayerOutcome::Untouched,
        }
    }

    /// The enabled list, for the opt-in check.
    pub(crate) fn enabled_list(&self) -> Option<&RuleList> {
        self.enabled.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traits(groups: &[&str]) -> ToolTraits {
        ToolTraits {
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            ..ToolTraits::default()
        }
    }

    #[test]
    fn entries_parse_and_match() {
        let t = traits(&["fs"]);
        assert!(Entry::parse("READ", "x").unwrap().matches("read", &t));
        assert!(!Entry::parse("read", "x").unwrap().matches("reader", &t));
        assert!(Entry::parse("group:FS", "x").unwrap().matches("anything", &t));
        assert!(Entry::parse("mcp__*", "x").unwrap().matches("mcp__a__b", &t));
        assert!(Entry::parse("", "x").is_err());
        assert!(Entry::parse("group: ", "x").is_err());
    }

    #[test]
    fn star_is_not_explicit() {
        assert!(!Entry::parse("*", "x").unwrap().is_explicit());
        assert!(!Entry::parse("**", "x").unwrap().is_explicit());
        assert!(Entry::parse("web_*", "x").unwrap().is_explicit());
        assert!(Entry::parse("group:web", "x").unwrap().is_explicit());
    }

    #[test]
    fn disabled_wins_within_a_layer() {
        let layer = Layer::new(Stage::Agent)
            .enabled(RuleList::parse("e", &["*"]).unwrap())
            .disabled(RuleList::parse("d", &["bash"]).unwrap());
        assert!(matches!(layer.apply("bash", &traits(&[])), LayerOutcome::Out(r) if r == "d: \"bash\""));
        assert!(matches!(layer.apply("read", &traits(&[])), LayerOutcome::Admitted(_)));
        let empty = Layer::new(Stage::Mode).enabled(RuleList::parse("e", &[] as &[&str]).unwrap());
        assert!(matches!(empty.apply("read", &traits(&[])), LayerOutcome::Untouched));
    }
}
