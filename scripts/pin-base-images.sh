#!/usr/bin/env bash
# Pins each image's base to the digest its tag names today: pulls the tag and writes
# `ARG BASE_IMAGE=<tag>@sha256:<digest>` into the Dockerfile (images/cpu, images/gpu).
# The digest is the one the registry gives for the tag (the multi-platform index where there
# is one), so the same pin serves every platform. Needs a Docker daemon that reaches the
# registry. Run from anywhere: scripts/pin-base-images.sh; review and commit the change.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DOCKER=${DOCKER:-docker}

for dockerfile in "$ROOT"/images/*/Dockerfile; do
  line=$(grep -m1 '^ARG BASE_IMAGE=' "$dockerfile") || {
    echo "$dockerfile: no ARG BASE_IMAGE= line" >&2; exit 1; }
  pinned=${line#ARG BASE_IMAGE=}
  tag=${pinned%@*}
  "$DOCKER" pull --quiet "$tag" >/dev/null
  digest=$("$DOCKER" image inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$tag" \
    | sed -n 's/^[^@]*@\(sha256:[0-9a-f]\{64\}\)$/\1/p' | head -n1)
  [[ -n $digest ]] || { echo "no registry digest for $tag" >&2; exit 1; }
  sed -i "s|^ARG BASE_IMAGE=.*|ARG BASE_IMAGE=$tag@$digest|" "$dockerfile"
  echo "${dockerfile#"$ROOT"/}: $tag@$digest"
done
