"""Lookups in a table of choices (strategies, launchers, ...): a dict from a choice's name to
its frozen entry, in the order users see them. One wording for an unknown name, one filter
by the entries' properties, and one typing of an options dict's values."""

from typing import Any, Dict, Tuple, Type


def entry(table: Dict[str, Any], name: str, what: str, error: Type[Exception] = ValueError):
    """``table[name]``, or ``error`` naming the choice and the known ones in table order."""
    if name not in table:
        raise error(f"{what} {name!r} is not known; expected one of {', '.join(table)}")
    return table[name]


def names_where(table: Dict[str, Any], **properties: Any) -> Tuple[str, ...]:
    """The names, in table order, of the entries whose properties have these values."""
    return tuple(name for name, choice in table.items()
                 if all(getattr(choice, k) == v for k, v in properties.items()))


def typed_option(setting: str, name: str, value: Any, kind: type,
                 error: Type[Exception] = ValueError) -> Any:
    """``setting``'s option ``name`` (a dict a pipeline passes, e.g. launcher_options) as
    ``kind``: KFP passes JSON numbers as floats, so a whole float is an int and an int a
    float; anything else of another type (a bool is not a number) is ``error`` naming it."""
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise error(f"{setting} {name}={value!r} should be a {kind.__name__}")
    return value
