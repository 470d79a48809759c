"""The kustomize manifests: they render, agree with the suite image, validate against the
Kubernetes versions each overlay targets and against a real API server, and follow the
security rules (non-root, no privilege escalation, read-only root, resources, least-privilege
RBAC, no Secret with values)."""

import os
import pathlib
import re
import subprocess

import pytest
import yaml
from ports import free_ports

from tfkfp.components._image import IMAGE, IMAGE_NAME, __version__

ROOT = pathlib.Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
OVERLAYS = ("gke", "onprem", "kind")
TARGETS = yaml.safe_load((MANIFESTS / "targets.yaml").read_text())
WORKLOAD_KINDS = {"Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job",
                  "CronJob"}
# What the train launcher does on the cluster, and nothing more (issue #7).
ALLOWED_RULES = {("kubeflow.org", "tfjobs"): {"create", "get", "list", "watch", "delete"},
                 ("trainer.kubeflow.org", "trainjobs"): {"create", "get", "list", "watch",
                                                         "delete"},
                 ("", "pods"): {"get", "list", "watch"},
                 ("", "pods/log"): {"get"},
                 ("", "configmaps"): {"get"},  # only the allow-list, by resourceNames
                 ("serving.kserve.io", "inferenceservices"): {"create", "get", "list", "watch",
                                                              "update", "delete"},
                 # deploy_model's NetworkPolicy beside each InferenceService: read, create,
                 # replace and delete by name (components/deploy_model/network_policy.py)
                 ("networking.k8s.io", "networkpolicies"): {"get", "create", "update",
                                                            "delete"},
                 # the tune step's katib engine (components/tune/katib_run.py)
                 ("kubeflow.org", "experiments"): {"create", "get", "list", "delete"}}
# The keys of tfkfp-config that list what an InferenceService may run (deploy_model's).
SERVING_KEYS = ("servingImages", "servingServiceAccounts")
# Service accounts bound by the overlays that Kubeflow Pipelines itself creates.
EXTERNAL_SERVICE_ACCOUNTS = {("kubeflow", "pipeline-runner")}


def of_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def one(docs, kind, name):
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name!r}, found {len(found)}"
    return found[0]


def pod_specs(docs):
    for doc in docs:
        if doc["kind"] == "ClusterTrainingRuntime":
            for rjob in doc["spec"]["template"]["spec"]["replicatedJobs"]:
                yield (f"ClusterTrainingRuntime/{doc['metadata']['name']}/{rjob['name']}",
                       rjob["template"]["spec"]["template"]["spec"])
            continue
        if doc["kind"] not in WORKLOAD_KINDS:
            continue
        spec = doc["spec"]
        if doc["kind"] == "CronJob":
            spec = spec["jobTemplate"]["spec"]
        if doc["kind"] != "Pod":
            spec = spec["template"]["spec"]
        yield f"{doc['kind']}/{doc['metadata']['name']}", spec


def containers(docs):
    for name, spec in pod_specs(docs):
        for container in spec.get("initContainers", []) + spec["containers"]:
            yield f"{name}/{container['name']}", spec, container


# --- image references ---------------------------------------------------------------------

@pytest.mark.parametrize("kustomization", sorted(MANIFESTS.glob("**/kustomization.yaml")),
                         ids=lambda p: str(p.relative_to(MANIFESTS)))
def test_every_kustomization_pins_the_suite_image_tag(kustomization):
    images = yaml.safe_load(kustomization.read_text()).get("images", [])
    ours = [i for i in images if i["name"] == IMAGE_NAME]
    if kustomization.parent.name == "base" or ours:
        assert ours, f"{kustomization}: no `images:` entry for {IMAGE_NAME}"
        assert ours[0]["newTag"] == __version__, (
            f"{kustomization}: images newTag {ours[0]['newTag']!r}, but components/_image.py "
            f"__version__ is {__version__!r}")


def workloads(rendered, runtime):
    """Each overlay's documents, and the Trainer v2 runtime's as "trainer"."""
    return {**rendered, "trainer": runtime}


def test_every_rendered_container_runs_the_suite_image(rendered, runtime):
    for overlay, (_, docs) in workloads(rendered, runtime).items():
        images = {name: c["image"] for name, _, c in containers(docs)}
        assert images, f"{overlay}: no workload uses the suite image"
        for name, image in images.items():
            assert image == IMAGE, f"{overlay}: {name} runs {image!r}, expected {IMAGE!r}"


def test_every_image_reference_in_the_manifest_sources_matches():
    pattern = re.compile(rf"{re.escape(IMAGE_NAME)}:([\w.\-]+)")
    for path in sorted(MANIFESTS.rglob("*.yaml")):
        for tag in pattern.findall(path.read_text()):
            assert tag == __version__, f"{path.relative_to(ROOT)} names {IMAGE_NAME}:{tag}"


# --- rendering and validation -------------------------------------------------------------

def test_every_overlay_renders_the_expected_objects(rendered):
    for overlay, (_, docs) in rendered.items():
        kinds = {d["kind"] for d in docs}
        assert {"ServiceAccount", "Role", "RoleBinding", "ConfigMap", "LimitRange",
                "Job", "NetworkPolicy"} <= kinds, f"{overlay} renders only {sorted(kinds)}"
        namespaces = {d["metadata"].get("namespace") for d in docs if d["kind"] != "Namespace"}
        assert len(namespaces) == 1 and None not in namespaces, (
            f"{overlay}: objects spread over namespaces {namespaces}")
        own = of_kind(docs, "Namespace")
        if overlay == "kind":  # standalone KFP owns `kubeflow`
            assert not own and namespaces == {"kubeflow"}
        else:
            assert [n["metadata"]["name"] for n in own] == list(namespaces)


def test_targets_cover_every_overlay_and_kind_matches_its_node_image():
    assert set(TARGETS) == {*OVERLAYS, "trainer"}
    cluster = yaml.safe_load((MANIFESTS / "kind" / "cluster.yaml").read_text())
    images = {n["image"] for n in cluster["nodes"]}
    minors = {re.match(r"kindest/node:v(\d+\.\d+)\.\d+", i).group(1) for i in images}
    assert minors == set(TARGETS["kind"]), (
        f"manifests/kind/cluster.yaml runs {sorted(images)}, targets.yaml says "
        f"kind: {TARGETS['kind']}")


def test_the_kind_node_image_is_pinned_by_digest():
    cluster = yaml.safe_load((MANIFESTS / "kind" / "cluster.yaml").read_text())
    for node in cluster["nodes"]:
        assert re.fullmatch(r"kindest/node:v[\d.]+@sha256:[0-9a-f]{64}", node["image"]), (
            f"manifests/kind/cluster.yaml names {node['image']!r} by tag only: a tag can be "
            "pushed again; pin the digest kind's release notes list")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_validates_strictly_at_its_target_versions(overlay, rendered, tools):
    validate = tools.tool("kubernetes-validate")
    path, docs = rendered[overlay]
    for version in TARGETS[overlay]:
        out = tools.run([validate, "--strict", "--kubernetes-version", version, path]).stdout
        passed = set(re.findall(rf"passed for resource (\S+) against version {version}", out))
        expected = {f"{d['kind'].lower()}/{d['metadata']['name']}" for d in docs}
        assert passed == expected, f"{overlay} at Kubernetes {version}:\n{out}"


YAMLLINT_CONFIG = ("{extends: default, rules: {line-length: {max: 100}, document-start: disable, "
                   "comments: {min-spaces-from-content: 1}}}")


def test_yamllint_passes_on_the_manifests(tools):
    """Catches what a parser forgives: duplicate keys, truthy values such as `yes`, tabs."""
    tools.run([tools.tool("yamllint"), "--strict", "-d", YAMLLINT_CONFIG, MANIFESTS])


def test_kubernetes_validate_rejects_an_unknown_field(tools, tmp_path):
    """The gate bites: --strict reports a misspelt field."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labelz: {}\n")
    result = subprocess.run([tools.tool("kubernetes-validate"), "--strict", bad],
                            capture_output=True, text=True)
    assert result.returncode != 0 and "labelz" in result.stdout + result.stderr


BAD_FOR_THE_SERVER = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: request-above-limit
  namespace: tfkfp
spec:
  selector:
    matchLabels: {app: x}
  template:
    metadata:
      labels: {app: x}
    spec:
      containers:
        - name: c
          image: tfkfp/tfkfp:0.1.0
          resources:
            requests: {cpu: "2"}
            limits: {cpu: "1"}
"""


@pytest.mark.slow
def test_real_api_server_accepts_every_overlay(rendered, tools, tmp_path):
    """`kubectl apply --dry-run=server` against kube-apiserver 1.20 built from Debian's source
    (scripts/k8s/apiserver-validate.sh; .ci/install-cluster-tools builds and caches it)."""
    for name in ("kubectl", "etcd", "openssl"):
        tools.tool(name)
    apiserver = tools.cache / "bin" / "kube-apiserver"
    if not apiserver.exists():
        tools.missing(f"no kube-apiserver in {apiserver.parent}")
    # A file the server must refuse rides along, so the test proves the gate bites.
    bad = tmp_path / "must-be-rejected.yaml"
    bad.write_text(BAD_FOR_THE_SERVER)
    paths = [rendered[o][0] for o in OVERLAYS] + [bad]
    ports = dict(zip(("API_PORT", "ETCD_PORT", "ETCD_PEER_PORT"), map(str, free_ports(3))))
    result = subprocess.run(
        ["bash", ROOT / "scripts" / "k8s" / "apiserver-validate.sh", *paths],
        env={**os.environ, **ports, "K8S_BIN": str(apiserver.parent),
             "K8S_WORK": str(tmp_path / "k8s"), "CREATE_NAMESPACES": "kubeflow tfkfp"},
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, f"exit {result.returncode}:\n{result.stdout}\n{result.stderr}"
    assert "must be less than or equal to cpu limit" in result.stderr, result.stderr
    for overlay in OVERLAYS:
        for doc in rendered[overlay][1]:
            kind, name = doc["kind"].lower(), doc["metadata"]["name"]
            assert re.search(rf"^{kind}[\w./]*/{name} (created|configured|unchanged)"
                             rf" \(server dry run\)", result.stdout, re.M | re.I), (
                f"{overlay}: the API server did not accept {kind}/{name}:\n{result.stdout}")


# --- security -----------------------------------------------------------------------------

def test_workloads_run_as_non_root_without_escalation_on_a_read_only_root(rendered, runtime):
    for overlay, (_, docs) in workloads(rendered, runtime).items():
        for name, spec, container in containers(docs):
            where = f"{overlay}: {name}"
            pod_sc, sc = spec.get("securityContext", {}), container.get("securityContext", {})
            assert sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is True, where
            assert sc.get("runAsUser", pod_sc.get("runAsUser", 1)) != 0, where
            assert sc.get("allowPrivilegeEscalation") is False, where
            assert sc.get("readOnlyRootFilesystem") is True, where
            assert not sc.get("privileged"), where
            assert "ALL" in sc.get("capabilities", {}).get("drop", []), where
            assert not sc.get("capabilities", {}).get("add"), where
            seccomp = sc.get("seccompProfile", pod_sc.get("seccompProfile", {}))
            assert seccomp.get("type") in ("RuntimeDefault", "Localhost"), where
            for flag in ("hostNetwork", "hostPID", "hostIPC"):
                assert not spec.get(flag), f"{where}: {flag}"
            assert not any("hostPath" in v for v in spec.get("volumes", [])), where


def test_workloads_request_and_limit_cpu_and_memory(rendered, runtime):
    for overlay, (_, docs) in workloads(rendered, runtime).items():
        for name, _, container in containers(docs):
            resources = container.get("resources", {})
            for kind in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(resources.get(kind, {})), (
                    f"{overlay}: {name} has no {kind} for cpu and memory: {resources}")


def test_limit_range_gives_defaults_and_a_ceiling(rendered):
    for overlay, (_, docs) in rendered.items():
        (limit_range,) = of_kind(docs, "LimitRange")
        (limits,) = [x for x in limit_range["spec"]["limits"] if x["type"] == "Container"]
        for key in ("defaultRequest", "default", "max"):
            assert {"cpu", "memory"} <= set(limits.get(key, {})), f"{overlay}: {key}"


def test_rbac_is_namespaced_least_privilege_without_wildcards(rendered):
    for overlay, (_, docs) in rendered.items():
        assert not of_kind(docs, "ClusterRole") and not of_kind(docs, "ClusterRoleBinding"), (
            f"{overlay}: tfkfp needs no cluster-wide permissions")
        for role in of_kind(docs, "Role"):
            for rule in role["rules"]:
                for field in ("apiGroups", "resources", "verbs"):
                    assert "*" not in rule.get(field, []), f"{overlay}: wildcard {field}: {rule}"
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        allowed = ALLOWED_RULES.get((group, resource))
                        assert allowed is not None, (
                            f"{overlay}: {role['metadata']['name']} grants {group}/{resource}")
                        extra = set(rule["verbs"]) - allowed
                        assert not extra, f"{overlay}: {group}/{resource} grants {sorted(extra)}"
            if "configmaps" in rule["resources"]:
                assert rule.get("resourceNames") == ["tfkfp-config"], (
                    f"{overlay}: the runner may read only the allow-list ConfigMap: {rule}")
        granted = {(g, r): set(rule["verbs"]) for role in of_kind(docs, "Role")
                   for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
        assert granted == ALLOWED_RULES, f"{overlay}: the launcher needs exactly {ALLOWED_RULES}"


# The RBAC verb each call of the kubernetes client's NetworkingV1Api needs.
CLIENT_VERBS = {"read": "get", "create": "create", "replace": "update", "patch": "patch",
                "delete": "delete", "list": "list"}


def test_the_deployer_may_do_to_network_policies_exactly_what_deploy_model_calls():
    calls = set()
    for path in (ROOT / "components" / "deploy_model").glob("*.py"):
        calls |= set(re.findall(r"\.(\w+?)_namespaced_network_policy\(", path.read_text()))
    assert calls, "deploy_model no longer manages NetworkPolicies: drop the Role's rule"
    needed = {CLIENT_VERBS[call] for call in calls}
    assert needed == ALLOWED_RULES[("networking.k8s.io", "networkpolicies")], (
        f"deploy_model calls {sorted(calls)} on NetworkPolicies")


def test_role_bindings_bind_known_service_accounts(rendered):
    for overlay, (_, docs) in rendered.items():
        accounts = {(d["metadata"]["namespace"], d["metadata"]["name"])
                    for d in of_kind(docs, "ServiceAccount")}
        roles = {d["metadata"]["name"] for d in of_kind(docs, "Role")}
        for binding in of_kind(docs, "RoleBinding"):
            assert binding["roleRef"]["kind"] == "Role" and binding["roleRef"]["name"] in roles
            for subject in binding["subjects"]:
                assert subject["kind"] == "ServiceAccount", f"{overlay}: {subject}"
                key = (subject["namespace"], subject["name"])
                assert key in accounts | EXTERNAL_SERVICE_ACCOUNTS, (
                    f"{overlay}: {binding['metadata']['name']} binds unknown {key}")
        for name, spec in pod_specs(docs):
            account = spec.get("serviceAccountName")
            assert account in {a for _, a in accounts}, f"{overlay}: {name} runs as {account!r}"


def yaml_documents_in_repo():
    skip = {".git", ".venv", ".ci-venv", "build", "node_modules", "tfkfp-demo"}
    for path in sorted(ROOT.rglob("*.y*ml")):
        if skip & set(path.relative_to(ROOT).parts) or path.suffix not in (".yaml", ".yml"):
            continue
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError:
            continue
        for doc in docs:
            if isinstance(doc, dict):
                yield path, doc


def test_no_secret_with_values_anywhere_in_the_repo():
    for path, doc in yaml_documents_in_repo():
        if doc.get("kind") == "Secret":
            assert not doc.get("data") and not doc.get("stringData"), (
                f"{path.relative_to(ROOT)} holds a Secret with values; reference one instead")
    assert "secretGenerator" not in "".join(
        p.read_text() for p in MANIFESTS.rglob("kustomization.yaml"))


def test_object_store_credentials_are_references(rendered):
    """GCS with Workload Identity on GKE; an S3-compatible store with a Secret reference
    on-prem and on kind. KFP's launcher reads both from the kfp-launcher ConfigMap."""
    for overlay, (_, docs) in rendered.items():
        assert not of_kind(docs, "Secret"), f"{overlay} renders a Secret"
        launcher = one(docs, "ConfigMap", "kfp-launcher")["data"]
        root = launcher["defaultPipelineRoot"]
        assert root, f"{overlay}: kfp-launcher sets no defaultPipelineRoot"
        providers = yaml.safe_load(launcher["providers"])
        if overlay == "gke":
            assert root.startswith("gs://")
            assert providers["gs"]["default"]["credentials"] == {"fromEnv": True}
            account = one(docs, "ServiceAccount", "tfkfp-runner")
            email = account["metadata"]["annotations"]["iam.gke.io/gcp-service-account"]
            assert email.endswith(".iam.gserviceaccount.com"), email
        else:
            scheme = root.split("://")[0]
            assert scheme in ("s3", "minio"), root
            credentials = providers[scheme]["default"]["credentials"]
            ref = credentials["secretRef"]
            assert credentials["fromEnv"] is False
            assert ref["secretName"], f"{overlay}: the object store Secret has no name"
            assert ref["accessKeyKey"] and ref["secretKeyKey"]


# --- the replicas: their account, allow-list, network and admission policy -----------------

def test_replicas_run_as_an_account_without_rights_or_token(rendered, runtime):
    from tfkfp.components.train.launchers import kube

    replica = kube.DEFAULT_SERVICE_ACCOUNT
    for overlay, (_, docs) in rendered.items():
        account = one(docs, "ServiceAccount", replica)
        assert account.get("automountServiceAccountToken") is False, overlay
        bound = {s["name"] for b in of_kind(docs, "RoleBinding") for s in b["subjects"]}
        assert replica not in bound, f"{overlay}: {replica} must have no API rights"
    (doc,) = runtime[1]
    for _, spec in pod_specs([doc]):
        assert spec["serviceAccountName"] == replica
        assert spec["automountServiceAccountToken"] is False


def test_the_allow_list_names_the_launcher_and_deploy_defaults(rendered):
    from tfkfp.components.deploy_model import least_privilege
    from tfkfp.components.deploy_model.options import DeployOptions
    from tfkfp.components.train.launchers import kube

    defaults = {kube.ALLOWLIST_KEYS["image"]: IMAGE,
                kube.ALLOWLIST_KEYS["service_account"]: kube.DEFAULT_SERVICE_ACCOUNT,
                least_privilege.ALLOWLIST_KEYS["image"]: IMAGE,
                least_privilege.ALLOWLIST_KEYS["service_account"]:
                    DeployOptions().service_account}
    # servingRuntimeVersions may be missing: then only the suite's TF Serving version passes
    optional = {least_privilege.ALLOWLIST_KEYS[f]
                for f in least_privilege.predictor_allowlist().optional}
    assert set(least_privilege.ALLOWLIST_KEYS.values()) - optional == set(SERVING_KEYS)
    for overlay, (_, docs) in rendered.items():
        data = one(docs, "ConfigMap", kube.ALLOWLIST)["data"]
        assert set(data) - optional == set(defaults), overlay
        for key, default in defaults.items():
            assert default in data[key].split(), f"{overlay}: {key} does not list {default}"


def replica_pod_labels(runtime):
    """The labels of every replica pod the launchers create, with the runtime's pods."""
    from tfkfp.components.common.training.config import TrainConfig
    from tfkfp.components.common.training.shape import ClusterShape
    from tfkfp.components.train.launchers import job, tfjob

    options = job.parse_options("tfjob", {})
    config = TrainConfig(dataset="gs://b/data", model_dir="gs://b/model")
    body = tfjob.manifest(ClusterShape("parameter_server", chief=1, workers=1, ps=1),
                          job.plan(config, "tfjob", options), options, "j", "tfkfp")
    labels = [r["template"]["metadata"]["labels"] for r in body["spec"]["tfReplicaSpecs"].values()]
    (doc,) = runtime[1]
    labels += [r["template"]["spec"]["template"]["metadata"]["labels"]
               for r in doc["spec"]["template"]["spec"]["replicatedJobs"]]
    return labels


def test_the_network_policy_fences_exactly_the_replicas(rendered, runtime):
    """Ingress only from replicas, on TensorFlow's port; egress to replicas, DNS and 443."""
    from tfkfp.components.train import jobset_replica

    for overlay, (_, docs) in rendered.items():
        policy = one(docs, "NetworkPolicy", "tfkfp-replicas")["spec"]
        selector = policy["podSelector"]["matchLabels"]
        for labels in replica_pod_labels(runtime):
            assert selector.items() <= labels.items(), f"{overlay}: misses replica {labels}"
        assert set(policy["policyTypes"]) == {"Ingress", "Egress"}
        (ingress,) = policy["ingress"]
        assert ingress["from"] == [{"podSelector": {"matchLabels": selector}}]
        assert ingress["ports"] == [{"protocol": "TCP", "port": jobset_replica.PORT}]
        ports = sorted((p["protocol"], p["port"]) for rule in policy["egress"]
                       for p in rule["ports"])
        assert ports == [("TCP", 53), ("TCP", 443), ("TCP", jobset_replica.PORT),
                         ("UDP", 53)], f"{overlay}: {ports}"


def test_no_base_network_policy_selects_the_model_servers(rendered):
    """deploy_model's own NetworkPolicy beside each InferenceService alone decides who reaches
    a predictor: a policy here that selected its pods would add to it (policies are a union)
    or, as the replicas' does, fence it off."""
    from tfkfp.components.deploy_model import kserve

    for overlay, (_, docs) in rendered.items():
        for policy in of_kind(docs, "NetworkPolicy"):
            selector = policy["spec"]["podSelector"]
            assert "matchExpressions" not in selector, policy["metadata"]["name"]
            matches = selector.get("matchLabels", {}).items() <= kserve.LABELS.items()
            assert not matches, f"{overlay}: {policy['metadata']['name']} selects predictors"


def test_on_gke_each_account_acts_as_its_own_google_service_account(rendered):
    """The replicas and the model servers do not share the runner's Google identity, whose
    roles (writing the pipeline root, starting Vertex AI jobs) they do not need."""
    from tfkfp.components.deploy_model import options
    from tfkfp.components.train.launchers import kube

    _, docs = rendered["gke"]
    annotation = "iam.gke.io/gcp-service-account"
    names = ("tfkfp-runner", kube.DEFAULT_SERVICE_ACCOUNT, options.DeployOptions().service_account)
    emails = {name: one(docs, "ServiceAccount", name)["metadata"]["annotations"][annotation]
              for name in names}
    assert len(set(emails.values())) == len(names), emails
    for name, email in emails.items():
        assert re.fullmatch(rf"{name}@PROJECT_ID\.iam\.gserviceaccount\.com", email), email
    how_to = (ROOT / "docs" / "how-to" / "first-run-on-a-cluster.md").read_text()
    for name in names:
        assert f"PROJECT_ID.svc.id.goog[tfkfp/{name}]" in how_to, (
            f"the GKE how-to does not bind {name} to its Google service account")


def test_on_kind_the_replicas_may_reach_kfps_minio_and_its_namespace_is_labelled(rendered):
    """kind's pipeline root is KFP's in-cluster MinIO: the replicas' egress reaches its pods
    on port 9000, and kind-up.sh labels KFP's namespace for the replica allow-list policy."""
    _, docs = rendered["kind"]
    replicas = one(docs, "NetworkPolicy", "tfkfp-replicas")["spec"]["podSelector"]
    minio = one(docs, "NetworkPolicy", "tfkfp-replicas-minio")["spec"]
    assert minio["podSelector"] == replicas and minio["policyTypes"] == ["Egress"]
    (rule,) = minio["egress"]
    assert rule["to"] == [{"podSelector": {"matchLabels": {"app": "minio"}}}]
    assert rule["ports"] == [{"protocol": "TCP", "port": 9000}]
    script = (ROOT / "scripts" / "kind-up.sh").read_text()
    label = "kubectl label namespace kubeflow app.kubernetes.io/part-of=tfkfp"
    apply = 'kubectl apply -k "$ROOT/manifests/overlays/kind"'
    assert label in script and script.index(label) < script.index(apply)
    policy = (ROOT / "manifests" / "policy" / "admission-policy.yaml").read_text()
    assert "app.kubernetes.io/part-of: tfkfp" in policy


def test_the_pods_tfkfp_creates_meet_the_restricted_pod_security_profile(rendered, runtime):
    from tfkfp.components.common.training.config import TrainConfig
    from tfkfp.components.common.training.shape import ClusterShape
    from tfkfp.components.train.launchers import job, tfjob

    options = job.parse_options("tfjob", {"volume_claim": "shared"})
    config = TrainConfig(dataset="gs://b/data", model_dir="gs://b/model")

    body = tfjob.manifest(ClusterShape("multi_worker_mirrored", workers=2),
                          job.plan(config, "tfjob", options), options, "j", "tfkfp")
    pods = [(f"TFJob/{kind}", r["template"]["spec"])
            for kind, r in body["spec"]["tfReplicaSpecs"].items()]
    for overlay, (_, docs) in workloads(rendered, runtime).items():
        pods += [(f"{overlay}: {name}", spec) for name, spec in pod_specs(docs)]
    for where, spec in pods:
        assert not restricted_violations(spec), f"{where}: {restricted_violations(spec)}"


def restricted_violations(spec):
    """What a pod spec breaks of Pod Security's `restricted` profile (its pod-level and
    container-level checks; the API server here has no Pod Security admission)."""
    found, pod = [], spec.get("securityContext", {})
    allowed_volumes = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                       "persistentVolumeClaim", "projected", "secret"}
    for volume in spec.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= allowed_volumes:
            found.append(f"volume {volume['name']} of type {sorted(kinds)}")
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(flag):
            found.append(flag)
    for c in spec.get("initContainers", []) + spec["containers"]:
        sc = c.get("securityContext", {})
        if sc.get("privileged"):
            found.append(f"{c['name']}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            found.append(f"{c['name']}: allowPrivilegeEscalation is not false")
        if sc.get("runAsNonRoot", pod.get("runAsNonRoot")) is not True:
            found.append(f"{c['name']}: runAsNonRoot is not true")
        if 0 in (sc.get("runAsUser"), pod.get("runAsUser")):
            found.append(f"{c['name']}: runAsUser 0")
        seccomp = sc.get("seccompProfile", pod.get("seccompProfile", {})).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"{c['name']}: seccompProfile {seccomp}")
        caps = sc.get("capabilities", {})
        if "ALL" not in caps.get("drop", []):
            found.append(f"{c['name']}: capabilities not dropped")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            found.append(f"{c['name']}: adds {caps['add']}")
        for port in c.get("ports", []):
            if port.get("hostPort"):
                found.append(f"{c['name']}: hostPort")
    return found


def test_the_restricted_check_bites():
    adds = {"capabilities": {"add": ["SYS_ADMIN"]}}
    bad = {"containers": [{"name": "c", "securityContext": adds}],
           "volumes": [{"name": "h", "hostPath": {"path": "/"}}]}
    found = restricted_violations(bad)
    assert len(found) == 6, found


POLICY = MANIFESTS / "policy"


@pytest.fixture(scope="module")
def policy(tmp_path_factory, tools):
    """An overlay with the admission policy component, rendered: (path, [documents])."""
    work = tmp_path_factory.mktemp("policy")
    (work / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(MANIFESTS / "overlays" / "onprem", work)],
        "components": [os.path.relpath(POLICY, work)]}))
    text = tools.run([tools.tool("kubectl"), "kustomize", work]).stdout
    docs = [d for d in yaml.safe_load_all(text) if d]
    only = [d for d in docs if d["kind"].startswith("ValidatingAdmissionPolicy")]
    path = work / "policy.yaml"
    path.write_text(yaml.safe_dump_all(only))
    return path, docs


def test_the_admission_policy_reads_the_allow_list_of_the_jobs_namespace(policy):
    from tfkfp.components.deploy_model import kserve
    from tfkfp.components.train.launchers import kube, tfjob, trainjob

    _, docs = policy
    vap = one(docs, "ValidatingAdmissionPolicy", "tfkfp-replica-allowlist")["spec"]
    binding = one(docs, "ValidatingAdmissionPolicyBinding", "tfkfp-replica-allowlist")["spec"]
    assert vap["paramKind"] == {"apiVersion": "v1", "kind": "ConfigMap"}
    assert binding["paramRef"] == {"name": kube.ALLOWLIST, "parameterNotFoundAction": "Deny"}
    assert binding["validationActions"] == ["Deny"]
    rules = {(r["apiGroups"][0], r["resources"][0], tuple(r["operations"])) for r in
             vap["matchConstraints"]["resourceRules"]}
    writes = ("CREATE", "UPDATE")
    assert rules == {(tfjob.GROUP, tfjob.PLURAL, writes), (trainjob.GROUP, trainjob.PLURAL, writes),
                     (kserve.GROUP, kserve.PLURAL, writes)}
    text = yaml.safe_dump(vap)
    for key in (*kube.ALLOWLIST_KEYS.values(), *SERVING_KEYS):
        assert f"params.?data.?{key}" in text
    # The namespaces it applies in: the base labels its own so.
    namespace = one(docs, "Namespace", "tfkfp")
    selector = binding["matchResources"]["namespaceSelector"]["matchLabels"]
    assert selector.items() <= namespace["metadata"]["labels"].items()


def inferenceservice_pod_fields():
    """What each part of an InferenceService that runs pods (predictor, transformer,
    explainer, a canary's predictor) may name, from KServe's published CRD: the CEL path of
    every container list, image and service-account field, relative to the part."""
    import upstream_schemas

    crd = upstream_schemas.definition(upstream_schemas.INFERENCESERVICE)
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta1"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    parts = {name: spec[name] for name in ("predictor", "transformer", "explainer")}
    parts["canary"] = spec["canary"]["items"]["properties"]["predictor"]
    return parts, {name: set(pod_fields(schema, [])) for name, schema in parts.items()}


def pod_fields(schema, path):
    for key, sub in schema.get("properties", {}).items():
        here = [*path, key]
        if key == "rbd":  # a Ceph block device's name, not a container image
            continue
        if sub.get("type") == "array":
            if any(True for _ in pod_fields(sub.get("items", {}), [])):
                yield cel_path(here)  # containers or volumes: the policy reads the list
        elif sub.get("type") == "string" and (
                key in ("image", "serviceAccountName", "serviceAccount")
                or (key == "reference" and path[-1:] == ["image"])):  # an image volume
            yield cel_path(here)
        else:
            yield from pod_fields(sub, here)


def cel_path(keys):
    return "p." + ".".join(f"?{key}" for key in keys)


def test_the_admission_policy_checks_every_image_and_account_an_inferenceservice_names(
        policy):
    """A field of KServe's CRD that runs an image or picks a service account, and that the
    policy does not read, would let an InferenceService past the allow-list."""
    _, docs = policy
    vap = one(docs, "ValidatingAdmissionPolicy", "tfkfp-replica-allowlist")["spec"]
    cel = {v["name"]: " ".join(v["expression"].split()) for v in vap["variables"]}
    assert "object.spec.?canary.orValue([])" in cel["isvcParts"]
    for part in ("predictor", "transformer", "explainer"):
        assert f"object.spec.?{part}" in cel["isvcParts"], part
    _, fields = inferenceservice_pod_fields()
    for part, paths in fields.items():
        assert {"p.?containers", "p.?serviceAccountName"} <= paths, (part, paths)
        for path in paths:
            variable = "isvcAccounts" if path.endswith("erviceAccount") or \
                path.endswith("serviceAccountName") else "isvcImages"
            assert path in cel[variable], f"{part}: the policy does not read {path}"


def test_the_admission_policy_validates_strictly_at_1_30_and_later(policy, tools):
    """The API server here (1.20) predates ValidatingAdmissionPolicy v1 (1.30), so the policy
    is checked against the 1.30+ schemas on the client; its CEL runs only on a real cluster."""
    validate = tools.tool("kubernetes-validate")
    path, _ = policy
    for version in ("1.30", *TARGETS["gke"]):
        out = tools.run([validate, "--strict", "--kubernetes-version", version, path]).stdout
        passed = set(re.findall(rf"passed for resource (\S+) against version {version}", out))
        assert passed == {"validatingadmissionpolicy/tfkfp-replica-allowlist",
                          "validatingadmissionpolicybinding/tfkfp-replica-allowlist"}, out


# --- the Kubeflow Trainer v2 runtime -------------------------------------------------------

def test_the_trainer_runtime_is_the_one_the_launcher_names(runtime):
    from tfkfp.components.train import jobset_replica
    from tfkfp.components.train.launchers import job, trainjob

    (doc,) = runtime[1]
    assert doc["kind"] == trainjob.RUNTIME_KIND and doc["apiVersion"] == \
        f"{trainjob.GROUP}/{trainjob.VERSION}"
    assert doc["metadata"]["name"] == job.LaunchOptions().runtime
    assert "namespace" not in doc["metadata"], "a ClusterTrainingRuntime is cluster-scoped"
    assert doc["spec"]["mlPolicy"]["numNodes"] >= 1  # Trainer sizes only with an mlPolicy
    (rjob,) = doc["spec"]["template"]["spec"]["replicatedJobs"]
    assert rjob["name"] == trainjob.NODE
    assert rjob["template"]["metadata"]["labels"] == {
        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    spec = rjob["template"]["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["successPolicy"] == {"rules": [{"succeededIndexes": "0"}]}  # the chief's
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"  # a pod failure policy needs it
    (container,) = pod["containers"]
    assert container["name"] == trainjob.NODE
    assert [p["containerPort"] for p in container["ports"]] == [jobset_replica.PORT]
    fields = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"]
              for e in container["env"] if "valueFrom" in e}
    assert fields == {name: f"metadata.labels['{label}']"
                      for name, label in jobset_replica.LABELS.items()}


def test_the_trainer_runtime_job_validates_strictly_at_its_target_versions(runtime, tools,
                                                                           tmp_path):
    """kubernetes-validate does not know a ClusterTrainingRuntime: its Job template is
    checked as the batch/v1 Job that JobSet makes of it."""
    (doc,) = runtime[1]
    jobs = [{"apiVersion": "batch/v1", "kind": "Job",
             "metadata": {"name": f"{doc['metadata']['name']}-{rjob['name']}"},
             "spec": {**rjob["template"]["spec"], "parallelism": 4, "completions": 4}}
            for rjob in doc["spec"]["template"]["spec"]["replicatedJobs"]]
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump_all(jobs))
    validate = tools.tool("kubernetes-validate")
    for version in TARGETS["trainer"]:
        out = tools.run([validate, "--strict", "--kubernetes-version", version, path]).stdout
        passed = set(re.findall(rf"passed for resource (\S+) against version {version}", out))
        assert passed == {f"job/{j['metadata']['name']}" for j in jobs}, out


# --- the kind script ------------------------------------------------------------------------

def test_kind_script_pins_upstream_and_uses_this_checkout():
    script = (ROOT / "scripts" / "kind-up.sh").read_text()
    kfp = re.search(r"KFP_VERSION=\$\{KFP_VERSION:-(\S+)\}", script)
    operator = re.search(r"TRAINING_OPERATOR_VERSION=\$\{TRAINING_OPERATOR_VERSION:-(\S+)\}",
                         script)
    assert kfp and re.fullmatch(r"\d+\.\d+\.\d+", kfp.group(1)), "pin Kubeflow Pipelines"
    assert operator and re.fullmatch(r"v1\.\d+\.\d+", operator.group(1)), (
        "pin the Training Operator v1 (Trainer v2 has no TFJob)")
    refs = re.findall(r'apply (?:--server-side )?-k \\?\s*"(github\.com/[^"]+)"', script)
    assert len(refs) == 3 and all("?ref=$" in ref for ref in refs), refs
    for path in ("manifests/kind/cluster.yaml", "manifests/overlays/kind",
                 "scripts/build-image.sh"):
        assert path in script and (ROOT / path).exists(), path
    assert 'kind load docker-image "$IMAGE"' in script
    assert "tfkfp compile --out" in script and "tfkfp submit training" in script


def test_kind_script_commands_exist_in_the_cli():
    from tfkfp.cli.main import _parser
    from tfkfp.pipelines import registry

    assert "training" in registry.names()
    args = _parser().parse_args(["submit", "training", "--host", "http://x", "--set", "a=b"])
    assert args.command == "submit" and args.parameters == ["a=b"]
    assert _parser().parse_args(["compile", "--out", "d"]).out == "d"
