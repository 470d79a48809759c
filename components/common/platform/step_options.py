"""A step's settings, declared once: one frozen dataclass per step (its ``options.py``) whose
fields carry the name, type, default, allowed values and one line of meaning, and whose
construction is the check. The core function takes it; the pipelines' checks build it from
what they pass the step; ``tfkfp`` flags read their defaults, choices and help from it. Only
the KFP component signature, whose source is copied into the pod, repeats the defaults as
literals, held to these fields by the drift test (tests/pipelines/test_docs.py).

    @dataclasses.dataclass(frozen=True)
    class ShardOptions(StepOptions):
        error = ShardInputError
        compression: str = setting("none", "how shards are compressed", choices=COMPRESSIONS)

        def check(self) -> None:  # what the choices cannot say
            ...
"""

import copy
import dataclasses
from typing import Any, Callable, ClassVar, Dict, Mapping, Sequence, Tuple, Type, TypeVar

Options = TypeVar("Options", bound="StepOptions")
REQUIRED = dataclasses.MISSING  # a setting without a default (settings with one come after)


def setting(default: Any, meaning: str,
            choices: Sequence[Any] | Callable[[], Sequence[Any]] = ()) -> Any:
    """A field of a step's options: its default (a list or dict is copied for each object;
    REQUIRED: none, the setting must be given), one line of what it means, and the values
    it may take (empty: any of its type), or a function that reads them from their table
    when asked, so an entry added to the table is a choice at once."""
    metadata = {"meaning": meaning, "choices": choices if callable(choices) else tuple(choices)}
    if default is REQUIRED:
        return dataclasses.field(metadata=metadata)
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default),
                                 metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


class StepOptions:
    """Base of a step's options dataclass: built checked, read by name."""

    error: ClassVar[Type[ValueError]] = ValueError  # the step's own input error

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            allowed = self.choices(field.name)
            value = getattr(self, field.name)
            if allowed and value not in allowed:
                raise self.error(f"{field.name} {value!r} is not one of "
                                 f"{', '.join(map(str, allowed))}")
        self.check()

    def check(self) -> None:
        """What the step refuses beyond a field's choices; subclasses add theirs."""

    @classmethod
    def of(cls: Type[Options], values: Mapping[str, Any], **changes: Any) -> Options:
        """The options among ``values`` (a component's parameters, a pipeline's arguments
        for the step, parsed flags: names that are not settings are left out), with
        ``changes`` over them; a setting not given takes its default."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in {**values, **changes}.items() if k in known})

    @classmethod
    def given(cls: Type[Options], options: "Options | None", settings: Mapping[str, Any]
              ) -> Options:
        """A core function's options: the object it was handed, or the keyword settings it
        was called with (as from a notebook), not both."""
        if options is not None and settings:
            raise TypeError(f"give {cls.__name__} or keyword settings, not both "
                            f"(got {', '.join(settings)})")
        unknown = sorted(set(settings) - set(cls.names()))
        if unknown:
            raise TypeError(f"{', '.join(unknown)}: not a setting of {cls.__name__} "
                            f"(settings: {', '.join(cls.names())})")
        return options if options is not None else cls(**settings)

    @classmethod
    def names(cls) -> Tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def defaults(cls) -> Dict[str, Any]:
        """Every setting's default, by name (a fresh copy of a list or dict)."""
        return {f.name: f.default if f.default_factory is dataclasses.MISSING
                else f.default_factory() for f in dataclasses.fields(cls)
                if f.default is not dataclasses.MISSING
                or f.default_factory is not dataclasses.MISSING}

    @classmethod
    def choices(cls, name: str) -> Tuple[Any, ...]:
        allowed = cls._field(name).metadata.get("choices", ())
        return tuple(allowed() if callable(allowed) else allowed)

    @classmethod
    def meaning(cls, name: str) -> str:
        return cls._field(name).metadata.get("meaning", "")

    @classmethod
    def _field(cls, name: str) -> dataclasses.Field:
        return next(f for f in dataclasses.fields(cls) if f.name == name)
