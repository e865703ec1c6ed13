#!/usr/bin/env bash
# Install Debian's headless Chromium and its WebDriver (the site test's browser). Idempotent:
# does nothing when both are present. Needs root and Debian/Ubuntu apt.
set -euo pipefail

PKGS=(chromium chromium-driver)

# shellcheck source=../lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/apt.sh"
mapfile -t missing < <(missing_packages "${PKGS[@]}")
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
