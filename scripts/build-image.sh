#!/usr/bin/env bash
# Builds the suite's image from this checkout and prints its tag.
# Usage: scripts/build-image.sh [cpu|gpu] [extra docker build arguments...]
# The tag comes from components/_image.py: IMAGE (tfkfp/tfkfp:<version>) for cpu, IMAGE-gpu for
# gpu. The build context holds only what the image needs (pyproject.toml, README.md, LICENSE,
# NOTICE, components/, pipelines/, cli/, images/), so virtual environments and caches in the checkout never
# reach the Docker daemon. EXTRA_CA_BUNDLE=/path/to/ca.crt adds a CA bundle for pip inside the
# build (hosts behind a TLS-intercepting proxy); DOCKER (default: docker) picks the client.
# PUSH=REGISTRY/NAME also tags the image REGISTRY/NAME:<version>[-gpu] and pushes it.
# After the build it records what it built in images/built-image.txt (gpu:
# images/built-image-gpu.txt; both gitignored), which `tfkfp compile --image auto` reads: after
# a push the registry's digest, REGISTRY/NAME@sha256:..., the one reference no later push can
# change; for a local build the tag and the image ID ("tfkfp/tfkfp:0.1.0 sha256:..."), which
# no registry holds, so `--image auto` refuses it rather than fall back to the tag.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FLAVOR=${1:-cpu}
shift || true
case "$FLAVOR" in cpu | gpu) ;; *) echo "usage: $0 [cpu|gpu] [docker build args...]" >&2; exit 2 ;; esac
version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$ROOT/components/_image.py")
name=$(sed -n 's/^IMAGE_NAME = "\(.*\)"$/\1/p' "$ROOT/components/_image.py")
[[ -n $version && -n $name ]] || { echo "cannot read the image from components/_image.py" >&2; exit 1; }
tag="$name:$version"
[[ $FLAVOR == gpu ]] && tag="$tag-gpu"

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp -r "$ROOT/pyproject.toml" "$ROOT/README.md" "$ROOT/LICENSE" "$ROOT/NOTICE" \
  "$ROOT/components" "$ROOT/pipelines" "$ROOT/cli" "$ROOT/images" "$context/"
find "$context" \( -name __pycache__ -o -name '*.pyc' -o -name '*.egg-info' \) -prune \
  -exec rm -rf {} +
rm -f "$context"/images/*.crt "$context"/images/built-image*.txt
if [[ -n ${EXTRA_CA_BUNDLE:-} ]]; then cp "$EXTRA_CA_BUNDLE" "$context/images/extra-ca.crt"; fi

docker=${DOCKER:-docker}
"$docker" build -f "$context/images/$FLAVOR/Dockerfile" \
  --build-arg "TFKFP_VERSION=$version" -t "$tag" "$@" "$context" >&2

record="$ROOT/images/built-image.txt"
[[ $FLAVOR == gpu ]] && record="$ROOT/images/built-image-gpu.txt"
record=${RECORD:-$record}  # elsewhere (tests)
rm -f "$record"  # a failure below must not leave an older build's digest behind
if [[ -n ${PUSH:-} ]]; then
  pushed="$PUSH:${tag#*:}"
  "$docker" tag "$tag" "$pushed"
  "$docker" push "$pushed" >&2
  # the digest of this repository (an image pushed to several has one per repository)
  digest=$("$docker" image inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' \
    "$pushed" | grep -m1 "^$PUSH@sha256:" || true)
  [[ -n $digest ]] || { echo "build-image.sh: $pushed has no digest after the push" >&2; exit 1; }
  echo "$digest" >"$record"
  tag=$pushed
else
  echo "$tag $("$docker" image inspect --format '{{.Id}}' "$tag")" >"$record"
fi
echo "recorded $(cat "$record") in $record" >&2
echo "$tag"
