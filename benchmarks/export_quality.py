"""Export quality: graph size and onnxruntime speed of the export zoo, weight formats, SimpleRNN lowerings.

Run from the repository root:
``python benchmarks/export_quality.py [--sections zoo weights rnn] [--models NAME ...] [--runs N]``.

- zoo: for each zoo model, ONNX node count, Transpose count, export seconds,
  onnxruntime batch-1 latency (median µs per call) and batch-64 throughput
  (rows/s), and the same two numbers for native ``model.predict``.
- weights: an MLP, a CNN and an LSTM trained on scikit-learn's digits, each
  exported as float32, float16 (``--fp16``) and int8 (``--quantize dynamic``):
  file size, batch-1 and batch-64 latency, hold-out accuracy, side by side.
- rnn: SimpleRNN as onnxruntime's RNN node, as a Scan loop and unrolled
  (fixed time axis), at batch 1 and 64 (the figures behind the export rule).

onnxruntime runs on CPU with all graph optimizations and default threads.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import export_lowering  # noqa: E402
import export_weights  # noqa: E402

from export import to_onnx  # noqa: E402
from export.exporter import functional_of  # noqa: E402
from export.verify import make_inputs, session  # noqa: E402
from tests.export import zoo  # noqa: E402

REFERENCE = ("Reference, Keras 3.15 exporting through its torch backend: 23 nodes for a 3-Dense MLP, "
             "52 nodes (8 Transposes) for a 2-conv CNN.")


def _median_seconds(fn, runs):
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _rows_per_second(fn, rows, min_seconds=0.3):
    fn()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_seconds:
        fn()
        calls += 1
    return calls * rows / (time.perf_counter() - start)


def _native_input(model, feeds):
    functional = functional_of(model)
    arrays = [feeds[name] for name in functional.input_names]
    if isinstance(functional._inputs_struct, dict):
        return dict(zip(functional.input_names, arrays))
    return arrays[0] if len(arrays) == 1 else arrays


def measure(name, runs):
    """One table row for zoo model ``name``."""
    model = zoo.build(name)
    proto = to_onnx(model)
    export_s = _median_seconds(lambda: to_onnx(model), 5)
    sess = session(proto, "ORT_ENABLE_ALL")
    one, many = make_inputs(model, 1, seed=1), make_inputs(model, 64, seed=2)
    x_one, x_many = _native_input(model, one), _native_input(model, many)
    return {
        "model": name,
        "nodes": len(proto.graph.node),
        "transposes": sum(n.op_type == "Transpose" for n in proto.graph.node),
        "export_s": export_s,
        "ort_b1_us": 1e6 * _median_seconds(lambda: sess.run(None, one), runs),
        "native_b1_us": 1e6 * _median_seconds(lambda: model.predict(x_one, verbose=0), max(runs // 10, 20)),
        "ort_b64_rows_s": _rows_per_second(lambda: sess.run(None, many), 64),
        "native_b64_rows_s": _rows_per_second(lambda: model.predict(x_many, batch_size=64, verbose=0), 64),
    }


COLUMNS = [("model", "{:<24}"), ("nodes", "{:>6}"), ("transposes", "{:>10}"), ("export_s", "{:>9.4f}"),
           ("ort_b1_us", "{:>10.1f}"), ("native_b1_us", "{:>12.1f}"), ("ort_b64_rows_s", "{:>14,.0f}"),
           ("native_b64_rows_s", "{:>17,.0f}")]


def format_table(rows):
    """The rows as a Markdown table."""
    lines = ["| " + " | ".join(name for name, _ in COLUMNS) + " |",
             "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(fmt.format(row[name]).strip() for name, fmt in COLUMNS) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", nargs="*", choices=["zoo", "weights", "rnn"], default=["zoo", "weights", "rnn"])
    parser.add_argument("--models", nargs="*", help="zoo model names (default: every zoo model)")
    parser.add_argument("--runs", type=int, default=2000, help="onnxruntime batch-1 calls timed per model")
    args = parser.parse_args(argv)
    if "zoo" in args.sections:
        names = args.models or [n for n in zoo.names() if zoo.entry(n).benchmark]
        print(format_table([measure(name, args.runs) for name in names]))
        print()
        print(REFERENCE)
        print()
    if "weights" in args.sections:
        print(export_weights.report(_median_seconds))
        print()
    if "rnn" in args.sections:
        print(export_lowering.report(_median_seconds))


if __name__ == "__main__":
    main()
