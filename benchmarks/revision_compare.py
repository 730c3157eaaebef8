"""kgraph's training throughput at two git revisions, side by side in one run (did a change slow ``fit``?).

Each revision trains ``train_throughput.py``'s models in its own worker
process (the revision's ``kgraph`` package, checked out with ``git archive``
into a temporary directory; the model definitions and data are this tree's).
The workers take turns, one epoch per round (who goes first alternates), and the
best round of each is reported, so a busy moment of a shared machine hits both alike.

    python benchmarks/revision_compare.py --baseline d7e8d54 [--candidate WORKTREE] [--models mlp,cnn,lstm]
        [--rounds 5]
"""
import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

WORKER = """
import sys
sys.path.insert(0, {root!r})
import kgraph  # this revision's package, imported before train_throughput puts this tree on the path
sys.path.insert(1, {bench!r})
import train_throughput as tt
assert kgraph.__file__.startswith({root!r}), kgraph.__file__
epoch = tt.kgraph_runner(dict(tt.MODELS[{model!r}]))
print("ready", flush=True)
for line in sys.stdin:
    print(epoch(), flush=True)
"""


def checkout(revision, into):
    """The ``kgraph`` package of ``revision`` unpacked under ``into``; returns that root."""
    archive = subprocess.run(["git", "-C", ROOT, "archive", "--format=tar", revision, "kgraph"],
                             capture_output=True, check=True).stdout
    path = os.path.join(into, "tree.tar")
    with open(path, "wb") as f:
        f.write(archive)
    with tarfile.open(path) as tar:
        tar.extractall(into, filter="data")
    return into


def start(root, model):
    proc = subprocess.Popen([sys.executable, "-c", WORKER.format(root=root, bench=HERE, model=model)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if proc.stdout.readline().strip() != "ready":
        raise RuntimeError(f"the worker for {root} did not start")
    return proc


def epoch(proc):
    # Let the other worker's BLAS threads stop spinning first (see floor.py's PAUSE_S).
    time.sleep(0.3)
    proc.stdin.write("go\n")
    proc.stdin.flush()
    return float(proc.stdout.readline())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="a git revision (e.g. a commit before the change)")
    parser.add_argument("--candidate", default=ROOT, help="the tree to compare (default: this working tree)")
    parser.add_argument("--models", default="mlp,cnn,lstm")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"{'model':<8}{'baseline':>12}{'candidate':>12}{'candidate/baseline':>20}")
    with tempfile.TemporaryDirectory() as tmp:
        base_root = checkout(args.baseline, tmp)
        for model in args.models.split(","):
            workers = [start(base_root, model), start(args.candidate, model)]
            best = [0.0, 0.0]
            try:
                for round_ in range(args.rounds):
                    # Who goes first alternates, so neither revision always runs right after the other.
                    for i in ((0, 1) if round_ % 2 == 0 else (1, 0)):
                        best[i] = max(best[i], epoch(workers[i]))
            finally:
                for proc in workers:
                    proc.stdin.close()
                    proc.wait()
            print(f"{model:<8}{best[0]:>12,.0f}{best[1]:>12,.0f}{best[1] / best[0]:>19.3f}x")
    print(f"(samples/s of one fit epoch, best of {args.rounds} alternating rounds; baseline {args.baseline})")


if __name__ == "__main__":
    main()
