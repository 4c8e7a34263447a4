#!/bin/sh
# vendor.sh TOP: copies the viewer's npm packages from TOP/node_modules (put
# there by `npm ci` from the committed package-lock.json) into the served
# tree: TOP/static/vendor/ (d3, d3-flame-graph) and TOP/static/speedscope/
# (speedscope's dist/release, as is). Both are git-ignored. Idempotent and
# safe when two builds run it at once: a folder is copied into a temporary
# one, then renamed into place, only when its source is newer.
# Without node_modules it warns and exits 0: the server still serves the API
# and the viewer says what is missing.
set -eu
top=$1
nm=$top/node_modules
st=$top/static
if [ ! -d "$nm/d3" ] || [ ! -d "$nm/d3-flame-graph" ] || [ ! -d "$nm/speedscope" ]; then
	echo "static: node_modules is missing (run deploy/install-deps.sh or npm ci): viewer not vendored" >&2
	exit 0
fi
if [ ! -w "$st" ]; then # a read-only source tree (make distcheck)
	echo "static: $st is read-only: viewer not vendored" >&2
	exit 0
fi

# install_dir DEST SRC[=NAME]...: DEST gets exactly those files (named NAME,
# else as SRC) unless it is already newer than all of them.
install_dir() {
	dest=$1
	shift
	if [ -f "$dest/.stamp" ]; then
		stale=0
		for a in "$@"; do
			[ "${a%%=*}" -nt "$dest/.stamp" ] && stale=1
		done
		[ $stale -eq 0 ] && return 0
	fi
	tmp=$(mktemp -d "$dest.tmp.XXXXXX")
	for a in "$@"; do
		src=${a%%=*}
		name=$(basename "$src")
		case $a in *=*) name=${a#*=} ;; esac
		cp -p "$src" "$tmp/$name"
	done
	touch "$tmp/.stamp"
	chmod 755 "$tmp"
	old="$dest.old.$$"
	if [ -d "$dest" ]; then mv "$dest" "$old" 2>/dev/null || true; fi
	# another build may have put its copy in place meanwhile: same files
	mv -T "$tmp" "$dest" 2>/dev/null || rm -rf "$tmp"
	rm -rf "$old"
	echo "static: vendored $(basename "$dest")/ ($# files)"
}

install_dir "$st/vendor" "$nm/d3/dist/d3.min.js" \
	"$nm/d3-flame-graph/dist/d3-flamegraph.umd.min.js" \
	"$nm/d3-flame-graph/dist/d3-flamegraph.css" \
	"$nm/d3/LICENSE=d3.LICENSE" "$nm/d3-flame-graph/LICENSE=d3-flame-graph.LICENSE"
# shellcheck disable=SC2046
install_dir "$st/speedscope" $(find "$nm/speedscope/dist/release" -maxdepth 1 -type f | sort)
