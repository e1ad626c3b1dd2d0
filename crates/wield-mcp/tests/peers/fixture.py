"""What every scenario of `client.py` builds on: a fixture directory and a
`wield mcp serve` session over stdio or HTTP, on the official Python MCP SDK."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

SECRET = "TOP-SECRET-CONTENT"

# The token every `HttpServer` gets (through WIELD_MCP_TOKEN) unless a
# scenario gives its own, and the header that carries it. urllib requests
# send it unless they name their own Authorization.
TOKEN = "wield-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
AUTH_LINE = f"Authorization: Bearer {TOKEN}\r\n"
_opener = urllib.request.build_opener()
_opener.addheaders = list(AUTH.items())
urllib.request.install_opener(_opener)


def http_client():
    """The SDK's HTTP client, sending the fixture's token."""
    return create_mcp_http_client(headers=AUTH)


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
    async def session(self, flags: list[str] | None = None, serve: list[str] | None = None, **callbacks):
        """A client session; `flags` go to wield, `serve` to `mcp serve`."""
        flags = flags or []
        if self.transport == "stdio":
            params = StdioServerParameters(command=self.wield, args=[*self.args(flags), *(serve or [])], env=self.env())
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write, **callbacks) as s:
                    await s.initialize()
                    yield s
        else:
            with HttpServer(self, flags, serve) as url:
                async with streamable_http_client(url, http_client=http_client()) as (read, write):
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
        self.env = fx.env({"WIELD_MCP_TOKEN": TOKEN, **(env or {})})
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


async def cancel_once_asked(s: ClientSession, name: str, args: dict, opened, withdrawn) -> None:
    """Call `name`, cancel the call once the client is asked something
    (`opened` set), and wait (5 s at most) until that is withdrawn."""

    async def run():
        await call(s, name, args)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(10):
            await opened.wait()
        tg.cancel_scope.cancel()
    with anyio.fail_after(5):
        await withdrawn.wait()




def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        # Gone, or going between the open and the read.
        return False


def host_pid(name: str) -> int | None:
    """The pid, as this test sees it, of the process whose argv[0] is `name`
    (`exec -a NAME` in bash). Under bubblewrap a command has its own PID
    namespace, so the pids it prints are not the test's."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0", 1)[0]
        except OSError:
            continue
        if argv0 == name.encode():
            return int(entry)
    return None


async def wait_for_host_pid(name: str, within: float = 15) -> int:
    """[host_pid], waited for."""
    deadline = time.time() + within
    while (pid := host_pid(name)) is None:
        expect(time.time() < deadline, f"the command never started ({name} not found)")
        await anyio.sleep(0.05)
    return pid


def describe_process(pid: int) -> str:
    """What a process is (state, parent, group, command) and its parents,
    for a failure report: which one survived, and under whom."""
    parts = []
    while pid > 1 and len(parts) < 6:
        try:
            with open(f"/proc/{pid}/stat") as f:
                rest = f.read().split(") ", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            parts.append(f"{pid} (gone)")
            break
        state, ppid, pgrp = rest[0], int(rest[1]), rest[2]
        parts.append(f"{pid} {state} pgrp {pgrp} `{cmd[:60]}`")
        pid = ppid
    return " <- ".join(parts)
