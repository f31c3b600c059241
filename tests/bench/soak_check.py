#!/usr/bin/env python3
"""Checks a soak run's recordings (tests/bench/soak.sh) against the rules no
crash or API server fault may break, from what independent watches saw, never
from the controller's own logs.

  soak_check.py RUN_DIR

RUN_DIR holds:
  meta.json       namespace, the workspaces of each class, when faults ended
  drive.jsonl     the driver's spec.paused flips ({"t","t_end","ws","paused"})
  faults.jsonl    the faults ({"t","t_end","kind","detail"})
  rec/*.jsonl     soak_record.py's recordings: pods, pvcs, events, workspaces,
                  podsnapshots, triggers

Prints a table of the counts (CHECKS) and every finding with the workspace, the
times and the objects, and exits 1 when any count is not 0 (2 when the run
directory cannot be read).

Ordering. The API server stamps every write with a resourceVersion; on the
local cluster (one etcd, no per-resource etcd servers) that is the etcd
revision, one counter for all objects, so the checker orders writes of
different resources by resourceVersion as integers. This is a property of the
benchmark's cluster, not a rule of the API (clients must treat
resourceVersions as opaque). Receipt times order what has no
resourceVersion of its own (the driver's flips, the faults) and decide the
30-second convergence.
"""
import bisect
import datetime
import json
import os
import re
import sys

WS_LABEL = "hibernator.dev/workspace"
TRIGGERED_BY = "gke-pod-snapshot-triggered-by"
ORIGIN_POD = "podsnapshot.gke.io/origin-pod"
ORIGIN_POD_UID = "simulator.hibernator.dev/origin-pod-uid"
PS_NAME = "podsnapshot.gke.io/ps-name"

# Event reasons that mark one transition of a pause or a resume: each may be
# posted once per spec.paused flip it answers.
PAUSE_REASONS = ("Pausing", "IdleTimeout", "SnapshotReady", "Paused")
RESUME_REASONS = ("Resuming", "Resumed")
ONCE_REASONS = ("Created",)

# The Event that begins a pause: one of these, by what asked for it.
PAUSE_START_REASONS = ("Pausing", "IdleTimeout", "Preempted", "Evicted", "PreWarmYielded")

# A Resumed Event's words for where the session came from (decide_run.c
# came_back()), against status.lastResume.restoredFrom.
RESUMED_WORDS = (
    ("from snapshot ", "FromSnapshot"),
    ("cold start", "ColdStart"),
    ("new, empty home", "FreshHome"),
    ("from the files and the application's checkpoint", "FromCheckpoint"),
)

# What the checks read of a history record.
HISTORY_KEYS = ("pausedAt", "podDeletedAt", "acceleratorReleasedAt", "memory", "unobserved")

CHECKS = [
    ("deleted_before_ready", "pods deleted before their snapshot was Ready"),
    ("two_live_pods", "moments with two live pods for one workspace"),
    ("files_with_snapshot", "pauses recorded as files while a Ready snapshot existed"),
    ("duplicate_events", "duplicate events (one workspace, reason and transition)"),
    ("pvc_replaced", "home claims replaced (PVC uid changed or claim deleted)"),
    ("not_converged", "workspaces not converged within 30 s of the last fault"),
    ("snapshot_without_ready", "pauses recorded as snapshot with no Ready PodSnapshot of the pause"),
    ("event_contradicts_status", "Paused and Resumed events that say less or more than the status"),
    ("missing_timeline", "history records with a timeline field neither written nor marked unobserved"),
    ("missing_paused_event", "pauses that reached Paused without a Paused event"),
    ("resume_without_restore", "resumes recorded FromSnapshot that no restored pod backs"),
    ("missing_transition_event", "pauses without their first Event, resumes ready without Resumed"),
]


def ts(t):
    if t is None:
        return "-"
    d = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (d.microsecond // 1000)


def parse_time(s):
    """RFC 3339 (whole or fractional seconds) to Unix seconds, or None."""
    if not s:
        return None
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", s)
    if not m:
        return None
    base = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")
    tz = m.group(3)
    off = 0 if tz == "Z" else (int(tz[1:3]) * 60 + int(tz[4:6])) * (1 if tz[0] == "+" else -1)
    t = base.replace(tzinfo=datetime.timezone.utc).timestamp() - off * 60
    return t + (float(m.group(2)) if m.group(2) else 0.0)


def meta(o):
    return o.get("metadata") or {}


def rv_of(o):
    try:
        return int(meta(o).get("resourceVersion", "0"))
    except ValueError:
        return 0


def cond(o, typ):
    for c in (o.get("status") or {}).get("conditions") or []:
        if c.get("type") == typ:
            return c
    return None


def is_ready(o, typ="Ready"):
    c = cond(o, typ)
    return bool(c) and c.get("status") == "True"


def is_live_pod(o):
    return not meta(o).get("deletionTimestamp") and (o.get("status") or {}).get("phase") not in (
        "Succeeded",
        "Failed",
    )


def slim(o):
    """What the checks read of an object, so that hours of recording fit in
    memory."""
    m = meta(o)
    labels = m.get("labels") or {}
    ann = m.get("annotations") or {}
    sm = {k: m[k] for k in ("name", "uid", "resourceVersion", "generation", "deletionTimestamp") if k in m}
    sm["labels"] = {k: labels[k] for k in (WS_LABEL, TRIGGERED_BY) if k in labels}
    sm["annotations"] = {k: ann[k] for k in (ORIGIN_POD, ORIGIN_POD_UID, PS_NAME) if k in ann}
    out = {"metadata": sm}
    spec = o.get("spec")
    if isinstance(spec, dict) and "paused" in spec:
        out["spec"] = {"paused": spec["paused"]}
    st = o.get("status")
    if isinstance(st, dict):
        ss = {k: st[k] for k in ("phase", "state", "observedGeneration", "podName", "snapshotCreated") if k in st}
        ss["conditions"] = [
            {"type": c.get("type"), "status": c.get("status")} for c in st.get("conditions") or [] if isinstance(c, dict)
        ]
        if isinstance(st.get("lastPause"), dict) and "memory" in st["lastPause"]:
            ss["lastPause"] = {"memory": st["lastPause"]["memory"]}
        if isinstance(st.get("lastResume"), dict):
            lr = {k: st["lastResume"][k] for k in ("restoredFrom", "readyAt") if k in st["lastResume"]}
            if lr:
                ss["lastResume"] = lr
        if isinstance(st.get("accounting"), dict):
            ss["accounting"] = {k: st["accounting"].get(k, 0) for k in ("pauses", "resumes")}
        if isinstance(st.get("history"), list):
            ss["history"] = [
                {k: r[k] for k in HISTORY_KEYS if k in r} for r in st["history"] if isinstance(r, dict)
            ]
        out["status"] = ss
    for k in ("involvedObject", "reason", "message", "eventTime", "firstTimestamp", "count", "reportingInstance"):
        if k in o:
            out[k] = o[k]
    return out


class Obs:
    """One thing a recorder learnt about one object."""

    __slots__ = ("t", "rv", "type", "obj", "relist")

    def __init__(self, t, rv, typ, obj, relist=False):
        self.t, self.rv, self.type, self.obj, self.relist = t, rv, typ, obj, relist

    @property
    def uid(self):
        return meta(self.obj).get("uid")

    @property
    def name(self):
        return meta(self.obj).get("name")


def load_stream(path):
    """The recording as a list of Obs in the order received; a relist becomes
    MODIFIED/ADDED for what changed and DELETED for what vanished."""
    out, known, relists, reconnects = [], {}, 0, 0
    if not os.path.exists(path):
        return out, relists, reconnects
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                # The last line of a recorder killed mid-write.
                continue
            typ, t = rec.get("type"), rec.get("t", 0.0)
            if typ == "RECONNECT":
                reconnects += 1
            elif typ == "RELIST":
                relists += 1
                rv = int(rec.get("rv") or 0)
                seen = set()
                for o in rec.get("items") or []:
                    o = slim(o)
                    uid = meta(o).get("uid")
                    seen.add(uid)
                    old = known.get(uid)
                    if old is None or rv_of(old) != rv_of(o):
                        out.append(Obs(t, rv_of(o), "ADDED" if old is None else "MODIFIED", o, True))
                    known[uid] = o
                for uid in [u for u in known if u not in seen]:
                    out.append(Obs(t, rv, "DELETED", known.pop(uid), True))
            elif typ in ("ADDED", "MODIFIED", "DELETED"):
                o = slim(rec.get("object") or {})
                out.append(Obs(t, rv_of(o), typ, o))
                if typ == "DELETED":
                    known.pop(meta(o).get("uid"), None)
                else:
                    known[meta(o).get("uid")] = o
    return out, relists, reconnects


def load_jsonl(path):
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
    return out


class Run:
    def __init__(self, d):
        with open(os.path.join(d, "meta.json")) as f:
            self.meta = json.load(f)
        self.ns = self.meta["namespace"]
        self.snap_ws = list(self.meta.get("snapshot_workspaces", []))
        self.files_ws = list(self.meta.get("files_workspaces", []))
        self.all_ws = self.snap_ws + self.files_ws
        self.flips = load_jsonl(os.path.join(d, "drive.jsonl"))
        self.faults = load_jsonl(os.path.join(d, "faults.jsonl"))
        self.waits = load_jsonl(os.path.join(d, "waits.jsonl"))
        self.streams, self.relists, self.reconnects = {}, {}, {}
        for r in ("pods", "pvcs", "events", "workspaces", "podsnapshots", "triggers"):
            s, nrel, nrec = load_stream(os.path.join(d, "rec", r + ".jsonl"))
            self.streams[r], self.relists[r], self.reconnects[r] = s, nrel, nrec
        self.findings = {k: [] for k, _ in CHECKS}
        self.counts = {}
        self._ws_index = None
        self._snaps = None

    def add(self, check, text, weight=1):
        self.findings[check].append(text)
        self.counts[check] = self.counts.get(check, 0) + weight

    def faults_near(self, t, before=5.0, after=1.0):
        """The faults from `before` seconds before t to `after` after it, for
        the findings: what may have caused it."""
        out = []
        for f in self.faults:
            a, b = f.get("t", 0), f.get("t_end", f.get("t", 0))
            if a - after <= t and t <= b + before:
                out.append("%s %s%s" % (f.get("kind"), ts(a), " " + f["detail"] if f.get("detail") else ""))
        return "; faults near: " + ", ".join(out) if out else "; no fault within 5 s before"

    def ws_at(self, ws, rv):
        """The last recorded state of Workspace ws written before rv."""
        if self._ws_index is None:
            self._ws_index = {}
            for ob in self.streams["workspaces"]:
                if ob.type != "DELETED":
                    self._ws_index.setdefault(ob.name, []).append(ob)
            for v in self._ws_index.values():
                v.sort(key=lambda o: o.rv)
        v = self._ws_index.get(ws, [])
        i = self._bisect(v, rv)
        return v[i - 1].obj if i > 0 else None

    @staticmethod
    def _bisect(v, rv):
        lo, hi = 0, len(v)
        while lo < hi:
            mid = (lo + hi) // 2
            if v[mid].rv < rv:
                lo = mid + 1
            else:
                hi = mid
        return lo

    # ------------------------------------------------------------- snapshots

    def snapshots(self):
        """PodSnapshots by uid: name, origin pod (name, uid), trigger,
        first rv and time seen Ready."""
        if self._snaps is not None:
            return self._snaps
        snaps = {}
        for ob in self.streams["podsnapshots"]:
            m = meta(ob.obj)
            s = snaps.setdefault(
                ob.uid,
                {
                    "name": m.get("name"),
                    "pod": (m.get("annotations") or {}).get(ORIGIN_POD),
                    "pod_uid": (m.get("annotations") or {}).get(ORIGIN_POD_UID),
                    "trigger": (m.get("labels") or {}).get(TRIGGERED_BY),
                    "ready_rv": None,
                    "ready_t": None,
                },
            )
            if ob.type != "DELETED" and is_ready(ob.obj) and s["ready_rv"] is None:
                s["ready_rv"], s["ready_t"] = ob.rv, ob.t
        # A PodSnapshot without GKE's label is found through its trigger.
        for ob in self.streams["triggers"]:
            made = ((ob.obj.get("status") or {}).get("snapshotCreated") or {}).get("name")
            for s in snaps.values():
                if made and s["name"] == made and not s["trigger"]:
                    s["trigger"] = ob.name
        self._snaps = snaps
        return snaps

    def check_deleted_before_ready(self):
        snaps = self.snapshots()
        last = {}
        done = set()
        for ob in self.streams["pods"]:
            uid = ob.uid
            ws = (meta(ob.obj).get("labels") or {}).get(WS_LABEL)
            deleting = ob.type == "DELETED" or meta(ob.obj).get("deletionTimestamp")
            prev = last.get(uid)
            if ob.type != "DELETED":
                last[uid] = ob.obj
            if not deleting or uid in done or ws not in self.snap_ws:
                continue
            done.add(uid)
            if prev is None or not is_live_pod(prev) or not is_ready(prev):
                continue  # not a running, ready pod: nothing to snapshot
            wso = self.ws_at(ws, ob.rv)
            if not wso or not (wso.get("spec") or {}).get("paused"):
                continue  # not a pause (a twin or a stopped pod): check 2's business
            mine = [s for s in snaps.values() if (s["pod_uid"] == uid if s["pod_uid"] else s["pod"] == ob.name)]
            if any(s["ready_rv"] is not None and s["ready_rv"] < ob.rv for s in mine):
                continue
            pauses = ((wso.get("status") or {}).get("accounting") or {}).get("pauses", 0)
            what = (
                ", ".join(
                    "PodSnapshot %s (trigger %s) %s"
                    % (
                        s["name"],
                        s["trigger"] or "?",
                        "Ready at %s rv %d" % (ts(s["ready_t"]), s["ready_rv"])
                        if s["ready_rv"] is not None
                        else "never Ready",
                    )
                    for s in mine
                )
                or "no PodSnapshot of this pod"
            )
            dts = meta(ob.obj).get("deletionTimestamp")
            self.add(
                "deleted_before_ready",
                "%s: pod %s (uid %s) deleted at %s (rv %d, %s%s) in pause %s; %s%s"
                % (
                    ws,
                    ob.name,
                    uid,
                    ts(ob.t),
                    ob.rv,
                    "deletionTimestamp " + dts if dts else "gone",
                    ", seen in a relist" if ob.relist else "",
                    pauses,
                    what,
                    self.faults_near(ob.t),
                ),
            )

    # ------------------------------------------------------------- pods

    def check_two_live_pods(self):
        live = {}  # ws -> {uid: name}
        open_ = {}  # ws -> finding being built
        for ob in self.streams["pods"]:
            ws = (meta(ob.obj).get("labels") or {}).get(WS_LABEL)
            if ws is None:
                continue
            s = live.setdefault(ws, {})
            if ob.type != "DELETED" and is_live_pod(ob.obj):
                s[ob.uid] = ob.name
            else:
                s.pop(ob.uid, None)
            if len(s) > 1 and ws not in open_:
                open_[ws] = {"t": ob.t, "rv": ob.rv, "pods": sorted(s.values())}
            elif len(s) <= 1 and ws in open_:
                f = open_.pop(ws)
                self.record_twins(ws, f, ob.t)
        for ws, f in open_.items():
            self.record_twins(ws, f, None)

    def record_twins(self, ws, f, until):
        self.add(
            "two_live_pods",
            "%s: live pods %s at once from %s (rv %d) until %s%s"
            % (
                ws,
                " and ".join(f["pods"]),
                ts(f["t"]),
                f["rv"],
                ts(until) if until else "the end of the recording",
                self.faults_near(f["t"]),
            ),
        )

    # ------------------------------------------------------------- ledger

    def check_files_with_snapshot(self):
        snaps = self.snapshots()
        seen = set()
        for ob in self.streams["workspaces"]:
            ws = ob.name
            if ws not in self.snap_ws or ob.type == "DELETED":
                continue
            st = ob.obj.get("status") or {}
            memory = (st.get("lastPause") or {}).get("memory")
            if memory not in ("files", "snapshotFailed"):
                continue
            n = (st.get("accounting") or {}).get("pauses", 0)
            if (ws, n) in seen:
                continue
            seen.add((ws, n))
            pat = re.compile(r"^%s-p%d-\d+$" % (re.escape(ws), n))
            ready = [
                s
                for s in snaps.values()
                if s["trigger"] and pat.match(s["trigger"]) and s["ready_rv"] is not None and s["ready_rv"] < ob.rv
            ]
            if not ready:
                continue
            self.add(
                "files_with_snapshot",
                "%s: pause %d recorded lastPause.memory=%s at %s (rv %d) while %s%s"
                % (
                    ws,
                    n,
                    memory,
                    ts(ob.t),
                    ob.rv,
                    ", ".join(
                        "PodSnapshot %s (trigger %s, of pod %s) was Ready since %s (rv %d)"
                        % (s["name"], s["trigger"], s["pod"], ts(s["ready_t"]), s["ready_rv"])
                        for s in ready
                    ),
                    self.faults_near(ob.t, before=10.0),
                ),
            )

    # ------------------------------------------------------------- the record

    def numbers(self, pick):
        """ws -> the pause or resume numbers pick(status, pauses, resumes)
        returns for its recorded states (0: none)."""
        out = {}
        for ob in self.streams["workspaces"]:
            if ob.type == "DELETED":
                continue
            st = ob.obj.get("status") or {}
            acc = st.get("accounting") or {}
            k = pick(st, acc.get("pauses", 0), acc.get("resumes", 0))
            if k:
                out.setdefault(ob.name, set()).add(k)
        return out

    def last_recorded(self, block, field, counter):
        """(ws, accounting[counter]) -> (the last status[block][field] recorded
        while the counter said so, the Obs that recorded it)."""
        out = {}
        for ob in self.streams["workspaces"]:
            if ob.type == "DELETED":
                continue
            st = ob.obj.get("status") or {}
            value = (st.get(block) or {}).get(field)
            if value:
                out[(ob.name, (st.get("accounting") or {}).get(counter, 0))] = (value, ob)
        return out

    def final_memory(self):
        """(ws, pause number) -> the last lastPause.memory recorded for it."""
        return self.last_recorded("lastPause", "memory", "pauses")

    def check_snapshot_without_ready(self):
        snaps = self.snapshots()
        for (ws, n), (memory, ob) in sorted(self.final_memory().items()):
            if memory != "snapshot" or ws not in self.snap_ws:
                continue
            pat = re.compile(r"^%s-p%d-\d+$" % (re.escape(ws), n))
            if any(s["trigger"] and pat.match(s["trigger"]) and s["ready_rv"] is not None for s in snaps.values()):
                continue
            self.add(
                "snapshot_without_ready",
                "%s: pause %d recorded lastPause.memory=snapshot at %s (rv %d), but no PodSnapshot of a "
                "trigger %s-p%d-* was seen Ready" % (ws, n, ts(ob.t), ob.rv, ws, n),
            )

    def check_paused_events(self):
        """A Paused event's words against the memory its pause recorded, and
        every pause that reached Paused has one."""
        memory = self.final_memory()
        events = self.workspace_events(("Paused",))  # ws -> Paused events (first Obs of each)
        for ws, evs in sorted(events.items()):
            for ob in evs.values():
                msg = ob.obj.get("message") or ""
                # The status the event was decided on, and the one it records.
                before = self.ws_at(ws, ob.rv) or {}
                n = ((before.get("status") or {}).get("accounting") or {}).get("pauses", 0)
                kept = None
                for k in (n, n + 1):
                    if (ws, k) in memory:
                        kept = memory[(ws, k)][0]
                        break
                says_snapshot = "holds its memory" in msg
                says_files = "home keeps the files" in msg and not says_snapshot
                if (says_snapshot and kept not in (None, "snapshot")) or (says_files and kept == "snapshot"):
                    self.add(
                        "event_contradicts_status",
                        "%s: Paused event %s at %s says %r while the pause recorded memory=%s"
                        % (ws, meta(ob.obj).get("name"), ts(ob.t), msg, kept),
                    )
        # ws -> pause numbers that reached Paused
        reached = self.numbers(lambda st, n, r: n if st.get("state") == "Paused" and n > r else 0)
        for ws, ns in sorted(reached.items()):
            got = len(events.get(ws, {}))
            if got < len(ns):
                self.add(
                    "missing_paused_event",
                    "%s: %d pauses reached Paused, %d Paused events were recorded" % (ws, len(ns), got),
                    weight=len(ns) - got,
                )

    def workspace_events(self, reasons):
        """ws -> {event uid: first Obs} of the Workspace events with these reasons."""
        out = {}
        for ob in self.streams["events"]:
            if ob.type == "DELETED":
                continue
            e = ob.obj
            io = e.get("involvedObject") or {}
            if io.get("kind") == "Workspace" and e.get("reason") in reasons:
                out.setdefault(io.get("name"), {}).setdefault(ob.uid, ob)
        return out

    def restored_from(self):
        """(ws, resume number) -> (the last lastResume.restoredFrom recorded for
        it, its Obs)."""
        return self.last_recorded("lastResume", "restoredFrom", "resumes")

    def check_transition_events(self):
        """Every pause counted has the Event that began it, every resume that
        ended (lastResume.readyAt) its Resumed Event; a Resumed Event says
        where the session came from as the status records it."""
        starts = self.workspace_events(PAUSE_START_REASONS)
        resumed = self.workspace_events(("Resumed",))
        rf = self.restored_from()
        for ws, evs in sorted(resumed.items()):
            for ob in evs.values():
                msg = ob.obj.get("message") or ""
                said = next((v for w, v in RESUMED_WORDS if w in msg), None)
                before = self.ws_at(ws, ob.rv) or {}
                n = ((before.get("status") or {}).get("accounting") or {}).get("resumes", 0)
                got = rf.get((ws, n), (None, None))[0]
                if said and got and said != got:
                    self.add(
                        "event_contradicts_status",
                        "%s: Resumed event %s at %s says %r while resume %d recorded restoredFrom=%s"
                        % (ws, meta(ob.obj).get("name"), ts(ob.t), msg, n, got),
                    )
        pauses = self.numbers(lambda st, n, r: n)
        # A resume is over when its pod is ready and, for a restore, its
        # verdict is in: lastResume.readyAt (state Running comes with the
        # pod's readiness, before the verdict).
        ready = self.numbers(lambda st, n, r: r if (st.get("lastResume") or {}).get("readyAt") else 0)
        for what, counted, events in (
            ("pauses were counted", pauses, starts),
            ("resumes became ready", ready, resumed),
        ):
            for ws, ns in sorted(counted.items()):
                got = len(events.get(ws, {}))
                if got < len(ns):
                    self.add(
                        "missing_transition_event",
                        "%s: %d %s, %d of their Events were recorded (%s)"
                        % (
                            ws,
                            len(ns),
                            what,
                            got,
                            "Resumed" if events is resumed else "/".join(PAUSE_START_REASONS),
                        ),
                        weight=len(ns) - got,
                    )

    def check_resume_source(self):
        """Where each resume came from, against the backend's own objects: a
        resume recorded FromSnapshot needs a pod of the workspace that named
        a PodSnapshot seen Ready (GKE's ps-name) and said PodRestored=True.
        Counted per workspace: its FromSnapshot resumes against such pods."""
        recorded = self.restored_from()  # (ws, resume number) -> (restoredFrom, Obs)
        ready = {s["name"] for s in self.snapshots().values() if s["ready_rv"] is not None}
        restored = {}  # ws -> uids of pods restored from a Ready PodSnapshot
        for ob in self.streams["pods"]:
            if ob.type == "DELETED":
                continue
            m = meta(ob.obj)
            if (m.get("annotations") or {}).get(PS_NAME) in ready and is_ready(ob.obj, "PodRestored"):
                restored.setdefault((m.get("labels") or {}).get(WS_LABEL), set()).add(ob.uid)
        claimed = {}
        for (ws, n), (rf, ob) in sorted(recorded.items()):
            if rf == "FromSnapshot" and ws in self.snap_ws:
                claimed.setdefault(ws, []).append((n, ob))
        for ws, resumes in sorted(claimed.items()):
            backed = len(restored.get(ws, ()))
            if len(resumes) <= backed:
                continue
            self.add(
                "resume_without_restore",
                "%s: %d resumes recorded FromSnapshot (%s), %d pods restored from a Ready PodSnapshot "
                "(ps-name and PodRestored=True) were seen"
                % (
                    ws,
                    len(resumes),
                    ", ".join("resume %d at %s (rv %d)" % (n, ts(ob.t), ob.rv) for n, ob in resumes),
                    backed,
                ),
                weight=len(resumes) - backed,
            )

    def check_history_timeline(self):
        # Judge each record as last recorded.
        last = {}
        for ob in self.streams["workspaces"]:
            if ob.type == "DELETED":
                continue
            for rec in (ob.obj.get("status") or {}).get("history") or []:
                last[(ob.name, rec.get("pausedAt"))] = (rec, ob)
        for (ws, at), (rec, ob) in sorted(last.items(), key=lambda x: (x[0][0], x[0][1] or "")):
            if not rec.get("acceleratorReleasedAt"):
                continue
            unobserved = (rec.get("unobserved") or "").split(",")
            if not rec.get("podDeletedAt") and "podDeletedAt" not in unobserved:
                self.add(
                    "missing_timeline",
                    "%s: the record of the pause at %s (last seen rv %d) has acceleratorReleasedAt but "
                    "neither podDeletedAt nor unobserved: podDeletedAt" % (ws, at, ob.rv),
                )

    # ------------------------------------------------------------- events

    def check_duplicate_events(self):
        flips = {}
        for f in self.flips:
            flips.setdefault(f["ws"], []).append(f)
        kind_index = {}  # (ws, paused) -> (flip times, indices into flips[ws])
        for ws, v in flips.items():
            v.sort(key=lambda f: f["t"])
            for i, f in enumerate(v):
                e = kind_index.setdefault((ws, bool(f["paused"])), ([], []))
                e[0].append(f["t"])
                e[1].append(i)
        posts = {}  # event uid -> (first Obs, last count)
        for ob in self.streams["events"]:
            if ob.type == "DELETED":
                continue
            io = ob.obj.get("involvedObject") or {}
            if io.get("kind") != "Workspace":
                continue
            old = posts.get(ob.uid)
            posts[ob.uid] = (old[0] if old else ob, max(ob.obj.get("count") or 1, old[1] if old else 1))
        groups = {}
        for first, count in posts.values():
            e = first.obj
            ws = (e.get("involvedObject") or {}).get("name")
            reason = e.get("reason")
            if reason in PAUSE_REASONS:
                want = (True,)
            elif reason in RESUME_REASONS:
                want = (False,)
            elif reason in ONCE_REASONS:
                want = (True, False)
            else:
                continue
            when = parse_time(e.get("eventTime")) or parse_time(e.get("firstTimestamp")) or first.t
            # The flip this event answers: the last one of its kind made
            # before the decision (an event is decided only after the
            # controller saw the flip, which was written after the driver
            # sent it).
            k = -1
            for p in want:
                times, idx = kind_index.get((ws, p), ([], []))
                i = bisect.bisect_right(times, when)
                if i > 0 and idx[i - 1] > k:
                    k = idx[i - 1]
            for _ in range(count):
                groups.setdefault((ws, reason, k), []).append((when, first))
        for (ws, reason, k), evs in sorted(groups.items(), key=lambda g: (g[0][0], g[0][2], g[0][1])):
            if len(evs) < 2:
                continue
            evs.sort(key=lambda x: x[0])
            f = flips.get(ws, [])[k] if k >= 0 else None
            what = (
                "spec.paused=%s sent at %s" % ("true" if f["paused"] else "false", ts(f["t"]))
                if f
                else "the workspace's creation"
            )
            self.add(
                "duplicate_events",
                "%s: %s posted %d times for one transition (flip %d, %s): %s%s"
                % (
                    ws,
                    reason,
                    len(evs),
                    k,
                    what,
                    "; ".join(
                        "%s decided %s by %s rv %d"
                        % (meta(o.obj).get("name"), ts(w), o.obj.get("reportingInstance") or "?", o.rv)
                        for w, o in evs
                    ),
                    self.faults_near(evs[-1][0], before=5.0 + evs[-1][0] - evs[0][0]),
                ),
                weight=len(evs) - 1,
            )

    # ------------------------------------------------------------- claims

    def check_pvc_replaced(self):
        homes = {ws + "-home": ws for ws in self.all_ws}
        claims = {}  # name -> [(uid, first seen t, rv)]
        deleted = {}  # uid -> (t, rv) of the first sign of its deletion
        for ob in self.streams["pvcs"]:
            if ob.name not in homes:
                continue
            u = claims.setdefault(ob.name, [])
            if ob.uid not in [x[0] for x in u]:
                u.append((ob.uid, ob.t, ob.rv))
            if (ob.type == "DELETED" or meta(ob.obj).get("deletionTimestamp")) and ob.uid not in deleted:
                deleted[ob.uid] = (ob.t, ob.rv)
        for name, u in sorted(claims.items()):
            ws = homes[name]
            for prev, cur in zip(u, u[1:]):
                self.add(
                    "pvc_replaced",
                    "%s: claim %s uid %s replaced by uid %s at %s (rv %d)%s"
                    % (ws, name, prev[0], cur[0], ts(cur[1]), cur[2], self.faults_near(cur[1])),
                )
            uid = u[-1][0]  # an earlier uid that went is counted above
            if uid in deleted:
                t, rv = deleted[uid]
                self.add(
                    "pvc_replaced",
                    "%s: claim %s uid %s deleted at %s (rv %d)%s" % (ws, name, uid, ts(t), rv, self.faults_near(t)),
                )

    # ------------------------------------------------------------- convergence

    def check_converged(self):
        within = float(self.meta.get("converge_within", 30))
        faults_end = self.meta.get("faults_end")
        if faults_end is None:
            faults_end = max([f.get("t_end", f.get("t", 0)) for f in self.faults] or [0])
        merged = []
        for r in ("workspaces", "pods"):
            for ob in self.streams[r]:
                merged.append((ob.t, r, ob))
        merged.sort(key=lambda x: x[0])
        for ws in self.all_ws:
            last_flip = max([f.get("t_end", f["t"]) for f in self.flips if f["ws"] == ws] or [0])
            start = max(faults_end, last_flip)
            wso, pods = None, {}
            good_since = None
            for t, r, ob in merged:
                if r == "workspaces":
                    if ob.name != ws:
                        continue
                    wso = None if ob.type == "DELETED" else ob.obj
                else:
                    if (meta(ob.obj).get("labels") or {}).get(WS_LABEL) != ws:
                        continue
                    if ob.type == "DELETED":
                        pods.pop(ob.uid, None)
                    else:
                        pods[ob.uid] = ob.obj
                ok = self.converged(wso, pods)[0]
                if ok and good_since is None:
                    good_since = t
                elif not ok:
                    good_since = None
            ok, why = self.converged(wso, pods)
            if ok and good_since <= start + within:
                continue
            self.add(
                "not_converged",
                "%s: %s; last fault or flip at %s"
                % (
                    ws,
                    "converged only at %s, %.1f s later" % (ts(good_since), good_since - start)
                    if ok
                    else "not converged at the end of the recording: " + why,
                    ts(start),
                ),
            )

    @staticmethod
    def converged(wso, pods):
        if wso is None:
            return False, "no Workspace"
        spec, st, m = wso.get("spec") or {}, wso.get("status") or {}, meta(wso)
        paused = bool(spec.get("paused"))
        want = "Paused" if paused else "Running"
        names = sorted(meta(p).get("name") for p in pods.values())
        live = [p for p in pods.values() if is_live_pod(p)]
        desc = "spec.paused=%s, state %s, generation %s observed %s, pods [%s]" % (
            str(paused).lower(),
            st.get("state"),
            m.get("generation"),
            st.get("observedGeneration"),
            ", ".join(names),
        )
        if st.get("state") != want or st.get("observedGeneration") != m.get("generation"):
            return False, desc
        if paused:
            return (not pods), desc
        if len(pods) != 1 or len(live) != 1 or not is_ready(live[0]):
            return False, desc
        return meta(live[0]).get("name") == st.get("podName"), desc

    # ------------------------------------------------------------- report

    def report(self):
        m = self.meta
        kinds = {}
        for f in self.faults:
            kinds[f.get("kind")] = kinds.get(f.get("kind"), 0) + 1
        rejected = sum(int(f.get("rejected", 0)) for f in self.faults if f.get("kind") == "apf-throttle")
        pauses = sum(1 for f in self.flips if f.get("paused"))
        resumes = sum(1 for f in self.flips if not f.get("paused"))
        print("soak check of %s (namespace %s)" % (m.get("run", "?"), self.ns))
        if m.get("start") and m.get("end"):
            print("  ran %s to %s, %.0f s" % (ts(m["start"]), ts(m["end"]), m["end"] - m["start"]))
        print(
            "  workspaces: %d with snapshots (GKE, simulated), %d with files only"
            % (len(self.snap_ws), len(self.files_ws))
        )
        late = [w for w in self.waits if not w.get("ok")]
        print(
            "  flips sent: %d pauses, %d resumes; %d waits for the state ran out (%d s)"
            % (pauses, resumes, len(late), self.meta.get("wait_timeout", 120))
        )
        for w in late:
            print("    %s: no %s from %s to %s (last seen: %s)" % (w.get("ws"), w.get("want"), ts(w.get("t")), ts(w.get("t_end")), w.get("last")))
        print(
            "  faults: %d controller kills (%d exits on its own), %d API server restarts, "
            "%d etcd compactions, %d APF throttles (%d requests rejected with 429)"
            % (
                kinds.get("controller-kill", 0),
                kinds.get("controller-exit", 0),
                kinds.get("apiserver-restart", 0),
                kinds.get("etcd-compact", 0),
                kinds.get("apf-throttle", 0),
                rejected,
            )
        )
        print(
            "  recorded: %s"
            % ", ".join(
                "%s %d events/%d relists/%d reconnects"
                % (r, sum(1 for o in s if not o.relist), self.relists[r], self.reconnects[r])
                for r, s in sorted(self.streams.items())
            )
        )
        print()
        width = max(len(t) for _, t in CHECKS)
        print("| %-*s | %5s |" % (width, "check", "count"))
        print("|-%s-|-------|" % ("-" * width))
        for k, title in CHECKS:
            print("| %-*s | %5d |" % (width, title, self.counts.get(k, 0)))
        bad = sum(self.counts.values())
        for k, title in CHECKS:
            if self.findings[k]:
                print()
                print("%s:" % title)
                for line in self.findings[k]:
                    print("  " + line)
        print()
        print("RESULT soak violations=%d %s" % (bad, " ".join("%s=%d" % (k, self.counts.get(k, 0)) for k, _ in CHECKS)))
        return 1 if bad else 0


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        run = Run(sys.argv[1])
    except (OSError, ValueError, KeyError) as e:
        print("soak_check: cannot read %s: %s" % (sys.argv[1], e), file=sys.stderr)
        return 2
    run.check_deleted_before_ready()
    run.check_two_live_pods()
    run.check_files_with_snapshot()
    run.check_duplicate_events()
    run.check_pvc_replaced()
    run.check_converged()
    run.check_snapshot_without_ready()
    run.check_paused_events()
    run.check_transition_events()
    run.check_history_timeline()
    run.check_resume_source()
    return run.report()


if __name__ == "__main__":
    sys.exit(main())
