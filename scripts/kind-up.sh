#!/usr/bin/env bash
# A local Kubeflow cluster for tfkfp on kind, for a machine with Docker and internet access:
#   1. creates the kind cluster of manifests/kind/cluster.yaml (skipped when it exists);
#   2. installs pinned upstream Kubeflow Pipelines (standalone, platform-agnostic) and the
#      Kubeflow Training Operator (v1, which runs TFJobs) with `kubectl apply -k` of their
#      GitHub refs, and waits for them;
#   3. builds the suite's CPU image (scripts/build-image.sh) and `kind load`s it;
#   4. applies manifests/overlays/kind and waits for the image check Job;
#   5. compiles every pipeline for a laptop (`tfkfp compile --sizes kind`, every step given the
#      cluster's object-store keys with --store-secret), port-forwards the KFP API, and starts
#      a run of `training` (`tfkfp submit --sizes kind`) when INPUT_URI names data: a local
#      file is first uploaded to the cluster's own store (minio://mlpipeline/tfkfp-input/),
#      which the steps then read and where they keep the shards (data_root=auto).
# The node image is pinned by digest in manifests/kind/cluster.yaml (kind v0.27.0's release
# notes list it); `tfkfp compile --image auto` compiles the digest build-image.sh records after
# a push (PUSH=REGISTRY/NAME), while this script loads the local build into kind by its tag.
# Needs: docker, kind (v0.27 or newer), kubectl (1.28 or newer), and tfkfp installed in the
# active Python environment (pip install -e .). Rerunning it is safe.
#   scripts/kind-up.sh                                   # cluster, KFP, operator, image
#   INPUT_URI=tfkfp-demo/data/digits.csv [LABEL=label] scripts/kind-up.sh  # ... and a run
#   INPUT_URI=minio://mlpipeline/tables/data.csv scripts/kind-up.sh  # data already in the store
# Remove everything with: kind delete cluster --name tfkfp
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CLUSTER=${CLUSTER:-tfkfp}
KFP_VERSION=${KFP_VERSION:-2.14.3}
TRAINING_OPERATOR_VERSION=${TRAINING_OPERATOR_VERSION:-v1.8.1}
KFP_PORT=${KFP_PORT:-8080}
INPUT_URI=${INPUT_URI:-}
LABEL=${LABEL:-label}  # the label column of INPUT_URI
OUT=${OUT:-$ROOT/build/kind}

say() { printf '\n==> %s\n' "$*"; }
for cmd in docker kind kubectl tfkfp; do
  command -v "$cmd" >/dev/null || { echo "kind-up.sh: $cmd is not installed" >&2; exit 1; }
done

say "kind cluster $CLUSTER"
if kind get clusters | grep -qx "$CLUSTER"; then
  echo "exists"
else
  kind create cluster --name "$CLUSTER" --config "$ROOT/manifests/kind/cluster.yaml" --wait 120s
fi
kubectl config use-context "kind-$CLUSTER"

say "Kubeflow Pipelines $KFP_VERSION (standalone)"
kubectl apply -k \
  "github.com/kubeflow/pipelines/manifests/kustomize/cluster-scoped-resources?ref=$KFP_VERSION"
kubectl wait --for condition=established --timeout=120s crd/applications.app.k8s.io
kubectl apply -k \
  "github.com/kubeflow/pipelines/manifests/kustomize/env/platform-agnostic?ref=$KFP_VERSION"

say "Kubeflow Training Operator $TRAINING_OPERATOR_VERSION"
kubectl apply --server-side -k \
  "github.com/kubeflow/training-operator.git/manifests/overlays/standalone?ref=$TRAINING_OPERATOR_VERSION"
kubectl wait --for condition=established --timeout=120s crd/tfjobs.kubeflow.org

say "waiting for Kubeflow (a first install pulls images for several minutes)"
kubectl -n kubeflow wait --for condition=Available --timeout=30m deployment --all

say "the suite image"
IMAGE=$("$ROOT/scripts/build-image.sh" cpu)
kind load docker-image "$IMAGE" --name "$CLUSTER"

say "tfkfp manifests (overlay kind)"
kubectl -n kubeflow delete job tfkfp-image-check --ignore-not-found
# KFP owns the kubeflow namespace (the overlay leaves it as it is): label it as tfkfp's, so
# the replica allow-list policy (manifests/policy, clusters of 1.30+) applies there too.
kubectl label namespace kubeflow app.kubernetes.io/part-of=tfkfp --overwrite
kubectl apply -k "$ROOT/manifests/overlays/kind"
kubectl -n kubeflow wait --for condition=Complete --timeout=10m job/tfkfp-image-check
kubectl -n kubeflow logs job/tfkfp-image-check

say "compile the pipelines into $OUT"
STORE=(--store-secret mlpipeline-minio-artifact)  # KFP's own keys for its artifact store
tfkfp compile --out "$OUT" --sizes kind "${STORE[@]}"  # steps sized to the kind LimitRange

if [[ -z $INPUT_URI ]]; then
  say "done: set INPUT_URI to data the cluster can read to start a training run"
  echo "KFP UI: kubectl -n kubeflow port-forward svc/ml-pipeline-ui $KFP_PORT:80"
  echo "upload: $OUT/training.yaml"
  exit 0
fi

say "start a training run on $INPUT_URI"
kubectl -n kubeflow port-forward svc/ml-pipeline-ui "$KFP_PORT:80" >/dev/null 2>&1 &
FORWARD=$!
trap 'kill "$FORWARD" 2>/dev/null || true' EXIT
for _ in $(seq 1 60); do
  curl -fsS "http://localhost:$KFP_PORT/apis/v2beta1/healthz" >/dev/null 2>&1 && break
  sleep 1
done
if [[ -f $INPUT_URI ]]; then  # a local file: into the cluster's store, as the steps read it
  say "upload $INPUT_URI to the cluster's object store"
  kubectl -n kubeflow port-forward svc/minio-service 9000:9000 >/dev/null 2>&1 &
  STORE_FORWARD=$!
  secret() { kubectl -n kubeflow get secret mlpipeline-minio-artifact -o "jsonpath={.data.$1}" |
    base64 -d; }
  TARGET="minio://mlpipeline/tfkfp-input/$(basename "$INPUT_URI")"
  sleep 3
  AWS_ENDPOINT_URL=http://localhost:9000 AWS_ACCESS_KEY_ID=$(secret accesskey) \
    AWS_SECRET_ACCESS_KEY=$(secret secretkey) python -c "import sys
from tfkfp.components.common.platform import uris
uris.link_or_copy(sys.argv[1], sys.argv[2])" "$INPUT_URI" "$TARGET"
  kill "$STORE_FORWARD" 2>/dev/null || true
  INPUT_URI=$TARGET
fi
tfkfp submit training --sizes kind "${STORE[@]}" --host "http://localhost:$KFP_PORT" \
  --set "input_uri=$INPUT_URI" --set "label=$LABEL" --set epochs=2
echo "follow it: kubectl -n kubeflow port-forward svc/ml-pipeline-ui $KFP_PORT:80, then" \
  "http://localhost:$KFP_PORT"
