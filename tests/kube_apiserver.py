"""A real kube-apiserver (v1.20, built by .ci/install-cluster-tools) with its etcd, on loopback
ports, for tests of code that talks to Kubernetes. No controllers run: a test plays their
part (e.g. the Training Operator's, by writing a TFJob's status)."""

import contextlib
import pathlib
import subprocess
import time
from typing import Iterator

import cluster_tools
import yaml
from ports import free_ports


@contextlib.contextmanager
def running(work: pathlib.Path) -> Iterator[pathlib.Path]:
    """Start etcd and kube-apiserver; yield a kubeconfig with full rights; stop both."""
    apiserver = cluster_tools.K8S_CACHE / "bin" / "kube-apiserver"
    if not apiserver.exists():
        cluster_tools.missing(f"no kube-apiserver in {apiserver.parent}")
    etcd = cluster_tools.tool("etcd")
    openssl = cluster_tools.tool("openssl")
    for sub in ("pki", "certs"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    key, pub = work / "pki" / "sa.key", work / "pki" / "sa.pub"
    cluster_tools.run([openssl, "genrsa", "-out", key, "2048"])
    cluster_tools.run([openssl, "rsa", "-in", key, "-pubout", "-out", pub])
    (work / "pki" / "tokens.csv").write_text("test-token,test,1,system:masters\n")
    ca, cert, cert_key = _serving_certificate(openssl, work / "pki")
    api_port, etcd_port, peer_port = free_ports(3)
    kubeconfig = work / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "t",
        "clusters": [{"name": "t", "cluster": {"server": f"https://127.0.0.1:{api_port}",
                                               "certificate-authority": str(ca)}}],
        "users": [{"name": "t", "user": {"token": "test-token"}}],
        "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}]}))
    processes = []
    try:
        processes.append(subprocess.Popen(
            [etcd, "--data-dir", work / "etcd",
             "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
             "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
             "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
             "--initial-cluster", f"default=http://127.0.0.1:{peer_port}"],
            stdout=open(work / "etcd.log", "w"), stderr=subprocess.STDOUT))
        processes.append(subprocess.Popen(
            [apiserver, f"--etcd-servers=http://127.0.0.1:{etcd_port}",
             "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
             f"--secure-port={api_port}", f"--cert-dir={work / 'certs'}",
             f"--tls-cert-file={cert}", f"--tls-private-key-file={cert_key}",
             f"--token-auth-file={work / 'pki' / 'tokens.csv'}",
             "--service-account-issuer=https://kubernetes.default.svc",
             f"--service-account-key-file={pub}", f"--service-account-signing-key-file={key}",
             "--service-cluster-ip-range=10.96.0.0/24", "--endpoint-reconciler-type=none",
             "--authorization-mode=AlwaysAllow",
             # Explicit, though 1.20 enables them by default: pod admission tests rely on them.
             "--enable-admission-plugins=NamespaceLifecycle,LimitRanger,ServiceAccount,"
             "ResourceQuota"],
            stdout=open(work / "apiserver.log", "w"), stderr=subprocess.STDOUT))
        _wait_ready(kubeconfig, processes, work)
        yield kubeconfig
    finally:
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


def _serving_certificate(openssl: str, pki: pathlib.Path):
    """A throwaway CA and a 127.0.0.1 serving certificate, so clients verify TLS as they
    would against a real cluster."""
    ca, ca_key = pki / "ca.crt", pki / "ca.key"
    cert, key, request, extensions = (pki / "apiserver.crt", pki / "apiserver.key",
                                      pki / "apiserver.csr", pki / "san.ext")
    extensions.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    cluster_tools.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                       "-subj", "/CN=tfkfp-test-ca", "-keyout", ca_key, "-out", ca])
    cluster_tools.run([openssl, "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                       "-keyout", key, "-out", request])
    cluster_tools.run([openssl, "x509", "-req", "-in", request, "-CA", ca, "-CAkey", ca_key,
                       "-CAcreateserial", "-days", "2", "-extfile", extensions, "-out", cert])
    return ca, cert, key


def _wait_ready(kubeconfig: pathlib.Path, processes, work: pathlib.Path) -> None:
    kubectl = cluster_tools.tool("kubectl")
    for _ in range(240):
        ready = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "get", "--raw", "/readyz"],
                               capture_output=True)
        if ready.returncode == 0:
            return
        if any(p.poll() is not None for p in processes):
            break
        time.sleep(0.5)
    logs = "\n".join((work / name).read_text()[-3000:] for name in ("etcd.log", "apiserver.log"))
    raise RuntimeError(f"kube-apiserver did not become ready:\n{logs}")
