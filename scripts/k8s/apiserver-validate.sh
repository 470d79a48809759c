#!/bin/bash
# Start etcd + kube-apiserver v1.20.2 on loopback, `kubectl apply --dry-run=server` the given
# manifests, stop both. Exit status 1 when the server rejects any of them.
# Usage: apiserver-validate.sh FILE_OR_DIR...
# Needs: etcd (Debian etcd-server), kubectl, openssl, and $K8S_BIN/kube-apiserver built by
# build-k8s-from-debian-source.sh (.ci/install-cluster-tools builds and caches it).
# Environment: K8S_BIN (default ~/.cache/tfkfp-k8s/bin), K8S_WORK (scratch folder, default
# ~/.cache/tfkfp-k8s/run), CREATE_NAMESPACES (created for real before the dry runs, since a
# dry-run Namespace does not exist for the objects in it; default "kubeflow"), API_PORT,
# ETCD_PORT, ETCD_PEER_PORT (default 16443, 23790, 23800).
# Adapted from shared/k8s/apiserver-validate.sh: quoting, a trap that stops both servers,
# configurable ports and namespaces.
set -u
W=${K8S_WORK:-$HOME/.cache/tfkfp-k8s/run}
B=${K8S_BIN:-$HOME/.cache/tfkfp-k8s/bin}
API_PORT=${API_PORT:-16443}
ETCD_PORT=${ETCD_PORT:-23790}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-23800}
rm -rf "$W/etcd"
mkdir -p "$W/etcd" "$W/pki" "$W/certs"
openssl genrsa -out "$W/pki/sa.key" 2048 2>/dev/null
openssl rsa -in "$W/pki/sa.key" -pubout -out "$W/pki/sa.pub" 2>/dev/null
echo 'ci-token,ci,1,system:masters' >"$W/pki/tokens.csv"
cat >"$W/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: l, cluster: {server: "https://127.0.0.1:$API_PORT", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: ci-token}}]
contexts: [{name: l, context: {cluster: l, user: u}}]
current-context: l
KC
ETCD=""
API=""
# shellcheck disable=SC2329  # called by the EXIT trap
stop() {
  [ -n "$API" ] && kill "$API" 2>/dev/null && wait "$API" 2>/dev/null
  [ -n "$ETCD" ] && kill "$ETCD" 2>/dev/null && wait "$ETCD" 2>/dev/null
  return 0
}
trap stop EXIT
etcd --data-dir "$W/etcd/data" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "default=http://127.0.0.1:$ETCD_PEER_PORT" >"$W/etcd.log" 2>&1 &
ETCD=$!
"$B/kube-apiserver" --etcd-servers="http://127.0.0.1:$ETCD_PORT" --bind-address=127.0.0.1 \
  --advertise-address=127.0.0.1 --secure-port="$API_PORT" --cert-dir="$W/certs" \
  --token-auth-file="$W/pki/tokens.csv" --service-account-issuer=https://kubernetes.default.svc \
  --service-account-key-file="$W/pki/sa.pub" --service-account-signing-key-file="$W/pki/sa.key" \
  --service-cluster-ip-range=10.96.0.0/24 --endpoint-reconciler-type=none \
  --authorization-mode=AlwaysAllow >"$W/apiserver.log" 2>&1 &
API=$!
export KUBECONFIG="$W/kubeconfig"
ready=""
for _ in $(seq 1 120); do
  if kubectl get --raw /readyz >/dev/null 2>&1; then ready=1; break; fi
  sleep 0.5
done
if [ -z "$ready" ]; then
  echo "kube-apiserver did not become ready; its log:" >&2
  tail -n 30 "$W/apiserver.log" "$W/etcd.log" >&2
  exit 2
fi
for ns in ${CREATE_NAMESPACES:-kubeflow}; do kubectl create namespace "$ns" >/dev/null; done
rc=0
for f in "$@"; do kubectl apply --dry-run=server -f "$f" || rc=1; done
exit $rc
