# gen-lib.sh: what the generators that build big, cached things share
# (gen-linux.sh, gen-python.sh). Sourced after GEN (the generator's name,
# for its messages) is set; defines fail, skip, have, now, copy, and
# gen_cache and gen_lock for the build cache.
# shellcheck shell=sh
# shellcheck disable=SC2034 # read by the generators that source this
status=0

fail() {
	echo "FAIL: $GEN: $*"
	status=1
}
skip() {
	echo "SKIP: $GEN: $*"
	exit 0
}
have() {
	command -v "$1" >/dev/null 2>&1
}
now() {
	date +%s
}

# copy FROM TO: only when TO is missing or differs (keeps TO's time stamp, so
# the traces made from it are not redone for nothing).
copy() {
	cmp -s "$1" "$2" && return 0
	cp "$1" "$2.tmp" && mv "$2.tmp" "$2"
}

# gen_cache FALLBACK: sets cache to the folder builds are cached in,
# ${OOB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/oobprof}, or FALLBACK (inside
# the output folder) when that cannot be made.
gen_cache() {
	if [ -n "${OOB_CACHE:-}" ]; then
		cache=$OOB_CACHE
	elif [ -n "${XDG_CACHE_HOME:-}" ]; then
		cache=$XDG_CACHE_HOME/oobprof
	elif [ -n "${HOME:-}" ]; then
		cache=$HOME/.cache/oobprof
	else
		cache=$1
	fi
	mkdir -p "$cache" 2>/dev/null || cache=$1
	mkdir -p "$cache"
}

# gen_lock DIR: only one generator at a time builds in cache folder DIR (two
# build trees running gen-fixtures at once share it); held on fd 9 until
# `exec 9>&-`.
gen_lock() {
	if have flock; then
		exec 9>"$1.lock"
		flock 9
	fi
}
