#!/usr/bin/env bash
# Installs what tl-ascend needs to build and test on Debian 12, by package name, only if missing.
set -euo pipefail
pkgs=(cmake ninja-build g++ ccache libgtest-dev libgmock-dev libbenchmark-dev libfmt-dev
      nlohmann-json3-dev libcli11-dev libopenblas-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) == 0 ]] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
