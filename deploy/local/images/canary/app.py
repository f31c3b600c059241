#!/usr/bin/python3
"""The canary: a stand-in notebook that keeps model state and checkpoints it.

It is what pods of the real-node test classes run (hibernator.local/canary:dev,
deploy/local/images/canary.sh). Python standard library only.

    GET  /canary                 a random value drawn at process start and kept
                                 only in memory (32 hex digits and a newline):
                                 what `kubectl workspace drill` compares before
                                 and after a pause. A process that is restored
                                 with its memory answers the same value; a new
                                 process answers a new one.
    PUT  /state                  the body (at most 4 KiB of UTF-8) becomes the
                                 "model state", kept in memory like a kernel's
                                 variables.
    GET  /state                  JSON: {"value", "source", ...}; source is
                                 "checkpoint" when the value was read back from
                                 the checkpoint file at start, "set" when it was
                                 PUT into this process, "fresh" when there is
                                 none. "checkpoint" also says who wrote the file
                                 ("request" or "sigterm") and when. "told" is
                                 the path in $HIBERNATOR_CHECKPOINT_PATH, or
                                 null when the controller did not set it.
    POST /hibernator/checkpoint  writes the state to the checkpoint file now and
    PUT  /hibernator/checkpoint  answers 200 once it is on disk (the class's
                                 spec.checkpoint.request; docs/snapshots.md, "The
                                 application's checkpoint"); 500 with the reason
                                 when it cannot.
    GET  /healthz                "ok"

On SIGTERM it writes the checkpoint too, then exits 0: what a notebook that
saves on shutdown does within the pod's grace period. It runs as PID 1, which
has no default signal actions, so the handler is what makes it stop.

The checkpoint file is the path in $HIBERNATOR_CHECKPOINT_PATH (the class's
checkpoint.envVar: the controller sets it on a pod resumed from files), else
$CANARY_CHECKPOINT, else /home/canary/.hibernator/checkpoint. It is written
atomically: a temporary file in the same directory, fsync, rename, fsync of the
directory; so a reader finds the old checkpoint or the new one, never half.
"""

import http.server
import json
import os
import secrets
import signal
import socketserver
import sys
import threading
import time

PORT = int(os.environ.get("CANARY_PORT", "8888"))
DEFAULT_PATH = "/home/canary/.hibernator/checkpoint"
MAX_BODY = 4096

# Drawn once per process: the memory a snapshot would keep and a new process lacks.
CANARY = secrets.token_hex(16)


def log(msg):
    print("canary: " + msg, file=sys.stderr, flush=True)


def checkpoint_path():
    return (os.environ.get("HIBERNATOR_CHECKPOINT_PATH")
            or os.environ.get("CANARY_CHECKPOINT") or DEFAULT_PATH)


class State:
    """The model state: one value, where it came from, and the lock that
    keeps a checkpoint and a PUT from interleaving."""

    def __init__(self):
        self.lock = threading.Lock()
        self.value = None
        self.source = "fresh"
        self.checkpoint = None  # what the file said at start, when it was read
        self.error = None       # why the file could not be read, when it exists

    def load(self, path):
        try:
            with open(path, encoding="utf-8") as f:
                saved = json.load(f)
        except FileNotFoundError:
            return
        except (OSError, ValueError) as e:
            self.error = "%s: %s" % (path, e)
            log("checkpoint not read: " + self.error)
            return
        self.value = saved.get("value")
        self.source = "checkpoint"
        self.checkpoint = {"path": path, "writtenBy": saved.get("writtenBy"),
                           "writtenAt": saved.get("writtenAt")}
        log("state read back from %s (written by %s)" % (path, saved.get("writtenBy")))

    def save(self, why):
        """Writes the checkpoint; returns None or the reason it failed."""
        path = checkpoint_path()
        with self.lock:
            doc = {"value": self.value, "writtenBy": why,
                   "writtenAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        tmp = "%s.tmp-%d" % (path, os.getpid())
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(doc, f)
                f.flush()
                os.fsync(f.fileno())
            os.rename(tmp, path)
            d = os.open(os.path.dirname(path), os.O_RDONLY)
            try:
                os.fsync(d)
            finally:
                os.close(d)
        except OSError as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            log("checkpoint (%s) failed: %s" % (why, e))
            return str(e)
        log("checkpoint (%s) written to %s" % (why, path))
        return None


STATE = State()


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "canary"

    def log_message(self, fmt, *args):
        log("%s %s" % (self.address_string(), fmt % args))

    def reply(self, code, body, ctype="text/plain; charset=utf-8"):
        data = body.encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/canary":
            self.reply(200, CANARY + "\n")
        elif self.path == "/state":
            with STATE.lock:
                doc = {"value": STATE.value, "source": STATE.source,
                       "told": os.environ.get("HIBERNATOR_CHECKPOINT_PATH")}
                if STATE.checkpoint:
                    doc["checkpoint"] = STATE.checkpoint
                if STATE.error:
                    doc["error"] = STATE.error
            self.reply(200, json.dumps(doc) + "\n", "application/json")
        elif self.path == "/healthz":
            self.reply(200, "ok\n")
        else:
            self.reply(404, "not found\n")

    def do_PUT(self):
        if self.path == "/state":
            n = int(self.headers.get("Content-Length") or 0)
            if n > MAX_BODY:
                self.reply(413, "at most %d bytes\n" % MAX_BODY)
                return
            try:
                value = self.rfile.read(n).decode("utf-8")
            except UnicodeDecodeError:
                self.reply(400, "not UTF-8\n")
                return
            with STATE.lock:
                STATE.value = value
                STATE.source = "set"
            self.reply(200, "ok\n")
        elif self.path == "/hibernator/checkpoint":
            self.do_POST()
        else:
            self.reply(404, "not found\n")

    def do_POST(self):
        if self.path != "/hibernator/checkpoint":
            self.reply(404, "not found\n")
            return
        err = STATE.save("request")
        if err:
            self.reply(500, "checkpoint not written: %s\n" % err)
        else:
            self.reply(200, "written\n")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    STATE.load(checkpoint_path())
    server = Server(("0.0.0.0", PORT), Handler)

    def on_term(signum, frame):
        # The pod is being deleted: save within the grace period, then stop.
        # shutdown() waits for serve_forever, which runs in this very thread,
        # so it is asked for from another one.
        STATE.save("sigterm")
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    log("uid %d, listening on :%d, checkpoint %s, state from %s"
        % (os.getuid(), PORT, checkpoint_path(), STATE.source))
    server.serve_forever(poll_interval=0.2)
    log("stopped")


if __name__ == "__main__":
    main()
