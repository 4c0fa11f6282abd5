"""Just enough of kustomize to render deploy/k8s offline where no `kustomize` (or
`kubectl kustomize`) is installed: resources (files and directories), namespace,
secretGenerator literals without a name hash, and patches (strategic-merge files,
JSON 6902 patches on a kind / label selector target). test_deploy.py checks that it
renders exactly what the real kustomize renders whenever that is at hand.

Anything else in a kustomization is refused, so the manifests cannot quietly outgrow it.
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]
SUPPORTED = {
    "apiVersion",
    "kind",
    "resources",
    "namespace",
    "secretGenerator",
    "generatorOptions",
    "patches",
}
CLUSTER_SCOPED = {"Namespace"}


def load_docs(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def render(directory: Path) -> list[Obj]:
    kust: Obj = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(kust) - SUPPORTED
    if unknown:
        raise ValueError(f"{directory}: kustomize_lite does not know {sorted(unknown)}")
    objs: list[Obj] = []
    for entry in kust.get("resources", []):
        path = directory / entry
        objs += render(path) if path.is_dir() else load_docs(path)
    objs += [
        _secret(gen, kust.get("generatorOptions", {})) for gen in kust.get("secretGenerator", [])
    ]
    for patch in kust.get("patches", []):
        _apply_patch(directory, patch, objs)
    if "namespace" in kust:
        for obj in objs:
            if obj["kind"] not in CLUSTER_SCOPED:
                obj.setdefault("metadata", {})["namespace"] = kust["namespace"]
    return objs


def _secret(gen: Obj, options: Obj) -> Obj:
    if not options.get("disableNameSuffixHash"):
        raise ValueError("kustomize_lite renders generators only with disableNameSuffixHash")
    data = {}
    for literal in gen.get("literals", []):
        key, _, value = literal.partition("=")
        data[key] = base64.b64encode(value.encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": gen["name"]},
        "type": gen.get("type", "Opaque"),
        "data": data,
    }


def _matches(obj: Obj, target: Obj) -> bool:
    if "kind" in target and obj["kind"] != target["kind"]:
        return False
    if "name" in target and obj["metadata"]["name"] != target["name"]:
        return False
    for term in filter(None, target.get("labelSelector", "").split(",")):
        key, _, value = term.partition("=")
        if obj["metadata"].get("labels", {}).get(key.strip()) != value.strip():
            return False
    return True


def _apply_patch(directory: Path, patch: Obj, objs: list[Obj]) -> None:
    if "path" in patch:
        for doc in load_docs(directory / patch["path"]):
            target = {"kind": doc["kind"], "name": doc["metadata"]["name"]}
            hits = [o for o in objs if _matches(o, target)]
            if not hits:
                raise ValueError(f"patch {patch['path']} matches nothing")
            for obj in hits:
                _merge(obj, doc)
        return
    ops = yaml.safe_load(patch["patch"])
    for obj in objs:
        if _matches(obj, patch["target"]):
            for op in ops:
                _json_patch(obj, op)


def _merge(into: Obj, patch: Obj) -> None:
    """Strategic merge as far as these manifests need it: maps merge, lists of named
    maps (containers, env, ports) merge by name, other lists are replaced."""
    for key, value in patch.items():
        if value is None:
            into.pop(key, None)
        elif isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        elif (
            isinstance(value, list)
            and isinstance(into.get(key), list)
            and all(isinstance(v, dict) and "name" in v for v in value + into[key])
        ):
            by_name = {item["name"]: item for item in into[key]}
            for item in value:
                if item["name"] in by_name:
                    _merge(by_name[item["name"]], item)
                else:
                    into[key].append(copy.deepcopy(item))
        else:
            into[key] = copy.deepcopy(value)


def _json_patch(obj: Obj, op: Obj) -> None:
    parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
    parent: Any = obj
    for part in parts[:-1]:
        parent = parent[int(part)] if isinstance(parent, list) else parent[part]
    last = parts[-1]
    if op["op"] in ("add", "replace"):
        value = copy.deepcopy(op["value"])
        if isinstance(parent, list):
            if last == "-":
                parent.append(value)
            elif op["op"] == "add":
                parent.insert(int(last), value)
            else:
                parent[int(last)] = value
        else:
            if op["op"] == "replace" and last not in parent:
                raise ValueError(f"replace of a missing {op['path']}")
            parent[last] = value
    elif op["op"] == "remove":
        del parent[int(last) if isinstance(parent, list) else last]
    else:
        raise ValueError(f"kustomize_lite does not know op {op['op']}")
