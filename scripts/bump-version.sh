#!/usr/bin/env bash
# Bump the suite's version everywhere it is written, in one step, then recompile the
# pipelines (their YAML names the image tag) and regenerate the README tables.
#   scripts/bump-version.sh 0.2.0
# components/_image.py holds the version; the Dockerfiles' TFKFP_VERSION, the image tags in
# the manifests (kustomize newTag, the image check Job, the Trainer runtime, the allow-list)
# and images/README.md follow it. tests/images and tests/manifests check that they agree.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NEW=${1:?usage: scripts/bump-version.sh NEW_VERSION (e.g. 0.2.0)}
if [[ ! $NEW =~ ^[0-9]+\.[0-9]+\.[0-9]+([.-][A-Za-z0-9.]+)?$ ]]; then
  echo "bump-version: $NEW is not a version like 0.2.0 or 0.2.0-rc1" >&2
  exit 2
fi
OLD=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$ROOT/components/_image.py")
if [[ -z $OLD ]]; then
  echo "bump-version: no __version__ in components/_image.py" >&2
  exit 1
fi
if [[ $OLD == "$NEW" ]]; then
  echo "bump-version: already $NEW"
  exit 0
fi
cd "$ROOT"
OLD_RE=${OLD//./\\.}
FILES=(components/_image.py images/README.md images/cpu/Dockerfile images/gpu/Dockerfile)
mapfile -t -O "${#FILES[@]}" FILES < <(grep -rlE "tfkfp/tfkfp:$OLD_RE|newTag: $OLD_RE" manifests)
for file in "${FILES[@]}"; do
  sed -i -E "s/__version__ = \"$OLD_RE\"/__version__ = \"$NEW\"/; \
s/TFKFP_VERSION=$OLD_RE\$/TFKFP_VERSION=$NEW/; \
s#tfkfp/tfkfp:$OLD_RE#tfkfp/tfkfp:$NEW#g; s/newTag: $OLD_RE\$/newTag: $NEW/" "$file"
done
echo "bumped $OLD -> $NEW in ${#FILES[@]} files"
if [[ -z ${TFKFP_BUMP_NO_COMPILE:-} ]]; then  # the tests bump a copy of the files only
  python -m tfkfp.cli.main compile --out pipelines >/dev/null
  python -m tfkfp.cli.docs --write
  echo "recompiled pipelines/*.yaml and the README tables"
fi
