"""The deployment files agree with the code: every service has an image build, a compose
entry with a health check and a Kubernetes Deployment with probes, requests, a disruption
budget and a grace period that covers its drain time; the manifests render and validate
against Kubernetes' schemas offline.

(No Docker engine runs here, so the image is checked as text, not built. Manifests are
rendered by tests/unit/kustomize_lite.py, which is checked against `kubectl kustomize`
where that is installed.)"""

from __future__ import annotations

import importlib.util
import inspect
import re
import shutil
import subprocess
import tomllib
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import kubernetes_validate
import pytest
import yaml
from askgate.runtime.consumer import StreamConsumer
from askgate.settings import Settings
from askgate_webhooks.config import WebhookSettings

from tests.unit import kustomize_lite

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
SERVICES = sorted(p.name for p in (ROOT / "services").iterdir() if (p / "pyproject.toml").exists())
# The MCP server speaks stdio to one agent: it is run by the agent's host, not deployed.
DEPLOYED = [s for s in SERVICES if s != "mcp"]
OVERLAYS = sorted(p.name for p in (K8S / "overlays").iterdir() if p.is_dir())
# The oldest Kubernetes the manifests are written for (matchLabelKeys in a spread
# constraint needs 1.27+; 1.30 is the oldest release still maintained by most clouds).
K8S_VERSION = "1.30.0"


@cache
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("k8s_generate", K8S / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = generator().load_table()
    return data


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "deploy" / "compose.yml").read_text())
    return data


def project(service: str) -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads(
        (ROOT / "services" / service / "pyproject.toml").read_text()
    )
    return data


@cache
def _rendered(overlay: str) -> tuple[dict[str, Any], ...]:
    return tuple(kustomize_lite.render(K8S / "overlays" / overlay))


def rendered(overlay: str) -> list[dict[str, Any]]:
    return list(_rendered(overlay))


def find(overlay: str, kind: str, name: str) -> dict[str, Any]:
    hits = [o for o in rendered(overlay) if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(hits) == 1, f"{overlay}: expected one {kind} {name}, found {len(hits)}"
    return hits[0]


def container(overlay: str, service: str) -> dict[str, Any]:
    pod = find(overlay, "Deployment", f"askgate-{service}")["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert isinstance(c, dict)
    return c


def drain_s(service: str) -> float:
    """How long the service takes to stop after SIGTERM, read from its code."""
    if service in ("api", "web"):
        main = ROOT / "services" / service / "src" / f"askgate_{service}" / "__main__.py"
        match = re.search(r"timeout_graceful_shutdown=(\d+)", main.read_text())
        assert match, f"{service}: uvicorn's timeout_graceful_shutdown not found"
        return float(match.group(1))
    consumer_grace = float(inspect.signature(StreamConsumer).parameters["grace_s"].default)
    if service == "webhooks":
        # The parent waits webhook_timeout_s + 5 for an RQ child's running attempt.
        main = ROOT / "services/webhooks/src/askgate_webhooks/__main__.py"
        match = re.search(r"settings\.webhook_timeout_s \+ (\d+)", main.read_text())
        assert match, "webhooks: the worker stop wait not found"
        return max(consumer_grace, WebhookSettings().webhook_timeout_s + float(match.group(1)))
    if service == "sweeper":
        # A stop ends its pass after the script at hand (one batch: milliseconds of Redis,
        # tests/integration/test_sweeper.py), then its health key is removed.
        return 1.0
    # A channel worker: ChannelService.close() gives the consumer's grace and a second.
    kit = (ROOT / "shared/src/askgate/channels/service.py").read_text()
    match = re.search(r"timeout=grace \+ (\d+)", kit)
    assert match, "channels: the stop wait not found"
    return consumer_grace + float(match.group(1))


# -- the image ---------------------------------------------------------------------------


def test_one_dockerfile_for_every_service() -> None:
    """The services share the root Dockerfile; none keeps a copy of its own."""
    assert (ROOT / "Dockerfile").exists()
    assert not list((ROOT / "services").glob("*/Dockerfile"))


def test_dockerfile_is_multi_stage_pinned_and_non_root() -> None:
    """ARG SERVICE picks the package, uv is pinned, the runtime stage runs as a user."""
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^ARG SERVICE$", text, re.M)
    assert re.search(r"^ARG UV_VERSION=\d+\.\d+\.\d+$", text, re.M)
    assert '"uv==${UV_VERSION}"' in text
    stages = re.findall(r"^FROM \S+ AS (\w+)$", text, re.M)
    assert len(stages) >= 2 and "--from=build" in text
    runtime = text.split(f"AS {stages[-1]}")[1]
    user = re.findall(r"^USER (\S+)$", runtime, re.M)
    assert user and user[-1].split(":")[0] not in ("0", "root")
    assert '--package "askgate-${SERVICE}"' in text
    assert 'ln -s "askgate-${SERVICE}"' in text and "askgate-service" in text


def test_dockerignore_sends_only_the_workspace() -> None:
    """The build context is the manifests, the lock and the source: no .venv, no .git."""
    lines = [
        ln
        for ln in (ROOT / ".dockerignore").read_text().splitlines()
        if ln and not ln.startswith("#")
    ]
    assert lines[0] == "*"
    assert {ln[1:] for ln in lines if ln.startswith("!")} == {
        "pyproject.toml",
        "uv.lock",
        "shared/",
        "services/",
    }


@pytest.mark.parametrize("service", SERVICES)
def test_image_runs_the_script_its_package_declares(service: str) -> None:
    """SERVICE=<folder> installs askgate-<folder> and runs its askgate-<folder> script."""
    meta = project(service)["project"]
    assert meta["name"] == f"askgate-{service}"
    assert f"askgate-{service}" in meta["scripts"]


# -- docker compose ------------------------------------------------------------------------


@pytest.mark.parametrize("service", DEPLOYED)
def test_service_is_in_compose_with_a_health_check(service: str) -> None:
    """Each deployed service builds the shared image for itself and has a health check."""
    assert service in compose()["services"], f"add {service} to deploy/compose.yml"
    entry = compose()["services"][service]
    assert entry["build"] == {
        "context": "..",
        "dockerfile": "Dockerfile",
        "args": {"SERVICE": service},
    }
    assert entry["healthcheck"]["test"]
    assert entry["depends_on"]["redis"]["condition"] == "service_healthy"


@pytest.mark.parametrize("service", DEPLOYED)
def test_compose_grace_matches_kubernetes(service: str) -> None:
    """compose's stop_grace_period is the pod's terminationGracePeriodSeconds."""
    grace = generator().grace_s(service, table()[service])
    assert compose()["services"][service]["stop_grace_period"] == f"{grace}s"


def test_compose_redis_data_is_a_named_volume() -> None:
    """The compose Redis's data directory (/data in the redis image) is a named volume, so
    its AOF outlives the container (tests/integration/test_deployed_redis.py shows the
    deployed arguments keep a question across a crash of the server)."""
    mounts = compose()["services"]["redis"]["volumes"]
    named = [m.split(":")[0] for m in mounts if m.endswith(":/data")]
    assert named and named[0] in compose()["volumes"], mounts


# -- Kubernetes ----------------------------------------------------------------------------


def test_every_service_has_an_entry_in_the_table() -> None:
    """deploy/k8s/services.yaml lists exactly the deployed services."""
    assert sorted(table()) == DEPLOYED, (
        "add the service to deploy/k8s/services.yaml, then run python deploy/k8s/generate.py"
    )


def test_base_is_generated_from_the_table() -> None:
    """deploy/k8s/base matches services.yaml (else: python deploy/k8s/generate.py)."""
    assert generator().stale(generator().render(table())) == []


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_is_valid_kubernetes(overlay: str) -> None:
    """Every rendered object validates against Kubernetes' schema, unknown fields refused."""
    for obj in rendered(overlay):
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_renderer_agrees_with_kustomize(overlay: str) -> None:
    """kustomize_lite renders exactly what `kubectl kustomize` renders."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed: kustomize_lite is the only renderer here")
    out = subprocess.run(
        ["kubectl", "kustomize", str(K8S / "overlays" / overlay)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    real = {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(out) if o}
    lite = {(o["kind"], o["metadata"]["name"]): o for o in rendered(overlay)}
    assert lite == real


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("service", DEPLOYED)
def test_deployment_has_probes(overlay: str, service: str) -> None:
    """HTTP services: readiness /readyz, liveness /healthz; workers: `--check` liveness."""
    c = container(overlay, service)
    if table()[service]["kind"] == "http":
        assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    else:
        assert c["livenessProbe"]["exec"]["command"] == [f"askgate-{service}", "--check"]


@pytest.mark.parametrize("service", DEPLOYED)
def test_deployment_requests_cpu_and_memory(service: str) -> None:
    """Each container requests CPU and memory and has a memory limit."""
    resources = container("prod", service)["resources"]
    assert set(resources["requests"]) == {"cpu", "memory"}
    assert "memory" in resources["limits"]


@pytest.mark.parametrize("service", DEPLOYED)
def test_grace_covers_the_drain_time(service: str) -> None:
    """terminationGracePeriodSeconds outlasts the drain time the code allows itself."""
    spec = table()[service]
    assert spec["drain_s"] >= drain_s(service)
    pod = find("prod", "Deployment", f"askgate-{service}")["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] > spec["drain_s"]


@pytest.mark.parametrize("service", DEPLOYED)
def test_deployment_has_a_disruption_budget(service: str) -> None:
    """A PodDisruptionBudget selects the Deployment's pods."""
    budget = find("prod", "PodDisruptionBudget", f"askgate-{service}")
    labels = find("prod", "Deployment", f"askgate-{service}")["spec"]["template"]["metadata"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels["labels"].items()


@pytest.mark.parametrize("service", ["api", "web", "webhooks", "text"])
def test_api_and_workers_autoscale(service: str) -> None:
    """An HPA on CPU scales the API and the workers that may run as many replicas."""
    hpa = find("prod", "HorizontalPodAutoscaler", f"askgate-{service}")
    assert hpa["spec"]["scaleTargetRef"]["name"] == f"askgate-{service}"
    assert hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_pods_read_config_and_secrets(overlay: str) -> None:
    """Every askgate pod reads the ConfigMap and the Secret that hold its settings."""
    for service in DEPLOYED:
        refs = container(overlay, service)["envFrom"]
        assert {"configMapRef": {"name": "askgate-config"}} in refs
        assert {"secretRef": {"name": "askgate-secrets"}} in refs


def test_prod_keeps_no_secret_in_git() -> None:
    """The prod overlay renders no Secret: operators create askgate-secrets themselves."""
    assert not [o for o in rendered("prod") if o["kind"] == "Secret"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_redis_mode_is_set_in_the_config(overlay: str) -> None:
    """Whether REDIS_URL is a cluster node is one ConfigMap key in every overlay."""
    data = find(overlay, "ConfigMap", "askgate-config")["data"]
    assert data["ASKGATE_REDIS_CLUSTER"] in ("true", "false")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_config_names_only_real_settings(overlay: str) -> None:
    """Every variable in the ConfigMap is one askgate reads (a typo would be ignored)."""
    known = {f"ASKGATE_{name.upper()}" for name in Settings.model_fields} | {"REDIS_URL"}
    data = find(overlay, "ConfigMap", "askgate-config")["data"]
    assert set(data) <= known
