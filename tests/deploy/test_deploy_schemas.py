"""The deployment files against their tools' published schemas, as far as can be checked without a Docker
engine or a cluster: docker-compose.yml against the Compose specification (the schema `docker compose config`
validates with, as vendored by check-jsonschema), every Kubernetes manifest against Kubernetes' OpenAPI
schemas in strict mode (an unknown or misspelt field fails, as `kubectl apply --validate=strict` would)."""
from __future__ import annotations

import copy
import json
from importlib import resources

import jsonschema
import pytest
from deploy_support import compose, kn_name, manifests

KUBERNETES_VERSIONS = ("1.29.0", "1.33.0")  # oldest supported by the manifests' APIs, and a recent one


@pytest.fixture(scope="module")
def compose_validator():
    schema = json.loads(resources.files("check_jsonschema.builtin_schemas.vendor")
                        .joinpath("compose-spec.json").read_text())
    return jsonschema.validators.validator_for(schema)(schema)


def test_compose_file_follows_the_compose_specification(compose_validator):
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in compose_validator.iter_errors(compose())]
    assert not errors, "\n".join(errors)


def test_compose_schema_check_catches_a_misspelt_field(compose_validator):
    broken = copy.deepcopy(compose())
    broken["services"]["worker"]["healthckeck"] = broken["services"]["worker"].pop("healthcheck")
    assert list(compose_validator.iter_errors(broken))


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("manifest", manifests(), ids=kn_name)
def test_manifest_follows_the_kubernetes_schema(manifest, version):
    import kubernetes_validate
    kubernetes_validate.validate(manifest, version, strict=True)


def test_kubernetes_schema_check_catches_a_misspelt_field():
    import kubernetes_validate
    from kubernetes_validate.utils import ValidationError

    worker = copy.deepcopy(next(m for m in manifests() if m["kind"] == "StatefulSet"))
    spec = worker["spec"]["template"]["spec"]
    spec["enableServiceLink"] = spec.pop("enableServiceLinks")
    with pytest.raises(ValidationError):
        kubernetes_validate.validate(worker, KUBERNETES_VERSIONS[-1], strict=True)
