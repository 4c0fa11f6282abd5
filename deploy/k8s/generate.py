"""Write deploy/k8s/base/ from deploy/k8s/services.yaml: per service a Deployment, a
PodDisruptionBudget, a Service (http kind) and a HorizontalPodAutoscaler (when it
autoscales), plus the kustomization that lists them.

    python deploy/k8s/generate.py           # rewrite base/
    python deploy/k8s/generate.py --check   # exit 1 when base/ differs from the table

tests/unit/test_deploy.py runs the same check, so base/ never drifts from the table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
TABLE = HERE / "services.yaml"
BASE = HERE / "base"
# The package version the images are tagged with (overlays point at a registry).
IMAGE_TAG = "0.1.0"
# Seconds of grace beyond a service's own drain time: SIGTERM delivery, a preStop pause.
GRACE_MARGIN_S = 10
# An http pod keeps serving this long after it is told to stop, while the endpoints
# controller takes it out of the Service (otherwise new requests still reach it).
PRESTOP_SLEEP_S = 5
# A worker's --check starts a Python process (0.7-1 s of CPU; telegram's 3.8 s, importing
# aiogram): probed twice a minute, it stays a small share of the request.
WORKER_PROBE_PERIOD_S = 30
HEADER = "# Written by deploy/k8s/generate.py from services.yaml; edit those, not this.\n"


def labels(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": f"askgate-{name}", "app.kubernetes.io/part-of": "askgate"}


def selector(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": f"askgate-{name}"}


def grace_s(name: str, spec: dict[str, Any]) -> int:
    """terminationGracePeriodSeconds: the service's drain time, a preStop pause for
    http services, and a margin."""
    pause = PRESTOP_SLEEP_S if spec["kind"] == "http" else 0
    return int(spec["drain_s"]) + pause + GRACE_MARGIN_S


def probes(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    if spec["kind"] == "http":
        return {
            "startupProbe": {
                "httpGet": {"path": "/healthz", "port": "http"},
                "periodSeconds": 2,
                "failureThreshold": 30,
            },
            "readinessProbe": {
                "httpGet": {"path": "/readyz", "port": "http"},
                "periodSeconds": 5,
                "timeoutSeconds": 3,
                "failureThreshold": 2,
            },
            "livenessProbe": {
                "httpGet": {"path": "/healthz", "port": "http"},
                "periodSeconds": 10,
                "timeoutSeconds": 3,
                "failureThreshold": 3,
            },
            "lifecycle": {"preStop": {"exec": {"command": ["sleep", str(PRESTOP_SLEEP_S)]}}},
        }
    check = {"exec": {"command": [f"askgate-{name}", "--check"]}}
    return {
        # The health key is written at start and lives 20 s: a first look after 15 s.
        "livenessProbe": {
            **check,
            "initialDelaySeconds": 15,
            "periodSeconds": WORKER_PROBE_PERIOD_S,
            "timeoutSeconds": 10,
            "failureThreshold": 3,
        },
    }


def deployment(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": name,
        "image": f"askgate-{name}:{IMAGE_TAG}",
        "imagePullPolicy": "IfNotPresent",
        "envFrom": [
            {"configMapRef": {"name": "askgate-config"}},
            {"secretRef": {"name": "askgate-secrets"}},
        ],
    }
    if spec.get("port"):
        container["ports"] = [{"name": port_name(spec), "containerPort": int(spec["port"])}]
    container.update(probes(name, spec))
    container["resources"] = {
        "requests": {"cpu": str(spec["cpu"]), "memory": str(spec["memory"])},
        "limits": {"memory": str(spec["memory_limit"])},
    }
    container["securityContext"] = {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    container["volumeMounts"] = [{"name": "tmp", "mountPath": "/tmp"}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"askgate-{name}", "labels": labels(name)},
        "spec": {
            "replicas": int(spec["replicas"]),
            "selector": {"matchLabels": selector(name)},
            # One new pod before an old one goes: capacity never dips in a rollout.
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
            },
            "template": {
                "metadata": {"labels": labels(name)},
                "spec": {
                    "terminationGracePeriodSeconds": grace_s(name, spec),
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 10001,
                        "runAsGroup": 10001,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [container],
                    "volumes": [{"name": "tmp", "emptyDir": {}}],
                },
            },
        },
    }


def disruption_budget(name: str) -> dict[str, Any]:
    # maxUnavailable, not minAvailable: a one-replica service can still be drained.
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"askgate-{name}", "labels": labels(name)},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector(name)}},
    }


def port_name(spec: dict[str, Any]) -> str:
    # A worker's port takes a platform's callbacks (webhooks, interactions); an http
    # service's is its API.
    return "http" if spec["kind"] == "http" else "inbound"


def service(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    port = port_name(spec)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"askgate-{name}", "labels": labels(name)},
        "spec": {
            "selector": selector(name),
            "ports": [{"name": port, "port": int(spec["port"]), "targetPort": port}],
        },
    }


def autoscaler(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    scale = spec["autoscale"]
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": f"askgate-{name}", "labels": labels(name)},
        "spec": {
            "scaleTargetRef": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": f"askgate-{name}",
            },
            "minReplicas": int(scale["min"]),
            "maxReplicas": int(scale["max"]),
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {
                            "type": "Utilization",
                            "averageUtilization": int(scale["cpu_percent"]),
                        },
                    },
                }
            ],
        },
    }


def objects(name: str, spec: dict[str, Any]) -> list[dict[str, Any]]:
    out = [deployment(name, spec), disruption_budget(name)]
    if spec.get("port"):
        out.append(service(name, spec))
    if spec.get("autoscale"):
        out.append(autoscaler(name, spec))
    return out


def load_table(path: Path = TABLE) -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = yaml.safe_load(path.read_text())["services"]
    return data


def render(table: dict[str, dict[str, Any]]) -> dict[str, str]:
    """File name in base/ → its text."""
    files: dict[str, str] = {}
    for name, spec in table.items():
        docs = objects(name, spec)
        files[f"{name}.yaml"] = HEADER + yaml.safe_dump_all(docs, sort_keys=False)
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["config.yaml", *files],
    }
    files["kustomization.yaml"] = HEADER + yaml.safe_dump(kustomization, sort_keys=False)
    return files


def stale(files: dict[str, str], base: Path = BASE) -> list[str]:
    """The generated files whose text in base/ differs, and stray generated files."""
    wrong = [
        n for n, text in files.items() if not (base / n).exists() or (base / n).read_text() != text
    ]
    strays = [
        p.name
        for p in base.glob("*.yaml")
        if p.name not in files and p.read_text().startswith(HEADER)
    ]
    return sorted(wrong + strays)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="only report stale files")
    args = parser.parse_args(argv)
    files = render(load_table())
    if args.check:
        bad = stale(files)
        for name in bad:
            print(
                f"deploy/k8s/base/{name} is stale: run python deploy/k8s/generate.py",
                file=sys.stderr,
            )
        return 1 if bad else 0
    BASE.mkdir(exist_ok=True)
    for name in stale(files):
        path = BASE / name
        if name in files:
            path.write_text(files[name])
        else:
            path.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
