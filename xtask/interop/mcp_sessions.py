#!/usr/bin/env python3
"""Drives `ptc mcp --sessions` end to end with the official Python MCP SDK (2.x) over
Streamable HTTP, across two instances that share one session store.

  mcp_sessions.py --http http://127.0.0.1:A/mcp --http http://127.0.0.1:B/mcp

The servers run with --response-profile structured and --prelude (namespace `crm`, see
`cargo xtask interop`). Each step is checked here; the report (one JSON document on
stdout) lists them. Exit code 0 when every step passed, 1 otherwise (the failing step
and what it got are in the report and on stderr).
"""
import argparse
import asyncio
import json
import sys

import mcp
from mcp import Client


class Failed(Exception):
    pass


def structured(res):
    data = res.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data.get("structuredContent") or {}, data


async def run(urls, timeout):
    steps = []
    async with Client(urls[0], mode="legacy", read_timeout_seconds=timeout) as a, \
            Client(urls[1], mode="legacy", read_timeout_seconds=timeout) as b:
        try:
            await scenario(a, b, steps)
        except Failed as e:
            # leave the clients' context cleanly (ending both MCP sessions), then report
            return steps, str(e)
    return steps, None


async def scenario(a, b, steps):
    def check(name, ok, got):
        steps.append({"step": name, "ok": bool(ok)})
        if not ok:
            raise Failed(f"{name}: got {json.dumps(got)[:800]}")

    tools = sorted(t.name for t in (await a.list_tools()).tools)
    check("tools/list offers the seven session tools and not lisp_eval",
          "lisp_session_eval" in tools and "lisp_eval" not in tools and len(tools) == 7, tools)

    sc, raw = structured(await a.call_tool("lisp_session_start", {"title": "python sdk"}))
    sid = sc.get("session_id", "")
    check("lisp_session_start on A returns a ptcs_ id and the prelude refs",
          sid.startswith("ptcs_") and sc.get("prelude_refs", [{}])[0].get("id") == "crm", raw)

    sc, raw = structured(await a.call_tool(
        "lisp_session_eval", {"session_id": sid, "program": "(def counter 0) (def vips (crm/vips data/customers))",
                              "context": {"customers": [{"name": "ann", "spend": 80}, {"name": "bo", "spend": 5}]}}))
    check("eval on A defines bindings from the context with a prelude function",
          sorted(sc.get("memory", {}).get("changed_keys", [])) == ["counter", "vips"], raw)

    sc, raw = structured(await b.call_tool(
        "lisp_session_eval", {"session_id": sid, "program": "(def counter (inc counter)) [counter (mapv :name vips)]"}))
    check("eval on B sees A's definitions", sc.get("result") == 'user=> [1 ["ann"]]', raw)

    sc, raw = structured(await b.call_tool(
        "lisp_session_eval", {"session_id": sid, "program": "(def counter 100) {:n counter}",
                              "output_schema": {"type": "object", "properties": {"n": {"type": "string"}},
                                                "required": ["n"]}}))
    check("an output_schema mismatch on B is an error", raw.get("isError") is True, raw)

    sc, raw = structured(await a.call_tool("lisp_session_eval", {"session_id": sid, "program": "counter"}))
    check("the mismatch committed nothing", sc.get("result") == "user=> 1", raw)

    sc, raw = structured(await a.call_tool("lisp_session_inspect", {"session_id": sid, "view": "memory"}))
    check("inspect on A lists the stored bindings (no prelude names)",
          sc.get("stored_keys") == ["counter", "vips"], raw)

    sc, raw = structured(await b.call_tool("lisp_session_list", {}))
    check("list on B shows the session", any(s.get("session_id") == sid for s in sc.get("sessions", [])), raw)

    sc, raw = structured(await b.call_tool("lisp_session_forget", {"session_id": sid, "bindings": ["vips"]}))
    check("forget on B removes a binding", raw.get("isError") is not True, raw)

    sc, raw = structured(await a.call_tool("lisp_session_list_preludes", {"session_id": sid}))
    check("list_preludes on A returns the frozen refs",
          [r.get("id") for r in sc.get("prelude_refs", [])] == ["crm"], raw)

    sc, raw = structured(await b.call_tool("lisp_session_close", {"session_id": sid}))
    check("close on B", raw.get("isError") is not True, raw)

    sc, raw = structured(await a.call_tool("lisp_session_eval", {"session_id": sid, "program": "counter"}))
    check("eval on A after the close is session_closed", sc.get("reason") == "session_closed", raw)

    sc, raw = structured(await a.call_tool("lisp_session_eval", {"session_id": "ptcs_nope", "program": "1"}))
    check("an unknown session is session_not_found", sc.get("reason") == "session_not_found", raw)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--http", action="append", required=True, help="Streamable HTTP URL (give two)")
    p.add_argument("--timeout", type=float, default=30.0)
    args = p.parse_args()
    if len(args.http) != 2:
        print("give --http twice (two instances)", file=sys.stderr)
        sys.exit(2)
    report = {"sdk": "mcp-python " + getattr(mcp, "__version__", "?"), "urls": args.http}
    report["steps"], error = asyncio.run(run(args.http, args.timeout))
    report["ok"] = error is None
    if error:
        report["error"] = error
        print(error, file=sys.stderr)
    print(json.dumps(report, indent=2))
    sys.exit(0 if report["ok"] else 1)


if __name__ == "__main__":
    main()
