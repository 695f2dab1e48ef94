"""The lab reads its Debian mirror from the machine's apt sources, in either format."""

import pytest

import lab


def test_deb822_sources_skip_security():
    security = "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\nComponents: main\n"
    main = "Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm bookworm-updates\nComponents: main\n"
    assert lab.parse_apt_sources("", [security + "\n" + main]) == "http://mirror.example/debian"


def test_one_line_sources():
    text = "# comment\ndeb [arch=amd64] http://m.example/debian bookworm main\n"
    assert lab.parse_apt_sources(text, []) == "http://m.example/debian"


def test_disabled_stanza_and_no_mirror():
    text = "Types: deb\nEnabled: no\nURIs: http://m.example/debian\nSuites: bookworm\n"
    with pytest.raises(lab.LabError, match="no Debian bookworm mirror"):
        lab.parse_apt_sources("", [text])


def test_node_counts_from_environment(monkeypatch):
    monkeypatch.setenv("LAB_CPU_NODES", "4")
    nodes = lab.wanted_nodes()
    assert [n["name"] for n in nodes if n["group"] == "kube_node_cpu"] == ["cpu-%d" % i for i in range(1, 5)]
    monkeypatch.setenv("LAB_CPU_NODES", "four")
    with pytest.raises(lab.LabError, match="LAB_CPU_NODES"):
        lab.wanted_nodes()
