//! Reads every `.chat` file in the folders or files given, and prints for
//! each whether writing it back gives the same bytes, its diagnostics, and
//! its tool calls with their status. `scripts/chat-conformance.sh` runs it
//! over another project's documents.

#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn files(arg: &Path) -> Vec<PathBuf> {
    if arg.is_dir() {
        let mut out: Vec<PathBuf> = std::fs::read_dir(arg)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "chat"))
            .collect();
        out.sort();
        out
    } else {
        vec![arg.to_path_buf()]
    }
}

fn main() -> ExitCode {
    let mut failed = false;
    for arg in std::env::args_os().skip(1) {
        for path in files(Path::new(&arg)) {
            let Ok(text) = std::fs::read_to_string(&path) else {
                println!("{}: cannot be read", path.display());
                failed = true;
                continue;
            };
            let doc = wield_chat::parse(&text);
            let same = doc.write() == text;
            failed |= !same;
            println!(
                "{}: round trip {}",
                path.display(),
                if same { "identical" } else { "DIFFERS" }
            );
            for d in &doc.diagnostics {
                println!("  {d}");
            }
            for c in doc.tool_calls() {
                println!("  call {} `{}` line {}: {:?}", c.id, c.name, c.line, c.status);
            }
            match doc.conversation(&wield_chat::ConvertOptions::default()) {
                Ok(conv) => println!("  sendable: {} messages", conv.messages.len()),
                Err(e) => println!("  not sendable: {}", e.to_string().replace('\n', "\n  ")),
            }
        }
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
