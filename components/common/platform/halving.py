"""The record-level fallback shared by parsing and prediction, in a step and in a Beam job: a
batch is tried whole (the fast path), and only when it fails is it halved, and halved again,
down to the single records that fail, so a few bad records cost a few extra calls, not one
call per record."""

from typing import Callable, List, Tuple


def split_failures(fn: Callable[[int, int], object], count: int
                   ) -> Tuple[List[Tuple[int, int, object]], List[Tuple[int, BaseException]]]:
    """Run ``fn(lo, hi)`` on [0, count), halving failing ranges down to single items.

    Returns the ranges that worked with their results, in order, and the failing indices
    with their exceptions.
    """
    good: List[Tuple[int, int, object]] = []
    bad: List[Tuple[int, BaseException]] = []
    stack = [(0, count)] if count else []
    while stack:
        lo, hi = stack.pop()
        try:
            good.append((lo, hi, fn(lo, hi)))
        except Exception as err:  # noqa: BLE001 - any failure is the record's reason
            if hi - lo == 1:
                bad.append((lo, err))
            else:
                mid = (lo + hi) // 2
                stack += [(mid, hi), (lo, mid)]  # lo half pops first: results stay in order
    return good, sorted(bad, key=lambda item: item[0])
