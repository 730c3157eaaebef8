"""Peak RSS and time of loading each hostile model file, with the loaders of a base revision and of this tree.

Each (file, loader) pair runs in its own child process under an address-space limit and a timeout, so a loader that
allocates what a file declares fails or is killed instead of taking the machine. The files are those of
tests/kgraph/saving/test_hostile_files.py, some of them larger (``--deflate-mb``, ``--h5-elements``) to match the
sizes in the issue. The base revision (``--base``, default HEAD) is checked out with ``git archive`` into a
temporary folder put first on the child's PYTHONPATH.

    python benchmarks/hostile_files.py [--base HEAD] [--timeout 20] [--address-gb 8]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOADERS = ("kgraph", "export")


def _child(path, loader):
    """In the child: load ``path`` with ``loader``; print the outcome as one JSON line."""
    if loader == "kgraph":
        import kgraph
        load = kgraph.load_model
    else:
        from export import loading
        load = loading.load
    began = time.perf_counter()
    try:
        load(path)
        outcome, message = "loaded", ""
    except BaseException as err:  # noqa: BLE001  (what escapes is what is measured)
        outcome, message = type(err).__name__, str(err)
    print(json.dumps({"outcome": outcome, "message": " ".join(message.split())[:160],
                      "seconds": time.perf_counter() - began}), flush=True)


def _run(tree, path, loader, timeout, address):
    """One child on ``tree``: its report and its peak RSS in MiB (from the kernel's accounting of the child)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (address, address))
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1")
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, __file__, "--child", path, loader], cwd=tree, env=env,
                                preexec_fn=limit, stdout=out, stderr=err, text=True)
        deadline, killed = time.monotonic() + timeout, False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                _, status, usage = os.wait4(proc.pid, 0)
                killed = True
                break
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, so Popen does not wait again
        out.seek(0)
        err.seek(0)
        lines, errors = out.read().splitlines(), err.read().strip().splitlines()
    if killed:
        report = {"outcome": f"killed after {timeout:.0f} s", "seconds": timeout}
    elif lines:
        report = json.loads(lines[-1])
    else:
        report = {"outcome": f"died: {(errors or ['exit ' + str(proc.returncode)])[-1]}", "seconds": float("nan")}
    return report, usage.ru_maxrss / 1024


def _files(folder, args):
    sys.path.insert(0, str(ROOT))
    from tests.kgraph.saving import test_hostile_files as hostile
    makers = {name: make for name, (make, _, _) in hostile.HOSTILE.items()}
    makers["deflate_bomb"] = lambda: hostile.deflate_bomb_keras(args.deflate_mb)
    makers["h5_filter_bomb"] = lambda: hostile._keras_archive(hostile._keras_dense(3, 4), hostile._h5(
        lambda f: (hostile._small_weights(f), f.create_dataset("optimizer/vars/0", shape=(args.h5_elements,),
                                                               dtype="float32", chunks=(1 << 20,),
                                                               compression="gzip"))))
    paths = {}
    for name, make in makers.items():
        paths[name] = os.path.join(folder, f"{name}.{hostile.HOSTILE[name][1]}")
        with open(paths[name], "wb") as f:
            f.write(make())
    empty = os.path.join(folder, "baseline.pkl")
    with open(empty, "wb") as f:
        f.write(b"")
    return {"baseline (empty file)": empty, **paths}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD", help="git revision measured as 'before' (default HEAD)")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per load before the child is killed")
    parser.add_argument("--address-gb", type=float, default=8.0, help="address-space limit of each child, GiB")
    parser.add_argument("--deflate-mb", type=int, default=500, help="MB the deflate bomb's weights inflate to")
    parser.add_argument("--h5-elements", type=int, default=500_000_000, help="float32 elements of the h5 bomb")
    parser.add_argument("--only", nargs="*", help="file names to run (default: all)")
    args = parser.parse_args()
    address = int(args.address_gb * (1 << 30))
    with tempfile.TemporaryDirectory(prefix="hostile-") as folder:
        base = os.path.join(folder, "base")
        os.makedirs(base)
        archive = subprocess.run(["git", "archive", args.base], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", base], input=archive, check=True)
        os.makedirs(os.path.join(folder, "files"))
        files = _files(os.path.join(folder, "files"), args)
        print(f"{'file':24} {'bytes':>9} {'loader':7} | {'before: outcome':34} {'s':>6} {'MiB':>6} | "
              f"{'after: outcome':22} {'s':>6} {'MiB':>6}")
        for name, path in files.items():
            if args.only and name not in args.only and not name.startswith("baseline"):
                continue
            for loader in LOADERS:
                row = []
                for tree in (base, str(ROOT)):
                    report, peak = _run(tree, path, loader, args.timeout, address)
                    row.append((report["outcome"], report.get("seconds", args.timeout), peak))
                (b_out, b_s, b_mb), (a_out, a_s, a_mb) = row
                print(f"{name:24} {os.path.getsize(path):>9} {loader:7} | {b_out[:34]:34} {b_s:6.2f} {b_mb:6.0f} | "
                      f"{a_out[:22]:22} {a_s:6.2f} {a_mb:6.0f}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3])
    else:
        main()
