"""scripts/docs_check.py: commit hashes and session history are found in user docs, and nothing else is."""

import os

from scripts import docs_check


def found(text):
    return [p.split(": ", 1)[1] for p in docs_check.problems(os.path.join(docs_check.REPO, "x.md"), text)]


def test_an_abbreviated_or_full_commit_is_named_with_its_line():
    assert docs_check.problems(os.path.join(docs_check.REPO, "x.md"), "ok\nagainst `9e821b0` here") == [
        "x.md:2: a commit hash (9e821b0): name what it was, or put it in the changelog"]
    assert found("a" * 20 + "1" * 20) == ["a commit hash (%s): name what it was, or put it in the changelog"
                                          % ("a" * 20 + "1" * 20)]


def test_numbers_words_versions_and_paths_are_not_commits():
    assert found("8589934592 bytes, deadbeef, v1.36.3, sha256:0123abcd0123, bench/a1b2c3d4e.json, ab12cd3-x") == []


def test_session_history_is_found():
    assert found("measured in This session") == ["'this session' is history, not a user's doc"]


def test_a_table_cell_over_300_characters_is_found():
    assert found("| a | %s |" % ("x" * 300)) == []
    assert found("| a | %s |" % ("x" * 301)) == [
        "a table cell of 301 characters (at most 300): make it a paragraph or a list"]


def test_the_tree_passes():
    assert docs_check.main() == 0
