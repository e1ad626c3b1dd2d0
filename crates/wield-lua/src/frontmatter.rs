//! frontmatter (todo)
