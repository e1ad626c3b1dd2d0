"""Scenarios of `client.py` for `wield mcp serve --http` only: raw requests,
tokens, Host and Origin, sessions."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import threading
import time
import urllib.error
import urllib.request

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from fixture import AUTH_LINE, Fixture, HttpServer, alive, call, describe_process, expect, http_client, text_of, wait_for_host_pid


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def post(url: str, headers: dict[str, str] | None = None) -> int:
    body = json.dumps(INITIALIZE).encode()
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    h.update(headers or {})
    req = urllib.request.Request(url, data=body, headers=h, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


def rpc(url: str, body: dict, session: str | None = None) -> tuple[int, str, str | None]:
    """One JSON-RPC POST: (status, body text, the Mcp-Session-Id header)."""
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session:
        h["Mcp-Session-Id"] = session
        h["Mcp-Protocol-Version"] = "2025-11-25"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=h, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status, resp.read().decode(), resp.headers.get("Mcp-Session-Id")


def open_and_call(url: str) -> str:
    """A raw streamable-HTTP session that stays open after reading a.txt."""
    init = INITIALIZE
    status, _, session = rpc(url, init)
    expect(status == 200 and session, f"initialize: {status} {session}")
    rpc(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    call_read = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read", "arguments": {"path": "a.txt"}}}
    status, text, _ = rpc(url, call_read, session)
    expect(status == 200 and "the needle is here" in text, f"call in a raw session: {status} {text[:200]}")
    return session


def delete_session(url: str, session: str) -> int:
    h = {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}
    req = urllib.request.Request(url, headers=h, method="DELETE")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


async def http_delete_mid_call(fx: Fixture) -> None:
    """Ending a session (DELETE) while a call runs kills the call's processes
    and the session's background processes, and frees the session."""
    # Found by name: under bubblewrap the pids a command prints are its
    # PID namespace's.
    fg, bg = (f"wield-{kind}-{os.getpid()}-{time.monotonic_ns()}" for kind in ("fg", "bg"))
    with HttpServer(fx, ["--yes"]) as url:
        session = open_and_call(url)

        def call_tool(n: int, name: str, command: str) -> tuple[int, str, str | None]:
            body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": {"command": command}}}
            return rpc(url, body, session)

        status, text, _ = call_tool(3, "process_start", f"(exec -a {bg} sleep 301) & wait")
        expect(status == 200 and "started p1" in text, f"process_start: {status} {text[:300]}")
        running = threading.Thread(target=lambda: _ignore(lambda: call_tool(4, "bash", f"(exec -a {fg} sleep 302) & wait")))
        running.daemon = True
        running.start()
        pids = [await wait_for_host_pid(fg), await wait_for_host_pid(bg)]
        expect(all(alive(p) for p in pids), "the commands are not running")
        started = time.time()
        status = delete_session(url, session)
        expect(status == 200, f"DELETE: {status} after {time.time() - started:.1f}s")
        deadline = time.time() + 30
        while any(alive(p) for p in pids) and time.time() < deadline:
            await anyio.sleep(0.1)
        names = {pids[0]: "the call's", pids[1]: "the background"}
        left = [f"{names[p]}: {describe_process(p)}" for p in pids if alive(p)]
        took = time.time() - started
        expect(not left, f"processes outlived their session by {took:.1f}s: {'; '.join(left)}")
        # At once, not after the SDK's 5 s wait for the replies under way.
        expect(took < 4, f"the session's processes took {took:.1f}s to stop")
        status = delete_session(url, session)
        expect(status == 404, f"a deleted session is still known: {status}")


def reset_initializes(url: str, n: int) -> None:
    """`n` initialize requests, each connection reset (RST) right after it is sent."""
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    body = json.dumps(INITIALIZE).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n{AUTH_LINE}Content-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    for _ in range(n):
        with socket.create_connection((host, int(port))) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.sendall(head + body)


def _ignore(f) -> None:
    try:
        f()
    except Exception:  # noqa: BLE001 - the call's connection ends with its session
        pass


def raw_post(url: str, data: bytes, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})}
    req = urllib.request.Request(url, data=data, headers=h, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read().decode()
            return resp.status, json.loads(body) if body.startswith("{") else {}
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        return e.code, json.loads(body) if body.startswith("{") else {"text": body}


async def http_security(fx: Fixture) -> None:
    """Bearer token, Host and Origin checks."""
    with HttpServer(fx, [], ["--token", "s3cret"]) as url:
        expect(post(url) == 401, "no token accepted")
        expect(post(url, {"Authorization": "Bearer wrong"}) == 401, "wrong token accepted")
        expect(post(url, {"Authorization": "Bearer s3cret"}) == 200, "right token refused")
        expect(post(url, {"Authorization": "BEARER s3cret"}) == 200, "the scheme is case-insensitive")
        expect(post(url, {"Authorization": "Basic s3cret"}) == 401, "another scheme accepted")
    with HttpServer(fx, [], env={"WIELD_MCP_TOKEN": "from-env"}) as url:
        expect(post(url) == 401, "WIELD_MCP_TOKEN not enforced")
        expect(post(url, {"Authorization": "Bearer from-env"}) == 200, "WIELD_MCP_TOKEN refused")
    with HttpServer(fx, []) as url:
        port = url.split(":")[2].split("/")[0]
        expect(post(url) == 200, "plain loopback request refused")
        expect(post(url, {"Host": f"evil.example.com:{port}"}) == 403, "rebinding Host accepted")
        expect(post(url, {"Origin": "http://evil.example.com"}) == 403, "foreign Origin accepted")
        # Two of a header a proxy and wield might each read one of: refused,
        # whichever comes first. (Regression: only the first was checked.)
        host = url.split("//", 1)[1].split("/", 1)[0]
        body = json.dumps(INITIALIZE).encode()
        for twice in [f"Host: {host}\r\nHost: evil.example.com:{port}", f"Host: evil.example.com:{port}\r\nHost: {host}",
                      f"Host: {host}\r\nOrigin: http://localhost\r\nOrigin: http://evil.example.com"]:
            status, text = raw_http(
                url,
                f"POST /mcp HTTP/1.1\r\n{twice}\r\n{AUTH_LINE}Content-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n",
                body,
            )
            expect(status == 400 and "more than one" in text, f"{twice!r}: {status} {text[:200]}")
        # Malformed messages get JSON-RPC errors (400), to their id when it can be read.
        status, body = raw_post(url, b'{"jsonrpc":"2.0","id":1,')
        expect(status == 400 and body["error"]["code"] == -32700 and body["id"] is None, f"truncated: {status} {body}")
        status, body = raw_post(url, b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]')
        expect(status == 400 and body["error"]["code"] == -32600 and "batch" in body["error"]["message"], f"batch: {body}")
        bad = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "read", "arguments": [1, 2]}}
        status, body = raw_post(url, json.dumps(bad).encode())
        expect(status == 400 and body["id"] == 7 and body["error"]["code"] == -32602, f"bad params: {status} {body}")
        expect("tools/call" in body["error"]["message"], f"bad params: {body}")
        status, body = raw_post(url, b'{"jsonrpc":"1.0","id":"x","method":"ping"}')
        expect(status == 400 and body["id"] == "x" and body["error"]["code"] == -32600, f"not 2.0: {status} {body}")
        # Only initialize opens a session; a request outside one, even with its
        # own protocol version in _meta, is refused and does not run.
        touched = fx.ws / "ran-without-session"
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2025-11-25",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        }
        for n, params in enumerate([{}, {"_meta": meta}]):
            sneak = {"jsonrpc": "2.0", "id": 20 + n, "method": "tools/call", "params": {"name": "bash", "arguments": {"command": f"touch {touched}"}, **params}}
            status, body = raw_post(url, json.dumps(sneak).encode(), {"Mcp-Protocol-Version": "2025-11-25"})
            expect(status == 400 and body.get("id") == 20 + n and body["error"]["code"] == -32600, f"a call without a session: {status} {body}")
        session = open_and_call(url)
        again = dict(INITIALIZE, id=30)
        status, body = raw_post(url, json.dumps(again).encode(), {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"})
        expect(status == 400 and body["id"] == 30 and "already initialized" in body["error"]["message"], f"a second initialize: {status} {body}")
        expect(not touched.exists(), "a call ran outside a session")
        for n, method in enumerate(["vendor/thing", "resources/list"]):
            unknown = {"jsonrpc": "2.0", "id": 40 + n, "method": method}
            status, body = raw_post(url, json.dumps(unknown).encode(), {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"})
            # Answered as JSON-RPC answers (200): a client takes it for the
            # method's error, not for a broken transport.
            expect(
                status == 200 and body["id"] == 40 + n and body["error"]["code"] == -32601 and "tools/call" in body["error"]["message"],
                f"{method}: {status} {body}",
            )
        bad = {"jsonrpc": "2.0", "id": 45, "method": "tools/call", "params": {"name": "read", "arguments": [1, 2]}}
        status, body = raw_post(url, json.dumps(bad).encode(), {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"})
        expect(status == 200 and body["id"] == 45 and body["error"]["code"] == -32602, f"bad params in a session: {status} {body}")
        # Outside a session, a ping or a notification is told to initialize, in JSON-RPC.
        status, body = raw_post(url, b'{"jsonrpc":"2.0","id":52,"method":"ping"}')
        expect(status == 400 and body["id"] == 52 and "initialize" in body["error"]["message"], f"ping without a session: {status} {body}")
        status, body = raw_post(url, b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        expect(status == 400 and body["error"]["code"] == -32600, f"a notification without a session: {status} {body}")
        # A byte order mark is passed over, as on stdio; server/discover is not served.
        status, body = raw_post(url, b"\xef\xbb\xbf" + json.dumps(dict(INITIALIZE, id=50)).encode())
        expect(status == 200, f"a BOM before initialize: {status} {body}")
        status, body = raw_post(url, b'{"jsonrpc":"2.0","id":51,"method":"server/discover"}')
        expect(status == 400 and body["id"] == 51 and body["error"]["code"] == -32601, f"server/discover: {status} {body}")
        # JSON the parser cannot take (a number out of range) is a parse error to its id.
        status, body = raw_post(url, b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"x","arguments":{"n":1e400}}}')
        expect(status == 400 and body["id"] == 8 and body["error"]["code"] == -32700, f"1e400: {status} {body}")
        # A string cut inside a surrogate pair (as json.dumps writes it) is answered.
        session = open_and_call(url)
        cut = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "read", "arguments": {"path": "cut \ud83d.txt"}}}
        status, text, _ = rpc(url, cut, session)
        expect(status == 200 and '"id":9' in text and "cut \ufffd.txt" in text, f"a lone surrogate: {status} {text[:300]}")
        expect(post(url, {"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"}) == 200, "localhost refused")
    with HttpServer(fx, [], ["--allow-host", "mcp.internal,other.internal"]) as url:
        port = url.split(":")[2].split("/")[0]
        expect(post(url, {"Host": f"mcp.internal:{port}"}) == 200, "--allow-host name refused")
        expect(post(url, {"Origin": "https://other.internal"}) == 200, "--allow-host origin refused")
        expect(post(url, {"Host": f"evil.example.com:{port}"}) == 403, "rebinding Host accepted with --allow-host")
    # On every interface: addresses and allowed names as Host, nothing else;
    # an Origin must be loopback, allowed, or the Host itself.
    with HttpServer(fx, [], ["--token", "t0k", "--allow-host", "mcp.internal"], bind="0.0.0.0:0") as url:
        port = url.split(":")[2].split("/")[0]
        auth = {"Authorization": "Bearer t0k"}
        expect(post(url, auth) == 200, "0.0.0.0: 127.0.0.1 refused")
        expect(post(url, {**auth, "Host": f"10.9.8.7:{port}"}) == 200, "0.0.0.0: an address as Host refused")
        expect(post(url, {**auth, "Host": f"mcp.internal:{port}"}) == 200, "0.0.0.0: an allowed name refused")
        expect(post(url, {**auth, "Host": f"evil.example.com:{port}"}) == 403, "0.0.0.0: rebinding Host accepted")
        same = {**auth, "Host": f"10.9.8.7:{port}", "Origin": f"http://10.9.8.7:{port}"}
        expect(post(url, same) == 200, "0.0.0.0: same-origin request refused")
        foreign = {**auth, "Host": f"10.9.8.7:{port}", "Origin": "http://evil.example.com"}
        expect(post(url, foreign) == 403, "0.0.0.0: foreign Origin accepted")
        other_port = {**auth, "Host": f"10.9.8.7:{port}", "Origin": "http://10.9.8.7:9"}
        expect(post(url, other_port) == 403, "0.0.0.0: an Origin on another port of the Host accepted")
        expect(post(url, {"Host": f"10.9.8.7:{port}"}) == 401, "0.0.0.0: no token accepted")
    # An empty token is an error, never "no authentication".
    p = subprocess.run(
        [fx.wield, *fx.args([]), "--http", "0.0.0.0:0"],
        env=fx.env({"WIELD_MCP_TOKEN": ""}),
        capture_output=True,
        text=True,
        timeout=20,
    )
    expect(p.returncode == 2 and "empty" in p.stderr, f"an empty WIELD_MCP_TOKEN: {p.returncode} {p.stderr}")
    p = subprocess.run(
        [fx.wield, *fx.args([]), "--http", "0.0.0.0:0", "--token", "  "],
        env=fx.env(),
        capture_output=True,
        text=True,
        timeout=20,
    )
    expect(p.returncode == 2 and "token" in p.stderr, f"a blank token: {p.returncode} {p.stderr}")


async def http_sessions(fx: Fixture) -> None:
    """Many concurrent sessions, each with its own state; the session cap holds."""
    with HttpServer(fx, ["--yes"], ["--max-sessions", "12"]) as url:
        results: list[str] = []

        async def one(i: int) -> None:
            async with streamable_http_client(url, http_client=http_client()) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    r = await call(s, "calculator", {"expression": f"{i} * 2"})
                    expect(not r.is_error, f"session {i}: {r}")
                    results.append(text_of(r).strip())
                    await anyio.sleep(0.5)

        async with anyio.create_task_group() as tg:
            for i in range(10):
                tg.start_soon(one, i)
        expect(sorted(results, key=float) == [str(i * 2) for i in range(10)], f"results: {results}")

    with HttpServer(fx, ["--yes"], ["--max-sessions", "2"]) as url:
        async with anyio.create_task_group() as tg:
            opened = anyio.Event()
            release = anyio.Event()
            count = 0

            async def hold() -> None:
                nonlocal count
                async with streamable_http_client(url, http_client=http_client()) as (read, write):
                    async with ClientSession(read, write) as s:
                        await s.initialize()
                        count += 1
                        if count == 2:
                            opened.set()
                        await release.wait()

            tg.start_soon(hold)
            tg.start_soon(hold)
            await opened.wait()
            expect(post(url) == 503, "a third session was not refused with 503 beyond --max-sessions 2")
            release.set()

    # An idle session closes and frees its slot.
    with HttpServer(fx, ["--yes"], ["--max-sessions", "1", "--session-idle", "1s"]) as url:
        session = open_and_call(url)
        expect(post(url) == 503, "a second session was accepted beyond --max-sessions 1")
        time.sleep(2.5)
        again = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "calculator", "arguments": {"expression": "1"}}}
        try:
            status = rpc(url, again, session)[0]
        except urllib.error.HTTPError as e:
            status = e.code
        expect(status == 404, f"an idle session answered after --session-idle: {status}")
        expect(post(url) == 200, "the idle session's slot was not freed")
    # A client that resets the connection while its session is being
    # initialized does not keep the slot: the session is reaped when idle.
    with HttpServer(fx, ["--yes"], ["--max-sessions", "3", "--session-idle", "1s"]) as url:
        reset_initializes(url, 20)
        time.sleep(3)
        statuses = [post(url) for _ in range(3)]
        expect(statuses == [200, 200, 200], f"reset initializes kept their slots: {statuses}")
    # A call that runs longer than the idle time keeps its session open.
    with HttpServer(fx, ["--yes"], ["--session-idle", "1s"]) as url:
        async with streamable_http_client(url, http_client=http_client()) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                r = await call(s, "bash", {"command": "sleep 2.5; echo still here"})
                expect(not r.is_error and "still here" in text_of(r), f"a long call in a short-idle session: {r}")
                r = await call(s, "calculator", {"expression": "2+2"})
                expect(not r.is_error and "4" in text_of(r), f"the session after the long call: {r}")
    # --allow-host takes bare names only.
    p = subprocess.run(
        [fx.wield, *fx.args([]), "--http", "127.0.0.1:0", "--allow-host", "mcp.internal:8443"],
        env=fx.env(),
        capture_output=True,
        text=True,
        timeout=20,
    )
    expect(p.returncode == 2 and "--allow-host" in p.stderr and "port" in p.stderr, f"bad --allow-host: {p.returncode} {p.stderr}")

    # Memory per session is bounded: 200 more open sessions, each of which
    # has made a call (so its executor and session state exist), cost the
    # server well under 256 KiB each.
    server = HttpServer(fx, ["--yes"], ["--max-sessions", "300"])
    with server as url:
        assert server.proc is not None

        def rss_kib() -> int:
            with open(f"/proc/{server.proc.pid}/status") as f:
                return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))

        for _ in range(10):
            open_and_call(url)
        before = rss_kib()
        for _ in range(200):
            open_and_call(url)
        grown = rss_kib() - before
        expect(grown < 200 * 256, f"200 sessions grew the server by {grown} KiB")




def raw_http(url: str, head: str, body: bytes = b"", wait: float = 10) -> tuple[int, str]:
    """One request written by hand; (status, the answer's body)."""
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=wait) as s:
        s.sendall(head.encode() + body)
        answer = b""
        try:
            while chunk := s.recv(65536):
                answer += chunk
        except TimeoutError:
            pass
    text = answer.decode(errors="replace")
    status = int(text.split(" ", 2)[1]) if text.startswith("HTTP/") else 0
    return status, text.split("\r\n\r\n", 1)[-1]


async def http_requests(fx: Fixture) -> None:
    """Request ids, HTTP errors as JSON-RPC, wildcard Accept, a stale session's
    initialize, a body announced too large, a call whose client went away."""
    with HttpServer(fx, ["--yes"], ["--session-idle", "1s"]) as url:
        session = open_and_call(url)

        def bash(n: int, command: str) -> tuple[int, str, str | None]:
            body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "bash", "arguments": {"command": command}}}
            return rpc(url, body, session)

        # Regression: a second request with the id of one in flight took its
        # result and never ran; it is refused, and the first keeps its own.
        first: list[str] = []
        running = threading.Thread(target=lambda: first.append(bash(777, f"sleep 1.5; echo A > {fx.ws / 'dupA.txt'}; echo A")[1]))
        running.start()
        time.sleep(0.4)
        dup = {"jsonrpc": "2.0", "id": 777, "method": "tools/call", "params": {"name": "bash", "arguments": {"command": "echo B"}}}
        status, answer = raw_post(url, json.dumps(dup).encode(), {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"})
        expect(status == 400 and answer.get("id") == 777, f"a reused id in flight: {status} {answer}")
        expect("already in use" in answer["error"]["message"], f"a reused id in flight: {answer}")
        running.join(20)
        expect(first and '"A\\nexit code: 0' in first[0], f"the first call's result: {first}")
        # Once answered, the id may be used again.
        status, text, _ = bash(777, "echo again")
        expect(status == 200 and "again" in text, f"the id after its answer: {status} {text[:300]}")

        # Errors the SDK answers in plain text come as JSON-RPC.
        status, answer = raw_post(url, json.dumps(INITIALIZE).encode(), {"Accept": "text/html"})
        expect(status == 406 and answer.get("jsonrpc") == "2.0" and answer["error"]["message"], f"406: {status} {answer}")
        expect(delete_session(url, "no-such-session") == 404, "DELETE of an unknown session")
        # `initialize` with a session id that is not open: 404 (the
        # session is gone), not "already initialized".
        status, answer = raw_post(url, json.dumps(INITIALIZE).encode(), {"Mcp-Session-Id": "bogus"})
        expect(status == 404 and answer["error"]["code"] == -32001, f"initialize with a stale session: {status} {answer}")
        # A protocol revision the server does not speak, named in the header:
        # 400 saying which it speaks (a later one was taken for its
        # stateless mode).
        ping = json.dumps({"jsonrpc": "2.0", "id": 31, "method": "ping"}).encode()
        status, answer = raw_post(url, ping, {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2026-07-28"})
        expect(status == 400 and "unsupported MCP-Protocol-Version: 2026-07-28" in answer["error"]["message"],
               f"a revision the server does not speak: {status} {answer}")
        expect("2025-11-25" in answer["error"]["message"], f"which it speaks: {answer}")
        # So does `initialize` naming one (it said only "unsupported").
        status, answer = raw_post(url, json.dumps(INITIALIZE).encode(), {"Mcp-Protocol-Version": "2099-01-01"})
        expect(status == 400 and "this server speaks" in answer["error"]["message"] and "2025-11-25" in answer["error"]["message"],
               f"initialize naming a revision the server does not speak: {status} {answer}")
        # Both kinds named by wildcards are accepted.
        status, _ = raw_post(url, json.dumps(INITIALIZE).encode(), {"Accept": "application/*, text/*"})
        expect(status == 200, f"Accept: application/*, text/*: {status}")
        # A body announced past the limit is refused at once, unsent.
        host = url.split("//", 1)[1].split("/", 1)[0]
        started = time.time()
        status, text = raw_http(
            url,
            f"POST /mcp HTTP/1.1\r\nHost: {host}\r\n{AUTH_LINE}Content-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\nContent-Length: 100000000000\r\nConnection: close\r\n\r\n",
        )
        expect(status == 413 and time.time() - started < 5, f"a huge announced body: {status} after {time.time() - started:.1f}s")
        expect(json.loads(text)["error"]["code"] == -32600, f"413 body: {text}")

        # Regression: a call whose client went away was killed when its
        # session went idle; it runs on (the client may resume it), and
        # keeps the session open.
        late = fx.ws / "late.txt"
        body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                           "params": {"name": "bash", "arguments": {"command": f"sleep 2.5; echo done > {late}"}}}).encode()
        with socket.create_connection((host.rsplit(":", 1)[0], int(host.rsplit(":", 1)[1]))) as s:
            s.sendall(
                (f"POST /mcp HTTP/1.1\r\nHost: {host}\r\n{AUTH_LINE}Content-Type: application/json\r\n"
                 f"Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n"
                 f"Mcp-Protocol-Version: 2025-11-25\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
            )
            s.recv(1024)
        deadline = time.time() + 15
        while not late.exists() and time.time() < deadline:
            await anyio.sleep(0.1)
        expect(late.exists(), "the call was stopped when its client went away")


async def http_in_flight(fx: Fixture) -> None:
    """A session holds a bounded number of requests in flight, and bytes of
    them: past either, 429 with Retry-After; answered requests free their
    place. (Regression: a client could queue calls behind a slow one without
    end, and the server held every request's body meanwhile.)"""
    with HttpServer(fx, ["--yes", "--set", "executor.max_parallel=1"]) as url:
        session = open_and_call(url)
        headers = {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}
        results: dict[int, tuple[int, str]] = {}

        def send(n: int, name: str, arguments: dict, pad: int = 0) -> tuple[int, dict | str]:
            params = {"name": name, "arguments": arguments}
            if pad:
                params["_meta"] = {"pad": "x" * pad}
            body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}).encode()
            h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers}
            req = urllib.request.Request(url, data=body, headers=h, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=60) as resp:
                    return resp.status, resp.read().decode()
            except urllib.error.HTTPError as e:
                return e.code, {"retry": e.headers.get("Retry-After"), **json.loads(e.read().decode())}

        def in_background(n: int, *args, **kw) -> threading.Thread:
            t = threading.Thread(target=lambda: results.__setitem__(n, send(n, *args, **kw)))
            t.start()
            time.sleep(0.02)
            return t

        calc = {"expression": "6*7"}
        # The only call that may run holds the others back until `go`.
        go = fx.ws / "go"
        threads = [in_background(100, "bash", {"command": f"while [ ! -e {go} ]; do sleep 0.05; done; echo slept"})]

        def refused(among: range, wait: float = 20) -> list[int]:
            """Waits until one of `among` is refused; those refused."""
            deadline = time.time() + wait
            while time.time() < deadline:
                out = [n for n in among if n in results and results[n][0] == 429]
                if out:
                    return out
                time.sleep(0.02)
            return []

        # Three requests of 3.5 MB: two are taken, the third is refused.
        pad = 3_500_000
        threads += [in_background(n, "calculator", calc, pad) for n in (101, 102, 103)]
        big = refused(range(101, 104))
        expect(len(big) == 1, f"one of three 3.5 MB requests refused: {big}")
        status, answer = results[big[0]]
        expect(answer.get("retry") == "1" and answer.get("id") == big[0] and "KiB of them" in answer["error"]["message"],
               f"the bytes refusal says why: {str(answer)[:300]}")
        # Then small ones, until the session holds as many as it may.
        n = 104
        while not refused(range(104, n), 0.1) and n < 150:
            threads.append(in_background(n, "calculator", calc))
            n += 1
        small = refused(range(104, n))
        expect(len(small) == 1, f"one small request refused: {small}")
        answer = results[small[0]][1]
        expect("32 not answered yet" in answer["error"]["message"] and answer.get("retry") == "1",
               f"the count refusal says why: {answer}")
        go.touch()
        for t in threads:
            t.join(60)
        taken = {k: v for k, v in results.items() if v[0] != 429}
        expect(len(taken) == 32 and all(code == 200 for code, _ in taken.values()),
               f"32 requests taken, each answered: {sorted((k, c) for k, (c, _) in results.items())}")
        expect("slept" in results[100][1], f"the slow call: {results[100]}")
        status, text = send(300, "calculator", calc, pad)
        expect(status == 200 and "42" in text, f"once answered, requests are taken again: {status} {str(text)[:300]}")


def sse_events(sock: socket.socket, until: str, wait: float = 20) -> list[tuple[str | None, str]]:
    """Events (id, data) read from an SSE answer on `sock` until one whose
    data holds `until`."""
    sock.settimeout(wait)
    buf, events = b"", []
    while True:
        while b"\n\n" in buf:
            raw, buf = buf.split(b"\n\n", 1)
            eid, data = None, []
            for line in raw.decode(errors="replace").splitlines():
                if line.startswith("id:"):
                    eid = line[3:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
            events.append((eid, "\n".join(data)))
            if until in events[-1][1]:
                return events
        chunk = sock.recv(65536)
        if not chunk:
            return events
        buf += chunk.replace(b"\r\n", b"\n")


async def http_resume(fx: Fixture) -> None:
    """A client that resumes a call's stream (`Last-Event-ID`) gets the events
    after the last one it saw, not that one again, then the result."""
    with HttpServer(fx, ["--yes"]) as url:
        session = open_and_call(url)
        host = url.split("//", 1)[1].split("/", 1)[0]
        addr = (host.rsplit(":", 1)[0], int(host.rsplit(":", 1)[1]))
        headers = (f"Host: {host}\r\n{AUTH_LINE}Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n"
                   "Mcp-Protocol-Version: 2025-11-25\r\n")

        def call_then_leave(id: int, command: str, until: str) -> str:
            """POST a bash call, read its stream until `until`, hang up; the
            id of the last event read."""
            body = json.dumps({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "bash", "arguments": {"command": command}, "_meta": {"progressToken": f"p{id}"}}}).encode()
            with socket.create_connection(addr) as s:
                s.sendall(f"POST /mcp HTTP/1.1\r\n{headers}Content-Type: application/json\r\n"
                          f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                seen = sse_events(s, until)
            expect(seen and seen[-1][0], f"the call's events: {seen}")
            return seen[-1][0]

        def resume(last: str, until: str, extra: str = "") -> list[tuple[str | None, str]]:
            with socket.create_connection(addr) as s:
                s.sendall(f"GET /mcp HTTP/1.1\r\n{headers}Last-Event-ID: {last}\r\n{extra}\r\n".encode())
                return sse_events(s, until, wait=10)

        last = call_then_leave(5, "echo one; sleep 1; echo two; sleep 1; echo three", "one")
        resumed = resume(last, "exit code")
        ids = [e for e, _ in resumed if e]
        expect(last not in ids, f"the last event seen came again: {last} in {resumed}")
        messages = [d for _, d in resumed if "notifications/progress" in d]
        expect(
            not any('"one' in m for m in messages) and any('"two' in m for m in messages),
            f"resumed: {resumed}",
        )
        expect('"id":5,"result"' in resumed[-1][1], f"the result after resuming: {resumed[-1]}")
        # Regression: a call that finished while its client was away had its
        # result dropped with its stream (the SDK forgets a call's stream once
        # its result is sent), and the resumed stream came back empty.
        last = call_then_leave(6, "echo early; sleep 1; echo done", "early")
        await anyio.sleep(2)
        resumed = resume(last, '"id":6,"result"')
        expect(resumed and '"id":6,"result"' in resumed[-1][1] and "done" in resumed[-1][1],
               f"the result of a call that finished while its client was away: {resumed}")
        # An id that names no stream of this server: an empty stream.
        nothing = resume("0/0", "jsonrpc", "Connection: close\r\n")
        expect(not [d for _, d in nothing if d], f"an unknown event id: {nothing}")
        # Regression: with no session, the SDK replayed any stream whose
        # event id it was given (a deleted session's too).
        status, text = raw_http(url, f"GET /mcp HTTP/1.1\r\nHost: {host}\r\n{AUTH_LINE}Accept: text/event-stream\r\n"
                                     f"Mcp-Protocol-Version: 2025-11-25\r\nLast-Event-ID: {last}\r\n"
                                     "Connection: close\r\n\r\n")
        expect(status == 400 and "within its session" in text and '"id":6' not in text,
               f"a resume without a session: {status} {text[:300]}")

        # What the server sends on the standalone stream before the client
        # opens it is there when it does (a log message about the client's
        # roots, sent during a call, with no GET stream open).
        init = {**INITIALIZE, "params": {**INITIALIZE["params"], "capabilities": {"roots": {}}}}
        status, _, other = rpc(url, init)
        rpc(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, other)
        rpc(url, {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "info"}}, other)
        other_headers = headers.replace(session, other)
        body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                           "params": {"name": "calculator", "arguments": {"expression": "2+2"}}}).encode()
        with socket.create_connection(addr) as s:
            s.sendall(f"POST /mcp HTTP/1.1\r\n{other_headers}Content-Type: application/json\r\n"
                      f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            asked = sse_events(s, "roots/list")
            request = json.loads(asked[-1][1])
            expect(request.get("method") == "roots/list", f"roots asked: {asked}")
            rpc(url, {"jsonrpc": "2.0", "id": request["id"], "result": {"roots": [{"uri": f"file://{fx.ws}"}]}}, other)
            answered = sse_events(s, '"id":3,')
            expect('"text":"4"' in answered[-1][1], f"the call: {answered}")
        with socket.create_connection(addr) as s:
            s.sendall(f"GET /mcp HTTP/1.1\r\n{other_headers}\r\n".encode())
            logged = sse_events(s, "narrow the write roots", wait=10)
        expect(logged and "narrow the write roots" in logged[-1][1], f"the standalone stream: {logged}")
        # Another session cannot resume it.
        with socket.create_connection(addr) as s:
            s.sendall(f"GET /mcp HTTP/1.1\r\n{headers}Last-Event-ID: {logged[-1][0]}\r\nConnection: close\r\n\r\n".encode())
            stolen = sse_events(s, "narrow", wait=10)
        expect(not any("narrow" in d for _, d in stolen), f"another session's standalone stream: {stolen}")
        # Nor a call's stream of another session, though it was sent its id:
        # the stream belongs to the session its call answered.
        last = call_then_leave(7, "echo mine; sleep 1; echo secret", "mine")
        with socket.create_connection(addr) as s:
            s.sendall(f"GET /mcp HTTP/1.1\r\n{other_headers}Last-Event-ID: {last}\r\nConnection: close\r\n\r\n".encode())
            stolen = sse_events(s, "secret", wait=10)
        expect(not any("secret" in d for _, d in stolen), f"another session's call stream: {stolen}")
        resumed = resume(last, '"id":7,"result"')
        expect(resumed and "secret" in resumed[-1][1], f"the call's own session resuming it: {resumed}")
