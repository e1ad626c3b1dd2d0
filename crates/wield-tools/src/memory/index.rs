//! The search index of a memory store: an SQLite FTS5 table in a private
//! directory, brought up to date from the files (by modification time and
//! size) before every search, so entries written by hand are found too.
//! Concurrent searches serialize on SQLite's write lock while refreshing.

use std::collections::HashMap;
use std::time::{Duration, UNIX_EPOCH};

use rusqlite::{Connection, params};

use super::store::{Listed, Store};

/// One search result.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub key: String,
    pub snippet: String,
    /// bm25: lower is better.
    pub rank: f64,
}

const SCHEMA: &str =
    "CREATE TABLE IF NOT EXISTS files (key TEXT PRIMARY KEY, mtime INTEGER NOT NULL, len INTEGER NOT NULL);
     CREATE VIRTUAL TABLE IF NOT EXISTS entries USING fts5(key UNINDEXED, body, tokenize = 'unicode61');";

fn sql(e: rusqlite::Error) -> String {
    format!("the memory index failed: {e}")
}

fn stamp(l: &Listed) -> i64 {
    l.modified
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// The FTS5 query for a person's or model's words: each word quoted (so
/// no word is read as query syntax) and matched as a prefix, any of them.
pub fn fts_query(query: &str) -> Option<String> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{w}\"*"))
        .collect();
    (!words.is_empty()).then(|| words.join(" OR "))
}

fn open(store: &Store) -> Result<Connection, String> {
    if let Some(dir) = store.index.parent() {
        wield_core::private_dir::ensure_private_dir(dir)
            .map_err(|e| format!("cannot prepare the memory index directory {}: {e}", dir.display()))?;
    }
    let conn = Connection::open(&store.index)
        .map_err(|e| format!("cannot open the memory index {}: {e}", store.index.display()))?;
    conn.busy_timeout(Duration::from_secs(10)).map_err(sql)?;
    conn.execute_batch(SCHEMA).map_err(sql)?;
    Ok(conn)
}

/// Bring the index up to date with the files: changed and new entries are
/// read again, removed ones dropped.
fn refresh(conn: &mut Connection, store: &Store) -> Result<usize, String> {
    let listed = store.list()?;
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(sql)?;
    let mut known: HashMap<String, (i64, i64)> = HashMap::new();
    {
        let mut stmt = tx.prepare("SELECT key, mtime, len FROM files").map_err(sql)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?))))
            .map_err(sql)?;
        for row in rows {
            let (k, v) = row.map_err(sql)?;
            known.insert(k, v);
        }
    }
    let stale: Vec<Listed> = listed
        .iter()
        .filter(|l| known.remove(&l.key) != Some((stamp(l), i64::try_from(l.len).unwrap_or(i64::MAX))))
        .cloned()
        .collect();
    // What is left in `known` is gone from the directory.
    for key in known.keys() {
        tx.execute("DELETE FROM entries WHERE key = ?1", params![key])
            .map_err(sql)?;
        tx.execute("DELETE FROM files WHERE key = ?1", params![key])
            .map_err(sql)?;
    }
    let changed = stale.len() + known.len();
    for (l, text) in store.read_listed(&stale)? {
        tx.execute("DELETE FROM entries WHERE key = ?1", params![l.key])
            .map_err(sql)?;
        tx.execute("INSERT INTO entries (key, body) VALUES (?1, ?2)", params![l.key, text])
            .map_err(sql)?;
        tx.execute(
            "INSERT OR REPLACE INTO files (key, mtime, len) VALUES (?1, ?2, ?3)",
            params![l.key, stamp(&l), i64::try_from(l.len).unwrap_or(i64::MAX)],
        )
        .map_err(sql)?;
    }
    tx.commit().map_err(sql)?;
    Ok(changed)
}

/// The best `limit` entries of `store` for `query`, best first.
pub fn search(store: &Store, query: &str, limit: usize) -> Result<Vec<Hit>, String> {
    let Some(fts) = fts_query(query) else {
        return Err("the query has no words to search for: give one or more words".into());
    };
    let mut conn = open(store)?;
    refresh(&mut conn, store)?;
    let mut stmt = conn
        .prepare(
            "SELECT key, snippet(entries, 1, '**', '**', '…', 16), bm25(entries) FROM entries \
             WHERE entries MATCH ?1 ORDER BY bm25(entries) LIMIT ?2",
        )
        .map_err(sql)?;
    let rows = stmt
        .query_map(params![fts, i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
            Ok(Hit {
                key: r.get(0)?,
                snippet: r.get(1)?,
                rank: r.get(2)?,
            })
        })
        .map_err(sql)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(sql)
}

/// How many entries the index holds (tests).
#[cfg(test)]
pub fn indexed(store: &Store) -> Result<i64, String> {
    let conn = open(store)?;
    conn.query_row("SELECT count(*) FROM files", [], |r| r.get(0))
        .map_err(sql)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::store::Scope;

    fn store(dir: &std::path::Path) -> Store {
        Store {
            scope: Scope::Local,
            dir: dir.join("memory"),
            index: dir.join("index").join("memory.sqlite"),
        }
    }

    #[test]
    fn query_words_are_quoted_so_no_word_is_syntax() {
        assert_eq!(
            fts_query("NEAR(a b) OR \"x"),
            Some("\"NEAR\"* OR \"a\"* OR \"b\"* OR \"OR\"* OR \"x\"*".into())
        );
        assert_eq!(fts_query(" -*- "), None);
    }

    #[test]
    fn the_index_follows_the_files_as_they_change() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        s.write("deploy", "Deploy with the blue button.\nThen wait.").unwrap();
        s.write("style", "Tabs, never spaces.").unwrap();
        let hits = search(&s, "button", 10).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].key, "deploy");
        assert!(hits[0].snippet.contains("**button**"), "{:?}", hits[0]);
        // Edited by hand (a different size), then removed.
        std::fs::write(s.dir.join("style.md"), "Spaces only, four of them.").unwrap();
        assert_eq!(search(&s, "four", 10).unwrap()[0].key, "style");
        assert!(search(&s, "tabs", 10).unwrap().is_empty());
        std::fs::remove_file(s.dir.join("deploy.md")).unwrap();
        assert!(search(&s, "button", 10).unwrap().is_empty());
        assert_eq!(indexed(&s).unwrap(), 1);
    }
}
