#!/usr/bin/env bash
# Builds the base of boardline's image from Debian's packages, not from an image registry: a Debian
# bookworm root filesystem holding only what the Node.js binary needs at run time, imported as a
# local image (default tag localhost/boardline-base:bookworm; the first argument overrides it).
#
# mmdebstrap resolves and downloads the packages and checks them against Debian's signed release
# files (--variant=extract: nothing is installed, no maintainer script runs). Of what it fetched,
# only these packages' files go into the root filesystem:
#   libc6, libgcc-s1, libstdc++6   the C and C++ runtime the node binary links to
#   libjemalloc2                   the allocator node runs with (the Containerfile's LD_PRELOAD):
#                                  it gives back the memory a busy instance freed
#   ca-certificates, tzdata        CA certificates (the bundle is assembled here, as the package's
#                                  own script would), time zones (/etc/localtime is UTC)
#   base-files, netbase            /etc/os-release, /etc/services and /etc/protocols
# Their dependencies (debconf, openssl, mawk, perl) are left out: the root filesystem has no shell,
# no package manager and no other program. Manuals are dropped; each package's copyright stays.
# Users: root (0) and boardline (10001, the uid the image runs as); /tmp is world-writable.
#
# Reproducible: the same packages give the same tar (one mtime, numeric owners, sorted names), so
# the same layer digest. The mtime is SOURCE_DATE_EPOCH, or the commit time of this script.
# Needs: mmdebstrap, dpkg-deb, GNU tar, podman; root (or run it under `podman unshare`).
set -euo pipefail

tag=${1:-localhost/boardline-base:bookworm}
suite=bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
keep=(libc6 libgcc-s1 libstdc++6 libjemalloc2 ca-certificates tzdata base-files netbase)
here=$(cd "$(dirname "$0")" && pwd)
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$here" log -1 --format=%ct -- build-base.sh 2>/dev/null || true)}
epoch=${epoch:-0}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fetched=$work/fetched
root=$work/root
mkdir -p "$root"

include=$(
  IFS=,
  echo "${keep[*]}"
)
mmdebstrap --quiet --variant=extract --include="$include" --skip=cleanup/apt/cache \
  "$suite" "$fetched" \
  "deb $mirror $suite main" "deb $mirror $suite-updates main" "deb $security $suite-security main"

for package in "${keep[@]}"; do
  deb=$(find "$fetched/var/cache/apt/archives" -maxdepth 1 -name "${package}_*.deb" | sort | tail -n 1)
  [[ -n $deb ]] || {
    echo "build-base: mmdebstrap fetched no $package" >&2
    exit 1
  }
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$root"
  printf '%s\n' "$(basename "$deb" .deb)" >>"$work/packages"
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
cp "$work/packages" "$root/usr/share/boardline-base/packages"

tar -C "$root" --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
  --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
  -cf "$work/rootfs.tar" .
recipe=$(sha256sum "$here/build-base.sh" | cut -d' ' -f1)
podman import --quiet --change "LABEL boardline.base.recipe=$recipe" \
  --change "LABEL org.opencontainers.image.description=\"Debian $suite: $(paste -sd ' ' "$work/packages")\"" \
  "$work/rootfs.tar" "$tag" >/dev/null
echo "$tag: $(du -h "$work/rootfs.tar" | cut -f1) from $(paste -sd ' ' "$work/packages")"
