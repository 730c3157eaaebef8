"""Command line: python -m export model.pkl [-o model.onnx] [--opset N] [--verify] [--triton-repo DIR ...]."""
import argparse
import os
import sys

from export import opsets, triton
from export.registry import ExportError

EXIT_EXPORT_FAILED = 1
EXIT_USAGE = 2
EXIT_VERIFY_FAILED = 3


def parser():
    """The argument parser; ``--help`` documents every option."""
    p = argparse.ArgumentParser(
        prog="python -m export",
        description="Export a saved kgraph model (.pkl) to an ONNX graph that onnxruntime runs with the same "
                    "numbers. The batch axis of every input and output is dynamic.",
        epilog=f"Exit status: 0 success, {EXIT_EXPORT_FAILED} export failed (nothing written), {EXIT_USAGE} bad "
               f"arguments, {EXIT_VERIFY_FAILED} --verify found differences beyond tolerance.")
    p.add_argument("model", help="a model file written by kgraph's model.save() (.pkl)")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="the .onnx file to write (default: the model path with the suffix .onnx); written "
                        "atomically, so an existing file survives a failed export")
    p.add_argument("--opset", type=int, metavar="N",
                   help=f"the ai.onnx opset to target, from {opsets.MIN_OPSET} to the newest the installed "
                        f"onnx and onnxruntime support (default: {opsets.DEFAULT_OPSET}); the model's IR version "
                        "follows from it")
    p.add_argument("--verify", action="store_true",
                   help="after writing, run the native model and onnxruntime (graph optimizations on and off) on "
                        "seeded random inputs at batch 1 and 3, print the max absolute and relative difference "
                        "of every output, and exit non-zero beyond tolerance (float32: rtol=atol=1e-5, looser "
                        "where a layer's converter declares it)")
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


def main(argv=None):
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

    import kgraph
    from export.exporter import check, to_onnx
    from export.verify import verify
    try:
        model = kgraph.load_model(args.model, compile=False)
        proto = to_onnx(model, output, opset=opset, source=args.model)
        print(f"wrote {output} (opset {opset}, {len(proto.graph.node)} nodes)")
        if args.triton_repo is not None:
            name = args.model_name or os.path.splitext(os.path.basename(args.model))[0]
            path = triton.write_repository(proto, args.triton_repo, name,
                                           args.max_batch_size or triton.DEFAULT_MAX_BATCH_SIZE, check=check)
            print(f"wrote {os.path.join(args.triton_repo, name, 'config.pbtxt')} and {path}")
    except (ExportError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_EXPORT_FAILED
    if args.verify:
        report = verify(model, output)
        if not report.ok:
            return EXIT_VERIFY_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
