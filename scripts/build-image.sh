#!/usr/bin/env bash
# Builds the suite's image from this checkout and prints its tag.
# Usage: scripts/build-image.sh [cpu|gpu] [extra docker build arguments...]
# The tag comes from components/_image.py: IMAGE (tfkfp/tfkfp:<version>) for cpu, IMAGE-gpu for
# gpu. The build context holds only what the image needs (pyproject.toml, README.md, LICENSE,
# NOTICE, components/, pipelines/, cli/, images/), so virtual environments and caches in the checkout never
# reach the Docker daemon. EXTRA_CA_BUNDLE=/path/to/ca.crt adds a CA bundle for pip inside the
# build (hosts behind a TLS-intercepting proxy); DOCKER (default: docker) picks the client.
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
rm -f "$context"/images/*.crt
if [[ -n ${EXTRA_CA_BUNDLE:-} ]]; then cp "$EXTRA_CA_BUNDLE" "$context/images/extra-ca.crt"; fi

"${DOCKER:-docker}" build -f "$context/images/$FLAVOR/Dockerfile" \
  --build-arg "TFKFP_VERSION=$version" -t "$tag" "$@" "$context" >&2
echo "$tag"
