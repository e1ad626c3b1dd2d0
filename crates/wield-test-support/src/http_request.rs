//! Reading one HTTP request's body, for the tests' small local servers that
//! stand in for a model provider.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;

/// The body of the request on `stream` (by its `content-length`; empty when
/// the request cannot be read).
pub fn read_body(stream: &TcpStream) -> Vec<u8> {
    let Ok(clone) = stream.try_clone() else {
        return Vec::new();
    };
    let mut reader = BufReader::new(clone);
    let mut len = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; len];
    let _ = reader.read_exact(&mut body);
    body
}
