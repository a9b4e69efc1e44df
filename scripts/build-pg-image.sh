#!/usr/bin/env bash
# Builds the local image `tidemark-postgres:15` for the containerised PostgreSQL source
# (sim/src/real_tier/pg_container.rs) from this host's PostgreSQL 15 files, with no image
# registry (none is reachable here):
#   1. a root filesystem: the server binaries and their share/ files, every shared library `ldd`
#      lists for them, a shell (dash) for `initdb`'s helper calls, /etc/passwd with a postgres
#      account (PostgreSQL refuses to run as root), and the UTC time zone;
#   2. `docker import` of that tree as a base image;
#   3. `initdb` run once inside it, and the result committed with the server as its command:
#      a container then only starts `postgres` (ready in well under a second) instead of
#      creating a cluster first. The cluster is trust-authenticated, fsync off: a test database.
# Usage: scripts/build-pg-image.sh [IMAGE]   (default tidemark-postgres:15; TIDEMARK_PG_IMAGE
# names the image the harness uses). Needs a running Docker daemon and postgresql-15 installed.
set -euo pipefail

image=${1:-${TIDEMARK_PG_IMAGE:-tidemark-postgres:15}}
pg_lib=/usr/lib/postgresql/15
pg_share=/usr/share/postgresql/15
[ -x "$pg_lib/bin/postgres" ] || { echo "build-pg-image: $pg_lib/bin/postgres is missing (apt-get install postgresql-15)" >&2; exit 1; }
docker version --format '{{.Server.Version}}' >/dev/null || { echo "build-pg-image: no Docker daemon answers" >&2; exit 1; }

# The image this replaces, removed at the end so rebuilding leaves no untagged copy behind.
previous=$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
root=$(mktemp -d /tmp/tidemark-pg-image-XXXXXX)
base="$image-base"
builder=""
cleanup() {
  [ -n "$builder" ] && docker rm -f "$builder" >/dev/null 2>&1 || true
  docker rmi "$base" >/dev/null 2>&1 || true
  rm -rf "$root"
}
trap cleanup EXIT

# 1. The tree. Only the server's programs: the harness connects from outside.
mkdir -p "$root$pg_lib/bin" "$root/usr/share/postgresql" "$root/etc" "$root/tmp" \
  "$root/var/lib/postgresql" "$root/var/run/postgresql" "$root/bin" "$root/usr/share/zoneinfo/Etc"
programs=(postgres initdb pg_ctl)
for p in "${programs[@]}"; do cp -a "$pg_lib/bin/$p" "$root$pg_lib/bin/"; done
# The server's modules, without the JIT (it would pull in the 110 MB LLVM library, and `jit=off`
# below) and its bitcode.
mkdir -p "$root$pg_lib/lib"
find "$pg_lib/lib" -maxdepth 1 -type f ! -name 'llvmjit*' -exec cp -a {} "$root$pg_lib/lib/" \;
cp -a "$pg_share" "$root/usr/share/postgresql/"
rm -rf "$root$pg_share/man"
cp -a /usr/share/zoneinfo/UTC "$root/usr/share/zoneinfo/"
cp -a /usr/share/zoneinfo/Etc/UTC "$root/usr/share/zoneinfo/Etc/"
cp /bin/dash "$root/bin/sh"
# Every library the programs, the shell and the server's own modules load (dlopen'd modules
# such as plpgsql are in $pg_lib/lib; their dependencies are listed the same way).
{
  for f in "${programs[@]/#/$pg_lib/bin/}" /bin/dash "$root$pg_lib"/lib/*.so; do ldd "$f" 2>/dev/null || true; done
} | awk '/=> \// { print $3 } /^\s*\/[^ ]*ld-linux/ { print $1 }' | sort -u | while read -r lib; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
# /lib64 and /lib may be symlinks to /usr/lib... on the host: keep the loader where binaries look.
[ -e "$root/lib64/ld-linux-x86-64.so.2" ] || { mkdir -p "$root/lib64"; cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"; }
uid=999
printf 'root:x:0:0:root:/root:/bin/sh\npostgres:x:%s:%s:PostgreSQL:/var/lib/postgresql:/bin/sh\n' "$uid" "$uid" >"$root/etc/passwd"
printf 'root:x:0:\npostgres:x:%s:\n' "$uid" >"$root/etc/group"
chown -R "$uid:$uid" "$root/var/lib/postgresql" "$root/var/run/postgresql"
chmod 1777 "$root/tmp"

# 2. The base image.
tar -C "$root" -c . | docker import - "$base" >/dev/null

# 3. A cluster made once, then the server as the command.
# Clients come through the bridge network, not loopback: trust them too (a test database on a
# port published on the host's loopback only, see pg_container.rs).
builder=$(docker create --user postgres --env TZ=UTC "$base" /bin/sh -c \
  "$pg_lib/bin/initdb -D /var/lib/postgresql/data -U postgres --auth=trust --no-sync -E UTF8 --locale=C >/dev/null \
   && echo 'host all all all trust' >>/var/lib/postgresql/data/pg_hba.conf")
docker start -a "$builder" >/dev/null 2>"$root/initdb.log" || { cat "$root/initdb.log" >&2; exit 1; }
docker commit \
  --change 'USER postgres' \
  --change 'ENV TZ=UTC' \
  --change 'EXPOSE 5432' \
  --change "CMD [\"$pg_lib/bin/postgres\", \"-D\", \"/var/lib/postgresql/data\", \"-c\", \"listen_addresses=*\", \"-c\", \"fsync=off\", \"-c\", \"synchronous_commit=off\", \"-c\", \"full_page_writes=off\", \"-c\", \"max_connections=200\", \"-c\", \"jit=off\"]" \
  "$builder" "$image" >/dev/null
current=$(docker image inspect --format '{{.Id}}' "$image")
if [ -n "$previous" ] && [ "$previous" != "$current" ]; then docker rmi "$previous" >/dev/null 2>&1 || true; fi
echo "build-pg-image: $image ($(docker image inspect --format '{{.Size}}' "$image") bytes)"
