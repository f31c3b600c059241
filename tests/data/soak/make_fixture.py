#!/usr/bin/env python3
"""Writes the soak checker's fixture (this directory): a short recorded run
of four workspaces with violations of every kind that
tests/bench/soak_check.py counts (one of each, two of the Event checks),
next to the same situations done right.
expected.txt is the checker's report on it (test_soak_checker compares).

  snap-1   pause 1 recorded lastPause.memory=files although its PodSnapshot
           was Ready (files_with_snapshot); Pausing posted twice, before and
           after a controller kill (duplicate_events)
  snap-2   pod deleted before its PodSnapshot was Ready (deleted_before_ready);
           resumed but never Running again (not_converged)
  snap-3   the record's checks, below (snapshot_without_ready,
           event_contradicts_status, missing_timeline, missing_paused_event,
           missing_transition_event twice: a pause and a resume);
           a resume recorded FromSnapshot that no restored pod backs
           (resume_without_restore), where snap-1's is backed by its pod
  files-1  a Resumed event that says "from snapshot" for a resume recorded
           FromCheckpoint (event_contradicts_status), where snap-1's says
           what its status says; two live pods after the resume (two_live_pods); home claim
           replaced (pvc_replaced); its pods' deletion seen in a relist after
           an API server restart
"""
import json
import os

T = 1767225600.0  # 2026-01-01T00:00:00Z
NS = "soak-1"
here = os.path.dirname(os.path.abspath(__file__))


def iso(t, micro=False):
    import datetime

    d = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def pod(name, ws, rv, ready=True, deleting=None, uid=None, restored_from=None):
    o = {
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": uid or "uid-" + name,
            "resourceVersion": str(rv),
            "labels": {"hibernator.dev/workspace": ws},
        },
        "spec": {"nodeName": "gpu-node-1"},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }
    if restored_from:
        o["metadata"]["annotations"] = {"podsnapshot.gke.io/ps-name": restored_from}
        o["status"]["conditions"].append({"type": "PodRestored", "status": "True"})
    if deleting is not None:
        o["metadata"]["deletionTimestamp"] = iso(deleting + 1)
        o["metadata"]["deletionGracePeriodSeconds"] = 1
    return o


def ws(name, rv, gen, paused, state, obs=None, pod_name=None, pauses=0, memory=None, restored_from=None):
    st = {"state": state, "observedGeneration": obs or gen, "accounting": {"pauses": pauses, "resumes": pauses}}
    if restored_from:
        st["lastResume"] = {"restoredFrom": restored_from}
    if state == "Running" and pauses:
        st.setdefault("lastResume", {})["readyAt"] = "2026-01-01T00:00:00Z"  # the resume is over
    if pod_name:
        st["podName"] = pod_name
    if memory:
        st["lastPause"] = {"memory": memory}
    return {
        "metadata": {"name": name, "namespace": NS, "uid": "uid-" + name, "resourceVersion": str(rv), "generation": gen},
        "spec": {"className": NS + ("-files" if name.startswith("files") else "-snap"), "paused": paused},
        "status": st,
    }


def snap(name, pod_name, trigger, rv, ready):
    return {
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": "uid-" + name,
            "resourceVersion": str(rv),
            "labels": {"gke-pod-snapshot-triggered-by": trigger},
            "annotations": {
                "podsnapshot.gke.io/origin-pod": pod_name,
                "simulator.hibernator.dev/origin-pod-uid": "uid-" + pod_name,
            },
        },
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def pvc(name, uid, rv):
    return {"metadata": {"name": name, "namespace": NS, "uid": uid, "resourceVersion": str(rv)}}


def event(name, ws_name, reason, t, rv):
    return {
        "metadata": {"name": name, "namespace": NS, "uid": "uid-" + name, "resourceVersion": str(rv)},
        "involvedObject": {"kind": "Workspace", "namespace": NS, "name": ws_name, "uid": "uid-" + ws_name},
        "reason": reason,
        "type": "Normal",
        "eventTime": iso(t, micro=True),
        "firstTimestamp": iso(t),
        "count": 1,
        "reportingInstance": "hibernator-%d" % int(t),
    }


def ev(t, typ, o):
    return {"t": t, "type": typ, "object": o}


rec = {k: [] for k in ("pods", "pvcs", "events", "workspaces", "podsnapshots", "triggers")}
for k in rec:
    rec[k].append({"t": T, "type": "RELIST", "rv": "100", "items": []})

# Creation: each workspace Running on pod <ws>-1 with its home claim.
for i, w in enumerate(("snap-1", "snap-2", "files-1")):
    rec["pvcs"].append(ev(T + 1, "ADDED", pvc(w + "-home", "uid-%s-home" % w, 101 + i)))
    rec["pods"].append(ev(T + 2, "ADDED", pod(w + "-1", w, 104 + i)))
    rec["workspaces"].append(ev(T + 3, "MODIFIED", ws(w, 107 + i, 1, False, "Running", pod_name=w + "-1")))

# The pause flips at T+10 (generation 2).
for i, w in enumerate(("snap-1", "snap-2", "files-1")):
    rec["workspaces"].append(ev(T + 10.1, "MODIFIED", ws(w, 110 + i, 2, True, "Running", obs=1, pod_name=w + "-1")))
rec["events"].append(ev(T + 10.3, "ADDED", event("snap-1.a", "snap-1", "Pausing", T + 10.2, 113)))
rec["events"].append(ev(T + 10.3, "ADDED", event("snap-2.a", "snap-2", "Pausing", T + 10.2, 114)))
rec["events"].append(ev(T + 10.3, "ADDED", event("files-1.a", "files-1", "Pausing", T + 10.2, 115)))
# snap-1: snapshot Ready (rv 121), then the pod deleted (rv 122): right;
# after the kill at T+12.5 Pausing again, and memory=files: wrong.
rec["podsnapshots"].append(ev(T + 11, "ADDED", snap("ps-1", "snap-1-1", "snap-1-p1-1", 120, False)))
rec["podsnapshots"].append(ev(T + 11.5, "MODIFIED", snap("ps-1", "snap-1-1", "snap-1-p1-1", 121, True)))
rec["pods"].append(ev(T + 11.6, "MODIFIED", pod("snap-1-1", "snap-1", 122, deleting=T + 11.6)))
rec["events"].append(ev(T + 12.7, "ADDED", event("snap-1.b", "snap-1", "Pausing", T + 12.6, 123)))
rec["pods"].append(ev(T + 13, "DELETED", pod("snap-1-1", "snap-1", 124, deleting=T + 11.6)))
rec["workspaces"].append(ev(T + 13.1, "MODIFIED", ws("snap-1", 125, 2, True, "Paused", pauses=1, memory="files")))
# snap-2: the pod deleted (rv 131) before its snapshot was Ready (rv 133).
rec["podsnapshots"].append(ev(T + 11, "ADDED", snap("ps-2", "snap-2-1", "snap-2-p1-1", 130, False)))
rec["pods"].append(ev(T + 11.2, "MODIFIED", pod("snap-2-1", "snap-2", 131, deleting=T + 11.2)))
rec["pods"].append(ev(T + 12.2, "DELETED", pod("snap-2-1", "snap-2", 132, deleting=T + 11.2)))
rec["podsnapshots"].append(ev(T + 12.4, "MODIFIED", snap("ps-2", "snap-2-1", "snap-2-p1-1", 133, True)))
rec["workspaces"].append(ev(T + 12.5, "MODIFIED", ws("snap-2", 134, 2, True, "Paused", pauses=1, memory="snapshot")))
# files-1: the pod deleted; the API server restarts; the relist no longer
# has the pod (a delete seen only as its absence).
rec["pods"].append(ev(T + 11, "MODIFIED", pod("files-1-1", "files-1", 140, deleting=T + 11)))
rec["workspaces"].append(ev(T + 12, "MODIFIED", ws("files-1", 141, 2, True, "Paused", pauses=1, memory="files")))

# The resume flips at T+20 (generation 3); the API server restarts at T+25.
for i, w in enumerate(("snap-1", "snap-2", "files-1")):
    rec["workspaces"].append(ev(T + 20.1, "MODIFIED", ws(w, 150 + i, 3, False, "Paused", obs=2, pauses=1)))
    rec["events"].append(ev(T + 20.3, "ADDED", event(w + ".r", w, "Resuming", T + 20.2, 153 + i)))
rec["pods"].append({"t": T + 25, "type": "RECONNECT", "rv": "140", "why": "ConnectionRefusedError"})
rec["pods"].append(
    {
        "t": T + 28.5,
        "type": "RELIST",
        "rv": "160",
        "items": [pod("snap-1-2", "snap-1", 158, restored_from="ps-1"), pod("files-1-2", "files-1", 159)],
    }
)
# files-1: a second live pod for a moment; its home claim replaced.
rec["pods"].append(ev(T + 29, "ADDED", pod("files-1-3", "files-1", 161)))
rec["pods"].append(ev(T + 29.5, "MODIFIED", pod("files-1-3", "files-1", 162, deleting=T + 29.5)))
rec["pods"].append(ev(T + 30.5, "DELETED", pod("files-1-3", "files-1", 163, deleting=T + 29.5)))
rec["pvcs"].append(ev(T + 29, "ADDED", pvc("files-1-home", "uid-files-1-home-2", 164)))
# snap-1 Running on snap-1-2; snap-2 stays Resuming; files-1 paused again.
rec["workspaces"].append(
    ev(T + 29, "MODIFIED", ws("snap-1", 165, 3, False, "Running", pod_name="snap-1-2", pauses=1, restored_from="FromSnapshot"))
)
rec["workspaces"].append(ev(T + 29, "MODIFIED", ws("snap-2", 166, 3, False, "Resuming", pauses=1)))
rec["workspaces"].append(
    ev(T + 29, "MODIFIED", ws("files-1", 167, 3, False, "Running", pod_name="files-1-2", pauses=1, restored_from="FromCheckpoint"))
)
# Their Resumed events: snap-1's says what its status says; files-1's says
# "from snapshot" while its resume recorded FromCheckpoint
# (event_contradicts_status).
resumed = event("snap-1.d", "snap-1", "Resumed", T + 29, 168)
resumed["message"] = "ready 9.0s after the resume request (from snapshot ps-1: memory is back)"
rec["events"].append(ev(T + 29.1, "ADDED", resumed))
resumed = event("files-1.d", "files-1", "Resumed", T + 29, 169)
resumed["message"] = "ready 9.0s after the resume request (from snapshot files-1-x: memory is back)"
rec["events"].append(ev(T + 29.1, "ADDED", resumed))
rec["workspaces"].append(ev(T + 30.1, "MODIFIED", ws("files-1", 170, 4, True, "Running", obs=3, pod_name="files-1-2", pauses=1)))
rec["events"].append(ev(T + 30.3, "ADDED", event("files-1.b", "files-1", "Pausing", T + 30.2, 171)))
rec["pods"].append(ev(T + 31, "MODIFIED", pod("files-1-2", "files-1", 172, deleting=T + 31)))
rec["pods"].append(ev(T + 32, "DELETED", pod("files-1-2", "files-1", 173, deleting=T + 31)))
rec["workspaces"].append(ev(T + 35, "MODIFIED", ws("files-1", 174, 4, True, "Paused", pauses=2, memory="files")))

# snap-3 (created paused at T+40, then driven by hand, no flips): pause 1
# recorded memory=snapshot with no Ready PodSnapshot of it
# (snapshot_without_ready); its Paused event says files only while the
# status says snapshot (event_contradicts_status); its history record has
# acceleratorReleasedAt and neither podDeletedAt nor unobserved
# (missing_timeline). Pause 2 reached Paused without a Paused event
# (missing_paused_event). Pause 2's record is right: unobserved. Pause 1
# has its Pausing event, pause 2 none, and resume 1 became ready without a
# Resumed event (missing_transition_event, twice).


def ws3(rv, state, pauses, resumes, memory=None, history=(), restored_from=None):
    o = ws("snap-3", rv, 1, True, state, pauses=pauses, memory=memory, restored_from=restored_from)
    o["status"]["accounting"]["resumes"] = resumes
    if history:
        o["status"]["history"] = list(history)
    return o


rec3 = {"pausedAt": iso(T + 41), "acceleratorReleasedAt": iso(T + 43), "memory": "snapshot"}
rec["events"].append(ev(T + 40.9, "ADDED", event("snap-3.a", "snap-3", "Pausing", T + 40.8, 179)))
rec["workspaces"].append(ev(T + 41, "MODIFIED", ws3(180, "Pausing", 1, 0)))
paused_ev = event("snap-3.p", "snap-3", "Paused", T + 43, 181)
paused_ev["message"] = "paused; the pod was gone 2.0s after the pause request; home keeps the files and the application's checkpoint"
rec["events"].append(ev(T + 43.1, "ADDED", paused_ev))
rec["workspaces"].append(ev(T + 43.2, "MODIFIED", ws3(182, "Paused", 1, 0, "snapshot", [rec3])))
rec4 = {"pausedAt": iso(T + 50), "acceleratorReleasedAt": iso(T + 52), "memory": "files", "unobserved": "podDeletedAt"}
rec["workspaces"].append(ev(T + 45, "MODIFIED", ws3(183, "Running", 1, 1, "snapshot", [rec3], "FromSnapshot")))
rec["workspaces"].append(ev(T + 52.2, "MODIFIED", ws3(184, "Paused", 2, 1, "files", [rec4, rec3])))

os.makedirs(os.path.join(here, "rec"), exist_ok=True)
for k, lines in rec.items():
    with open(os.path.join(here, "rec", k + ".jsonl"), "w") as f:
        for line in lines:
            f.write(json.dumps(line, sort_keys=True) + "\n")
flips = [
    {"t": T + 10, "t_end": T + 10.1, "ws": w, "paused": True, "generation": 2} for w in ("snap-1", "snap-2", "files-1")
] + [{"t": T + 20, "t_end": T + 20.1, "ws": w, "paused": False, "generation": 3} for w in ("snap-1", "snap-2", "files-1")]
flips.append({"t": T + 30, "t_end": T + 30.1, "ws": "files-1", "paused": True, "generation": 4})
with open(os.path.join(here, "drive.jsonl"), "w") as f:
    for x in flips:
        f.write(json.dumps(x, sort_keys=True) + "\n")
faults = [
    {"t": T + 12.5, "t_end": T + 12.5, "kind": "controller-kill", "detail": "pid 4242"},
    {"t": T + 25, "t_end": T + 28, "kind": "apiserver-restart", "detail": "--kill"},
    {"t": T + 38, "t_end": T + 40, "kind": "apf-throttle", "detail": "2s at nominalConcurrencyShares 0", "rejected": 17},
]
with open(os.path.join(here, "faults.jsonl"), "w") as f:
    for x in faults:
        f.write(json.dumps(x, sort_keys=True) + "\n")
with open(os.path.join(here, "meta.json"), "w") as f:
    json.dump(
        {
            "run": "tests/data/soak",
            "namespace": NS,
            "snapshot_workspaces": ["snap-1", "snap-2", "snap-3"],
            "files_workspaces": ["files-1"],
            "start": T,
            "faults_end": T + 40,
            "end": T + 100,
            "converge_within": 30,
        },
        f,
        indent=1,
        sort_keys=True,
    )
    f.write("\n")
