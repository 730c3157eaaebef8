"""Command line: python -m export model.pkl [-o model.onnx] [--opset N] [--import MODULE] [--verify] [...].

Every bad input (a missing, empty, corrupt or hostile file, a malformed payload, an unwritable target) is one
``error:`` line on stderr and a non-zero exit status, never a traceback.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from export import opsets, quantize, triton, writer
from export.registry import ExportError

if TYPE_CHECKING:
    from collections.abc import Sequence

EXIT_EXPORT_FAILED = 1
EXIT_USAGE = 2
EXIT_VERIFY_FAILED = 3


def parser() -> argparse.ArgumentParser:
    """The argument parser; ``--help`` documents every option."""
    p = argparse.ArgumentParser(
        prog="python -m export",
        description="Export a saved kgraph model (.pkl) or a Keras 3 .keras file to an ONNX graph that onnxruntime runs with the same "
                    "numbers. The batch axis of every input and output is dynamic.",
        epilog=f"Exit status: 0 success, {EXIT_EXPORT_FAILED} the model could not be loaded or exported (nothing "
               f"written), {EXIT_USAGE} bad arguments (a module given with --import that fails to import included), "
               f"{EXIT_VERIFY_FAILED} --verify found differences beyond tolerance.")
    p.add_argument("model", help="a model file written by kgraph's model.save() (.pkl), or a Keras 3 .keras archive "
                                 "(read without Keras; no code in it is run)")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="the .onnx file to write (default: the model path with the suffix .onnx); written "
                        "atomically, so an existing file survives a failed export; the model file itself is "
                        "refused")
    p.add_argument("--opset", type=int, metavar="N",
                   help=f"the ai.onnx opset to target, from {opsets.MIN_OPSET} to the newest the installed "
                        f"onnx and onnxruntime support (default: {opsets.DEFAULT_OPSET}); the model's IR version "
                        "follows from it")
    p.add_argument("--import", action="append", dest="imports", default=[], metavar="MODULE",
                   help="import MODULE (e.g. my_layers, or a package's my_pkg.layers) before loading the model, so "
                        "the custom layer classes and converters it defines are registered; repeatable; the "
                        "current directory is importable. The model file itself is still read only as plain "
                        "data: nothing is imported that is not named here")
    weights = p.add_mutually_exclusive_group()
    weights.add_argument("--quantize", choices=["dynamic"],
                         help="dynamic: int8 weights (onnxruntime.quantization.quantize_dynamic; activations "
                              "quantized at run time), about 4x smaller; inputs and outputs stay float32")
    weights.add_argument("--fp16", action="store_true",
                         help="float16 weights and activations with float32 inputs and outputs kept (needs the "
                              f"extra: pip install 'kgraph[{quantize.FP16_EXTRA}]'); about 2x smaller")
    p.add_argument("--verify", action="store_true",
                   help="after writing, run the native model and onnxruntime (graph optimizations on and off) on "
                        "seeded random inputs at batch 0, 1 and 3 (and a second length of any dynamic axis), "
                        "print the max absolute and relative difference of every output, and exit non-zero "
                        "beyond tolerance (float32: rtol=atol=1e-5, looser where a layer's converter declares it; "
                        "int8: atol 0.1 of each output's scale; fp16: rtol 0.01, atol 0.01 of the scale). Batch 0 "
                        "runs in a child process: an onnxruntime abort there is reported as a finding naming the "
                        "node and does not fail the check")
    p.add_argument("--verify-data", metavar="FILE.npz",
                   help="with --verify (implied): also report the accuracy of the native model and of the ONNX "
                        "file on a labelled set, an .npz with one array per model input (named after it, or x) "
                        "and the labels y (class ids or one-hot)")
    p.add_argument("--triton-repo", metavar="DIR",
                   help="also write a Triton model repository entry: DIR/NAME/config.pbtxt (platform "
                        "onnxruntime_onnx, dynamic batching) and DIR/NAME/1/model.onnx")
    p.add_argument("--model-name", metavar="NAME",
                   help="the model's name in the Triton repository (default: the model file name without its "
                        "suffix); needs --triton-repo")
    p.add_argument("--max-batch-size", type=int, metavar="N",
                   help=f"max_batch_size in config.pbtxt (default: {triton.DEFAULT_MAX_BATCH_SIZE}); needs "
                        "--triton-repo")
    return p


def _same_file(a, b):
    """Whether paths ``a`` and ``b`` name one file (``b`` need not exist)."""
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    return os.path.realpath(a) == os.path.realpath(b)


def _fail(message, status=EXIT_EXPORT_FAILED):
    print(f"error: {message}", file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    p = parser()
    args = p.parse_args(argv)
    if args.triton_repo is None and (args.model_name is not None or args.max_batch_size is not None):
        p.error("--model-name and --max-batch-size only apply with --triton-repo DIR")
    if args.max_batch_size is not None and args.max_batch_size < 1:
        p.error(f"--max-batch-size must be a positive integer, got {args.max_batch_size}")
    try:
        opset = opsets.resolve_opset(args.opset)
    except ExportError as err:
        p.error(str(err))
    output = args.output or os.path.splitext(args.model)[0] + ".onnx"
    if _same_file(args.model, output):
        return _fail(f"The output '{output}' is the model file itself; refusing to overwrite the model with "
                     "ONNX. Expected another path with -o, e.g. -o model.onnx.", EXIT_USAGE)

    from export.loading import LoadError, import_modules, load
    try:
        import_modules(args.imports)
    except LoadError as err:
        return _fail(err, EXIT_USAGE)
    try:
        model = load(args.model)
    except LoadError as err:
        return _fail(err)

    from export.exporter import check, to_onnx
    from export.verify import verify
    weights = "int8" if args.quantize else "fp16" if args.fp16 else None
    try:
        proto = to_onnx(model, output if weights is None else None, opset=opset, source=args.model)
        if weights is not None:
            proto = quantize.convert(proto, weights)
            writer.save(proto, output)
    except OSError as err:
        # Named after the file asked for, not the temporary file written beside it first.
        return _fail(f"Cannot write '{output}': {err.strerror or err}.")
    except ValueError as err:  # ExportError and the builder's naming errors
        return _fail(err)
    except Exception as err:  # noqa: BLE001  (a loadable but inconsistent config can fail inside a converter)
        return _fail(f"Cannot export '{args.model}': {type(err).__name__}: {err}")
    described = "" if weights is None else f", {weights} weights"
    print(f"wrote {output} (opset {opset}, {len(proto.graph.node)} nodes{described})")
    if args.triton_repo is not None:
        name = args.model_name or os.path.splitext(os.path.basename(args.model))[0]
        try:
            path = triton.write_repository(proto, args.triton_repo, name,
                                           args.max_batch_size or triton.DEFAULT_MAX_BATCH_SIZE,
                                           check=check if weights is None else None)
        except OSError as err:
            return _fail(f"Cannot write the Triton repository '{args.triton_repo}': {err.strerror or err}.")
        except ValueError as err:
            return _fail(err)
        print(f"wrote {os.path.join(args.triton_repo, name, 'config.pbtxt')} and {path}")
    if args.verify or args.verify_data:
        report = verify(model, output, weights=weights)
        if args.verify_data:
            from export.accuracy import accuracy
            try:
                print(accuracy(model, output, args.verify_data))
            except ExportError as err:
                return _fail(err)
        if not report.ok:
            return EXIT_VERIFY_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
