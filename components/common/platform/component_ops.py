"""A component package's KFP ops as its own attributes, imported on first use (PEP 562).

``from tfkfp.components.train import train`` gives the KFP component of train/component.py,
while ``import tfkfp.components.train.core`` still imports no kfp: the package's
``__init__.py`` names its ops and lets this module fetch them from component.py only when
one is asked for. Core code runs in images without kfp, so nothing here imports it.
"""

import importlib
import sys
from typing import Callable, List, Sequence, Tuple


def lazy_ops(package: str, names: Sequence[str]
             ) -> Tuple[Callable[[str], object], Callable[[], List[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package`` whose ``names`` (its
    ``__all__``) are the ops of ``package.component``. The first access imports that module
    (and with it kfp) and keeps the op on the package, so later accesses are plain
    attributes. Any other name raises AttributeError, which is what lets ``from package
    import core`` import the submodule."""
    ops = frozenset(names)

    def __getattr__(name: str):
        if name not in ops:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        op = getattr(importlib.import_module(f"{package}.component"), name)
        setattr(sys.modules[package], name, op)
        return op

    def __dir__() -> List[str]:
        return sorted(set(vars(sys.modules[package])) | ops)

    return __getattr__, __dir__
