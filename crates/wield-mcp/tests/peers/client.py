"""The official Python MCP SDK as a client of `wield mcp serve`.

Usage: client.py --wield PATH --transport stdio|http SCENARIO [SCENARIO ...]

Each scenario builds its own fixture in a fresh temporary directory:
base/ws (the workspace), base/outside (a secret), base/ws-evil (a sibling
that shares the workspace's name as a string prefix), base/home and base/tmp
(HOME and TMPDIR, so neither holds the other directories), then starts wield
on it and asserts what an MCP client sees. Any failed expectation raises;
the script exits non-zero naming the scenario.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

SECRET = "TOP-SECRET-CONTENT"


class Fixture:
    def __init__(self, wield: str, transport: str):
        self.wield = wield
        self.transport = transport
        self.base = Path(tempfile.mkdtemp(prefix="wield-mcp-")).resolve()
        for d in ["ws/sub", "outside", "ws-evil", "home/.config", "tmp"]:
            (self.base / d).mkdir(parents=True, exist_ok=True)
        self.ws = self.base / "ws"
        (self.base / "outside/secret.txt").write_text(SECRET)
        (self.base / "ws-evil/secret.txt").write_text(SECRET)
        (self.ws / "a.txt").write_text("hello from a\nthe needle is here\n")
        (self.ws / "sub/b.txt").write_text("another needle\n")
        os.symlink(self.base / "outside", self.ws / "link")
        self.config_lines: list[str] = []

    def cleanup(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    def config(self, text: str) -> None:
        (self.ws / ".wield").mkdir(exist_ok=True)
        (self.ws / ".wield/config.toml").write_text(text)

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("WIELD_") or k in ("WIELD_DEBUG_TOOLS",)
        }
        env.update(
            {
                "HOME": str(self.base / "home"),
                "XDG_CONFIG_HOME": str(self.base / "home/.config"),
                "TMPDIR": str(self.base / "tmp"),
                "RUST_BACKTRACE": "0",
                "WIELD_DEBUG_TOOLS": "1",
            }
        )
        env.update(extra or {})
        return env

    def args(self, flags: list[str]) -> list[str]:
        return ["-C", str(self.ws), *flags, "mcp", "serve"]

    @asynccontextmanager
    async def session(self, flags: list[str] | None = None, **callbacks):
        flags = flags or []
        if self.transport == "stdio":
            params = StdioServerParameters(command=self.wield, args=self.args(flags), env=self.env())
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write, **callbacks) as s:
                    await s.initialize()
                    yield s
        else:
            with HttpServer(self, flags) as url:
                async with streamable_http_client(url) as (read, write):
                    async with ClientSession(read, write, **callbacks) as s:
                        await s.initialize()
                        yield s


class HttpServer:
    """`wield mcp serve --http 127.0.0.1:0`; yields the /mcp URL."""

    def __init__(
        self,
        fx: Fixture,
        flags: list[str],
        extra: list[str] | None = None,
        env: dict | None = None,
        bind: str = "127.0.0.1:0",
    ):
        self.fx = fx
        self.cmd = [fx.wield, *fx.args(flags), "--http", bind, *(extra or [])]
        self.env = fx.env(env)
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> str:
        self.proc = subprocess.Popen(
            self.cmd, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        deadline = time.time() + 20
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            if "serving MCP on " in line:
                url = line.split("serving MCP on ", 1)[1].split()[0]
                return url
        raise AssertionError(f"wield did not start an HTTP server: {self.proc.stderr.read()}")

    def __exit__(self, *exc) -> None:
        assert self.proc is not None
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


async def call(s: ClientSession, name: str, args: dict, **kw) -> types.CallToolResult:
    return await s.call_tool(name, args, **kw)


# --- scenarios ----------------------------------------------------------------


async def tools(fx: Fixture) -> None:
    """initialize, list tools (every input schema an object), call calculator, read, grep."""
    async with fx.session() as s:
        init = s.initialize_result
        expect(init.server_info.name == "wield", f"server name: {init.server_info}")
        expect(init.protocol_version == "2025-11-25", f"protocol: {init.protocol_version}")
        listed = (await s.list_tools()).tools
        names = {t.name for t in listed}
        for needed in ["calculator", "read", "grep", "write", "edit"]:
            expect(needed in names, f"{needed} missing from {sorted(names)}")
        for t in listed:
            expect(t.input_schema.get("type") == "object", f"{t.name}: inputSchema {t.input_schema}")
            expect(bool(t.title), f"{t.name} has no title")
            expect(t.annotations is not None and t.annotations.read_only_hint is not None, f"{t.name}: {t.annotations}")
        read = next(t for t in listed if t.name == "read")
        a = read.annotations
        expect(a.read_only_hint is True and a.destructive_hint is False, str(a))
        expect(a.idempotent_hint is True and a.open_world_hint is False, str(a))
        # Optional arguments are optional to a client, though the strict
        # schema models see requires them all (as nullable).
        expect(read.input_schema.get("required") == ["path"], f"read requires {read.input_schema.get('required')}")
        expect("offset" in read.input_schema["properties"], f"read: {read.input_schema}")
        write = next(t for t in listed if t.name == "write")
        a = write.annotations
        expect(a.read_only_hint is False and a.destructive_hint is True, str(a))
        expect(a.idempotent_hint is False and a.open_world_hint is False, str(a))
        a = next(t for t in listed if t.name == "mkdir").annotations
        expect(a.read_only_hint is False and a.destructive_hint is False and a.idempotent_hint is True, f"mkdir: {a}")

        r = await call(s, "calculator", {"expression": "2 + 3 * 4"})
        expect(not r.is_error and text_of(r).strip() == "14", f"calculator: {r}")
        r = await call(s, "read", {"path": "a.txt"})
        expect(not r.is_error and "the needle is here" in text_of(r), f"read: {r}")
        r = await call(s, "grep", {"pattern": "needle"})
        t = text_of(r)
        expect(not r.is_error and "a.txt" in t and "b.txt" in t, f"grep: {r}")
        # Arguments that break the schema are a result the model can read.
        r = await call(s, "read", {"nope": 1})
        expect(r.is_error and "path" in text_of(r), f"invalid arguments: {r}")

        # An MCP session is model-driven: read-before-write applies to write,
        # edit and a patch adding over an existing file.
        before = (fx.ws / "sub/b.txt").read_text()
        r = await call(s, "write", {"path": "sub/b.txt", "content": "clobbered"})
        expect(r.is_error and "has not been read" in text_of(r), f"write before read: {r}")
        r = await call(s, "edit", {"path": "sub/b.txt", "old_text": "needle", "new_text": "pin"})
        expect(r.is_error and "has not been read" in text_of(r), f"edit before read: {r}")
        add = "*** Begin Patch\n*** Add File: sub/b.txt\n+clobbered\n*** End Patch"
        r = await call(s, "patch", {"patch": add})
        expect(r.is_error and "has not been read" in text_of(r), f"patch add before read: {r}")
        expect((fx.ws / "sub/b.txt").read_text() == before, "sub/b.txt changed before it was read")
        r = await call(s, "read", {"path": "sub/b.txt"})
        expect(not r.is_error, f"read sub/b.txt: {r}")
        r = await call(s, "patch", {"patch": add})
        expect(not r.is_error and "A sub/b.txt" in text_of(r), f"patch add after read: {r}")
        # The patch's own write counts as read: an edit may follow.
        r = await call(s, "edit", {"path": "sub/b.txt", "old_text": "clobbered", "new_text": "fine"})
        expect(not r.is_error and (fx.ws / "sub/b.txt").read_text() == "fine\n", f"edit after patch: {r}")


async def denied(fx: Fixture) -> None:
    """Denied calls and calls needing approval are isError results, never protocol errors."""
    fx.config('[approval]\ndeny = ["write"]\n')
    async with fx.session() as s:
        r = await call(s, "write", {"path": "new.txt", "content": "x"})
        expect(r.is_error and "denied" in text_of(r), f"deny rule: {r}")
        expect(not (fx.ws / "new.txt").exists(), "a denied write wrote")
        # debug_echo is not pre-approved; this client cannot show prompts.
        r = await call(s, "debug_echo", {"command": "hi"})
        t = text_of(r)
        expect(r.is_error and "wield approvals add" in t and "--yes" in t, f"needs approval: {r}")
    async with fx.session(["--yes"]) as s:
        r = await call(s, "debug_echo", {"command": "hi"})
        expect(not r.is_error and "hi" in text_of(r), f"--yes: {r}")
        r = await call(s, "write", {"path": "new.txt", "content": "x"})
        expect(r.is_error and "denied" in text_of(r), f"deny wins over --yes: {r}")


async def elicit(fx: Fixture) -> None:
    """Approval through elicitation: accept runs once, decline carries the user's words."""
    asked: list[str] = []
    answers: list[types.ElicitResult] = []

    async def on_elicit(ctx, params):
        asked.append(params.message)
        if not answers:
            # Over HTTP the SDK resumes a stream it closed, and the server
            # replays the events it had sent on it: the withdrawn form of
            # the cancelled call below comes again. Nothing waits for it.
            return types.ElicitResult(action="cancel")
        answer = answers.pop(0)
        return await answer() if callable(answer) else answer

    async with fx.session(elicitation_callback=on_elicit) as s:
        answers.append(types.ElicitResult(action="accept", content={}))
        r = await call(s, "debug_echo", {"command": "first"})
        expect(not r.is_error and "first" in text_of(r), f"accepted: {r}")
        expect(len(asked) == 1 and "debug_echo" in asked[0] and "first" in asked[0], f"prompt: {asked}")
        expect(asked[0].count("debug_echo") == 1, f"prompt repeats the tool: {asked}")
        # Accepted once, approved once: the same call asks again.
        answers.append(types.ElicitResult(action="accept", content={}))
        r = await call(s, "debug_echo", {"command": "first"})
        expect(not r.is_error and len(asked) == 2 and "first" in asked[1], f"approve once held on: {asked}")

        answers.append(types.ElicitResult(action="decline", content={"reason": "use the read tool instead"}))
        r = await call(s, "debug_echo", {"command": "second"})
        expect(r.is_error and "use the read tool instead" in text_of(r), f"declined: {r}")

        answers.append(types.ElicitResult(action="cancel"))
        r = await call(s, "debug_echo", {"command": "third"})
        expect(r.is_error and "dismissed" in text_of(r), f"cancelled: {r}")

        # Accepting once approved once: the next call asks again.
        answers.append(types.ElicitResult(action="accept", content={"remember": True}))
        r = await call(s, "debug_echo", {"command": "fourth"})
        expect(not r.is_error, f"remembered accept: {r}")
        n = len(asked)
        # The remembered pattern is derived like bash's: the first word.
        r = await call(s, "debug_echo", {"command": "fourth again"})
        expect(not r.is_error and len(asked) == n, f"remember for the session did not hold: {r}, {asked}")
        # Pre-approved tools never ask.
        r = await call(s, "read", {"path": "a.txt"})
        expect(not r.is_error and len(asked) == n, "read asked for approval")

    # A call cancelled while its approval form is open never runs, however
    # the user answers later, and the form is withdrawn
    # (notifications/cancelled for the elicitation request).
    opened, withdrawn = anyio.Event(), anyio.Event()

    async def late_accept():
        opened.set()
        try:
            await anyio.sleep(3)
        except anyio.get_cancelled_exc_class():
            withdrawn.set()
            raise
        return types.ElicitResult(action="accept", content={})

    audit = fx.base / "audit.jsonl"
    flags = ["--set", 'approval.auto_approve=["$readonly"]', "--audit", str(audit)]
    async with fx.session(flags, elicitation_callback=on_elicit) as s:
        answers.append(late_accept)

        async def run():
            await call(s, "write", {"path": "late.txt", "content": "x"})

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            with anyio.fail_after(10):
                await opened.wait()
            tg.cancel_scope.cancel()
        with anyio.fail_after(5):
            await withdrawn.wait()
        await anyio.sleep(3.5)
        expect(not (fx.ws / "late.txt").exists(), "a call cancelled during its approval ran")
        r = await call(s, "calculator", {"expression": "1+1"})
        expect(not r.is_error, f"session after a cancelled approval: {r}")
        lines = [json.loads(x) for x in audit.read_text().splitlines()]
        write = [x for x in lines if x["tool"] == "write"]
        expect(len(write) == 1 and write[0]["decision"] == "cancelled", f"audit: {lines}")


async def policy(fx: Fixture) -> None:
    """tools/list is what the whole policy pipeline leaves; deferred tools appear once loaded."""
    fx.config('[tools]\ndisabled = ["ls"]\ndeferred = ["glob"]\n')
    changed = anyio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with fx.session(["--profile", "coding", "--exclude-tools", "grep"], message_handler=on_message) as s:
        names = {t.name for t in (await s.list_tools()).tools}
        for gone in ["grep", "ls", "glob"]:
            expect(gone not in names, f"{gone} listed: {sorted(names)}")
        for kept in ["read", "write", "bash", "load_tools"]:
            expect(kept in names, f"{kept} missing: {sorted(names)}")
        # A hidden tool is not callable either.
        r = await call(s, "grep", {"pattern": "needle"})
        expect(r.is_error and "not available" in text_of(r), f"hidden grep: {r}")
        r = await call(s, "glob", {"pattern": "*.txt"})
        expect(r.is_error, f"deferred glob before load_tools: {r}")
        r = await call(s, "load_tools", {"tools": ["glob"]})
        expect(not r.is_error, f"load_tools: {r}")
        with anyio.fail_after(5):
            await changed.wait()
        names = {t.name for t in (await s.list_tools()).tools}
        expect("glob" in names and "grep" not in names, f"after load_tools: {sorted(names)}")
        r = await call(s, "glob", {"pattern": "**/*.txt"})
        expect(not r.is_error and "b.txt" in text_of(r), f"loaded glob: {r}")
    # The minimal profile leaves read-only file tools only.
    async with fx.session(["--profile", "minimal"]) as s:
        names = {t.name for t in (await s.list_tools()).tools}
        expect("read" in names and "write" not in names and "bash" not in names, f"minimal: {sorted(names)}")


async def hooks_and_timeouts(fx: Fixture) -> None:
    """User hooks and per-call timeouts apply to MCP calls as to `wield call`."""
    log = fx.base / "hook.json"
    fx.config(
        f"""[hooks.guard]
event = "pre"
matcher = "^write$"
files = "*.lock"
command = "echo 'lock files are generated' >&2; exit 2"

[hooks.mark]
event = "post"
matcher = "^calculator$"
command = 'cat > "{log}"'

[bash]
timeout = "1s"
"""
    )
    async with fx.session(["--yes"]) as s:
        r = await call(s, "write", {"path": "deps.lock", "content": "x"})
        expect(r.is_error and "lock files are generated" in text_of(r), f"pre hook: {r}")
        expect(not (fx.ws / "deps.lock").exists(), "a blocked write wrote")
        r = await call(s, "calculator", {"expression": "6*7"})
        expect(not r.is_error, f"calculator: {r}")
        seen = json.loads(log.read_text())
        expect(seen["hook_event"] == "post" and seen["tool"]["name"] == "calculator", f"post hook input: {seen}")
        expect("42" in json.dumps(seen["tool"].get("output")), f"post hook output: {seen}")
        started = time.time()
        r = await call(s, "bash", {"command": "sleep 20"})
        expect(r.is_error and "timed out after 1s" in text_of(r), f"bash timeout: {r}")
        expect(time.time() - started < 10, "the timeout did not cut the call short")


async def escapes(fx: Fixture) -> None:
    """The reference filesystem server's 2025 CVE cases, through MCP: all refused."""
    outside = fx.base / "outside"
    evil = fx.base / "ws-evil"
    reads = [
        "../outside/secret.txt",
        str(outside / "secret.txt"),
        "link/secret.txt",
        str(evil / "secret.txt"),
        "sub/../../outside/secret.txt",
        str(fx.ws) + "/../outside/secret.txt",
    ]
    async with fx.session(["--yes"]) as s:
        for p in reads:
            r = await call(s, "read", {"path": p})
            expect(r.is_error, f"read {p} was allowed: {r}")
            expect(SECRET not in text_of(r), f"read {p} leaked the secret")
        for p in ["../outside/new.txt", str(outside / "new.txt"), "link/new.txt", str(evil / "new.txt")]:
            r = await call(s, "write", {"path": p, "content": "pwned"})
            expect(r.is_error, f"write {p} was allowed: {r}")
        for p in ["../outside", str(outside), "link", str(evil)]:
            r = await call(s, "grep", {"pattern": "TOP", "path": p})
            expect(r.is_error or SECRET not in text_of(r), f"grep {p} leaked: {r}")
            r = await call(s, "ls", {"path": p})
            expect(r.is_error, f"ls {p} was allowed: {r}")
        expect(sorted(os.listdir(outside)) == ["secret.txt"], f"outside changed: {os.listdir(outside)}")
        expect(sorted(os.listdir(evil)) == ["secret.txt"], f"ws-evil changed: {os.listdir(evil)}")
        # Inside the workspace everything works.
        r = await call(s, "write", {"path": "sub/ok.txt", "content": "fine"})
        expect(not r.is_error and (fx.ws / "sub/ok.txt").read_text() == "fine", f"inside write: {r}")


def roots_callback(paths: list[Path]):
    """Answers roots/list with `paths` as they are when asked (the caller may change the list)."""

    async def list_roots(ctx):
        return types.ListRootsResult(roots=[types.Root(uri=p.as_uri()) for p in paths])

    return list_roots


async def roots(fx: Fixture) -> None:
    """Client roots narrow the write roots and never widen them."""
    async with fx.session(["--yes"], list_roots_callback=roots_callback([fx.ws / "sub"])) as s:
        r = await call(s, "write", {"path": "sub/in.txt", "content": "x"})
        expect(not r.is_error, f"write inside the client's root: {r}")
        r = await call(s, "write", {"path": "top.txt", "content": "x"})
        expect(r.is_error and not (fx.ws / "top.txt").exists(), f"write outside the client's root: {r}")
        r = await call(s, "read", {"path": "a.txt"})
        expect(not r.is_error, f"reads are not narrowed: {r}")
        # Commands are narrowed the same way by the sandbox.
        r = await call(s, "bash", {"command": "echo x > sub/by-bash.txt"})
        expect(not r.is_error and (fx.ws / "sub/by-bash.txt").exists(), f"bash inside the client's root: {r}")
        r = await call(s, "bash", {"command": "echo x > top-by-bash.txt"})
        expect(r.is_error and not (fx.ws / "top-by-bash.txt").exists(), f"bash outside the client's root: {r}")
    # The client's roots change: the next call sees the new ones.
    client_roots = [fx.ws / "sub"]
    async with fx.session(["--yes"], list_roots_callback=roots_callback(client_roots)) as s:
        r = await call(s, "write", {"path": "top.txt", "content": "x"})
        expect(r.is_error and not (fx.ws / "top.txt").exists(), f"write outside the client's root: {r}")
        client_roots[:] = [fx.ws]
        await s.send_roots_list_changed()
        deadline = time.time() + 5
        while True:
            r = await call(s, "write", {"path": "top.txt", "content": "x"})
            if not r.is_error or time.time() > deadline:
                break
            await anyio.sleep(0.05)
        expect(not r.is_error and (fx.ws / "top.txt").exists(), f"write after the roots widened to the workspace: {r}")
    # Roots outside the configured ones do not widen anything.
    async with fx.session(["--yes"], list_roots_callback=roots_callback([fx.base / "outside", fx.base])) as s:
        r = await call(s, "write", {"path": str(fx.base / "outside/new.txt"), "content": "x"})
        expect(r.is_error and not (fx.base / "outside/new.txt").exists(), f"a client root widened writes: {r}")
        r = await call(s, "read", {"path": str(fx.base / "outside/secret.txt")})
        expect(r.is_error and SECRET not in text_of(r), f"a client root widened reads: {r}")
        # The workspace lies inside the second root: it stays writable.
        r = await call(s, "write", {"path": "kept.txt", "content": "x"})
        expect(not r.is_error, f"workspace inside a client root: {r}")
    # Roots that all lie outside every write root leave nothing writable, and
    # the refusal says so.
    async with fx.session(["--yes"], list_roots_callback=roots_callback([fx.base / "outside"])) as s:
        r = await call(s, "write", {"path": "nowhere.txt", "content": "x"})
        expect(r.is_error and "there are none" in text_of(r), f"no write roots: {r}")
        expect(not (fx.ws / "nowhere.txt").exists(), "wrote with no write roots")


async def cancel_sleep(fx: Fixture) -> None:
    """notifications/cancelled stops a running call; the session goes on."""
    audit = fx.base / "audit.jsonl"
    async with fx.session(["--yes", "--audit", str(audit)]) as s:
        started = time.time()
        with anyio.move_on_after(1.0):
            await call(s, "debug_sleep", {"seconds": 60})
        expect(time.time() - started < 5, "the call was not abandoned")
        r = await call(s, "calculator", {"expression": "1+1"})
        expect(not r.is_error, f"session after cancel: {r}")
        deadline = time.time() + 10
        lines = []
        while time.time() < deadline:
            lines = [json.loads(x) for x in audit.read_text().splitlines()] if audit.exists() else []
            if any(x["tool"] == "debug_sleep" for x in lines):
                break
            await anyio.sleep(0.1)
        sleep = [x for x in lines if x["tool"] == "debug_sleep"]
        expect(len(sleep) == 1 and sleep[0]["success"] is False, f"audit: {lines}")
        expect("cancel" in (sleep[0].get("error") or ""), f"not recorded as cancelled: {sleep}")
        expect(sleep[0]["duration_ms"] < 10_000, f"ran on after cancel: {sleep}")


async def concurrent_calls(fx: Fixture) -> None:
    """A session runs at most executor.max_parallel calls at once; the rest
    wait their turn (what running calls hold stays bounded)."""
    async with fx.session(["--yes", "--set", "executor.max_parallel=2"]) as s:
        results: list[types.CallToolResult] = []

        async def one() -> None:
            results.append(await call(s, "debug_sleep", {"seconds": 1}))

        started = time.time()
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(one)
        took = time.time() - started
        expect(len(results) == 5 and not any(r.is_error for r in results), f"results: {results}")
        # Three rounds of two: about 3 s, where all at once would take 1 s.
        expect(2.8 < took < 8, f"5 calls of 1 s two at a time took {took:.1f}s")


async def bash_progress(fx: Fixture) -> None:
    """A streaming bash call sends notifications/progress with its output."""
    progress: list[tuple[float, str | None]] = []

    async def on_progress(p, total, message):
        progress.append((p, message))

    async with fx.session(["--yes"]) as s:
        names = {t.name for t in (await s.list_tools()).tools}
        expect("bash" in names, f"no bash tool in {sorted(names)}")
        cmd = "for i in 1 2 3 4; do echo line$i; sleep 0.3; done"
        r = await call(s, "bash", {"command": cmd}, progress_callback=on_progress)
        expect(not r.is_error and "line4" in text_of(r), f"bash: {r}")
        joined = "".join(m or "" for _, m in progress)
        expect(len(progress) >= 2, f"progress notifications: {progress}")
        expect("line1" in joined and "line3" in joined, f"progress messages: {progress}")
        values = [p for p, _ in progress]
        expect(values == sorted(values) and len(set(values)) == len(values), f"progress must grow: {values}")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


async def bash_cancel(fx: Fixture) -> None:
    """Cancelling a long bash call kills its processes."""
    pidfile = fx.ws / "sleep.pid"
    async with fx.session(["--yes"]) as s:
        names = {t.name for t in (await s.list_tools()).tools}
        expect("bash" in names, f"no bash tool in {sorted(names)}")
        cmd = f"sleep 300 & echo $! > {pidfile}; wait"

        async def run():
            await call(s, "bash", {"command": cmd})

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            deadline = time.time() + 15
            while not (pidfile.exists() and pidfile.read_text().strip()) and time.time() < deadline:
                await anyio.sleep(0.05)
            expect(pidfile.exists(), "the command never started")
            pid = int(pidfile.read_text())
            expect(alive(pid), "sleep is not running")
            tg.cancel_scope.cancel()
        deadline = time.time() + 10
        while alive(pid) and time.time() < deadline:
            await anyio.sleep(0.05)
        expect(not alive(pid), f"sleep {pid} survived the cancellation")
        r = await call(s, "calculator", {"expression": "2*21"})
        expect(not r.is_error and "42" in text_of(r), f"session after cancel: {r}")


# --- HTTP only ----------------------------------------------------------------


def post(url: str, headers: dict[str, str] | None = None) -> int:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        }
    ).encode()
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
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
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
    fg, bg = fx.ws / "fg.pid", fx.ws / "bg.pid"
    with HttpServer(fx, ["--yes"]) as url:
        session = open_and_call(url)

        def call_tool(n: int, name: str, command: str) -> tuple[int, str, str | None]:
            body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": {"command": command}}}
            return rpc(url, body, session)

        status, text, _ = call_tool(3, "process_start", f"sleep 301 & echo $! > {bg}; wait")
        expect(status == 200 and "started p1" in text, f"process_start: {status} {text[:300]}")
        running = threading.Thread(target=lambda: _ignore(lambda: call_tool(4, "bash", f"sleep 302 & echo $! > {fg}; wait")))
        running.daemon = True
        running.start()
        deadline = time.time() + 15
        while not (fg.exists() and fg.read_text().strip() and bg.exists() and bg.read_text().strip()):
            expect(time.time() < deadline, "the commands never started")
            await anyio.sleep(0.05)
        pids = [int(fg.read_text()), int(bg.read_text())]
        expect(all(alive(p) for p in pids), "the commands are not running")
        started = time.time()
        status = delete_session(url, session)
        expect(status == 200, f"DELETE: {status} after {time.time() - started:.1f}s")
        deadline = time.time() + 30
        while any(alive(p) for p in pids) and time.time() < deadline:
            await anyio.sleep(0.1)
        left = [p for p in pids if alive(p)]
        expect(not left, f"processes outlived their session by {time.time() - started:.1f}s: {left}")
        status = delete_session(url, session)
        expect(status == 404, f"a deleted session is still known: {status}")


def _ignore(f) -> None:
    try:
        f()
    except Exception:  # noqa: BLE001 - the call's connection ends with its session
        pass


def raw_post(url: str, data: bytes) -> tuple[int, dict]:
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    req = urllib.request.Request(url, data=data, headers=h, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, {}
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
    # A non-loopback address without a token is refused at start.
    p = subprocess.run(
        [fx.wield, *fx.args([]), "--http", "0.0.0.0:0"], env=fx.env(), capture_output=True, text=True, timeout=20
    )
    expect(p.returncode == 2 and "token" in p.stderr, f"non-loopback without token: {p.returncode} {p.stderr}")
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
            async with streamable_http_client(url) as (read, write):
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
                async with streamable_http_client(url) as (read, write):
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
    # A call that runs longer than the idle time keeps its session open.
    with HttpServer(fx, ["--yes"], ["--session-idle", "1s"]) as url:
        async with streamable_http_client(url) as (read, write):
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


# --- wield's client ------------------------------------------------------------


def child_pids(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().split(") ", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(entry))
            except (FileNotFoundError, IndexError, ValueError):
                pass
    return out


async def everything_restart(fx: Fixture) -> None:
    """wield bridging server-everything: a crashed server is restarted on next use."""
    node = os.environ["WIELD_TEST_NODE"]
    everything = os.environ["WIELD_TEST_EVERYTHING"]
    fx.config(
        f'[mcp.servers.everything]\ncommand = "{node}"\nargs = ["{everything}"]\ntimeout = "30s"\n'
        '[approval]\nauto_approve = ["$standard", "mcp__everything__*"]\n'
    )
    server = HttpServer(fx, [])
    with server as url:
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                listed = {t.name: t for t in (await s.list_tools()).tools}
                names = set(listed)
                expect("mcp__everything__echo" in names, f"bridged tools: {sorted(names)}")
                # The server's open-world hint passes through; its read-only
                # hint is not trusted (a bridged tool may change anything).
                a = listed["mcp__everything__echo"].annotations
                expect(a.open_world_hint is False and a.read_only_hint is False, f"echo: {a}")
                a = listed["mcp__everything__gzip-file-as-resource"].annotations
                expect(a.open_world_hint is True, f"gzip-file-as-resource: {a}")
                r = await call(s, "mcp__everything__echo", {"message": "one"})
                expect(not r.is_error and "one" in text_of(r), f"echo: {r}")
                wield_pid = server.proc.pid
                kids = [p for p in child_pids(wield_pid) if "node" in open(f"/proc/{p}/cmdline").read()]
                expect(len(kids) == 1, f"server-everything process: {kids}")
                os.kill(kids[0], 9)
                deadline = time.time() + 5
                while alive(kids[0]) and time.time() < deadline:
                    await anyio.sleep(0.05)
                # "Next use" comes after the crash, once wield's end of the
                # pipe has seen it close.
                await anyio.sleep(0.3)
                r = await call(s, "mcp__everything__echo", {"message": "two"})
                expect(not r.is_error and "two" in text_of(r), f"echo after the crash: {r}")
                kids2 = [p for p in child_pids(wield_pid) if "node" in open(f"/proc/{p}/cmdline").read()]
                expect(len(kids2) == 1 and kids2 != kids, f"restarted process: {kids} -> {kids2}")


async def bridged_requests(fx: Fixture) -> None:
    """Over stdio, a bridged server's sampling and elicitation reach this client."""
    peer = Path(__file__).resolve().parent / "server.py"
    fx.config(
        f'[mcp.servers.peer]\ncommand = "{sys.executable}"\nargs = ["{peer}"]\ntimeout = "30s"\n'
        '[approval]\nauto_approve = ["$standard", "mcp__peer__*"]\n'
    )
    asked: list[str] = []

    async def on_elicit(ctx, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": "Ada"})

    async def on_sample(ctx, params):
        asked.append(params.messages[0].content.text)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="forty-two"), model="client-model"
        )

    async with fx.session(elicitation_callback=on_elicit, sampling_callback=on_sample) as s:
        r = await call(s, "mcp__peer__ask_user", {"question": "Your name?"})
        expect(not r.is_error and text_of(r) == 'user accept: {"answer": "Ada"}', f"ask_user: {r}")
        r = await call(s, "mcp__peer__ask_model", {"prompt": "six times seven?"})
        expect(not r.is_error and text_of(r) == "model said: forty-two", f"ask_model: {r}")
        expect(asked == ["Your name?", "six times seven?"], f"asked: {asked}")
        # A bridged tool's output schema and structured content pass through.
        primes = next(t for t in (await s.list_tools()).tools if t.name == "mcp__peer__primes")
        expect(primes.output_schema is not None and "result" in primes.output_schema.get("properties", {}), f"{primes}")
        r = await call(s, "mcp__peer__primes", {"below": 12})
        expect(r.structured_content == {"result": [2, 3, 5, 7, 11]}, f"structured content: {r}")
    # A client that offers neither: the server hears so.
    async with fx.session() as s:
        r = await call(s, "mcp__peer__ask_user", {"question": "Your name?"})
        expect("client error" in text_of(r) and "not supported" in text_of(r), f"ask_user, no elicitation: {r}")
        r = await call(s, "mcp__peer__ask_model", {"prompt": "hi"})
        expect("client error" in text_of(r) and "not supported" in text_of(r), f"ask_model, no sampling: {r}")


async def bridged_list_changed(fx: Fixture) -> None:
    """Bridged servers whose tools change reach this client: a server's
    notifications/tools/list_changed, and a server that was down at start and
    comes up later, each end in notifications/tools/list_changed here and the
    new tools listed and callable."""
    peer = Path(__file__).resolve().parent / "server.py"
    flag = fx.base / "late-is-ready"
    fx.config(
        f'[mcp.servers.peer]\ncommand = "{sys.executable}"\nargs = ["{peer}"]\ntimeout = "30s"\n'
        f'[mcp.servers.late]\ncommand = "{sys.executable}"\nargs = ["{peer}"]\ntimeout = "30s"\n'
        f'env = {{ PEER_NEEDS = "{flag}" }}\n'
        '[approval]\nauto_approve = ["$standard", "mcp__peer__*", "mcp__late__*"]\n'
    )
    changes = [0]
    changed = anyio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changes[0] += 1
            changed.set()

    async def names(s: ClientSession) -> set[str]:
        return {t.name for t in (await s.list_tools()).tools}

    async with fx.session(message_handler=on_message) as s:
        listed = await names(s)
        expect("mcp__peer__where" in listed and not any(n.startswith("mcp__late__") for n in listed), f"{listed}")
        r = await call(s, "mcp__peer__add_tool", {"name": "fresh"})
        expect(not r.is_error and text_of(r) == "added fresh", f"add_tool: {r}")
        with anyio.fail_after(10):
            await changed.wait()
        expect("mcp__peer__fresh" in await names(s), "the new tool is not listed")
        r = await call(s, "mcp__peer__fresh", {})
        expect(not r.is_error and text_of(r) == "I am fresh", f"the new tool: {r}")

        # The server that was down comes up: tried again in the background.
        changed = anyio.Event()
        flag.write_text("ready")
        with anyio.fail_after(20):
            while "mcp__late__where" not in await names(s):
                await changed.wait()
                changed = anyio.Event()
        r = await call(s, "mcp__late__where", {})
        expect(not r.is_error and "cwd" in text_of(r), f"the late server: {r}")


SCENARIOS = {
    f.__name__: f
    for f in [
        tools,
        denied,
        elicit,
        policy,
        hooks_and_timeouts,
        escapes,
        roots,
        cancel_sleep,
        concurrent_calls,
        bash_progress,
        bash_cancel,
        http_security,
        http_sessions,
        http_delete_mid_call,
        everything_restart,
        bridged_requests,
        bridged_list_changed,
    ]
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wield", required=True)
    ap.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    ap.add_argument("scenarios", nargs="+")
    a = ap.parse_args()
    failed = 0
    for name in a.scenarios:
        fx = Fixture(a.wield, a.transport)
        started = time.time()
        try:
            anyio.run(SCENARIOS[name], fx)
            print(f"ok   {name} [{a.transport}] {time.time() - started:.1f}s")
        except BaseException:  # noqa: BLE001 - report every failure, then go on
            failed += 1
            print(f"FAIL {name} [{a.transport}]")
            traceback.print_exc(file=sys.stdout)
        finally:
            fx.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
