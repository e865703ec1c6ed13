#!/usr/bin/env bash
# Install the Debian packages of a single-node SLURM test cluster (munge, slurmctld, slurmd,
# client tools, slurmdbd + MariaDB for sacct). Idempotent: does nothing when all are present.
# Needs root and Debian/Ubuntu apt. Services are NOT started here (see start.sh).
set -euo pipefail

PKGS=(munge slurmctld slurmd slurm-client slurmdbd mariadb-server)

if [ "$(id -u)" -ne 0 ]; then
    echo "install.sh: must run as root (apt-get install)" >&2
    exit 1
fi

# shellcheck source=../lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/apt.sh"
mapfile -t missing < <(missing_packages "${PKGS[@]}")
if [ "${#missing[@]}" -eq 0 ]; then
    echo "slurm-local: packages already installed"
    exit 0
fi

echo "slurm-local: installing ${missing[*]}"
# Keep the packages' maintainer scripts from starting daemons (no init system here; start.sh
# starts them under the state directory). Only add the policy file if none exists.
policy=/usr/sbin/policy-rc.d
added_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod 755 "$policy"
    added_policy=1
fi
cleanup() { if [ "$added_policy" -eq 1 ]; then rm -f "$policy"; fi; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "slurm-local: installed"
