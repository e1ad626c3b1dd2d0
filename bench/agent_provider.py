#!/usr/bin/env python3
"""The scripted model provider of bench/agent.sh: instant answers, a fixed scenario.

It serves the OpenAI Responses streaming API (`POST /v1/responses`, the wire
format both `codex exec` and wield's `openai-responses` provider speak) on
127.0.0.1. Every conversation request is answered with the scenario's next
step: a shell command while there are commands left, then a final text
answer. The step is the number of tool results the request carries, so a
retried request gets the same answer. The shell tool is found in the
request's tool list, whichever agent sent it: wield's `bash {command}`,
Codex's `exec_command {cmd}`, `shell_command {command}` or
`shell {command: [argv]}`.

Every request is logged as one JSON line: the path, when its headers arrived
and when its body was read, when the reply's last byte was written (monotonic
seconds; the reply goes in one write, without Nagle's delay), the body's size, the step,
the tool names and the first words of the instructions. With --dump DIR the
bodies are kept too (for looking at what an agent sends).

Usage: agent_provider.py --log FILE [--dump DIR] [--port N]
It prints the port it listens on as its first line, then serves until killed.
"""

import argparse
import gzip
import json
import os
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# The scenario: 19 shell commands over the bench project, then the answer.
COMMANDS = [
    "ls -la",
    "cat README.md",
    "ls src tests",
    "cat src/inventory.py",
    "grep -rn 'def ' src",
    "cat src/report.py",
    "wc -l src/*.py tests/*.py",
    "grep -rn TODO .",
    "cat tests/test_inventory.py",
    "head -n 10 data/stock.csv",
    "grep -c widget data/stock.csv",
    "cat setup.cfg",
    "ls -R src tests data",
    "grep -rn '^import\\|^from' src tests",
    "cat src/pricing.py",
    "tail -n 5 CHANGELOG.md",
    "find . -name '*.py' -not -path './.git/*' | sort",
    "grep -n version setup.cfg",
    "head -n 3 LICENSE",
]
ANSWER = (
    "The project is a small inventory tool: `src/inventory.py` loads the stock "
    "list, `src/pricing.py` prices it and `src/report.py` prints the report; "
    "there is one TODO, in src/report.py."
)
SHELL_TOOLS = ("bash", "exec_command", "shell_command", "shell")


def arguments(tool, command):
    """The call's arguments in the shape the named tool takes."""
    if tool == "bash":
        return {"command": command}
    if tool == "exec_command":
        return {"cmd": command}
    if tool == "shell_command":
        return {"command": command}
    return {"command": ["bash", "-lc", command]}


def tool_names(body):
    names = []
    for t in body.get("tools") or []:
        name = t.get("name") or (t.get("function") or {}).get("name")
        if name:
            names.append(name)
    return names


def tool_results(body):
    items = body.get("input")
    if not isinstance(items, list):
        return 0
    return sum(1 for i in items if isinstance(i, dict) and i.get("type") in (
        "function_call_output", "custom_tool_call_output", "local_shell_call_output"))


def sse(event, data):
    data["type"] = event
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def reply(step, tool, request_bytes):
    """The SSE body answering step `step` (0-based)."""
    rid = f"resp_{step}"
    events = [sse("response.created", {"response": {
        "id": rid, "object": "response", "status": "in_progress", "output": []}})]
    if tool and step < len(COMMANDS):
        args = json.dumps(arguments(tool, COMMANDS[step]))
        item = {"type": "function_call", "id": f"fc_{step}", "call_id": f"call_{step}",
                "name": tool, "arguments": "", "status": "in_progress"}
        events.append(sse("response.output_item.added", {"output_index": 0, "item": item}))
        events.append(sse("response.function_call_arguments.delta", {
            "item_id": item["id"], "output_index": 0, "delta": args}))
        events.append(sse("response.function_call_arguments.done", {
            "item_id": item["id"], "output_index": 0, "arguments": args}))
        item = dict(item, arguments=args, status="completed")
        output_tokens = len(args) // 4 + 1
    else:
        text = ANSWER if tool else "ok"
        item = {"type": "message", "id": f"msg_{step}", "role": "assistant",
                "status": "in_progress", "content": []}
        events.append(sse("response.output_item.added", {"output_index": 0, "item": item}))
        events.append(sse("response.content_part.added", {
            "item_id": item["id"], "output_index": 0, "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []}}))
        events.append(sse("response.output_text.delta", {
            "item_id": item["id"], "output_index": 0, "content_index": 0, "delta": text}))
        events.append(sse("response.output_text.done", {
            "item_id": item["id"], "output_index": 0, "content_index": 0, "text": text}))
        item = dict(item, status="completed",
                    content=[{"type": "output_text", "text": text, "annotations": []}])
        output_tokens = len(text) // 4 + 1
    events.append(sse("response.output_item.done", {"output_index": 0, "item": item}))
    input_tokens = request_bytes // 4
    events.append(sse("response.completed", {"response": {
        "id": rid, "object": "response", "status": "completed", "output": [item],
        "usage": {"input_tokens": input_tokens,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": output_tokens,
                  "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": input_tokens + output_tokens}}}))
    return b"".join(events)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "bench-provider"

    def log_message(self, *args):
        pass

    def record(self, entry):
        with self.server.lock:
            self.server.log.write(json.dumps(entry) + "\n")
            self.server.log.flush()

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            raw = b"".join(chunks)
        encoding = self.headers.get("Content-Encoding", "").lower()
        body = raw
        if encoding == "gzip":
            body = gzip.decompress(raw)
        elif encoding == "deflate":
            body = zlib.decompress(raw)
        elif encoding == "zstd":
            body = None  # not readable with the standard library
        return raw, body, encoding

    def send(self, status, content_type, payload):
        # The status line, the headers and the body in one write: a reply split
        # in two writes can wait for the client's delayed ACK (40 ms) before its
        # second part leaves, which would be counted as the agent's time.
        head = (f"HTTP/1.1 {status} {self.responses[status][0]}\r\n"
                f"Content-Type: {content_type}\r\n"
                f"Content-Length: {len(payload)}\r\n\r\n").encode()
        self.wfile.write(head + payload)
        self.wfile.flush()

    def do_GET(self):
        arrived = time.monotonic()
        if self.path.rstrip("/").endswith("/models"):
            self.send(200, "application/json", b'{"object":"list","data":[],"models":[]}')
        else:
            self.send(404, "application/json", b'{"error":{"message":"not found"}}')
        self.record({"method": "GET", "path": self.path, "arrived": arrived,
                     "done": time.monotonic(), "bytes": 0})

    def do_POST(self):
        arrived = time.monotonic()
        raw, data, encoding = self.read_body()
        entry = {"method": "POST", "path": self.path, "arrived": arrived,
                 "received": time.monotonic(),
                 "bytes": len(raw), "encoding": encoding}
        if data is not None and len(data) != len(raw):
            entry["decoded_bytes"] = len(data)
        with self.server.lock:
            n = self.server.count = self.server.count + 1
        if self.server.dump:
            with open(os.path.join(self.server.dump, f"{n:03d}.json"), "wb") as f:
                f.write(data if data is not None else raw)
        if not self.path.rstrip("/").endswith("/responses") or data is None:
            self.send(404, "application/json", json.dumps({"error": {
                "message": f"the bench provider serves POST /v1/responses only "
                           f"(got {self.path}, encoding {encoding or 'none'})"}}).encode())
            entry["done"] = time.monotonic()
            self.record(entry)
            return
        body = json.loads(data)
        names = tool_names(body)
        tool = next((t for t in SHELL_TOOLS if t in names), None)
        step = tool_results(body)
        entry.update(step=step, tools=names, shell=tool,
                     instructions_bytes=len((body.get("instructions") or "").encode()),
                     tools_bytes=len(json.dumps(body.get("tools") or [], separators=(",", ":")).encode()),
                     input_items=len(body.get("input") or []))
        payload = reply(step, tool, len(raw))
        self.send(200, "text/event-stream", payload)
        entry["done"] = time.monotonic()
        self.record(entry)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--dump")
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    server.lock = threading.Lock()
    server.log = open(a.log, "a")
    server.dump = a.dump
    server.count = 0
    if a.dump:
        os.makedirs(a.dump, exist_ok=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
