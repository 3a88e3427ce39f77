# Statistics the benchmark scripts share (sourced).
#
# spread FILE A B FIELD FMT: "median (min-max)" of FIELD over the lines of
# FILE whose first two fields are A and B, each printed with FMT; "-" when
# there is none.
spread() {
	awk -v a="$2" -v b="$3" -v f="$4" -v fmt="$5" '
	$1 == a && $2 == b { v[c++] = $f }
	END {
		if (c == 0) { print "-"; exit }
		for (i = 1; i < c; i++)
			for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
				t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
			}
		med = (c % 2 ? v[int(c / 2)] : (v[c / 2 - 1] + v[c / 2]) / 2)
		printf fmt " (" fmt "-" fmt ")\n", med, v[0], v[c - 1]
	}' "$1"
}

# med FILE A B FIELD: the median alone.
med() {
	spread "$1" "$2" "$3" "$4" '%.6g' | cut -d' ' -f1
}
