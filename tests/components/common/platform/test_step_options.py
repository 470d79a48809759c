"""A step's options class: built checked, read by name, taken by its core function."""

import dataclasses
from typing import ClassVar, Dict, List

import pytest

from tfkfp.components.common.platform.step_options import StepOptions, setting


class SampleError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Sample(StepOptions):
    error: ClassVar = SampleError

    mode: str = setting("fast", "how to run", ("fast", "exact"))
    size: int = setting(2, "how many")
    names: List[str] = setting([], "which ones")
    types: Dict[str, str] = setting({}, "overrides")

    def check(self) -> None:
        if self.size < 1:
            raise SampleError(f"size {self.size} is below 1")


def test_a_value_outside_a_settings_choices_is_refused_naming_them():
    with pytest.raises(SampleError, match=r"^mode 'slow' is not one of fast, exact$"):
        Sample(mode="slow")


def test_the_steps_own_check_runs_as_the_options_are_built():
    with pytest.raises(SampleError, match="size 0 is below 1"):
        Sample(size=0)


def test_of_takes_the_settings_among_other_names_and_changes_over_them():
    built = Sample.of({"mode": "exact", "dataset": "/d", "summary": object()}, size=3)
    assert (built.mode, built.size, built.names) == ("exact", 3, [])


def test_a_list_or_dict_default_is_a_fresh_copy_for_each_object():
    first, second = Sample(), Sample()
    first.names.append("x")
    first.types["a"] = "b"
    assert (second.names, second.types, Sample.defaults()["names"]) == ([], {}, [])


def test_defaults_choices_and_meaning_are_read_by_name():
    assert Sample.defaults() == {"mode": "fast", "size": 2, "names": [], "types": {}}
    assert Sample.choices("mode") == ("fast", "exact") and Sample.choices("size") == ()
    assert Sample.meaning("size") == "how many"
    assert Sample.names() == ("mode", "size", "names", "types")


def test_a_core_takes_the_object_or_keyword_settings_but_not_both():
    assert Sample.given(None, {"size": 4}).size == 4
    given = Sample(size=5)
    assert Sample.given(given, {}) is given
    with pytest.raises(TypeError, match="give Sample or keyword settings, not both"):
        Sample.given(given, {"size": 4})
    with pytest.raises(TypeError, match=r"sizes: not a setting of Sample \(settings: mode, "):
        Sample.given(None, {"sizes": 4})
