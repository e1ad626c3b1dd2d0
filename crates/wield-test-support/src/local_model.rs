//! The local model server the tests talk to: llama.cpp's `llama-server`
//! with a 135M model, installed by `scripts/test-deps.sh` under
//! `target/test-deps/llm` (or `$WIELD_TEST_DEPS/llm`), started on a free
//! port and stopped when dropped. Shared by wield-llm's and the CLI's tests.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct LocalModel {
    child: Child,
    /// The API root, e.g. `http://127.0.0.1:PORT/v1`.
    pub url: String,
}

impl Drop for LocalModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the server on one core (tests run beside it) and waits until it
/// is healthy; fails, saying how to install it, when it is missing.
pub fn start() -> LocalModel {
    let dir = crate::command::test_deps().join("llm");
    assert!(
        dir.join("bin/llama-server").is_file() && dir.join("model.gguf").is_file(),
        "the local model server is not installed in {}: run scripts/test-deps.sh (or scripts/llm-peer.sh)",
        dir.display()
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Given everything it needs as arguments: none of the test run's
    // environment (a proxy, `LLAMA_*` settings) reaches it.
    let child = Command::new(dir.join("bin/llama-server"))
        .env_clear()
        .arg("-m")
        .arg(dir.join("model.gguf"))
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--jinja",
            "--chat-template-file",
        ])
        .arg(dir.join("tools.jinja"))
        .args(["-a", "smollm2-135m", "-c", "4096", "-np", "1", "-t", "1", "--no-webui"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = LocalModel {
        child,
        url: format!("http://127.0.0.1:{port}/v1"),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = write!(s, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            if answer.starts_with("HTTP/1.1 200") {
                return server;
            }
        }
        assert!(
            Instant::now() < deadline,
            "llama-server did not become healthy within 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
