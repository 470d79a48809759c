"""Each component folder's catalogue entry, as kubeflow/pipelines-components asks for one:
``metadata.yaml`` (checked here against that schema's rules), ``OWNERS``, and a README
generated from both and the components' docstrings, so a user finds and loads one
component by itself. pipelines/docs.py writes the READMEs with the rest of the docs."""

import datetime
import os
import re
from typing import Any, Dict, List

import yaml

from tfkfp import components as package

COMPONENTS = package.__path__[0]
TIERS = ("core", "third_party")
STABILITIES = ("alpha", "beta", "stable")
KUBEFLOW = ("Pipelines", "Trainer", "Katib", "Model Registry", "Spark Operator")
VERSION_RANGE = re.compile(r"^(>=|<=|==|>|<|~=)\d+(\.\d+)*(,\s*(>=|<=|==|>|<|~=)\d+(\.\d+)*)*$")
FRESH_DAYS = 365  # the catalogue removes an entry a year after it was last verified


def folders() -> List[str]:
    """Every component folder (one holding component.py), in name order."""
    return sorted(name for name in os.listdir(COMPONENTS)
                  if os.path.isfile(os.path.join(COMPONENTS, name, "component.py")))


def metadata(folder: str) -> Dict[str, Any]:
    with open(os.path.join(COMPONENTS, folder, "metadata.yaml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


def owners(folder: str) -> Dict[str, List[str]]:
    with open(os.path.join(COMPONENTS, folder, "OWNERS"), encoding="utf-8") as f:
        return yaml.safe_load(f) or {}


def problems(folder: str, today: datetime.date | None = None) -> List[str]:
    """What the catalogue's validation would refuse in the folder's entry."""
    where = f"components/{folder}/metadata.yaml"
    try:
        meta = metadata(folder)
        roster = owners(folder)
    except (OSError, yaml.YAMLError) as err:
        return [f"components/{folder}: {err}"]
    found = []
    if meta.get("name") != folder:
        found.append(f"{where}: name {meta.get('name')!r} is not the folder's, {folder!r}")
    for key, allowed in (("tier", TIERS), ("stability", STABILITIES)):
        if meta.get(key) not in allowed:
            found.append(f"{where}: {key} {meta.get(key)!r} is not one of {', '.join(allowed)}")
    found += _dependency_problems(where, meta.get("dependencies") or {})
    tags = meta.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags):
        found.append(f"{where}: tags must be a list of non-empty strings")
    found += _verified_problems(where, meta.get("lastVerified"), today)
    if not roster.get("approvers"):
        found.append(f"components/{folder}/OWNERS: no approvers")
    return found


def _dependency_problems(where: str, dependencies: Dict[str, Any]) -> List[str]:
    kubeflow = dependencies.get("kubeflow") or []
    found = []
    if "Pipelines" not in [d.get("name") for d in kubeflow]:
        found.append(f"{where}: dependencies.kubeflow must name Pipelines with a version range")
    for dependency in kubeflow:
        if dependency.get("name") not in KUBEFLOW:
            found.append(f"{where}: {dependency.get('name')!r} is not a Kubeflow component "
                         f"({', '.join(KUBEFLOW)}); list it under external_services")
        if not VERSION_RANGE.match(str(dependency.get("version", ""))):
            found.append(f"{where}: {dependency.get('name')} version "
                         f"{dependency.get('version')!r} is not a range such as '>=2.14'")
    return found


def _verified_problems(where: str, stamp: Any, today: datetime.date | None) -> List[str]:
    try:
        verified = datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return [f"{where}: lastVerified {stamp!r} is not an RFC 3339 time"]
    if verified.tzinfo is None:
        return [f"{where}: lastVerified {stamp!r} has no time zone (RFC 3339)"]
    age = (today or datetime.date.today()) - verified.date()
    if age.days > FRESH_DAYS:
        return [f"{where}: lastVerified {stamp} is {age.days} days old (at most "
                f"{FRESH_DAYS}): run the component's tests and set today's date"]
    return []


def metadata_lines(folder: str) -> List[str]:
    """The README's Metadata section: every metadata.yaml field but ``ci``, and the owners."""
    meta, roster = metadata(folder), owners(folder)
    deps = meta.get("dependencies") or {}
    lines = [f"- Tier: {meta['tier']}", f"- Stability: {meta['stability']}",
             "- Kubeflow dependencies: " + ", ".join(
                 f"{d['name']} {d['version']}" for d in deps.get("kubeflow", []))]
    if deps.get("external_services"):
        lines.append("- External services: " + "; ".join(
            f"{d['name']} {d['version']}" for d in deps["external_services"]))
    lines += [f"- Tags: {', '.join(meta.get('tags', []))}",
              f"- Owners: {', '.join(roster.get('approvers', []))}",
              f"- Last verified: {str(meta['lastVerified'])[:10]}"]
    return lines


def links(folder: str) -> Dict[str, str]:
    return dict(metadata(folder).get("links") or {})
