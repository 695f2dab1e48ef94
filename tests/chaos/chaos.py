"""A controller killed inside a multi-step transaction, then a plain re-run: does the lab converge, with nothing lost?

Each Transaction names a playbook run that has work to do once `prepare` has put its node where the collection finds
it before that tuning (a member on the OS disk, a wiped SSD, images gone, a setting the run changes), the task-name
prefixes the transaction runs through (`steps`), and what must hold once a plain re-run converged (`verify`).

A round, from its seed:
  1. prepare;
  2. start the run (its own ssh ControlPath directory, in a session of its own);
  3. when the default callback prints the banner of the step the seed picked (`TASK [<step>`), wait the seed's delay
     (0 to `window` seconds) or, when the step ends sooner, until the banner of the next task of another name
     (KillClock), then SIGKILL ansible-playbook, its forks and its ssh connections (their control masters included,
     found by the round's ControlPath directory) - the controller gone. Every round kills: a run that ends first fails
     the round. The module the controller started on the node runs on to its end (pipelining, no tty). With the seed's
     other choice every process sshd started for a command on the node is killed as well (found by sshd's unit), as
     when the node tears the session down with the connection (systemd-logind's KillUserProcesses): the module and its
     children stop wherever they were on the node too;
  4. the same run again, unchanged: it must succeed;
  5. verify: every etcd key on every member, every image present, no runtime store half-moved, the API server
     answering - whatever the transaction protects;
  6. restore, when the transaction changed a setting the lab's site run would change back (run without the kill).

`python -m tests.chaos.chaos --transaction NAME --seed SEED` replays one round; a failing round prints that line.
"""

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
           ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"), ANSIBLE_FORCE_COLOR="0", PY_COLORS="0")


# The default callback's banner of a task, as it starts: "TASK [<role> : <name>] ****" or "TASK [<name>] ****".
BANNER = re.compile(r"^TASK \[(.*)\] \*+$")


class RoundFailed(AssertionError):
    """A round that did not converge; its message carries the replay command."""


@dataclass
class Transaction:
    name: str
    host: str
    argv: List[str]  # ansible-playbook's arguments (the run killed, then run again)
    steps: List[str]  # task-name prefixes inside the transaction, in the order it runs them ("<prefix>#2": its 2nd)
    verify: Callable[[], None]
    prepare: Callable[[], None] = lambda: None
    restore: Optional[List[str]] = None  # ansible-playbook's arguments of the run that puts the lab's setting back
    after_restore: Optional[Callable[[], None]] = None  # what holds after that run
    cleanup: Optional[Callable[[], None]] = None  # puts back by hand what no run of the lab's settings would
    window: float = 3.0  # the kill lands 0 to `window` s after the step's banner, or as a task of another name starts
    stream: str = ""  # which of make lab-test's streams owns the transaction's nodes


@dataclass
class Outcome:
    transaction: str
    seed: int
    step: str
    delay: float
    node_killed: bool
    killed_in: str = ""  # the last banner printed before the kill
    killed: bool = False  # False: the run ended before the kill was due
    killed_after: float = 0.0  # seconds from the step's banner to the kill
    cut_short: bool = False  # the step ended before the seed's delay: the kill landed as a task of another name began
    node_processes: int = 0  # how many processes of the node's ssh sessions (a module still running) it killed
    rerun_s: float = 0.0
    log: List[str] = field(default_factory=list)

    def replay(self):
        return "python -m tests.chaos.chaos --transaction %s --seed %d" % (self.transaction, self.seed)

    def line(self):
        if not self.killed:
            return "%s seed %d: the run ended before the kill (%s +%.1fs) was due" % (
                self.transaction, self.seed, self.step, self.delay)
        where = ("as TASK [%s] started, %.1fs after TASK [%s] (the seed's %.1fs outlasted that step)"
                 % (self.killed_in, self.killed_after, self.step, self.delay) if self.cut_short
                 else "%.1fs into TASK [%s]" % (self.killed_after, self.killed_in))
        return "%s seed %d: killed %s%s; the re-run converged in %.0fs" % (
            self.transaction, self.seed, where,
            " with the node's ssh sessions (%d processes)" % self.node_processes if self.node_killed else "",
            self.rerun_s)


def playbook(*argv, check=True, env=None):
    """ansible-playbook `argv` from the repo's root; `env` adds to the environment (ANSIBLE_STDOUT_CALLBACK=json, to
    read the results as data)."""
    proc = subprocess.run(["ansible-playbook"] + list(argv), cwd=REPO, env=dict(ENV, **(env or {})),
                          capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise RoundFailed("ansible-playbook %s failed:\n%s" % (" ".join(argv), proc.stdout[-4000:]))
    return proc


def node(name, *argv, check=True, stdin=None):
    proc = subprocess.run(["docker", "exec"] + (["-i"] if stdin is not None else []) + ["kslab-" + name]
                          + list(argv), capture_output=True, text=True, check=False, input=stdin)
    if check and proc.returncode != 0:
        raise RoundFailed("%s: %s failed: %s" % (name, " ".join(argv), proc.stderr.strip()[-2000:]))
    return proc


def _kill_controller(proc, control_dir):
    """SIGKILL ansible-playbook's session (its forks, their ssh clients) and the ssh control masters of this round
    (they leave the session when they daemonize; their title names the ControlPath, in control_dir)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    out = subprocess.run(["pgrep", "-f", re.escape(control_dir)], capture_output=True, text=True, check=False)
    for pid in out.stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


# The unit sshd runs under on the lab's nodes: without a logind session, what sshd forks for a command stays in it.
SSH_UNIT = "ssh.service"
# sshd itself: its listener and its per-connection processes ("sshd: root@notty").
SSHD = re.compile(r"^(sshd: |/usr/sbin/sshd\b)")


def ssh_command_pids(ps_lines):
    """The processes of the commands sshd runs (ansible's modules and their children: etcdctl, rsync, ...), read from
    `ps -eo pid=,unit=,args=`: every process of sshd's unit that is not sshd itself (its listener, and the
    per-connection processes other controllers' connections still hold). Once the controller's connection is gone
    sshd's per-connection process exits and the module's shell is reparented to init, so neither the parent nor the
    command line finds it (with pipelining the module is a bare `/usr/bin/python3`); its unit does."""
    found = []
    for line in ps_lines:
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0].isdigit() and parts[1] == SSH_UNIT and not SSHD.match(parts[2]):
            found.append(int(parts[0]))
    return sorted(found)


def _kill_node_sessions(host):
    """The node's side of the connection torn down too (systemd-logind's KillUserProcesses): every process sshd
    started for a command - the module wherever it was, and its children - SIGKILLed. Returns how many it found."""
    found = set()
    for _attempt in range(3):  # a process forked while kill runs is caught by the next pass
        pids = ssh_command_pids(node(host, "ps", "-eo", "pid=,unit=,args=").stdout.splitlines())
        if not pids:
            break
        found.update(pids)
        node(host, "kill", "-KILL", *[str(pid) for pid in pids], check=False)
    return len(found)


def step_target(step):
    """A step's task-name prefix, and which task starting with it the kill waits for ("<prefix>#2": the 2nd)."""
    prefix, _sep, nth = step.partition("#")
    return prefix, int(nth or 1)


class KillClock:
    """When a round's kill lands, from the banners the run prints: armed at the step's banner (the `nth` task whose
    name starts with `prefix`), due the round's delay later (kill_round's timer) - or at the banner of the first task
    after it whose name does not start with `prefix`, when that comes first. The kill then lands as that task starts,
    still inside the run, where a fixed delay would let a fast step's run end unkilled. Banners that share the prefix
    (an include's, then its task's; a check-mode twin's; the next batch's) are the step still."""

    def __init__(self, prefix, nth):
        self.prefix, self.nth = prefix, nth
        self.seen = 0
        self.armed_at = None
        self.done = False

    def banner(self, name, now):
        """A task's banner (`name`, at monotonic `now`): "arm" when it is the step's (start the delay), "fire" when it
        is the first one after the step's that is not the step's own (kill now, the delay not run out), else None."""
        if self.done:
            return None
        if self.armed_at is not None:
            if name.startswith(self.prefix):
                return None
            self.done = True
            return "fire"
        self.seen += name.startswith(self.prefix)
        if self.seen == self.nth:
            self.armed_at = now
            return "arm"
        return None


def kill_round(tx: Transaction, seed: int, out=None) -> Outcome:
    """One round of `tx` from `seed`; raises RoundFailed (with the replay command) when it does not converge."""
    rng = random.Random(seed)
    step = tx.steps[rng.randrange(len(tx.steps))]
    prefix, nth = step_target(step)
    delay = round(rng.uniform(0, tx.window), 2)
    node_killed = rng.random() < 0.5
    outcome = Outcome(tx.name, seed, step, delay, node_killed)
    try:
        tx.prepare()
        control_dir = tempfile.mkdtemp(prefix="kubescale-chaos-cp-")
        env = dict(ENV, ANSIBLE_SSH_CONTROL_PATH_DIR=control_dir)
        proc = subprocess.Popen(["ansible-playbook"] + tx.argv, cwd=REPO, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        clock = KillClock(prefix, nth)
        fire_lock = threading.Lock()
        last = [""]

        def fire(cut_short=False):
            with fire_lock:  # the timer's thread and the banner that cuts the step short may both try
                if outcome.killed or proc.poll() is not None:
                    return
                outcome.killed_in, outcome.killed, outcome.cut_short = last[0], True, cut_short
                outcome.killed_after = round(time.monotonic() - clock.armed_at, 2)
                _kill_controller(proc, control_dir)
                if node_killed:
                    outcome.node_processes = _kill_node_sessions(tx.host)

        timer = None
        for line in proc.stdout:
            outcome.log.append(line.rstrip("\n"))
            match = BANNER.match(line.rstrip())
            if not match:
                continue
            last[0] = match.group(1).split(" : ", 1)[-1]  # a role's task: "<role> : <name>"
            action = clock.banner(last[0], time.monotonic())
            if action == "arm":
                timer = threading.Timer(delay, fire)
                timer.start()
            elif action == "fire":
                timer.cancel()
                fire(cut_short=True)
        proc.wait()
        if timer is not None:
            timer.cancel()
            timer.join()  # a kill under way finishes (the node's processes too) before the re-run starts
        _kill_controller(proc, control_dir)  # no control master outlives the round
        shutil.rmtree(control_dir, ignore_errors=True)
        if clock.armed_at is None:
            raise RoundFailed("step %r never started:\n%s" % (step, "\n".join(outcome.log[-60:])))
        if not outcome.killed:
            raise RoundFailed("the run ended %s before the kill was due: no task of another name started after the "
                              "step\n%s"
                              % ("successfully" if proc.returncode == 0 else "failing",
                                 "\n".join(outcome.log[-60:])))
        started = time.time()
        playbook(*tx.argv)
        outcome.rerun_s = time.time() - started
        tx.verify()
        if tx.restore:
            playbook(*tx.restore)
            (tx.after_restore or tx.verify)()
        if tx.cleanup:
            tx.cleanup()
    except (AssertionError, subprocess.SubprocessError, OSError) as exc:
        raise RoundFailed("%s\nchaos round failed: %s\nreplay it with: %s"
                          % (exc, outcome.line(), outcome.replay())) from exc
    # sys.stdout as it is now: under pytest's capsys.disabled() the terminal, where an import-time default would be
    # pytest's capture and the line would be lost
    print("chaos: " + outcome.line(), file=out or sys.stdout, flush=True)
    return outcome


def seeds(rounds, base=None):
    """The rounds' seeds: from CHAOS_SEED (or `base`) when given, else from the clock; printed by each round."""
    base = base if base is not None else int(os.environ.get("CHAOS_SEED") or time.time() * 1000) % (2 ** 31)
    return [base + i for i in range(rounds)]


def rounds_wanted():
    return int(os.environ.get("CHAOS_ROUNDS", "1"))


def main(argv=None):
    from tests.chaos import transactions

    ap = argparse.ArgumentParser(prog="python -m tests.chaos.chaos", description=__doc__.split("\n", 1)[0])
    ap.add_argument("--transaction", action="append", choices=sorted(transactions.ALL),
                    help="one transaction (repeat for more; every one by default)")
    ap.add_argument("--seed", type=int, help="the first round's seed (the clock's by default)")
    ap.add_argument("--rounds", type=int, default=1, help="rounds per transaction")
    args = ap.parse_args(argv)
    names = args.transaction or sorted(transactions.ALL)
    survived = {}
    for name in names:
        for seed in seeds(args.rounds, args.seed):
            kill_round(transactions.ALL[name](), seed)
            survived[name] = survived.get(name, 0) + 1
    print("chaos: rounds survived: " + ", ".join("%s %d" % kv for kv in survived.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
