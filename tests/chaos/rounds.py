"""The pytest side of the chaos harness: CHAOS_ROUNDS rounds (1 in make test, more in make bench) of each
transaction a stream owns, seeded from CHAOS_SEED or the clock; every round prints its seed and where the kill landed."""

import pytest

from tests.chaos import chaos, transactions


def rounds(names):
    """pytest parameters: (transaction name, seed) for each round of each of `names`."""
    return [pytest.param(name, seed, id="%s-seed%d" % (name, seed))
            for name in names for seed in chaos.seeds(chaos.rounds_wanted())]


def run(name, seed, capsys):
    with capsys.disabled():
        print()
        chaos.kill_round(transactions.ALL[name](), seed)
