//! File tools and nested project state: `.git`, `.wield`, protected globs, paths run automatically later.
