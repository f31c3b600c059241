#!/usr/bin/python3
"""Runs a cell in a kernel of a running Jupyter Server and prints its output.

Usage: jupyter_run.py BASE_URL TOKEN RUNTIME_DIR KERNEL CODE

KERNEL is a kernel id, or "new" to start one through the REST API first.
The cell goes through the server's websocket (/api/kernels/ID/channels), as
a browser sends it: the kernel is reached through the server, whatever the
server's runtime files on disk say. Prints the kernel id on the first line,
then what the cell wrote to stdout and its result. Exits 1 if the cell
raised, naming the error. RUNTIME_DIR is not read (kept for the callers).
"""
import json
import sys
import urllib.request
import uuid

from tornado import httpclient, ioloop, websocket


def request(base, token, path, method="GET", body=None):
    req = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": "token " + token, "Content-Type": "application/json"},
        method=method,
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.load(resp)


async def execute(base, token, kid, code):
    session = uuid.uuid4().hex
    url = base.replace("http", "ws", 1) + "/api/kernels/%s/channels?session_id=%s" % (kid, session)
    conn = await websocket.websocket_connect(
        httpclient.HTTPRequest(url, headers={"Authorization": "token " + token},
                               request_timeout=60))
    msg_id = uuid.uuid4().hex
    conn.write_message(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": session,
                   "username": "test", "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "buffers": [], "channel": "shell",
        "content": {"code": code, "silent": False, "store_history": True,
                    "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
    }))
    out, reply, idle = [], None, False
    while reply is None or not idle:
        raw = await conn.read_message()
        if raw is None:
            sys.exit("the server closed the kernel's websocket")
        if isinstance(raw, bytes):
            continue  # a binary frame (buffers): nothing a cell here prints
        msg = json.loads(raw)
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream" and content.get("name") == "stdout":
            out.append(content["text"])
        elif kind == "execute_result":
            out.append(content["data"].get("text/plain", "") + "\n")
        elif kind == "execute_reply":
            reply = content
        elif kind == "status" and content.get("execution_state") == "idle":
            idle = True
    conn.close()
    return out, reply


def main():
    base, token, _runtime, kid, code = sys.argv[1:6]
    if kid == "new":
        kid = request(base, token, "/api/kernels", "POST", {"name": "python3"})["id"]
    out, reply = ioloop.IOLoop.current().run_sync(
        lambda: execute(base, token, kid, code), timeout=300)
    print(kid)
    sys.stdout.write("".join(out))
    if reply.get("status") != "ok":
        sys.exit("%s: %s" % (reply.get("ename"), reply.get("evalue")))


if __name__ == "__main__":
    main()
