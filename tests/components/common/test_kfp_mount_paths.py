"""KFP's mount path <-> URI rule: one table (common.platform.kfp_mounts) that covers every
prefix kfp defines, maps each both ways as kfp itself does, and needs one entry per store."""

import re

import pytest
from kfp import dsl
from kfp.dsl.types import artifact_types

from tfkfp.components.common.platform import kfp_mounts, uris


def kfp_prefixes():
    """{mount prefix: URI scheme} as kfp defines them: each ``_<NAME>_LOCAL_MOUNT_PREFIX``
    with ``RemotePrefix.<NAME>``."""
    names = [m[1] for m in (re.fullmatch(r"_([A-Z0-9]+)_LOCAL_MOUNT_PREFIX", n)
                            for n in vars(artifact_types)) if m]
    assert names, "kfp's artifact_types defines no *_LOCAL_MOUNT_PREFIX constants any more"
    return {getattr(artifact_types, f"_{name}_LOCAL_MOUNT_PREFIX"):
            artifact_types.RemotePrefix[name].value for name in names}


def test_every_kfp_prefix_has_an_entry():
    ours = {**kfp_mounts.MOUNTS, **kfp_mounts.NOT_SHARED}
    assert ours == kfp_prefixes(), (
        "kfp's mount prefixes changed: give each one an entry in kfp_mounts.MOUNTS (a store "
        "the suite reads) or kfp_mounts.NOT_SHARED")
    assert set(kfp_prefixes().values()) == {p.value for p in artifact_types.RemotePrefix}


@pytest.mark.parametrize("prefix", sorted(kfp_mounts.MOUNTS))
def test_each_prefix_maps_both_ways_as_kfp_does(prefix):
    scheme = kfp_mounts.MOUNTS[prefix]
    uri = f"{scheme}bucket/run/step/model"
    path = f"{prefix}bucket/run/step/model"
    assert dsl.Model(uri=uri).path == path  # kfp's own rule, URI -> path
    assert artifact_types.convert_local_path_to_remote_path(path) == uri  # and back
    assert kfp_mounts.path_of(uri) == path
    assert kfp_mounts.uri_of(path) == uri
    assert uris.kfp_remote_uri(path) == uri
    assert uris.kfp_remote_uri(uri) == uri
    assert scheme in uris.SUPPORTED_SCHEMES and not uris.unsupported_scheme(uri)


@pytest.mark.parametrize("prefix", sorted(kfp_mounts.NOT_SHARED))
def test_a_prefix_that_is_not_shared_stays_a_local_path(prefix):
    path = f"{prefix}registry.example_models_m_1"
    assert uris.kfp_remote_uri(path) is None
    assert kfp_mounts.path_of(kfp_mounts.NOT_SHARED[prefix] + "registry.example/m") is None


@pytest.mark.parametrize("path", ["/tmp/x", "relative/gcs/x", "/gcsx/b/k", "/minio", "file:///s3/b"])
def test_other_paths_are_only_this_machines(path):
    assert uris.kfp_remote_uri(path) is None


def test_other_uris_have_no_mount_path():
    assert kfp_mounts.path_of("hdfs://nn/x") is None
    assert kfp_mounts.path_of("/gcs/b/k") is None


def test_one_entry_is_enough_for_a_new_prefix(monkeypatch):
    monkeypatch.setitem(kfp_mounts.MOUNTS, "/azure/", "az://")
    assert uris.kfp_remote_uri("/azure/container/run/x") == "az://container/run/x"
    assert kfp_mounts.uri_of("/azure/container/run/x") == "az://container/run/x"
    assert kfp_mounts.path_of("az://container/run/x") == "/azure/container/run/x"
