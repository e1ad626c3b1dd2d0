"""An MCP server on the official Python SDK, for wield's client (stdio).

Tools that show what wield's client gives a server and how it answers one:
- `where`: the server's working directory and the PEER_VALUE variable, as JSON;
- `weather`: a text summary plus structured content that the text does not hold;
- `primes`: a list, which the SDK sends as one text block per item and as
  structured content `{"result": [...]}`;
- `ask_model`: asks the client's model for a completion (sampling);
- `ask_user`: asks the client's user for input (form elicitation);
- `ask_many`: asks the client's user `n` questions at once, and counts the
  answers and the refusals;
- `read.file` and `read_file`: two names that meet once `.` is made API-safe;
- `pause`: sleeps, with a `timeout` argument of its own (milliseconds) that
  is the server's business, not wield's;
- `add_tool`: adds a tool while running and tells the client its list
  changed (`notifications/tools/list_changed`).

With PEER_NEEDS=PATH in its environment it refuses to start (exit 1) until
that file exists: a server that is down at first and comes up later.

`ask_model` and `ask_user` return what the client answered, or the error it
sent, as text.
"""

from __future__ import annotations

import json
import os

import anyio

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("peer")


@server.tool()
def where() -> str:
    """The server's working directory and environment."""
    return json.dumps({"cwd": os.getcwd(), "value": os.environ.get("PEER_VALUE")})


@server.tool()
def weather(city: str) -> types.CallToolResult:
    """Weather for a city."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"Mild in {city}.")],
        structured_content={"city": city, "temperature": 21, "conditions": "mild"},
    )


@server.tool()
def primes(below: int) -> list[int]:
    """The primes below a bound."""
    return [n for n in range(2, below) if all(n % d for d in range(2, n))]


@server.tool()
async def ask_model(prompt: str, ctx: Context) -> str:
    """Ask the client's model."""
    try:
        result = await ctx.session.create_message(
            [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))],
            max_tokens=50,
        )
    except Exception as e:  # noqa: BLE001 - the error is the answer under test
        return f"client error: {e}"
    return f"model said: {result.content.text}"


@server.tool()
async def ask_user(question: str, ctx: Context) -> str:
    """Ask the client's user."""
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    try:
        result = await ctx.session.elicit_form(question, schema)
    except Exception as e:  # noqa: BLE001 - the error is the answer under test
        return f"client error: {e}"
    return f"user {result.action}: {json.dumps(result.content)}"


@server.tool()
async def ask_many(n: int, ctx: Context) -> str:
    """Ask the client's user `n` questions at once."""
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}

    async def one(i: int, out: list[str]) -> None:
        try:
            await ctx.session.elicit_form(f"question {i}", schema)
            out.append("answered")
        except Exception as e:  # noqa: BLE001 - the error is the answer under test
            out.append("refused" if "too many requests" in str(e) else f"error: {e}")

    out: list[str] = []
    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(one, i, out)
    return json.dumps({k: out.count(k) for k in sorted(set(out))})


@server.tool(name="read.file")
def read_dot_file() -> str:
    """The dotted name."""
    return "dotted"


@server.tool(name="read_file")
def read_underscore_file() -> str:
    """The underscored name."""
    return "underscored"


@server.tool()
async def pause(seconds: float, timeout: int) -> str:
    """Sleep `seconds`; `timeout` is in milliseconds and only echoed."""
    await anyio.sleep(seconds)
    return f"slept {seconds}s (timeout argument {timeout} ms)"


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Add a tool `name` that says who it is, and tell the client."""

    def made() -> str:
        return f"I am {name}"

    server.add_tool(made, name=name, description=f"Added at run time: {name}")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


if __name__ == "__main__":
    needs = os.environ.get("PEER_NEEDS")
    if needs and not os.path.exists(needs):
        raise SystemExit(f"not yet: {needs} is missing")
    server.run()
