#!/usr/bin/env bash
# Installs the real components the tests run against (Docker engine, registry, NetworkManager, Samba, ...)
# from Debian's packages. Each plugin lists what its tests need in plugins/<name>/test/apt-packages.txt
# (one package per line, # comments). Idempotent: does nothing when every package is already installed.
set -euo pipefail
cd "$(dirname "$0")/../.."

mapfile -t wanted < <(cat test/components/apt-packages.txt helper/test/apt-packages.txt plugins/*/test/apt-packages.txt 2>/dev/null \
  | sed 's/#.*//' | tr -s ' \t' '\n' | grep -v '^$' | sort -u)
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "test components: all ${#wanted[@]} packages present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "test components missing (run this script as root): ${missing[*]}" >&2
  exit 1
fi
echo "test components: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# --no-install-recommends: without it apt pulls in a kernel image. policy-rc.d keeps services from starting;
# the tests start their own daemons on their own sockets.
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "test components: installed ${#missing[@]} packages"
