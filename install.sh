#!/bin/sh
# install.sh — build tether's five tools and install them into $PREFIX/bin,
# with their man pages ($PREFIX/share/man/man1) and bash, zsh and fish
# completion ($PREFIX/share/{bash-completion/completions,zsh/site-functions,
# fish/vendor_completions.d}).
#
#   ./install.sh                      # into $HOME/.local/bin
#   PREFIX=/usr/local ./install.sh    # into /usr/local/bin
#   DESTDIR=/tmp/pkg PREFIX=/usr ./install.sh   # staged, for packaging
#   ./install.sh --deb DIR            # build DIR/tether_VERSION_ARCH.deb instead
#
# Binaries are static (CGO_ENABLED=0): they start faster without the dynamic
# loader and run on any Linux of the same architecture. The version is
# stamped in from `git describe`, or $VERSION when set; --version adds the
# Go release and platform. The man pages and completion files are made
# from the same model as --help (lib/cmd/tetherdoc); the completion
# files run the tools by their absolute path, so another program of the
# same name earlier on PATH is never asked to complete ours.
set -eu

usage() {
	cat <<'EOF'
Usage: ./install.sh [--deb DIR]

Build tether's tools (ledger, adopt, watchpid, stopbounded, reap, tether-pg)
and install them into $PREFIX/bin (default $HOME/.local/bin), with man pages
and bash, zsh and fish completion under $PREFIX/share. DESTDIR stages the
installation for packaging; VERSION overrides the version from git describe.

  --deb DIR   build DIR/tether_VERSION_ARCH.deb (with dpkg-deb) instead of
              installing: the tools in /usr/bin, man pages, completions, and
              /usr/share/doc/tether; install it with apt-get install ./FILE
  -h, --help  print this help

Exit status: 0 done, 1 a step failed, 2 usage error.
EOF
}

deb=
while [ $# -gt 0 ]; do
	case $1 in
	--deb)
		if [ $# -lt 2 ] || [ -z "$2" ]; then
			echo "install.sh: --deb needs a directory (try --help)" >&2
			exit 2
		fi
		deb=$2
		shift 2
		;;
	--deb=?*) deb=${1#--deb=}; shift ;;
	-h | --help) usage; exit 0 ;;
	*)
		echo "install.sh: unknown argument $1 (try --help)" >&2
		exit 2
		;;
	esac
done
if [ -n "$deb" ]; then
	case $deb in /*) ;; *) deb=$PWD/$deb ;; esac
	for cmd in dpkg-deb dpkg; do
		if ! command -v $cmd >/dev/null 2>&1; then
			echo "install.sh: --deb needs $cmd (Debian's dpkg package)" >&2
			exit 1
		fi
	done
fi

PREFIX=${PREFIX:-$HOME/.local}
DESTDIR=${DESTDIR:-}
TOOLS="ledger adopt watchpid stopbounded reap"
zshdir=zsh/site-functions

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

# build_deb packages the tree staged in $DESTDIR as $deb/tether_VERSION_ARCH.deb.
# The package conflicts with Debian's accounting ledger, which installs
# /usr/bin/ledger and ledger(1) too: dpkg cannot hold two owners of one
# path, and every recipe, man page and completion of tether's names the
# command ledger. Whoever needs both installs tether with ./install.sh into
# $HOME/.local (or /usr/local) and puts it first on PATH.
build_deb() {
	root=$DESTDIR
	# Debian's version syntax: no leading v; a hyphen would start a Debian
	# revision, so 0.1.0-dev+COMMIT becomes 0.1.0~dev+COMMIT, which sorts
	# before the release 0.1.0 as it should.
	debversion=$(printf '%s' "${VERSION#v}" | tr -- '-' '~')
	case $(go env GOARCH) in
	386) arch=i386 ;;
	arm) arch=armhf ;;
	*) arch=$(go env GOARCH) ;;
	esac
	maintainer="${DEBFULLNAME:-tether maintainers} <${DEBEMAIL:-maintainers@tether.sh}>"
	# Reproducible: the commit's date, not the build's.
	date=$(git log -1 --format=%aD 2>/dev/null || date -R)
	doc="$root/usr/share/doc/tether"
	first=$(git log --reverse --format=%ad --date=format:%Y 2>/dev/null | head -n 1)
	last=$(git log -1 --format=%ad --date=format:%Y 2>/dev/null || date +%Y)
	years=${first:-$last}
	[ "$years" = "$last" ] || years="$years-$last"

	gzip -9n "$root"/usr/share/man/man1/*.1
	mkdir -p "$doc"
	cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: tether
Source: https://github.com/tether-sh/tether

Files: *
Copyright: $years the tether authors
License: Apache-2.0

License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License"); you may
 not use this file except in compliance with the License.
 .
 On Debian systems, the full text of the Apache License, Version 2.0 can
 be found in the file /usr/share/common-licenses/Apache-2.0.
EOF
	cat >"$tmp/changelog" <<EOF
tether ($debversion) unstable; urgency=medium

  * Packaged by install.sh --deb. The changes are in CHANGELOG.md at
    https://github.com/tether-sh/tether.

 -- $maintainer  $date
EOF
	gzip -9nc "$tmp/changelog" >"$doc/changelog.gz"
	# What the man pages do not say: the recipes (cron, several hosts, the
	# grants), the exit codes of all tools, and the contract they keep.
	# Compressed, as Debian's policy asks of documents over 4 kB.
	for f in README.md CONTRACT.md; do
		gzip -9nc "$f" >"$doc/$f.gz"
	done
	# Go links statically by design; lintian exempts a Go-built package
	# only when it sees the source package's Build-Depends on golang-go,
	# which a binary built here has none of.
	mkdir -p "$root/usr/share/lintian/overrides"
	# The symbol table stays (not the debug information): a runner reads
	# the Go runtime's table of the signals its caller ignored through it,
	# to hand them on to its command (lib/internal/sigstate).
	printf 'tether: statically-linked-binary [usr/bin/*]\ntether: unstripped-binary-or-object [usr/bin/*]\n' >"$root/usr/share/lintian/overrides/tether"

	mkdir -p "$root/DEBIAN"
	(cd "$root" && find usr -type f -exec md5sum {} + | LC_ALL=C sort -k2) >"$root/DEBIAN/md5sums"
	size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
	cat >"$root/DEBIAN/control" <<EOF
Package: tether
Version: $debversion
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Conflicts: ledger
Section: admin
Priority: optional
Homepage: https://github.com/tether-sh/tether
Description: crash-safe shell wrappers and cron jobs
 Small Linux tools that make shell wrappers and cron jobs safe across
 crashes and restarts: a job runs at most once per claim, is never
 orphaned, is stopped within a bound, and leaves an honest durable record.
 .
 ledger (a durable execution ledger, with ledger run for cron lines),
 adopt, watchpid, stopbounded and reap; tether-pg serves PostgreSQL
 stores: ledger and adopt with the database driver linked in.
EOF
	find "$root" -type d -exec chmod 0755 {} +
	find "$root" -type f -exec chmod 0644 {} +
	chmod 0755 "$root"/usr/bin/*
	mkdir -p "$deb"
	out="$deb/tether_${debversion}_$arch.deb"
	SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s) \
		dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
	echo "built $out"
}

if [ -z "${VERSION:-}" ]; then
	VERSION=$(git describe --tags --always --dirty 2>/dev/null || echo unknown)
	case $VERSION in
	v[0-9]*) ;;
	*) VERSION="0.1.0-dev+$VERSION" ;; # no release tag yet: name the commit
	esac
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
if [ -n "$deb" ]; then
	# A package installs into /usr, staged here; zsh's vendor-completions
	# is where Debian's zsh looks for a package's completion functions.
	PREFIX=/usr
	DESTDIR=$tmp/root
	zshdir=zsh/vendor-completions
fi
bindir="$DESTDIR$PREFIX/bin"
mkdir -p "$bindir"

go run ./lib/cmd/tetherdoc -man "$tmp/man" -completion "$tmp/completion" -bindir "$PREFIX/bin"

# tether-pg serves PostgreSQL stores: ledger and adopt with the database
# driver linked in (and ledger's kong model, for the usage errors its own
# parser leaves to it); they hand it a postgres:// store's commands, and
# stay small and quick.
# -w drops the debug information; the symbol table stays (no -s): the
# runners read the signals their caller ignored through it.
for tool in $TOOLS tether-pg; do
	CGO_ENABLED=0 go build -trimpath \
		-ldflags "-w -X github.com/tether-sh/tether/lib/cli.Version=$VERSION" \
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
cat >"$tmp/man/tether-pg.1" <<'EOF'
.TH TETHER-PG 1 "" tether "User Commands"
.SH NAME
tether-pg \- ledger and adopt for PostgreSQL stores
.SH SYNOPSIS
.B tether-pg
.BR ledger | adopt
.RI [ ARGS ...]
.SH DESCRIPTION
.B ledger
and
.B adopt
run
.B tether-pg
themselves (one exec, same PID), before anything else, when their store
is a
.B postgres://
URL, so that the file store's users never pay for the database driver's
start-up; and
.B ledger
runs it for a command line its own parser leaves to kong's model (some usage
errors), so that no other command pays for that model. Nobody needs to call
it by hand, though it works the same when called.
.B \-\-version
and
.B \-\-help
answer as every tool's do.
.SH SEE ALSO
.BR ledger (1),
.BR adopt (1)
EOF
install_file "$tmp/man/tether-pg.1" "$share/man/man1" "tether-pg.1"
for tool in $TOOLS; do
	install_file "$tmp/man/$tool.1" "$share/man/man1" "$tool.1"
	install_file "$tmp/completion/bash/$tool" "$share/bash-completion/completions" "$tool"
	install_file "$tmp/completion/zsh/_$tool" "$share/$zshdir" "_$tool"
	install_file "$tmp/completion/fish/$tool.fish" "$share/fish/vendor_completions.d" "$tool.fish"
done

if [ -n "$deb" ]; then
	build_deb
	exit 0
fi

echo "installed $TOOLS tether-pg ($VERSION) into $bindir, man pages into $share/man"
case ":$PATH:" in
*":$PREFIX/bin:"*) ;;
*) echo "note: $PREFIX/bin is not on PATH; add it: export PATH=\"$PREFIX/bin:\$PATH\"" ;;
esac
case ":${MANPATH:-}:" in
*":$PREFIX/share/man:"*) ;;
*) echo "note: for man ledger to open this ledger's page, not the accounting program's: export MANPATH=\"$PREFIX/share/man:\$(manpath 2>/dev/null)\"" ;;
esac
