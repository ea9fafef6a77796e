"""Drive `clawhdf5 mcp` with the official MCP Python client (package `mcp`) and check every tool.

Usage: python3 mcp_client.py CLAWHDF5_BIN STORE_DIR WORKSPACE_DIR
Prints "ok" and exits 0 when every check passes.
"""
import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def is_error(result):
    """`isError` in older clients, `is_error` in newer ones."""
    v = getattr(result, "is_error", None)
    return bool(getattr(result, "isError", False) if v is None else v)


def payload(result):
    assert not is_error(result), result.content[0].text
    return json.loads(result.content[0].text)


async def main(binary, store_dir, workspace):
    params = StdioServerParameters(command=binary, args=["mcp", "--dir", store_dir, "--workspace", workspace])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            info = getattr(init, "server_info", None) or getattr(init, "serverInfo")
            assert info.name == "clawhdf5", init
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == {"memory_search", "memory_get", "memory_store", "memory_forget"}, tools
            assert (getattr(tools["memory_search"], "input_schema", None) or tools["memory_search"].inputSchema)["required"] == ["query"]

            stored = payload(await session.call_tool("memory_store", {"text": "The staging database runs on port 5433", "tags": ["infra"]}))
            other = payload(await session.call_tool("memory_store", {"text": "Lunch on Fridays is at the ramen place"}))
            assert stored["id"] != other["id"]

            found = payload(await session.call_tool("memory_search", {"query": "which port does the staging database use", "maxResults": 3}))
            assert found["results"][0]["id"] == stored["id"], found
            assert found["results"][0]["tags"] == ["infra"]
            # Filters are exact: a tag, a source, a time range.
            tagged = payload(await session.call_tool("memory_search", {"query": "ramen staging lunch port", "tags": ["infra"]}))
            assert [r["id"] for r in tagged["results"]] == [stored["id"]], tagged
            other_source = payload(await session.call_tool("memory_search", {"query": "staging database port", "source": "document"}))
            assert other_source["results"] == [], other_source
            future = payload(await session.call_tool("memory_search", {"query": "staging database port", "timeFrom": "2999-01-01"}))
            assert future["results"] == [], future
            bad_time = await session.call_tool("memory_search", {"query": "x", "timeTo": "someday"})
            assert is_error(bad_time) and "someday" in str(bad_time.content), bad_time

            got = payload(await session.call_tool("memory_get", {"id": stored["id"]}))
            assert got["record"]["text"].startswith("The staging database"), got
            lines = payload(await session.call_tool("memory_get", {"path": "MEMORY.md", "from": 2, "lines": 1}))
            assert lines["text"] == "second line", lines

            bad = await session.call_tool("memory_get", {"path": "../outside.md"})
            assert is_error(bad) and "outside" in bad.content[0].text, bad
            bad = await session.call_tool("memory_search", {"query": "x", "bogus": True})
            assert is_error(bad), bad

            gone = payload(await session.call_tool("memory_forget", {"id": stored["id"]}))
            assert gone["forgotten"] == [stored["id"]]
            found = payload(await session.call_tool("memory_search", {"query": "staging database port"}))
            assert all(r["id"] != stored["id"] for r in found["results"]), found
    print("ok")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
