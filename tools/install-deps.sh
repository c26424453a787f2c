#!/usr/bin/env bash
# Installs the Debian packages syncplan builds and tests with; quick and silent when all are present.
set -euo pipefail

packages=(
  build-essential cmake python3
  nlohmann-json3-dev libcli11-dev catch2 libbenchmark-dev libeigen3-dev
  libre2-dev pkg-config  # plan --every-iteration's patterns (RE2: linear-time matching)
  libboost-random-dev  # the DES's jitter draws (Boost.Random's ziggurat normal, header-only; docs/des.md)
  openmpi-bin libopenmpi-dev  # profile-link's CPU backend and its mpirun tests (docs/link.md)
  python3-torch  # tools/torch_profile.py and its tests (docs/torch.md)
  clang libclang-rt-14-dev  # the libFuzzer harnesses: clang++, libFuzzer, ASan, UBSan (docs/fuzzing.md)
  chromium python3-pil  # the headless rendering test of report pages (docs/report.md)
  iproute2  # tc and ip: tools/shaped-link.sh, the real-link tests (docs/cluster.md)
)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
