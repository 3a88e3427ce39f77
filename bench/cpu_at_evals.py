#!/usr/bin/env python3
"""The data stage's CPU at each evaluation of a run (bench/regime.sh).

    cpu_at_evals.py PIDFILE LOG OUT

PIDFILE holds the pid of the data stage's root process (the stages before
the trainer run under it); LOG is the trainer's --log, read as it grows.
Every 0.2 s: for each eval event new in LOG, one line "STEP CPU" to OUT,
CPU the user + system seconds of the root and its descendants now (those
still running, and those reaped, through cutime and cstime).  It ends when
the root has exited; OUT then holds a line per evaluation seen, each at
most 0.2 s after the trainer wrote it.  A helper, not a benchmark.
"""
import json
import os
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def stat(pid):
    """utime + stime + cutime + cstime of pid, in ticks, and its children."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
        fields = s[s.rindex(")") + 2:].split()
        ticks = sum(int(x) for x in fields[11:15])
    except (OSError, ValueError):
        return 0, []
    kids = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                kids += [int(k) for k in f.read().split()]
    except OSError:
        pass
    return ticks, kids


def tree_cpu(root):
    total, todo = 0, [root]
    while todo:
        ticks, kids = stat(todo.pop())
        total += ticks
        todo += kids
    return total / TICK


def main():
    pidfile, log, out = sys.argv[1:4]
    for _ in range(200):
        try:
            root = int(open(pidfile).read())
            break
        except (OSError, ValueError):
            time.sleep(0.05)
    else:
        sys.exit("cpu_at_evals.py: no pid in " + pidfile)
    pos, part = 0, ""
    with open(out, "w") as o:
        while True:
            alive = os.path.exists(f"/proc/{root}")
            cpu = tree_cpu(root) if alive else None
            try:
                with open(log) as f:
                    f.seek(pos)
                    chunk = f.read()
                    pos = f.tell()
            except OSError:
                chunk = ""
            part += chunk
            *lines, part = part.split("\n")
            for line in lines:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("event") == "eval" and cpu is not None:
                    o.write(f"{ev['step']} {cpu:.2f}\n")
                    o.flush()
            if not alive:
                break
            time.sleep(0.2)


if __name__ == "__main__":
    main()
