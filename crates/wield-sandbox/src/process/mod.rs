//! Process spawning and isolation.
