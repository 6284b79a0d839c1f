"""docker-compose.yml: what `docker compose up` relies on, read from the file (no Docker engine runs here, and
`docker compose config` needs one): the four roles run real `tms` subcommands with the settings they need,
every long-running service has a health check, dependencies wait for health, the worker's jobs reach the
service's fence, the Spark cluster matches the queue the worker submits to, and state and logs are on volumes."""
from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

import pytest
from deploy_support import (
    HEARTBEAT_ROLES,
    REPO,
    ROLES,
    compose,
    compose_command,
    compose_env,
    compose_healthcheck,
    compose_merge_lists,
    compose_role_services,
    compose_services,
    compose_volumes,
    image_command,
    interpolate,
    setting_names,
    tms_commands,
    url_host_port,
)

REQUIRED_SERVICES = {"postgres", "spark-master", "spark-worker", "prometheus", "grafana"}


def _one_shot(service: dict) -> bool:
    return str(service.get("restart", "")) == "no"


def _service_named(role: str) -> str:
    roles = compose_role_services()
    assert role in roles, f"no compose service runs `tms {role}` (found {roles})"
    return roles[role]


def _postgres() -> tuple[str, dict]:
    found = [(n, s) for n, s in compose_services().items() if str(s.get("image", "")).startswith("postgres")]
    assert len(found) == 1, "expected one PostgreSQL service"
    return found[0]


def test_every_part_of_the_deployment_is_a_service():
    services = compose_services()
    assert REQUIRED_SERVICES <= set(services), f"missing: {REQUIRED_SERVICES - set(services)}"
    assert set(compose_role_services()) == set(ROLES)


@pytest.mark.parametrize("role", ROLES)
def test_roles_run_real_tms_subcommands(role):
    service = compose_services()[_service_named(role)]
    command = image_command(compose_command(service))
    assert command[1] in tms_commands(), f"`tms {command[1]}` is not a command of the tms CLI"


def test_other_commands_are_run_as_given_by_the_entry_point():
    """A command that is not a `tms` subcommand (spark-class, tms-put-queue) must be one the image's entry
    point runs as is: otherwise it would run as `tms spark-class` and fail."""
    for name, service in compose_services().items():
        command = compose_command(service)
        if not command or "build" not in service:
            continue
        resolved = image_command(command)
        if resolved[0] == "tms":
            assert resolved[1] in tms_commands() or resolved[1] == "manager", f"{name}: {command}"


@pytest.mark.parametrize("role", ROLES)
def test_every_role_gets_the_database_url(role):
    env = compose_env(compose_services()[_service_named(role)])
    assert "TMS_DATABASE_URL" in env, f"{role} has no TMS_DATABASE_URL: it would start an embedded database"
    url = urlsplit(env["TMS_DATABASE_URL"])
    pg_name, pg = _postgres()
    pg_env = compose_env(pg)
    assert url.scheme in ("postgresql", "postgres", "postgresql+psycopg")
    assert url.hostname == pg_name and (url.port or 5432) == 5432
    assert url.username == pg_env["POSTGRES_USER"] and url.password == pg_env["POSTGRES_PASSWORD"]
    assert url.path.lstrip("/") == pg_env["POSTGRES_DB"]


def test_every_tms_variable_is_a_setting():
    """A misspelt TMS_* variable is silently ignored by the settings: every one in the file must exist."""
    for name, service in compose_services().items():
        command = image_command(compose_command(service))
        if command[0] != "tms":
            continue
        unknown = {k for k in compose_env(service) if k.startswith("TMS_")} - setting_names()
        assert not unknown, f"{name}: {sorted(unknown)} are not TMS settings (tms/config.py)"


def test_the_service_listens_on_all_interfaces_and_publishes_its_port():
    service = compose_services()[_service_named("serve")]
    env = compose_env(service)
    assert env.get("TMS_HOST") == "0.0.0.0", "the default 127.0.0.1 is unreachable from other containers"
    port = env.get("TMS_PORT", "8080")
    published = [str(p).rsplit(":", 1)[-1] for p in service.get("ports", [])]
    assert port in published
    assert "TMS_ADMIN_TOKEN" in env and "TMS_CALLBACK_KEY" in env


def test_the_worker_fences_through_the_service():
    """The jobs' drivers run in the worker container: TMS_WORKER_SERVICE_URL must name the service by its
    compose name and port (the default http://127.0.0.1:8080 is the worker container itself)."""
    service_name = _service_named("serve")
    service_port = int(compose_env(compose_services()[service_name]).get("TMS_PORT", "8080"))
    env = compose_env(compose_services()[_service_named("worker")])
    assert "TMS_WORKER_SERVICE_URL" in env
    assert url_host_port(env["TMS_WORKER_SERVICE_URL"]) == (service_name, service_port)


def test_every_long_running_service_has_a_health_check():
    for name, service in compose_services().items():
        if _one_shot(service):
            continue
        test = compose_healthcheck(service)
        assert test and test[0] in ("CMD", "CMD-SHELL") and len(test) > 1, f"{name} has no health check"


@pytest.mark.parametrize("role", ROLES)
def test_role_health_checks_check_that_role(role):
    service = compose_services()[_service_named(role)]
    test = compose_healthcheck(service)
    if role == "serve":
        port = compose_env(service).get("TMS_PORT", "8080")
        assert test[1:3] == ["tms-healthcheck", "http"] and f":{port}/readyz" in test[3]
    else:
        assert test[1:] == ["tms-healthcheck", "heartbeat", HEARTBEAT_ROLES[role]]


def test_dependencies_exist_and_wait_for_health():
    services = compose_services()
    for name, service in services.items():
        depends = service.get("depends_on") or {}
        if isinstance(depends, list):
            depends = {d: {"condition": "service_started"} for d in depends}
        for target, spec in depends.items():
            assert target in services, f"{name} depends on unknown {target}"
            condition = spec.get("condition")
            if _one_shot(services[target]):
                assert condition == "service_completed_successfully", f"{name} -> {target}"
            else:
                assert condition == "service_healthy", f"{name} -> {target}: wait for health, not the start"
                assert compose_healthcheck(services[target]), f"{target} has no health check to wait for"
    pg_name, _ = _postgres()
    for role in ROLES:
        assert pg_name in services[_service_named(role)]["depends_on"], f"{role} must wait for PostgreSQL"
    # Every one-shot is waited for by someone, or it would race the services that need what it does.
    for name, service in services.items():
        if _one_shot(service):
            assert any(name in (s.get("depends_on") or {}) for s in services.values()), name


def test_state_and_job_logs_are_on_named_volumes():
    declared = set(compose().get("volumes") or {})
    for name, service in compose_services().items():
        for source in compose_volumes(service).values():
            if source.startswith((".", "/")):
                assert (REPO / source).exists(), f"{name} mounts {source}, which does not exist"
            else:
                assert source in declared, f"{name} mounts undeclared volume {source}"
    for role in ROLES:
        service = compose_services()[_service_named(role)]
        data_dir = compose_env(service).get("TMS_DATA_DIR")
        assert data_dir, f"{role}: TMS_DATA_DIR unset (the default ./.tms is relative to the working directory)"
        assert compose_volumes(service).get(data_dir) in declared, f"{role}: {data_dir} is not on a volume"
    worker = compose_services()[_service_named("worker")]
    jobs = str(PurePosixPath(compose_env(worker)["TMS_DATA_DIR"]) / "jobs")
    assert compose_volumes(worker).get(jobs) in declared, "the worker's job logs are not on a volume"
    assert compose_volumes(_postgres()[1]).get("/var/lib/postgresql/data") in declared


def test_tables_are_where_the_roles_and_the_spark_executors_see_them():
    """Executors (in the Spark worker) write the tables the driver (in the TMS worker) plans on: the same
    volume at the same path, under the storage roots."""
    services = compose_services()
    worker = services[_service_named("worker")]
    roots = compose_env(worker)["TMS_STORAGE_ROOTS"].split(",")
    for root in roots:
        if "://" in root:
            continue
        volume = compose_volumes(worker).get(root)
        assert volume, f"storage root {root} is not mounted in the worker"
        for name in [_service_named(r) for r in ("serve", "planner")] + ["spark-worker"]:
            assert compose_volumes(services[name]).get(root) == volume, f"{name} does not mount {root}"
        for role in ROLES:
            assert compose_env(services[_service_named(role)])["TMS_STORAGE_ROOTS"] == ",".join(roots)


def _queue_files() -> dict[str, dict]:
    """The queues the one-shot stores: name -> body, read from the files its command names."""
    queues = {}
    for service in compose_services().values():
        command = compose_command(service)
        if command[:1] == ["tms-put-queue"]:
            mounts = compose_volumes(service)
            for path in command[1:]:
                folder = str(PurePosixPath(path).parent)
                assert folder in mounts, f"{path} is not in a mounted folder"
                host = REPO / mounts[folder] / PurePosixPath(path).name
                queues[Path(path).stem] = json.loads(host.read_text())
    return queues


def test_the_worker_submits_to_the_spark_cluster():
    from service.schemas.admin import QueueIn

    queues = _queue_files()
    assert queues, "no queue is created: the worker would run every job in local mode"
    services = compose_services()
    master_command = compose_command(services["spark-master"])
    assert "org.apache.spark.deploy.master.Master" in master_command
    port = master_command[master_command.index("--port") + 1]
    spark_worker = compose_command(services["spark-worker"])
    assert "org.apache.spark.deploy.worker.Worker" in spark_worker
    for body in queues.values():
        queue = QueueIn.model_validate(body)  # what PUT /api/v1/queues/{name} accepts
        assert queue.kind == "standalone"
        assert queue.master == f"spark://spark-master:{port}"
        assert queue.master in spark_worker, "the Spark worker registers with another master"
        # The queue's jobs fit the Spark worker (a job waiting for cores or memory never starts).
        cores = int(spark_worker[spark_worker.index("--cores") + 1])
        memory = spark_worker[spark_worker.index("--memory") + 1]
        memory_mb = int(memory[:-1]) * {"g": 1024, "m": 1}[memory[-1].lower()]
        assert queue.capacity * queue.max_executors * queue.executor_cores <= cores
        assert queue.capacity * queue.max_executors * queue.max_executor_memory_mb <= memory_mb


def test_spark_services_and_the_worker_use_the_java_image():
    services = compose_services()
    for name in (_service_named("worker"), "spark-master", "spark-worker"):
        assert services[name]["build"]["target"] == "tms-spark", f"{name} needs Java (tms-spark)"
        assert interpolate(services[name]["image"]) == "tms-spark:dev", name
    for role in ("serve", "planner", "manager"):
        assert services[_service_named(role)]["build"]["target"] == "tms"
        assert interpolate(services[_service_named(role)]["image"]) == "tms:dev", role


def test_no_merge_key_takes_a_list():
    """`<<: [*a, *b]` is read with one precedence by Docker Compose and PyYAML <= 6.0.3 and with the other
    by PyYAML 6.0.4: each service states its image and build itself, merges take one mapping."""
    assert compose_merge_lists((REPO / "docker-compose.yml").read_text()) == []


def test_merge_keys_are_read_as_compose_reads_them():
    """The YAML merge-key spec: the mapping's own keys win, then the earlier of the merged mappings."""
    import yaml
    from deploy_support import ComposeLoader

    text = "a: &a {k: a, x: 1}\nb: &b {k: b, y: 2}\nc: {<<: [*a, *b], z: 3}\nd: {<<: *a, k: own}\n"
    doc = yaml.load(text, Loader=ComposeLoader)  # noqa: S506 (a SafeLoader)
    assert doc["c"] == {"k": "a", "x": 1, "y": 2, "z": 3}
    assert doc["d"] == {"k": "own", "x": 1}


def test_prometheus_scrapes_the_service_and_grafana_is_provisioned():
    import yaml

    services = compose_services()
    prometheus = services["prometheus"]
    config_target = next(a.split("=", 1)[1] for a in compose_command(prometheus) if a.startswith("--config.file="))
    config = yaml.safe_load((REPO / compose_volumes(prometheus)[config_target]).read_text())
    service_name = _service_named("serve")
    port = int(compose_env(services[service_name]).get("TMS_PORT", "8080"))
    targets = set()
    for job in config["scrape_configs"]:
        assert job.get("metrics_path", "/metrics") == "/metrics"
        for sd in job.get("dns_sd_configs", []):
            targets |= {(n, sd["port"]) for n in sd["names"]}
        for static in job.get("static_configs", []):
            targets |= {(t.rsplit(":", 1)[0], int(t.rsplit(":", 1)[1])) for t in static["targets"]}
    assert (service_name, port) in targets

    grafana = services["grafana"]
    mounts = compose_volumes(grafana)
    assert "/etc/grafana/provisioning" in mounts
    providers = yaml.safe_load((REPO / mounts["/etc/grafana/provisioning"] / "dashboards" / "tms.yml").read_text())
    path = providers["providers"][0]["options"]["path"]
    assert path in mounts and (REPO / mounts[path] / "tms.json").is_file(), "the dashboard folder is not mounted"
    home = compose_env(grafana)["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert str(PurePosixPath(home).parent) == path
    datasources = yaml.safe_load(
        (REPO / mounts["/etc/grafana/provisioning"] / "datasources" / "prometheus.yml").read_text())
    assert url_host_port(datasources["datasources"][0]["url"]) == ("prometheus", 9090)


def test_no_secret_has_a_usable_default():
    """The admin token and callback key must be chosen by whoever deploys: compose refuses to start without."""
    env = compose_services()[_service_named("serve")]["environment"]
    for key in ("TMS_ADMIN_TOKEN", "TMS_CALLBACK_KEY"):
        assert re.fullmatch(r"\$\{\w+:\?[^}]+\}", env[key]), f"{key} must be required (${{VAR:?...}})"
    assert interpolate(env["TMS_ADMIN_TOKEN"]) == "<TMS_ADMIN_TOKEN>"


def test_every_variable_the_compose_file_reads_is_documented():
    """The README's "Deploying" section names each ${VARIABLE} docker-compose.yml reads."""
    variables = set(re.findall(r"\$\{(\w+)", (REPO / "docker-compose.yml").read_text()))
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Deploying"):]
    section = section[: section.index("\n## ", 1)]
    assert variables and not {v for v in variables if f"`{v}`" not in section}
