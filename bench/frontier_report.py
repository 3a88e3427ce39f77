#!/usr/bin/env python3
"""frontier.md and frontier.png from bench/frontier.sh's results.jsonl.

Reads every run of one regime, schedule and data size (whatever sitting
ran it), and writes:
  - final test accuracy per budget and policy, mean +- sd over the seeds;
  - for each target accuracy, the smallest budget at which each policy's
    mean final accuracy reaches it, interpolated linearly between the two
    budgets around the first crossing, and its ratio to uniform's; per seed
    the same from that seed's own runs, whose range gives the spread;
  - the cost at each budget: wall seconds and data-stage CPU seconds,
    and the share rv-score kept;
  - where the runs carry train_wall_s (regime photos: the trainer's wall
    less its evaluation), the wall time at which each policy reaches the
    baseline's final accuracy at 0.5x and 1.0x of the reference,
    interpolated between budgets on the policy's curve of mean accuracy
    against mean wall time, and its ratio to the baseline's wall there;
a dagger wherever a policy's values over the seeds and uniform's do not
overlap (disjoint minimum-maximum ranges: with two or three seeds each,
two policies that do not differ are that far apart rarely, not never).
The PNG (gnuplot): final accuracy against the budget in steps and against
wall seconds, one line per policy, error bars of one sd over the seeds.
Standard library only; gnuplot draws.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

ORDER = ["uniform", "standard", "refurbish-*", "stored-*", "rs2", "random",
         "assistant", "shrink", "both", "shrink-r1", "assistant-f15",
         "autoassist", "history", "assistant-nc", "history-nc", "cut-only"]
LABEL = {
    "standard": "standard (rv-decode | rv-augment)",
    "shrink": "shrink (the assistant before the decode)",
    "both": "both (refurbished, shrunk before the partials)",
    "shrink-r1": "shrink-r1 (shrunk in rv-refurbish --reuse 1, "
                 "before the read)",
    "uniform": "uniform (every sample)",
    "rs2": "rs2 (random subset, no replacement)",
    "random": "random (the assistant keep rate)",
    "assistant": "assistant (rv-score default)",
    "assistant-f15": "assistant, floor 0.15",
    "autoassist": "autoassist (published)",
    "history": "history (Selective-Backprop)",
    "assistant-nc": "assistant, noise cut",
    "history-nc": "history, noise cut",
    "cut-only": "every sample but the noise cut's suspects",
}


def ordered(names):
    """The policies in ORDER, refurbish-R (stored-R) by R where ORDER says
    refurbish-* (stored-*)."""
    out = []
    for o in ORDER:
        if o.endswith("-*"):
            out += sorted((n for n in names if n.startswith(o[:-1])),
                          key=lambda n: int(n.split("-")[1]))
        elif o in names:
            out.append(o)
    return out


def label(p):
    if p.startswith("refurbish-"):
        return f"refurbished, r={p.split('-')[1]}"
    if p.startswith("stored-"):
        return f"refurbished, r={p.split('-')[1]}, partials stored as JPEG"
    return LABEL.get(p, p)


def mean_sd(v):
    if not v:
        return None, None
    m = sum(v) / len(v)
    if len(v) < 2:
        return m, None
    return m, math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1))


def disjoint(a, b):
    """Do the ranges of a and b (two seeds at least each) not overlap?"""
    if len(a) < 2 or len(b) < 2:
        return False
    return max(a) < min(b) or max(b) < min(a)


def crossing(points, t):
    """The budget (or wall time) at which the curve [(budget, acc)], in
    budget order, first reaches t, interpolated linearly from the point
    before; None if it never does, ('<=', b) if its first point already
    does."""
    prev = None
    for b, a in points:
        if a >= t:
            if prev is None:
                return ("<=", b)
            b0, a0 = prev
            return ("=", b0 + (t - a0) / (a - a0) * (b - b0))
        prev = (b, a)
    return None


def table_head(w, first, pols, align):
    """A markdown table's two heading lines: first, then a column a
    policy, numbers right-aligned (align "--:") or left ("---")."""
    w("| " + " | ".join(first + pols) + " |")
    w("| " + " | ".join(["--:"] * len(first) + [align] * len(pols)) + " |")


def fmt_cross(c):
    if c is None:
        return "not reached"
    return ("<= %d" if c[0] == "<=" else "%d") % round(c[1])


def wall_section(w, pols, budgets, seeds, acc, twall, base, ref):
    """The wall time at which each policy reaches the baseline's final
    accuracy at 0.5x and 1.0x of the reference."""
    w("## Wall time to the baseline's final accuracy\n")
    w(f"For each budget B of the reference ({base}'s run at 0.5x and 1.0x "
      f"of it): the trainer's wall seconds, evaluations excluded, at which "
      f"a policy first reaches {base}'s mean final accuracy at B, "
      f"interpolated between its budgets on its curve of mean accuracy "
      f"against mean wall time; then the ratio to {base}'s wall at B.  In "
      f"brackets the per-seed ratios (each seed's runs against the same "
      f"seed's {base} at B), min-max; † where every seed's ratio and 1 do "
      f"not overlap, that is all below 1 or all above.  '<=' where the "
      f"policy's smallest budget already reaches it (an upper bound).\n")
    table_head(w, ["baseline at", "its accuracy", "its wall (s)"],
               [p for p in pols if p != base], "---")
    res = {}
    for frac in (0.5, 1.0):
        b0 = min(budgets, key=lambda b: abs(b - frac * ref))
        if abs(b0 - frac * ref) > 0.02 * ref or (base, b0) not in acc:
            continue
        bacc = acc[(base, b0)]
        bwall = twall.get((base, b0), {})
        if not bwall:
            continue
        tacc = sum(bacc.values()) / len(bacc)
        twm = sum(bwall.values()) / len(bwall)
        cells = []
        for p in pols:
            if p == base:
                continue
            pts = []
            for b in budgets:
                va, vw = acc.get((p, b), {}), twall.get((p, b), {})
                ss = [x for x in va if x in vw]
                if ss:
                    pts.append((sum(vw[x] for x in ss) / len(ss),
                                sum(va[x] for x in ss) / len(ss)))
            c = crossing(pts, tacc)
            if c is None:
                cells.append("not reached")
                res[(frac, p)] = None
                continue
            cell = ("<= " if c[0] == "<=" else "") + \
                f"{c[1]:.0f} s, {c[1] / twm:.2f}x"
            ratios = []
            for x in seeds:
                if x not in bacc or x not in bwall:
                    continue
                sp = [(twall[(p, b)][x], acc[(p, b)][x]) for b in budgets
                      if x in acc.get((p, b), {}) and
                      x in twall.get((p, b), {})]
                cs = crossing(sp, bacc[x])
                ratios.append(None if cs is None else cs[1] / bwall[x])
            got = [r for r in ratios if r is not None]
            res[(frac, p)] = (c[1] / twm, ratios)
            if len(ratios) >= 2:
                if len(got) == len(ratios):
                    cell += f" [{min(got):.2f}-{max(got):.2f}]"
                    if max(got) < 1 or min(got) > 1:
                        cell += " †"
                else:
                    cell += f" [{len(ratios) - len(got)} of {len(ratios)} seeds never]"
            cells.append(cell)
        w(f"| {frac:.1f}x ({b0} steps) | {tacc:.2f} % | {twm:.0f} | " +
          " | ".join(cells) + " |")
    w("")
    # the plateau: what the baseline's last doubling of steps gained
    half = [b for b in budgets if abs(b - ref / 2) <= 0.02 * ref]
    if half and (base, ref) in acc and (base, half[0]) in acc:
        h, f = acc[(base, half[0])], acc[(base, ref)]
        d = sum(f.values()) / len(f) - sum(h.values()) / len(h)
        w(f"{base}'s last doubling of steps, {half[0]} to {ref}: "
          f"{d:+.2f} points of final accuracy "
          f"({'under' if d < 1 else 'not under'} one point: "
          f"{'a plateau' if d < 1 else 'no plateau yet'}).\n")
    return res


def targets_section(w, pols, budgets, acc, res, base, ref, reuse):
    """Issue 50's targets, each MET or MISSED, from the wall-time table
    (res: (fraction, policy) -> (ratio of the means, per-seed ratios))."""
    def ratio(p):
        return res.get((1.0, p))

    def below(r, lim):
        """every seed's ratio known and under lim"""
        return r is not None and r[1] and all(
            x is not None and x < lim for x in r[1])

    def mark(ok):
        return "MET" if ok else "MISSED"

    w("## Targets (issue 50)\n")
    w(f"Read from the table above at 1.0x of the reference; 'beyond the "
      f"spread': every seed's ratio on the right side.\n")
    rb, rs = ratio("both"), ratio("shrink")
    for p, lim in (("both", 0.60), ("shrink", 0.90)):
        if (1.0, p) in res and res[(1.0, p)] is None:
            w(f"- {p} reaches {base}'s 1.0x final accuracy in <= "
              f"{lim:.2f}x its wall: not reached at any budget: MISSED")
    if rb is not None:
        ok = rb[0] <= 0.60 and below(rb, 1)
        w(f"- both reaches {base}'s 1.0x final accuracy in <= 0.60x its "
          f"wall, beyond the spread: {rb[0]:.3f}x: {mark(ok)}")
    if "both" in pols:
        hi = [b for b in budgets if b >= 0.4 * ref and (base, b) in acc
              and ("both", b) in acc]
        gaps = []
        for b in hi:
            m1 = sum(acc[("both", b)].values()) / len(acc[("both", b)])
            m0 = sum(acc[(base, b)].values()) / len(acc[(base, b)])
            gaps.append((b, m1 - m0))
        ok = bool(gaps) and all(g > 0 for _, g in gaps)
        w(f"- both's final accuracy above {base}'s at every budget from "
          f"0.4x: " + ", ".join(f"{b} steps {g:+.2f}" for b, g in gaps) +
          f": {mark(ok)}")
        rr = [p for p in pols if p == f"refurbish-{reuse}"] or \
            [p for p in pols if p.startswith("refurbish-")]
        if rr and rb is None:
            w(f"- both beats {rr[0]} alone beyond the spread: both does "
              f"not reach {base}'s 1.0x accuracy: MISSED")
        for p in rr[:1] if rb is not None else []:
            r = ratio(p)
            ok = (r is not None and rb[1] and r[1] and
                  None not in rb[1] and
                  (None in r[1] or max(rb[1]) < min(r[1])))
            w(f"- both beats {p} alone beyond the spread: both "
              f"{rb[0]:.3f}x, {p} " +
              (f"{r[0]:.3f}x" if r else "not reached") + f": {mark(ok)}")
    if rs is not None:
        ok = rs[0] <= 0.90
        w(f"- shrink reaches it in <= 0.90x {base}'s wall: {rs[0]:.3f}x: "
          f"{mark(ok)}")
    r2 = ratio("rs2")
    for p in ("shrink", "both"):
        if p not in pols or "rs2" not in pols:
            continue
        # the control at equal budgets: final accuracy against rs2's
        gaps = []
        for b in budgets:
            v, c = acc.get((p, b), {}), acc.get(("rs2", b), {})
            if v and c:
                g = sum(v.values()) / len(v) - sum(c.values()) / len(c)
                gaps.append(f"{b} steps {g:+.2f}" +
                            (" †" if disjoint(list(v.values()),
                                              list(c.values())) else ""))
        line = (f"- the control: {p} against rs2 at the same share, "
                f"final accuracy at each budget: " + ", ".join(gaps))
        r = ratio(p)
        if r is not None and r2 is not None:
            ok = (r[1] and r2[1] and None not in r[1] and
                  (None in r2[1] or max(r[1]) < min(r2[1])))
            line += (f"; wall to {base}'s 1.0x accuracy {r[0]:.3f}x "
                     f"against rs2's {r2[0]:.3f}x: " +
                     ("beats it beyond the spread" if ok else
                      "does not beat it beyond the spread"))
        w(line)
    w("")


def read_balance(path):
    """frontier.sh's balance.json, or None where there is none."""
    if not path or not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            b = json.load(f)
        if b["data_per_s"] > 0 and b["train_per_s"] > 0:
            return b
    except (ValueError, KeyError, TypeError):
        pass
    sys.exit(f"frontier_report: {path}: not frontier.sh's balance")


def main():
    ap = argparse.ArgumentParser()
    for a in ("results", "regime", "schedule", "md", "png", "targets",
              "policies", "budgets", "seeds"):
        ap.add_argument("--" + a, required=a in ("results", "regime",
                                                 "schedule", "md"))
    ap.add_argument("--n-train", type=int, required=True)
    ap.add_argument("--n-test", type=int, required=True)
    ap.add_argument("--ref", type=int, required=True)
    ap.add_argument("--baseline", default="uniform")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--reuse", type=int, default=3)
    ap.add_argument("--describe", default=None)
    ap.add_argument("--balance", default=None)
    a = ap.parse_args()
    base = a.baseline
    targets = [float(x) for x in (a.targets or "").split()]

    runs = []
    with open(a.results) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except ValueError:
                sys.exit(f"frontier_report: {a.results}:{n}: not a JSON "
                         f"object")
            if (r.get("regime"), r.get("schedule"), r.get("n_train"),
                    r.get("n_test")) == (a.regime, a.schedule, a.n_train,
                                         a.n_test) and \
                    abs(r.get("lr", 0.05) - a.lr) < 1e-12:
                runs.append(r)
    pols = ordered({r["policy"] for r in runs})
    budgets = sorted({r["budget_steps"] for r in runs})
    seeds = sorted({r["seed"] for r in runs})
    # acc[p][b][seed], twall[p][b][seed] (the trainer's, evaluations
    # excluded, where the runs have it), and the costs
    acc, twall, wall, dcpu, kept = {}, {}, {}, {}, {}
    for r in runs:
        k = (r["policy"], r["budget_steps"])
        acc.setdefault(k, {})[r["seed"]] = r["final_acc"] * 100
        if r.get("train_wall_s") is not None:
            twall.setdefault(k, {})[r["seed"]] = r["train_wall_s"]
        wall.setdefault(k, []).append(r["wall_s"])
        dcpu.setdefault(k, []).append(r["data_cpu_s"])
        kept.setdefault(k, []).append(r["kept"])

    out = []
    w = out.append
    w(f"# Shrinking frontier: regime {a.regime}\n")
    what = a.describe or (f"cnn-small on Fashion-MNIST ({a.n_train} "
                          f"training images, {a.n_test} test images)")
    w(f"{what}, every run's {a.schedule} schedule fitted "
      f"to its own budget (`rv-train-gpu --schedule {a.schedule} --steps "
      f"B`, peak learning rate {a.lr:g}), final test accuracy, no early stop.  Reference: {a.ref} "
      f"steps of 128 ({a.ref * 128 / a.n_train:.0f} epochs of every "
      f"sample).  Seeds: "
      f"{' '.join(map(str, seeds)) or 'none'}.  Made by "
      f"`bash bench/frontier.sh {a.regime}` from {len(runs)} runs in "
      f"results.jsonl.\n")
    bal = read_balance(a.balance)
    if bal:
        d, t = bal["data_per_s"], bal["train_per_s"]
        w(f"Balance on this machine ({bal['cores']} cores, {bal['cpu']}; "
          f"{bal['date']}): the data stage alone prepares {d:.0f} "
          f"images/s on its core, the trainer alone trains {t:.0f}/s, "
          f"{t / d:.2f}x as fast: "
          + ("the trainer waits for data, and what the data stage saves "
             f"shortens the wall down to {d / t:.2f}x at most.\n" if t > d
             else "the trainer is the bottleneck: what the data stage "
             "saves frees CPU but shortens no wall.\n"))
    if not runs:
        w("No runs yet.\n")
    else:
        w("## Final test accuracy (%) per budget\n")
        w("mean ± sd over the seeds (runs); † where the seeds' range and "
          f"{base}'s do not overlap.\n")
        table_head(w, ["budget (steps)", "x ref"], pols, "--:")
        for b in budgets:
            cells = []
            u = list(acc.get((base, b), {}).values())
            for p in pols:
                v = list(acc.get((p, b), {}).values())
                m, sd = mean_sd(v)
                if m is None:
                    cells.append("")
                    continue
                c = f"{m:.2f}" + (f" ± {sd:.2f}" if sd is not None else "")
                c += f" ({len(v)})"
                if p != base and disjoint(v, u):
                    c += " †"
                cells.append(c)
            w(f"| {b} | {b / a.ref:.2f} | " + " | ".join(cells) + " |")
        w("")
        if targets:
            w("## Budget to a target accuracy\n")
            w("The smallest budget (steps) at which the policy's mean final "
              "accuracy over the seeds reaches the target, interpolated "
              "between the budgets around the first crossing; in "
              "brackets, the same from each seed's own runs (min-max), and "
              f"the ratio to {base}'s; † where the seeds' ranges and "
              f"{base}'s do not overlap.\n")
            table_head(w, ["target"], pols, "---")
            for t in targets:
                tt = t * 100
                cross, per_seed = {}, {}
                for p in pols:
                    pts = []
                    for b in budgets:
                        v = list(acc.get((p, b), {}).values())
                        if v:
                            pts.append((b, sum(v) / len(v)))
                    cross[p] = crossing(pts, tt)
                    ps = []
                    for s in seeds:
                        sp = [(b, acc[(p, b)][s]) for b in budgets
                              if s in acc.get((p, b), {})]
                        c = crossing(sp, tt)
                        if c is not None and c[0] == "=":
                            ps.append(c[1])
                    per_seed[p] = ps
                cells = []
                cu = cross.get(base)
                for p in pols:
                    c = cross[p]
                    cell = fmt_cross(c)
                    ps = per_seed[p]
                    if len(ps) >= 2:
                        cell += f" [{min(ps):.0f}-{max(ps):.0f}]"
                    if (p != base and c is not None and cu is not None
                            and c[0] == "=" and cu[0] == "="):
                        cell += f", {c[1] / cu[1]:.2f}x"
                        if disjoint(ps, per_seed.get(base, [])):
                            cell += " †"
                    cells.append(cell)
                w(f"| {tt:.1f} % | " + " | ".join(cells) + " |")
            w("")
        if twall and any((base, b) in acc for b in budgets):
            res = wall_section(w, pols, budgets, seeds, acc, twall, base,
                               a.ref)
            if base == "standard":
                targets_section(w, pols, budgets, acc, res, base, a.ref,
                                a.reuse)
        w("## Cost\n")
        w("Per budget and policy: wall seconds of the whole pipeline, CPU "
          "seconds of every stage before the trainer (rv-decode, rv-score, "
          "rv-batch; in photos rv-augment or rv-refurbish too), "
          "and the share of the samples rv-score saw that it kept; means "
          "over the seeds.\n")
        table_head(w, ["budget (steps)"], pols, "---")
        for b in budgets:
            cells = []
            for p in pols:
                if (p, b) not in wall:
                    cells.append("")
                    continue
                wm = mean_sd(wall[(p, b)])[0]
                dm = mean_sd(dcpu[(p, b)])[0]
                km = mean_sd(kept[(p, b)])[0]
                cells.append(f"{wm:.0f} s, data {dm:.0f} s, kept {km:.2f}")
            w(f"| {b} | " + " | ".join(cells) + " |")
        w("")
    tmp = a.md + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(out))
    os.replace(tmp, a.md)

    if not a.png or not runs:
        return
    with tempfile.TemporaryDirectory() as d:
        dat = os.path.join(d, "f.dat")
        with open(dat, "w") as f:
            for p in pols:
                f.write(f"# {p}\n")
                for b in budgets:
                    v = list(acc.get((p, b), {}).values())
                    if not v:
                        continue
                    m, sd = mean_sd(v)
                    tw = list(twall.get((p, b), {}).values())
                    f.write(f"{b} {m:.4f} {sd or 0:.4f} "
                            f"{mean_sd(tw or wall[(p, b)])[0]:.2f}\n")
                f.write("\n\n")
        def plots(x):
            return ", ".join(
                f"'{dat}' index {i} using {x}:2:3 with yerrorlines "
                f"title '{label(p)}'" for i, p in enumerate(pols))
        gp = f"""set terminal pngcairo size 1400,560 font ',10'
set output '{a.png}.tmp'
set multiplot layout 1,2 title 'regime {a.regime}: final test accuracy, each run its {a.schedule} schedule fitted to its budget (mean, sd over seeds)'
set grid
set key bottom right
set ylabel 'final test accuracy (%)'
set xlabel 'budget (trainer steps of 128)'
plot {plots(1)}
set xlabel '{"trainer wall seconds, evaluations excluded" if twall else "wall seconds (pipeline)"}, 2-core machine'
plot {plots(4)}
unset multiplot
"""
        r = subprocess.run(["gnuplot"], input=gp, text=True,
                           capture_output=True)
        if r.returncode != 0:
            sys.exit("frontier_report: gnuplot: " + r.stderr.strip())
        os.replace(a.png + ".tmp", a.png)


if __name__ == "__main__":
    main()
