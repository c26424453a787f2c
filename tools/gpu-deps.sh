#!/usr/bin/env bash
# Packs the build dependencies a bare GPU machine lacks into .gpu-deps/syncplan-deps.tar.gz, for a
# session to carry there (the device tool's `carry`, docs/profiler.md section 7), where
# tools/gpu-check.sh unpacks and uses it: run on a Debian machine with tools/install-deps.sh's
# packages. It holds the header-only libraries with their CMake package files (nlohmann-json,
# CLI11, Catch2 v2 and Eigen 3) and Open MPI's runtime,
# headers and compiler wrappers, with the shared libraries they need beyond glibc (gpu-check.sh
# uses only those the machine lacks). Nothing is downloaded: the files are the installed packages'.
#
# usage: tools/gpu-deps.sh    (writes .gpu-deps/syncplan-deps.tar.gz, about 15 MB)
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
dest="$repo/.gpu-deps"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
root="$stage/deps"  # the archive's top folder; every path below it is the installed path
arch="$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"

# Copies installed files (and symlinks) to the same paths under $root.
copy() {
  local path
  for path in "$@"; do
    [[ -e "$path" || -L "$path" ]] || { echo "gpu-deps: $path not found (run tools/install-deps.sh)" >&2; exit 1; }
    mkdir -p "$root$(dirname "$path")"
    cp -a "$path" "$root$(dirname "$path")/"
  done
}

# Every file a Debian package installed, less documentation, manuals, static and Fortran parts.
package_files() {
  dpkg -L "$1" | while read -r path; do
    [[ -f "$path" || -L "$path" ]] || continue
    case "$path" in
      /usr/share/doc/*|/usr/share/man/*|/usr/share/lintian/*|*.a|*.mod|*fortran*|*java*|*.jar) continue ;;
    esac
    echo "$path"
  done
}

# --- header-only libraries and their CMake package files -------------------------------------------
copy /usr/include/nlohmann /usr/share/cmake/nlohmann_json
copy /usr/include/CLI /usr/share/cmake/CLI11
copy /usr/include/catch2 /usr/lib/cmake/Catch2
# Catch2's CMake targets name its main's static library, which must exist even when unused.
while read -r library; do copy "$library"; done < <(dpkg -L catch2 | grep '\.a$')
copy /usr/include/eigen3 /usr/share/eigen3/cmake

# --- Open MPI (Debian's build: relocated with OPAL_PREFIX; PMIx with PMIX_INSTALL_PREFIX) ----------
mpi_packages=(libopenmpi3 libopenmpi-dev openmpi-bin openmpi-common)
mapfile -t -O "${#mpi_packages[@]}" mpi_packages < <(dpkg-query -W -f='${Package}\n' 'libpmix*' 2>/dev/null | grep -v -- '-dev$')
for package in "${mpi_packages[@]}"; do
  dpkg-query -W "$package" >/dev/null 2>&1 || continue
  package_files "$package" | while read -r path; do copy "$path"; done
done
# The alternatives' names (update-alternatives makes them at install, so no package holds them).
for name in mpicc mpicxx mpic++ mpirun mpiexec; do
  [[ -e "$root/usr/bin/$name.openmpi" || -L "$root/usr/bin/$name.openmpi" ]] && ln -sf "$name.openmpi" "$root/usr/bin/$name"
done
# Shared libraries the Open MPI binaries and plugins load, beyond the C library and the compiler's.
extra="$root/usr/lib/$arch/syncplan-extra"
mkdir -p "$extra"
find "$root" -type f \( -name '*.so*' -o -perm -u+x \) -print0 | { xargs -0 ldd 2>/dev/null || true; } |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u | while read -r library; do
    case "$(basename "$library")" in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libgcc_s.so*|libstdc++.so*) continue ;;
    esac
    [[ -e "$root$library" || -e "$root$(readlink -f "$library")" ]] && continue  # an Open MPI library itself
    cp -L "$library" "$extra/"
  done

mkdir -p "$dest"
tar -czf "$dest/syncplan-deps.tar.gz" -C "$stage" deps
echo "gpu-deps: wrote $dest/syncplan-deps.tar.gz ($(du -h "$dest/syncplan-deps.tar.gz" | cut -f1)); carry .gpu-deps"
