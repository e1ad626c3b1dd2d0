"""Scenarios of `client.py` for wield's own MCP client: servers it bridges,
seen through `wield mcp serve`."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
import mcp_types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from fixture import Fixture, HttpServer, alive, http_client, call, cancel_once_asked, expect, text_of


def child_pids(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().split(") ", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(entry))
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                pass
    return out


def node_children(pid: int) -> list[int]:
    """The children of `pid` that run node (one may end while it is looked at)."""
    out = []
    for p in child_pids(pid):
        try:
            with open(f"/proc/{p}/cmdline") as f:
                if "node" in f.read():
                    out.append(p)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


async def everything_restart(fx: Fixture) -> None:
    """wield bridging server-everything: a bridged call's progress notifications
    reach this client, a tool that must be called as a task is left out, the
    server sees the workspace as its one root, and a crashed server is
    restarted on next use."""
    node = os.environ["WIELD_TEST_NODE"]
    everything = os.environ["WIELD_TEST_EVERYTHING"]
    fx.config(
        f'[mcp.servers.everything]\ncommand = "{node}"\nargs = ["{everything}"]\ntimeout = "30s"\n'
        '[approval]\nauto_approve = ["$standard", "mcp__everything__*"]\n'
    )
    server = HttpServer(fx, [])
    with server as url:
        async with streamable_http_client(url, http_client=http_client()) as (read, write):
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

                # Regression: the server's notifications/progress for a bridged
                # call went nowhere, then arrived as lines of output counted
                # 1, 2, 3 with no total; they reach this client as the server
                # sent them.
                progress: list[tuple[float, float | None, str | None]] = []

                async def on_progress(p, total, message):
                    progress.append((p, total, message))

                r = await call(
                    s,
                    "mcp__everything__trigger-long-running-operation",
                    {"duration": 1.2, "steps": 4},
                    progress_callback=on_progress,
                )
                expect(not r.is_error and "Steps: 4" in text_of(r), f"long-running operation: {r}")
                expect(
                    progress == [(1, 4, None), (2, 4, None), (3, 4, None), (4, 4, None)],
                    f"bridged progress: {progress}",
                )

                # Regression: a tool that can only be called as a task was
                # offered, and every call of it failed.
                expect("mcp__everything__simulate-research-query" not in names, f"task-only tool offered: {sorted(names)}")
                # The workspace is the server's one root (wield offers roots).
                r = await call(s, "mcp__everything__get-roots-list", {})
                expect(not r.is_error and f"file://{fx.ws}" in text_of(r), f"roots: {r}")
                wield_pid = server.proc.pid
                kids = node_children(wield_pid)
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
                kids2 = node_children(wield_pid)
                expect(len(kids2) == 1 and kids2 != kids, f"restarted process: {kids} -> {kids2}")


async def bridged_requests(fx: Fixture) -> None:
    """A bridged server's sampling and elicitation reach this client (over
    stdio, the one client; over HTTP, the client whose call it handles)."""
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
        # The user is told which server asks.
        expect(
            asked == ["MCP server `peer` (through wield) asks: Your name?", "six times seven?"], f"asked: {asked}"
        )
        # A bridged tool's output schema and structured content pass through.
        primes = next(t for t in (await s.list_tools()).tools if t.name == "mcp__peer__primes")
        expect(primes.output_schema is not None and "result" in primes.output_schema.get("properties", {}), f"{primes}")
        r = await call(s, "mcp__peer__primes", {"below": 12})
        expect(r.structured_content == {"result": [2, 3, 5, 7, 11]}, f"structured content: {r}")
    # Regression: a server's request withdrawn by the server (its call
    # cancelled) stayed open at this client. It is withdrawn here too.
    opened, withdrawn = anyio.Event(), anyio.Event()

    async def on_elicit_late(ctx, params):
        opened.set()
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            withdrawn.set()
            raise
        return types.ElicitResult(action="accept", content={"answer": "late"})

    async with fx.session(elicitation_callback=on_elicit_late) as s:
        await cancel_once_asked(s, "mcp__peer__ask_user", {"question": "Your name?"}, opened, withdrawn)
        r = await call(s, "mcp__peer__where", {})
        expect(not r.is_error, f"session after a withdrawn request: {r}")
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

        # A name handed out keeps meaning the same tool: a newcomer that
        # would take it (`fresh_one` after `fresh.one`) gets a hashed name.
        for added in ["fresh.one", "fresh_one"]:
            changed = anyio.Event()
            await call(s, "mcp__peer__add_tool", {"name": added})
            with anyio.fail_after(10):
                await changed.wait()
        listed = await names(s)
        r = await call(s, "mcp__peer__fresh_one", {})
        expect(text_of(r) == "I am fresh.one", f"a name moved to another tool: {r}")
        hashed = [n for n in listed if n.startswith("mcp__peer__fresh_one_")]
        expect(len(hashed) == 1, f"the newcomer's name: {sorted(listed)}")
        r = await call(s, hashed[0], {})
        expect(text_of(r) == "I am fresh_one", f"the newcomer: {r}")

        # The server that was down comes up: tried again in the background.
        changed = anyio.Event()
        flag.write_text("ready")
        with anyio.fail_after(20):
            while "mcp__late__where" not in await names(s):
                await changed.wait()
                changed = anyio.Event()
        r = await call(s, "mcp__late__where", {})
        expect(not r.is_error and "cwd" in text_of(r), f"the late server: {r}")


