"""The measure: ``python -m tests.programs.report [PROGRAM ...] [--jobs N] [--details]``.

Runs the programs (all by default) as the tests do and prints one row per program: whether it runs under
kgraph, whether its numbers match real Keras after the weight copy, and whether its saved model exports with
``python -m export NAME.keras --verify``; then the totals and every failure's first line (``--details``: the
whole message). The cells are what happened, whatever the expectations of test_programs.py say; a cell
that disagrees with them is marked ``!``. ``--replay`` adds how much of the kgraph runs' ``fit``, ``evaluate`` and
``predict`` the step replay took, and why the rest ran as written (``replay_coverage.py``).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys

from tests.programs import expectations, replay_coverage
from tests.programs.harness import CHECKS, FAIL, PASS, SKIP, Suite, program_names

CELL = {PASS: "yes", FAIL: "NO", SKIP: "skip"}
COLUMNS = {"runs": "runs under kgraph", "matches": "matches Keras", "exports": "exports"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.programs.report", description=__doc__.splitlines()[0])
    p.add_argument("programs", nargs="*", help="program names (default: every p_*.py)")
    p.add_argument("--jobs", type=int, default=3, help="kgraph children run side by side (default 3; a child "
                                                       "waiting for the Keras reference uses no CPU)")
    p.add_argument("--workdir", help="keep the children's files (models, ONNX files, results) in this folder")
    p.add_argument("--details", action="store_true", help="print each failure's whole message")
    p.add_argument("--replay", action="store_true", help="also say how much of fit, evaluate and predict replayed")
    args = p.parse_args(argv)
    names = args.programs or program_names()
    suite = Suite(names, jobs=args.jobs, workdir=args.workdir)
    coverage = suite.workdir / "replay_coverage.jsonl"
    if args.replay:
        os.environ["KGRAPH_REPLAY_COVERAGE"] = str(coverage)  # read by each child (tests/programs/__init__.py)
    try:
        results = suite.run()
        replayed = replay_coverage.summary(coverage) if args.replay else []
    finally:
        os.environ.pop("KGRAPH_REPLAY_COVERAGE", None)
        if not args.workdir:
            shutil.rmtree(suite.workdir, ignore_errors=True)

    rows, failures, skips = [], [], []
    totals = {c: {PASS: 0, FAIL: 0, SKIP: 0} for c in COLUMNS}
    surprises = 0
    for name in names:
        r = results[name]
        cells = []
        for check in COLUMNS:
            status, message = CHECKS[check](r, suite)
            totals[check][status] += 1
            expected_fail = expectations.reason(name, check) is not None
            mark = ""
            if (status == FAIL) != expected_fail and status != SKIP:
                mark = "!"
                surprises += 1
            cells.append(CELL[status] + mark)
            if status == FAIL:
                failures.append((name, check, message))
            elif status == SKIP:
                skips.append((name, check, message))
        rows.append((name, *cells, f"{r.seconds:.1f}"))

    header = ("program", *COLUMNS.values(), "s")
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |"
    print(line)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths)) + " |")
    print()
    for check, title in COLUMNS.items():
        t = totals[check]
        print(f"{title}: {t[PASS]} yes, {t[FAIL]} no, {t[SKIP]} skipped (of {len(names)})")
    print(f"wall time {suite.seconds:.0f} s; cells marked ! disagree with the expectations in "
          f"tests/programs/expectations.py ({surprises})")
    if replayed:
        print("\nReplay (kgraph/trainers/replay.py; models per kind of call, batch signatures of the replayable ones):")
        print("\n".join("  " + line for line in replayed))
    if skips:
        print("\nSkipped:")
        for name, check, message in skips:
            print(f"  {name} [{check}]: {message.splitlines()[0]}")
    groups: dict[str, list[str]] = {}
    unexplained = []
    for name, check, message in failures:
        label = expectations.cause(name, check)
        if label is None:
            unexplained.append((name, check, message))
        else:
            blocked = expectations.reason(name, check).startswith(expectations.BLOCKED)
            groups.setdefault(label, []).append(f"{name}[{check}]" + (" (blocked)" if blocked else ""))
    if groups:
        print(f"\nRoot causes of the {sum(map(len, groups.values()))} expected failures "
              f"({len(groups)} causes; '(blocked)': the program does not run, so the check cannot):")
        for label, cells in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            print(f"\n  {label} ({len(cells)}): {', '.join(cells)}")
            print("    " + expectations.CAUSES.get(label, ""))
    if unexplained:
        print("\nFailures not explained in expectations.py:")
        for name, check, message in unexplained:
            text = message if args.details else message.splitlines()[0]
            print(f"  {name} [{check}]: {text}")
    if args.details and failures:
        print("\nEvery failure's message:")
        for name, check, message in failures:
            print(f"  {name} [{check}]: {message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
