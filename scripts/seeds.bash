# Shared by pipelines/experiment.sh and bench/regime.sh
# (sourced, not run; it sources jsonl.bash, the one log reader): runs over
# seeds, each a trainer's --log, reduced to one line per run and then to
# tables of mean +- standard deviation over the seeds, against a baseline
# run (standard training), with a dagger where a difference exceeds the
# seed-to-seed spread.
# shellcheck shell=bash

# shellcheck source=scripts/jsonl.bash
. "$(dirname "${BASH_SOURCE[0]}")/jsonl.bash"

# seeds_check NAME SEED...: nothing when the SEEDs are non-negative
# integers, at least one and none twice; else a one-line message naming
# NAME (the setting they came from), and status 1.
seeds_check() {
	local name=$1 s
	local -A seen=()
	shift
	if [ "$#" -lt 1 ]; then
		echo "$name: no seed"
		return 1
	fi
	for s; do
		if ! [[ $s =~ ^[0-9]+$ ]]; then
			echo "$name: '$s': not a non-negative integer"
			return 1
		fi
		if [ -n "${seen[$s]:-}" ]; then
			echo "$name: '$s' twice"
			return 1
		fi
		seen[$s]=1
	done
}

# seeds_summary LOG KEY...: the values of KEY... in the trainer's summary
# line (the log's last), separated by tabs.
seeds_summary() {
	jfield summary "${@:2}" <"$1" | tail -n 1
}

# seeds_evals LOG: the log's evaluations, one per line: grads, wall,
# accuracy.
seeds_evals() {
	jfield eval grads wall eval_acc <"$1" |
	    awk -F '\t' '$3 != "null" { print $1, $2, $3 }'
}

# seeds_budgets EVALS...: the equal budgets of one seed's runs, the fewest
# grads and the least wall time at which any of them ended: "GMIN WMIN".
seeds_budgets() {
	local f
	for f in "$@"; do
		tail -n 1 "$f"
	done | awk 'NR == 1 || $1 < g { g = $1 } NR == 1 || $2 < w { w = $2 }
	    END { print g, w }'
}

# seeds_row SEED KEY EVALS GMIN WMIN WAIT "TARGETS" [EXTRA...]: one run's
# line of runs.tsv: seed, key, data wait, final accuracy, the accuracy at
# the last evaluation within GMIN grads and within WMIN seconds, then per
# target the grads and wall at the first evaluation at or above it ("-"
# where none is), then the EXTRA values.
seeds_row() {
	awk -v s="$1" -v r="$2" -v g="$4" -v w="$5" -v wait="$6" -v tl="$7" \
	    -v extra="${*:8}" '
	BEGIN { nt = split(tl, t, " ") }
	$1 <= g { ag = $3 }
	$2 <= w + 1e-9 { aw = $3 }
	{
		acc = $3
		for (i = 1; i <= nt; i++)
			if (!(i in tg) && $3 >= t[i]) {
				tg[i] = $1
				tw[i] = $2
			}
	}
	END {
		printf "%s\t%s\t%s\t%s\t%s\t%s", s, r, wait, acc,
		    ag == "" ? "-" : ag, aw == "" ? "-" : aw
		for (i = 1; i <= nt; i++)
			printf "\t%s\t%s", (i in tg) ? tg[i] : "-",
			    (i in tw) ? tw[i] : "-"
		ne = split(extra, e, " ")
		for (i = 1; i <= ne; i++)
			printf "\t%s", e[i]
		printf "\n"
	}' "$3"
}

# seeds_tables RUNS "KEYS" "LABELS" "TARGETS" NSEEDS "EXTRAS" NOTE [HEAD]:
# the tables over the seeds from RUNS (lines of seeds_row).  KEYS: the runs
# in order, the first the baseline the others are compared with; LABELS:
# KEY=label pairs separated by tabs; EXTRAS: the headings of the extra
# columns separated by tabs, each "heading|printf format" (a third table,
# none if empty); NOTE: a line printed under the tables; HEAD: the first
# column's heading (default "pipeline").
seeds_tables() {
	awk -F '\t' -v order="$2" -v labels="$3" -v tl="$4" -v nseeds="$5" \
	    -v extras="$6" -v note="$7" -v head="${8:-pipeline}" '
	function mean(a, n,   i, m) {
		m = 0
		for (i = 1; i <= n; i++) m += a[i]
		return m / n
	}
	function sd(a, n,   i, m, v) {
		if (n < 2) return 0
		m = mean(a, n); v = 0
		for (i = 1; i <= n; i++) v += (a[i] - m) ^ 2
		return sqrt(v / (n - 1))
	}
	# fmt A N F: mean ± sd in format F, with the count when some seeds
	# have no value
	function fmt(a, n, f,   x) {
		if (n == 0) return "-"
		x = n == 1 ? sprintf(f, a[1]) : \
		    sprintf(f " ± " f, mean(a, n), sd(a, n))
		return n < nseeds ? x " (" n " seed" (n == 1 ? "" : "s") ")" : x
	}
	# vals K C: the values of column C of run K over the seeds (all
	# of them, or "-" where a value is missing) into v, their count
	function vals(k, c, v,   i, n) {
		n = 0
		for (i = 1; i <= ns; i++)
			if ((k, seed[i]) in row) {
				split(row[k, seed[i]], f, "\t")
				if (f[c] != "-") v[++n] = f[c]
			}
		return n
	}
	function pct(a, n,   i) {
		for (i = 1; i <= n; i++) a[i] *= 100
	}
	# apart A NA B NB: 1 when the ranges of A and B are disjoint
	function apart(a, na, b, nb,   i, amin, amax, bmin, bmax) {
		if (na < 2 || nb < 2) return 0
		amin = amax = a[1]; bmin = bmax = b[1]
		for (i = 2; i <= na; i++) { if (a[i] < amin) amin = a[i]; if (a[i] > amax) amax = a[i] }
		for (i = 2; i <= nb; i++) { if (b[i] < bmin) bmin = b[i]; if (b[i] > bmax) bmax = b[i] }
		return amax < bmin || bmax < amin
	}
	# ratios K C: per seed, column C of K over the baseline'\''s, where
	# both
	function ratios(k, c, q,   i, n, a, b) {
		n = 0
		for (i = 1; i <= ns; i++) {
			if (!((k, seed[i]) in row) || !((base, seed[i]) in row))
				continue
			split(row[k, seed[i]], a, "\t")
			split(row[base, seed[i]], b, "\t")
			if (a[c] != "-" && b[c] != "-" && b[c] > 0)
				q[++n] = a[c] / b[c]
		}
		return n
	}
	# dag K C A NA: " †" when K is not the baseline and its values A of
	# column C lie apart from the baseline'\''s
	function dag(k, c, a, na,   s, n) {
		if (k == base) return ""
		n = vals(base, c, s)
		return apart(a, na, s, n) ? " †" : ""
	}
	BEGIN {
		nk = split(order, key, " ")
		base = key[1]
		nt = split(tl, t, " ")
		n = split(labels, l, "\t")
		for (i = 1; i <= n; i++) {
			p = index(l[i], "=")
			if (p) name[substr(l[i], 1, p - 1)] = substr(l[i], p + 1)
		}
		ne = extras == "" ? 0 : split(extras, ex, "\t")
	}
	{
		if (!($1 in seen)) { seen[$1] = 1; seed[++ns] = $1 }
		row[$2, $1] = $0
	}
	END {
		bn = name[base]
		print "To each target: in how many seeds the run reached it, and the gradient computations (grads) and the trainer'\''s wall time at the first evaluation at or above it, mean ± standard deviation over those seeds; against " bn " of the same seed."
		print ""
		print "| " head " | target | reached | grads | grads vs " bn " | wall (s) | wall vs " bn " |"
		print "|---|--:|--:|--:|--:|--:|--:|"
		for (j = 1; j <= nt; j++) {
			cg = 7 + 2 * (j - 1); cw = cg + 1
			for (i = 1; i <= nk; i++) {
				k = key[i]
				delete g; delete w; delete rg; delete rw
				ng = vals(k, cg, g); vals(k, cw, w)
				nrg = ratios(k, cg, rg); ratios(k, cw, rw)
				printf "| %s | %g %% | %d/%d | %s | %s%s | %s | %s%s |\n",
				    name[k], 100 * t[j], ng, nseeds,
				    fmt(g, ng, "%.0f"), fmt(rg, nrg, "%.2f"),
				    dag(k, cg, g, ng), fmt(w, ng, "%.1f"),
				    fmt(rw, nrg, "%.2f"), dag(k, cw, w, ng)
			}
		}
		print ""
		print "Test accuracy (%) at equal budgets: each run'\''s last evaluation within the fewest gradient computations, and within the least wall time, that any run of the same seed ended at; and at the end of the run.  Mean ± standard deviation over the seeds; data wait: the share of the trainer'\''s time spent waiting for input."
		print ""
		print "| " head " | data wait | acc at equal grads | acc at equal wall | final acc |"
		print "|---|--:|--:|--:|--:|"
		for (i = 1; i <= nk; i++) {
			k = key[i]
			delete wt; delete a; delete b; delete c
			nw = vals(k, 3, wt)
			na = vals(k, 5, a); nb = vals(k, 6, b); nc = vals(k, 4, c)
			da = dag(k, 5, a, na); db = dag(k, 6, b, nb)
			dc = dag(k, 4, c, nc)
			pct(wt, nw); pct(a, na); pct(b, nb); pct(c, nc)
			printf "| %s | %s %% | %s%s | %s%s | %s%s |\n", name[k],
			    fmt(wt, nw, "%.2f"), fmt(a, na, "%.2f"), da,
			    fmt(b, nb, "%.2f"), db, fmt(c, nc, "%.2f"), dc
		}
		if (ne) {
			print ""
			printf "| %s |", head
			for (e = 1; e <= ne; e++) {
				split(ex[e], h, "|")
				printf " %s |", h[1]
			}
			printf "\n|---|"
			for (e = 1; e <= ne; e++) printf "--:|"
			printf "\n"
			for (i = 1; i <= nk; i++) {
				k = key[i]
				printf "| %s |", name[k]
				for (e = 1; e <= ne; e++) {
					split(ex[e], h, "|")
					col = 6 + 2 * nt + e
					delete a
					na = vals(k, col, a)
					printf " %s%s |", fmt(a, na, h[2]), dag(k, col, a, na)
				}
				printf "\n"
			}
		}
		print ""
		print "†: beyond the seed-to-seed spread: the values over the seeds and " bn "'\''s do not overlap (disjoint minimum-maximum ranges; with three seeds each, two runs that do not differ are that far apart one time in ten).  " note
	}' "$1"
}
