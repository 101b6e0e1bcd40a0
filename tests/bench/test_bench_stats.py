"""Medians and bootstrap intervals: pure functions of lists of numbers."""
from __future__ import annotations

import pytest

from specx.bench.stats import bootstrap_median, paired_ratios, percentile

DATA = [3.1, 2.9, 3.4, 2.2, 5.0, 3.0, 3.3, 2.8, 4.1, 3.6]


def test_constant_data_gives_a_zero_width_interval():
    iv = bootstrap_median([2.5] * 7)
    assert (iv.median, iv.lo, iv.hi, iv.n) == (2.5, 2.5, 2.5, 7)


def test_the_interval_contains_the_median_and_stays_within_the_data():
    iv = bootstrap_median(DATA)
    assert min(DATA) <= iv.lo <= iv.median <= iv.hi <= max(DATA)
    assert iv.median == pytest.approx(3.2)


def test_same_seed_same_interval_and_a_narrower_level_nests_inside():
    assert bootstrap_median(DATA, seed=7) == bootstrap_median(DATA, seed=7)
    wide, narrow = bootstrap_median(DATA, 0.9), bootstrap_median(DATA, 0.5)
    assert wide.lo <= narrow.lo <= narrow.hi <= wide.hi
    assert wide.hi - wide.lo > 0


def test_more_data_gives_a_tighter_interval():
    few, many = bootstrap_median(DATA), bootstrap_median(DATA * 10)
    assert many.hi - many.lo < few.hi - few.lo


@pytest.mark.parametrize("values, level", [([], 0.9), ([1.0], 1.0), ([1.0], 0.0)])
def test_bad_input_is_refused(values, level):
    with pytest.raises(ValueError):
        bootstrap_median(values, level)


def test_percentile_interpolates_between_ranks():
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.0) == 1.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 1.0) == 4.0


def test_paired_ratios_use_only_units_present_in_both():
    assert sorted(paired_ratios({"a": 4.0, "b": 3.0, "c": 1.0}, {"a": 2.0, "b": 3.0, "d": 9.0})) == [1.0, 2.0]
    assert paired_ratios({"a": 1.0}, {"a": 0.0}) == []
