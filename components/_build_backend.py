"""The build backend: setuptools' own, without its editable-install notice (pyproject.toml
names it; nothing imports it at run time).

tfkfp's packages live in top-level folders that pyproject's ``package-dir`` maps onto
``tfkfp.*``, a layout setuptools installs editable through an import hook. It says so in a
ten-line ``InformationOnly`` warning, which pip prints as a BuildBackendWarning on every
``pip install -e .``; the notice asks nothing of anyone. Every other warning still shows.
"""

import warnings

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 - every hook, as setuptools defines it
from setuptools.warnings import InformationOnly


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=InformationOnly)
        return build_meta.build_editable(wheel_directory, config_settings, metadata_directory)
