#!/usr/bin/python3
"""Starts a kernel on a running Jupyter Server and leaves it busy.

Usage: jupyter_busy.py BASE_URL TOKEN RUNTIME_DIR [SECONDS | @UNIX_TIME]

Creates a kernel through the REST API, connects to it through its
connection file (the server and this script share RUNTIME_DIR) and sends
`time.sleep(SECONDS)` without waiting for the reply, so the kernel stays
"busy" with no client attached: the case of a long training cell whose
browser tab was closed. With @UNIX_TIME the cell sleeps until then,
however long the kernel took to start. Prints the kernel id.
"""
import json
import os
import sys
import time
import urllib.request

from jupyter_client import BlockingKernelClient


def kernel_state(base, token, kid):
    """The kernel's execution_state as the server reports it."""
    req = urllib.request.Request(
        base + "/api/kernels/" + kid + "?no_track_activity=1",
        headers={"Authorization": "token " + token},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)["execution_state"]


def main():
    base, token, runtime = sys.argv[1], sys.argv[2], sys.argv[3]
    length = sys.argv[4] if len(sys.argv) > 4 else "3600"
    if length.startswith("@"):
        cell = "import time; time.sleep(max(0, %f - time.time()))" % float(length[1:])
    else:
        cell = "import time; time.sleep(%d)" % int(length)
    req = urllib.request.Request(
        base + "/api/kernels",
        data=json.dumps({"name": "python3"}).encode(),
        headers={"Authorization": "token " + token, "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        kernel = json.load(resp)
    path = os.path.join(runtime, "kernel-%s.json" % kernel["id"])
    deadline = time.time() + 30
    while not os.path.exists(path):
        if time.time() > deadline:
            sys.exit("no connection file " + path)
        time.sleep(0.1)
    client = BlockingKernelClient(connection_file=path)
    client.load_connection_file()
    client.start_channels()
    # Not wait_for_ready(): it reads a heartbeat that may not beat yet and
    # gives up. ZeroMQ queues the request until the kernel listens.
    client.kernel_info()
    client.get_shell_msg(timeout=60)
    # The server learns a kernel's state from the status messages on the
    # kernel's iopub channel, through its own subscription, which joins a
    # moment after the kernel starts (ZeroMQ's slow joiner): what is sent
    # before it joins is lost to the server, and a kernel whose one "busy"
    # went unheard stays "starting" there for the whole sleep. So nudge the
    # kernel with empty cells until the server has heard one of them, then
    # start the sleep.
    kid = kernel["id"]
    deadline = time.time() + 60
    while kernel_state(base, token, kid) == "starting":
        if time.time() > deadline:
            sys.exit("kernel %s is starting, the server hears none of its status" % kid)
        client.execute("pass")
        time.sleep(0.5)
    client.execute(cell)
    # Leave once the server itself reports the kernel busy (what the probe
    # reads), not on our own iopub subscription.
    deadline = time.time() + 60
    state = None
    while time.time() < deadline:
        state = kernel_state(base, token, kid)
        if state == "busy":
            break
        time.sleep(0.2)
    else:
        sys.exit("kernel %s is %s, not busy" % (kid, state))
    client.stop_channels()
    print(kernel["id"])


if __name__ == "__main__":
    main()
