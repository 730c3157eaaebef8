"""Command line: kgraph-export (or python -m export) model.pkl [-o model.onnx] [--opset N] [--verify] [...].

Every bad input (a missing, empty, corrupt or hostile file, a malformed payload, an unwritable target) is one
``error:`` line on stderr and a non-zero exit status, never a traceback. kgraph, onnx and the exporter load only
once the arguments are checked, so ``--help`` and ``--version`` answer at once.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from export import __version__, defaults

if TYPE_CHECKING:
    from collections.abc import Sequence

EXIT_EXPORT_FAILED = 1
EXIT_USAGE = 2
EXIT_VERIFY_FAILED = 3


def parser() -> argparse.ArgumentParser:
    """The argument parser; ``--help`` documents every option."""
    p = argparse.ArgumentParser(
        prog=_prog(),
        description="Export a saved kgraph model (.pkl) or a Keras 3 .keras file to an ONNX graph that onnxruntime runs with the same "
                    "numbers. The batch axis of every input and output is dynamic.",
        epilog=f"Exit status: 0 success, {EXIT_EXPORT_FAILED} the model could not be loaded or exported (nothing "
               f"written), {EXIT_USAGE} bad arguments (a module given with --import that fails to import included), "
               f"{EXIT_VERIFY_FAILED} --verify found differences beyond tolerance.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("model", help="a model file written by kgraph's model.save() (.pkl), or a Keras 3 .keras archive "
                                 "(read without Keras; no code in it is run)")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="the .onnx file to write (default: the model path with the suffix .onnx); written "
                        "atomically, so an existing file survives a failed export; the model file itself is "
                        "refused")
    p.add_argument("--opset", type=int, metavar="N",
                   help=f"the ai.onnx opset to target, from {defaults.MIN_OPSET} to the newest the installed "
                        f"onnx and onnxruntime support (default: {defaults.DEFAULT_OPSET}); the model's IR version "
                        "follows from it")
    p.add_argument("--import", action="append", dest="imports", default=[], metavar="MODULE|FILE.py",
                   help="import MODULE (e.g. my_layers, or a package's my_pkg.layers) before loading the model, so "
                        "the custom layer classes and converters it defines are registered; repeatable; the "
                        "current directory is importable. A path ending in .py (the training script, e.g. "
                        "train.py) is imported from its file without running its `if __name__ == "
                        "\"__main__\":` part, and its classes stand for those a model saved from __main__ names. "
                        "The model file itself is still read only as plain data: nothing is imported that is not "
                        "named here")
    weights = p.add_mutually_exclusive_group()
    weights.add_argument("--quantize", choices=["dynamic"],
                         help="dynamic: int8 weights (onnxruntime.quantization.quantize_dynamic; activations "
                              "quantized at run time), about 4x smaller; inputs and outputs stay float32")
    weights.add_argument("--fp16", action="store_true",
                         help="float16 weights and activations with float32 inputs and outputs kept (needs the "
                              f"extra: pip install '{defaults.DISTRIBUTION}[{defaults.FP16_EXTRA}]'); about 2x smaller")
    p.add_argument("--verify", action="store_true",
                   help="after writing, run the native model and onnxruntime (graph optimizations on and off) on "
                        "seeded random inputs at batch 0, 1 and 3 (and a second length of any dynamic axis), "
                        "print the max absolute and relative difference of every output, and exit non-zero "
                        "beyond tolerance (float32: rtol=atol=1e-5, looser where a layer's converter declares it; "
                        "int8: atol 0.1 of each output's scale; fp16: rtol 0.01, atol 0.01 of the scale). Batch 0 "
                        "runs in a child process: where onnxruntime aborts on an empty batch (its LSTM and GRU "
                        "kernels do), a note names the node and the check still passes, since the server refuses "
                        "requests without rows")
    p.add_argument("--verify-data", metavar="FILE.npz",
                   help="with --verify (implied): also report the accuracy of the native model and of the ONNX "
                        "file on a labelled set, an .npz with one array per model input (named after it, or x) "
                        "and the labels y (class ids or one-hot)")
    p.add_argument("--triton-repo", metavar="DIR",
                   help="also write a Triton model repository entry: DIR/NAME/config.pbtxt (platform "
                        "onnxruntime_onnx, dynamic batching) and DIR/NAME/1/model.onnx")
    p.add_argument("--model-name", metavar="NAME",
                   help="the model's name in the Triton repository, a plain directory name (default: the model "
                        "file name without its suffix); needs --triton-repo; checked before anything is written")
    p.add_argument("--max-batch-size", type=int, metavar="N",
                   help=f"max_batch_size in config.pbtxt (default: {defaults.DEFAULT_MAX_BATCH_SIZE}); needs "
                        "--triton-repo")
    return p


def _prog():
    """The program name of the help and errors: the console script's own, else ``python -m export``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    name = name[:-4] if name.lower().endswith(".exe") else name
    return name if name.startswith("kgraph-") else "python -m export"


def _same_file(a, b):
    """Whether paths ``a`` and ``b`` name one file (``b`` need not exist)."""
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    return os.path.realpath(a) == os.path.realpath(b)


def _fail(message, status=EXIT_EXPORT_FAILED):
    print(f"error: {message}", file=sys.stderr)
    return status


def _is_onnx(path):
    """Whether ``path`` is an ONNX model: its suffix, or a protobuf that opens with ModelProto's ir_version (a
    pickle or a zip archive named .onnx is a model file misnamed, not ONNX)."""
    try:
        with open(path, "rb") as f:
            head = f.read(2)
    except OSError:
        return False
    if head[:1] == b"\x80" or head[:2] == b"PK":
        return False
    if path.lower().endswith(".onnx"):
        return True
    # A ModelProto serializes field 1 (ir_version, a varint) first: byte 0x08, then a small IR version.
    return len(head) == 2 and head[0] == 0x08 and 3 <= head[1] <= 32


def _model_name_problem(name):
    """Why ``name`` cannot name a model directory the server lists, or None."""
    if not name:
        return "it is empty"
    if "/" in name or "\\" in name or name in (".", ".."):
        return "it must be a plain directory name, without '/' or '\\'"
    if name.startswith("."):
        return "a directory starting with '.' is hidden, and the server skips it"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "it holds a control character"
    return None


def _check_arguments(p, args):
    """Usage errors (exit 2) found before anything is read or written; returns the opset and the output path."""
    from export.registry import ExportError  # light: no kgraph or onnx
    if args.triton_repo is None and (args.model_name is not None or args.max_batch_size is not None):
        p.error("--model-name and --max-batch-size only apply with --triton-repo DIR")
    if args.max_batch_size is not None and args.max_batch_size < 1:
        p.error(f"--max-batch-size must be a positive integer, got {args.max_batch_size}")
    if args.triton_repo is not None:
        name = args.model_name or os.path.splitext(os.path.basename(args.model))[0]
        problem = _model_name_problem(name)
        if problem:
            given = "--model-name" if args.model_name is not None else "the model name taken from the file name"
            p.error(f"{given} {name!r} cannot name a model in the Triton repository: {problem}. Expected a name "
                    "such as --model-name my_model.")
    from export import opsets
    try:
        opset = opsets.resolve_opset(args.opset)
    except ExportError as err:
        p.error(str(err))
    return opset, args.output or os.path.splitext(args.model)[0] + ".onnx"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    p = parser()
    args = p.parse_args(argv)
    if _is_onnx(args.model):
        return _fail(f"'{args.model}' is an ONNX model already: the exporter reads kgraph model files (.pkl) and "
                     f"Keras 3 .keras archives. To serve it, run: kgraph-serve {args.model} (or python -m serve "
                     f"{args.model}).")
    opset, output = _check_arguments(p, args)
    if _same_file(args.model, output):
        return _fail(f"The output '{output}' is the model file itself; refusing to overwrite the model with "
                     "ONNX. Expected another path with -o, e.g. -o model.onnx.", EXIT_USAGE)
    # Every module the export needs loads before --import puts the current directory on the path, so that a
    # user's file named like one of them (onnx.py, kgraph.py) cannot stand in for it.
    from export import quantize, triton, writer
    from export.exporter import check, to_onnx
    from export.loading import LoadError, import_modules, load
    from export.registry import ExportError
    from export.verify import verify
    try:
        import_modules(args.imports)
    except LoadError as err:
        return _fail(err, EXIT_USAGE)
    try:
        model = load(args.model)
    except LoadError as err:
        return _fail(err)
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
                                           args.max_batch_size or defaults.DEFAULT_MAX_BATCH_SIZE,
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
