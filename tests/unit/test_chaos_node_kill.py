"""The harness's "node's session torn down" kill finds ansible's work on the node by sshd's unit. By the time it runs,
the controller's connection is gone: sshd's per-connection process has exited, the module's shell is reparented to
init, and with pipelining the module's command line is a bare `/usr/bin/python3`."""

from tests.chaos import chaos

# `ps -eo pid=,unit=,args=` on a lab node just after the controller was killed inside an etcd_cluster task: one
# module still running etcdctl, another controller's idle connection (2443) and the harness's own `docker exec`.
PS = """\
      1 init.scope                      /sbin/init
     25 systemd-journald.service        /lib/systemd/systemd-journald
     41 ssh.service                     sshd: /usr/sbin/sshd -D [listener] 0 of 200-200 startups
    120 etcd-events.service             /usr/local/bin/etcd --name etcd-events-2
   1557 kubelet.service                 /usr/bin/python3 /usr/bin/kubelet --config=/var/lib/kubelet/config.yaml
   2443 ssh.service                     sshd: root@notty
   2464 ssh.service                     /bin/sh -c /usr/bin/python3 && sleep 0
   2465 ssh.service                     /usr/bin/python3
   2466 ssh.service                     /usr/local/bin/etcdctl member add etcd-events-2
   2374 -                               ps -eo pid=,unit=,args=
"""


def test_the_orphaned_module_and_its_children_are_found_by_sshd_s_unit():
    assert chaos.ssh_command_pids(PS.splitlines()) == [2464, 2465, 2466]


def test_sshd_itself_and_every_other_unit_are_left_alone():
    found = chaos.ssh_command_pids(PS.splitlines())
    assert not {1, 25, 41, 120, 1557, 2443, 2374} & set(found)


def test_nothing_running_over_ssh_finds_nothing():
    idle = [line for line in PS.splitlines() if not line.strip().startswith("246")]
    assert chaos.ssh_command_pids(idle + ["garbage", ""]) == []
