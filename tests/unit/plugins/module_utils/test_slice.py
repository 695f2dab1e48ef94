"""Job slicing: K disjoint slices whose union is the inventory, each class spread evenly."""

import collections

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.fleet.slice import SliceError, parse_slice, slice_hosts

FLEET = (["etcd-%d" % i for i in range(1, 6)] + ["etcd-events-%d" % i for i in range(1, 4)] + ["cp-1", "cp-2", "cp-3"]
         + ["cpu-%d" % i for i in range(1, 2001)] + ["gpu-%d" % i for i in range(1, 490)])


@pytest.mark.parametrize("count", [1, 2, 3, 7, 16])
def test_slices_are_disjoint_and_cover_the_fleet(count):
    slices = [slice_hosts(FLEET, count, i) for i in range(1, count + 1)]
    seen = collections.Counter(h for s in slices for h in s)
    assert set(seen) == set(FLEET) and set(seen.values()) == {1}


def test_each_class_is_spread_evenly_and_the_split_is_the_same_everywhere():
    slices = [slice_hosts(list(reversed(FLEET)), 3, i) for i in (1, 2, 3)]  # the inventory's order does not matter
    assert slices == [slice_hosts(FLEET, 3, i) for i in (1, 2, 3)]
    for prefix in ("cpu-", "gpu-", "etcd-events-"):
        sizes = [len([h for h in s if h.startswith(prefix)]) for s in slices]
        assert max(sizes) - min(sizes) <= 1, (prefix, sizes)


@pytest.mark.parametrize("count,index,message", [
    (0, 1, "count must be 1 or more, got 0"),
    (3, 4, "index must be 1 to 3 \\(count\\), got 4"),
    (3, 0, "index must be 1 to 3"),
    ("three", 1, "count and index must be whole numbers"),
])
def test_a_slice_that_does_not_exist_is_refused(count, index, message):
    with pytest.raises(SliceError, match=message):
        parse_slice(count, index)
