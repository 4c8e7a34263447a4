# newer.sh: sourced by the fixture generators and the benchmark, so that they
# all decide "rebuild?" the same way.
#
# newer TARGET FILE...: true when TARGET is missing or older than any FILE.
newer() {
	t=$1
	shift
	[ -e "$t" ] || return 0
	for f in "$@"; do
		[ -n "$(find "$f" -newer "$t" 2>/dev/null)" ] && return 0
	done
	return 1
}
