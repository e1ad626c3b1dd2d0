//! The process sandbox: Unix sockets, the private temp dir, protected paths against renames, wield's own memory, the kill-tree.
