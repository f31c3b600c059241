#!/usr/bin/python3
"""Runs a cell in a kernel of a running Jupyter Server and prints its output.

Usage: jupyter_run.py BASE_URL TOKEN RUNTIME_DIR KERNEL CODE

KERNEL is a kernel id, or "new" to start one through the REST API first.
Connects to the kernel through its connection file (the server and this
script share RUNTIME_DIR), executes CODE, waits for the reply, and prints
the kernel id on the first line, then what the cell wrote to stdout and
its result. Exits 1 if the cell raised, naming the error.
"""
import json
import os
import sys
import time
import urllib.request

from jupyter_client import BlockingKernelClient


def main():
    base, token, runtime, kid, code = sys.argv[1:6]
    if kid == "new":
        req = urllib.request.Request(
            base + "/api/kernels",
            data=json.dumps({"name": "python3"}).encode(),
            headers={"Authorization": "token " + token, "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            kid = json.load(resp)["id"]
    path = os.path.join(runtime, "kernel-%s.json" % kid)
    deadline = time.time() + 30
    while not os.path.exists(path):
        if time.time() > deadline:
            sys.exit("no connection file " + path)
        time.sleep(0.1)
    client = BlockingKernelClient(connection_file=path)
    client.load_connection_file()
    client.start_channels()
    client.kernel_info()
    client.get_shell_msg(timeout=60)
    out = []

    def output(msg):
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            out.append(content["text"])
        elif kind == "execute_result":
            out.append(content["data"].get("text/plain", "") + "\n")

    reply = client.execute_interactive(code, timeout=300, output_hook=output)
    client.stop_channels()
    print(kid)
    sys.stdout.write("".join(out))
    if reply["content"]["status"] != "ok":
        sys.exit("%s: %s" % (reply["content"].get("ename"), reply["content"].get("evalue")))


if __name__ == "__main__":
    main()
