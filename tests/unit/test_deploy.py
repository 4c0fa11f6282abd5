"""The deployment files agree with the code: every long-running service has an image, a
compose entry with a health check, and its image runs a command its package installs.

(No Docker engine runs here, so the images are checked as text, not built.)"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SERVICES = sorted(p.name for p in (ROOT / "services").iterdir() if (p / "pyproject.toml").exists())
# The MCP server speaks stdio to one agent: it is run by the agent's host, not deployed.
DEPLOYED = [s for s in SERVICES if s != "mcp"]


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "deploy" / "compose.yml").read_text())
    return data


def project(service: str) -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads((ROOT / "services" / service / "pyproject.toml")
                                          .read_text())
    return data


@pytest.mark.parametrize("service", DEPLOYED)
def test_service_is_in_compose_with_a_health_check(service: str) -> None:
    """Each deployed service builds from its own Dockerfile and has a health check."""
    entry = compose()["services"][service]
    assert entry["build"]["dockerfile"] == f"services/{service}/Dockerfile"
    assert (ROOT / entry["build"]["dockerfile"]).exists()
    assert entry["healthcheck"]["test"]
    assert entry["depends_on"]["redis"]["condition"] == "service_healthy"


@pytest.mark.parametrize("service", SERVICES)
def test_image_installs_its_package_and_runs_its_script(service: str) -> None:
    """A Dockerfile installs its own workspace package and runs a script that package declares."""
    dockerfile = (ROOT / "services" / service / "Dockerfile").read_text()
    meta = project(service)
    assert f"--package {meta['project']['name']}" in dockerfile
    cmd = re.findall(r'^(?:CMD|ENTRYPOINT) \["([^"]+)"', dockerfile, re.M)
    assert cmd and cmd[-1] in meta["project"]["scripts"]


def test_redis_keeps_data_across_restarts() -> None:
    """The compose Redis appends to an AOF on a volume: accepted questions survive a restart."""
    redis = compose()["services"]["redis"]
    assert "--appendonly" in redis["command"] and "yes" in redis["command"]
    assert any(v.endswith(":/data") for v in redis["volumes"])
