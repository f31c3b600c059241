#!/usr/bin/env python3
"""Independent watch recorder for the soak benchmark (tests/bench/soak.sh).

Records every watch event of the given resources in one namespace, one file
per resource (OUT/<resource>.jsonl), one JSON object per line:

  {"t": <receipt time, Unix seconds>, "type": "ADDED|MODIFIED|DELETED", "object": {...}}
  {"t": ..., "type": "RELIST", "rv": "<list resourceVersion>", "items": [...]}
  {"t": ..., "type": "RECONNECT", "rv": "...", "why": "..."}

It speaks to the API server with the standard library only (no kubectl, no
code of the controller under test): list, then watch from the list's
resourceVersion with bookmarks. A watch that ends or breaks (an API server
restart) is resumed from the last resourceVersion seen; 410 Gone (etcd
compacted, a new watch cache) makes it list again and record the whole list
as RELIST. Objects are stored without managedFields, pods without their spec
(but spec.nodeName), Workspaces without status.history, to keep hours of
recording small.

With --state-dir, the latest state of each Workspace is also written to
STATE_DIR/<name> ("state generation observedGeneration paused"), which the
soak's drivers poll instead of running kubectl.

  soak_record.py --server URL --ca CA --cert CRT --key KEY --namespace NS \
                 --out DIR [--state-dir DIR] RESOURCE...

RESOURCE is one of: pods pvcs events workspaces podsnapshots triggers.
Stops on SIGTERM or SIGINT.
"""
import argparse
import http.client
import json
import os
import signal
import socket
import ssl
import sys
import threading
import time
import urllib.parse

PATHS = {
    "pods": "/api/v1/namespaces/{ns}/pods",
    "pvcs": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "events": "/api/v1/namespaces/{ns}/events",
    "workspaces": "/apis/hibernator.dev/v1alpha1/namespaces/{ns}/workspaces",
    "podsnapshots": "/apis/podsnapshot.gke.io/v1/namespaces/{ns}/podsnapshots",
    "triggers": "/apis/podsnapshot.gke.io/v1/namespaces/{ns}/podsnapshotmanualtriggers",
}

stopping = threading.Event()


class Gone(Exception):
    pass


def trim(resource, obj):
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        ann = meta.get("annotations")
        if isinstance(ann, dict):
            ann.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if resource == "pods" and isinstance(obj.get("spec"), dict):
        node = obj["spec"].get("nodeName")
        obj["spec"] = {"nodeName": node} if node else {}
    if resource == "workspaces" and isinstance(obj.get("status"), dict):
        obj["status"].pop("history", None)
    return obj


class Recorder(threading.Thread):
    def __init__(self, args, resource, ctx, host, port):
        super().__init__(daemon=True)
        self.args = args
        self.resource = resource
        self.ctx = ctx
        self.host = host
        self.port = port
        self.path = PATHS[resource].format(ns=args.namespace)
        self.out = open(os.path.join(args.out, resource + ".jsonl"), "a", buffering=1)
        self.rv = None
        self.conn = None
        self.lock = threading.Lock()

    def write(self, rec):
        rec.setdefault("t", time.time())
        self.out.write(json.dumps(rec, separators=(",", ":")) + "\n")

    def connect(self, timeout):
        c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)
        with self.lock:
            self.conn = c
        return c

    def close(self):
        with self.lock:
            if self.conn is not None:
                try:
                    if self.conn.sock is not None:
                        self.conn.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                try:
                    self.conn.close()
                except Exception:  # racing the reader thread at stop
                    pass

    def state(self, obj):
        if not self.args.state_dir or self.resource != "workspaces":
            return
        meta = obj.get("metadata", {})
        st = obj.get("status") or {}
        line = "%s %s %s %s\n" % (
            st.get("state") or "-",
            meta.get("generation", 0),
            st.get("observedGeneration", 0),
            "true" if (obj.get("spec") or {}).get("paused") else "false",
        )
        name = meta.get("name", "?")
        tmp = os.path.join(self.args.state_dir, "." + name)
        with open(tmp, "w") as f:
            f.write(line)
        os.replace(tmp, os.path.join(self.args.state_dir, name))

    def relist(self):
        items, cont, rv = [], None, None
        while True:
            q = {"limit": "500"}
            if cont:
                q["continue"] = cont
            c = self.connect(30)
            c.request("GET", self.path + "?" + urllib.parse.urlencode(q))
            r = c.getresponse()
            body = r.read()
            c.close()
            if r.status == 410:
                cont = None  # a continue token expired: start over
                items = []
                continue
            if r.status != 200:
                raise IOError("list: HTTP %d %s" % (r.status, body[:200]))
            doc = json.loads(body)
            items.extend(trim(self.resource, o) for o in doc.get("items", []))
            meta = doc.get("metadata", {})
            cont = meta.get("continue")
            if rv is None:  # every page is of the first page's snapshot
                rv = meta.get("resourceVersion")
            if not cont:
                break
        self.rv = rv
        self.write({"type": "RELIST", "rv": rv, "items": items})
        for o in items:
            self.state(o)

    def watch(self):
        q = {
            "watch": "1",
            "allowWatchBookmarks": "true",
            "resourceVersion": self.rv,
            "timeoutSeconds": "300",
        }
        c = self.connect(330)
        c.request("GET", self.path + "?" + urllib.parse.urlencode(q))
        r = c.getresponse()
        if r.status == 410:
            raise Gone("HTTP 410")
        if r.status != 200:
            raise IOError("watch: HTTP %d %s" % (r.status, r.read()[:200]))
        while not stopping.is_set():
            line = r.readline()
            if not line:
                return "watch ended"
            t = time.time()
            ev = json.loads(line)
            typ, obj = ev.get("type"), ev.get("object") or {}
            if typ == "ERROR":
                if obj.get("code") == 410:
                    raise Gone(obj.get("message", "410"))
                raise IOError("watch error event: %s" % obj.get("message"))
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self.rv = rv
            if typ == "BOOKMARK":
                continue
            self.write({"t": t, "type": typ, "object": trim(self.resource, obj)})
            self.state(obj)
        return "stopping"

    def run(self):
        delay = 0.2
        need_list = True
        while not stopping.is_set():
            try:
                if need_list:
                    self.relist()
                    need_list = False
                why = self.watch()
                delay = 0.2
            except Gone as e:
                why = "410 Gone: %s" % e
                need_list = True
            except (OSError, http.client.HTTPException, ValueError, AttributeError) as e:
                # AttributeError: http.client's reader when the connection
                # was closed under it (at stop).
                why = "%s: %s" % (type(e).__name__, e)
            finally:
                self.close()
            if stopping.is_set():
                break
            self.write({"type": "RECONNECT", "rv": self.rv, "why": str(why)[:300]})
            if not why.startswith("watch ended") and not why.startswith("410"):
                stopping.wait(delay)
                delay = min(delay * 2, 2.0)
        self.out.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--server", required=True)
    p.add_argument("--ca", required=True)
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--state-dir")
    p.add_argument("resources", nargs="+", choices=sorted(PATHS))
    args = p.parse_args()

    u = urllib.parse.urlparse(args.server)
    ctx = ssl.create_default_context(cafile=args.ca)
    ctx.load_cert_chain(args.cert, args.key)
    os.makedirs(args.out, exist_ok=True)
    if args.state_dir:
        os.makedirs(args.state_dir, exist_ok=True)

    recs = [Recorder(args, r, ctx, u.hostname, u.port or 443) for r in args.resources]

    def stop(*_):
        stopping.set()
        for r in recs:
            r.close()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for r in recs:
        r.start()
    while not stopping.is_set():
        stopping.wait(1)
    for r in recs:
        r.join(5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
