#!/bin/sh
# install.sh — build tether's five tools and install them into $PREFIX/bin,
# with their man pages ($PREFIX/share/man/man1) and bash, zsh and fish
# completion ($PREFIX/share/{bash-completion/completions,zsh/site-functions,
# fish/vendor_completions.d}).
#
#   ./install.sh                      # into $HOME/.local/bin
#   PREFIX=/usr/local ./install.sh    # into /usr/local/bin
#   DESTDIR=/tmp/pkg PREFIX=/usr ./install.sh   # staged, for packaging
#
# Binaries are static (CGO_ENABLED=0): they start faster without the dynamic
# loader and run on any Linux of the same architecture. The version is
# stamped in from `git describe`, or $VERSION when set; --version adds the
# Go release and platform. The man pages and completion files are made
# from the same model as --help (lib/internal/tetherdoc); the completion
# files run the tools by their absolute path, so another program of the
# same name earlier on PATH is never asked to complete ours.
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

go run ./lib/internal/tetherdoc -man "$tmp/man" -completion "$tmp/completion" -bindir "$PREFIX/bin"

# tether-pg is ledger and adopt with the PostgreSQL store linked in: they
# hand a postgres:// store's commands to it, and stay small and quick.
for tool in $TOOLS tether-pg; do
	CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w -X github.com/tether-sh/tether/lib/cli.Version=$VERSION" \
		-o "$tmp/$tool" "./cmd/$tool"
done
for tool in $TOOLS tether-pg; do
	# Install by rename so a running copy is never overwritten in place.
	cp "$tmp/$tool" "$bindir/.$tool.new"
	chmod 0755 "$bindir/.$tool.new"
	mv -f "$bindir/.$tool.new" "$bindir/$tool"
done

# install_file SRC DIR NAME: copy SRC to DIR/NAME (0644) by rename.
install_file() {
	mkdir -p "$2"
	cp "$1" "$2/.$3.new"
	chmod 0644 "$2/.$3.new"
	mv -f "$2/.$3.new" "$2/$3"
}
share="$DESTDIR$PREFIX/share"
for tool in $TOOLS; do
	install_file "$tmp/man/$tool.1" "$share/man/man1" "$tool.1"
	install_file "$tmp/completion/bash/$tool" "$share/bash-completion/completions" "$tool"
	install_file "$tmp/completion/zsh/_$tool" "$share/zsh/site-functions" "_$tool"
	install_file "$tmp/completion/fish/$tool.fish" "$share/fish/vendor_completions.d" "$tool.fish"
done

echo "installed $TOOLS tether-pg ($VERSION) into $bindir, man pages into $share/man"
case ":$PATH:" in
*":$PREFIX/bin:"*) ;;
*) echo "note: $PREFIX/bin is not on PATH; add it: export PATH=\"$PREFIX/bin:\$PATH\"" ;;
esac
case ":${MANPATH:-}:" in
*":$PREFIX/share/man:"*) ;;
*) echo "note: for man ledger to open this ledger's page, not the accounting program's: export MANPATH=\"$PREFIX/share/man:\$(manpath 2>/dev/null)\"" ;;
esac
