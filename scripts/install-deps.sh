#!/usr/bin/env bash
# Installs the Debian 12 packages rustfs builds and tests with (DESIGN.md §4),
# and fio's headers for the fio engine (src/fio) from Debian's fio source
# package. Idempotent: does nothing when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS=(
  build-essential cmake ninja-build pkg-config
  libisal-dev liburing-dev libfuse3-dev fuse3 libasio-dev libssl-dev clang-19 libclang-rt-19-dev
  libprotobuf-dev protobuf-compiler librocksdb-dev
  libtomlplusplus-dev libcli11-dev libspdlog-dev libnuma-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  fio python3 python3-pytest python3-numpy attr  # attr: setfattr/getfattr for the layout xattr
  autoconf automake  # pjdfstest's build (scripts/pjdfstest.sh)
  rsync  # the POSIX tests copy trees with it
  gdb  # a hung end-to-end test prints every daemon's stacks
  pybind11-dev python3-dev python3-torch  # the Python package and its PyTorch sampler
  dpkg-dev  # dpkg-source, which apt-get source unpacks with
)
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# FUSE over io_uring (rustfs-fuse's default, `[fuse] io_uring`): kernels from
# 6.14 have it but offer it to daemons only when root turns this on. Without
# it the mount works over /dev/fuse, only slower (README, "FUSE over io_uring").
URING_PARAM=/sys/module/fuse/parameters/enable_uring
[ -e "$URING_PARAM" ] || $SUDO modprobe fuse 2>/dev/null || true
if [ -w "$URING_PARAM" ] || { [ -e "$URING_PARAM" ] && [ -n "$SUDO" ]; }; then
  if [ "$(cat "$URING_PARAM")" != "Y" ]; then
    echo 1 | $SUDO tee "$URING_PARAM" >/dev/null && echo "install-deps: FUSE over io_uring enabled ($URING_PARAM)"
  fi
elif [ ! -e "$URING_PARAM" ]; then
  echo "install-deps: this kernel has no FUSE over io_uring; mounts use /dev/fuse"
fi

# fio loads an external engine only if it was built for its own
# FIO_IOOPS_VERSION and struct layouts, so the headers must be those of the
# installed fio: its Debian source package, same version, configured here
# (configure writes config-host.h, which fio.h includes).
FIO_SRC=third_party/fio-src
fio_version=$(dpkg-query -W -f='${Version}' fio)
if [ -f "$FIO_SRC/config-host.h" ] && [ "$(cat "$FIO_SRC/.debian-version" 2>/dev/null)" = "$fio_version" ]; then
  echo "install-deps: fio $fio_version source present in $FIO_SRC"
  exit 0
fi
# apt-get source needs a deb-src entry. Debian 12 images list only binary
# archives (deb822 debian.sources, "Types: deb"): add the same archives as
# deb-src in a file of our own rather than editing the system's.
if ! grep -rqs '^Types:.*deb-src\|^deb-src ' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  src_list=/etc/apt/sources.list.d/rustfs-deb-src.sources
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources | $SUDO tee "$src_list" >/dev/null
  else
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      | $SUDO tee "$src_list" >/dev/null
  fi
  echo "install-deps: added deb-src entries in $src_list"
  $SUDO apt-get update -q
fi
echo "install-deps: fetching the source of fio $fio_version into $FIO_SRC"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get source -q "fio=$fio_version" >/dev/null)
rm -rf "$FIO_SRC"
mkdir -p "$(dirname "$FIO_SRC")"
mv "$work"/fio-*/ "$FIO_SRC"
# Only config-host.h is needed, not a fio build.
(cd "$FIO_SRC" && ./configure >/dev/null)
echo "$fio_version" >"$FIO_SRC/.debian-version"
echo "install-deps: fio source configured in $FIO_SRC"
