# Shared by benches/list_s3.sh and benches/million.sh (sourced after
# s3_bench_setup.sh, which defines TIME and WORK): `timed LABEL CMD...`
# runs one step under /usr/bin/time -v (output in $WORK/last.log, the
# script stops if it fails) and keeps its wall time and peak RSS under
# LABEL, in LABELS (first-run order), WALLS and RSSES; `median` and
# `maximum` read a list of figures on stdin. TIMED_WIDTH: the label
# column's width in the progress lines (default 48).

declare -a LABELS=()
declare -A WALLS=() RSSES=()
timed() {
    local label="$1"
    shift
    local tout="$WORK/time.out"
    if ! "$TIME" -v -o "$tout" "$@" >"$WORK/last.log" 2>&1; then
        echo "error: \`$label\` failed:" >&2
        tail -n 20 "$WORK/last.log" >&2
        exit 1
    fi
    local wall rss
    wall=$(awk -F': ' '/Elapsed \(wall clock\) time/ {print $2}' "$tout" |
        awk -F: '{ if (NF == 3) printf "%.2f", $1 * 3600 + $2 * 60 + $3; else printf "%.2f", $1 * 60 + $2 }')
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tout")
    if [[ -z "${WALLS[$label]+x}" ]]; then
        LABELS+=("$label")
    fi
    WALLS[$label]+="$wall "
    RSSES[$label]+="$rss "
    printf "   %-${TIMED_WIDTH:-48}s %8.2f s  %8.1f MiB\n" "$label" "$wall" "$(echo "$rss" | awk '{print $1 / 1024}')" >&2
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
maximum() { tr ' ' '\n' | grep -v '^$' | sort -g | tail -n 1; }
