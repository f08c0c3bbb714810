#!/usr/bin/env bash
# Installs the servers make test-matrix runs on, as root, into $1 (default
# /opt/redlimit-servers; never inside the repository), and writes one
# directory of wrappers per server, holding redis-server and redis-cli, for
# the front of PATH:
#
#   redis-7.0   Debian 12's redis-server (apt)
#   valkey-8.0  valkey-server 8.0 from bookworm-backports (apt)
#   redis-8.0   redis-server 8.0 from trixie  \  a debootstrap tree, run
#   valkey-8.1  valkey-server 8.1 from trixie /  through its own loader
#
# Running it again installs only what is missing.
set -euo pipefail
dir=${1:-/opt/redlimit-servers}
export DEBIAN_FRONTEND=noninteractive

# The configured Debian mirror (only it may be reachable), from a deb822
# .sources file or a one-line sources.list.
mirror=$({ cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null || true; } |
	sed -nE 's#^URIs:[[:space:]]*([^[:space:]]+/debian)/?$#\1#p; s#^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+/debian)/?[[:space:]]+bookworm[[:space:]].*#\2#p' |
	head -n1)
[ -n "$mirror" ] || { echo "servers.sh: no Debian mirror in /etc/apt/sources.list(.d)" >&2; exit 1; }

trixie=$dir/trixie
have_trixie() { [ -x "$trixie/usr/bin/redis-server" ] && [ -x "$trixie/usr/bin/valkey-server" ]; }
if ! command -v valkey-server >/dev/null; then
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm-backports main" >/etc/apt/sources.list.d/bookworm-backports.list
	apt-get update
	apt-get install -y -t bookworm-backports valkey-server valkey-tools
fi
# debian-archive-keyring from 2023.3+deb12u2 on holds trixie's keys.
if ! command -v redis-server >/dev/null || ! have_trixie; then
	apt-get update
	apt-get install -y redis-server debootstrap debian-archive-keyring
fi
if ! have_trixie; then
	rm -rf "$trixie" "$trixie.new"
	debootstrap --variant=minbase --include=redis-server,valkey-server trixie "$trixie.new" "$mirror"
	mv "$trixie.new" "$trixie"
fi

# wrap NAME SERVER CLI [LOADER]: NAME/redis-server and NAME/redis-cli run
# SERVER and CLI (through LOADER, a trixie binary).
wrap() {
	mkdir -p "$dir/$1"
	printf '#!/bin/sh\nexec %s%s "$@"\n' "${4:-}" "$2" >"$dir/$1/redis-server"
	printf '#!/bin/sh\nexec %s%s "$@"\n' "${4:-}" "$3" >"$dir/$1/redis-cli"
	chmod +x "$dir/$1/redis-server" "$dir/$1/redis-cli"
}
wrap redis-7.0 /usr/bin/redis-server /usr/bin/redis-cli
wrap valkey-8.0 /usr/bin/valkey-server /usr/bin/valkey-cli
t=$trixie
loader="$t/lib64/ld-linux-x86-64.so.2 --library-path $t/lib/x86_64-linux-gnu:$t/usr/lib/x86_64-linux-gnu "
wrap redis-8.0 "$t/usr/bin/redis-server" "$t/usr/bin/redis-cli" "$loader"
wrap valkey-8.1 "$t/usr/bin/valkey-server" "$t/usr/bin/valkey-cli" "$loader"

for s in redis-7.0 redis-8.0 valkey-8.0 valkey-8.1; do
	"$dir/$s/redis-server" --version
	"$dir/$s/redis-cli" --version
done
