"""The official Python MCP SDK as a client of `wield mcp serve`.

Usage: client.py --wield PATH --transport stdio|http SCENARIO [SCENARIO ...]

Each scenario builds its own fixture in a fresh temporary directory:
base/ws (the workspace), base/outside (a secret), base/ws-evil (a sibling
that shares the workspace's name as a string prefix), base/home and base/tmp
(HOME and TMPDIR, so neither holds the other directories), then starts wield
on it and asserts what an MCP client sees. Any failed expectation raises;
the script exits non-zero naming the scenario. The fixture is in
`fixture.py`, the HTTP-only scenarios in `http_scenarios.py`, those of
wield's own MCP client in `bridged_scenarios.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

import anyio
import mcp_types as types

from bridged_scenarios import bridged_list_changed, bridged_requests, everything_restart
from fixture import SECRET, Fixture, alive, call, cancel_once_asked, expect, text_of, wait_for_host_pid
from http_scenarios import http_delete_mid_call, http_in_flight, http_requests, http_resume, http_security, http_sessions

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
        # Sandboxed commands cannot reach the network; with it allowed they can.
        for name in ["bash", "process_start"]:
            a = next(t for t in listed if t.name == name).annotations
            expect(a.open_world_hint is False, f"{name} in the sandbox: {a}")
    async with fx.session(["--set", "sandbox.network=true"]) as s:
        listed = (await s.list_tools()).tools
        for name in ["bash", "process_start"]:
            a = next(t for t in listed if t.name == name).annotations
            expect(a.open_world_hint is True, f"{name} with sandbox.network: {a}")
        a = next(t for t in listed if t.name == "process_kill").annotations
        expect(a.open_world_hint is False, f"process_kill runs no command: {a}")
        expect(next(t for t in listed if t.name == "read").annotations.open_world_hint is False, "read reaches the world")
    async with fx.session() as s:

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


def accept_after(seconds: float, opened: anyio.Event, withdrawn: anyio.Event):
    """An answer to an approval form that accepts after `seconds`; `opened`
    is set when the form comes, `withdrawn` when it is withdrawn first."""

    async def answer():
        opened.set()
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            withdrawn.set()
            raise
        return types.ElicitResult(action="accept", content={})

    return answer


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
        expect("faster than a person" not in text_of(r), f"a reason is a person's words: {r}")

        # Dismissed at once, as clients that claim forms they cannot show
        # do: the model hears how a person could allow the call.
        answers.append(types.ElicitResult(action="cancel"))
        r = await call(s, "debug_echo", {"command": "third"})
        expect(r.is_error and "dismissed" in text_of(r), f"cancelled: {r}")
        expect("faster than a person" in text_of(r) and "--yes" in text_of(r), f"dismissed at once: {r}")

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
    late_accept = accept_after(3, opened, withdrawn)

    audit = fx.base / "audit.jsonl"
    flags = ["--set", 'approval.auto_approve=["$readonly"]', "--audit", str(audit)]
    async with fx.session(flags, elicitation_callback=on_elicit) as s:
        answers.append(late_accept)
        await cancel_once_asked(s, "write", {"path": "late.txt", "content": "x"}, opened, withdrawn)
        await anyio.sleep(3.5)
        expect(not (fx.ws / "late.txt").exists(), "a call cancelled during its approval ran")
        r = await call(s, "calculator", {"expression": "1+1"})
        expect(not r.is_error, f"session after a cancelled approval: {r}")
        lines = [json.loads(x) for x in audit.read_text().splitlines()]
        write = [x for x in lines if x["tool"] == "write"]
        expect(len(write) == 1 and write[0]["decision"] == "cancelled", f"audit: {lines}")

    # A form nobody answers: past --approval-timeout the call is refused and
    # the form withdrawn.
    opened, withdrawn = anyio.Event(), anyio.Event()
    never = accept_after(30, opened, withdrawn)

    flags = ["--set", 'approval.auto_approve=["$readonly"]']
    async with fx.session(flags, ["--approval-timeout", "1s"], elicitation_callback=on_elicit) as s:
        answers.append(never)
        started = time.time()
        r = await call(s, "write", {"path": "unanswered.txt", "content": "x"})
        took = time.time() - started
        expect(r.is_error and "did not answer" in text_of(r) and took < 10, f"an unanswered form ({took:.1f}s): {r}")
        with anyio.fail_after(5):
            await withdrawn.wait()
        expect(not (fx.ws / "unanswered.txt").exists(), "an unanswered call ran")


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
        # The loader's description names what may be loaded (a client sends
        # no system prompt of wield's).
        loader = next(t for t in (await s.list_tools()).tools if t.name == "load_tools")
        expect("<available-deferred-tools>" in loader.description and "\nglob\n" in loader.description, loader.description)
        r = await call(s, "load_tools", {"tools": ["glob"]})
        expect(not r.is_error, f"load_tools: {r}")
        with anyio.fail_after(5):
            await changed.wait()
        listed = (await s.list_tools()).tools
        names = {t.name for t in listed}
        expect("glob" in names and "grep" not in names, f"after load_tools: {sorted(names)}")
        loader = next(t for t in listed if t.name == "load_tools")
        expect("\nglob\n" not in loader.description, f"nothing left to load: {loader.description}")
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
        # A link to a file outside, and a dangling one whose target (outside)
        # a write would create; and a NUL byte, which would cut the path.
        os.symlink(outside / "secret.txt", fx.ws / "filelink")
        os.symlink(outside / "made.txt", fx.ws / "dangling")
        try:
            r = await call(s, "read", {"path": "filelink"})
            expect(r.is_error and SECRET not in text_of(r), f"read through a file link: {r}")
            for tool, args in [
                ("write", {"path": "filelink", "content": "pwned"}),
                ("edit", {"path": "filelink", "old_string": SECRET, "new_string": "pwned"}),
                ("write", {"path": "dangling", "content": "pwned"}),
                ("write", {"path": "ok.txt\x00../../outside/nul.txt", "content": "pwned"}),
                ("read", {"path": "a.txt\x00../../outside/secret.txt"}),
                ("mkdir", {"path": "link/newdir"}),
            ]:
                r = await call(s, tool, args)
                expect(r.is_error and SECRET not in text_of(r), f"{tool} {args['path']!r} was allowed: {r}")
            expect((outside / "secret.txt").read_text() == SECRET, "the secret was changed through a link")
        finally:
            (fx.ws / "filelink").unlink()
            (fx.ws / "dangling").unlink()
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
    # Asking again fails (the client errs): the narrowing it gave stays.
    failing = {"now": False}
    narrow = roots_callback([fx.ws / "sub"])

    async def sometimes_failing(ctx):
        if failing["now"]:
            return types.ErrorData(code=-32603, message="roots are unavailable")
        return await narrow(ctx)

    async with fx.session(["--yes"], list_roots_callback=sometimes_failing) as s:
        r = await call(s, "write", {"path": "sub/first.txt", "content": "x"})
        expect(not r.is_error, f"write inside the client's root: {r}")
        failing["now"] = True
        await s.send_roots_list_changed()
        await anyio.sleep(0.2)
        r = await call(s, "write", {"path": "widened.txt", "content": "x"})
        expect(r.is_error and not (fx.ws / "widened.txt").exists(), f"a failed roots/list undid the narrowing: {r}")
        r = await call(s, "bash", {"command": "echo x > widened-by-bash.txt"})
        expect(not (fx.ws / "widened-by-bash.txt").exists(), f"a failed roots/list undid the sandbox's narrowing: {r}")
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

    # The limit belongs to the session: a new executor (the client's roots
    # changed) does not open new places while the old one's calls run.
    async with fx.session(
        ["--yes", "--set", "executor.max_parallel=2"], list_roots_callback=roots_callback([fx.ws])
    ) as s:
        finished: dict[str, float] = {}

        async def timed(name: str, seconds: float) -> None:
            await call(s, "debug_sleep", {"seconds": seconds})
            finished[name] = time.time() - started

        started = time.time()
        async with anyio.create_task_group() as tg:
            tg.start_soon(timed, "a", 1.5)
            tg.start_soon(timed, "b", 1.5)
            await anyio.sleep(0.3)
            await s.send_roots_list_changed()
            await anyio.sleep(0.2)
            tg.start_soon(timed, "c", 0.5)
        expect(finished["c"] >= 1.9, f"a third call ran beside two on a new executor: {finished}")


async def bash_progress(fx: Fixture) -> None:
    """A streaming bash call sends notifications/progress with its output."""
    progress: list[tuple[float, str | None]] = []

    async def on_progress(p, total, message):
        progress.append((p, message))

    async with fx.session(["--yes"]) as s:
        names = {t.name for t in (await s.list_tools()).tools}
        expect("bash" in names, f"no bash tool in {sorted(names)}")
        cmd = "for i in 1 2 3 4; do echo line$i; sleep 0.3; done"
        arrived: list[float] = []

        async def timed(p, total, message):
            arrived.append(time.monotonic())
            await on_progress(p, total, message)

        r = await call(s, "bash", {"command": cmd}, progress_callback=timed)
        done = time.monotonic()
        expect(not r.is_error and "line4" in text_of(r), f"bash: {r}")
        # Each line as it comes, not all of them with the result: the first
        # arrives while the command still runs (0.9 s of sleeps to go).
        expect(arrived and done - arrived[0] > 0.6, f"progress came only at the end: {[done - t for t in arrived]}")
        joined = "".join(m or "" for _, m in progress)
        expect(len(progress) >= 2, f"progress notifications: {progress}")
        expect("line1" in joined and "line3" in joined, f"progress messages: {progress}")
        values = [p for p, _ in progress]
        expect(values == sorted(values) and len(set(values)) == len(values), f"progress must grow: {values}")



async def bash_cancel(fx: Fixture) -> None:
    """Cancelling a long bash call kills its processes."""
    # Found by name: under bubblewrap the pids a command prints are its
    # PID namespace's.
    name = f"wield-cancel-{os.getpid()}-{time.monotonic_ns()}"
    async with fx.session(["--yes"]) as s:
        names = {t.name for t in (await s.list_tools()).tools}
        expect("bash" in names, f"no bash tool in {sorted(names)}")
        cmd = f"(exec -a {name} sleep 300) & wait"

        async def run():
            await call(s, "bash", {"command": cmd})

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            pid = await wait_for_host_pid(name)
            expect(alive(pid), "sleep is not running")
            tg.cancel_scope.cancel()
        deadline = time.time() + 10
        while alive(pid) and time.time() < deadline:
            await anyio.sleep(0.05)
        expect(not alive(pid), f"sleep {pid} survived the cancellation")
        r = await call(s, "calculator", {"expression": "2*21"})
        expect(not r.is_error and "42" in text_of(r), f"session after cancel: {r}")



async def model_asks(fx: Fixture) -> None:
    """The model's `ask` reaches the client's user as a form with its
    options; a client without forms tells the model to go on."""
    asked: list = []

    async def on_elicit(ctx, params):
        asked.append((params.message, params.requested_schema))
        return types.ElicitResult(action="accept", content={"answer": "blue"})

    async with fx.session(elicitation_callback=on_elicit) as s:
        r = await call(
            s, "ask", {"question": "Which colour?", "options": [{"label": "red", "description": "warm"}, {"label": "blue"}]}
        )
        expect(not r.is_error and text_of(r) == "The person answered: blue", f"ask: {r}")
        expect(len(asked) == 1 and asked[0][0].startswith("Which colour?") and "red: warm" in asked[0][0], f"form: {asked}")
        expect(asked[0][1]["properties"]["answer"]["enum"] == ["red", "blue"], f"form schema: {asked}")
    async with fx.session() as s:
        r = await call(s, "ask", {"question": "Which colour?"})
        expect(r.is_error and "cannot ask its user" in text_of(r), f"ask without forms: {r}")


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
        http_requests,
        http_in_flight,
        http_resume,
        http_security,
        http_sessions,
        http_delete_mid_call,
        everything_restart,
        bridged_requests,
        bridged_list_changed,
        model_asks,
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