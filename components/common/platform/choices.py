"""Lookups in a table of choices (strategies, launchers, ...): a dict from a choice's name to
its frozen entry, in the order users see them. One wording for an unknown name, and one
filter by the entries' properties."""

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
