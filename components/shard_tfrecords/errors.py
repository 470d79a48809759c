"""The error every bad input to sharding raises: it names where, what was found and expected."""


class ShardInputError(ValueError):
    """Bad input data or options; the message names the file, line/record, column."""
