"""A Mermaid ``flowchart`` of a pipeline's tasks, drawn from its compiled YAML.

Each task of the root DAG is a node, and an arrow runs from a task to each task that waits
for it (the YAML's ``dependentTasks``). A task that is itself a DAG (a ``dsl.If``/``Else``
branch, a ``dsl.ParallelFor`` or a nested pipeline) is a subgraph holding its own tasks, so
the picture shows the run as the Kubeflow UI lays it out. pipelines/docs.py writes these
pictures into the docs.
"""

import re
from typing import Any, Dict, List

import yaml

from tfkfp.pipelines import registry

_CHANNEL = re.compile(r"inputs\.parameter_values\['pipelinechannel--([^']+)'\]")
_NEGATED = re.compile(r"!\((\S+) (==|!=|<=|>=|<|>) ([^()]+)\)")
_OPPOSITE = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
_INT = re.compile(r"int\((\w+)\)")  # how KFP casts a number parameter in a condition


def spec(name: str) -> Dict[str, Any]:
    """The committed compiled YAML of the named pipeline (pipelines/<name>.yaml)."""
    with open(registry.golden_path(name)) as f:
        return yaml.safe_load(f)


def mermaid(name: str) -> str:
    """The pipeline's tasks and their dependencies as a fenced Mermaid flowchart."""
    pipeline = spec(name)
    lines = ["```mermaid", "flowchart TD"]
    lines += _dag(pipeline, pipeline["root"]["dag"], parent="", ids={}, indent="  ")
    return "\n".join(lines + ["```"])


def _dag(pipeline: Dict[str, Any], dag: Dict[str, Any], parent: str, ids: Dict[str, str],
         indent: str) -> List[str]:
    """The nodes (or subgraphs) of one DAG's tasks, then the arrows between them."""
    lines, tasks = [], dag.get("tasks", {})
    local = {key: _node_id(parent, key, ids) for key in tasks}
    for key, task in tasks.items():
        component = pipeline["components"][task["componentRef"]["name"]]
        if "dag" in component:
            lines.append(f'{indent}subgraph {local[key]} ["{_subgraph_label(task)}"]')
            lines += _dag(pipeline, component["dag"], local[key], ids, indent + "  ")
            lines.append(f"{indent}end")
        else:
            lines.append(f'{indent}{local[key]}["{_task_label(pipeline, task, component)}"]')
    for key, task in tasks.items():
        for before in task.get("dependentTasks", []):
            lines.append(f"{indent}{local[before]} --> {local[key]}")
    return lines


def _node_id(parent: str, key: str, ids: Dict[str, str]) -> str:
    """The task's key as a Mermaid id; one already taken in the picture (the same task
    name in another branch) gets its parent's id in front."""
    node = re.sub(r"\W", "_", key)
    while node in ids.values():
        node = f"{parent}__{node}"
    ids[f"{parent}/{key}"] = node
    return node


def _task_label(pipeline: Dict[str, Any], task: Dict[str, Any],
                component: Dict[str, Any]) -> str:
    """The task's name as the UI shows it; an importer also names what it imports."""
    label = task["taskInfo"]["name"]
    executor = pipeline["deploymentSpec"]["executors"].get(component.get("executorLabel"), {})
    if "importer" in executor:
        source = task.get("inputs", {}).get("parameters", {}).get("uri", {})
        if "componentInputParameter" in source:
            label += ": " + source["componentInputParameter"].replace("pipelinechannel--", "")
    return _quoted(label)


def _subgraph_label(task: Dict[str, Any]) -> str:
    """What a DAG task is: its condition, its loop, or a nested pipeline or If/Else."""
    name = task["taskInfo"]["name"]
    condition = task.get("triggerPolicy", {}).get("condition")
    if condition:
        condition = _INT.sub(r"\1", _CHANNEL.sub(_channel, condition))
        negated = _NEGATED.fullmatch(condition)  # an Else branch: !(a != b)
        if negated:
            left, op, right = negated.groups()
            condition = f"{left} {_OPPOSITE[op]} {right}"
        return _quoted(f"{name}: if {condition}")
    loop = task.get("parameterIterator") or task.get("artifactIterator")
    if loop:
        items = loop.get("items", {})
        source = items.get("inputParameter") or items.get("inputArtifact") or ""
        source = source.replace("pipelinechannel--", "")
        return _quoted(f"{name}: ParallelFor over {_output(source)}")
    if name.startswith("condition-branches"):
        return _quoted(f"{name}: If / Else")
    return _quoted(f"{name} (pipeline)")


def _channel(match: re.Match) -> str:
    return _output(match.group(1))


def _output(channel: str) -> str:
    """``deploy-gate-Output`` (a task's output) as ``deploy-gate.Output``; a pipeline
    parameter as its name."""
    task, sep, output = channel.rpartition("-")
    return f"{task}.{output}" if sep and output[:1].isupper() else channel


def _quoted(text: str) -> str:
    """Text for a quoted Mermaid label: a double quote is written as its entity."""
    return text.replace('"', "#quot;")
