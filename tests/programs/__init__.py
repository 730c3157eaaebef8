import os

if os.environ.get("KGRAPH_REPLAY_COVERAGE"):  # `python -m tests.programs.report --replay`: see replay_coverage.py
    from tests.programs import replay_coverage
    replay_coverage.install(os.environ["KGRAPH_REPLAY_COVERAGE"])
