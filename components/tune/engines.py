"""Where a study runs (``engine``), the algorithms each engine offers, and the search spaces
each can express: one table, checked before any trial.

``local`` runs an Optuna study in the step (core.py); ``katib`` creates a Katib Experiment
on the cluster (katib_experiment.py, katib_run.py); ``vertex`` a Vertex AI
HyperparameterTuningJob (Vizier; vertex_study.py, vertex_run.py). A suite algorithm name maps to the
engine's own name for it. A space an engine cannot honour exactly is refused naming the
setting and the engine, rather than searched on a scale the user did not ask for.
"""

from typing import Any, Callable, Dict, Mapping

from tfkfp.components.tune.errors import SearchSpaceError, TuneError

# engine -> suite algorithm -> the engine's name for it (Katib: katib-config's algorithmName)
ALGORITHMS: Dict[str, Dict[str, str]] = {
    "local": {"tpe": "tpe", "random": "random", "grid": "grid"},
    "katib": {"tpe": "tpe", "random": "random", "grid": "grid",
              "bayesianoptimization": "bayesianoptimization"},
    # StudySpec.Algorithm: Vertex AI's default is Bayesian optimization
    "vertex": {"random": "RANDOM_SEARCH", "grid": "GRID_SEARCH",
               "bayesianoptimization": "ALGORITHM_UNSPECIFIED"},
}
ENGINES = tuple(ALGORITHMS)


def _katib_bayesian(spec: Mapping[str, Any]) -> str:
    """Katib 0.19's bayesianoptimization (scikit-optimize, suggestion/skopt) samples every
    double log-uniform and every int uniformly without a step, whatever the experiment says."""
    if spec["type"] == "float" and not spec["log"]:
        return "it samples every float log-uniform; give log true or use tpe or random"
    if spec["type"] == "int" and (spec["log"] or spec.get("step", 1) != 1):
        return "it samples ints uniformly with step 1; drop log and step or use tpe"
    return ""


def _vertex(spec: Mapping[str, Any]) -> str:
    """StudySpec.ParameterSpec's IntegerValueSpec has no step."""
    if spec["type"] == "int" and spec.get("step", 1) != 1:
        return "an integer range there has no step; list the values as a categorical"
    return ""


# (engine, algorithm) -> why a setting's spec cannot be expressed there ("" when it can)
LIMITS: Dict[tuple, Callable[[Mapping[str, Any]], str]] = {
    ("katib", "bayesianoptimization"): _katib_bayesian,
    **{("vertex", algorithm): _vertex for algorithm in ALGORITHMS["vertex"]},
}


def check_engine(engine: str, algorithm: str, space: Mapping[str, Mapping[str, Any]]) -> str:
    """The engine's name for ``algorithm``, after refusing an unknown engine, an algorithm
    the engine lacks, or a setting whose scale it cannot express."""
    if engine not in ALGORITHMS:
        raise TuneError(f"engine {engine!r} is not one of {', '.join(ENGINES)}")
    offered = ALGORITHMS[engine]
    if algorithm not in offered:
        raise TuneError(f"algorithm {algorithm!r} is not offered by engine {engine!r}; "
                        f"expected one of {', '.join(offered)}")
    limit = LIMITS.get((engine, algorithm))
    for name, spec in space.items():
        why = limit(spec) if limit else ""
        if why:
            raise SearchSpaceError(f"search_space {name!r} cannot be expressed on engine "
                                   f"{engine!r} with algorithm {algorithm!r}: {why}")
    return offered[algorithm]
