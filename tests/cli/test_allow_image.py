"""``tfkfp allow-image`` (an overlay's allow-list as a command) and ``tfkfp check``'s
collapsing of lines found more than once."""

import shutil

import yaml

from tfkfp.cli.check import collapsed
from tfkfp.cli.main import main
from tfkfp.components._image import IMAGE
from tfkfp.pipelines.overlays import read_overlay

MINE = "europe-docker.pkg.dev/my-project/ml/tfkfp:0.1.0"


def overlay_copy(tmp_path, root):
    shutil.copytree(root / "manifests", tmp_path / "manifests")
    return tmp_path / "manifests" / "overlays" / "gke"


def test_the_patch_lists_the_images_and_joins_the_kustomization_once(tmp_path, capsys):
    import pathlib

    folder = overlay_copy(tmp_path, pathlib.Path(__file__).resolve().parents[2])
    comments = folder.joinpath("kustomization.yaml").read_text().count("#")
    for _ in range(2):
        assert main(["allow-image", MINE, "--overlay", str(folder)]) == 0
    kustomization = yaml.safe_load(folder.joinpath("kustomization.yaml").read_text())
    assert kustomization["patches"].count({"path": "tfkfp-allow-list.yaml"}) == 1
    assert folder.joinpath("kustomization.yaml").read_text().count("#") == comments
    patch = yaml.safe_load(folder.joinpath("tfkfp-allow-list.yaml").read_text())
    assert patch["metadata"]["name"] == "tfkfp-config"
    assert patch["data"]["replicaImages"].split() == [MINE, IMAGE]
    assert patch["data"]["servingImages"].split() == [MINE, IMAGE]
    assert "2 image(s) in" in capsys.readouterr().out


def test_the_patch_reads_as_the_overlay_s_allow_list(tmp_path):
    from tfkfp.cli.allow_list import patch_text

    tmp_path.joinpath("cluster.yaml").write_text(patch_text([MINE, IMAGE]))
    assert read_overlay(str(tmp_path / "cluster.yaml")).images == [MINE, IMAGE]


def test_a_folder_without_a_kustomization_is_refused(tmp_path, capsys):
    assert main(["allow-image", MINE, "--overlay", str(tmp_path)]) == 1
    assert "no kustomization.yaml there" in capsys.readouterr().err


def test_a_line_found_more_than_once_is_printed_once_with_its_count():
    assert collapsed(["a: step x: big", "a: step y: big", "a: step x: big"]) == [
        "a: step x: big (x2)", "a: step y: big"]
