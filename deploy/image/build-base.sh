#!/usr/bin/env bash
# Builds the two bases of boardline's image from Debian's packages, not from an image registry, and
# imports them as local images:
#   localhost/deploy/image/build-base.sh:bookworm        the runtime stage's base (first argument
#       overrides the tag): a Debian bookworm root filesystem holding only what the Node.js binary
#       needs at run time;
#   localhost/deploy/image/build-base.sh:bookworm-build  the build stage's base (second argument):
#       the same, plus Debian's nodejs, which fetches and checks the pinned Node and npm (the
#       Containerfile's deploy/image/fetch-locked.mjs). It never ships.
# The images are named after this script so that a build without them stops on an error that names it.
#
# mmdebstrap resolves and downloads the packages and checks them against Debian's signed release
# files (--variant=extract: nothing is installed, no maintainer script runs). Of what it fetched,
# only these packages' files go into the runtime base:
#   libc6, libgcc-s1, libstdc++6   the C and C++ runtime the node binary links to
#   libjemalloc2                   the allocator node runs with (the Containerfile's LD_PRELOAD):
#                                  it gives back the memory a busy instance freed
#   ca-certificates, tzdata        CA certificates (the bundle is assembled here, as the package's
#                                  own script would), time zones (/etc/localtime is UTC)
#   base-files, netbase            /etc/os-release, /etc/services and /etc/protocols
# Their dependencies (debconf, openssl, mawk, perl) are left out: the root filesystem has no shell,
# no package manager and no other program. Manuals are dropped; each package's copyright stays.
# Users: root (0) and boardline (10001, the uid the image runs as); /tmp is world-writable.
# The build base holds every package fetched (those, nodejs and their dependencies), still no shell.
#
# Behind a TLS-intercepting proxy, the build base trusts the CA the npm here trusts, as
# /etc/ssl/build-ca.crt (BUILD_CA_FILE, else NODE_EXTRA_CA_CERTS, else npm's configured cafile; else
# it is Debian's bundle again), so that a plain `podman build .` reaches the npm registry. The
# runtime base never holds it.
#
# Reproducible: the same packages give the same runtime tar (one mtime, numeric owners, sorted
# names), so the same layer digest. The mtime is SOURCE_DATE_EPOCH, or the commit time of this script.
# Both images carry this script's sha256 as the label boardline.base.recipe.
# Needs: mmdebstrap, dpkg-deb, GNU tar, podman; root (or run it under `podman unshare`).
set -euo pipefail

tag=${1:-localhost/deploy/image/build-base.sh:bookworm}
build_tag=${2:-localhost/deploy/image/build-base.sh:bookworm-build}
suite=bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
keep=(libc6 libgcc-s1 libstdc++6 libjemalloc2 ca-certificates tzdata base-files netbase)
build_only=(nodejs)
here=$(cd "$(dirname "$0")" && pwd)
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$here" log -1 --format=%ct -- build-base.sh 2>/dev/null || true)}
epoch=${epoch:-0}
recipe=$(sha256sum "$here/build-base.sh" | cut -d' ' -f1)
ca=${BUILD_CA_FILE:-${NODE_EXTRA_CA_CERTS:-$(npm config get cafile 2>/dev/null || true)}}
[[ $ca == null || $ca == undefined ]] && ca=

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fetched=$work/fetched

include=$(
  IFS=,
  echo "${keep[*]},${build_only[*]}"
)
mmdebstrap --quiet --variant=extract --include="$include" --skip=cleanup/apt/cache \
  "$suite" "$fetched" \
  "deb $mirror $suite main" "deb $mirror $suite-updates main" "deb $security $suite-security main"
archives=$fetched/var/cache/apt/archives

# The newest .deb fetched of a package.
deb_of() {
  local deb
  deb=$(find "$archives" -maxdepth 1 -name "${1}_*.deb" | sort | tail -n 1)
  [[ -n $deb ]] || {
    echo "build-base: mmdebstrap fetched no $1" >&2
    exit 1
  }
  echo "$deb"
}

# make_root <root> <.deb…>: the packages' files, then what their maintainer scripts would have set up.
make_root() {
  local root=$1 deb
  shift
  mkdir -p "$root"
  for deb; do
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$root"
    printf '%s\n' "$(basename "$deb" .deb)" >>"$root.packages"
  done
  # What ca-certificates' update-ca-certificates would write, with every Mozilla certificate enabled.
  mkdir -p "$root/etc/ssl/certs"
  find "$root/usr/share/ca-certificates" -name '*.crt' | LC_ALL=C sort | while read -r crt; do
    cat "$crt"
    [[ -z $(tail -c 1 "$crt") ]] || echo
  done >"$root/etc/ssl/certs/ca-certificates.crt"
  ln -sfn /usr/share/zoneinfo/Etc/UTC "$root/etc/localtime"
  echo "Etc/UTC" >"$root/etc/timezone"
  printf 'root:x:0:0:root:/root:/nonexistent\nboardline:x:10001:10001:boardline:/nonexistent:/nonexistent\n' \
    >"$root/etc/passwd"
  printf 'root:x:0:\nboardline:x:10001:\n' >"$root/etc/group"
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
  mkdir -p "$root/tmp" "$root/root" "$root/usr/local/bin"
  chmod 1777 "$root/tmp"
  chmod 0700 "$root/root"
  rm -rf "$root/usr/share/man" "$root/usr/share/info" "$root/usr/share/lintian" "$root/usr/share/gdb" \
    "$root/usr/share/bash-completion" "$root/etc/profile.d" "$root/etc/update-motd.d" "$root/etc/skel"
  # ca-certificates' update script (a shell script, the bundle is assembled above) and the empty
  # dpkg and apt folders base-files makes: no program but node, no package database.
  rm -rf "$root/usr/sbin/update-ca-certificates" "$root/var/lib/dpkg" "$root/var/lib/apt" "$root/var/cache/apt"
  find "$root/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  mkdir -p "$root/usr/share/boardline-base"
  cp "$root.packages" "$root/usr/share/boardline-base/packages"
}

# import <root> <tag> <description>
import() {
  tar -C "$1" --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
    --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    -cf "$1.tar" .
  podman import --quiet --change "LABEL boardline.base.recipe=$recipe" \
    --change "LABEL org.opencontainers.image.description=\"$3\"" "$1.tar" "$2" >/dev/null
  echo "$2: $(du -h "$1.tar" | cut -f1) from $(paste -sd ' ' "$1.packages")"
}

debs=()
for package in "${keep[@]}"; do debs+=("$(deb_of "$package")"); done
make_root "$work/runtime" "${debs[@]}"
import "$work/runtime" "$tag" "Debian $suite: $(paste -sd ' ' "$work/runtime.packages")"

for package in "${build_only[@]}"; do deb_of "$package" >/dev/null; done
mapfile -t all < <(find "$archives" -maxdepth 1 -name '*.deb' | LC_ALL=C sort)
make_root "$work/build" "${all[@]}"
if [[ -n $ca && -f $ca ]]; then
  cp "$ca" "$work/build/etc/ssl/build-ca.crt"
else
  cp "$work/build/etc/ssl/certs/ca-certificates.crt" "$work/build/etc/ssl/build-ca.crt"
fi
import "$work/build" "$build_tag" "Debian $suite with nodejs, for boardline's build stage"
