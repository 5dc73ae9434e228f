#!/usr/bin/env bash
# Release build into build/ (binaries in build/bin). Uses both cores.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build -j"$(nproc)"
# `import rustfs` for Debian's /usr/bin/python3: its site-packages path file
# names build/python (the package's native module is built there).
site=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
mkdir -p "$site"
echo "$(pwd)/build/python" >"$site/rustfs.pth"
