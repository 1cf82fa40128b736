#!/bin/sh
# install.sh — build tether's five tools and install them into $PREFIX/bin.
#
#   ./install.sh                      # into $HOME/.local/bin
#   PREFIX=/usr/local ./install.sh    # into /usr/local/bin
#   DESTDIR=/tmp/pkg PREFIX=/usr ./install.sh   # staged, for packaging
#
# Binaries are static (CGO_ENABLED=0): they start faster without the dynamic
# loader and run on any Linux of the same architecture. The version is
# stamped in from `git describe`, or $VERSION when set.
set -eu

PREFIX=${PREFIX:-$HOME/.local}
DESTDIR=${DESTDIR:-}
TOOLS="ledger adopt watchpid stopbounded reap"

cd "$(dirname "$0")"

if ! command -v go >/dev/null 2>&1; then
	for d in /usr/local/go/bin "$HOME/go/bin"; do
		if [ -x "$d/go" ]; then PATH=$d:$PATH; break; fi
	done
fi
if ! command -v go >/dev/null 2>&1; then
	echo "install.sh: go not found; install Go 1.26.0 or newer (https://go.dev/dl/)" >&2
	exit 1
fi

if [ -z "${VERSION:-}" ]; then
	VERSION=$(git describe --tags --always --dirty 2>/dev/null || echo unknown)
	case $VERSION in
	v[0-9]*) ;;
	*) VERSION="0.1.0-dev+$VERSION" ;; # no release tag yet: name the commit
	esac
fi

bindir="$DESTDIR$PREFIX/bin"
mkdir -p "$bindir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

for tool in $TOOLS; do
	CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w -X github.com/tether-sh/tether/lib/cli.Version=$VERSION" \
		-o "$tmp/$tool" "./cmd/$tool"
done
for tool in $TOOLS; do
	# Install by rename so a running copy is never overwritten in place.
	cp "$tmp/$tool" "$bindir/.$tool.new"
	chmod 0755 "$bindir/.$tool.new"
	mv -f "$bindir/.$tool.new" "$bindir/$tool"
done

echo "installed $TOOLS ($VERSION) into $bindir"
case ":$PATH:" in
*":$PREFIX/bin:"*) ;;
*) echo "note: $PREFIX/bin is not on PATH; add it: export PATH=\"$PREFIX/bin:\$PATH\"" ;;
esac
