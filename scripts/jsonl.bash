# Sourced, not run, by scripts/seeds.bash and the bench scripts: the one
# reader of rv-train-gpu's --log JSON lines (and of the torch sides' JSON
# lines), and awk arithmetic.
# shellcheck shell=bash

# jfield EVENT KEY... < LOG: for each line of event EVENT (any event if
# EVENT is "-"), the values of KEY... separated by tabs.  The logs are flat
# JSON objects, so awk reads them.
jfield() {
	awk -v ev="$1" -v keys="${*:2}" '
	function val(k,    s) {
		if (!match($0, "\"" k "\"[ \t]*:[ \t]*"))
			return "-"
		s = substr($0, RSTART + RLENGTH)
		if (s ~ /^"/) {
			s = substr(s, 2)
			return substr(s, 1, index(s, "\"") - 1)
		}
		match(s, /^[^,} \t]*/)
		return substr(s, 1, RLENGTH)
	}
	BEGIN { n = split(keys, k, " ") }
	ev == "-" || val("event") == ev {
		line = val(k[1])
		for (i = 2; i <= n; i++)
			line = line "\t" val(k[i])
		print line
	}'
}

# calc EXPR [awk -v VAR=VALUE...]: awk arithmetic, printed with %.6g.
calc() {
	local e=$1
	shift
	awk "$@" "BEGIN { printf \"%.6g\", ($e) }" </dev/null
}

# ge A B: true if A >= B (reals).
ge() {
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }' </dev/null
}
