"""deploy/kubernetes: the manifests `kubectl apply -k` applies, read from the files (no cluster here): every
role runs a real `tms` subcommand with its configuration from the ConfigMap and its secrets from the Secret,
probes that check that role, the worker's Spark drivers may create executor pods (RBAC), the worker reaches
the service's fence, and the queue it submits to runs executors of the worker's own image."""
from __future__ import annotations

import json

import pytest
from deploy_support import (
    HEARTBEAT_ROLES,
    KUBERNETES,
    ROLES,
    container_env,
    find,
    image_command,
    k8s_role_workloads,
    kustomization,
    manifests,
    matches,
    one,
    pod_spec,
    secret_data,
    secret_setting_names,
    setting_names,
    tms_commands,
    url_host_port,
    workloads,
)


def _role(role: str) -> tuple[dict, dict]:
    roles = k8s_role_workloads()
    assert role in roles, f"no workload runs `tms {role}` (found {sorted(roles)})"
    return roles[role]


def test_kustomization_lists_every_manifest():
    listed = set(kustomization()["resources"])
    on_disk = {p.name for p in KUBERNETES.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk, f"unlisted: {on_disk - listed}, missing: {listed - on_disk}"


def test_manifests_parse_and_share_a_namespace():
    namespace = kustomization()["namespace"]
    for doc in manifests():
        assert doc.get("apiVersion") and doc.get("kind") and doc["metadata"].get("name"), doc
        if doc["kind"] != "Namespace":
            assert doc["metadata"].get("namespace", namespace) == namespace, doc["metadata"]["name"]
    assert find("Namespace", namespace)


def test_every_role_has_a_workload():
    assert set(k8s_role_workloads()) == set(ROLES)


@pytest.mark.parametrize("role", ROLES)
def test_roles_run_real_tms_subcommands(role):
    _, container = _role(role)
    command = image_command(list(container.get("command", [])) + list(container.get("args", [])))
    assert command[1] in tms_commands()


def test_every_container_runs_a_tms_command_or_a_script_of_the_image():
    for workload in workloads():
        for container in pod_spec(workload)["containers"]:
            command = image_command(list(container.get("command", [])) + list(container.get("args", [])))
            if command[0] == "tms":
                assert command[1] in tms_commands() or command[1] == "manager", command
            assert container["image"].split(":")[0].rsplit("/", 1)[-1] in ("tms", "tms-spark")


@pytest.mark.parametrize("role", ROLES)
def test_configuration_from_the_configmap_secrets_from_the_secret(role):
    _, container = _role(role)
    env = container_env(container)
    assert "TMS_DATABASE_URL" in env, f"{role} has no TMS_DATABASE_URL: it would start an embedded database"
    for name in secret_setting_names():
        assert env.get(name, ("secret:",))[0].startswith("secret:"), f"{role}: {name} must come from a Secret"
    assert any(source.startswith("configmap:") for source, _ in env.values())
    unknown = {k for k in env if k.startswith("TMS_")} - setting_names()
    assert not unknown, f"{role}: {sorted(unknown)} are not TMS settings"
    assert env["TMS_DATA_DIR"][1] in {m["mountPath"] for m in container.get("volumeMounts", [])}


def test_configmaps_hold_no_secret_and_secrets_only_settings():
    for config in find("ConfigMap"):
        leaked = set(config.get("data", {})) & secret_setting_names()
        assert not leaked, f"ConfigMap {config['metadata']['name']} holds secrets {leaked}"
        unknown = {k for k in config.get("data", {}) if k.startswith("TMS_")} - setting_names()
        assert not unknown, f"ConfigMap {config['metadata']['name']}: {unknown} are not settings"
    for secret in find("Secret"):
        unknown = set(secret_data(secret)) - setting_names()
        assert not unknown, f"Secret {secret['metadata']['name']}: {unknown} are not settings"


def test_the_service_listens_on_all_interfaces_behind_a_service():
    workload, container = _role("serve")
    env = container_env(container)
    assert env["TMS_HOST"][1] == "0.0.0.0"
    port = int(env.get("TMS_PORT", ("", "8080"))[1])
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert port in ports.values()
    labels = workload["spec"]["template"]["metadata"]["labels"]
    assert matches(workload["spec"]["selector"]["matchLabels"], labels)
    services = [s for s in find("Service") if matches(s["spec"].get("selector", {}), labels)]
    assert services, "no Service selects the service's pods"
    for service in services:
        for p in service["spec"]["ports"]:
            assert ports.get(p["targetPort"], p["targetPort"]) == port


def test_the_worker_fences_through_the_service():
    """The jobs' drivers run in the worker pod: TMS_WORKER_SERVICE_URL names the Service in front of the
    service's pods, on the port it serves."""
    _, worker = _role("worker")
    url = container_env(worker)["TMS_WORKER_SERVICE_URL"][1]
    host, port = url_host_port(url)
    name = host.split(".")[0]
    service = one("Service", name)
    workload, _ = _role("serve")
    assert matches(service["spec"]["selector"], workload["spec"]["template"]["metadata"]["labels"])
    assert port in {p["port"] for p in service["spec"]["ports"]}


def test_no_service_links():
    """Kubernetes sets <SERVICE>_PORT=tcp://... for every Service: the Service `tms` would set TMS_PORT, a TMS
    setting, and the role would refuse to start. Every pod turns them off."""
    for workload in workloads():
        assert pod_spec(workload).get("enableServiceLinks") is False, workload["metadata"]["name"]


@pytest.mark.parametrize("role", ROLES)
def test_probes_check_the_role(role):
    _, container = _role(role)
    assert "livenessProbe" in container
    if role == "serve":
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
            assert container[probe]["httpGet"]["path"] == path
            assert container[probe]["httpGet"]["port"] in ports or container[probe]["httpGet"]["port"] in ports.values()
    else:
        for probe in ("livenessProbe", "startupProbe"):
            assert container[probe]["exec"]["command"] == ["tms-healthcheck", "heartbeat", HEARTBEAT_ROLES[role]]


def test_the_worker_may_create_executor_pods():
    workload, container = _role("worker")
    account = pod_spec(workload)["serviceAccountName"]
    one("ServiceAccount", account)
    granted: dict[str, set[str]] = {}
    for binding in find("RoleBinding"):
        if any(s["kind"] == "ServiceAccount" and s["name"] == account for s in binding["subjects"]):
            role = one(binding["roleRef"]["kind"], binding["roleRef"]["name"])
            for rule in role["rules"]:
                if "" in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        granted.setdefault(resource, set()).update(rule["verbs"])
    for resource in ("pods", "services", "configmaps"):
        assert {"create", "get", "list", "watch", "delete"} <= granted.get(resource, set()), resource
    assert container["image"].split(":")[0].endswith("tms-spark"), "the worker needs Java for spark-submit"
    env = {e["name"]: e for e in container.get("env", [])}
    opts = env["SPARK_SUBMIT_OPTS"]["value"]
    assert "-Dspark.kubernetes.driver.pod.name=$(POD_NAME)" in opts and "-Dspark.driver.host=$(POD_IP)" in opts
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"


def test_other_roles_get_no_kubernetes_credentials():
    for role in ("serve", "planner", "manager"):
        workload, _ = _role(role)
        account = one("ServiceAccount", pod_spec(workload)["serviceAccountName"])
        assert account.get("automountServiceAccountToken") is False, role


def test_job_logs_are_on_a_persistent_volume():
    workload, container = _role("worker")
    jobs = container_env(container)["TMS_DATA_DIR"][1].rstrip("/") + "/jobs"
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == jobs)
    claims = {c["metadata"]["name"] for c in workload["spec"].get("volumeClaimTemplates", [])}
    assert mount["name"] in claims, "the worker's job logs would be lost with its pod"


def test_the_queue_runs_executors_of_the_worker_image_on_this_cluster():
    from service.schemas.admin import QueueIn

    job = one("Job", "tms-queue-setup")
    container = pod_spec(job)["containers"][0]
    assert container["args"][0] == "tms-put-queue"
    env = container_env(container)
    assert env["TMS_ADMIN_TOKEN"][0].startswith("secret:")
    host, port = url_host_port(env["TMS_URL"][1])
    assert port in {p["port"] for p in one("Service", host)["spec"]["ports"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod_spec(job)["volumes"]}
    for path in container["args"][1:]:
        folder, file = path.rsplit("/", 1)
        config = one("ConfigMap", volumes[mounts[folder]]["configMap"]["name"])
        queue = QueueIn.model_validate(json.loads(config["data"][file]))
        assert queue.kind == "kubernetes" and queue.master.startswith("k8s://https://kubernetes.default.svc")
        conf = queue.spark_conf
        workload, worker = _role("worker")
        assert conf["spark.kubernetes.namespace"] == kustomization()["namespace"]
        assert conf["spark.kubernetes.container.image"] == worker["image"], \
            "executors must run the driver's image (same Python, same packages)"
        account = pod_spec(workload)["serviceAccountName"]
        assert conf["spark.kubernetes.authenticate.driver.serviceAccountName"] == account
