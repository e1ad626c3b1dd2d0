//! Profiles: coarse built-in tool sets, from `minimal` (look, do not touch)
//! to `full` (everything registered). Each names tools by group, by name and
//! by trait, so tools that do not exist in a given build simply match nothing.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::names::{closest, glob_match};
use crate::tool::ToolTraits;

use super::{LOADS_DEFERRED, PolicyError};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// Read-only file tools, web_fetch, system information.
    Minimal,
    /// `minimal` plus memory and web search.
    Messaging,
    /// `messaging` plus file writes (write, edit, patch, mkdir), bash and
    /// processes.
    Coding,
    /// Everything registered.
    #[default]
    Full,
}

/// How a profile selects a tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Selector {
    /// A `*` glob on the name.
    Name(&'static str),
    /// Every tool of the group.
    Group(&'static str),
    /// Read-only tools of the group.
    ReadOnlyIn(&'static str),
    /// Tools that write files (the `writes_files` trait).
    WritesFiles,
    /// Tools with the capability.
    Capability(&'static str),
}

impl Selector {
    fn matches(self, name: &str, traits: &ToolTraits) -> bool {
        match self {
            Self::Name(g) => glob_match(g, name, true),
            Self::Group(g) => traits.in_group(g),
            Self::ReadOnlyIn(g) => traits.read_only && traits.in_group(g),
            Self::WritesFiles => traits.writes_files,
            Self::Capability(c) => traits.has_capability(c),
        }
    }

    /// Whether it names tools explicitly (for opt-in): names do, trait
    /// selections do not.
    fn is_explicit(self) -> bool {
        matches!(self, Self::Name(_))
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(n) => write!(f, "\"{n}\""),
            Self::Group(g) => write!(f, "\"group:{g}\""),
            Self::ReadOnlyIn(g) => write!(f, "read-only tools of group:{g}"),
            Self::WritesFiles => write!(f, "tools that write files"),
            Self::Capability(c) => write!(f, "tools with capability {c}"),
        }
    }
}

const MINIMAL: &[Selector] = &[
    Selector::ReadOnlyIn("fs"),
    Selector::Name("web_fetch"),
    Selector::Name("system_info"),
    Selector::Group("system"),
    // Every profile can load what it defers; the loader is offered only
    // while some tool is deferred.
    Selector::Capability(LOADS_DEFERRED),
];

const MESSAGING: &[Selector] = &[
    Selector::Group("memory"),
    Selector::Name("memory*"),
    Selector::Name("web_search"),
];

const CODING: &[Selector] = &[Selector::Group("fs"), Selector::WritesFiles, Selector::Group("runtime")];

impl Profile {
    pub const ALL: [Profile; 4] = [Self::Minimal, Self::Messaging, Self::Coding, Self::Full];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Minimal => "minimal",
            Self::Messaging => "messaging",
            Self::Coding => "coding",
            Self::Full => "full",
        }
    }

    fn selectors(self) -> Vec<Selector> {
        let mut v = Vec::new();
        if self == Self::Full {
            return v;
        }
        v.extend_from_slice(MINIMAL);
        if matches!(self, Self::Messaging | Self::Coding) {
            v.extend_from_slice(MESSAGING);
        }
        if self == Self::Coding {
            v.extend_from_slice(CODING);
        }
        v
    }

    /// `None` when the profile admits everything (`full`); else the rule that
    /// admitted the tool, or `Err` with the rule that left it out.
    pub(crate) fn decide(self, name: &str, traits: &ToolTraits) -> Option<Result<String, String>> {
        if self == Self::Full {
            return None;
        }
        let selectors = self.selectors();
        Some(match selectors.iter().find(|s| s.matches(name, traits)) {
            Some(s) => Ok(format!("profile {self}: {s}")),
            None => Err(format!(
                "profile {self}: not included (it has {})",
                selectors.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            )),
        })
    }

    /// The entry naming this tool explicitly, for opt-in.
    pub(crate) fn explicit_match(self, name: &str, traits: &ToolTraits) -> Option<String> {
        self.selectors()
            .into_iter()
            .find(|s| s.is_explicit() && s.matches(name, traits))
            .map(|s| format!("profile {self}: {s}"))
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Profile {
    type Err = PolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        Self::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(t))
            .ok_or_else(|| PolicyError::UnknownProfile {
                name: t.to_owned(),
                suggestion: closest(t, Self::ALL.iter().map(|p| p.as_str())).map(str::to_owned),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(read_only: bool, groups: &[&str]) -> ToolTraits {
        ToolTraits {
            read_only,
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            ..ToolTraits::default()
        }
    }

    #[test]
    fn profiles_nest() {
        let read = t(true, &["fs"]);
        let write = t(false, &["fs"]);
        let bash = t(false, &["runtime"]);
        let mem = t(false, &["memory"]);
        assert!(Profile::Minimal.decide("read", &read).unwrap().is_ok());
        assert!(Profile::Minimal.decide("write", &write).unwrap().is_err());
        assert!(Profile::Minimal.decide("memory_write", &mem).unwrap().is_err());
        assert!(Profile::Messaging.decide("memory_write", &mem).unwrap().is_ok());
        assert!(Profile::Messaging.decide("bash", &bash).unwrap().is_err());
        assert!(Profile::Coding.decide("bash", &bash).unwrap().is_ok());
        assert!(Profile::Coding.decide("write", &write).unwrap().is_ok());
        // Writing files, not a name, puts a tool outside group fs in coding.
        let notes = ToolTraits {
            writes_files: true,
            ..t(false, &["notes"])
        };
        assert!(Profile::Coding.decide("notes_save", &notes).unwrap().is_ok());
        assert!(Profile::Messaging.decide("notes_save", &notes).unwrap().is_err());
        assert!(
            Profile::Coding
                .decide("calculator", &t(true, &["math"]))
                .unwrap()
                .is_err()
        );
        assert!(Profile::Full.decide("anything", &t(false, &[])).is_none());
    }

    #[test]
    fn unknown_profile_suggests() {
        let err = "codin".parse::<Profile>().unwrap_err().to_string();
        assert!(err.contains("did you mean `coding`"), "{err}");
        assert_eq!("FULL".parse::<Profile>().unwrap(), Profile::Full);
    }
}
