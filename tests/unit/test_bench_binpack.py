"""bench/binpack.py's table: what a cell says of the pods no node could take."""

from bench.binpack import left_summary, size_of


def test_pods_left_are_counted_by_gpus_and_as_one_cpu_range():
    left = {}
    for spec in ({"cpu": 20, "memory": 200, "gpu": 4}, {"cpu": 20, "memory": 200, "gpu": 4},
                 {"cpu": 5, "memory": 50, "gpu": 1}, {"cpu": 13.5, "memory": 99, "gpu": 0},
                 {"cpu": 16, "memory": 42, "gpu": 0}, {"cpu": 16, "memory": 42, "gpu": 0}):
        left[size_of(spec)] = left.get(size_of(spec), 0) + 1
    assert left_summary(left) == "2 x 4-GPU, 1 x 1-GPU, 3 CPU pods of 13.5-16 CPU"


def test_nothing_left_is_an_empty_cell():
    assert left_summary({}) == ""
