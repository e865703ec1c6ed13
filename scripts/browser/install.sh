#!/usr/bin/env bash
# Install Debian's headless Chromium and its WebDriver (the site test's browser). Idempotent:
# does nothing when both are present. Needs root and Debian/Ubuntu apt.
set -euo pipefail

PKGS=(chromium chromium-driver)

missing=()
for p in "${PKGS[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if [ "${#missing[@]}" -eq 0 ]; then
    echo "browser: chromium and chromium-driver already installed"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "browser: install.sh must run as root to install ${missing[*]} (apt-get install)" >&2
    exit 1
fi
echo "browser: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
